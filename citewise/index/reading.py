"""The reading API both index tiers give: what the layers above an index (graph, CLI, evaluation) may ask.

`citewise.index.Index` (the local tier: SQLite, Chroma, bm25s under one directory) and
`citewise.index.shared.index.SharedIndex` (the shared tier: one PostgreSQL database) both satisfy
`SearchIndex`, so code that only reads takes either. Writing goes through `citewise.index.writer.IndexWriter`:
`Index.ingest` under the directory's write lock, the shared tier's queue and workers
(`citewise.index.shared.writer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from citewise.index.embeddings import Embedder
from citewise.index.records import ChunkRecord, DocumentRecord, Hit, IndexStats, ParagraphRecord
from citewise.index.scoring import Fusion, SearchMode


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
    ) -> list[Hit]:
        """The top-k chunks for a query (`citewise.index.scoring` ranks them, in both tiers alike)."""
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

    def document(self, doc_id: str) -> DocumentRecord | None:
        """A stored document's title, file and metadata."""
        ...

    def paragraph(self, paragraph_id: str) -> ParagraphRecord | None:
        """One stored paragraph."""
        ...

    def paragraphs(self, doc_id: str) -> list[ParagraphRecord]:
        """A stored document's paragraphs in order."""
        ...

    def chunks(self, ids: Sequence[str]) -> dict[str, ChunkRecord]:
        """Stored chunks by id."""
        ...

    def bibliography(self, doc_id: str) -> dict[str, str]:
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
