"""Search latency at scale: p50 / p95 of bm25, dense and hybrid search over an index of 100,000 chunks.

The chunks are synthetic but realistic: each joins two random chunks of an existing index (the SciFact one
built by bench/retrieval.py), and its vector is their pooled, renormalised vectors, exactly as semantic
chunking pools sentence vectors, so no model pass is needed to build it. Queries are SciFact claims.

    python bench/scale.py --source bench/.cache/scifact --index bench/.cache/scale-100k \
        --queries ../shared/data/scifact/queries.train.jsonl --out bench/results/scale-100k.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, percentiles, print_table, read_queries, save

from citewise.index import Document, Index, Paragraph
from citewise.index.chunking import Chunk, ChunkedDocument
from citewise.index.docstore import DocStore


def build(source: Path, target: Path, chunks: int, per_doc: int, seed: int) -> None:
    """Write `chunks` synthetic chunks (in documents of `per_doc`) into a fresh index at `target`."""
    src = DocStore(source / "docs.sqlite3")
    rows = [r for batch in src.iter_chunks() for r in batch]
    texts = [r[4] for r in rows]
    vectors = np.stack([np.frombuffer(r[5], dtype=np.float32) for r in rows])
    rng = np.random.default_rng(seed)
    index = Index.open(target)
    store = index.docstore
    started = time.perf_counter()
    for d in range(0, chunks, per_doc):
        pairs = rng.integers(0, len(rows), size=(per_doc, 2))
        paragraphs = [
            Paragraph(f"{texts[a]} {texts[b]}", section=f"Part {i}") for i, (a, b) in enumerate(pairs)
        ]
        document = Document(
            title=f"Synthetic document {d // per_doc}",
            source="synthetic",
            paragraphs=paragraphs,
            key=str(d // per_doc),
        )
        pooled = vectors[pairs[:, 0]] + vectors[pairs[:, 1]]
        pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
        doc_id = document.id
        chunk_list = [
            Chunk(f"{doc_id}-{i}", doc_id, i, i, p.text, 0, len(p.text)) for i, p in enumerate(paragraphs)
        ]
        store.add([ChunkedDocument(document, chunk_list, pooled)], "synthetic")
    print(f"wrote {chunks} chunks to SQLite in {time.perf_counter() - started:.0f}s", flush=True)
    started = time.perf_counter()
    index.sync()
    print(f"mirrored to Chroma and BM25 in {time.perf_counter() - started:.0f}s", flush=True)
    index.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", type=Path, required=True, help="an index to draw chunks from")
    parser.add_argument("--index", type=Path, required=True, help="built when absent, reused otherwise")
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--n", type=int, default=200, help="queries timed per mode")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    if not (args.index / "docs.sqlite3").exists():
        build(args.source, args.index, args.chunks, per_doc=20, seed=7)
    started = time.perf_counter()
    index = Index.open(args.index)
    open_seconds = time.perf_counter() - started
    stats = index.stats()
    queries = list(read_queries(args.queries).values())[: args.n]
    index.search(queries[0], k=10)  # warm up model and caches
    modes = {"bm25": {"mode": "bm25"}, "dense": {"mode": "dense"}, "hybrid": {"mode": "hybrid"}}
    latencies: dict[str, list[float]] = {name: [] for name in modes}
    names = list(modes)
    for n, query in enumerate(queries):  # modes interleaved, their order rotating (see bench/retrieval.py)
        for name in names[n % len(names) :] + names[: n % len(names)]:
            index.forget_queries()
            t = time.perf_counter()
            index.search(query, k=10, **modes[name])
            latencies[name].append((time.perf_counter() - t) * 1000)
    rows = []
    for name in names:
        p50, p95 = percentiles(latencies[name])
        rows.append({"mode": name, "p50_ms": p50, "p95_ms": p95})
    print_table(rows, ["mode", "p50_ms", "p95_ms"])
    print(
        f"index: {stats.chunks_sqlite} chunks (chroma {stats.chunks_chroma}, bm25 {stats.chunks_bm25}); "
        f"open {open_seconds:.1f}s"
    )
    if args.out:
        save(
            args.out,
            {
                "modes": {r["mode"]: {"p50_ms": r["p50_ms"], "p95_ms": r["p95_ms"]} for r in rows},
                "index": stats.as_dict(),
                "open_seconds": open_seconds,
                "queries": len(queries),
                "search": "k=10, candidates=100 per retriever, redundancy filter 0.9",
                "machine": machine(),
            },
        )


if __name__ == "__main__":
    main()
