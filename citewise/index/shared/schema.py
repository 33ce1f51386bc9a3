"""The shared store's tables in PostgreSQL, its settings, and the connection every other part works through.

`Schema` is the base of `PgStore` (`citewise.index.shared.pgstore`, which says what the store is): it holds
the store's connection, names its tables after a prefix, creates them (`create`, safe run by many at once)
and reads the settings the store was made with (model, dimension, chunking, where the vectors are).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Self

import psycopg
from psycopg import sql

from citewise.index.chunking import ChunkingConfig
from citewise.index.records import IndexOpenError
from citewise.index.shared.chromavectors import PGVECTOR, ChromaVectors, VectorTable, chroma_client
from citewise.index.shared.pglexical import PgLexical
from citewise.index.shared.pgvectors import PgVectors

DEFAULT_PREFIX = "citewise"
SCHEMA_VERSION = "4"
"""The tables' form a store records once `create` has brought it there (2: documents in collections; 3:
paragraphs keep their lines' boxes on a PDF's pages; 4: an index on the collection of the vector and BM25
tables, and the BM25 search that uses it). A store of an older citewise lacks it: `create` brings it up to
date; a reader must not search one without collections or boxes."""
SEARCHABLE = ("3", SCHEMA_VERSION)
"""The forms a reader may search as they are (3 answers alike, a search of a few collections more slowly)."""

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
        metadata jsonb NOT NULL, added_at timestamptz NOT NULL DEFAULT now(),
        collection text NOT NULL DEFAULT 'default')""",
    # a store made before documents had collections: its documents are in the default one
    "ALTER TABLE {documents} ADD COLUMN IF NOT EXISTS collection text NOT NULL DEFAULT 'default'",
    "CREATE INDEX IF NOT EXISTS {documents_file} ON {documents} (file)",
    "CREATE INDEX IF NOT EXISTS {documents_collection} ON {documents} (collection)",
    """CREATE TABLE IF NOT EXISTS {paragraphs} (
        id text PRIMARY KEY, doc_id text NOT NULL REFERENCES {documents} (id) ON DELETE CASCADE,
        seq integer NOT NULL, section text NOT NULL, text text NOT NULL, citations jsonb NOT NULL,
        boxes jsonb)""",
    # a store made before paragraphs kept their boxes: its paragraphs have none
    "ALTER TABLE {paragraphs} ADD COLUMN IF NOT EXISTS boxes jsonb",
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
        enqueued_at timestamptz NOT NULL DEFAULT now(), collection text)""",
    "ALTER TABLE {queue} ADD COLUMN IF NOT EXISTS collection text",
    """CREATE TABLE IF NOT EXISTS {outcomes} (
        item bigint PRIMARY KEY, path text NOT NULL, state text NOT NULL CHECK (state IN ('done', 'failed')),
        error text, documents integer NOT NULL, chunks integer NOT NULL, skipped jsonb NOT NULL,
        worker text NOT NULL, finished_at timestamptz NOT NULL DEFAULT now())""",
    *ATTEMPTS,
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
        vectors: ``pgvector`` or a Chroma server's address
        (`citewise.index.shared.chromavectors.vector_choice`). collection: the Chroma collections' name
        (``<collection>-chunks``, ``-paragraphs``); "" in pgvector.
    """

    model: str
    dim: int
    chunking: ChunkingConfig
    vectors: str = PGVECTOR
    collection: str = ""


class Schema:
    """A shared store's connection, tables and settings (the base of `PgStore`).

    Args:
        dsn: A libpq connection string (``postgresql://user@host:port/database``) of a database with the
            ``vector`` extension.
        prefix: The tables' name prefix: several stores may share a database.
        dim: The embedding model's dimension (the vector tables' column type).
        conn: An open connection (autocommit) to read and write through instead of one of its own; the
            caller closes it (`SharedIndex` lends pooled ones, one a search).
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
            "documents_collection",
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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create(
        self, model: str, chunking: ChunkingConfig | None = None, vectors: str | None = None
    ) -> Settings:
        """Create the tables, indexes and functions if they do not exist, and settle the store's settings.

        Safe to run again, and by several processes at once: the first settings recorded are the store's.

        Args:
            model: The embedding model's name (`Embedder.name`).
            chunking: How documents are cut (the default `ChunkingConfig` when None).
            vectors: Where the vectors are (`citewise.index.shared.chromavectors.vector_choice`'s canonical
            form):
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
            # a store in this citewise's form is left alone: its DDL (ALTER TABLE ... IF NOT EXISTS takes an
            # exclusive lock even when the column is there) would wait for a worker's open claim while that
            # worker's other connection waits for the lock: two ingests started together hung so
            if not self.current():
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
                if vectors not in (
                    None,
                    PGVECTOR,
                ):  # a tag of its own: two databases' stores may share a server
                    asked["vector_collection"] = f"citewise-{self.prefix}-{uuid.uuid4().hex[:8]}"
                with self.conn.cursor() as cur:
                    insert = "INSERT INTO {meta} VALUES (%s, %s) ON CONFLICT (key) DO NOTHING"
                    cur.executemany(self._sql(insert), list(asked.items()))
                    version = (
                        "INSERT INTO {meta} VALUES ('schema', %s) ON CONFLICT (key) DO UPDATE SET value = %s"
                    )
                    cur.execute(self._sql(version), [SCHEMA_VERSION, SCHEMA_VERSION])
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

    def current(self) -> bool:
        """Whether the store's tables have this citewise's form (`SCHEMA_VERSION`, which `create` gives)."""
        exists = self.conn.execute("SELECT to_regclass(%s)", [f"{self.prefix}_meta"]).fetchone()
        if not exists or exists[0] is None:
            return False
        row = self.conn.execute(self._sql("SELECT value FROM {meta} WHERE key = 'schema'")).fetchone()
        return row is not None and row[0] == SCHEMA_VERSION

    def searchable(self) -> bool:
        """Whether a reader may search the store as it is (`SEARCHABLE`), though `create` would add to it."""
        exists = self.conn.execute("SELECT to_regclass(%s)", [f"{self.prefix}_meta"]).fetchone()
        if not exists or exists[0] is None:
            return False
        row = self.conn.execute(self._sql("SELECT value FROM {meta} WHERE key = 'schema'")).fetchone()
        return row is not None and row[0] in SEARCHABLE

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


def _vectors_place(vectors: str) -> str:
    """Where vectors are, for a message."""
    return "pgvector" if vectors == PGVECTOR else f"the Chroma server {vectors}"
