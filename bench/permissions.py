"""What a permission filter costs a search: hybrid search p50 with the asker's collections against without.

A subset of SciFact's corpus (`--docs`, the first N abstracts) is split round-robin into `--collections`
collections and ingested into both tiers: a local index (bm25s, exact dense search, SQLite) and a shared
store (PostgreSQL with pgvector, on a server `citewise.index.shared.pgserver` starts in ``--cache``). Each
query then runs three ways, interleaved query by query so that the machine's noise falls on all: every
collection (None, the administrator's search), a user's three collections, and one collection. A search is
product-sized (hybrid, min-max, k=10, 100 candidates a retriever); the queries are embedded ahead in one
batch (`prepare_queries`), so every way times the search alone (the first way of a query would otherwise pay
the embedding the others find remembered). The target is a filtered p50 at most 1.2 times the unfiltered
one::

    python bench/permissions.py --corpus ../shared/data/scifact/corpus.jsonl \
        --queries ../shared/data/scifact/queries.train.jsonl --out bench/results/permissions.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine, percentiles, print_table, read_queries, save  # noqa: E402

from citewise.index import Index  # noqa: E402
from citewise.index.shared.index import SharedIndex  # noqa: E402
from citewise.index.shared.pgserver import serve  # noqa: E402
from citewise.index.shared.writer import SharedWriter  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--collections", type=int, default=10)
    parser.add_argument("--questions", type=int, default=220, help="queries run (the first 20 warm up)")
    parser.add_argument("--cache", type=Path, default=Path("bench/.cache/permissions"))
    parser.add_argument("--out", type=Path, default=Path("bench/results/permissions.json"))
    args = parser.parse_args()

    files = split(args.corpus, args.docs, args.collections, args.cache / "files")
    names = [name for _, name in files]
    queries = list(read_queries(args.queries).values())[: args.questions]
    results: dict[str, Any] = {}
    with Index.open(args.cache / "local") as local:
        seconds = fill(local, files)
        stats = local.stats()
        results["local"] = {"ingest_s": seconds, "chunks": stats.chunks, **measure(local, queries, names)}
    with serve(args.cache / "pg") as server:
        writer = SharedWriter(server.dsn)
        seconds = fill(writer, files)
        with SharedIndex(server.dsn) as shared:
            chunks = shared.stats().chunks
            results["shared"] = {"ingest_s": seconds, "chunks": chunks, **measure(shared, queries, names)}
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
                    "hits": figures[way]["mean_hits"],
                }
            )
    print_table(rows, ["tier", "collections", "p50 ms", "p95 ms", "p50 / all", "hits"])
    save(
        args.out,
        {
            "documents": args.docs,
            "collections": args.collections,
            "queries": len(queries) - WARM,
            "machine": machine(),
            "results": results,
        },
    )
    print(
        json.dumps(
            {tier: {w: r[w]["p50_ms"] for w in ("all", "three", "one")} for tier, r in results.items()}
        )
    )


if __name__ == "__main__":
    main()
