"""Ingest throughput: the whole pipeline against a bare loop that only embeds the same chunks, one run.

Variants, each in its own process (so peak memory is its own):
  pipeline-pooled  citewise ingest with chunk vectors pooled from sentence vectors, paragraphs embedded whole
                   (the default)
  pipeline-pooled-paragraphs  the same with paragraph vectors pooled from the chunks (no paragraph pass)
  pipeline-embed   citewise ingest that embeds every chunk text again after chunking
  bare-embed       only `embedder.embed` over the chunk texts the pooled pipeline produced, same batches
Reports documents/s, chunks/s, peak RSS, and the share of wall time spent inside the embedding model.

    D=../shared/data/scifact
    python bench/ingest.py --corpus $D/corpus.jsonl --queries $D/queries.train.jsonl \
        --qrels $D/qrels/train.tsv --out bench/results/ingest-scifact.json

With `--queries` and `--qrels`, exact dense search over the same chunks is scored (nDCG@10, Recall@100)
once with the pooled vectors and once with the re-embedded ones, so the time pooling saves is weighed
against what it costs in quality.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, print_table, save

from citewise.index import ChunkingConfig, Index
from citewise.index.chunking import chunk_input
from citewise.index.embeddings import MiniLMEmbedder


class TimedEmbedder(MiniLMEmbedder):
    """MiniLM that adds up the seconds spent inside the model."""

    seconds = 0.0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        started = time.perf_counter()
        try:
            return super().embed(texts)
        finally:
            self.seconds += time.perf_counter() - started


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def by_doc_ids(rows: list) -> list[str]:
    """Chunk ids grouped by document in first-seen order (the order the bare loop embeds them in)."""
    grouped: dict[str, list[str]] = {}
    for chunk_id, doc_id, *_ in rows:
        grouped.setdefault(doc_id, []).append(chunk_id)
    return [chunk_id for ids in grouped.values() for chunk_id in ids]


def dense_quality(index_dir: Path, embedded: Path, queries: Path, qrels: Path) -> dict[str, dict[str, float]]:
    """nDCG@10 / Recall@100 of exact dense search with pooled and with re-embedded chunk vectors."""
    from common import read_qrels, read_queries
    from ranx import Qrels, Run, evaluate

    index = Index.open(index_dir)
    rows = [r for batch in index.docstore.iter_chunks() for r in batch]
    keys = {r[1]: (index.document(r[1]).key) for r in rows}
    pooled_ids = [r[0] for r in rows]
    pooled = np.stack([np.frombuffer(r[5], dtype=np.float32) for r in rows])
    doc_of = {r[0]: keys[r[1]] for r in rows}
    reembedded_ids = json.loads(embedded.with_suffix(".ids.json").read_text())
    reembedded = np.load(embedded.with_suffix(".npy"))
    text, judged = read_queries(queries), read_qrels(qrels)
    asked = [q for q in text if q in judged]
    query_vectors = index.embedder.embed([text[q] for q in asked])
    results = {}
    for name, ids, matrix in (("pooled", pooled_ids, pooled), ("embed", reembedded_ids, reembedded)):
        similarity = query_vectors @ matrix.T
        run = {}
        for row, q in enumerate(asked):
            ranking: dict[str, float] = {}
            for i in np.argsort(-similarity[row])[:2000]:
                ranking.setdefault(doc_of[ids[i]], float(similarity[row, i]))
                if len(ranking) == 100:
                    break
            run[q] = ranking
        scores = evaluate(
            Qrels.from_dict({q: judged[q] for q in asked}), Run.from_dict(run), ["ndcg@10", "recall@100"]
        )
        results[name] = {metric: float(value) for metric, value in scores.items()}
    return results


def worker(variant: str, corpus: Path, index_dir: Path, source: Path | None) -> dict[str, float]:
    embedder = TimedEmbedder()
    embedder.embed(["warm up the model"])
    embedder.seconds = 0.0
    if variant.startswith("pipeline"):
        chunking = ChunkingConfig(
            vectors="embed" if variant == "pipeline-embed" else "pooled",
            paragraph_vectors="pooled" if variant == "pipeline-pooled-paragraphs" else "whole",
        )
        index = Index.open(index_dir, chunking=chunking, embedder=embedder)
        started = time.perf_counter()
        report = index.ingest([corpus])
        wall = time.perf_counter() - started
        documents, chunks = report.documents_added, report.chunks_added
    else:
        index = Index.open(source, embedder=embedder)
        rows = [r for batch in index.docstore.iter_chunks() for r in batch]
        by_doc: dict[str, list[str]] = {}
        for _, doc_id, _, title, text, _ in rows:
            by_doc.setdefault(doc_id, []).append(chunk_input(title, text, index.chunking))
        groups = list(by_doc.values())
        started = time.perf_counter()
        vectors = [
            embedder.embed([text for group in groups[i : i + 64] for text in group])
            for i in range(0, len(groups), 64)  # the pipeline's batch of 64 documents
        ]
        wall = time.perf_counter() - started
        # the re-embedded chunk vectors, for comparing retrieval quality with the pooled ones
        ordered = by_doc_ids(rows)
        np.save(index_dir.with_suffix(".npy"), np.concatenate(vectors))
        (index_dir.with_suffix(".ids.json")).write_text(json.dumps(ordered))
        documents, chunks = len(groups), len(rows)
    return {
        "seconds": wall,
        "documents": documents,
        "chunks": chunks,
        "documents_per_s": documents / wall,
        "chunks_per_s": chunks / wall,
        "embed_seconds": embedder.seconds,
        "embed_share": embedder.seconds / wall,
        "peak_rss_mb": peak_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--limit", type=int, default=0, help="only the first N documents of the corpus")
    parser.add_argument(
        "--variants",
        nargs="+",
        default=["pipeline-pooled", "pipeline-embed", "bare-embed"],
        choices=["pipeline-pooled", "pipeline-pooled-paragraphs", "pipeline-embed", "bare-embed"],
        help="pipeline-pooled must come first",
    )
    parser.add_argument("--queries", type=Path, help="BEIR queries: also compare dense nDCG of both vectors")
    parser.add_argument("--qrels", type=Path)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--source", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.corpus, args.index, args.source)))
        return

    scratch = Path(tempfile.mkdtemp(prefix="citewise-ingest-"))
    corpus = args.corpus
    if args.limit:
        corpus = scratch / "corpus.jsonl"
        with args.corpus.open() as src, corpus.open("w") as dst:
            for _, line in zip(range(args.limit), src, strict=False):
                dst.write(line)
    results = {}
    try:
        for variant in args.variants:
            command = [
                sys.executable,
                __file__,
                "--worker",
                variant,
                "--corpus",
                str(corpus),
                "--index",
                str(scratch / variant),
                "--source",
                str(scratch / "pipeline-pooled"),
            ]
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            results[variant] = json.loads(output.strip().splitlines()[-1])
            print(variant, results[variant], flush=True)
        quality = None
        if args.queries and args.qrels:
            quality = dense_quality(
                scratch / "pipeline-pooled", scratch / "bare-embed", args.queries, args.qrels
            )
            print("dense retrieval, exact cosine over the same chunks:", quality)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    bare = results["bare-embed"]["seconds"]
    for result in results.values():
        result["x_bare_embed"] = result["seconds"] / bare
    print()
    print_table(
        [{"variant": k, **v} for k, v in results.items()],
        [
            "variant",
            "seconds",
            "documents_per_s",
            "chunks_per_s",
            "embed_share",
            "peak_rss_mb",
            "x_bare_embed",
        ],
    )
    if args.out:
        save(
            args.out,
            {
                "variants": results,
                "dense_quality": quality,
                "corpus": str(args.corpus),
                "limit": args.limit,
                "machine": machine(),
            },
        )


if __name__ == "__main__":
    main()
