"""Writing the shared store's documents: their rows in every table, removals, tags, and BM25 upkeep.

Inside a transaction a caller opens (a work step's, `citewise.index.shared.queue`, or a removal's), a
document's paragraphs, bibliography, chunks, vectors and lexical rows are inserted or deleted together.
Vectors in a Chroma server are outside those transactions: deleted ones are noted (`Forgotten`) and
deleted once PostgreSQL committed (`Writes._forget`), under the documents' advisory locks.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from citewise.index.chunking import ChunkedDocument, ChunkingConfig, chunk_input
from citewise.index.document import Document
from citewise.index.policy import where
from citewise.index.records import DEFAULT_COLLECTION, IngestReport, document_tags, paragraph_id
from citewise.index.shared.chromavectors import ChromaVectors
from citewise.index.shared.pglexical import PgLexical
from citewise.index.shared.reads import Reads

REWEIGHT_TOLERANCE = 0.01
"""BM25 weights written under an average chunk length more than 1% off today's are rewritten (`reweight`)."""


class Writes(Reads):
    """The store's document writes (the queue's work steps write through them)."""

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
                forgotten = Forgotten()
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

    def remove_documents(self, doc_ids: Iterable[str]) -> IngestReport:
        """Delete the given documents (by id), each with its rows in every table, in a transaction of its own.

        As `Index.remove_documents` does on the local tier: the other documents of its file stay, and the
        file's record goes with its last document. The file's documents are locked first, so two removals
        of a file's last two documents do not both leave its record behind. An id the store does not hold
        is listed as skipped.
        """
        started = time.perf_counter()
        report = IngestReport()
        for doc_id in dict.fromkeys(doc_ids):
            forgotten = Forgotten()
            with self.conn.transaction(), self.conn.cursor() as cur:
                row = cur.execute(self._sql("SELECT file FROM {documents} WHERE id = %s"), [doc_id])
                file = (row.fetchone() or [None])[0]
                statement = self._sql("SELECT id FROM {documents} WHERE file = %s ORDER BY id FOR UPDATE")
                same = {r[0] for r in cur.execute(statement, [file])} if file else set()
                if doc_id not in same:  # never stored, or removed meanwhile
                    report.skipped.append((doc_id, "no such document in the store"))
                    continue
                counted = cur.execute(
                    self._sql("SELECT count(*) FROM {chunks} WHERE doc_id = %s"), [doc_id]
                ).fetchone()
                report.documents_removed += self._delete(cur, [doc_id], forgotten)
                report.chunks_removed += int(counted[0]) if counted else 0
                if same == {doc_id}:  # its file's last document: the file may be ingested again
                    cur.execute(self._sql("DELETE FROM {files} WHERE path = %s"), [file])
                    report.files += 1
            self._forget(forgotten)  # Chroma's copies of what the commit removed
        report.seconds = time.perf_counter() - started
        return report

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

    def _delete(self, cur: psycopg.Cursor[Any], doc_ids: Sequence[str], forgotten: Forgotten) -> int:
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
        self,
        cur: psycopg.Cursor[Any],
        documents: list[tuple[Document, DocumentRows]],
        file: str,
        skipped: list[tuple[str, str]],
        collection: str | None = None,
    ) -> set[str]:
        """Insert the documents of `file` no other file holds, with all their rows; returns the ids inserted.

        They go to `collection` (None: the default one). A document another file stored meanwhile is added
        to `skipped` as a duplicate.
        """
        collection = collection or DEFAULT_COLLECTION
        inserted: set[str] = set()
        for doc, _ in documents:
            cur.execute(
                self._sql(
                    """INSERT INTO {documents} (id, file, key, title, metadata, collection)
                    VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING RETURNING id"""
                ),
                [
                    doc.id,
                    file,
                    doc.key,
                    doc.title,
                    Jsonb({**doc.metadata, "collection": collection}),
                    collection,
                ],
            )
            if cur.fetchone() is None:  # another worker stored it a moment ago, from another file
                skipped.append((where(file, doc), "duplicate of a document stored meanwhile"))
            else:
                inserted.add(doc.id)
        kept = [rows for doc, rows in documents if doc.id in inserted]
        if not kept:
            return inserted

        def every(name: str) -> list[Any]:
            return [value for rows in kept for value in getattr(rows, name)]

        cur.executemany(
            self._sql(
                "INSERT INTO {paragraphs} (id, doc_id, seq, section, text, citations, boxes) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)"
            ),
            every("paragraphs"),
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

        def placed(metas: list[dict[str, str | int]]) -> list[dict[str, str | int]]:
            return [{**meta, "collection": collection} for meta in metas]

        self.vectors.upsert(every("chunk_ids"), chunk_vectors, metadatas=placed(every("chunk_meta")))
        paragraph_vectors = np.asarray(every("paragraph_vectors"), dtype=np.float32).reshape(-1, self.dim)
        self.paragraph_vectors.upsert(
            every("vector_paragraph_ids"), paragraph_vectors, metadatas=placed(every("paragraph_meta"))
        )
        chunk_ids, paragraph_ids = every("chunk_ids"), every("paragraph_ids")
        self.lexical.add(
            chunk_ids, every("chunk_texts"), every("chunk_tokens"), [collection] * len(chunk_ids)
        )
        self.paragraph_lexical.add(
            paragraph_ids,
            every("paragraph_texts"),
            every("paragraph_tokens"),
            [collection] * len(paragraph_ids),
        )
        return inserted

    def _move(self, cur: psycopg.Cursor[Any], file: str, collection: str) -> int:
        """Put every document of `file` in `collection`, in every table (inside the caller's transaction).

        Vectors in a Chroma server get their metadata rewritten at once (outside the transaction: a search
        meanwhile reads the new collection's filter there, and PostgreSQL's old one gates its pool). Returns
        how many documents moved.
        """
        rows = cur.execute(
            self._sql("SELECT id, metadata FROM {documents} WHERE file = %s AND collection <> %s FOR UPDATE"),
            [file, collection],
        ).fetchall()
        if not rows:
            return 0
        doc_ids = [doc_id for doc_id, _ in rows]
        for doc_id, metadata in rows:
            cur.execute(
                self._sql("UPDATE {documents} SET metadata = %s, collection = %s WHERE id = %s"),
                [Jsonb({**metadata, "collection": collection}), collection, doc_id],
            )
        chunk_ids = [
            r[0] for r in cur.execute(self._sql("SELECT id FROM {chunks} WHERE doc_id = ANY(%s)"), [doc_ids])
        ]
        paragraph_ids = [
            r[0]
            for r in cur.execute(self._sql("SELECT id FROM {paragraphs} WHERE doc_id = ANY(%s)"), [doc_ids])
        ]
        self.vectors.set_collection(chunk_ids, collection)
        self.paragraph_vectors.set_collection(paragraph_ids, collection)
        self.lexical.set_collection(chunk_ids, collection)
        self.paragraph_lexical.set_collection(paragraph_ids, collection)
        return len(rows)

    def _lock_documents(self, cur: psycopg.Cursor[Any], doc_ids: Sequence[str]) -> None:
        """Take the documents' advisory locks for the caller's transaction, in the order given (sort it)."""
        key = f"citewise.pgstore.document:{self.prefix}:"
        for doc_id in doc_ids:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [key + doc_id])

    def _forget(self, forgotten: Forgotten) -> int:
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
        forgotten = Forgotten()
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

    def fold(self) -> None:
        """Fold the pending BM25 df and count changes (`PgLexical.fold`); scores stay the same.

        Another worker folding meanwhile folds these too, or the next fold will.
        """
        for lexical in (self.lexical, self.paragraph_lexical):
            lexical.fold()
        self._unfolded = 0

    def reweight(self, tolerance: float = REWEIGHT_TOLERANCE) -> int:
        """Rewrite the BM25 weights of chunks and paragraphs written under an average length now off by more.

        A weight freezes the average chunk length of its time (`PgLexical`); ingest moves the average, and
        scores drift from bm25s's by up to that share. Workers call this when the queue is empty.

        Returns:
            How many chunks and paragraphs were rewritten.
        """
        return sum(lexical.reweight(tolerance) for lexical in (self.lexical, self.paragraph_lexical))


@dataclass
class Forgotten:
    """Vectors in Chroma of documents a transaction removed, to delete once it commits (`PgStore._forget`)."""

    documents: set[str] = field(default_factory=set)
    chunks: set[str] = field(default_factory=set)
    paragraphs: set[str] = field(default_factory=set)

    def add(self, doc_ids: Iterable[str], chunk_ids: Iterable[str], paragraph_ids: Iterable[str]) -> None:
        """Note documents and their vectors' ids."""
        self.documents.update(doc_ids)
        self.chunks.update(chunk_ids)
        self.paragraphs.update(paragraph_ids)


@dataclass
class DocumentRows:
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


def document_rows(one: ChunkedDocument, chunking: ChunkingConfig, lexical: PgLexical) -> DocumentRows:
    """The rows of a chunked document: texts ranked as the local tier ranks them, tokens, vectors."""
    doc = one.document
    rows = DocumentRows(doc.id)
    for seq, paragraph in enumerate(doc.paragraphs):
        pid = paragraph_id(doc.id, seq)
        citations = Jsonb(list(paragraph.citations))
        boxes = Jsonb([box.as_list() for box in paragraph.boxes]) if paragraph.boxes else None
        rows.paragraphs.append((pid, doc.id, seq, paragraph.section, paragraph.text, citations, boxes))
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
