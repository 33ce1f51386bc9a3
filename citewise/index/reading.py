"""The reading API both index tiers give: what the layers above an index (graph, CLI, evaluation) may ask.

`citewise.index.Index` (the local tier: SQLite, Chroma, bm25s under one directory) and
`citewise.index.shared.index.SharedIndex` (the shared tier: one PostgreSQL database) both satisfy
`SearchIndex`, so code that only reads takes either. Writing goes through `citewise.index.writer.IndexWriter`:
`Index.ingest` under the directory's write lock, the shared tier's queue and workers
(`citewise.index.shared.writer`).

Documents belong to collections. `search` and every read by id take `collections`: None sees every one (an
administrator, the loopback user), a tuple only those (every store filters inside its own query, see the
tiers), () nothing. `Readable` is an index as one asker may read it: the runs of a user are handed one
(`citewise.core.indexes.open_index`), so no step can forget the filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from citewise.index.embeddings import Embedder
from citewise.index.records import (
    ChunkRecord,
    Collections,
    DocumentRecord,
    Hit,
    IndexStats,
    ParagraphRecord,
)
from citewise.index.scoring import PARAGRAPH_DENSE_WEIGHT, PARAGRAPH_WEIGHT, Fusion, SearchMode


class SearchIndex(Protocol):
    """A searchable, readable index of either tier; safe to use from several threads at once.

    Attributes:
        embedder: the index's embedding model (queries and answer-time texts are embedded with it).
    """

    embedder: Embedder

    def search(
        self,
        query: str,
        k: int = ...,
        mode: SearchMode = ...,
        *,
        alpha: float = ...,
        fusion: Fusion = ...,
        candidates: int = ...,
        redundancy: float = ...,
        paragraph_weight: float = ...,
        paragraph_dense_weight: float = ...,
        collections: Collections = None,
    ) -> list[Hit]:
        """The top-k chunks of `collections` for a query (`citewise.index.scoring` ranks them alike)."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors of texts read at answer time, with the index's model (recent ones remembered)."""
        ...

    def chunk_vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The stored vectors of chunks, one row per id in order (zeros for one deleted meanwhile)."""
        ...

    def tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's terms as the index's BM25 reads them (stemmed, stopwords out)."""
        ...

    def idf(self, terms: Sequence[str]) -> list[float]:
        """Each term's inverse document frequency over the index's paragraphs, log((N + 1) / (df + 0.5))."""
        ...

    def document(self, doc_id: str, collections: Collections = None) -> DocumentRecord | None:
        """A stored document's title, file and metadata."""
        ...

    def documents(self, collections: Collections = None) -> list[DocumentRecord]:
        """Every stored document of `collections` (with when it was ingested), by title."""
        ...

    def paragraph(self, paragraph_id: str, collections: Collections = None) -> ParagraphRecord | None:
        """One stored paragraph."""
        ...

    def paragraphs(self, doc_id: str, collections: Collections = None) -> list[ParagraphRecord]:
        """A stored document's paragraphs in order."""
        ...

    def chunks(self, ids: Sequence[str], collections: Collections = None) -> dict[str, ChunkRecord]:
        """Stored chunks by id."""
        ...

    def bibliography(self, doc_id: str, collections: Collections = None) -> dict[str, str]:
        """A stored document's reference list."""
        ...

    def stats(self) -> IndexStats:
        """How much each store holds."""
        ...

    def empty(self) -> bool:
        """Whether the index holds no chunk (cheaper than `stats`: it counts the records alone)."""
        ...

    def refresh(self) -> None:
        """See what writers committed since the last look (searches do it themselves)."""
        ...

    def close(self) -> None:
        """Release the index's files or connections."""
        ...


class Readable:
    """An index as one asker may read it: every search and read by id is of `collections` only.

    Args:
        index: the index (either tier).
        collections: what the asker may read (None: every collection; (): none).
    """

    def __init__(self, index: SearchIndex, collections: Collections) -> None:
        self.index = index
        self.collections = None if collections is None else tuple(collections)
        self.embedder = index.embedder

    def __repr__(self) -> str:
        return f"Readable({self.index!r}, {self.collections!r})"

    def _within(self, collections: Collections) -> Collections:
        """The asker's collections, narrowed to the ones a call names (never widened)."""
        if collections is None:
            return self.collections
        if self.collections is None:
            return tuple(collections)
        return tuple(c for c in collections if c in self.collections)

    def search(
        self,
        query: str,
        k: int = 10,
        mode: SearchMode = "hybrid",
        *,
        alpha: float = 0.5,
        fusion: Fusion = "minmax",
        candidates: int = 100,
        redundancy: float = 0.9,
        paragraph_weight: float = PARAGRAPH_WEIGHT,
        paragraph_dense_weight: float = PARAGRAPH_DENSE_WEIGHT,
        collections: Collections = None,
    ) -> list[Hit]:
        """The index's search, of the asker's collections."""
        return self.index.search(
            query,
            k,
            mode,
            alpha=alpha,
            fusion=fusion,
            candidates=candidates,
            redundancy=redundancy,
            paragraph_weight=paragraph_weight,
            paragraph_dense_weight=paragraph_dense_weight,
            collections=self._within(collections),
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors of texts read at answer time."""
        return self.index.embed(texts)

    def chunk_vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The stored vectors of the asker's chunks (zeros for any other, as for one deleted)."""
        readable = self.index.chunks(ids, self.collections) if self.collections is not None else None
        vectors = self.index.chunk_vectors(ids)
        if readable is not None:
            for row, chunk_id in enumerate(ids):
                if chunk_id not in readable:
                    vectors[row] = 0.0
        return vectors

    def tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's terms as the index's BM25 reads them."""
        return self.index.tokens(texts)

    def idf(self, terms: Sequence[str]) -> list[float]:
        """Each term's inverse document frequency over the index's paragraphs."""
        return self.index.idf(terms)

    def document(self, doc_id: str, collections: Collections = None) -> DocumentRecord | None:
        """A document of the asker's collections, or None."""
        return self.index.document(doc_id, self._within(collections))

    def documents(self, collections: Collections = None) -> list[DocumentRecord]:
        """Every document of the asker's collections."""
        return self.index.documents(self._within(collections))

    def paragraph(self, paragraph_id: str, collections: Collections = None) -> ParagraphRecord | None:
        """A paragraph of the asker's collections, or None."""
        return self.index.paragraph(paragraph_id, self._within(collections))

    def paragraphs(self, doc_id: str, collections: Collections = None) -> list[ParagraphRecord]:
        """A document's paragraphs, when it is of the asker's collections."""
        return self.index.paragraphs(doc_id, self._within(collections))

    def chunks(self, ids: Sequence[str], collections: Collections = None) -> dict[str, ChunkRecord]:
        """The chunks of the asker's collections among `ids`."""
        return self.index.chunks(ids, self._within(collections))

    def bibliography(self, doc_id: str, collections: Collections = None) -> dict[str, str]:
        """A document's reference list, when it is of the asker's collections."""
        return self.index.bibliography(doc_id, self._within(collections))

    def stats(self) -> IndexStats:
        """How much the whole index holds (counts only)."""
        return self.index.stats()

    def empty(self) -> bool:
        """Whether the index holds no chunk."""
        return self.index.empty()

    def refresh(self) -> None:
        """See what writers committed since the last look."""
        self.index.refresh()

    def close(self) -> None:
        """Nothing: the index is the way in's, and it closes it."""


def readable(index: SearchIndex, collections: Collections) -> SearchIndex:
    """`index` as an asker of `collections` reads it (the index itself for None: every collection)."""
    return index if collections is None else Readable(index, collections)
