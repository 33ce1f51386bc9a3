"""Retrieval quality and search latency of the shared tier against the local tier, side by side (#28, part 4).

The same corpus is in a local index (`Index`: SQLite, bm25s, exact dense search below 50,000 chunks) and in a
shared store (`PgStore` in PostgreSQL with pgvector, read through `SharedIndex`); both rank with
`citewise.index.scoring`. Each query runs through both tiers in hybrid (alpha 0.5, min-max), bm25 and dense
mode, scored at document level as bench/retrieval.py scores them (a document ranks as its best chunk, over
`--chunk-depth` chunks): nDCG@10 on SciFact, R@5 on HotpotQA with its odd half reported (the even half tuned
the defaults). Latency is a product-sized search (k=10, 100 candidates a retriever, query embedding
included), both tiers and all modes interleaved query by query so that the machine's noise falls on all.

A store that does not exist yet is made and filled here: the corpus is written one record a file (a file is
the workers' unit of work) and ingested by the worker loop in this process. SciFact's 5,183 abstracts take
a while: fill them ahead with `python -m citewise.index.pgworker` processes (bench/pgingest.py writes the
files the same way). The tiers' chunks differ a little: the int8 model quantizes per batch, so a document
embedded in a batch of its own is cut at a sentence boundary or two elsewhere than in the corpus-wide batches
of a local ingest; documents, which are what is scored, are the same::

    python bench/sharedtier.py --hotpotqa ../shared/data/hotpotqa --index bench/.cache/hotpotqa \
        --store postgresql://postgres@127.0.0.1:5432/postgres --prefix hotpotqa \
        --out bench/results/sharedtier-hotpotqa.json
    python bench/sharedtier.py --corpus ../shared/data/scifact/corpus.jsonl \
        --queries ../shared/data/scifact/queries.train.jsonl --qrels ../shared/data/scifact/qrels/train.tsv \
        --index bench/.cache/scifact --store ... --prefix scifact --out bench/results/sharedtier-scifact.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ranx import Qrels, Run, evaluate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import hotpotqa_as_beir, machine, percentiles, print_table, read_qrels, read_queries, save

from citewise.index import ChunkingConfig, Index
from citewise.index.pgstore import PgStore
from citewise.index.pgworker import run, store_embedder
from citewise.index.reading import SearchIndex
from citewise.index.shared import SharedIndex

MODES: dict[str, dict[str, Any]] = {
    "hybrid": {"mode": "hybrid", "alpha": 0.5},
    "bm25": {"mode": "bm25"},
    "dense": {"mode": "dense"},
}


def document_ranking(
    index: SearchIndex, query: str, depth: int, chunk_depth: int, **options: Any
) -> dict[str, float]:
    """Documents ranked by their best chunk, {BEIR id: rank-preserving score}, `depth` documents at most."""
    hits = index.search(query, k=chunk_depth, candidates=chunk_depth, **options)
    keys: dict[str, str] = {}
    ranking: dict[str, float] = {}
    for hit in hits:
        if hit.doc_id not in keys:
            record = index.document(hit.doc_id)
            keys[hit.doc_id] = record.key if record else hit.doc_id
        key = keys[hit.doc_id]
        if key not in ranking:
            ranking[key] = float(len(hits) - hit.rank + 1)
            if len(ranking) == depth:
                break
    return ranking


def fill(store: PgStore, corpus: Path, model: str, chunking: ChunkingConfig) -> float | None:
    """Make the store and ingest the corpus into it (one record a file) unless it holds documents already."""
    store.create(model, chunking)
    if store.counts()["documents"]:
        return None
    folder = Path(tempfile.mkdtemp(prefix=f"sharedtier-{store.prefix}-"))
    files = []
    with corpus.open(encoding="utf-8") as handle:
        for n, line in enumerate(handle):
            if line.strip():
                path = folder / f"{n:06d}.jsonl"
                path.write_text(line if line.endswith("\n") else line + "\n", encoding="utf-8")
                files.append(path)
    store.enqueue(files)
    started = time.perf_counter()
    outcomes = run(store, store_embedder(store, threads=None))
    seconds = time.perf_counter() - started
    failed = [o for o in outcomes if o.state != "done"]
    if failed:
        raise RuntimeError(f"{len(failed)} files failed, the first: {failed[0].path}: {failed[0].error}")
    for lexical in (store.lexical, store.paragraph_lexical):
        lexical.analyze()
    print(f"ingested {len(files)} files into {store.prefix!r} in {seconds:.0f} s", flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--queries", type=Path)
    parser.add_argument("--qrels", type=Path)
    parser.add_argument("--hotpotqa", type=Path, help="HotpotQA folder (questions.json, corpus.json)")
    parser.add_argument(
        "--index", type=Path, required=True, help="the local index of the corpus (built if absent)"
    )
    parser.add_argument("--store", required=True, help="the shared store's database: postgresql://...")
    parser.add_argument("--prefix", required=True, help="the shared store's table prefix")
    parser.add_argument("--chunk-depth", type=int, default=1000, help="chunks a query ranks documents by")
    parser.add_argument("--limit", type=int, default=0, help="evaluate only the first N queries")
    parser.add_argument("--latency-queries", type=int, default=100, help="0: no latency runs")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    if args.hotpotqa:
        corpus, queries, qrels = hotpotqa_as_beir(args.hotpotqa, args.index.parent / "hotpotqa-corpus.jsonl")
        metrics = ["recall@5", "ndcg@10", "recall@10"]
    else:
        if not (args.corpus and args.queries and args.qrels):
            parser.error("give --corpus, --queries and --qrels (or --hotpotqa)")
        corpus, queries, qrels = args.corpus, read_queries(args.queries), read_qrels(args.qrels)
        metrics = ["ndcg@10", "recall@10", "recall@100"]
    query_ids = [q for q in queries if q in qrels]
    if args.limit:
        query_ids = query_ids[: args.limit]

    local = Index.open(args.index)
    if not local.stats().documents:  # an index built already is only read
        local.ingest([corpus])
    with PgStore(args.store, prefix=args.prefix, dim=local.embedder.dim) as store:
        ingest_seconds = fill(store, corpus, local.embedder.name, local.chunking)
        counts = store.counts()
    shared = SharedIndex(args.store, prefix=args.prefix, embedder=local.embedder)
    tiers: dict[str, SearchIndex] = {"local": local, "shared": shared}
    texts = [queries[q] for q in query_ids]
    local.prepare_queries(texts)
    shared.prepare_queries(texts)

    qrels_ranx = Qrels.from_dict({q: qrels[q] for q in query_ids})
    results: dict[str, dict[str, float]] = {}
    for mode, options in MODES.items():
        for tier, index in tiers.items():
            started = time.perf_counter()
            run_ = {
                q: document_ranking(index, queries[q], 100, args.chunk_depth, **options) for q in query_ids
            }
            seconds = time.perf_counter() - started
            scores = evaluate(qrels_ranx, Run.from_dict(run_), metrics, make_comparable=True)
            row = {m: float(scores[m]) for m in metrics}
            if args.hotpotqa:  # the defaults were tuned on the even positions; the odd ones are reported
                odd = query_ids[1::2]
                half = evaluate(
                    Qrels.from_dict({q: qrels[q] for q in odd}),
                    Run.from_dict({q: run_[q] for q in odd}),
                    "recall@5",
                    make_comparable=True,
                )
                row["recall@5 odd"] = float(half)  # type: ignore[arg-type]
            row["eval_s"] = seconds
            results[f"{tier} {mode}"] = row
            print(f"{tier} {mode}: " + ", ".join(f"{m} {v:.3f}" for m, v in row.items()), flush=True)

    latencies: dict[str, list[float]] = {name: [] for name in results}
    names = list(results)
    for n, q in enumerate(query_ids[: args.latency_queries]):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            tier, mode = name.split()
            index = tiers[tier]
            index.forget_queries()  # type: ignore[attr-defined]
            started = time.perf_counter()
            index.search(queries[q], k=10, **MODES[mode])
            latencies[name].append((time.perf_counter() - started) * 1000)
    for name in names:
        if latencies[name]:
            results[name]["p50_ms"], results[name]["p95_ms"] = percentiles(latencies[name])

    headline = "recall@5 odd" if args.hotpotqa else "ndcg@10"
    gaps = {mode: results[f"shared {mode}"][headline] - results[f"local {mode}"][headline] for mode in MODES}
    print()
    print_table(
        [{"run": name, **row} for name, row in results.items()],
        ["run", *metrics, *(["recall@5 odd"] if args.hotpotqa else []), "p50_ms", "p95_ms"],
    )
    print(f"\nshared - local, {headline}: " + ", ".join(f"{mode} {gap:+.4f}" for mode, gap in gaps.items()))
    if args.out:
        save(
            args.out,
            {
                "runs": results,
                "headline": headline,
                "shared_minus_local": gaps,
                "target": "shared-tier hybrid within 0.01 of the local tier",
                "queries": len(query_ids),
                "chunk_depth": args.chunk_depth,
                "local_index": local.stats().as_dict(),
                "shared_store": counts,
                "shared_ingest_seconds": ingest_seconds,
                "latency": "k=10, candidates=100 a retriever, redundancy 0.9, query embedding included",
                "machine": machine(),
            },
        )
    shared.close()
    local.close()


if __name__ == "__main__":
    main()
