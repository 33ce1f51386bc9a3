"""Retrieval quality and latency of citewise's index on a BEIR-layout data set (or HotpotQA).

Runs bm25, dense, hybrid (alpha 0.3 / 0.5 / 0.7, min-max fusion) and RRF side by side over one index,
plus two ablations without the paragraph-level BM25, and reports nDCG@10, Recall@10, Recall@100 and
MRR@10 (ranx) at document level (a document scores as its best chunk), plus p50 / p95 latency of a
product-sized search (k=10) per mode.

    python bench/retrieval.py --corpus ../shared/data/scifact/corpus.jsonl \
        --queries ../shared/data/scifact/queries.train.jsonl --qrels ../shared/data/scifact/qrels/train.tsv \
        --index bench/.cache/scifact --out bench/results/retrieval-scifact.json
    python bench/retrieval.py --hotpotqa ../shared/data/hotpotqa --index bench/.cache/hotpotqa \
        --out bench/results/retrieval-hotpotqa.json

`--runs` picks some of the runs; `--paragraph-weights 0 0.5 0.7 1` adds hybrid-0.5 runs at those shares of
the paragraph's BM25 in a chunk's lexical score (the sweep behind the 0.7 default).

Baselines without chunking, in the same table, so that no figure of citewise's stands against nothing:
each document (its title, a newline, its text) is one passage; `whole-bm25` is bm25s over the passages with
citewise's lexical settings, `whole-dense` the passage embedded whole with the index's model (exact cosine;
MiniLM reads the first 256 word pieces only), `whole-hybrid-0.5` their min-max fusion at alpha 0.5 over the
union of each one's top 100, as citewise fuses. Passage embeddings are cached under bench/.cache/.
`--no-baselines` skips them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from ranx import Qrels, Run, evaluate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import hotpotqa_as_beir, machine, percentiles, print_table, read_qrels, read_queries, save

from citewise.index import ChunkingConfig, Index
from citewise.index.embeddings import Embedder
from citewise.index.fusion import rank, weighted_fusion
from citewise.index.hops import two_hop_search
from citewise.index.local.lexical import LexicalIndex
from citewise.index.local.paragraphs import ParagraphVectors

CACHE = Path(__file__).resolve().parent / ".cache"

RUNS: dict[str, dict[str, Any]] = {
    "bm25": {"mode": "bm25"},
    "dense": {"mode": "dense"},
    "hybrid-0.3": {"mode": "hybrid", "alpha": 0.3},
    "hybrid-0.5": {"mode": "hybrid", "alpha": 0.5},
    "hybrid-0.7": {"mode": "hybrid", "alpha": 0.7},
    "rrf": {"mode": "hybrid", "fusion": "rrf"},
    # ablations: lexical score from the chunk alone, without its paragraph's BM25
    "bm25-chunk-only": {"mode": "bm25", "paragraph_weight": 0.0},
    "hybrid-0.5-chunk-only": {"mode": "hybrid", "alpha": 0.5, "paragraph_weight": 0.0},
    # ablations: dense score from the chunk's own vector alone, without its paragraph's vector
    "dense-own-vector": {"mode": "dense", "paragraph_dense_weight": 0.0},
    "hybrid-0.5-own-vector": {"mode": "hybrid", "alpha": 0.5, "paragraph_dense_weight": 0.0},
    # a second hop: the question joined to the best first-round passage, interleaved (citewise.index.hops)
    "hybrid-0.5-2hop": {"mode": "hybrid", "alpha": 0.5, "follow_ups": 1, "keep": 1},
    "hybrid-0.5-2hop-keep2": {"mode": "hybrid", "alpha": 0.5, "follow_ups": 1, "keep": 2},
}


def document_ranking(
    index: Index, query: str, depth: int, chunk_depth: int, **kwargs: Any
) -> dict[str, float]:
    """Documents ranked by their best chunk: {beir id: score}, `depth` documents at most."""
    if "follow_ups" in kwargs:
        hits = two_hop_search(index, query, k=chunk_depth, candidates=chunk_depth, **kwargs)
    else:
        hits = index.search(query, k=chunk_depth, candidates=chunk_depth, **kwargs)
    ranking: dict[str, float] = {}
    keys = _beir_keys(index, [h.doc_id for h in hits])
    for hit in hits:
        key = keys[hit.doc_id]
        if key not in ranking:
            ranking[key] = float(len(hits) - hit.rank + 1)  # rank-preserving positive score
            if len(ranking) == depth:
                break
    return ranking


def all_found(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]], depth: int) -> float:
    """The share of queries whose relevant documents are all in the run's first `depth`."""
    found = 0
    for query, ranking in run.items():
        top = sorted(ranking, key=lambda key: -ranking[key])[:depth]
        found += set(qrels[query]) <= set(top)
    return found / len(run) if run else 0.0


_KEYS: dict[str, str] = {}


def _beir_keys(index: Index, doc_ids: list[str]) -> dict[str, str]:
    missing = [d for d in set(doc_ids) if d not in _KEYS]
    for doc_id in missing:
        record = index.document(doc_id)
        _KEYS[doc_id] = record.key if record else doc_id
    return {d: _KEYS[d] for d in doc_ids}


WHOLE_ALPHA = 0.5
WHOLE_RUNS = ("whole-bm25", "whole-dense", f"whole-hybrid-{WHOLE_ALPHA:g}")


def read_passages(corpus: Path) -> tuple[list[str], list[str]]:
    """A BEIR corpus as whole passages: (document ids, title + newline + text), in file order."""
    ids, passages = [], []
    with corpus.open() as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                title, text = " ".join(str(row.get("title") or "").split()), str(row.get("text") or "")
                ids.append(str(row["_id"]))
                passages.append(f"{title}\n{text}" if title else text)
    return ids, passages


def passage_vectors(corpus: Path, passages: list[str], embedder: Embedder) -> tuple[np.ndarray, float | None]:
    """Whole-passage embeddings, cached by corpus file name + size (and model): (rows, seconds or None)."""
    cache = CACHE / f"{corpus.name}-{corpus.stat().st_size}-{embedder.name}-whole.npy"
    if cache.exists():
        vectors = np.load(cache)
        if vectors.shape == (len(passages), embedder.dim):
            return vectors, None
    started = time.perf_counter()
    vectors = embedder.embed(passages)
    seconds = time.perf_counter() - started
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
    with tmp.open("wb") as handle:
        np.save(handle, vectors)
    os.replace(tmp, cache)
    return vectors, seconds


def truncated(passages: list[str], embedder: Embedder) -> tuple[int | None, int | None]:
    """How many passages exceed the model's window (word pieces, special tokens included), and the window."""
    model = getattr(embedder, "model", None)
    if model is None or getattr(model, "tokenizer", None) is None:
        return None, None
    window = int(model.get_max_seq_length())
    lengths = [len(ids) for ids in model.tokenizer(passages, verbose=False)["input_ids"]]
    return sum(length > window for length in lengths), window


def whole_passage_runs(
    corpus: Path, queries: Sequence[str], embedder: Embedder, depth: int = 100
) -> tuple[dict[str, list[dict[str, float]]], dict[str, Any]]:
    """Baseline rankings over whole passages, one {doc id: score} per query for each of WHOLE_RUNS."""
    ids, passages = read_passages(corpus)
    vectors, embed_seconds = passage_vectors(corpus, passages, embedder)
    if embed_seconds is not None:
        print(f"embedded {len(passages)} whole passages, {embed_seconds:.0f}s", flush=True)
    with tempfile.TemporaryDirectory() as folder:  # citewise's own BM25 class, settings and scoring
        lexical = LexicalIndex(Path(folder), "whole")
        lexical.build(ids, passages, generation=0)
    similarities = vectors @ embedder.embed(list(queries)).T  # exact cosine, one column per query
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in WHOLE_RUNS}
    for column, query in enumerate(queries):
        bm25_all, dense_all = lexical.score_all(query), similarities[:, column]
        bm25_top = [int(i) for i in np.argsort(-bm25_all, kind="stable")[:depth] if bm25_all[i] > 0]
        dense_top = [int(i) for i in np.argsort(-dense_all, kind="stable")[:depth]]
        pool = list(dict.fromkeys(bm25_top + dense_top))  # both scores for every candidate, as citewise
        fused = weighted_fusion(
            {ids[i]: float(bm25_all[i]) for i in pool},
            {ids[i]: float(dense_all[i]) for i in pool},
            WHOLE_ALPHA,
        )
        for name, scores in zip(
            WHOLE_RUNS,
            (
                {ids[i]: float(bm25_all[i]) for i in bm25_top},
                {ids[i]: float(dense_all[i]) for i in dense_top},
                fused,
            ),
            strict=True,
        ):
            order = rank(scores)[:depth]  # ties by id, as citewise; rank-preserving positive scores
            runs[name].append({key: float(len(order) - n) for n, key in enumerate(order)})
    overflow, window = truncated(passages, embedder)
    if overflow is not None:
        print(f"whole-dense: {overflow} of {len(passages)} passages exceed {window} word pieces", flush=True)
    about = {
        "passage": "a document's title, a newline and its text, as one unit",
        "passages": len(passages),
        "bm25": f"bm25s, k1 {lexical.k1}, b {lexical.b}, English stopwords, stemmed (citewise's lexical)",
        "dense": f"{embedder.name}, exact cosine, the first {window} word pieces of a passage",
        "passages_truncated": overflow,
        "hybrid": f"min-max fusion, alpha {WHOLE_ALPHA:g}, over the union of each retriever's top {depth}"
        ", every candidate with both its scores (as Index.search)",
        "embed_seconds": embed_seconds,
    }
    return runs, about


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--queries", type=Path)
    parser.add_argument("--qrels", type=Path)
    parser.add_argument("--hotpotqa", type=Path, help="HotpotQA folder (questions.json, corpus.json)")
    parser.add_argument(
        "--index", type=Path, required=True, help="built when absent, reused (and completed) otherwise"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--max-chars", type=int, default=500)
    parser.add_argument("--min-chars", type=int, default=0)
    parser.add_argument("--vectors", choices=["pooled", "embed"], default="pooled")
    parser.add_argument("--no-title-context", action="store_true")
    parser.add_argument(
        "--chunk-depth", type=int, default=1000, help="chunks retrieved per query for doc ranking"
    )
    parser.add_argument("--limit", type=int, default=0, help="evaluate only the first N queries")
    parser.add_argument(
        "--halves", action="store_true", help="also report recall@5 and all@10 on even and odd positions"
    )
    parser.add_argument("--latency-queries", type=int, default=200, help="0: no latency runs")
    parser.add_argument("--runs", nargs="+", choices=list(RUNS), help="only these runs (default: all)")
    parser.add_argument(
        "--paragraph-weights", nargs="+", type=float, default=[], help="add hybrid-0.5 runs at these weights"
    )
    parser.add_argument(
        "--paragraph-dense-weights",
        nargs="+",
        type=float,
        default=[],
        help="add dense and hybrid-0.5 runs at these shares of the paragraph vector in a chunk's dense score",
    )
    parser.add_argument(
        "--paragraph-vectors",
        choices=["whole", "pooled"],
        default="whole",
        help="at ingest, embed each paragraph whole (default) or pool its chunks' vectors",
    )
    parser.add_argument(
        "--pooled-paragraphs",
        action="store_true",
        help="search with paragraph vectors pooled from the chunks even where whole ones are stored",
    )
    parser.add_argument(
        "--no-baselines", action="store_true", help="skip the whole-passage runs (bm25, dense, hybrid-0.5)"
    )
    args = parser.parse_args()
    runs = {name: RUNS[name] for name in args.runs or RUNS}
    for weight in args.paragraph_weights:
        runs[f"hybrid-0.5-pw{weight:g}"] = {"mode": "hybrid", "alpha": 0.5, "paragraph_weight": weight}
    for weight in args.paragraph_dense_weights:
        runs[f"dense-pd{weight:g}"] = {"mode": "dense", "paragraph_dense_weight": weight}
        runs[f"hybrid-0.5-pd{weight:g}"] = {"mode": "hybrid", "alpha": 0.5, "paragraph_dense_weight": weight}

    if args.hotpotqa:
        corpus, queries, qrels = hotpotqa_as_beir(args.hotpotqa, args.index.parent / "hotpotqa-corpus.jsonl")
        metrics = ["recall@2", "recall@5", "ndcg@10", "recall@10", "mrr@10"]
    else:
        if not (args.corpus and args.queries and args.qrels):
            parser.error("give --corpus, --queries and --qrels (or --hotpotqa)")
        corpus, queries, qrels = args.corpus, read_queries(args.queries), read_qrels(args.qrels)
        metrics = ["ndcg@10", "recall@10", "recall@100", "mrr@10"]
    query_ids = [q for q in queries if q in qrels]
    if args.limit:
        query_ids = query_ids[: args.limit]

    chunking = ChunkingConfig(
        args.threshold,
        args.max_chars,
        args.min_chars,
        args.vectors,
        not args.no_title_context,
        args.paragraph_vectors,
    )
    index = Index.open(args.index, chunking=chunking)
    started = time.perf_counter()
    report = index.ingest([corpus])  # builds, completes an interrupted build, or finds the file unchanged
    build_seconds = time.perf_counter() - started if report.documents_added else None
    if report.documents_added:
        print(
            f"indexed {report.documents_added} documents, {report.chunks_added} chunks, {build_seconds:.0f}s"
        )
    stats = index.stats()
    if args.pooled_paragraphs:
        index.paragraph_vectors = ParagraphVectors(index.docstore, index.embedder.dim, pooled_only=True)

    index.prepare_queries([queries[q] for q in query_ids])  # one batched model pass for every query
    results: dict[str, dict[str, float]] = {}
    qrels_ranx = Qrels.from_dict({q: qrels[q] for q in query_ids})
    for name, kwargs in runs.items():
        run = {q: document_ranking(index, queries[q], 100, args.chunk_depth, **kwargs) for q in query_ids}
        scores = evaluate(qrels_ranx, Run.from_dict(run), metrics, make_comparable=True)
        results[name] = {m: float(scores[m]) for m in metrics} | {"all@10": all_found(run, qrels, 10)}
        print(f"{name}: " + ", ".join(f"{m} {v:.3f}" for m, v in results[name].items()), flush=True)
        if args.halves:  # tuned on the even positions, reported on the odd ones
            for half, ids in (("even", query_ids[0::2]), ("odd", query_ids[1::2])):
                part = {q: run[q] for q in ids}
                half_qrels = Qrels.from_dict({q: qrels[q] for q in ids})
                half_scores = evaluate(half_qrels, Run.from_dict(part), metrics, make_comparable=True)
                results[name][f"recall@5 {half}"] = float(half_scores.get("recall@5", float("nan")))
                results[name][f"all@10 {half}"] = all_found(part, qrels, 10)
    baselines = None
    if not args.no_baselines:
        whole, baselines = whole_passage_runs(corpus, [queries[q] for q in query_ids], index.embedder)
        for name, rankings in whole.items():
            run = dict(zip(query_ids, rankings, strict=True))
            scores = evaluate(qrels_ranx, Run.from_dict(run), metrics, make_comparable=True)
            results[name] = {m: float(scores[m]) for m in metrics} | {"all@10": all_found(run, qrels, 10)}
            print(f"{name}: " + ", ".join(f"{m} {v:.3f}" for m, v in results[name].items()), flush=True)
    # latency of a product-sized search, query embedding included; modes interleaved per query so that
    # the machine's noise falls on all of them alike, their order rotating from query to query: the first
    # search of a query reads its chunks' rows cold, the later ones find them cached
    latencies: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for n, q in enumerate(query_ids[: args.latency_queries]):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            kwargs = runs[name]
            index.forget_queries()
            started = time.perf_counter()
            if "follow_ups" in kwargs:
                two_hop_search(index, queries[q], k=10, **kwargs)
            else:
                index.search(queries[q], k=10, **kwargs)
            latencies[name].append((time.perf_counter() - started) * 1000)
    for name in runs:
        if latencies[name]:  # --latency-queries 0: quality only
            results[name]["p50_ms"], results[name]["p95_ms"] = percentiles(latencies[name])
    print()
    print_table(
        [{"run": n, **r} for n, r in results.items()],
        ["run", *metrics, "all@10", "p50_ms", "p95_ms"]
        + (["recall@5 even", "recall@5 odd", "all@10 even", "all@10 odd"] if args.halves else []),
    )
    if args.out:
        save(
            args.out,
            {
                "runs": results,
                "queries": len(query_ids),
                "index": stats.as_dict(),
                "chunking": chunking.as_dict(),
                "build_seconds": build_seconds,
                "chunk_depth": args.chunk_depth,
                "latency": "k=10, candidates=100 per retriever, redundancy filter 0.9",
                "baselines": baselines,
                "pooled_paragraphs": args.pooled_paragraphs,
                "machine": machine(),
            },
        )


if __name__ == "__main__":
    main()
