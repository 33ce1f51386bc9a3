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
a while: fill them ahead with `python -m citewise.index.shared.pgworker` processes (bench/pgingest.py writes
the files the same way). The tiers' chunks differ a little: the int8 model quantizes per batch, so a document
embedded in a batch of its own is cut at a sentence boundary or two elsewhere than in the corpus-wide batches
of a local ingest; documents, which are what is scored, are the same::

    python bench/sharedtier.py --hotpotqa ../shared/data/hotpotqa --index bench/.cache/hotpotqa \
        --store postgresql://postgres@127.0.0.1:5432/postgres --prefix hotpotqa \
        --out bench/results/sharedtier-hotpotqa.json
    python bench/sharedtier.py --corpus ../shared/data/scifact/corpus.jsonl \
        --queries ../shared/data/scifact/queries.train.jsonl --qrels ../shared/data/scifact/qrels/train.tsv \
        --index bench/.cache/scifact --store ... --prefix scifact --out bench/results/sharedtier-scifact.json

``--vectors`` names where the shared stores keep their vectors, one store each: ``pgvector`` (the default;
table prefix ``--prefix``) and a Chroma server, ``chroma://host:port`` (prefix ``<prefix>_chroma``), so
``--vectors pgvector chroma://127.0.0.1:8000`` ranks pgvector against Chroma on the same documents, beside
the local tier. ``--corpus-limit N`` keeps the first N corpus records and every record judged for the
evaluated queries (a subset: quicker to fill, and its figures are not the full corpus's)::

    python bench/sharedtier.py --corpus ../shared/data/scifact/corpus.jsonl \
        --queries ../shared/data/scifact/queries.train.jsonl --qrels ../shared/data/scifact/qrels/train.tsv \
        --limit 300 --corpus-limit 1500 --index bench/.cache/scifact-subset --store ... --prefix subset \
        --vectors pgvector chroma://127.0.0.1:8000 --out bench/results/sharedtier-chroma-scifact.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ranx import Qrels, Run, evaluate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import hotpotqa_as_beir, machine, percentiles, print_table, read_qrels, read_queries, save

from citewise.index import ChunkingConfig, Index
from citewise.index.reading import SearchIndex
from citewise.index.shared.chromavectors import PGVECTOR, vector_choice
from citewise.index.shared.index import SharedIndex
from citewise.index.shared.pgstore import PgStore
from citewise.index.shared.pgworker import run, store_embedder

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


def fill(
    store: PgStore, corpus: Path, model: str, chunking: ChunkingConfig, vectors: str | None = None
) -> float | None:
    """Make the store and ingest the corpus into it (one record a file) unless it holds documents already."""
    store.create(model, chunking, vectors)
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


def subset(corpus: Path, limit: int, judged: set[str], folder: Path) -> Path:
    """A corpus file of the first `limit` records of `corpus` and every record whose id is in `judged`."""
    out = folder / f"{corpus.stem}-first{limit}-judged{len(judged)}.jsonl"
    if not out.exists():
        folder.mkdir(parents=True, exist_ok=True)
        with corpus.open(encoding="utf-8") as source, out.open("w", encoding="utf-8") as target:
            for n, line in enumerate(source):
                if line.strip() and (n < limit or str(json.loads(line)["_id"]) in judged):
                    target.write(line if line.endswith("\n") else line + "\n")
    return out


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
    parser.add_argument(
        "--vectors",
        nargs="+",
        default=[PGVECTOR],
        help="where shared stores keep their vectors, a store each: pgvector, chroma://host:port",
    )
    parser.add_argument(
        "--corpus-limit", type=int, default=0, help="the first N records and those judged for the queries"
    )
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
    if args.corpus_limit:
        judged = {doc for q in query_ids for doc in qrels[q]}
        corpus = subset(corpus, args.corpus_limit, judged, args.index.parent)

    local = Index.open(args.index)
    if not local.stats().documents:  # an index built already is only read
        local.ingest([corpus])
    choices = [vector_choice(option) or PGVECTOR for option in args.vectors]
    tiers: dict[str, SearchIndex] = {"local": local}
    counts: dict[str, dict[str, int]] = {}
    ingest_seconds: dict[str, float | None] = {}
    for choice in choices:
        kind = "pgvector" if choice == PGVECTOR else "chroma"
        name = "shared" if len(choices) == 1 else f"shared-{kind}"
        prefix = args.prefix if choice == PGVECTOR else f"{args.prefix}_chroma"
        with PgStore(args.store, prefix=prefix, dim=local.embedder.dim) as store:
            ingest_seconds[name] = fill(store, corpus, local.embedder.name, local.chunking, choice)
            counts[name] = store.counts()
        tiers[name] = SharedIndex(args.store, prefix=prefix, embedder=local.embedder)
    texts = [queries[q] for q in query_ids]
    for index in tiers.values():
        index.prepare_queries(texts)  # type: ignore[attr-defined]

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
    shared_tiers = [name for name in tiers if name != "local"]
    gaps = {
        f"{tier} {mode}": results[f"{tier} {mode}"][headline] - results[f"local {mode}"][headline]
        for tier in shared_tiers
        for mode in MODES
    }
    print()
    print_table(
        [{"run": name, **row} for name, row in results.items()],
        ["run", *metrics, *(["recall@5 odd"] if args.hotpotqa else []), "p50_ms", "p95_ms"],
    )
    print(f"\nshared - local, {headline}: " + ", ".join(f"{name} {gap:+.4f}" for name, gap in gaps.items()))
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
                "vectors": dict(zip(shared_tiers, choices, strict=True)),
                "corpus": str(corpus),
                "corpus_limit": args.corpus_limit,
                "latency": "k=10, candidates=100 a retriever, redundancy 0.9, query embedding included",
                "machine": machine(),
            },
        )
    for index in tiers.values():
        index.close()


if __name__ == "__main__":
    main()
