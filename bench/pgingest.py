"""Ingest throughput of the shared tier with 1 and with 2 worker processes (issue #28, part 4).

SciFact abstracts (../shared/data/scifact/corpus.jsonl, the first `--documents`), each written as a file of
its own (one BEIR record: a file is the unit of work and of a transaction), go through the queue of a fresh
`citewise.index.shared.pgstore.PgStore` (its own table prefix per run) in a throwaway PostgreSQL 18 with
pgvector on 127.0.0.1 (`citewise.index.shared.pgserver`; parallel query off, shared_buffers 256MB). Each run
starts its workers (`python -m citewise.index.shared.pgworker --threads 1 --poll`: one embedding thread each,
the store's model, int8 MiniLM as new indexes have it) on an empty queue, waits until every one has loaded its
model, then queues all the files at once and times until every file has its outcome. The figures: documents
and chunks a second, the speed-up of 2 workers over 1 (the target is >= 1.6), and how the files fell to the
workers. The worker processes, the server and this process share the machine's cores; the load average
before and after each run is recorded, as other work on the machine moves the figures.

    python bench/pgingest.py --documents 300 --out bench/results/pgingest.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, print_table, save

from citewise.index.embeddings import load_embedder
from citewise.index.shared.pgserver import serve
from citewise.index.shared.pgstore import PgStore

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SETTINGS = {
    "max_parallel_workers_per_gather": "0",
    "max_parallel_maintenance_workers": "0",
    "shared_buffers": "256MB",
}
POLL = 0.05  # seconds a worker waits before looking at an empty queue again


def write_files(corpus: Path, count: int, folder: Path) -> list[Path]:
    """The first `count` records of a BEIR corpus, one jsonl file each."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    with corpus.open(encoding="utf-8") as handle:
        for line in handle:
            if len(files) == count:
                break
            if line.strip():
                record = json.loads(line)
                path = folder / f"{record['_id']}.jsonl"
                path.write_text(line if line.endswith("\n") else line + "\n", encoding="utf-8")
                files.append(path)
    return files


def start_worker(dsn: str, prefix: str, name: str) -> subprocess.Popen[str]:
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "citewise.index.shared.pgworker", "--store", dsn, "--prefix", prefix]
        + ["--threads", "1", "--poll", str(POLL), "--worker", name],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )


def one_run(
    dsn: str, files: list[Path], workers: int, model: str, prefix: str | None = None
) -> dict[str, Any]:
    """Ingest the files with `workers` worker processes into a new store; the timings and counts.

    With `prefix`, into that existing store instead (bench/scale_shared.py: a store of 1M chunks), which must
    hold no outcome yet and none of the files' documents.
    """
    fresh = prefix is None
    prefix = prefix or f"bench{uuid.uuid4().hex[:8]}"
    with PgStore(dsn, prefix=prefix) as store:
        if fresh:
            store.create(model)
        elif store.outcomes():
            raise RuntimeError(f"the store {prefix!r} has outcomes already: remove them first")
        before = store.counts()["documents"]
        processes = [start_worker(dsn, prefix, f"w{n}") for n in range(workers)]
        try:
            for process in processes:
                assert process.stdout is not None
                line = process.stdout.readline()
                if not line.startswith("ready"):
                    process.kill()
                    raise RuntimeError(f"a worker did not start: {line!r} {process.communicate()[1]}")
            load_before = os.getloadavg()
            started = time.perf_counter()
            store.enqueue(files)
            while len(outcomes := store.outcomes()) < len(files):
                time.sleep(0.1)
            seconds = time.perf_counter() - started
            load_after = os.getloadavg()
        finally:
            for process in processes:
                process.send_signal(signal.SIGTERM)
            for process in processes:
                try:
                    process.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.communicate()
        failed = [o for o in outcomes if o.state != "done"]
        if failed:
            raise RuntimeError(f"{len(failed)} files failed, the first: {failed[0].path}: {failed[0].error}")
        counts = store.counts()
        documents, chunks = sum(o.documents for o in outcomes), sum(o.chunks for o in outcomes)
        assert documents == counts["documents"] - before == len(files), (documents, before, counts)
        shares = Counter(o.worker for o in outcomes)
        return {
            "workers": workers,
            "documents": documents,
            "chunks": chunks,
            "seconds": round(seconds, 2),
            "docs_per_s": round(documents / seconds, 2),
            "chunks_per_s": round(chunks / seconds, 1),
            "files_per_worker": dict(sorted(shares.items())),
            "load_average_before": load_before,
            "load_average_after": load_after,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=DATA / "scifact" / "corpus.jsonl")
    parser.add_argument("--documents", type=int, default=300, help="SciFact abstracts a run ingests")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each worker count, alternated")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    model = load_embedder().name  # the model new indexes embed with (int8 by default)
    work = Path(tempfile.mkdtemp(prefix="pgingest-"))
    work.chmod(0o755)  # the server runs as postgres when we are root: it must reach its folder
    files = write_files(args.corpus, args.documents, work / "files")
    report: dict[str, Any] = {"settings": SETTINGS, "model": model, "documents": len(files), "runs": []}
    report["load_average_start"] = os.getloadavg()
    try:
        with serve(work / "pg", settings=SETTINGS) as server:
            for repeat in range(args.repeats):
                for workers in (1, 2):
                    result = one_run(server.dsn, files, workers, model)
                    result["repeat"] = repeat
                    report["runs"].append(result)
                    print(f"{workers} worker(s): {result['docs_per_s']} documents/s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    best = {w: max(r["docs_per_s"] for r in report["runs"] if r["workers"] == w) for w in (1, 2)}
    report["speedup"] = round(best[2] / best[1], 2)
    report["target_speedup"] = 1.6
    print_table(
        report["runs"],
        [
            "workers",
            "repeat",
            "documents",
            "chunks",
            "seconds",
            "docs_per_s",
            "chunks_per_s",
            "files_per_worker",
        ],
    )
    print(f"2 workers / 1 worker: {report['speedup']}x (target >= 1.6)")
    report["machine"] = machine() | {"load_average": os.getloadavg()}
    if args.out:
        save(args.out, report)


if __name__ == "__main__":
    main()
