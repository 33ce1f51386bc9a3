"""The document store: SQLite, the source of truth of an index.

It holds files, documents, paragraphs, bibliographies, chunks and their vectors. A document and all its
chunks are written in one transaction, so an interrupted ingest never leaves a half-stored document. Every
committed change bumps `generation`; the derived stores (Chroma, BM25) record the generation they mirror and
are brought up to date from here when they lag (see `citewise.index.local.store`).

One store is shared by the threads of a process (runs call it through `asyncio.to_thread`): each thread gets
its own connection, so one thread's transaction never takes in another's statements, and WAL lets them all
read while one writes. A read by id never fails for an id another process deleted meanwhile: `chunks` and
`stored_vectors` leave it out, `vectors` gives it a row of zeros.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from citewise.index.chunking import ChunkedDocument
from citewise.index.document import LineBox
from citewise.index.records import (
    DEFAULT_COLLECTION,
    ChunkRecord,
    Collections,
    DocumentRecord,
    ParagraphRecord,
    document_tags,
    paragraph_id,
)

SCHEMA_VERSION = "4"
"""4: paragraphs keep their lines' boxes on a PDF's pages; 3: paragraphs keep their own vector."""
BUSY_SECONDS = 30.0
"""How long a statement waits for another connection's write lock before failing."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, sha256 TEXT NOT NULL, size INTEGER NOT NULL, documents INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY, file TEXT NOT NULL, key TEXT NOT NULL, title TEXT NOT NULL,
    metadata TEXT NOT NULL, added_at REAL NOT NULL, collection TEXT NOT NULL DEFAULT 'default'
);
CREATE INDEX IF NOT EXISTS documents_file ON documents(file);
CREATE INDEX IF NOT EXISTS documents_collection ON documents(collection);
CREATE TABLE IF NOT EXISTS paragraphs (
    id TEXT PRIMARY KEY, doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL, section TEXT NOT NULL, text TEXT NOT NULL, citations TEXT NOT NULL, vector BLOB,
    boxes TEXT
);
CREATE INDEX IF NOT EXISTS paragraphs_doc ON paragraphs(doc_id, seq);
CREATE TABLE IF NOT EXISTS bibliography (
    doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE, key TEXT NOT NULL, seq INTEGER NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (doc_id, key)
);
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY, doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    paragraph_id TEXT NOT NULL, seq INTEGER NOT NULL, text TEXT NOT NULL,
    start INTEGER NOT NULL, end INTEGER NOT NULL, vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id, seq);
"""


class DocStore:
    """SQLite store of documents, paragraphs, bibliography and chunks (with their vectors)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._connections: dict[threading.Thread, sqlite3.Connection] = {}
        self._connections_lock = threading.Lock()
        self._closed = False
        try:
            self._prepare()
        except BaseException:
            self.close()
            raise

    def _prepare(self) -> None:
        """Create the schema, or migrate an older one."""
        self.db.execute("PRAGMA journal_mode=WAL")
        version = self._stored_schema()
        if version == "1":  # bibliography gained its order (seq); entries stored before keep order 0
            self.db.execute("ALTER TABLE bibliography ADD COLUMN seq INTEGER NOT NULL DEFAULT 0")
        if version in ("1", "2"):  # paragraphs gained a vector (embedded whole); old ones pool their chunks'
            self.db.execute("ALTER TABLE paragraphs ADD COLUMN vector BLOB")
        if version in ("1", "2", "3"):  # and their lines' boxes on a PDF's pages: old ones have none
            self.db.execute("ALTER TABLE paragraphs ADD COLUMN boxes TEXT")
            self.set_meta("schema", SCHEMA_VERSION)
        elif version not in (None, SCHEMA_VERSION):
            raise ValueError(f"{self.path} has index schema {version}; this citewise reads {SCHEMA_VERSION}")
        if version is not None and not self._has_column("documents", "collection"):
            # documents gained their collection: the ones stored before are in the default collection
            self.db.execute("ALTER TABLE documents ADD COLUMN collection TEXT NOT NULL DEFAULT 'default'")
        self.db.executescript(_SCHEMA)
        if version is None:
            self.set_meta("schema", SCHEMA_VERSION)

    def _stored_schema(self) -> str | None:
        """The schema version of an existing store (None for a new one)."""
        has_meta = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        return self.get_meta("schema") if has_meta else None

    def _has_column(self, table: str, column: str) -> bool:
        return any(row[1] == column for row in self.db.execute(f"PRAGMA table_info({table})"))

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's connection (opened on its first use)."""
        connection = getattr(self._local, "db", None)
        if connection is None:
            connection = self._connect()
            self._local.db = connection
        return connection

    @db.setter
    def db(self, connection: sqlite3.Connection) -> None:
        self._local.db = connection

    def _connect(self) -> sqlite3.Connection:
        with self._connections_lock:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            for thread in [t for t in self._connections if not t.is_alive()]:  # nothing can use these now
                self._connections.pop(thread).close()
            connection = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_SECONDS
            )
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute("PRAGMA foreign_keys=ON")
            self._connections[threading.current_thread()] = connection
            return connection

    def close(self) -> None:
        """Close every thread's connection."""
        with self._connections_lock:
            self._closed = True
            connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            connection.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: committed with a new generation, or rolled back on any error or interrupt."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
            db.execute(
                "INSERT INTO meta VALUES ('generation', '1') "
                "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # an interrupt can land after COMMIT: then there is nothing to undo
                db.execute("ROLLBACK")
            raise

    # meta -----------------------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        """A stored setting, or None."""
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Store a setting (its own transaction; does not bump the generation)."""
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def add_meta(self, key: str, value: str) -> str:
        """Store a setting unless one is (another process may have been first); return the stored one."""
        self.db.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)", (key, value))
        stored = self.get_meta(key)
        return value if stored is None else stored

    @property
    def generation(self) -> int:
        """Bumped by every committed change to documents or chunks."""
        return int(self.get_meta("generation") or 0)

    # files ----------------------------------------------------------------------------------------------
    def file_sha(self, path: str) -> str | None:
        """The content hash recorded when `path` was last ingested completely, or None."""
        row = self.db.execute("SELECT sha256 FROM files WHERE path = ?", (path,)).fetchone()
        return row[0] if row else None

    def file_with_sha(self, sha256: str, other_than: str) -> str | None:
        """Another file recorded with this content hash (the same bytes under another name), or None."""
        query = "SELECT path FROM files WHERE sha256 = ? AND path != ? ORDER BY path LIMIT 1"
        row = self.db.execute(query, (sha256, other_than)).fetchone()
        return row[0] if row else None

    def mark_file(self, path: str, sha256: str, size: int) -> None:
        """Record that every document of `path` (at this content hash) is stored."""
        with self.transaction() as db:
            count = db.execute("SELECT COUNT(*) FROM documents WHERE file = ?", (path,)).fetchone()[0]
            db.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)", (path, sha256, size, count))

    def files(self) -> list[str]:
        """Every file with documents in the index."""
        rows = self.db.execute("SELECT DISTINCT file FROM documents UNION SELECT path FROM files")
        return sorted(r[0] for r in rows)

    # documents ------------------------------------------------------------------------------------------
    def document_ids(self, file: str | None = None) -> set[str]:
        """Ids of all documents, or of those from one file."""
        if file is None:
            rows = self.db.execute("SELECT id FROM documents")
        else:
            rows = self.db.execute("SELECT id FROM documents WHERE file = ?", (file,))
        return {r[0] for r in rows}

    def document_files(self, ids: Iterable[str]) -> dict[str, str]:
        """The file each of the given stored document ids came from."""
        ids = list(ids)
        found: dict[str, str] = {}
        for batch in _batches(ids, 900):
            marks = ",".join("?" * len(batch))
            for doc_id, file in self.db.execute(
                f"SELECT id, file FROM documents WHERE id IN ({marks})", batch
            ):
                found[doc_id] = file
        return found

    def add(
        self, chunked: Sequence[ChunkedDocument], file: str, collection: str = DEFAULT_COLLECTION
    ) -> None:
        """Store documents (in `collection`) with their paragraphs, bibliography and chunks, at once."""
        now = time.time()
        with self.transaction() as db:
            for item in chunked:
                doc = item.document
                doc_id = doc.id
                metadata = {**doc.metadata, "collection": collection}
                db.execute(
                    "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        doc_id,
                        file,
                        doc.key,
                        doc.title,
                        json.dumps(metadata, ensure_ascii=False),
                        now,
                        collection,
                    ),
                )
                whole = item.paragraph_vectors
                db.executemany(
                    "INSERT INTO paragraphs (id, doc_id, seq, section, text, citations, vector, boxes) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            paragraph_id(doc_id, i),
                            doc_id,
                            i,
                            p.section,
                            p.text,
                            json.dumps(list(p.citations)),
                            None if whole is None else np.asarray(whole[i], dtype=np.float32).tobytes(),
                            json.dumps([box.as_list() for box in p.boxes]) if p.boxes else None,
                        )
                        for i, p in enumerate(doc.paragraphs)
                    ],
                )
                db.executemany(
                    "INSERT INTO bibliography VALUES (?, ?, ?, ?)",
                    [(doc_id, b.key, i, b.text) for i, b in enumerate(doc.bibliography.values())],
                )
                db.executemany(
                    "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            c.id,
                            doc_id,
                            paragraph_id(doc_id, c.paragraph),
                            c.seq,
                            c.text,
                            c.start,
                            c.end,
                            np.asarray(v, dtype=np.float32).tobytes(),
                        )
                        for c, v in zip(item.chunks, item.vectors, strict=True)
                    ],
                )

    def tag_documents(self, file: str, tags: Iterable[str]) -> int:
        """Add tags to every document of a file (its metadata's `tags` list); return how many were tagged.

        Tags change no chunk, so the generation is not bumped and the derived stores stay in step.
        """
        added = {tag for tag in tags if tag}
        if not added:
            return 0
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            rows = db.execute("SELECT id, metadata FROM documents WHERE file = ?", (file,)).fetchall()
            for doc_id, stored in rows:
                metadata = json.loads(stored)
                metadata["tags"] = sorted(set(document_tags(metadata)) | added)
                db.execute(
                    "UPDATE documents SET metadata = ? WHERE id = ?",
                    (json.dumps(metadata, ensure_ascii=False), doc_id),
                )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return len(rows)

    def move_documents(self, file: str, collection: str) -> list[str]:
        """Put every document of a file in `collection`; return the chunk ids of the documents moved.

        A move changes what searches may return, so it is a generation: the derived stores reload their
        collections (BM25 masks, paragraph vectors) and the caller rewrites Chroma's metadata.
        """
        db = self.db
        rows = db.execute(
            "SELECT id, metadata FROM documents WHERE file = ? AND collection != ?", (file, collection)
        ).fetchall()
        if not rows:
            return []
        moved: list[str] = []
        with self.transaction() as db:
            for doc_id, stored in rows:
                metadata = {**json.loads(stored), "collection": collection}
                db.execute(
                    "UPDATE documents SET metadata = ?, collection = ? WHERE id = ?",
                    (json.dumps(metadata, ensure_ascii=False), collection, doc_id),
                )
                moved += [r[0] for r in db.execute("SELECT id FROM chunks WHERE doc_id = ?", (doc_id,))]
        return moved

    def collections(self) -> dict[str, str]:
        """The collection of every stored document, by id."""
        return dict(self.db.execute("SELECT id, collection FROM documents").fetchall())

    def chunk_collections(self, ids: Sequence[str]) -> dict[str, str]:
        """The collection of each given chunk that is stored."""
        found: dict[str, str] = {}
        for batch in _batches(list(ids), 900):
            marks = ",".join("?" * len(batch))
            found.update(
                self.db.execute(
                    "SELECT c.id, d.collection FROM chunks c JOIN documents d ON d.id = c.doc_id "
                    f"WHERE c.id IN ({marks})",
                    batch,
                ).fetchall()
            )
        return found

    def delete_documents(self, ids: Iterable[str], forget_file: str | None = None) -> list[str]:
        """Delete documents (and, by cascade, their paragraphs, bibliography and chunks); return chunk ids.

        With `forget_file`, that file's record goes in the same transaction.
        """
        ids = list(ids)
        removed: list[str] = []
        with self.transaction() as db:
            for batch in _batches(ids, 900):
                marks = ",".join("?" * len(batch))
                removed += [
                    r[0] for r in db.execute(f"SELECT id FROM chunks WHERE doc_id IN ({marks})", batch)
                ]
                db.execute(f"DELETE FROM documents WHERE id IN ({marks})", batch)
            if forget_file is not None:
                db.execute("DELETE FROM files WHERE path = ?", (forget_file,))
        return removed

    def forget_file(self, path: str) -> list[str]:
        """Delete every document of a file and the file record; return the deleted chunk ids."""
        return self.delete_documents(self.document_ids(path), forget_file=path)

    def document(self, doc_id: str, collections: Collections = None) -> DocumentRecord | None:
        """One stored document (in one of `collections`, None: any), or None."""
        where, values = _readable(collections, "collection")
        row = self.db.execute(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id = ?{where}",
            (doc_id, *values),
        ).fetchone()
        return _document(row) if row else None

    def documents(self, collections: Collections = None) -> list[DocumentRecord]:
        """Every stored document (of `collections`, None: any) with when it was ingested, by title."""
        where, values = _readable(collections, "collection")
        rows = self.db.execute(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE 1{where} ORDER BY lower(title), file, id",
            values,
        )
        return [_document(r) for r in rows]

    def find_documents(
        self, text: str, limit: int = 20, collections: Collections = None
    ) -> list[DocumentRecord]:
        """Documents (of `collections`, None: any) whose title or file holds `text`, exact titles first."""
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where, values = _readable(collections, "collection")
        rows = self.db.execute(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents "
            f"WHERE (title LIKE ? ESCAPE '\\' OR file LIKE ? ESCAPE '\\'){where} "
            "ORDER BY lower(title) = lower(?) DESC, title, file LIMIT ?",
            (pattern, pattern, *values, text, limit),
        )
        return [_document(r) for r in rows]

    def paragraphs(self, doc_id: str, collections: Collections = None) -> list[ParagraphRecord]:
        """A document's paragraphs in reading order (none when it is in none of `collections`)."""
        where, values = _readable(collections, "d.collection")
        rows = self.db.execute(
            "SELECT p.id, p.doc_id, p.seq, p.section, p.text, p.citations, p.boxes FROM paragraphs p "
            f"JOIN documents d ON d.id = p.doc_id WHERE p.doc_id = ?{where} ORDER BY p.seq",
            (doc_id, *values),
        )
        return [_paragraph(r) for r in rows]

    def paragraph(self, paragraph_id: str, collections: Collections = None) -> ParagraphRecord | None:
        """One paragraph by id (of a document in one of `collections`), or None."""
        where, values = _readable(collections, "d.collection")
        r = self.db.execute(
            "SELECT p.id, p.doc_id, p.seq, p.section, p.text, p.citations, p.boxes FROM paragraphs p "
            f"JOIN documents d ON d.id = p.doc_id WHERE p.id = ?{where}",
            (paragraph_id, *values),
        ).fetchone()
        return _paragraph(r) if r else None

    def bibliography(self, doc_id: str, collections: Collections = None) -> dict[str, str]:
        """A document's reference list, key -> entry text, in its order (empty outside `collections`)."""
        where, values = _readable(collections, "d.collection")
        rows = self.db.execute(
            "SELECT b.key, b.text FROM bibliography b JOIN documents d ON d.id = b.doc_id "
            f"WHERE b.doc_id = ?{where} ORDER BY b.seq",
            (doc_id, *values),
        )
        return dict(rows.fetchall())

    # chunks ---------------------------------------------------------------------------------------------
    def chunk_ids(self) -> list[str]:
        """Every chunk id, in a stable order."""
        return [r[0] for r in self.db.execute("SELECT id FROM chunks ORDER BY rowid")]

    def chunks(self, ids: Sequence[str], collections: Collections = None) -> dict[str, ChunkRecord]:
        """Chunk records (with title and section) of the given ids that are stored, in `collections`."""
        found: dict[str, ChunkRecord] = {}
        where, values = _readable(collections, "d.collection")
        for batch in _batches(list(ids), 900):
            marks = ",".join("?" * len(batch))
            rows = self.db.execute(
                "SELECT c.id, c.doc_id, c.paragraph_id, c.seq, c.text, d.title, p.section FROM chunks c "
                "CROSS JOIN documents d ON d.id = c.doc_id CROSS JOIN paragraphs p ON p.id = c.paragraph_id "
                f"WHERE c.id IN ({marks}){where}",  # CROSS JOIN: by chunk id first (see _vector_bytes)
                (*batch, *values),
            )
            for r in rows:
                found[r[0]] = ChunkRecord(*r)
        return found

    def vectors(self, ids: Sequence[str], dim: int) -> np.ndarray:
        """The stored vectors of the given chunk ids, one row each, in the given order.

        A chunk deleted meanwhile (by another process) gets a row of zeros: similar to nothing.
        """
        by_id = self._vector_bytes(ids)
        matrix = np.zeros((len(ids), dim), dtype=np.float32)
        for i, chunk_id in enumerate(ids):
            if chunk_id in by_id:
                matrix[i] = np.frombuffer(by_id[chunk_id], dtype=np.float32)
        return matrix

    def stored_vectors(
        self, ids: Sequence[str], dim: int, collections: Collections = None
    ) -> tuple[list[str], np.ndarray]:
        """The given chunk ids still stored (in `collections`), in the given order, and their vectors."""
        by_id = self._vector_bytes(ids, collections)
        kept = [chunk_id for chunk_id in ids if chunk_id in by_id]
        matrix = np.zeros((len(kept), dim), dtype=np.float32)
        for i, chunk_id in enumerate(kept):
            matrix[i] = np.frombuffer(by_id[chunk_id], dtype=np.float32)
        return kept, matrix

    def _vector_bytes(self, ids: Sequence[str], collections: Collections = None) -> dict[str, bytes]:
        by_id: dict[str, bytes] = {}
        where, values = _readable(collections, "d.collection")
        for batch in _batches(list(ids), 900):
            marks = ",".join("?" * len(batch))
            statement = f"SELECT id, vector FROM chunks WHERE id IN ({marks})"
            if where:
                # CROSS JOIN keeps the chunks looked up by id as the outer loop: SQLite's planner otherwise
                # reads every chunk of the collections through the collection index (three collections of
                # ten on 16,600 chunks: 3.5 ms a search's candidates, against 0.2)
                statement = (
                    "SELECT c.id, c.vector FROM chunks c CROSS JOIN documents d ON d.id = c.doc_id "
                    f"WHERE c.id IN ({marks}){where}"
                )
            by_id.update(self.db.execute(statement, (*batch, *values)))
        return by_id

    def iter_chunks(self, batch_size: int = 5000) -> Iterator[list[tuple[str, str, str, str, str, bytes]]]:
        """All chunks in batches: (id, doc_id, paragraph_id, title, text, vector bytes)."""
        cursor = self.db.execute(
            "SELECT c.id, c.doc_id, c.paragraph_id, d.title, c.text, c.vector FROM chunks c "
            "JOIN documents d ON d.id = c.doc_id ORDER BY c.rowid"
        )
        while rows := cursor.fetchmany(batch_size):
            yield rows

    def iter_paragraphs(self) -> Iterator[tuple[str, str, str]]:
        """All paragraphs: (id, document title, text)."""
        yield from self.db.execute(
            "SELECT p.id, d.title, p.text FROM paragraphs p JOIN documents d ON d.id = p.doc_id "
            "ORDER BY p.rowid"
        )

    def paragraph_vectors(self) -> Iterator[tuple[str, bytes]]:
        """Every paragraph vector stored (embedded whole): (paragraph id, vector bytes)."""
        yield from self.db.execute(
            "SELECT id, vector FROM paragraphs WHERE vector IS NOT NULL ORDER BY rowid"
        )

    def counts(self) -> dict[str, int]:
        """How many files, documents, paragraphs, bibliography entries and chunks are stored."""
        count = {}
        for table in ("files", "documents", "paragraphs", "bibliography", "chunks"):
            count[table] = self.db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        return count


DOCUMENT_COLUMNS = "id, file, key, title, metadata, added_at"
"""A document's columns as `_document` reads them."""


def _document(row: tuple[Any, ...]) -> DocumentRecord:
    """A document from its row (DOCUMENT_COLUMNS): metadata JSON, the time it was ingested in UTC."""
    return DocumentRecord(row[0], row[1], row[2], row[3], json.loads(row[4] or "{}"), _utc(row[5]))


def _paragraph(row: tuple[Any, ...]) -> ParagraphRecord:
    """A paragraph from its row: id, doc_id, seq, section, text, citations (JSON), boxes (JSON or NULL)."""
    boxes = tuple(LineBox.of(box) for box in json.loads(row[6])) if row[6] else ()
    return ParagraphRecord(row[0], row[1], row[2], row[3], row[4], tuple(json.loads(row[5])), boxes)


def _utc(seconds: float) -> str:
    """A stored time (seconds since the epoch) as ISO 8601 in UTC."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


def _readable(collections: Collections, column: str) -> tuple[str, tuple[str, ...]]:
    """A WHERE clause's "AND column IN (...)" for `collections` and its values ("" for None: every one)."""
    if collections is None:
        return "", ()
    if not collections:
        return " AND 0", ()
    return f" AND {column} IN ({','.join('?' * len(collections))})", tuple(collections)


def _batches(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
