"""An ingest worker of the shared tier: claims queued files and ingests them until the queue is empty.

Several run at once, on one machine or several, against one store (`citewise.index.shared.pgstore`): each step
claims a file no other worker holds, embeds it with this worker's own model, and writes it in one
transaction. A worker killed at any moment loses nothing committed and leaves nothing half-written (the
file it held goes back to the queue). A file that fails in any way fails alone: its error is recorded and
the worker goes on; a file whose claims ended without an outcome `MAX_ATTEMPTS` times (it killed a worker,
or raised each time) is recorded failed instead of tried again. SIGTERM and SIGINT stop it between two
files::

    python -m citewise.index.shared.pgworker --store postgresql://postgres@127.0.0.1:5432/postgres
    python -m citewise.index.shared.pgworker --store ... --once      # one file, then exit
    python -m citewise.index.shared.pgworker --store ... --poll 5    # keep looking for work every 5 s
    python -m citewise.index.shared.pgworker --store ... --requeue   # failed files back in the queue first
    python -m citewise.index.shared.pgworker --store ... --sweep     # delete killed workers' Chroma vectors

The embedding model is the store's (recorded when it was created), computing on `--threads` threads
(1 by default: N workers on N cores). Files are queued with `PgStore.enqueue`. A store whose vectors are in
a Chroma server (`citewise.index.shared.chromavectors`) is reached there before the model loads; `--sweep`
deletes the vectors a killed worker left there (`PgStore.sweep`; harmless meanwhile, searches never return
them).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

import psycopg

from citewise.index.chunking import ChunkingConfig
from citewise.index.embeddings import MODEL_NAMES, Embedder, MiniLMEmbedder, load_embedder
from citewise.index.policy import UNCHANGED
from citewise.index.records import IndexOpenError, IngestReport
from citewise.index.shared.pgstore import PgStore
from citewise.index.shared.queue import MAX_ATTEMPTS, Outcome, default_worker_name
from citewise.index.shared.schema import DEFAULT_PREFIX, Settings

logger = logging.getLogger(__name__)


def store_embedder(store: PgStore, threads: int | None = 1) -> Embedder:
    """The store's embedding model, computing on `threads` threads (None: every core).

    Raises:
        IndexOpenError: the store records a model citewise does not have.
    """
    model = store.settings().model
    precisions = {name: precision for precision, name in MODEL_NAMES.items()}
    if model not in precisions:
        raise IndexOpenError(
            f"the shared store {store.prefix!r} embeds with {model!r}, a model citewise lacks"
        )
    return MiniLMEmbedder(precision=precisions[model], threads=threads)


def run(
    store: PgStore,
    embedder: Embedder,
    *,
    once: bool = False,
    poll: float = 0.0,
    stop: Callable[[], bool] | None = None,
    worker: str | None = None,
    report: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Claim and ingest queued files until the queue is empty (or one file, or until told to stop).

    Whenever it finds the queue empty after ingesting, it folds the pending BM25 changes and brings the BM25
    weights in step with the average chunk length (`PgStore.fold`, `PgStore.reweight`).

    Args:
        store: The shared store.
        embedder: Its embedding model (`store_embedder`).
        once: Ingest one file at most.
        poll: When the queue is empty, look again after this many seconds (0: return).
        stop: Asked before each claim: True ends the loop (the file in hand is finished first).
        worker: The name recorded with each outcome (`default_worker_name` when None).
        report: Told each outcome as it is committed.

    Returns:
        The outcomes of the files this worker took, in order (a claim that raised and left its file queued
        is one with state "retry").
    """
    worker = worker or default_worker_name()
    outcomes: list[Outcome] = []
    ingested = False
    while stop is None or not stop():
        outcome = store.work(embedder, worker=worker)
        if outcome is None:
            if ingested:
                store.fold()
                store.reweight()
                ingested = False
            if poll <= 0:
                break
            time.sleep(poll)
            continue
        outcomes.append(outcome)
        ingested = ingested or outcome.documents > 0 or outcome.removed > 0
        if report is not None:
            report(outcome)
        if once:
            break
    return outcomes


def ingest(
    dsn: str,
    paths: Sequence[str | Path] = (),
    *,
    requeue: bool = False,
    chunking: ChunkingConfig | None = None,
    vectors: str | None = None,
    threads: int | None = None,
    report: Callable[[Outcome], None] | None = None,
    work: bool = True,
    stop: Callable[[], bool] | None = None,
    collection: str | None = None,
) -> tuple[int, list[Outcome]]:
    """Queue files in the shared store at `dsn` and work the queue here, as one worker of any (until empty).

    `stop` is asked before each claim (True: stop, the file in hand finished). `work=False` only queues
    them, for the store's workers (`python -m citewise.index.shared.pgworker`).

    What `citewise ingest --store`, `citewise requeue` and the chat page's uploads with a store do. To queue,
    the store is made if it is not there (the ``vector`` extension, then `PgStore.create` with the default
    embedding model, `chunking` and `vectors`, `chromavectors.vector_choice`'s form; a store there keeps its
    own, and another vector store named is refused); to requeue (`PgStore.requeue`, of `paths`
    or of every file), it must be there.

    Returns:
        How many files were queued (or queued again), and the outcomes of the claims this worker made.

    Raises:
        IndexOpenError: no store to requeue in, or one made with another model or chunking.
        psycopg.Error: the database cannot be reached, or refuses (a hot standby refuses every write).
    """
    if not requeue:
        ensure_store(dsn, chunking=chunking, vectors=vectors)
    with PgStore(dsn) as store:
        if requeue:
            store.settings()
            queued = len(store.requeue(paths))
        else:
            queued = store.enqueue(paths, collection)
        if not work:
            return queued, []
        return queued, run(store, store_embedder(store, threads=threads), report=report, stop=stop)


EXTENSION_LOCK = "citewise.pgworker.vector-extension"
"""The advisory lock `CREATE EXTENSION vector` is run under: two at once collide on the catalogue's keys."""


def ensure_store(dsn: str, *, chunking: ChunkingConfig | None = None, vectors: str | None = None) -> Settings:
    """Make the shared store at `dsn` if it is not there; its settings.

    The ``vector`` extension, then `PgStore.create` with the default embedding model, `chunking` and
    `vectors` (a store there keeps its own model and chunking; other chunking or another vector store asked
    is refused). Many processes may run it at once on a fresh database (replicas and ingests started
    together): the extension is made under an advisory lock, the tables under `PgStore.create`'s.

    Raises:
        IndexOpenError: a store there made with another model, chunking or vector store.
        psycopg.Error: the database cannot be reached, or refuses (a hot standby refuses every write).
    """
    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [EXTENSION_LOCK])
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")  # once per database
    with PgStore(dsn) as store:
        try:
            made: Settings | None = store.settings()
        except IndexOpenError:
            made = None
        model = made.model if made is not None else load_embedder().name
        return store.create(model, chunking or (made.chunking if made is not None else None), vectors)


def summary(outcomes: Sequence[Outcome]) -> IngestReport:
    """One worker's outcomes as the local tier's `IngestReport` (the chunks removed are not counted).

    A failed file is skipped with its error; a claim that left its file queued ("retry") is left out.
    """
    report = IngestReport()
    for outcome in outcomes:
        if outcome.state == "retry":
            continue
        report.files += 1
        if outcome.state == "failed":
            report.skipped.append((outcome.path, outcome.error))
            continue
        unchanged = any(why == UNCHANGED for _, why in outcome.skipped)
        report.unchanged_files += unchanged
        report.ingested_files += not unchanged
        report.documents_added += outcome.documents
        report.documents_removed += outcome.removed
        report.chunks_added += outcome.chunks
        report.skipped.extend((where, why) for where, why in outcome.skipped if why != UNCHANGED)
    return report


def _print(outcome: Outcome) -> None:
    if outcome.state in ("failed", "retry"):
        print(f"{outcome.state:<7} {outcome.path}: {outcome.error}", flush=True)
        return
    removed = f", {outcome.removed} removed" if outcome.removed else ""
    print(
        f"done    {outcome.path}: {outcome.documents} documents, {outcome.chunks} chunks{removed}", flush=True
    )
    for where, why in outcome.skipped:
        print(f"  skipped {where}: {why}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """The command: ingest queued files into a shared store; 0 when the queue was worked through."""
    parser = argparse.ArgumentParser(
        prog="python -m citewise.index.shared.pgworker", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--store", required=True, help="the store's database: postgresql://user@host:port/db")
    parser.add_argument(
        "--prefix", default=DEFAULT_PREFIX, help="the store's table prefix (default %(default)s)"
    )
    parser.add_argument("--once", action="store_true", help="ingest one queued file, then exit")
    parser.add_argument(
        "--poll", type=float, default=0.0, help="when the queue is empty, look again every N s"
    )
    parser.add_argument("--threads", type=int, default=1, help="embedding threads (default %(default)s)")
    parser.add_argument("--worker", default=None, help="the name recorded with outcomes (default host:pid)")
    parser.add_argument(
        "--requeue",
        action="store_true",
        help=f"first put failed files back in the queue (and reset the claims of queued ones; a file is "
        f"recorded failed after {MAX_ATTEMPTS} claims without an outcome)",
    )
    parser.add_argument(
        "--sweep", action="store_true", help="delete the vectors killed workers left in Chroma, then exit"
    )
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error("--threads must be at least 1")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        with PgStore(args.store, prefix=args.prefix) as store:
            store.open_vectors()
            if args.sweep:
                print(f"swept   {store.sweep()} vectors of no stored chunk or paragraph", flush=True)
                return 0
            embedder = store_embedder(store, args.threads)
            embedder.embed(["ready"])  # the model loads now, not inside the first claim
            if args.requeue:
                for path in store.requeue():
                    print(f"requeue {path}", flush=True)
            print(f"ready   {args.worker or default_worker_name()}", flush=True)
            run(
                store,
                embedder,
                once=args.once,
                poll=args.poll,
                stop=stopping.is_set,
                worker=args.worker,
                report=_print,
            )
    except IndexOpenError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except psycopg.OperationalError as error:
        print(f"error: cannot reach the store's database: {error}", file=sys.stderr)
        return 2
    except psycopg.errors.ReadOnlySqlTransaction:
        print("error: the store's database is read-only (a hot standby?): workers write, so give the "
              "primary's URL", file=sys.stderr)  # fmt: skip
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
