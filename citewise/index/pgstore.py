"""The shared tier's document store on one PostgreSQL database, with the work queue its ingest workers share.

What the local tier keeps in SQLite (its `docstore`) lives here in tables named after a prefix
(``citewise`` by default): ``<p>_files``, ``<p>_documents``, ``<p>_paragraphs``, ``<p>_bibliography`` and
``<p>_chunks``, with the same columns. Vectors are in pgvector through `PgVectors` (halfvec, HNSW cosine):
the chunks' in ``<p>_vectors_chunks``, the paragraphs' (embedded whole, or their chunks' normalised sum with
``paragraph_vectors="pooled"``) in ``<p>_pvectors_chunks``. BM25 is `PgLexical`'s, of chunks
(``<p>_lexical_*``) and of paragraphs (``<p>_plexical_*``), over the texts the local tier ranks (the title,
then the text: `chunk_input`). ``<p>_meta`` records the embedding model, its dimension and the chunking, and
where the vectors are: pgvector, or a Chroma server chosen when the store is made
(`citewise.index.chromavectors`, which says how its writes are ordered around the transactions below).

Ingest goes through a queue. `PgStore.enqueue` adds files to ``<p>_queue`` (a file queued twice is queued
once); each worker (`citewise.index.pgworker`) repeats `PgStore.work` until the queue is empty. One step:

1. Claim: on a connection of its own, the worker opens a transaction and takes the oldest queued file with
   ``SELECT ... FOR UPDATE SKIP LOCKED``: a file another worker holds is passed over, never waited for. That
   transaction holds the one row lock and nothing else while the file is read, chunked and embedded.
2. Write: then, and only then, a transaction opens on the store's connection: the file's documents, their
   paragraphs, bibliography, chunks, vectors and lexical rows, the file's record, and the item's outcome
   (``<p>_outcomes``: done or failed, what was added, what was skipped and why) all commit together. A file
   that changed since it was last ingested loses its stale documents in the same transaction.
3. Release: the claim transaction deletes the queue row and commits.

A worker killed before the write commits leaves nothing: both transactions roll back, and the row, unlocked,
goes to the next worker. Killed after it, the outcome is committed, and a queued row with an outcome is never
claimed again. A file that is not what its name says (a text file named .pdf, empty, unreadable) gets a
failed outcome with the loader's reason, and so does a file a loader fails on in any other way (a bug: the
exception's type and message); the worker goes on with the next.

Every claim is counted (``<p>_attempts``: one row a claim, committed at once on the store's connection, so a
worker that dies leaves it behind). A file that ended `MAX_ATTEMPTS` claims without an outcome (each killed a
worker, or raised in chunking, embedding or writing) is not tried again: its next claim records it failed,
with the last error recorded (or that a worker stopped in it). An exception other than a lost connection is
recorded on the claim's row, the file stays queued, and the worker goes on; the claim that reaches the
limit records the failure. `PgStore.requeue` puts failed files back in the queue, and gives queued files
that used up claims their count afresh.

Workers do not serialise each other. No write updates a row another worker's write updates: documents,
chunks and vectors are new rows (HNSW inserts lock index pages, briefly); the lexical df and count changes
are rows of their own (``<p>_lexical_pending``), folded into the vocabulary now and then (`FOLD_EVERY`)
by one worker at a time (`PgLexical.fold`); new terms are registered before the write transaction, in term
order (no deadlock). The same document in two files ingested at once is stored once: the second write
skips it by its primary key (``ON CONFLICT DO NOTHING``) and records it as a duplicate.

Reads (the primitives a search needs: dense and lexical top-k of chunks and of paragraphs, chunks, their
vectors, paragraphs and documents by id) see what is committed. A `PgStore` holds one connection for
writes and reads (and one for claims): one thread uses it at a time.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus
from psycopg.types.json import Jsonb

from citewise.index.chromavectors import PGVECTOR, ChromaVectors, VectorTable, chroma_client
from citewise.index.chunking import ChunkedDocument, ChunkingConfig, chunk_documents, chunk_input
from citewise.index.document import Document
from citewise.index.embeddings import Embedder
from citewise.index.loaders import iter_files
from citewise.index.pglexical import PgLexical
from citewise.index.pgvectors import PgVectors
from citewise.index.policy import UNCHANGED, decide, where
from citewise.index.records import (
    ChunkRecord,
    DocumentRecord,
    IndexOpenError,
    IndexStats,
    IngestReport,
    ParagraphRecord,
    document_tags,
    paragraph_id,
)

logger = logging.getLogger(__name__)

DEFAULT_PREFIX = "citewise"
REWEIGHT_TOLERANCE = 0.01
"""BM25 weights written under an average chunk length more than 1% off today's are rewritten (`reweight`)."""
MAX_ATTEMPTS = 3
"""Claims of one queued file that may end without an outcome (a worker killed, or an exception) before it is
recorded failed instead of tried again."""
FOLD_EVERY = 16
"""A worker folds the pending BM25 df changes after this many of its commits (and when the queue empties),
not after each: a fold is two short transactions, and until it runs a search only reads a few more rows (the
pending changes of its own terms, through an index on the term)."""

ATTEMPTS = (
    """CREATE TABLE IF NOT EXISTS {attempts} (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, item bigint NOT NULL, worker text NOT NULL,
        error text, started_at timestamptz NOT NULL DEFAULT now())""",
    "CREATE INDEX IF NOT EXISTS {attempts_item} ON {attempts} (item)",
)
"""The claims of queued files, one row each (a store made before it gains it at its first claim)."""

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS {meta} (key text PRIMARY KEY, value text NOT NULL)",
    """CREATE TABLE IF NOT EXISTS {files} (
        path text PRIMARY KEY, sha256 text NOT NULL, size bigint NOT NULL, documents integer NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS {documents} (
        id text PRIMARY KEY, file text NOT NULL, key text NOT NULL, title text NOT NULL,
        metadata jsonb NOT NULL, added_at timestamptz NOT NULL DEFAULT now())""",
    "CREATE INDEX IF NOT EXISTS {documents_file} ON {documents} (file)",
    """CREATE TABLE IF NOT EXISTS {paragraphs} (
        id text PRIMARY KEY, doc_id text NOT NULL REFERENCES {documents} (id) ON DELETE CASCADE,
        seq integer NOT NULL, section text NOT NULL, text text NOT NULL, citations jsonb NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS {paragraphs_doc} ON {paragraphs} (doc_id, seq)",
    """CREATE TABLE IF NOT EXISTS {bibliography} (
        doc_id text NOT NULL REFERENCES {documents} (id) ON DELETE CASCADE, key text NOT NULL,
        seq integer NOT NULL, text text NOT NULL, PRIMARY KEY (doc_id, key))""",
    """CREATE TABLE IF NOT EXISTS {chunks} (
        id text PRIMARY KEY, doc_id text NOT NULL REFERENCES {documents} (id) ON DELETE CASCADE,
        paragraph_id text NOT NULL, seq integer NOT NULL, text text NOT NULL,
        start integer NOT NULL, "end" integer NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS {chunks_doc} ON {chunks} (doc_id, seq)",
    """CREATE TABLE IF NOT EXISTS {queue} (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, path text NOT NULL UNIQUE,
        enqueued_at timestamptz NOT NULL DEFAULT now())""",
    """CREATE TABLE IF NOT EXISTS {outcomes} (
        item bigint PRIMARY KEY, path text NOT NULL, state text NOT NULL CHECK (state IN ('done', 'failed')),
        error text, documents integer NOT NULL, chunks integer NOT NULL, skipped jsonb NOT NULL,
        worker text NOT NULL, finished_at timestamptz NOT NULL DEFAULT now())""",
    *ATTEMPTS,
)

CLAIM = """SELECT q.id, q.path FROM {queue} AS q
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


VECTORS_OF_A_NEW_STORE = """INSERT INTO {meta} SELECT 'vectors', %s
    WHERE NOT EXISTS (SELECT 1 FROM {meta} WHERE key = 'embedding_model') ON CONFLICT (key) DO NOTHING"""
"""Where a new store keeps its vectors; a store made before the choice existed has no key: pgvector."""


@dataclass(frozen=True)
class Settings:
    """What a store's vectors and chunks were made with, and where its vectors are; every worker does alike.

    Attributes:
        model: the embedding model's name.
        dim: its dimension.
        chunking: how documents are cut.
        vectors: ``pgvector`` or a Chroma server's address (`citewise.index.chromavectors.vector_choice`).
        collection: the Chroma collections' name (``<collection>-chunks``, ``-paragraphs``); "" in pgvector.
    """

    model: str
    dim: int
    chunking: ChunkingConfig
    vectors: str = PGVECTOR
    collection: str = ""


@dataclass(frozen=True)
class WorkItem:
    """A claimed queue row: its id and the file's path."""

    id: int
    path: str


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


class PgStore:
    """Documents, paragraphs, bibliography, chunks, vectors and BM25 of the shared tier, and its work queue.

    Args:
        dsn: A libpq connection string (``postgresql://user@host:port/database``) of a database with the
            ``vector`` extension.
        prefix: The tables' name prefix: several stores may share a database.
        dim: The embedding model's dimension (the vector tables' column type).
        conn: An open connection (autocommit) to read and write through instead of one of its own; the
            caller closes it (`citewise.index.shared` lends pooled ones, one a search).
    """

    def __init__(
        self,
        dsn: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        dim: int = 384,
        conn: psycopg.Connection | None = None,
    ) -> None:
        self.dsn, self.prefix, self.dim = dsn, prefix, dim
        self._own = conn is None
        self.conn = psycopg.connect(dsn, autocommit=True) if conn is None else conn
        self._claims: psycopg.Connection | None = None
        self._settings: Settings | None = None
        self._unfolded = 0  # commits since this store last folded the pending BM25 changes
        self._counting = (
            False  # the attempts table is there (a store made before it gets it at a first claim)
        )
        self._vector_tables: tuple[VectorTable, VectorTable] | None = None  # `vectors`, at the first use
        try:
            self._pgvectors = (
                PgVectors(self.conn, dim, prefix=f"{prefix}_vectors"),
                PgVectors(self.conn, dim, prefix=f"{prefix}_pvectors"),
            )
        except BaseException:
            if self._own:
                self.conn.close()
            raise
        self.lexical = PgLexical(self.conn, "bm25", prefix=f"{prefix}_lexical")
        self.paragraph_lexical = PgLexical(self.conn, "bm25", prefix=f"{prefix}_plexical")
        names = (
            *("meta", "files", "documents", "paragraphs", "bibliography", "chunks", "queue", "outcomes"),
            *("attempts", "documents_file", "paragraphs_doc", "chunks_doc", "attempts_item"),
        )
        self._names = {name: sql.Identifier(f"{prefix}_{name}") for name in names}

    def _sql(self, template: str, **extra: sql.Composable) -> sql.Composed:
        """A statement with the tables' names filled in."""
        return sql.SQL(template).format(**self._names, **extra)

    @property
    def vectors(self) -> VectorTable:
        """The chunks' vectors, where the store keeps them (`Settings.vectors`)."""
        return self._tables()[0]

    @property
    def paragraph_vectors(self) -> VectorTable:
        """The paragraphs' vectors, where the store keeps them."""
        return self._tables()[1]

    @property
    def vectors_in_chroma(self) -> bool:
        """Whether the vectors are in a Chroma server (outside this database's transactions)."""
        return self.settings().vectors != PGVECTOR

    def open_vectors(self) -> None:
        """Reach the vectors now rather than at the first search: a Chroma server and its two collections.

        Raises:
            IndexOpenError: no store, or its Chroma server does not answer or lost its collections.
        """
        for table in self._tables():
            if isinstance(table, ChromaVectors):
                table.open()

    def _tables(self) -> tuple[VectorTable, VectorTable]:
        """The vector tables the settings name (a Chroma server is reached here, once).

        Raises:
            IndexOpenError: no store yet, or its Chroma server does not answer.
        """
        if self._vector_tables is None:
            settings = self.settings()
            if settings.vectors == PGVECTOR:
                self._vector_tables = self._pgvectors
            else:
                client = chroma_client(settings.vectors)
                self._vector_tables = (
                    ChromaVectors(client, settings.vectors, f"{settings.collection}-chunks", self.dim),
                    ChromaVectors(client, settings.vectors, f"{settings.collection}-paragraphs", self.dim),
                )
        return self._vector_tables

    def close(self) -> None:
        """Close the connections (a connection given to it is the giver's to close)."""
        if self._claims is not None:
            self._claims.close()
        if self._own:
            self.conn.close()

    def __enter__(self) -> PgStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # schema and settings --------------------------------------------------------------------------------
    def create(
        self, model: str, chunking: ChunkingConfig | None = None, vectors: str | None = None
    ) -> Settings:
        """Create the tables, indexes and functions if they do not exist, and settle the store's settings.

        Safe to run again, and by several processes at once: the first settings recorded are the store's.

        Args:
            model: The embedding model's name (`Embedder.name`).
            chunking: How documents are cut (the default `ChunkingConfig` when None).
            vectors: Where the vectors are (`citewise.index.chromavectors.vector_choice`'s canonical form):
                a new store records it (pgvector when None); an existing one keeps its own, and another one
                given is refused.

        Returns:
            The store's settings.

        Raises:
            IndexOpenError: the store was made with another model, dimension, chunking or vector store, or its
                Chroma server does not answer.
        """
        chunking = chunking or ChunkingConfig()
        if vectors not in (None, PGVECTOR):
            chroma_client(vectors)  # a server that does not answer is refused before anything is recorded
        key = f"citewise.pgstore.create:{self.prefix}"
        with self.conn.transaction():  # one creator at a time: CREATE ... IF NOT EXISTS races otherwise
            self.conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [key])
            for statement in SCHEMA:
                self.conn.execute(self._sql(statement))
            self.lexical.create()
            self.paragraph_lexical.create()
            self.conn.execute(self._sql(VECTORS_OF_A_NEW_STORE), [vectors or PGVECTOR])
            asked = {
                "embedding_model": model,
                "dim": str(self.dim),
                "chunking": json.dumps(chunking.as_dict(), sort_keys=True),
            }
            if vectors not in (None, PGVECTOR):  # a tag of its own: two databases' stores may share a server
                asked["vector_collection"] = f"citewise-{self.prefix}-{uuid.uuid4().hex[:8]}"
            with self.conn.cursor() as cur:
                insert = "INSERT INTO {meta} VALUES (%s, %s) ON CONFLICT (key) DO NOTHING"
                cur.executemany(self._sql(insert), list(asked.items()))
            self._settings = None
            if self.settings().vectors == PGVECTOR:
                for table in self._pgvectors:
                    table.create()
        settings = self.settings()
        if (settings.model, settings.dim, settings.chunking) != (model, self.dim, chunking):
            raise IndexOpenError(
                f"the shared store {self.prefix!r} was made with embedding model {settings.model!r} "
                f"({settings.dim} dimensions) and chunking {settings.chunking.as_dict()}, not {model!r} "
                f"({self.dim}) and {chunking.as_dict()}: use another prefix for another model or chunking"
            )
        if vectors is not None and vectors != settings.vectors:
            raise IndexOpenError(
                f"the shared store {self.prefix!r} keeps its vectors in {_vectors_place(settings.vectors)}, "
                f"not in {_vectors_place(vectors)}: leave --vectors out, or use another prefix or database"
            )
        if settings.vectors != PGVECTOR:
            for kind in self._tables():
                kind.create()
        return settings

    def settings(self) -> Settings:
        """The embedding model, dimension and chunking the store was made with.

        Raises:
            IndexOpenError: there is no store with this prefix in the database.
        """
        if self._settings is not None:  # settled once for good: read once
            return self._settings
        exists = self.conn.execute("SELECT to_regclass(%s)", [f"{self.prefix}_meta"]).fetchone()
        stored: dict[str, str] = {}
        if exists and exists[0] is not None:
            stored = dict(self.conn.execute(self._sql("SELECT key, value FROM {meta}")).fetchall())
        if not {"embedding_model", "dim", "chunking"} <= set(stored):
            raise IndexOpenError(
                f"no citewise store {self.prefix!r} in the database {self.conn.info.dbname!r}: create it "
                "first (PgStore.create)"
            )
        chunking = ChunkingConfig(**json.loads(stored["chunking"]))
        vectors = stored.get("vectors", PGVECTOR)
        collection = stored.get("vector_collection", "") if vectors != PGVECTOR else ""
        self._settings = Settings(
            stored["embedding_model"], int(stored["dim"]), chunking, vectors, collection
        )
        return self._settings

    # the queue ------------------------------------------------------------------------------------------
    def enqueue(self, paths: Iterable[str | Path]) -> int:
        """Queue files (folders: the supported files under them) for the workers; returns how many were new.

        A file queued already (waiting, or being ingested) is not queued twice; a file ingested before is
        queued again (a worker finds it unchanged, or replaces its documents).
        """
        files = sorted({str(path.resolve()) for path in iter_files(paths)})
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(self._sql(ENQUEUE[0]))
            cur.execute(self._sql(ENQUEUE[1]), [files])
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
                item = WorkItem(int(row[0]), str(row[1]))
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

    def remove(self, paths: Iterable[str | Path]) -> IngestReport:
        """Delete every document that came from the given files (or files under the given folders).

        Each file's documents, with their rows in every table and its record, go in one transaction, as
        `Index.remove` does on the local tier (vectors in a Chroma server after it, `_forget`). A path that
        matches nothing is listed as skipped.
        """
        started = time.perf_counter()
        report = IngestReport()
        known = self.files()
        for path in paths:
            target = str(Path(path).expanduser().resolve())
            matches = [f for f in known if f == target or f.startswith(target.rstrip("/") + "/")]
            if not matches:
                report.skipped.append((str(path), "not in the store"))
            for file in matches:
                forgotten = _Forgotten()
                with self.conn.transaction(), self.conn.cursor() as cur:
                    doc_ids = sorted(self.document_ids(file))
                    row = cur.execute(
                        self._sql("SELECT count(*) FROM {chunks} WHERE doc_id = ANY(%s)"), [doc_ids]
                    ).fetchone()
                    report.documents_removed += self._delete(cur, doc_ids, forgotten)
                    report.chunks_removed += int(row[0]) if row else 0
                    cur.execute(self._sql("DELETE FROM {files} WHERE path = %s"), [file])
                self._forget(forgotten)  # Chroma's copies of what the commit removed
                report.files += 1
        report.seconds = time.perf_counter() - started
        return report

    def fold(self) -> None:
        """Fold the pending BM25 df and count changes (`PgLexical.fold`); scores stay the same.

        Another worker folding meanwhile folds these too, or the next fold will.
        """
        for lexical in (self.lexical, self.paragraph_lexical):
            lexical.fold()
        self._unfolded = 0

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
        prepared = [(one.document, _document_rows(one, chunking, self.lexical)) for one in ordered]
        # new terms enter the vocabulary before the transaction opens: see the module
        self.lexical.register([words for _, rows in prepared for words in rows.chunk_tokens])
        self.paragraph_lexical.register([words for _, rows in prepared for words in rows.paragraph_tokens])
        forgotten = _Forgotten()
        with self.conn.transaction(), self.conn.cursor() as cur:
            stale = set(self.document_ids(item.path)) - set(unique)
            outcome.removed = self._delete(cur, sorted(stale), forgotten)
            inserted = self._insert(cur, prepared, outcome)
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

    def _delete(self, cur: psycopg.Cursor[Any], doc_ids: Sequence[str], forgotten: _Forgotten) -> int:
        """Delete documents with their rows in every table (inside the caller's transaction).

        Vectors in Chroma are not deleted here but noted in `forgotten`, for `_forget` after the commit.
        """
        if not doc_ids:
            return 0
        chunk_ids = [
            r[0] for r in cur.execute(self._sql("SELECT id FROM {chunks} WHERE doc_id = ANY(%s)"), [doc_ids])
        ]
        paragraph_ids = [
            r[0]
            for r in cur.execute(self._sql("SELECT id FROM {paragraphs} WHERE doc_id = ANY(%s)"), [doc_ids])
        ]
        cur.execute(self._sql("DELETE FROM {documents} WHERE id = ANY(%s)"), [list(doc_ids)])
        removed = cur.rowcount
        if self.vectors_in_chroma:
            forgotten.add(doc_ids, chunk_ids, paragraph_ids)
        else:
            self.vectors.delete(chunk_ids)
            self.paragraph_vectors.delete(paragraph_ids)
        self.lexical.remove(chunk_ids)
        self.paragraph_lexical.remove(paragraph_ids)
        return removed

    def _insert(
        self, cur: psycopg.Cursor[Any], documents: list[tuple[Document, _DocumentRows]], outcome: Outcome
    ) -> set[str]:
        """Insert the documents no other file holds, with all their rows; returns the ids inserted."""
        inserted: set[str] = set()
        for doc, _ in documents:
            cur.execute(
                self._sql(
                    """INSERT INTO {documents} (id, file, key, title, metadata) VALUES (%s, %s, %s, %s, %s)
                    ON CONFLICT (id) DO NOTHING RETURNING id"""
                ),
                [doc.id, outcome.path, doc.key, doc.title, Jsonb(doc.metadata)],
            )
            if cur.fetchone() is None:  # another worker stored it a moment ago, from another file
                outcome.skipped.append((where(outcome.path, doc), "duplicate of a document stored meanwhile"))
            else:
                inserted.add(doc.id)
        kept = [rows for doc, rows in documents if doc.id in inserted]
        if not kept:
            return inserted

        def every(name: str) -> list[Any]:
            return [value for rows in kept for value in getattr(rows, name)]

        cur.executemany(
            self._sql("INSERT INTO {paragraphs} VALUES (%s, %s, %s, %s, %s, %s)"), every("paragraphs")
        )
        cur.executemany(
            self._sql("INSERT INTO {bibliography} VALUES (%s, %s, %s, %s)"), every("bibliography")
        )
        cur.executemany(
            self._sql("INSERT INTO {chunks} VALUES (%s, %s, %s, %s, %s, %s, %s)"), every("chunks")
        )
        chunk_vectors = np.asarray(every("chunk_vectors"), dtype=np.float32).reshape(-1, self.dim)
        if self.vectors_in_chroma:  # held to the commit: a removal of these documents waits (`_forget`)
            self._lock_documents(cur, sorted(inserted))
        self.vectors.upsert(every("chunk_ids"), chunk_vectors, metadatas=every("chunk_meta"))
        paragraph_vectors = np.asarray(every("paragraph_vectors"), dtype=np.float32).reshape(-1, self.dim)
        self.paragraph_vectors.upsert(
            every("vector_paragraph_ids"), paragraph_vectors, metadatas=every("paragraph_meta")
        )
        self.lexical.add(every("chunk_ids"), every("chunk_texts"), every("chunk_tokens"))
        self.paragraph_lexical.add(
            every("paragraph_ids"), every("paragraph_texts"), every("paragraph_tokens")
        )
        return inserted

    def _lock_documents(self, cur: psycopg.Cursor[Any], doc_ids: Sequence[str]) -> None:
        """Take the documents' advisory locks for the caller's transaction, in the order given (sort it)."""
        key = f"citewise.pgstore.document:{self.prefix}:"
        for doc_id in doc_ids:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [key + doc_id])

    def _forget(self, forgotten: _Forgotten) -> int:
        """Delete from Chroma the given vectors whose ids PostgreSQL does not hold (committed); how many.

        Under the documents' advisory locks: a worker storing one of them now holds its lock from its upsert
        to its commit, so this waits for that commit and then keeps its ids.
        """
        if not forgotten.documents:
            return 0
        with self.conn.transaction(), self.conn.cursor() as cur:
            self._lock_documents(cur, sorted(forgotten.documents))
            held = set(self.chunk_paragraphs(sorted(forgotten.chunks)))
            chunks = sorted(forgotten.chunks - held)
            statement = self._sql("SELECT id FROM {paragraphs} WHERE id = ANY(%s)")
            held = {r[0] for r in cur.execute(statement, [sorted(forgotten.paragraphs)])}
            paragraphs = sorted(forgotten.paragraphs - held)
            self.vectors.delete(chunks)
            self.paragraph_vectors.delete(paragraphs)
        return len(chunks) + len(paragraphs)

    def sweep(self) -> int:
        """Delete from Chroma every vector whose id PostgreSQL does not hold: a killed worker's orphans.

        Reads each collection whole (its ids, a page at a time); a worker writing meanwhile keeps its own
        (see `_forget`). Nothing to do when the vectors are in pgvector.

        Returns:
            How many chunk and paragraph vectors were deleted.
        """
        if not self.vectors_in_chroma:
            return 0
        forgotten = _Forgotten()
        for table, name in ((self.vectors, "chunks"), (self.paragraph_vectors, "paragraphs")):
            assert isinstance(table, ChromaVectors)
            held = table.documents()
            statement = self._sql("SELECT id FROM {table} WHERE id = ANY(%s)", table=self._names[name])
            stored = {r[0] for r in self.conn.execute(statement, [list(held)])}
            for key, doc_id in held.items():
                if key not in stored:
                    forgotten.documents.add(doc_id)
                    getattr(forgotten, name).add(key)
        return self._forget(forgotten)

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

    def _finish(self, outcome: Outcome, before_commit: Callable[[WorkItem], None] | None) -> Outcome:
        """Record an outcome that writes nothing else (an unchanged or a failed file)."""
        with self.conn.transaction(), self.conn.cursor() as cur:
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

    def reweight(self, tolerance: float = REWEIGHT_TOLERANCE) -> int:
        """Rewrite the BM25 weights of chunks and paragraphs written under an average length now off by more.

        A weight freezes the average chunk length of its time (`PgLexical`); ingest moves the average, and
        scores drift from bm25s's by up to that share. Workers call this when the queue is empty.

        Returns:
            How many chunks and paragraphs were rewritten.
        """
        return sum(lexical.reweight(tolerance) for lexical in (self.lexical, self.paragraph_lexical))

    # reading --------------------------------------------------------------------------------------------
    def file_sha(self, path: str) -> str | None:
        """The content hash recorded when `path` was last ingested, or None."""
        row = self.conn.execute(self._sql("SELECT sha256 FROM {files} WHERE path = %s"), [path]).fetchone()
        return str(row[0]) if row else None

    def files(self) -> list[str]:
        """Every file with documents in the store, or recorded as ingested."""
        statement = "SELECT DISTINCT file FROM {documents} UNION SELECT path FROM {files} ORDER BY 1"
        return [r[0] for r in self.conn.execute(self._sql(statement))]

    def document_ids(self, file: str | None = None) -> set[str]:
        """Ids of all documents, or of those from one file."""
        if file is None:
            return {r[0] for r in self.conn.execute(self._sql("SELECT id FROM {documents}"))}
        statement = self._sql("SELECT id FROM {documents} WHERE file = %s")
        return {r[0] for r in self.conn.execute(statement, [file])}

    def file_with_sha(self, sha256: str, other_than: str) -> str | None:
        """Another file recorded with this content hash (the same bytes under another name), or None."""
        statement = self._sql(
            "SELECT path FROM {files} WHERE sha256 = %s AND path <> %s ORDER BY path LIMIT 1"
        )
        row = self.conn.execute(statement, [sha256, other_than]).fetchone()
        return str(row[0]) if row else None

    def document_files(self, ids: Iterable[str]) -> dict[str, str]:
        """The file each of the given stored document ids came from."""
        statement = self._sql("SELECT id, file FROM {documents} WHERE id = ANY(%s)")
        return dict(self.conn.execute(statement, [list(ids)]).fetchall())

    def tag_documents(self, file: str, tags: Iterable[str]) -> int:
        """Add tags to every document of a file (its metadata's `tags` list); return how many were tagged.

        As the local tier keeps them (`DocStore.tag_documents`): tags change no chunk, so nothing else moves.
        """
        added = sorted({tag for tag in tags if tag})
        if not added:
            return 0
        with self.conn.transaction(), self.conn.cursor() as cur:
            rows = cur.execute(
                self._sql("SELECT id, metadata FROM {documents} WHERE file = %s FOR UPDATE"), [file]
            ).fetchall()
            for doc_id, metadata in rows:
                metadata["tags"] = sorted(set(document_tags(metadata)) | set(added))
                cur.execute(
                    self._sql("UPDATE {documents} SET metadata = %s WHERE id = %s"), [Jsonb(metadata), doc_id]
                )
        return len(rows)

    def document(self, doc_id: str) -> DocumentRecord | None:
        """One stored document, or None."""
        row = self.conn.execute(
            self._sql("SELECT id, file, key, title, metadata FROM {documents} WHERE id = %s"), [doc_id]
        ).fetchone()
        return DocumentRecord(*row) if row else None

    def paragraphs(self, doc_id: str) -> list[ParagraphRecord]:
        """A document's paragraphs in reading order."""
        rows = self.conn.execute(
            self._sql(
                """SELECT id, doc_id, seq, section, text, citations FROM {paragraphs}
                WHERE doc_id = %s ORDER BY seq"""
            ),
            [doc_id],
        )
        return [ParagraphRecord(i, d, s, sec, t, tuple(c)) for i, d, s, sec, t, c in rows]

    def paragraph(self, paragraph_id: str) -> ParagraphRecord | None:
        """One paragraph by id, or None."""
        row = self.conn.execute(
            self._sql("SELECT id, doc_id, seq, section, text, citations FROM {paragraphs} WHERE id = %s"),
            [paragraph_id],
        ).fetchone()
        return ParagraphRecord(row[0], row[1], row[2], row[3], row[4], tuple(row[5])) if row else None

    def bibliography(self, doc_id: str) -> dict[str, str]:
        """A document's reference list, key -> entry text, in the document's order."""
        statement = self._sql("SELECT key, text FROM {bibliography} WHERE doc_id = %s ORDER BY seq")
        return dict(self.conn.execute(statement, [doc_id]).fetchall())

    def chunks(self, ids: Sequence[str]) -> dict[str, ChunkRecord]:
        """Chunk records (with title and section) of the given ids that are stored (others are left out)."""
        rows = self.conn.execute(
            self._sql(
                """SELECT c.id, c.doc_id, c.paragraph_id, c.seq, c.text, d.title, p.section FROM {chunks} AS c
                JOIN {documents} AS d ON d.id = c.doc_id JOIN {paragraphs} AS p ON p.id = c.paragraph_id
                WHERE c.id = ANY(%s)"""
            ),
            [list(ids)],
        )
        return {r[0]: ChunkRecord(*r) for r in rows}

    def stored_vectors(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """The given chunk ids that are stored, in the given order, and their vectors (as stored: halfvec).

        With the vectors in Chroma, only ids PostgreSQL holds count (in the caller's snapshot, if any): a
        search's candidates all pass through here, so a killed worker's orphans are never returned.
        """
        if self.vectors_in_chroma:
            held = self.chunk_paragraphs(ids)
            ids = [key for key in ids if key in held]
        found = self.vectors.vectors(ids)
        kept = [key for key in ids if key in found]
        matrix = np.zeros((len(kept), self.dim), dtype=np.float32)
        for n, key in enumerate(kept):
            matrix[n] = found[key]
        return kept, matrix

    def dense(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The k chunks nearest a query vector: (chunk id, cosine similarity), best first (HNSW)."""
        return self.vectors.search(vector, k)

    def dense_paragraphs(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The k paragraphs nearest a query vector: (paragraph id, cosine similarity), best first (HNSW)."""
        return self.paragraph_vectors.search(vector, k)

    def bm25(self, query: str, k: int) -> list[tuple[str, float]]:
        """The k best chunks by BM25: (chunk id, score), best first; only chunks sharing a term."""
        return self.lexical.search(query, k)

    def bm25_paragraphs(self, query: str, k: int) -> list[tuple[str, float]]:
        """The k best paragraphs by BM25: (paragraph id, score), best first; only those sharing a term."""
        return self.paragraph_lexical.search(query, k)

    def bm25_scores(self, query: str, ids: Sequence[str]) -> dict[str, float]:
        """The BM25 of each given chunk that shares a term with the query (the others score 0)."""
        return self.lexical.scores(query, ids)

    def bm25_paragraph_scores(self, query: str, ids: Sequence[str]) -> dict[str, float]:
        """The BM25 of each given paragraph that shares a term with the query (the others score 0)."""
        return self.paragraph_lexical.scores(query, ids)

    def paragraph_similarities(self, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """The cosine similarity to a query vector of each given paragraph that has a vector."""
        return self.paragraph_vectors.similarities(vector, ids)

    def chunk_paragraphs(self, ids: Sequence[str]) -> dict[str, str]:
        """The paragraph of each given chunk that is stored."""
        statement = self._sql("SELECT id, paragraph_id FROM {chunks} WHERE id = ANY(%s)")
        return dict(self.conn.execute(statement, [list(ids)]).fetchall())

    def paragraph_chunks(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """The chunks of each given paragraph, in reading order (a paragraph without chunks is left out)."""
        rows = self.conn.execute(
            self._sql(
                """SELECT c.paragraph_id, c.id FROM {paragraphs} AS p
                JOIN {chunks} AS c ON c.doc_id = p.doc_id AND c.paragraph_id = p.id
                WHERE p.id = ANY(%s) ORDER BY c.paragraph_id, c.seq"""
            ),
            [list(ids)],
        )
        members: dict[str, list[str]] = {}
        for paragraph, chunk in rows:
            members.setdefault(paragraph, []).append(chunk)
        return members

    def generation(self) -> int:
        """How many work steps have committed (each ingest's write, or failure, is one): it only grows."""
        row = self.conn.execute(self._sql("SELECT count(*) FROM {outcomes}")).fetchone()
        return int(row[0]) if row else 0

    def counts(self) -> dict[str, int]:
        """Rows in each table: files, documents, paragraphs, bibliography, chunks, and the derived ones."""
        tables = ("files", "documents", "paragraphs", "bibliography", "chunks")
        parts = [sql.SQL("(SELECT count(*) FROM {})").format(self._names[table]) for table in tables]
        row = self.conn.execute(sql.SQL("SELECT ") + sql.SQL(", ").join(parts)).fetchone()
        assert row is not None
        counts = dict(zip(tables, (int(n) for n in row), strict=True))
        counts["chunk_vectors"] = self.vectors.count()
        counts["paragraph_vectors"] = self.paragraph_vectors.count()
        for name, lexical in (
            ("chunks_lexical", self.lexical),
            ("paragraphs_lexical", self.paragraph_lexical),
        ):
            statement = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(f"{lexical.prefix}_chunks"))
            found = self.conn.execute(statement).fetchone()
            counts[name] = int(found[0]) if found else 0
        return counts

    def stats(self) -> IndexStats:
        """What the store holds, as the local tier's `Index.stats` says it (chunk vectors in `chunk_vectors`).

        One read-only snapshot when the connection is in autocommit (the counts then agree with each other).
        """
        snapshot = self.conn.autocommit and self.conn.info.transaction_status == TransactionStatus.IDLE
        with self.conn.transaction() if snapshot else contextlib.nullcontext():
            if snapshot:
                self.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            counts = self.counts()
            generation = self.generation()
        return IndexStats(
            files=counts["files"],
            documents=counts["documents"],
            paragraphs=counts["paragraphs"],
            bibliography=counts["bibliography"],
            chunks=counts["chunks"],
            chunk_vectors=counts["chunk_vectors"],
            chunks_lexical=counts["chunks_lexical"],
            paragraphs_lexical=counts["paragraphs_lexical"],
            generation=generation,
        )


@dataclass
class _Forgotten:
    """Vectors in Chroma of documents a transaction removed, to delete once it commits (`PgStore._forget`)."""

    documents: set[str] = field(default_factory=set)
    chunks: set[str] = field(default_factory=set)
    paragraphs: set[str] = field(default_factory=set)

    def add(self, doc_ids: Iterable[str], chunk_ids: Iterable[str], paragraph_ids: Iterable[str]) -> None:
        """Note documents and their vectors' ids."""
        self.documents.update(doc_ids)
        self.chunks.update(chunk_ids)
        self.paragraphs.update(paragraph_ids)


def _vectors_place(vectors: str) -> str:
    """Where vectors are, for a message."""
    return "pgvector" if vectors == PGVECTOR else f"the Chroma server {vectors}"


@dataclass
class _DocumentRows:
    """One chunked document's rows for every table, made before the write transaction opens."""

    doc_id: str
    paragraphs: list[tuple[Any, ...]] = field(default_factory=list)
    bibliography: list[tuple[Any, ...]] = field(default_factory=list)
    chunks: list[tuple[Any, ...]] = field(default_factory=list)
    chunk_ids: list[str] = field(default_factory=list)
    chunk_meta: list[dict[str, str | int]] = field(default_factory=list)
    chunk_texts: list[str] = field(default_factory=list)
    chunk_tokens: list[list[str]] = field(default_factory=list)
    chunk_vectors: list[np.ndarray] = field(default_factory=list)
    paragraph_ids: list[str] = field(default_factory=list)
    paragraph_texts: list[str] = field(default_factory=list)
    paragraph_tokens: list[list[str]] = field(default_factory=list)
    vector_paragraph_ids: list[str] = field(default_factory=list)
    paragraph_meta: list[dict[str, str | int]] = field(default_factory=list)
    paragraph_vectors: list[np.ndarray] = field(default_factory=list)


def _document_rows(one: ChunkedDocument, chunking: ChunkingConfig, lexical: PgLexical) -> _DocumentRows:
    """The rows of a chunked document: texts ranked as the local tier ranks them, tokens, vectors."""
    doc = one.document
    rows = _DocumentRows(doc.id)
    for seq, paragraph in enumerate(doc.paragraphs):
        pid = paragraph_id(doc.id, seq)
        citations = Jsonb(list(paragraph.citations))
        rows.paragraphs.append((pid, doc.id, seq, paragraph.section, paragraph.text, citations))
        rows.paragraph_ids.append(pid)
        rows.paragraph_texts.append(chunk_input(doc.title, paragraph.text, chunking))
    rows.bibliography = [(doc.id, b.key, n, b.text) for n, b in enumerate(doc.bibliography.values())]
    pooled: dict[int, np.ndarray] = {}
    for chunk, vector in zip(one.chunks, one.vectors, strict=True):
        pid = paragraph_id(doc.id, chunk.paragraph)
        rows.chunks.append((chunk.id, doc.id, pid, chunk.seq, chunk.text, chunk.start, chunk.end))
        rows.chunk_ids.append(chunk.id)
        rows.chunk_meta.append({"doc_id": doc.id, "paragraph_id": pid})
        rows.chunk_texts.append(chunk_input(doc.title, chunk.text, chunking))
        rows.chunk_vectors.append(np.asarray(vector, dtype=np.float32))
        pooled[chunk.paragraph] = pooled.get(chunk.paragraph, 0) + rows.chunk_vectors[-1]
    for seq in range(len(doc.paragraphs)):
        if one.paragraph_vectors is not None:
            vector = np.asarray(one.paragraph_vectors[seq], dtype=np.float32)
        elif seq in pooled:  # "pooled": its chunks' normalised sum, as the local tier reads it
            vector = pooled[seq] / (float(np.linalg.norm(pooled[seq])) or 1.0)
        else:
            continue  # no chunk, no vector of its own: nothing to find it by
        pid = paragraph_id(doc.id, seq)
        rows.vector_paragraph_ids.append(pid)
        rows.paragraph_meta.append({"doc_id": doc.id, "paragraph_id": pid})
        rows.paragraph_vectors.append(vector)
    rows.chunk_tokens = lexical.tokenize(rows.chunk_texts)
    rows.paragraph_tokens = lexical.tokenize(rows.paragraph_texts)
    return rows
