"""What a permission filter costs a search: hybrid search p50 with the asker's collections against without.

A subset of SciFact's corpus (`--docs`, the first N abstracts) is split round-robin into `--collections`
collections and ingested into both tiers: a local index (bm25s, exact dense search, SQLite) and a shared
store (PostgreSQL with pgvector, on a server `citewise.index.shared.pgserver` starts in ``--cache``). Each
query then runs three ways, interleaved query by query so that the machine's noise falls on all: every
collection (None, the administrator's search), a user's three collections, and one collection. A search is
product-sized (hybrid, min-max, k=10, 100 candidates a retriever); the queries are embedded ahead in one
batch (`prepare_queries`), so every way times the search alone (the first way of a query would otherwise pay
the embedding the others find remembered). The target is a filtered p50 at most 1.2 times the unfiltered
one.

`--before REV` measures the shared tier as the git revision REV searched it too, in the same run and
interleaved with today's: a copy of the store's database (`CREATE DATABASE ... TEMPLATE`) with REV's BM25
search function and without the collection indexes REV lacked, searched through REV's pgvector query
(`pglexical.py` and `pgvectors.py` read from git). Besides the times, each filtered search is checked against
what it must find: the dense candidates against an exact search of the readable chunks (recall of the 100),
the BM25 candidates against REV's (the same ids, in order), the hybrid top 10 against REV's.

`--qrels` adds retrieval quality for a user who reads every collection: each judged query's documents ranked
by a search with the permission filter naming all the collections, and by the administrator's search (no
filter), nDCG@10 and R@5 on both tiers; the two must be equal::

    python bench/permissions.py --corpus ../shared/data/scifact/corpus.jsonl \
        --queries ../shared/data/scifact/queries.train.jsonl --qrels ../shared/data/scifact/qrels/train.tsv \
        --before 27da329 --out bench/results/permissions.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine, percentiles, print_table, read_qrels, read_queries, save  # noqa: E402

from citewise.index import Index  # noqa: E402
from citewise.index.shared.index import SharedIndex  # noqa: E402
from citewise.index.shared.pgserver import serve  # noqa: E402
from citewise.index.shared.pgstore import PgStore  # noqa: E402
from citewise.index.shared.writer import SharedWriter  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BEFORE_DATABASE = "permissions_before"

WARM = 20
"""Queries run first and not counted (caches, the embedder, the server's buffers)."""


def split(corpus: Path, documents: int, collections: int, folder: Path) -> list[tuple[Path, str]]:
    """The first `documents` records, dealt round-robin into one BEIR file a collection."""
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"col-{n:02d}" for n in range(collections)]
    dealt: dict[str, list[str]] = {name: [] for name in names}
    with corpus.open(encoding="utf-8") as lines:
        for n, line in enumerate(lines):
            if n >= documents:
                break
            dealt[names[n % collections]].append(line if line.endswith("\n") else line + "\n")
    files = []
    for name, records in dealt.items():
        path = folder / f"{name}.jsonl"
        if not path.exists():
            path.write_text("".join(records), encoding="utf-8")
        files.append((path, name))
    return files


def fill(writer: Any, files: list[tuple[Path, str]]) -> float:
    """Ingest each collection's file into its collection (unchanged ones are skipped); seconds taken."""
    started = time.perf_counter()
    for path, name in files:
        report = writer.ingest([path], collection=name)
        print(f"  {name}: {report.documents_added} documents added", file=sys.stderr, flush=True)
    return time.perf_counter() - started


def measure(index: Any, queries: list[str], names: list[str]) -> dict[str, Any]:
    """Hybrid search times (ms) per query: every collection, three of them, one; interleaved."""
    index.prepare_queries(queries)
    ways: dict[str, tuple[str, ...] | None] = {
        "all": None,
        "three": tuple(names[:3]),
        "one": tuple(names[:1]),
    }
    for query in queries[:WARM]:
        for collections in ways.values():
            index.search(query, k=10, collections=collections)
    times: dict[str, list[float]] = {way: [] for way in ways}
    found: dict[str, list[int]] = {way: [] for way in ways}
    for query in queries[WARM:]:
        for way, collections in ways.items():
            started = time.perf_counter()
            hits = index.search(query, k=10, collections=collections)
            times[way].append((time.perf_counter() - started) * 1000)
            found[way].append(len(hits))
    result: dict[str, Any] = {}
    for way in ways:
        p50, p95 = percentiles(times[way])
        result[way] = {"p50_ms": p50, "p95_ms": p95, "mean_hits": statistics.fmean(found[way])}
    for way in ("three", "one"):
        result[way]["p50_vs_all"] = result[way]["p50_ms"] / result["all"]["p50_ms"]
    return result


def old_module(rev: str, name: str) -> types.ModuleType:
    """`citewise/index/shared/<name>.py` as it was at git revision `rev`, as a module of its own."""
    path = f"citewise/index/shared/{name}.py"
    source = subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    module = types.ModuleType(f"before_{name}")
    exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)  # noqa: S102 - the repository's own code
    return module


def before_store(dsn: str, rev: str, prefix: str = "citewise") -> str:
    """A copy of the store's database as `rev` searched it: its BM25 function, none of today's new indexes."""
    lexical = old_module(rev, "pglexical")
    admin = dsn.rsplit("/", 1)[0] + "/template1"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {BEFORE_DATABASE} WITH (FORCE)")
        database = dsn.rsplit("/", 1)[1]
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(BEFORE_DATABASE), sql.Identifier(database)))  # fmt: skip
    before = dsn.rsplit("/", 1)[0] + f"/{BEFORE_DATABASE}"
    with psycopg.connect(before, autocommit=True) as conn:
        known = {row[0] for row in conn.execute("SELECT indexname FROM pg_indexes")}
        for table in ("vectors", "pvectors", "lexical_chunks", "plexical_chunks"):
            for index in (f"{prefix}_{table}_collection_index", f"{prefix}_{table}_collection"):
                if index in known:
                    conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index)))
        for part in ("lexical", "plexical"):
            lexical.PgLexical(conn, "bm25", prefix=f"{prefix}_{part}").create()  # rev's search function
        conn.execute("ANALYZE")
    return before


def before_index(rev: str) -> type[SharedIndex]:
    """A `SharedIndex` whose dense searches run `rev`'s pgvector query."""
    vectors = old_module(rev, "pgvectors")

    class Before(SharedIndex):
        def _store_of(self, conn: psycopg.Connection) -> PgStore:
            if conn in self._stores:
                return self._stores[conn]
            store = super()._store_of(conn)
            store._pgvectors = tuple(  # type: ignore[assignment]
                vectors.PgVectors(conn, self.settings.dim, prefix=f"{self.prefix}_{part}")
                for part in ("vectors", "pvectors")
            )
            return store

    return Before


def measure_pair(
    after: SharedIndex, before: SharedIndex, queries: list[str], names: list[str]
) -> dict[str, Any]:
    """`measure` for two stores at once, interleaved query by query and way by way (order alternating)."""
    after.prepare_queries(queries)
    before.prepare_queries(queries)
    ways: dict[str, tuple[str, ...] | None] = {
        "all": None,
        "three": tuple(names[:3]),
        "one": tuple(names[:1]),
    }
    stores = {"after": after, "before": before}
    for query in queries[:WARM]:
        for collections in ways.values():
            for index in stores.values():
                index.search(query, k=10, collections=collections)
    times: dict[str, dict[str, list[float]]] = {side: {way: [] for way in ways} for side in stores}
    for n, query in enumerate(queries[WARM:]):
        for way, collections in ways.items():
            for side in ("after", "before") if n % 2 else ("before", "after"):
                started = time.perf_counter()
                stores[side].search(query, k=10, collections=collections)
                times[side][way].append((time.perf_counter() - started) * 1000)
    result: dict[str, Any] = {}
    for side in stores:
        result[side] = {}
        for way in ways:
            p50, p95 = percentiles(times[side][way])
            result[side][way] = {"p50_ms": p50, "p95_ms": p95}
        for way in ("three", "one"):
            result[side][way]["p50_vs_all"] = result[side][way]["p50_ms"] / result[side]["all"]["p50_ms"]
    return result


def found(after: SharedIndex, before: SharedIndex, queries: list[str], names: list[str]) -> dict[str, Any]:
    """What filtered searches find, today's against `before`'s and an exact search of the readable chunks."""
    with after._store() as store:
        rows = store.conn.execute("SELECT id, collection FROM citewise_vectors_chunks").fetchall()
        stored = store.vectors.vectors([key for key, _ in rows])
    ids = [key for key, _ in rows]
    home = np.array([collection for _, collection in rows])
    matrix = np.stack([stored[key] for key in ids])
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    vectors = after.embedder.embed(queries)
    result: dict[str, Any] = {}
    for way, collections in (("three", tuple(names[:3])), ("one", tuple(names[:1]))):
        readable = np.isin(home, collections)
        recall: dict[str, list[float]] = {"after": [], "before": []}
        same_bm25, same_top = [], []
        for query, vector in zip(queries, vectors, strict=True):
            similarity = np.where(readable, matrix @ (vector / np.linalg.norm(vector)), -np.inf)
            exact = {ids[i] for i in np.argsort(-similarity)[:100]}
            for side, index in (("after", after), ("before", before)):
                with index._store() as store:
                    dense = store.dense(vector, 100, collections)
                recall[side].append(len(exact & {key for key, _ in dense}) / len(exact))
            with after._store() as a, before._store() as b:
                same_bm25.append([k for k, _ in a.bm25(query, 100, collections)] ==
                                 [k for k, _ in b.bm25(query, 100, collections)])  # fmt: skip
            tops = [
                [hit.chunk_id for hit in index.search(query, k=10, collections=collections)]
                for index in (after, before)
            ]
            same_top.append(len(set(tops[0]) & set(tops[1])) / max(len(tops[1]), 1))
        result[way] = {
            "dense_recall_of_exact_100": {side: statistics.fmean(r) for side, r in recall.items()},
            "bm25_top_100_identical": statistics.fmean(same_bm25),
            "hybrid_top_10_shared_with_before": statistics.fmean(same_top),
        }
    return result


def every_collection_quality(
    index: Any, queries: dict[str, str], qrels: dict[str, dict[str, int]], names: list[str]
) -> dict[str, Any]:
    """nDCG@10 and R@5 of documents ranked by the administrator's search and by an all-reading user's."""
    from ranx import Qrels, Run, evaluate

    keys: dict[str, str] = {}

    def ranking(query: str, collections: tuple[str, ...] | None) -> dict[str, float]:
        hits = index.search(query, k=100, collections=collections)
        ranked: dict[str, float] = {}
        for hit in hits:
            if hit.doc_id not in keys:
                record = index.document(hit.doc_id)
                keys[hit.doc_id] = record.key if record else hit.doc_id
            ranked.setdefault(keys[hit.doc_id], float(len(hits) - hit.rank + 1))
        return dict(list(ranked.items())[:10])

    runs = {"admin": {}, "every_collection": {}}
    for qid, query in queries.items():
        runs["admin"][qid] = ranking(query, None)
        runs["every_collection"][qid] = ranking(query, tuple(names))
    judged = Qrels({q: qrels[q] for q in queries})
    scores = {way: evaluate(judged, Run(run), ["ndcg@10", "recall@5"]) for way, run in runs.items()}
    same = sum(runs["admin"][q] == runs["every_collection"][q] for q in queries)
    return {
        "queries": len(queries),
        **{way: {m: float(v) for m, v in figures.items()} for way, figures in scores.items()},
        "same_ranking": same / len(queries),
    }


def judged_subset(
    corpus: Path, documents: int, queries: Path, qrels_path: Path
) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """The queries with a relevant document among the first `documents`, and those judgements."""
    held = set()
    with corpus.open(encoding="utf-8") as lines:
        for n, line in enumerate(lines):
            if n >= documents:
                break
            held.add(json.loads(line)["_id"])
    qrels = {
        q: {d: r for d, r in judged.items() if d in held} for q, judged in read_qrels(qrels_path).items()
    }
    qrels = {q: judged for q, judged in qrels.items() if judged}
    return {q: t for q, t in read_queries(queries).items() if q in qrels}, qrels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--collections", type=int, default=10)
    parser.add_argument("--questions", type=int, default=220, help="queries run (the first 20 warm up)")
    parser.add_argument("--qrels", type=Path, help="judgements: an all-reading user's quality, both tiers")
    parser.add_argument("--before", metavar="REV", help="also the shared tier as git revision REV searched")
    parser.add_argument("--cache", type=Path, default=Path("bench/.cache/permissions"))
    parser.add_argument("--out", type=Path, default=Path("bench/results/permissions.json"))
    args = parser.parse_args()

    files = split(args.corpus, args.docs, args.collections, args.cache / "files")
    names = [name for _, name in files]
    queries = list(read_queries(args.queries).values())[: args.questions]
    judged = judged_subset(args.corpus, args.docs, args.queries, args.qrels) if args.qrels else None
    results: dict[str, Any] = {}
    quality: dict[str, Any] = {}
    compared: dict[str, Any] = {}
    with Index.open(args.cache / "local") as local:
        seconds = fill(local, files)
        stats = local.stats()
        results["local"] = {"ingest_s": seconds, "chunks": stats.chunks, **measure(local, queries, names)}
        if judged:
            quality["local"] = every_collection_quality(local, *judged, names)
    with serve(args.cache / "pg") as server:
        writer = SharedWriter(server.dsn)
        seconds = fill(writer, files)
        writer.up_to_date()
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute("ANALYZE")  # as autovacuum would have by now; the copy below is analyzed too
        before = before_store(server.dsn, args.before) if args.before else None
        with SharedIndex(server.dsn) as shared:
            chunks = shared.stats().chunks
            if before is None:
                results["shared"] = {"ingest_s": seconds, "chunks": chunks, **measure(shared, queries, names)}
            else:
                with before_index(args.before)(before) as old:
                    pair = measure_pair(shared, old, queries, names)
                    results["shared"] = {"ingest_s": seconds, "chunks": chunks, **pair["after"]}
                    results[f"shared before {args.before}"] = {"chunks": chunks, **pair["before"]}
                    compared = found(shared, old, queries[WARM:], names)
            if judged:
                quality["shared"] = every_collection_quality(shared, *judged, names)
    rows = []
    for tier, figures in results.items():
        for way in ("all", "three", "one"):
            rows.append(
                {
                    "tier": tier,
                    "collections": {"all": "all (no filter)", "three": "3 of 10", "one": "1 of 10"}[way],
                    "p50 ms": figures[way]["p50_ms"],
                    "p95 ms": figures[way]["p95_ms"],
                    "p50 / all": figures[way].get("p50_vs_all", 1.0),
                    "hits": figures[way].get("mean_hits"),
                }
            )
    print_table(rows, ["tier", "collections", "p50 ms", "p95 ms", "p50 / all", "hits"])
    if compared:
        print(json.dumps({"found": compared}, indent=1))
    if quality:
        print(json.dumps({"every collection against no filter": quality}, indent=1))
    save(
        args.out,
        {
            "documents": args.docs,
            "collections": args.collections,
            "queries": len(queries) - WARM,
            "machine": machine(),
            "results": results,
            **({"before": args.before, "found": compared} if compared else {}),
            **({"every_collection_quality": quality} if quality else {}),
        },
    )
    print(
        json.dumps(
            {tier: {w: r[w]["p50_ms"] for w in ("all", "three", "one")} for tier, r in results.items()}
        )
    )


if __name__ == "__main__":
    main()
