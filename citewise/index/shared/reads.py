"""Reading the shared store: records by id, the candidates a search ranks, and what each table holds.

What `SharedIndex` (`citewise.index.shared.index`) and the ingest policy (`citewise.index.policy.Recorded`)
ask of a `PgStore`; every read sees what is committed (a caller's snapshot, if it holds one).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from datetime import UTC
from typing import Any

import numpy as np
from psycopg import sql
from psycopg.pq import TransactionStatus

from citewise.index.document import LineBox
from citewise.index.records import ChunkRecord, Collections, DocumentRecord, IndexStats, ParagraphRecord
from citewise.index.shared.schema import Schema

READABLE = sql.SQL("(%(collections)s::text[] IS NULL OR d.collection = ANY(%(collections)s::text[]))")
"""A read's filter: the document (``d``) is in one of the collections given (NULL: any)."""


def _listed(collections: Collections) -> list[str] | None:
    return None if collections is None else list(collections)


def _paragraph(row: Sequence[Any]) -> ParagraphRecord:
    """A paragraph from its row: id, doc_id, seq, section, text, citations, boxes (jsonb, or NULL)."""
    boxes = tuple(LineBox.of(box) for box in row[6]) if row[6] else ()
    return ParagraphRecord(row[0], row[1], row[2], row[3], row[4], tuple(row[5]), boxes)


def _record(row: Sequence[Any]) -> DocumentRecord:
    """A document's record from its row (id, file, key, title, metadata, added_at)."""
    return DocumentRecord(
        row[0], row[1], row[2], row[3], row[4], row[5].astimezone(UTC).isoformat("T", "seconds")
    )


class Reads(Schema):
    """The store's reads (the write and queue halves build on them)."""

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

    def document(self, doc_id: str, collections: Collections = None) -> DocumentRecord | None:
        """One stored document (in one of `collections`, None: any), or None."""
        row = self.conn.execute(
            self._sql(
                "SELECT id, file, key, title, metadata, added_at FROM {documents} AS d "
                "WHERE id = %(id)s AND {readable}",
                readable=READABLE,
            ),
            {"id": doc_id, "collections": _listed(collections)},
        ).fetchone()
        return _record(row) if row else None

    def documents(self, collections: Collections = None) -> list[DocumentRecord]:
        """Every stored document (of `collections`, None: any) with when it was ingested, by title."""
        rows = self.conn.execute(
            self._sql(
                "SELECT id, file, key, title, metadata, added_at FROM {documents} AS d "
                'WHERE {readable} ORDER BY lower(title) COLLATE "C", file COLLATE "C", id COLLATE "C"',
                readable=READABLE,
            ),
            {"collections": _listed(collections)},
        ).fetchall()
        return [_record(row) for row in rows]

    def paragraphs(self, doc_id: str, collections: Collections = None) -> list[ParagraphRecord]:
        """A document's paragraphs in reading order (none outside `collections`)."""
        rows = self.conn.execute(
            self._sql(
                """SELECT p.id, p.doc_id, p.seq, p.section, p.text, p.citations, p.boxes
                FROM {paragraphs} AS p
                JOIN {documents} AS d ON d.id = p.doc_id WHERE p.doc_id = %(id)s AND {readable}
                ORDER BY p.seq""",
                readable=READABLE,
            ),
            {"id": doc_id, "collections": _listed(collections)},
        )
        return [_paragraph(row) for row in rows]

    def paragraph(self, paragraph_id: str, collections: Collections = None) -> ParagraphRecord | None:
        """One paragraph by id (of a document in `collections`), or None."""
        row = self.conn.execute(
            self._sql(
                """SELECT p.id, p.doc_id, p.seq, p.section, p.text, p.citations, p.boxes
                FROM {paragraphs} AS p
                JOIN {documents} AS d ON d.id = p.doc_id WHERE p.id = %(id)s AND {readable}""",
                readable=READABLE,
            ),
            {"id": paragraph_id, "collections": _listed(collections)},
        ).fetchone()
        return _paragraph(row) if row else None

    def bibliography(self, doc_id: str, collections: Collections = None) -> dict[str, str]:
        """A document's reference list, key -> entry text, in its order (empty outside `collections`)."""
        statement = self._sql(
            """SELECT b.key, b.text FROM {bibliography} AS b JOIN {documents} AS d ON d.id = b.doc_id
            WHERE b.doc_id = %(id)s AND {readable} ORDER BY b.seq""",
            readable=READABLE,
        )
        return dict(
            self.conn.execute(statement, {"id": doc_id, "collections": _listed(collections)}).fetchall()
        )

    def chunks(self, ids: Sequence[str], collections: Collections = None) -> dict[str, ChunkRecord]:
        """Chunk records (with title and section) of the given ids that are stored, in `collections`."""
        rows = self.conn.execute(
            self._sql(
                """SELECT c.id, c.doc_id, c.paragraph_id, c.seq, c.text, d.title, p.section FROM {chunks} AS c
                JOIN {documents} AS d ON d.id = c.doc_id JOIN {paragraphs} AS p ON p.id = c.paragraph_id
                WHERE c.id = ANY(%(ids)s) AND {readable}""",
                readable=READABLE,
            ),
            {"ids": list(ids), "collections": _listed(collections)},
        )
        return {r[0]: ChunkRecord(*r) for r in rows}

    def readable_chunks(self, ids: Sequence[str], collections: Collections) -> set[str]:
        """The given chunk ids that are stored, of documents in `collections`."""
        statement = self._sql(
            """SELECT c.id FROM {chunks} AS c JOIN {documents} AS d ON d.id = c.doc_id
            WHERE c.id = ANY(%(ids)s) AND {readable}""",
            readable=READABLE,
        )
        rows = self.conn.execute(statement, {"ids": list(ids), "collections": _listed(collections)})
        return {r[0] for r in rows}

    def stored_vectors(
        self, ids: Sequence[str], collections: Collections = None
    ) -> tuple[list[str], np.ndarray]:
        """The given chunk ids stored (in `collections`), in the given order, and their vectors (halfvec).

        With the vectors in Chroma, only ids PostgreSQL holds count (in the caller's snapshot, if any): a
        search's candidates all pass through here, so a killed worker's orphans are never returned; nor is
        a chunk of a collection the search may not see.
        """
        if self.vectors_in_chroma or collections is not None:
            held = self.readable_chunks(ids, collections)
            ids = [key for key in ids if key in held]
        found = self.vectors.vectors(ids)
        kept = [key for key in ids if key in found]
        matrix = np.zeros((len(kept), self.dim), dtype=np.float32)
        for n, key in enumerate(kept):
            matrix[n] = found[key]
        return kept, matrix

    def dense(self, vector: np.ndarray, k: int, collections: Collections = None) -> list[tuple[str, float]]:
        """The k chunks (of `collections`) nearest a query vector: (chunk id, cosine), best first (HNSW)."""
        return self.vectors.search(vector, k, collections)

    def dense_paragraphs(
        self, vector: np.ndarray, k: int, collections: Collections = None
    ) -> list[tuple[str, float]]:
        """The k paragraphs (of `collections`) nearest a query vector: (id, cosine), best first (HNSW)."""
        return self.paragraph_vectors.search(vector, k, collections)

    def bm25(self, query: str, k: int, collections: Collections = None) -> list[tuple[str, float]]:
        """The k best chunks (of `collections`) by BM25: (chunk id, score), best first; sharing a term."""
        return self.lexical.search(query, k, collections=collections)

    def bm25_paragraphs(self, query: str, k: int, collections: Collections = None) -> list[tuple[str, float]]:
        """The k best paragraphs (of `collections`) by BM25: (id, score), best first; sharing a term."""
        return self.paragraph_lexical.search(query, k, collections=collections)

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
