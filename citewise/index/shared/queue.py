"""The shared store's work queue: files queued, claimed by one worker at a time, ingested, their outcome kept.

`Queue` is the half of `PgStore` that ingest workers (`citewise.index.shared.pgworker`) drive: `enqueue`,
then `work` until the queue is empty; `requeue` puts failed files back (`citewise.index.shared.pgstore`
says how a claim, a write and a release make one step, and what a killed worker leaves).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from citewise.index.chunking import ChunkingConfig, chunk_documents
from citewise.index.embeddings import Embedder
from citewise.index.loaders import iter_files
from citewise.index.policy import UNCHANGED, decide, where
from citewise.index.records import IndexOpenError
from citewise.index.shared.schema import ATTEMPTS
from citewise.index.shared.writes import Forgotten, Writes, document_rows

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3
"""Claims of one queued file that may end without an outcome (a worker killed, or an exception) before it is
recorded failed instead of tried again."""

FOLD_EVERY = 16
"""A worker folds the pending BM25 df changes after this many of its commits (and when the queue empties),
not after each: a fold is two short transactions, and until it runs a search only reads a few more rows (the
pending changes of its own terms, through an index on the term)."""


CLAIM = """SELECT q.id, q.path, q.collection FROM {queue} AS q
    WHERE NOT EXISTS (SELECT 1 FROM {outcomes} AS o WHERE o.item = q.id)
    ORDER BY q.id LIMIT 1 FOR UPDATE OF q SKIP LOCKED"""
"""The oldest queued file no other worker holds and no worker finished (one killed before the release)."""


LAST_OUTCOMES = """SELECT DISTINCT ON (path) path, state, coalesce(error, '') FROM {outcomes}
    ORDER BY path, item DESC"""
"""Each file's latest outcome."""


ENQUEUE = (
    # rows a killed worker finished but could not release: their path may be queued again
    "DELETE FROM {queue} AS q USING {outcomes} AS o WHERE o.item = q.id",
    "INSERT INTO {queue} (path) SELECT unnest(%s::text[]) ORDER BY 1 ON CONFLICT (path) DO NOTHING",
)
ENQUEUE_INTO = """INSERT INTO {queue} (path, collection) SELECT unnest(%s::text[]), %s ORDER BY 1
    ON CONFLICT (path) DO NOTHING"""
"""Files queued with the collection their documents go to (NULL: new ones to the default)."""


@dataclass(frozen=True)
class WorkItem:
    """A claimed queue row: its id, the file's path and the collection named for it (None: none named)."""

    id: int
    path: str
    collection: str | None = None


class _Retry(Exception):
    """A claim that ended in an exception, the file left queued for another claim (see `PgStore.work`)."""


@dataclass
class Outcome:
    """What one work step did with one file.

    Attributes:
        item: the queue row's id.
        path: the file.
        state: "done" (ingested, or unchanged since it was), "failed" (nothing of it stored) or "retry" (this
            claim raised `error`, nothing was recorded: the file stays queued; not stored as an outcome).
        error: why it failed ("" when done).
        documents: documents added.
        chunks: chunks added.
        removed: documents of an earlier version of the file removed.
        skipped: (where, why) of documents left out: too long, no text, a duplicate of another file's.
        worker: who did it.
    """

    item: int
    path: str
    state: str
    error: str = ""
    documents: int = 0
    chunks: int = 0
    removed: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    worker: str = ""


def default_worker_name() -> str:
    """``host:pid``: which worker did an item."""
    return f"{socket.gethostname()}:{os.getpid()}"


class Queue(Writes):
    """The store's work queue (on a second connection of its own for claims)."""

    def enqueue(self, paths: Iterable[str | Path], collection: str | None = None) -> int:
        """Queue files (folders: the supported files under them) for the workers; returns how many were new.

        A file queued already (waiting, or being ingested) is not queued twice; a file ingested before is
        queued again (a worker finds it unchanged, or replaces its documents). `collection` goes with each
        file: its documents are stored in it, and those stored before move to it (None: new documents go to
        the default collection, stored ones stay where they are).
        """
        files = sorted({str(path.resolve()) for path in iter_files(paths)})
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(self._sql(ENQUEUE[0]))
            cur.execute(self._sql(ENQUEUE_INTO), [files, collection])
            return cur.rowcount

    def queued(self) -> int:
        """How many files wait for a worker (claimed ones included)."""
        statement = """SELECT count(*) FROM {queue} AS q
            WHERE NOT EXISTS (SELECT 1 FROM {outcomes} AS o WHERE o.item = q.id)"""
        row = self.conn.execute(self._sql(statement)).fetchone()
        return int(row[0]) if row else 0

    def outcomes(self) -> list[Outcome]:
        """Every finished item's outcome, in queue order."""
        rows = self.conn.execute(
            self._sql(
                """SELECT item, path, state, coalesce(error, ''), documents, chunks, skipped, worker
                FROM {outcomes} ORDER BY item"""
            )
        )
        return [
            Outcome(i, p, s, e, d, c, skipped=[(where, why) for where, why in k], worker=w)
            for i, p, s, e, d, c, k, w in rows
        ]

    def work(
        self,
        embedder: Embedder,
        *,
        worker: str | None = None,
        before_commit: Callable[[WorkItem], None] | None = None,
    ) -> Outcome | None:
        """One worker step: claim the oldest queued file, ingest it in one transaction, release it.

        The claim is counted first (see the module): a file whose earlier `MAX_ATTEMPTS` claims all ended
        without an outcome is recorded failed, not tried; an exception while it is ingested (other than a
        lost connection, which is raised) is recorded with the claim, and the file is left queued (an
        outcome "retry") or, on its last claim, recorded failed with that error.

        Args:
            embedder: The store's embedding model (`settings().model`).
            worker: Recorded with the outcome (`default_worker_name` when None).
            before_commit: Called inside the write transaction once everything is written, before it
                commits (a caller's last check; tests stop a worker there).

        Returns:
            What was done, or None when no file is queued (or every queued one is held by another worker).

        Raises:
            IndexOpenError: the embedder is not the store's model.
            psycopg.OperationalError: the connection to the database was lost.
        """
        settings = self.settings()
        if embedder.name != settings.model or embedder.dim != settings.dim:
            raise IndexOpenError(
                f"the shared store {self.prefix!r} embeds with {settings.model!r}, not {embedder.name!r}"
            )
        if self._claims is None:
            self._claims = psycopg.connect(self.dsn, autocommit=True)
        claims = self._claims
        worker = worker or default_worker_name()
        self._count_claims()
        try:
            with claims.transaction():
                row = claims.execute(self._sql(CLAIM)).fetchone()
                if row is None:
                    return None
                item = WorkItem(int(row[0]), str(row[1]), row[2])
                outcome = self._attempt(item, embedder, settings.chunking, worker, before_commit)
                claims.execute(self._sql("DELETE FROM {queue} WHERE id = %s"), [item.id])
        except _Retry as retry:  # the claim ends, the file stays queued: its next claim tries it again
            return retry.args[0]
        self._unfolded += 1
        if self._unfolded >= FOLD_EVERY:
            self.fold()
        return outcome

    def _count_claims(self) -> None:
        """Make the attempts table if this store predates it (once a PgStore)."""
        if not self._counting:
            with self.conn.transaction():
                self.conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtext(%s))", [f"citewise.pgstore.create:{self.prefix}"]
                )
                for statement in ATTEMPTS:
                    self.conn.execute(self._sql(statement))
            self._counting = True

    def _attempt(
        self,
        item: WorkItem,
        embedder: Embedder,
        chunking: ChunkingConfig,
        worker: str,
        before_commit: Callable[[WorkItem], None] | None,
    ) -> Outcome:
        """Count a claim (committed at once), then ingest its file unless earlier claims used up the limit."""
        row = self.conn.execute(
            self._sql("INSERT INTO {attempts} (item, worker) VALUES (%s, %s) RETURNING id"), [item.id, worker]
        ).fetchone()
        assert row is not None
        attempt = int(row[0])
        earlier = self.conn.execute(
            self._sql(
                """SELECT count(*), (SELECT error FROM {attempts} WHERE item = %s AND id < %s
                    AND error IS NOT NULL ORDER BY id DESC LIMIT 1)
                FROM {attempts} WHERE item = %s AND id < %s"""
            ),
            [item.id, attempt, item.id, attempt],
        ).fetchone()
        assert earlier is not None
        tried, last_error = int(earlier[0]), earlier[1]
        if tried >= MAX_ATTEMPTS:
            why = (
                f"last error: {last_error}"
                if last_error
                else "a worker stopped while ingesting it (killed or crashed)"
            )
            error = f"{tried} claims ended without an outcome, not tried again ({why})"
            return self._failed(Outcome(item.id, item.path, "done", worker=worker), error, before_commit)
        try:
            return self._ingest(item, embedder, chunking, worker, before_commit)
        except psycopg.OperationalError:
            raise  # the database, not the file: the worker stops, the claim is left for another
        except Exception as error:  # noqa: BLE001 - any failure of one file is recorded with it (see the module)
            message = f"{type(error).__name__}: {error}".strip()
            self.conn.execute(self._sql("UPDATE {attempts} SET error = %s WHERE id = %s"), [message, attempt])
            if tried + 1 >= MAX_ATTEMPTS:
                error_text = f"failed on {tried + 1} claims, not tried again (last error: {message})"
                return self._failed(
                    Outcome(item.id, item.path, "done", worker=worker), error_text, before_commit
                )
            logger.warning(
                "%s: claim %d of %d failed, left queued: %s", item.path, tried + 1, MAX_ATTEMPTS, message
            )
            raise _Retry(Outcome(item.id, item.path, "retry", message, worker=worker)) from error

    def requeue(self, paths: Iterable[str | Path] = ()) -> list[str]:
        """Put failed files back in the queue, and give queued files that used up claims their count afresh.

        A failed file is one whose latest outcome is "failed"; a queued file's count is reset when no worker
        holds it now (a claim in hand keeps its count).

        Args:
            paths: Only files at or under these paths (all when empty).

        Returns:
            The files queued again or reset, sorted.
        """
        self._count_claims()
        targets = [str(Path(path).expanduser().resolve()) for path in paths]

        def wanted(file: str) -> bool:
            return not targets or any(file == t or file.startswith(t.rstrip("/") + "/") for t in targets)

        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(self._sql(ENQUEUE[0]))
            latest = cur.execute(self._sql(LAST_OUTCOMES)).fetchall()
            failed = sorted(path for path, state, _ in latest if state == "failed" and wanted(path))
            queued = cur.execute(
                self._sql(
                    """SELECT q.id, q.path FROM {queue} AS q
                    WHERE NOT EXISTS (SELECT 1 FROM {outcomes} AS o WHERE o.item = q.id)
                    AND EXISTS (SELECT 1 FROM {attempts} AS a WHERE a.item = q.id)
                    ORDER BY q.id FOR UPDATE OF q SKIP LOCKED"""
                )
            ).fetchall()
            stuck = [(item, path) for item, path in queued if wanted(path)]
            cur.execute(
                self._sql("DELETE FROM {attempts} WHERE item = ANY(%s)"), [[item for item, _ in stuck]]
            )
            cur.execute(self._sql(ENQUEUE[1]), [failed])
        return sorted({*failed, *(path for _, path in stuck)})

    def _ingest(
        self,
        item: WorkItem,
        embedder: Embedder,
        chunking: ChunkingConfig,
        worker: str,
        before_commit: Callable[[WorkItem], None] | None,
    ) -> Outcome:
        """Read, chunk and embed a claimed file, then write it all, with its outcome, in one transaction."""
        outcome = Outcome(item.id, item.path, "done", worker=worker)
        decision = decide(Path(item.path), self)
        outcome.skipped.extend(decision.skipped)
        if decision.action == "unchanged":
            outcome.skipped.append((item.path, UNCHANGED))
            if item.collection is not None:
                return self._finish(outcome, before_commit, move=item.collection)
            return self._finish(outcome, before_commit)
        if decision.action == "skip":
            return self._failed(outcome, decision.reason, before_commit)
        unique, fresh = decision.documents, decision.fresh
        chunked = []
        for one in chunk_documents(fresh, embedder, chunking) if fresh else []:
            if one.chunks:
                chunked.append(one)
            else:
                outcome.skipped.append((where(item.path, one.document), "no text"))
        # in id order: two files holding the same documents, ingested at once, wait for each other (the
        # second skips them) but never deadlock
        ordered = sorted(chunked, key=lambda one: one.document.id)
        prepared = [(one.document, document_rows(one, chunking, self.lexical)) for one in ordered]
        # new terms enter the vocabulary before the transaction opens: see the module
        self.lexical.register([words for _, rows in prepared for words in rows.chunk_tokens])
        self.paragraph_lexical.register([words for _, rows in prepared for words in rows.paragraph_tokens])
        forgotten = Forgotten()
        with self.conn.transaction(), self.conn.cursor() as cur:
            stale = set(self.document_ids(item.path)) - set(unique)
            outcome.removed = self._delete(cur, sorted(stale), forgotten)
            inserted = self._insert(cur, prepared, item.path, outcome.skipped, item.collection)
            if item.collection is not None:
                self._move(cur, item.path, item.collection)
            outcome.documents = len(inserted)
            outcome.chunks = sum(len(rows.chunk_ids) for doc, rows in prepared if doc.id in inserted)
            count = self.conn.execute(
                self._sql("SELECT count(*) FROM {documents} WHERE file = %s"), [item.path]
            ).fetchone()
            cur.execute(
                self._sql(
                    """INSERT INTO {files} VALUES (%s, %s, %s, %s) ON CONFLICT (path) DO UPDATE
                    SET sha256 = excluded.sha256, size = excluded.size, documents = excluded.documents"""
                ),
                [item.path, decision.sha, decision.size, int(count[0]) if count else 0],
            )
            self._record(cur, outcome)
            if before_commit is not None:
                before_commit(item)
        self._forget(forgotten)  # Chroma's copies of what the commit removed
        logger.info("%s: %d documents, %d chunks (%s)", item.path, outcome.documents, outcome.chunks, worker)
        return outcome

    def _record(self, cur: psycopg.Cursor[Any], outcome: Outcome) -> None:
        cur.execute(
            self._sql(
                "INSERT INTO {outcomes} (item, path, state, error, documents, chunks, skipped, worker)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
            ),
            [
                outcome.item,
                outcome.path,
                outcome.state,
                outcome.error or None,
                outcome.documents,
                outcome.chunks,
                Jsonb([list(pair) for pair in outcome.skipped]),
                outcome.worker,
            ],
        )

    def _finish(
        self, outcome: Outcome, before_commit: Callable[[WorkItem], None] | None, move: str | None = None
    ) -> Outcome:
        """Record an outcome that writes nothing else (an unchanged or a failed file; `move`: to there)."""
        with self.conn.transaction(), self.conn.cursor() as cur:
            if move is not None:
                self._move(cur, outcome.path, move)
            self._record(cur, outcome)
            if before_commit is not None:
                before_commit(WorkItem(outcome.item, outcome.path))
        return outcome

    def _failed(
        self, outcome: Outcome, error: str, before_commit: Callable[[WorkItem], None] | None
    ) -> Outcome:
        outcome.state, outcome.error = "failed", error
        logger.warning("%s: not ingested: %s", outcome.path, error)
        return self._finish(outcome, before_commit)
