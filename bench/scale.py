"""The cost curve: ingest time, disk, memory and search latency of an index of 10k, 100k and 1M chunks.

The chunks are synthetic but realistic: each joins two random chunks of an existing index (the SciFact one
built by bench/retrieval.py), and its vector is their pooled, renormalised vectors, exactly as semantic
chunking pools sentence vectors, so no model pass is needed to build it; 20 chunks make a document, each
chunk its own paragraph. Queries are 200 SciFact claims.

Each size is built under --cache (scale-10k/, scale-100k/, scale-1m/) unless a complete build is there (its
build figures are kept in it, in bench-build.json, so a rerun only re-measures), in a process of its own:
the chunks are written to SQLite, then mirrored to Chroma, then both BM25 indexes are built, each part timed
(the steps `Index.sync` takes for a lagging index, one by one). Each size is then measured in a fresh
process, so that nothing of the build stays in its memory: Index.open time; resident memory (VmRSS) after
the imports, after Index.open (which loads both BM25 indexes whole and Chroma's HNSW index), after the first
query embedding (the model), after the paragraph vectors load (at the first search) and after the 200
queries x 3 modes; p50 / p95 of bm25, dense and hybrid search (k=10, query embedding included, modes
interleaved with their order rotating per query). Another fresh process loads the stores one at a time, as
searches load them, to tell what each adds to resident memory (rss_added_mb). Disk is what each store's
files take (du): docs.sqlite3 (with its WAL), the chroma/ folder, the bm25 (chunks) and bm25p (paragraphs)
folders.

    python bench/scale.py --source bench/.cache/scifact --queries ../shared/data/scifact/queries.train.jsonl \
        --out bench/results/scale.json --plot docs/scale.png

`--sizes 100000` measures one size (this replaces the 100k-only form that wrote
bench/results/scale-100k.json). A build stops, and the larger sizes are skipped, when its Chroma insertion
extrapolates to more than --chroma-budget minutes; the JSON records why.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, percentiles, print_table, read_queries, save

from citewise.index import Document, Index, Paragraph
from citewise.index.chunking import Chunk, ChunkedDocument
from citewise.index.embeddings import load_embedder
from citewise.index.local.docstore import DocStore
from citewise.index.local.lexical import LexicalIndex
from citewise.index.local.paragraphs import ParagraphVectors
from citewise.index.local.vectors import VectorIndex, make_client

CACHE = Path(__file__).resolve().parent / ".cache"
BUILD_INFO = "bench-build.json"
PER_DOC = 20
SEED = 7
MODES = ("bm25", "dense", "hybrid")
SEARCH = "k=10, candidates=100 per retriever, redundancy filter 0.9, query embedding included"


def label(chunks: int) -> str:
    """10000 -> 10k, 1000000 -> 1m."""
    if chunks % 1_000_000 == 0:
        return f"{chunks // 1_000_000}m"
    return f"{chunks // 1000}k" if chunks % 1000 == 0 else str(chunks)


def memory_mb(field: str = "VmRSS") -> float:
    """This process's resident memory now (VmRSS) or at its peak (VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def ram_gb() -> float:
    """The machine's memory (MemTotal), in GB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return round(int(line.split()[1]) / 1024**2, 1)
    raise RuntimeError("no MemTotal in /proc/meminfo")


def _du(paths: list[Path]) -> float:
    """What the files at (or under) the given paths take on disk, in MB."""
    total = 0
    for path in paths:
        files = [path] if path.is_file() else [Path(d) / f for d, _, fs in os.walk(path) for f in fs]
        total += sum(f.stat().st_blocks * 512 for f in files if f.exists())
    return total / 1024**2


def disk(root: Path) -> dict[str, float]:
    """Disk per store of the index at `root`, in MB (bm25 holds both BM25 indexes, chunks and paragraphs)."""
    sizes = {
        "sqlite": _du([root / f"docs.sqlite3{suffix}" for suffix in ("", "-wal", "-shm")]),
        "chroma": _du([root / "chroma"]),
        "bm25_chunks": _du([root / "bm25.json", *root.glob("bm25-*")]),
        "bm25_paragraphs": _du([root / "bm25p.json", *root.glob("bm25p-*")]),
    }
    sizes["bm25"] = sizes["bm25_chunks"] + sizes["bm25_paragraphs"]
    sizes["total"] = sizes["sqlite"] + sizes["chroma"] + sizes["bm25"]
    return sizes


class ChromaTooSlow(Exception):
    """The Chroma insertion extrapolates past its budget."""


def build(source: Path, target: Path, chunks: int, chroma_budget_minutes: float) -> dict[str, Any]:
    """Write `chunks` synthetic chunks into a fresh index at `target`; what each part took.

    Raises:
        ChromaTooSlow: the Chroma insertion, extrapolated from its recent rate, would take longer than
            `chroma_budget_minutes`.
    """
    src = DocStore(source / "docs.sqlite3")
    rows = [r for batch in src.iter_chunks() for r in batch]
    src.close()
    texts = [r[4] for r in rows]
    vectors = np.stack([np.frombuffer(r[5], dtype=np.float32) for r in rows])
    rng = np.random.default_rng(SEED)
    index = Index.open(target)
    store = index.docstore
    sqlite_seconds = 0.0
    started = time.perf_counter()
    for d in range(0, chunks, PER_DOC):
        count = min(PER_DOC, chunks - d)
        pairs = rng.integers(0, len(rows), size=(count, 2))
        paragraphs = [
            Paragraph(f"{texts[a]} {texts[b]}", section=f"Part {i}") for i, (a, b) in enumerate(pairs)
        ]
        document = Document(
            title=f"Synthetic document {d // PER_DOC}",
            source="synthetic",
            paragraphs=paragraphs,
            key=str(d // PER_DOC),
        )
        pooled = vectors[pairs[:, 0]] + vectors[pairs[:, 1]]
        pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
        doc_id = document.id
        chunk_list = [
            Chunk(f"{doc_id}-{i}", doc_id, i, i, p.text, 0, len(p.text)) for i, p in enumerate(paragraphs)
        ]
        t = time.perf_counter()
        store.add([ChunkedDocument(document, chunk_list, pooled)], "synthetic")
        sqlite_seconds += time.perf_counter() - t
        if (d + count) % 100_000 == 0:
            print(
                f"  sqlite {d + count:,}/{chunks:,} chunks, {time.perf_counter() - started:.0f}s", flush=True
            )
    making_seconds = time.perf_counter() - started - sqlite_seconds
    print(f"wrote {chunks:,} chunks to SQLite in {sqlite_seconds:.0f}s", flush=True)
    peak = {"sqlite": memory_mb("VmHWM")}
    generation = store.generation
    with index._locked() as held:  # the write lock, as Index.sync takes it to repair lagging stores
        if not held:
            raise RuntimeError(f"{target} is being written by another process")
        started = time.perf_counter()
        done, window, window_start = 0, 0, started
        for batch in store.iter_chunks():  # what Index._reconcile_chroma does for an empty collection
            index._mirror(batch)
            done += len(batch)
            window += len(batch)
            if window >= 50_000 or done == chunks:
                now = time.perf_counter()
                rate = window / (now - window_start)
                expected = (now - started + (chunks - done) / rate) / 60
                print(
                    f"  chroma {done:,}/{chunks:,} chunks, {now - started:.0f}s, {rate:.0f}/s now, "
                    f"about {expected:.0f} min in all",
                    flush=True,
                )
                if done >= chunks / 10 and expected > chroma_budget_minutes:
                    raise ChromaTooSlow(
                        f"Chroma insertion of {chunks:,} chunks extrapolated to {expected:.0f} min, over the "
                        f"{chroma_budget_minutes:.0f} min budget: {done:,} inserted in {now - started:.0f}s, "
                        f"{rate:.0f} chunks/s over the last {window:,}"
                    )
                window, window_start = 0, now
        store.set_meta(index._chroma_key, str(generation))
        chroma_seconds = time.perf_counter() - started
        print(f"mirrored to Chroma in {chroma_seconds:.0f}s", flush=True)
        peak["chroma"] = memory_mb("VmHWM")
        started = time.perf_counter()
        index._rebuild_bm25(generation)
        bm25_seconds = time.perf_counter() - started
        print(f"built both BM25 indexes in {bm25_seconds:.0f}s", flush=True)
        peak["bm25"] = memory_mb("VmHWM")
    stats = index.stats()
    index.close()
    if not stats.consistent or stats.chunks != chunks:
        raise RuntimeError(f"the stores disagree after the build: {stats.as_dict()}")
    total = sqlite_seconds + chroma_seconds + bm25_seconds
    return {
        "chunks": chunks,
        "documents": stats.documents,
        "seconds": {
            "sqlite": sqlite_seconds,
            "chroma": chroma_seconds,
            "bm25": bm25_seconds,
            "total": total,
            "making_synthetic_chunks": making_seconds,
        },
        "chunks_per_second": chunks / total,
        "peak_rss_mb_after": peak,
        "when": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def measure(path: Path, queries: list[str]) -> dict[str, Any]:
    """Open time, resident memory at each step and search latency per mode, in this (fresh) process."""
    load = [os.getloadavg()[0]]
    rss = {"imports": memory_mb()}
    started = time.perf_counter()
    index = Index.open(path, create=False)
    open_seconds = time.perf_counter() - started
    rss["open"] = memory_mb()
    vector = index.embedder.embed([queries[0]])[0]
    rss["model"] = memory_mb()
    index.paragraph_vectors.current()
    rss["paragraph_vectors"] = memory_mb()
    index.vectors.search(vector, 100)
    index.search(queries[0], k=10)  # warm up the rest
    latencies: dict[str, list[float]] = {mode: [] for mode in MODES}
    for n, query in enumerate(queries):  # modes interleaved, their order rotating (see bench/retrieval.py)
        for mode in MODES[n % len(MODES) :] + MODES[: n % len(MODES)]:
            index.forget_queries()
            t = time.perf_counter()
            index.search(query, k=10, mode=mode)
            latencies[mode].append((time.perf_counter() - t) * 1000)
    rss["searches"] = memory_mb()
    rss["peak"] = memory_mb("VmHWM")
    load.append(os.getloadavg()[0])
    stats = index.stats()
    index.close()
    timings = {}
    for mode in MODES:
        p50, p95 = percentiles(latencies[mode])
        timings[mode] = {"p50_ms": p50, "p95_ms": p95}
    return {
        "open_seconds": open_seconds,
        "rss_mb": rss,
        "latency_ms": timings,
        "queries": len(queries),
        "index": stats.as_dict(),
        "load_average_1min": load,
        "embedding_model": index.embedder.name,
    }


def store_memory(path: Path, query: str) -> dict[str, float]:
    """What each store adds to a fresh process's resident memory once loaded as searches load it, in MB.

    In this order: the query model (embedding one query), both BM25 indexes, Chroma (its client, collection,
    count and one query: its HNSW index loads), the paragraph vectors; the document store stays on disk.
    """
    added = {}
    before = memory_mb()
    docstore = DocStore(path / "docs.sqlite3")
    embedder = load_embedder(docstore.get_meta("embedding_model"))
    vector = embedder.embed([query])[0]
    added["model"], before = memory_mb() - before, memory_mb()
    lexical = [LexicalIndex(path), LexicalIndex(path, "bm25p")]
    added["bm25"], before = memory_mb() - before, memory_mb()
    vectors = VectorIndex(make_client(path, None), embedder, docstore.get_meta("collection") or "")
    vectors.count()
    vectors.search(vector, 100)
    added["chroma"], before = memory_mb() - before, memory_mb()
    paragraphs = ParagraphVectors(docstore, embedder.dim).current()
    added["paragraph_vectors"] = memory_mb() - before
    if sum(len(index) for index in lexical) == 0 or not len(paragraphs.ids):
        raise RuntimeError(f"{path}: no BM25 index or no paragraph vectors loaded")
    docstore.close()
    return added


def _child(args: list[str], script: str = __file__) -> tuple[int, dict[str, Any]]:
    """Run this script (or `script`) with `args` in a new process; its exit code and the JSON it left."""
    with tempfile.TemporaryDirectory() as folder:
        result = Path(folder) / "result.json"
        code = subprocess.run([sys.executable, script, *args, "--result", str(result)]).returncode
        return code, json.loads(result.read_text()) if result.exists() else {}


def flatten(row: dict[str, Any]) -> dict[str, Any]:
    """One size's figures as one table row."""
    seconds, size, rss, ms = row["ingest_seconds"], row["disk_mb"], row["rss_mb"], row["latency_ms"]
    return {
        "chunks": f"{row['chunks']:,}",
        "sqlite_s": seconds["sqlite"],
        "chroma_s": seconds["chroma"],
        "bm25_s": seconds["bm25"],
        "ingest_s": seconds["total"],
        "chunks/s": row["chunks_per_second"],
        "build_peak_mb": max(row["build_peak_rss_mb_after"].values()),
        "sqlite_mb": size["sqlite"],
        "chroma_mb": size["chroma"],
        "bm25_mb": size["bm25"],
        "open_s": row["open_seconds"],
        "rss_open_mb": rss["open"],
        "rss_search_mb": rss["searches"],
        "rss_peak_mb": rss["peak"],
        **{f"{mode}_{p}": ms[mode][f"{p}_ms"] for mode in MODES for p in ("p50", "p95")},
    }


def print_tables(rows: list[dict[str, Any]]) -> None:
    """Ingest, disk and memory, and latency, one table each."""
    flat = [flatten(row) for row in rows]
    for columns in (
        ["chunks", "sqlite_s", "chroma_s", "bm25_s", "ingest_s", "chunks/s", "build_peak_mb"],
        [
            "chunks",
            "sqlite_mb",
            "chroma_mb",
            "bm25_mb",
            "open_s",
            "rss_open_mb",
            "rss_search_mb",
            "rss_peak_mb",
        ],
        ["chunks", *(f"{mode}_{p}" for mode in MODES for p in ("p50", "p95"))],
    ):
        print()
        print_table(flat, columns)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """The cost curve, log-x chunks: hybrid latency, memory after searches, disk per store, ingest time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter, NullLocator

    x = [row["chunks"] for row in rows]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), layout="constrained")
    (latency, memory), (size, ingest) = axes
    for mode, style in (("hybrid", "-o"), ("bm25", ":."), ("dense", ":.")):
        for p, alpha in (("p50", 1.0), ("p95", 0.5)):
            if mode == "hybrid" or p == "p50":
                values = [row["latency_ms"][mode][f"{p}_ms"] for row in rows]
                latency.plot(x, values, style, alpha=alpha, label=f"{mode} {p}")
    latency.set(title="(a) search latency (k=10)", ylabel="ms", yscale="log")
    for key, name in (("searches", "after 200 x 3 searches"), ("open", "after Index.open")):
        memory.plot(x, [row["rss_mb"][key] for row in rows], "-o", label=name)
    for key in ("paragraph_vectors", "chroma", "bm25", "model"):
        if all("rss_added_mb" in row for row in rows):
            values = [row["rss_added_mb"][key] for row in rows]
            memory.plot(x, values, ":.", label=f"{key.replace('_', ' ')} (added)")
    memory.set(title="(b) resident memory of a search process", ylabel="MB", yscale="log")
    for key, style in (("sqlite", "-o"), ("chroma", "-o"), ("bm25", "-o"), ("total", "--")):
        size.plot(x, [row["disk_mb"][key] for row in rows], style, label=key)
    size.set(title="(c) disk per store", ylabel="MB", yscale="log")
    for key, style in (("sqlite", "-o"), ("chroma", "-o"), ("bm25", "-o"), ("total", "--")):
        ingest.plot(x, [row["ingest_seconds"][key] for row in rows], style, label=key)
    ingest.set(title="(d) ingest time (vectors given)", ylabel="s", yscale="log")
    for ax in axes.flat:
        ax.set_xscale("log")
        ax.set_xticks(x, [label(n) for n in x])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("chunks")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    about = machine()
    fig.suptitle(f"citewise index cost curve ({about['cpus']} CPUs, {ram_gb():.0f} GB RAM)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"saved {path}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", type=Path, help="an index to draw chunks from")
    parser.add_argument("--queries", type=Path, help="BEIR queries.jsonl")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--cache", type=Path, default=CACHE, help="where the indexes are built and kept")
    parser.add_argument("--n", type=int, default=200, help="queries timed per mode")
    parser.add_argument("--chroma-budget", type=float, default=100, help="minutes; see above")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--plot", type=Path)
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)  # child: build this index
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # child: measure this index
    parser.add_argument("--stores", type=Path, help=argparse.SUPPRESS)  # child: memory per store
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)  # child: where its JSON goes
    args = parser.parse_args()

    if args.build:
        try:
            info = build(args.source, args.build, args.sizes[0], args.chroma_budget)
        except ChromaTooSlow as error:
            print(error, flush=True)
            args.result.write_text(json.dumps({"stopped": str(error)}))
            sys.exit(3)
        (args.build / BUILD_INFO).write_text(json.dumps(info, indent=2) + "\n")
        args.result.write_text(json.dumps(info))
        return
    if args.measure:
        queries = list(read_queries(args.queries).values())[: args.n]
        args.result.write_text(json.dumps(measure(args.measure, queries)))
        return
    if args.stores:
        query = next(iter(read_queries(args.queries).values()))
        args.result.write_text(json.dumps(store_memory(args.stores, query)))
        return
    if not (args.source and args.queries):
        parser.error("give --source and --queries")

    rows: list[dict[str, Any]] = []
    stopped = None
    for chunks in sorted(args.sizes):
        target = args.cache / f"scale-{label(chunks)}"
        info_file = target / BUILD_INFO
        if not info_file.exists():
            if target.exists():
                print(f"{target}: an unfinished build, deleted", flush=True)
                shutil.rmtree(target)
            print(f"building {target} ({chunks:,} chunks)", flush=True)
            code, result = _child(
                ["--source", str(args.source), "--sizes", str(chunks), "--build", str(target)]
                + ["--chroma-budget", str(args.chroma_budget)]
            )
            if code != 0:
                stopped = {"chunks": chunks, "reason": result.get("stopped", f"the build exited with {code}")}
        else:
            print(f"reusing {target} (built {json.loads(info_file.read_text())['when']})", flush=True)
        if stopped is None:
            print(f"measuring {target} in a fresh process", flush=True)
            code, measured = _child(
                ["--measure", str(target), "--queries", str(args.queries), "--n", str(args.n)]
            )
            if code == 0:
                print("measuring the memory each store adds, in another fresh process", flush=True)
                code, measured["rss_added_mb"] = _child(
                    ["--stores", str(target), "--queries", str(args.queries)]
                )
            if code != 0:
                stopped = {"chunks": chunks, "reason": f"the measuring process exited with {code}"}
        if stopped is not None:
            print(f"stopped at {chunks:,} chunks: {stopped['reason']}", flush=True)
        else:
            info = json.loads(info_file.read_text())
            rows.append(
                {
                    "chunks": chunks,
                    "documents": info["documents"],
                    "ingest_seconds": info["seconds"],
                    "chunks_per_second": info["chunks_per_second"],
                    "build_peak_rss_mb_after": info["peak_rss_mb_after"],
                    "built": info["when"],
                    "disk_mb": disk(target),
                    **measured,
                }
            )
            print_tables(rows[-1:])
        if args.out:  # after each size, so that a later one failing keeps the earlier figures
            save(
                args.out,
                {
                    "sizes": rows,
                    "stopped": stopped,
                    "search": SEARCH,
                    "synthetic": f"each chunk joins two random source chunks, vectors pooled; {PER_DOC} a "
                    "document, each its own paragraph",
                    "machine": machine() | {"ram_gb": ram_gb()},
                },
            )
        if stopped is not None:
            break
    if len(rows) > 1:
        print_tables(rows)
    if rows and args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    main()
