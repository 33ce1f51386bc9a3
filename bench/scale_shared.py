"""The shared tier's cost curve beside the local tier's: bench/scale.py's synthetic chunks in PostgreSQL.

For each size (100k, 1M chunks) the local index bench/scale.py built (``--local-cache``/scale-100k, scale-1m)
is copied, as it is, into a shared store (`PgStore`, prefix ``scale``) in a PostgreSQL with pgvector started
by `citewise.index.shared.pgserver` in ``--cache``/scale-pg-100k, scale-pg-1m (kept, with the figures of each
stage as JSON beside the cluster, so that a rerun only re-measures). Four stages, each a process of its own:

build
    The store is made (`PgStore.create`), its HNSW and GIN indexes dropped while it is empty, and the local
    index's documents, paragraphs and chunks are read from its SQLite a batch of documents at a time and
    written as a bulk load would: the rows by COPY, the chunk vectors (as stored locally) and the paragraph
    vectors (their chunks' normalised sum, as the local tier pools them) by `PgVectors.upsert`, the BM25
    rows of chunks and of paragraphs by `PgLexical.register` and `PgLexical.add` on the texts `chunk_input`
    makes, so they are what an ingest worker writes. Then the pending df changes are folded and the weights
    brought in step (`PgStore.fold`, `PgStore.reweight`, as a worker does when its queue empties), the GIN
    indexes and both HNSW indexes are built (``maintenance_work_mem`` 4GB, one parallel maintenance
    worker), and everything is vacuumed and analysed; each part is timed. Sizes: `pg_relation_size` and
    `pg_total_relation_size` of every table and index, and the cluster folder (with and without its WAL).
    Each part's seconds are saved as it ends (bench-build-progress.json): a build that stopped resumes
    after its last finished part.
measure
    The server is started, the store's relations read into memory (`pg_prewarm`, as `Index.open` loads the
    local tier's BM25 and Chroma), and the local index opened (`Index.open`). Then 200 SciFact claims
    (``--queries``, the ones bench/scale.py times) each go through both tiers in bm25, dense and hybrid
    mode (k=10, 100 candidates a retriever, query embedding included), the six runs interleaved with their
    order rotating per query, after 20 other claims as a warm-up. Figures: p50/p95 per tier and mode, the
    ratio shared / local (the issue's target: hybrid p50 of the shared tier at most 2x the local tier's at
    1M chunks), and how far the hits agree: the share of the local tier's top-10 chunk ids the shared tier
    returns too (HNSW is approximate; the local tier's Chroma HNSW is too), and of queries with the same ten
    in the same order.
    Beside them, the shared tier with its paired queries (BM25 and HNSW tops of chunks and of paragraphs)
    run one after the other (`SharedIndex(parallel=False)`, which must find the same hits), and for the first
    ``--before`` queries also without BM25 pruning: the shared search as it was before both.
ingest
    ``--documents`` SciFact abstracts, one file each (bench/pgingest.py's files and runs), are ingested into
    the big store by 1, then 2 worker processes (one embedding thread each) in one run; after each run
    their documents and every row of them, their files, queue rows and outcomes are deleted again, and the
    store analysed at the end, so it holds what it held (its counts before and after are recorded; the
    removed rows, a few thousand, are left to autovacuum: a VACUUM walks the whole HNSW graphs).
report
    The stages' JSON of every size built, with the local tier's figures (bench/scale.py's bench-build.json
    and disk per store), into ``--out``, and a table.

    python bench/scale_shared.py --local-cache bench/.cache --sizes 100000 1000000 \\
        --queries ../shared/data/scifact/queries.train.jsonl --corpus ../shared/data/scifact/corpus.jsonl \\
        --out bench/results/scale-shared.json

``--stage build`` (or measure, ingest, report) runs one stage; the default runs all of them, building only
what is not built yet.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, percentiles, print_table, read_queries, save
from pgingest import one_run, write_files
from scale import CACHE, MODES, SEARCH, _child, _du, disk, label, memory_mb, ram_gb

from citewise.index import Index
from citewise.index.chunking import ChunkingConfig, chunk_input
from citewise.index.shared.index import SharedIndex
from citewise.index.shared.pglexical import PgLexical
from citewise.index.shared.pgserver import serve
from citewise.index.shared.pgstore import PgStore

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PREFIX = "scale"
BATCH = 2_500
"""Documents a load step reads and writes (50,000 chunks of 20 a document)."""
SETTINGS = {
    "shared_buffers": "4GB",
    "effective_cache_size": "12GB",
    "max_wal_size": "8GB",
    "maintenance_work_mem": "4GB",
    "max_parallel_maintenance_workers": "1",
    "max_parallel_workers_per_gather": "0",
}
"""The server's settings in every stage (the machine: 2 cores, 23 GB)."""
TIERS = ("local", "shared")
BEFORE = "shared_before"
"""The shared tier as it searched before BM25 pruned light terms (`PgLexical.search(prune=False)`), and
before it ran a search's paired queries two at a time (`SharedIndex(parallel=False)`)."""
SEQUENTIAL = "shared_sequential"
"""The shared tier with BM25 pruning but its paired queries one after the other (`parallel=False`)."""
WARM_UP = 20
STAGES = ("build", "measure", "ingest")
PROGRESS = "bench-build-progress.json"
"""The build's parts done so far, with their seconds: a build that stopped resumes after them."""


def folder_of(cache: Path, chunks: int) -> Path:
    """Where the shared store of `chunks` chunks keeps its cluster and its stages' figures."""
    return cache / f"scale-pg-{label(chunks)}"


def _log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def relation_sizes(conn: psycopg.Connection) -> dict[str, dict[str, Any]]:
    """Every table and index of the store: kind, its own bytes and (tables) with TOAST and indexes."""
    rows = conn.execute(
        """SELECT c.relname, c.relkind, pg_relation_size(c.oid), pg_total_relation_size(c.oid)
        FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relname LIKE %s AND c.relkind IN ('r', 'i') ORDER BY 1""",
        [f"{PREFIX}\\_%"],
    ).fetchall()
    return {
        name: {"kind": "table" if kind == "r" else "index", "bytes": own, "total_bytes": total}
        for name, kind, own, total in rows
    }


def size_summary(relations: dict[str, dict[str, Any]]) -> dict[str, float]:
    """MB per part of the store: rows (documents, paragraphs, chunks...), vectors, HNSW, BM25, GIN."""
    mb = 1024**2
    tables = {name: r for name, r in relations.items() if r["kind"] == "table"}
    indexes = {name: r for name, r in relations.items() if r["kind"] == "index"}

    def total(prefixes: tuple[str, ...]) -> float:
        return sum(r["total_bytes"] for n, r in tables.items() if n.startswith(prefixes)) / mb

    summary = {
        "rows": total(tuple(f"{PREFIX}_{t}" for t in ("documents", "paragraphs", "chunks", "bibliography")))
        + total((f"{PREFIX}_files", f"{PREFIX}_meta", f"{PREFIX}_queue", f"{PREFIX}_outcomes")),
        "chunk_vectors": total((f"{PREFIX}_vectors_",)),
        "paragraph_vectors": total((f"{PREFIX}_pvectors_",)),
        "chunk_bm25": total((f"{PREFIX}_lexical_",)),
        "paragraph_bm25": total((f"{PREFIX}_plexical_",)),
        "hnsw": sum(r["bytes"] for n, r in indexes.items() if n.endswith("_hnsw")) / mb,
        "gin": sum(r["bytes"] for n, r in indexes.items() if n.endswith("_chunks_terms")) / mb,
    }
    summary["total"] = sum(r["total_bytes"] for r in tables.values()) / mb
    return summary


def cluster_size(folder: Path) -> dict[str, float]:
    """The cluster folder on disk, in MB: all of it, and without its WAL (which a checkpoint recycles)."""
    data = folder / "data"
    everything = _du([data])
    return {"data_dir": everything, "data_dir_without_wal": everything - _du([data / "pg_wal"])}


# build --------------------------------------------------------------------------------------------------
def build(local: Path, folder: Path) -> dict[str, Any]:
    """Copy the local index at `local` into a new shared store in a cluster at `folder`; times, sizes."""
    source = sqlite3.connect(f"file:{local / 'docs.sqlite3'}?mode=ro", uri=True)
    meta = dict(source.execute("SELECT key, value FROM meta").fetchall())
    chunking = ChunkingConfig(**json.loads(meta["chunking"]))
    local_counts = {
        table: source.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608 (fixed names)
        for table in ("documents", "paragraphs", "chunks", "bibliography", "files")
    }
    if local_counts["bibliography"] or local_counts["files"]:
        raise RuntimeError(f"{local}: a synthetic index has no bibliography and no files: {local_counts}")
    progress = folder / PROGRESS
    saved = json.loads(progress.read_text()) if progress.exists() else {}
    done: list[str] = saved.get("done", [])
    seconds: Counter[str] = Counter(saved.get("seconds", {}))
    reweighted: int = saved.get("reweighted", 0)
    started = time.perf_counter() - sum(seconds[part] for part in done)

    def finished(part: str, took: float) -> None:  # recorded as each part ends: a rerun resumes after it
        seconds[part] = took
        done.append(part)
        saved = {"done": done, "seconds": seconds, "reweighted": reweighted}
        progress.write_text(json.dumps(saved, indent=2) + "\n")
        _log(f"{part} done, {took:.0f}s")

    with serve(folder, settings=SETTINGS) as server, PgStore(server.dsn, prefix=PREFIX) as store:
        conn = store.conn
        if done:
            _log(f"resuming after {', '.join(done)} ({sum(seconds[part] for part in done):.0f}s)")
        if "rows" not in done:
            _load(store, source, meta, chunking, local_counts, seconds, started)
            finished("rows", time.perf_counter() - started)
        source.close()
        if "fold_reweight" not in done:
            t = time.perf_counter()
            store.fold()
            reweighted = store.reweight()
            finished("fold_reweight", time.perf_counter() - t)
        if "gin" not in done:
            t = time.perf_counter()
            conn.execute("SET maintenance_work_mem = '4GB'")
            store.lexical.create()  # CREATE ... IF NOT EXISTS: the GIN index _load dropped, now over all rows
            store.paragraph_lexical.create()
            finished("gin", time.perf_counter() - t)
        for part, vectors_table in (
            ("hnsw_chunks", store.vectors),
            ("hnsw_paragraphs", store.paragraph_vectors),
        ):
            if part not in done:
                t = time.perf_counter()
                vectors_table.create_index(maintenance_work_mem="4GB")
                finished(part, time.perf_counter() - t)
        t = time.perf_counter()
        conn.execute("VACUUM (ANALYZE)")
        conn.execute("CHECKPOINT")
        seconds["vacuum_analyze"] = time.perf_counter() - t
        seconds["total"] = time.perf_counter() - started
        counts = store.counts()
        relations = relation_sizes(conn)
        version = conn.execute("SELECT version()").fetchone()
    expected = {
        "documents": local_counts["documents"],
        "paragraphs": local_counts["paragraphs"],
        "chunks": local_counts["chunks"],
        "chunk_vectors": local_counts["chunks"],
        "paragraph_vectors": local_counts["paragraphs"],
        "chunks_lexical": local_counts["chunks"],
        "paragraphs_lexical": local_counts["paragraphs"],
    }
    if any(counts[key] != value for key, value in expected.items()):
        raise RuntimeError(f"the store disagrees with the local index: {counts} against {expected}")
    _log(f"built {folder} in {seconds['total']:.0f}s")
    return {
        "chunks": local_counts["chunks"],
        "counts": counts,
        "seconds": dict(seconds),
        "bm25_rows_reweighted": reweighted,
        "relations": relations,
        "size_mb": size_summary(relations),
        "cluster_mb": cluster_size(folder),
        "settings": SETTINGS,
        "server": version[0] if version else "",
        "when": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def _load(
    store: PgStore,
    source: sqlite3.Connection,
    meta: dict[str, str],
    chunking: ChunkingConfig,
    local_counts: dict[str, int],
    seconds: Counter[str],
    started: float,
) -> None:
    """Make the store and write the local index's rows into it, its HNSW and GIN indexes dropped meanwhile."""
    store.create(meta["embedding_model"], chunking)
    conn = store.conn
    if store.counts()["documents"]:
        raise RuntimeError(f"the store {PREFIX!r} holds documents already: an unfinished load (delete it)")
    dropped = [f"{PREFIX}_vectors_hnsw", f"{PREFIX}_pvectors_hnsw"]
    dropped += [f"{PREFIX}_lexical_chunks_terms", f"{PREFIX}_plexical_chunks_terms"]
    for index in dropped:  # built once the rows are in: far faster than row by row
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index)))
    table = {name: sql.Identifier(f"{PREFIX}_{name}") for name in ("documents", "paragraphs", "chunks")}
    last, loaded = 0, Counter[str]()
    while True:
        t = time.perf_counter()
        documents = source.execute(
            "SELECT rowid, id, file, key, title, metadata, added_at FROM documents WHERE rowid > ?"
            " ORDER BY rowid LIMIT ?",
            [last, BATCH],
        ).fetchall()
        if not documents:
            break
        first, last = documents[0][0], documents[-1][0]
        within = "doc_id IN (SELECT id FROM documents WHERE rowid BETWEEN ? AND ?)"
        paragraphs = source.execute(
            f"SELECT id, doc_id, seq, section, text, citations FROM paragraphs WHERE {within}"  # noqa: S608
            " ORDER BY rowid",
            [first, last],
        ).fetchall()
        chunks = source.execute(
            f'SELECT id, doc_id, paragraph_id, seq, text, start, "end", vector FROM chunks WHERE {within}'  # noqa: S608
            " ORDER BY rowid",
            [first, last],
        ).fetchall()
        seconds["read_sqlite"] += time.perf_counter() - t

        t = time.perf_counter()
        with conn.transaction(), conn.cursor() as cur:
            columns = "(id, file, key, title, metadata, added_at)"
            with cur.copy(sql.SQL(f"COPY {{}} {columns} FROM STDIN").format(table["documents"])) as copy:
                for _, *row, added in documents:
                    copy.write_row([*row, datetime.fromtimestamp(added, tz=UTC)])
            with cur.copy(sql.SQL("COPY {} FROM STDIN").format(table["paragraphs"])) as copy:
                for row in paragraphs:
                    copy.write_row(row)
            with cur.copy(sql.SQL("COPY {} FROM STDIN").format(table["chunks"])) as copy:
                for row in chunks:
                    copy.write_row(row[:7])
        seconds["rows_copy"] += time.perf_counter() - t

        t = time.perf_counter()
        titles = {row[1]: row[4] for row in documents}
        chunk_ids = [row[0] for row in chunks]
        vectors = np.stack([np.frombuffer(row[7], dtype=np.float32) for row in chunks])
        chunk_meta = [{"doc_id": row[1], "paragraph_id": row[2]} for row in chunks]
        sums: dict[str, np.ndarray] = {}
        for row, vector in zip(chunks, vectors, strict=True):
            sums[row[2]] = sums[row[2]] + vector if row[2] in sums else vector.copy()
        pooled = [p for p in paragraphs if p[0] in sums]
        paragraph_vectors = np.stack(
            [sums[p[0]] / (float(np.linalg.norm(sums[p[0]])) or 1.0) for p in pooled]
        )
        chunk_texts = [chunk_input(titles[row[1]], row[4], chunking) for row in chunks]
        paragraph_texts = [chunk_input(titles[p[1]], p[4], chunking) for p in paragraphs]
        seconds["prepare"] += time.perf_counter() - t

        t = time.perf_counter()
        chunk_tokens = store.lexical.tokenize(chunk_texts)
        known = dict(zip(chunk_texts, chunk_tokens, strict=True))
        unknown = [text for text in paragraph_texts if text not in known]
        known.update(zip(unknown, store.paragraph_lexical.tokenize(unknown), strict=True))
        paragraph_tokens = [known[text] for text in paragraph_texts]
        seconds["tokenize"] += time.perf_counter() - t

        t = time.perf_counter()
        store.vectors.upsert(chunk_ids, vectors, metadatas=chunk_meta)
        seconds["chunk_vectors"] += time.perf_counter() - t
        t = time.perf_counter()
        store.paragraph_vectors.upsert(
            [p[0] for p in pooled],
            paragraph_vectors,
            metadatas=[{"doc_id": p[1], "paragraph_id": p[0]} for p in pooled],
        )
        seconds["paragraph_vectors"] += time.perf_counter() - t
        t = time.perf_counter()
        store.lexical.register(chunk_tokens)
        store.lexical.add(chunk_ids, chunk_texts, chunk_tokens)
        seconds["chunk_bm25"] += time.perf_counter() - t
        t = time.perf_counter()
        store.paragraph_lexical.register(paragraph_tokens)
        store.paragraph_lexical.add([p[0] for p in paragraphs], paragraph_texts, paragraph_tokens)
        seconds["paragraph_bm25"] += time.perf_counter() - t
        loaded.update(documents=len(documents), paragraphs=len(paragraphs), chunks=len(chunks))
        if loaded["chunks"] % 100_000 == 0 or loaded["documents"] == local_counts["documents"]:
            _log(
                f"loaded {loaded['chunks']:,}/{local_counts['chunks']:,} chunks, "
                f"{time.perf_counter() - started:.0f}s: {dict(seconds.most_common())}"
            )


# measure ------------------------------------------------------------------------------------------------
class _Unpruned(PgLexical):
    """BM25 search over every chunk sharing a term with the query, as before `SEARCH` pruned (same hits)."""

    def search(self, query: str, k: int = 10, **options: Any) -> list[tuple[str, float]]:
        return super().search(query, k, prune=False)


class UnprunedSharedIndex(SharedIndex):
    """`SharedIndex` whose BM25 searches do not prune: the shared tier's search before, for comparison."""

    @contextmanager
    def _store(self, snapshot: bool = False) -> Iterator[PgStore]:
        with super()._store(snapshot) as store:
            store.lexical.__class__ = store.paragraph_lexical.__class__ = _Unpruned
            yield store


def prewarm(conn: psycopg.Connection) -> tuple[float, float]:
    """Read every relation of the store into the OS cache (pg_prewarm 'read'); seconds and MB read."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    started, pages = time.perf_counter(), 0
    for name in relation_sizes(conn):
        row = conn.execute("SELECT pg_prewarm(%s::regclass, 'read')", [name]).fetchone()
        pages += int(row[0]) if row else 0
    return time.perf_counter() - started, pages * 8192 / 1024**2


def measure(local: Path, folder: Path, queries: list[str], warm: list[str], before: int) -> dict[str, Any]:
    """Both tiers' latencies per mode, interleaved, and how far their hits agree (see the module).

    The first `before` queries also go through the shared tier as it searched before BM25 pruning (`BEFORE`),
    interleaved with the rest; their hits must be the pruned search's.
    """
    load = [os.getloadavg()[0]]
    with serve(folder, settings=SETTINGS) as server:
        with PgStore(server.dsn, prefix=PREFIX) as store:  # this code's search functions
            settings = store.settings()
            store.create(settings.model, settings.chunking)
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            prewarm_seconds, prewarm_mb = prewarm(conn)
        _log(f"prewarmed {prewarm_mb:.0f} MB in {prewarm_seconds:.0f}s")
        t = time.perf_counter()
        index = Index.open(local, create=False)
        open_seconds = time.perf_counter() - t
        _log(f"opened {local} in {open_seconds:.1f}s")
        shared = SharedIndex(server.dsn, prefix=PREFIX, embedder=index.embedder)
        unpruned = UnprunedSharedIndex(server.dsn, prefix=PREFIX, embedder=index.embedder, parallel=False)
        sequential = SharedIndex(server.dsn, prefix=PREFIX, embedder=index.embedder, parallel=False)
        tiers: dict[str, Any] = {"local": index, "shared": shared, BEFORE: unpruned, SEQUENTIAL: sequential}
        runs = [(tier, mode) for mode in MODES for tier in (*TIERS, BEFORE, SEQUENTIAL)]
        t = time.perf_counter()
        for query in warm:
            for tier, mode in runs:
                tiers[tier].search(query, k=10, mode=mode)
        warm_seconds = time.perf_counter() - t
        _log(f"warmed up with {len(warm)} queries in {warm_seconds:.0f}s")
        latencies: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
        hits: dict[tuple[str, str], list[list[str]]] = {run: [] for run in runs}
        for n, query in enumerate(queries):
            for tier, mode in runs[n % len(runs) :] + runs[: n % len(runs)]:
                if tier == BEFORE and n >= before:
                    continue
                searcher = tiers[tier]
                searcher.forget_queries()
                t = time.perf_counter()
                found = searcher.search(query, k=10, mode=mode)
                latencies[(tier, mode)].append((time.perf_counter() - t) * 1000)
                hits[(tier, mode)].append([hit.chunk_id for hit in found])
            if (n + 1) % 50 == 0:
                _log(f"{n + 1}/{len(queries)} queries")
        rss = memory_mb()
        unpruned.close()
        sequential.close()
        shared.close()
        index.close()
    load.append(os.getloadavg()[0])
    latency: dict[str, dict[str, dict[str, float]]] = {tier: {} for tier in (*TIERS, BEFORE, SEQUENTIAL)}
    for (tier, mode), samples in latencies.items():
        if not samples:
            continue
        p50, p95 = percentiles(samples)
        latency[tier][mode] = {"p50_ms": p50, "p95_ms": p95}
    ratio = {
        mode: {
            p: latency["shared"][mode][f"{p}_ms"] / latency["local"][mode][f"{p}_ms"] for p in ("p50", "p95")
        }
        for mode in MODES
    }
    if before:
        for mode in MODES:  # the pruned search must find what the unpruned one finds
            pairs = zip(hits[(BEFORE, mode)], hits[("shared", mode)][:before], strict=True)
            differ = sum(a != b for a, b in pairs)
            if differ:
                raise RuntimeError(f"{mode}: the pruned BM25 search changed the hits of {differ} queries")
        for mode in MODES:
            ratio[mode]["before_p50"] = latency[BEFORE][mode]["p50_ms"] / latency["local"][mode]["p50_ms"]
    for mode in MODES:
        ratio[mode]["sequential_p50"] = latency[SEQUENTIAL][mode]["p50_ms"] / latency["local"][mode]["p50_ms"]
        pairs = zip(hits[(SEQUENTIAL, mode)], hits[("shared", mode)], strict=True)
        if differ := sum(a != b for a, b in pairs):
            raise RuntimeError(f"{mode}: the parallel search changed the hits of {differ} queries")
    agreement = {}
    for mode in MODES:
        pairs = list(zip(hits[("local", mode)], hits[("shared", mode)], strict=True))
        agreement[mode] = {
            "top10_overlap": float(np.mean([len(set(a) & set(b)) / max(len(a), 1) for a, b in pairs])),
            "same_order": float(np.mean([a == b for a, b in pairs])),
            "same_set": float(np.mean([set(a) == set(b) for a, b in pairs])),
        }
    return {
        "latency_ms": latency,
        "shared_over_local": ratio,
        "agreement": agreement,
        "queries": len(queries),
        "queries_before": before,
        "warm_up_queries": len(warm),
        "prewarm": {"seconds": prewarm_seconds, "mb": prewarm_mb},
        "local_open_seconds": open_seconds,
        "rss_mb_measuring_process": rss,
        "load_average_1min": load,
        "search": SEARCH,
        "when": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


# ingest -------------------------------------------------------------------------------------------------
def remove_files(dsn: str, files: list[Path]) -> int:
    """Delete the files' documents (`PgStore.remove`) with their queue and outcome rows."""
    paths = [str(path.resolve()) for path in files]
    with PgStore(dsn, prefix=PREFIX) as store:
        removed = store.remove(paths).documents_removed
        with store.conn.transaction(), store.conn.cursor() as cur:
            for table in ("queue", "outcomes"):
                name = sql.Identifier(f"{PREFIX}_{table}")
                cur.execute(sql.SQL("DELETE FROM {} WHERE path = ANY(%s)").format(name), [paths])
        store.fold()
    return removed


def ingest(folder: Path, corpus: Path, documents: int) -> dict[str, Any]:
    """1 then 2 workers ingest the same abstracts into the store, each run removed again (see the module)."""
    work = Path(tempfile.mkdtemp(prefix="scale-shared-ingest-"))
    work.chmod(0o755)
    files = write_files(corpus, documents, work / "files")
    runs = []
    try:
        with serve(folder, settings=SETTINGS) as server:
            with PgStore(server.dsn, prefix=PREFIX) as store:
                model = store.settings().model
                before = store.counts()
                drift_before = store.lexical.drift(), store.paragraph_lexical.drift()
            for workers in (1, 2):
                result = one_run(server.dsn, files, workers, model, prefix=PREFIX)
                _log(f"{workers} worker(s): {result['docs_per_s']} documents/s")
                t = time.perf_counter()
                result["removed"] = remove_files(server.dsn, files)
                result["remove_seconds"] = time.perf_counter() - t
                runs.append(result)
            t = time.perf_counter()
            with psycopg.connect(server.dsn, autocommit=True) as conn:
                conn.execute("ANALYZE")  # no VACUUM: its HNSW pass over the whole graph took 210 s at 100k
            analyze_seconds = time.perf_counter() - t
            with PgStore(server.dsn, prefix=PREFIX) as store:
                after = store.counts()
                drift_after = store.lexical.drift(), store.paragraph_lexical.drift()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if after != before:
        raise RuntimeError(f"the store did not return to what it was: {before} -> {after}")
    return {
        "documents": len(files),
        "model": model,
        "runs": runs,
        "speedup": runs[1]["docs_per_s"] / runs[0]["docs_per_s"],
        "store_counts": before,
        "bm25_drift_before_after": [drift_before, drift_after],
        "analyze_seconds": analyze_seconds,
        "when": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


# report -------------------------------------------------------------------------------------------------
def row_of(chunks: int, local_cache: Path, cache: Path) -> dict[str, Any] | None:
    """One size's figures of both tiers, from the stages' JSON; None when the store is not built."""
    folder = folder_of(cache, chunks)
    stage = {name: folder / f"bench-{name}.json" for name in STAGES}
    if not stage["build"].exists():
        return None
    local = local_cache / f"scale-{label(chunks)}"
    local_build = json.loads((local / "bench-build.json").read_text())
    row: dict[str, Any] = {
        "chunks": chunks,
        "local": {
            "ingest_seconds": local_build["seconds"],
            "disk_mb": disk(local),
            "built": local_build["when"],
        },
        "shared": {name: json.loads(path.read_text()) for name, path in stage.items() if path.exists()},
    }
    return row


def flatten(row: dict[str, Any]) -> list[dict[str, Any]]:
    """A size's figures as table rows, one a tier."""
    shared, local = row["shared"], row["local"]
    measured = shared.get("measure", {})
    build_ = shared["build"]
    out = []
    for tier in TIERS:
        flat: dict[str, Any] = {"chunks": f"{row['chunks']:,}", "tier": tier}
        if tier == "local":
            flat["build_s"] = local["ingest_seconds"]["total"]
            flat["disk_mb"] = local["disk_mb"]["total"]
        else:
            flat["build_s"] = build_["seconds"]["total"]
            flat["disk_mb"] = build_["cluster_mb"]["data_dir_without_wal"]
        for mode in MODES:
            if measured:
                ms = measured["latency_ms"][tier][mode]
                flat[f"{mode}_p50"], flat[f"{mode}_p95"] = ms["p50_ms"], ms["p95_ms"]
                if tier == "shared":
                    flat[f"{mode}_x"] = measured["shared_over_local"][mode]["p50"]
                    flat[f"{mode}_top10"] = measured["agreement"][mode]["top10_overlap"]
        if tier == "shared" and "ingest" in shared:
            flat["docs/s 1w"] = shared["ingest"]["runs"][0]["docs_per_s"]
            flat["docs/s 2w"] = shared["ingest"]["runs"][1]["docs_per_s"]
            flat["2w/1w"] = shared["ingest"]["speedup"]
        out.append(flat)
    return out


def report(rows: list[dict[str, Any]], out: Path | None) -> None:
    """Print the tables; save the JSON."""
    flat = [line for row in rows for line in flatten(row)]
    print()
    print_table(flat, ["chunks", "tier", "build_s", "disk_mb", "docs/s 1w", "docs/s 2w", "2w/1w"])
    print()
    columns = ["chunks", "tier"]
    for mode in MODES:
        columns += [f"{mode}_p50", f"{mode}_p95", f"{mode}_x", f"{mode}_top10"]
    print_table(flat, columns)
    for row in rows:
        print(
            f"\n{row['chunks']:,} chunks, shared store MB: "
            + ", ".join(f"{key} {value:,.0f}" for key, value in row["shared"]["build"]["size_mb"].items())
        )
    if out:
        save(
            out,
            {
                "sizes": rows,
                "target": "hybrid search p50 of the shared tier at most 2x the local tier's at 1M chunks",
                "synthetic": "bench/scale.py's indexes, copied into the shared store",
                "machine": machine() | {"ram_gb": ram_gb()},
            },
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--local-cache", type=Path, default=CACHE, help="where bench/scale.py built its indexes"
    )
    parser.add_argument(
        "--cache", type=Path, default=CACHE, help="where the shared stores are built and kept"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=Path, default=DATA / "scifact" / "queries.train.jsonl")
    parser.add_argument("--corpus", type=Path, default=DATA / "scifact" / "corpus.jsonl")
    parser.add_argument("--n", type=int, default=200, help="queries timed per tier and mode")
    parser.add_argument("--documents", type=int, default=200, help="abstracts each ingest run takes")
    parser.add_argument("--before", type=int, default=200, help="queries timed unpruned too (see measure)")
    parser.add_argument("--stage", choices=[*STAGES, "report", "all"], default="all")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)  # a child's JSON (scale._child)
    args = parser.parse_args()

    if args.stage in STAGES and args.result:  # a child: one stage of one size
        chunks = args.sizes[0]
        local, folder = args.local_cache / f"scale-{label(chunks)}", folder_of(args.cache, chunks)
        if args.stage == "build":
            result = build(local, folder)
        elif args.stage == "measure":
            queries = list(read_queries(args.queries).values())
            warm = queries[args.n : args.n + WARM_UP]
            result = measure(local, folder, queries[: args.n], warm, min(args.before, args.n))
        else:
            result = ingest(folder, args.corpus, args.documents)
        (folder / f"bench-{args.stage}.json").write_text(json.dumps(result, indent=2) + "\n")
        args.result.write_text(json.dumps({"ok": True}))
        return

    stages = STAGES if args.stage == "all" else (args.stage,) if args.stage != "report" else ()
    for chunks in sorted(args.sizes):
        folder = folder_of(args.cache, chunks)
        for stage in stages:
            if stage == "build" and (folder / "bench-build.json").exists():
                _log(f"reusing {folder}")
                continue
            if stage == "build" and folder.exists() and not (folder / PROGRESS).exists():
                _log(f"{folder}: an unfinished build that cannot resume, deleted")
                shutil.rmtree(folder)
            _log(f"{stage} {label(chunks)}")
            common = [
                "--sizes",
                str(chunks),
                "--local-cache",
                str(args.local_cache),
                "--cache",
                str(args.cache),
            ]
            options = ["--queries", str(args.queries), "--corpus", str(args.corpus), "--n", str(args.n)]
            options += ["--before", str(args.before)]
            code, _ = _child(
                ["--stage", stage, *common, *options, "--documents", str(args.documents)], script=__file__
            )
            if code != 0:
                sys.exit(f"{stage} of {label(chunks)} exited with {code}")
    rows = [row for chunks in sorted(args.sizes) if (row := row_of(chunks, args.local_cache, args.cache))]
    if rows:
        report(rows, args.out)


if __name__ == "__main__":
    main()
