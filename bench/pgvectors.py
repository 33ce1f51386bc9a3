"""Dense chunk search inside PostgreSQL (pgvector HNSW) against exact search and Chroma (issue #28, part 5).

On the chunks of a SciFact index (bench/.cache/scifact: 43,500 chunks, 384-dimensional L2-normalised float32
vectors of the index's all-MiniLM-L6-v2, read from its document store), every query vector given (the 809
train claims, embedded once with the same model), k=100 chunks a search (citewise's candidates=100):

``exact``
    The reference: a numpy matrix product over every chunk (what citewise does below 50,000 chunks,
    `citewise.index.local.paragraphs`).
``chroma``
    citewise's `VectorIndex` (HNSW, cosine, ef_construction 200, ef_search 200, M 16) in a fresh embedded
    Chroma collection in a temporary folder, the chunks upserted as citewise mirrors them (ids, vectors,
    texts, metadata), so that its build is timed like the others'.
``pg-<kind> m<m>/<ef_construction> ef<ef_search>``
    `citewise.index.shared.pgvectors.PgVectors`: a table with a ``vector(384)`` or ``halfvec(384)`` column and
    an HNSW index (``*_cosine_ops``), loaded by COPY and then indexed; every build searched at each ef_search.
    ``... +5k upserted`` is the chosen kind and m again at each ef_construction, the last 5,000 chunks
    upserted after the index was built, 500 a call (an ingest adding documents to a built index):
    ``upsert_per_s`` is their rate, searched at the chosen ef_search.

Figures: nDCG@10 and R@100 of the documents (a document at its best chunk, the documents of the 100 chunks;
ranx, SciFact train qrels); ``top10`` the mean share of exact search's first 10 chunks a run finds in its
first 10, ``=top10`` the share of queries whose first 10 chunks are exact's, in order, ``recall_exact`` the
mean share of exact's 100 chunks in the run's 100 (the usual ANN recall); p50 / p95 of one search (vector
given, to the ids and cosines, for PostgreSQL one round trip on loopback) over every query, the runs rotated
per query after a warm-up pass; build (from float32 vectors in memory to an index ready to search: for
PostgreSQL the COPY, ``load_s``, then CREATE INDEX, ``index_s``); disk (PostgreSQL: the table's heap, the
HNSW index, and ``pg_total_relation_size``: heap, TOAST, primary key and HNSW; Chroma: its folder). The
server's memory: the server restarted, the proportional set size (PSS) of the postmaster and its backends,
summed, fresh and then after every query searched on the chosen index alone (the shared buffers the searches
touched plus each process's own).

Then the synthetic 100k index of bench/scale.py (bench/.cache/scale-100k: 100,000 chunks, each two SciFact
chunks' vectors pooled), with no relevance judgements: latency and agreement with exact search of the first
`--scale-queries` claims, for exact search, Chroma (the index's own collection, copied into the temporary
folder so that nothing in the cache is touched) and the chosen kind and m at each ef_construction and
ef_search; the server's memory again.

The server is a throwaway one from `citewise.index.shared.pgserver` (PostgreSQL 18, pgvector 0.8), parallel
query and parallel index builds off (a shared 2-core machine), shared_buffers 512MB; each build runs with
maintenance_work_mem 1GB (`PgVectors.create_index`) so that the graph fits.

    python bench/pgvectors.py --chunks bench/.cache/scifact --out bench/results/pgvectors.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from ranx import Qrels, Run, evaluate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, percentiles, print_table, read_qrels, read_queries, save

from citewise.index.embeddings import load_embedder
from citewise.index.local.docstore import DocStore
from citewise.index.local.vectors import VectorIndex, make_client
from citewise.index.shared.pgserver import Binaries, Server, find_binaries, serve
from citewise.index.shared.pgvectors import Kind, PgVectors

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CACHE = Path(__file__).resolve().parent / ".cache"
SETTINGS = {
    "max_parallel_workers_per_gather": "0",
    "max_parallel_maintenance_workers": "0",
    "shared_buffers": "512MB",
}
K = 100  # chunks a search, as citewise asks for candidates
WARM = 50  # queries searched by every run before the timed pass
BATCH = 500  # chunks an upsert, for the incremental build
Search = Callable[[np.ndarray, int], list[tuple[str, float]]]


@dataclass
class Chunks:
    ids: list[str]
    doc_ids: list[str]
    paragraph_ids: list[str]
    texts: list[str]
    titles: list[str]
    vectors: np.ndarray  # float32, one L2-normalised row a chunk
    doc_key: dict[str, str]  # document id -> BEIR id
    model: str | None


@dataclass(frozen=True)
class Config:
    kind: Kind
    m: int
    ef_construction: int

    @property
    def name(self) -> str:
        return f"pg-{self.kind} m{self.m}/{self.ef_construction}"


def read_chunks(index: Path) -> Chunks:
    """Every chunk of an index's document store, with its vector."""
    store = DocStore(index / "docs.sqlite3")
    ids, doc_ids, paragraph_ids, texts, titles, vectors = [], [], [], [], [], []
    for rows in store.iter_chunks():
        for chunk_id, doc_id, paragraph_id, title, text, vector in rows:
            ids.append(chunk_id)
            doc_ids.append(doc_id)
            paragraph_ids.append(paragraph_id)
            texts.append(text)
            titles.append(title)
            vectors.append(np.frombuffer(vector, dtype=np.float32))
    keys = {doc: record.key for doc in store.document_ids() if (record := store.document(doc)) is not None}
    model = store.get_meta("embedding_model")
    store.close()
    return Chunks(ids, doc_ids, paragraph_ids, texts, titles, np.stack(vectors), keys, model)


def exact_search(chunks: Chunks) -> Search:
    """Every chunk scored by a matrix product, the best k (as `Paragraphs.nearest_chunks`)."""

    def search(vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        similarities = chunks.vectors @ vector
        best = np.argpartition(-similarities, k - 1)[:k]
        best = best[np.argsort(-similarities[best], kind="stable")]
        return [(chunks.ids[i], float(similarities[i])) for i in best]

    return search


def folder_mb(folder: Path) -> float:
    return sum(f.stat().st_blocks * 512 for f in folder.rglob("*") if f.is_file()) / 1e6


def server_pss_mb(server: Server) -> float | None:
    """The PSS of the postmaster and its children, summed (None when /proc does not tell)."""
    try:
        postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
        pids = [postmaster]
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                        pids.append(int(entry.name))
                except (OSError, IndexError, ValueError):
                    continue
        total = 0
        for pid in pids:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        return total / 1024
    except (OSError, ValueError, IndexError):
        return None


def build_chroma(work: Path, chunks: Chunks) -> tuple[Search, dict[str, float]]:
    """A fresh embedded Chroma collection of the chunks, upserted as citewise mirrors them."""
    embedder = load_embedder(chunks.model)
    started = time.perf_counter()
    vectors = VectorIndex(make_client(work / "chroma-index", None), embedder, "bench")
    metadatas = [
        {"doc_id": d, "paragraph_id": p, "title": t[:500]}
        for d, p, t in zip(chunks.doc_ids, chunks.paragraph_ids, chunks.titles, strict=True)
    ]
    vectors.upsert(chunks.ids, chunks.vectors, chunks.texts, metadatas)
    seconds = time.perf_counter() - started
    return vectors.search, {"build_s": seconds, "size_mb": folder_mb(work / "chroma-index" / "chroma")}


def open_chroma_copy(index: Path, work: Path, model: str | None) -> Search:
    """An index's own Chroma collection, from a copy of its chroma/ folder (the cache stays untouched)."""
    store = DocStore(index / "docs.sqlite3")
    collection = store.get_meta("collection") or ""
    store.close()
    shutil.copytree(index / "chroma", work / "chroma-copy" / "chroma")
    vectors = VectorIndex(make_client(work / "chroma-copy", None), load_embedder(model), collection)
    return vectors.search


def build_pg(
    conn: psycopg.Connection, chunks: Chunks, config: Config, prefix: str, incremental: int = 0
) -> tuple[PgVectors, dict[str, Any]]:
    """Load the chunks into a fresh table by COPY, then build its HNSW index; the figures of both steps.

    With `incremental`, the last that many chunks are upserted after the index is built, in batches of
    `BATCH` (one transaction each, as an ingest adds documents to a built index), and timed apart.
    """
    store = PgVectors(
        conn,
        chunks.vectors.shape[1],
        prefix=prefix,
        kind=config.kind,
        m=config.m,
        ef_construction=config.ef_construction,
    )
    store.drop()
    notices: list[str] = []  # "hnsw graph no longer fits into maintenance_work_mem" would be one
    handler = lambda diagnostic: notices.append(str(diagnostic.message_primary))  # noqa: E731
    conn.add_notice_handler(handler)
    metadatas: list[dict[str, str | int]] = [
        {"doc_id": d, "paragraph_id": p} for d, p in zip(chunks.doc_ids, chunks.paragraph_ids, strict=True)
    ]
    bulk = len(chunks.ids) - incremental
    started = time.perf_counter()
    store.create(index=False)
    store.upsert(chunks.ids[:bulk], chunks.vectors[:bulk], None, metadatas[:bulk])
    loaded = time.perf_counter()
    store.create_index()
    store.analyze()
    done = time.perf_counter()
    figures: dict[str, Any] = {
        "load_s": loaded - started,
        "index_s": done - loaded,
        "build_s": done - started,
    }
    if incremental:
        started = time.perf_counter()
        for i in range(bulk, len(chunks.ids), BATCH):
            j = min(i + BATCH, len(chunks.ids))
            store.upsert(chunks.ids[i:j], chunks.vectors[i:j], None, metadatas[i:j])
        figures["upserted"] = incremental
        figures["upsert_per_s"] = incremental / (time.perf_counter() - started)
        store.analyze()
    size = store.size()
    figures |= {
        "table_mb": size["table"] / 1e6,
        "hnsw_mb": size["hnsw"] / 1e6,
        "size_mb": size["total"] / 1e6,
    }
    conn.remove_notice_handler(handler)
    if notices:
        figures["notices"] = notices
    print(f"{config.name}: " + ", ".join(f"{k} {v:.3g}" for k, v in figures.items() if k != "notices"))
    return store, figures


def pg_search(store: PgVectors, ef_search: int) -> Search:
    return lambda vector, k: store.search(vector, k, ef_search=ef_search)


def measure(
    searches: dict[str, Search], queries: dict[str, np.ndarray]
) -> tuple[dict[str, dict[str, list[tuple[str, float]]]], dict[str, list[float]]]:
    """Every run's hits for every query, and their latencies: a warm-up, then the runs rotated per query."""
    names = list(searches)
    query_ids = list(queries)
    for name in names:
        for q in query_ids[:WARM]:
            searches[name](queries[q], K)
    hits: dict[str, dict[str, list[tuple[str, float]]]] = {name: {} for name in names}
    latencies: dict[str, list[float]] = {name: [] for name in names}
    for n, q in enumerate(query_ids):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            started = time.perf_counter()
            hits[name][q] = searches[name](queries[q], K)
            latencies[name].append((time.perf_counter() - started) * 1000)
    return hits, latencies


def agreement(
    hits: dict[str, list[tuple[str, float]]], exact: dict[str, list[tuple[str, float]]]
) -> dict[str, float]:
    """How far a run's chunks agree with exact search's, and the largest cosine gap on shared chunks."""
    top10, same, recall, gap = [], [], [], 0.0
    for q, reference in exact.items():
        found = [key for key, _ in hits[q]]
        truth = [key for key, _ in reference]
        top10.append(len(set(found[:10]) & set(truth[:10])) / 10)
        same.append(found[:10] == truth[:10])
        recall.append(len(set(found) & set(truth)) / len(truth))
        cosines = dict(reference)
        gap = max([gap, *(abs(score - cosines[key]) for key, score in hits[q] if key in cosines)])
    return {
        "top10": float(np.mean(top10)),
        "=top10": float(np.mean(same)),
        "recall_exact": float(np.mean(recall)),
        "max_cos_gap": gap,
        "short": float(np.mean([len(hits[q]) < K for q in exact])),
    }


def quality(
    hits: dict[str, list[tuple[str, float]]], chunks: Chunks, qrels: dict[str, dict[str, int]]
) -> dict[str, float]:
    """nDCG@10 and R@100 of the documents of a run's chunks (a document at its best chunk)."""
    doc_of = dict(zip(chunks.ids, chunks.doc_ids, strict=True))
    run = {}
    for q, found in hits.items():
        order = list(dict.fromkeys(chunks.doc_key[doc_of[key]] for key, _ in found))
        run[q] = {key: float(len(order) - n) for n, key in enumerate(order)}
    scores = evaluate(
        Qrels.from_dict({q: qrels[q] for q in hits}), Run.from_dict(run), ["ndcg@10", "recall@100"]
    )
    return {metric: float(value) for metric, value in scores.items()}


def report_runs(
    searches: dict[str, Search],
    queries: dict[str, np.ndarray],
    chunks: Chunks,
    qrels: dict[str, dict[str, int]] | None,
) -> dict[str, dict[str, Any]]:
    hits, latencies = measure(searches, queries)
    results: dict[str, dict[str, Any]] = {}
    for name in searches:
        results[name] = quality(hits[name], chunks, qrels) if qrels is not None else {}
        results[name] |= agreement(hits[name], hits["exact"])
        results[name]["p50_ms"], results[name]["p95_ms"] = percentiles(latencies[name])
        print(f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in results[name].items()), flush=True)
    return results


def pg_runs(
    conn: psycopg.Connection,
    chunks: Chunks,
    configs: list[Config],
    ef_searches: list[int],
    prefix: str,
) -> tuple[dict[str, Search], dict[str, dict[str, Any]], dict[Config, str]]:
    """Build every configuration; a run for each at each ef_search, the build figures, the table prefixes."""
    searches: dict[str, Search] = {}
    builds: dict[str, dict[str, Any]] = {}
    prefixes = {}
    for n, config in enumerate(configs):
        prefixes[config] = f"{prefix}{n}"
        store, figures = build_pg(conn, chunks, config, prefixes[config])
        for ef in ef_searches:
            searches[f"{config.name} ef{ef}"], builds[f"{config.name} ef{ef}"] = pg_search(store, ef), figures
    return searches, builds, prefixes


def scifact(
    conn: psycopg.Connection,
    work: Path,
    chunks: Chunks,
    queries: dict[str, np.ndarray],
    qrels: dict[str, dict[str, int]],
    configs: list[Config],
    ef_searches: list[int],
    chroma: bool,
    chosen: tuple[Config, int],
    incremental: int,
) -> tuple[dict[str, Any], dict[Config, str]]:
    """Every run on SciFact's chunks; the tables' prefixes (kept, for the memory of a fresh server)."""
    searches: dict[str, Search] = {"exact": exact_search(chunks)}
    builds: dict[str, dict[str, Any]] = {}
    if chroma:
        search, builds["chroma"] = build_chroma(work, chunks)
        print(f"chroma: build_s {builds['chroma']['build_s']:.3g}, size_mb {builds['chroma']['size_mb']:.3g}")
        searches["chroma"] = search
    pg, pg_builds, prefixes = pg_runs(conn, chunks, configs, ef_searches, "scifact")
    searches |= pg
    builds |= pg_builds
    grown = []  # the chosen kind and m at each ef_construction, the last chunks upserted into a built index
    for n, ef_construction in enumerate(sorted({c.ef_construction for c in configs}) if incremental else []):
        config = Config(chosen[0].kind, chosen[0].m, ef_construction)
        store, figures = build_pg(conn, chunks, config, f"scifact_inc{n}", incremental)
        name = f"{config.name} ef{chosen[1]} +{incremental // 1000}k upserted"
        searches[name], builds[name] = pg_search(store, chosen[1]), figures
        grown.append(store)
    results = report_runs(searches, queries, chunks, qrels)
    for store in grown:
        store.drop()
    for name, figures in builds.items():
        results[name] |= figures
    return {"chunks": len(chunks.ids), "queries": len(queries), "runs": results}, prefixes


def scale(
    conn: psycopg.Connection,
    work: Path,
    index: Path,
    queries: dict[str, np.ndarray],
    configs: list[Config],
    ef_searches: list[int],
    chroma: bool,
) -> tuple[dict[str, Any], dict[Config, str]]:
    """Latency and agreement with exact search on bench/scale.py's 100k index; the tables' prefixes."""
    chunks = read_chunks(index)
    searches: dict[str, Search] = {"exact": exact_search(chunks)}
    if chroma:
        searches["chroma"] = open_chroma_copy(index, work, chunks.model)
    pg, builds, prefixes = pg_runs(conn, chunks, configs, ef_searches, "scale")
    searches |= pg
    results = report_runs(searches, queries, chunks, None)
    for name, figures in builds.items():
        results[name] |= figures
    return {"chunks": len(chunks.ids), "queries": len(queries), "runs": results}, prefixes


def served_memory(
    work: Path, binaries: Binaries, prefix: str, config: Config, ef: int, queries: dict[str, np.ndarray]
) -> dict[str, Any]:
    """The server's PSS freshly started, then after every query searched on one index (nothing else read)."""
    with serve(work / "pg", settings=SETTINGS, binaries=binaries) as server:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            idle = server_pss_mb(server)
            store = PgVectors(conn, prefix=prefix, kind=config.kind)
            for vector in queries.values():
                store.search(vector, K, ef_search=ef)
            return {"run": f"{config.name} ef{ef}", "fresh_mb": idle, "searched_mb": server_pss_mb(server)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scifact", type=Path, default=DATA / "scifact")
    parser.add_argument("--chunks", type=Path, default=CACHE / "scifact", help="a SciFact index folder")
    parser.add_argument(
        "--scale", type=Path, default=CACHE / "scale-100k", help="bench/scale.py's 100k index"
    )
    parser.add_argument("--scale-queries", type=int, default=200)
    parser.add_argument("--no-scale", action="store_true", help="SciFact only")
    parser.add_argument("--no-chroma", action="store_true", help="no Chroma runs")
    parser.add_argument("--kinds", nargs="+", default=["vector", "halfvec"])
    parser.add_argument("--m", type=int, nargs="+", default=[16])
    parser.add_argument("--ef-construction", type=int, nargs="+", default=[64, 200])
    parser.add_argument("--ef-search", type=int, nargs="+", default=[100, 200])
    parser.add_argument(
        "--chosen",
        default="halfvec:16:200:200",
        help="kind:m:ef_construction:ef_search of the incremental build and the memory (100k: its kind, m)",
    )
    parser.add_argument("--scale-ef-construction", type=int, nargs="+", default=[64, 200])
    parser.add_argument(
        "--incremental", type=int, default=5000, help="the chosen settings again, the last chunks upserted"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    chunks = read_chunks(args.chunks)
    texts = read_queries(args.scifact / "queries.train.jsonl")
    qrels = read_qrels(args.scifact / "qrels" / "train.tsv")
    query_ids = [q for q in texts if q in qrels]
    started = time.perf_counter()
    embedder = load_embedder(chunks.model)
    vectors = embedder.embed([texts[q] for q in query_ids])
    print(f"embedded {len(query_ids)} queries with {embedder.name} in {time.perf_counter() - started:.1f}s")
    queries = dict(zip(query_ids, vectors, strict=True))
    configs = [Config(k, m, e) for k in args.kinds for m in args.m for e in args.ef_construction]
    kind, m, ef_construction, ef = args.chosen.split(":")
    chosen, chosen_ef = Config(kind, int(m), int(ef_construction)), int(ef)  # type: ignore[arg-type]

    binaries = find_binaries()
    work = Path(tempfile.mkdtemp(prefix="pgvectors-"))
    work.chmod(0o755)  # the server runs as postgres when we are root: it must reach its folder
    report: dict[str, Any] = {"server": binaries.source, "settings": SETTINGS, "k": K, "sets": {}}
    report["load_average_start"] = os.getloadavg()
    report["args"] = {
        name: str(value) if isinstance(value, Path) else value for name, value in vars(args).items()
    }
    try:
        with serve(work / "pg", settings=SETTINGS, binaries=binaries) as server:
            with psycopg.connect(server.dsn, autocommit=True) as conn:
                report["server_version"] = conn.execute("SHOW server_version").fetchone()[0]
                report["pgvector"] = conn.execute(
                    "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                ).fetchone()[0]
                report["sets"]["scifact"], prefixes = scifact(
                    conn,
                    work,
                    chunks,
                    queries,
                    qrels,
                    configs,
                    args.ef_search,
                    not args.no_chroma,
                    (chosen, chosen_ef),
                    args.incremental,
                )
        if chosen in prefixes:
            memory = served_memory(work, binaries, prefixes[chosen], chosen, chosen_ef, queries)
            report["sets"]["scifact"]["server_memory"] = memory
        if not args.no_scale:
            with serve(work / "pg", settings=SETTINGS, binaries=binaries) as server:
                with psycopg.connect(server.dsn, autocommit=True) as conn:
                    for prefix in prefixes.values():
                        PgVectors(conn, prefix=prefix).drop()  # free the disk before 100k
                    scale_configs = [Config(chosen.kind, chosen.m, e) for e in args.scale_ef_construction]
                    report["sets"]["scale-100k"], prefixes = scale(
                        conn,
                        work,
                        args.scale,
                        dict(list(queries.items())[: args.scale_queries]),
                        scale_configs,
                        args.ef_search,
                        not args.no_chroma,
                    )
            if chosen in prefixes:
                memory = served_memory(work, binaries, prefixes[chosen], chosen, chosen_ef, queries)
                report["sets"]["scale-100k"]["server_memory"] = memory
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, data in report["sets"].items():
        print(f"\n{name}: {data['chunks']} chunks, {data['queries']} queries, k={K}")
        metrics = ["ndcg@10", "recall@100"] if name == "scifact" else []
        print_table(
            [{"run": run, **figures} for run, figures in data["runs"].items()],
            [
                "run",
                *metrics,
                "top10",
                "=top10",
                "recall_exact",
                "p50_ms",
                "p95_ms",
                "load_s",
                "index_s",
                "build_s",
                "upsert_per_s",
                "hnsw_mb",
                "size_mb",
            ],
        )
        if "server_memory" in data:
            print("server PSS (MB), a fresh server, then after searching every query:", data["server_memory"])
    report["machine"] = machine() | {"load_average": os.getloadavg()}
    if args.out:
        save(args.out, report)


if __name__ == "__main__":
    main()
