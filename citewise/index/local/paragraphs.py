"""Paragraph vectors: dense search at paragraph granularity, beside the chunk vectors in Chroma.

A sentence-sized chunk's vector does not carry what its passage as a whole says (the question names the
passage's subject, the chunk only its detail), as a chunk's own BM25 does not; the paragraph BM25 fixed the
lexical side, and these vectors fix the dense side. A paragraph's vector is the one stored with it (the
paragraph embedded whole at ingest, `ChunkingConfig.paragraph_vectors="whole"`), or else the normalised sum
of its chunks' stored vectors (an index made before, or with "pooled"). They are loaded from the document
store when its generation moves on, as BM25 is rebuilt, and searched exactly (a matrix product: 100,000
paragraphs of 384 floats are 150 MB and a few milliseconds). Each reload makes a new `Paragraphs`, so a
search holding the previous one reads it whole. `bench/retrieval.py --pooled-paragraphs` compares the two
kinds on one index.

The chunk vectors read to build them are kept too, up to `EXACT_LIMIT` chunks: dense chunk search is then an
exact matrix product here (every true neighbour found), and Chroma is neither imported nor opened to answer a
question (0.7 s of a cold start). Past the limit, searches go to Chroma's HNSW graph and only the paragraphs
are held: the product reads every vector, and at 100,000 chunks (150 MB) it cost 10-15 ms more a search than
HNSW on this 2-core machine (bench/scale.py), where at SciFact's 43,388 it cost 2 ms.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from citewise.index.local.docstore import DocStore
from citewise.index.records import Collections

logger = logging.getLogger(__name__)

UNREADABLE = -2.0
"""The similarity a search gives the paragraphs of collections it may not see (below any cosine)."""

EXACT_LIMIT = 50_000
"""Up to this many chunks, their vectors are held for exact dense search (77 MB of float32 at the limit)."""


@dataclass(frozen=True)
class Paragraphs:
    """The paragraph vectors as of one document store generation; a reload makes a new one, never edits it.

    Attributes:
        generation: the document store generation they mirror (-1: none loaded yet).
        ids: paragraph ids, in matrix row order.
        matrix: one L2-normalised vector per paragraph.
        chunks: each paragraph's chunk ids, in row order.
        position: row of each paragraph id.
        parent: paragraph id of each chunk id.
        chunk_ids: chunk ids in `chunk_matrix` row order (empty past `EXACT_LIMIT`).
        chunk_matrix: one L2-normalised vector per chunk, or None past `EXACT_LIMIT` (Chroma searches).
        names: the collections' names, in the order `paragraph_collection` and `chunk_collection` number them.
        paragraph_collection: the number of each paragraph's collection, in `ids` order.
        chunk_collection: the number of each held chunk's collection, in `chunk_ids` order.
    """

    generation: int
    ids: list[str]
    matrix: np.ndarray
    chunks: list[list[str]]
    position: dict[str, int]
    parent: dict[str, str]
    chunk_ids: list[str] = field(default_factory=list)
    chunk_matrix: np.ndarray | None = None
    names: list[str] = field(default_factory=list)
    paragraph_collection: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    chunk_collection: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))

    def readable(self, collections: Collections, chunks: bool = False) -> np.ndarray | None:
        """Which paragraphs (or held chunks) are in `collections`, as a boolean mask; None for every one."""
        if collections is None:
            return None
        wanted = [n for n, name in enumerate(self.names) if name in collections]
        return np.isin(self.chunk_collection if chunks else self.paragraph_collection, wanted)

    @property
    def exact(self) -> bool:
        """Whether the chunk vectors are held here (dense chunk search needs no Chroma)."""
        return self.chunk_matrix is not None

    def nearest_chunks(
        self, query_vector: np.ndarray, k: int, collections: Collections = None
    ) -> list[tuple[str, float]]:
        """The k chunks of `collections` nearest the query as (id, cosine), best first: exact.

        The chunks of other collections are left out before ranking (a search of one collection still
        finds k when it holds k).
        """
        if self.chunk_matrix is None:
            raise RuntimeError("the chunk vectors are not held (past EXACT_LIMIT): search Chroma")
        if not self.chunk_ids or k < 1:
            return []
        similarities = self.chunk_matrix @ query_vector.astype(np.float32)
        rows = np.arange(len(self.chunk_ids))
        mask = self.readable(collections, chunks=True)
        if mask is not None:
            rows = rows[mask]
            similarities = similarities[mask]
        return [(self.chunk_ids[rows[i]], float(similarities[i])) for i in _best(similarities, k)]

    def similarities(self, query_vector: np.ndarray, collections: Collections = None) -> np.ndarray:
        """Every paragraph's cosine similarity to the query, in `ids` order (-2 outside `collections`)."""
        similarities = self.matrix @ query_vector.astype(np.float32)
        mask = self.readable(collections)
        if mask is not None:
            similarities[~mask] = UNREADABLE
        return similarities

    def of_chunks(self, chunk_ids: Sequence[str], similarities: np.ndarray) -> np.ndarray:
        """The similarity of each given chunk's paragraph (0 for a chunk these vectors do not hold)."""
        found = [self.position.get(self.parent.get(c, ""), -1) for c in chunk_ids]
        return np.array(
            [similarities[i] if i >= 0 and similarities[i] > UNREADABLE else 0.0 for i in found],
            dtype=np.float32,
        )

    def top_chunks(self, similarities: np.ndarray, limit: int) -> list[str]:
        """The chunks of the most similar paragraphs, best paragraph first, `limit` chunks at most.

        Capped in chunks, not paragraphs: the chunks of 100 abstracts are about 800, every one a vector to
        read and score, and the cap changed no retrieval figure (SciFact nDCG@10 0.743 either way, HotpotQA
        R@5 0.820; bench/retrieval.py) while it cut the paragraph vectors' added search time.
        """
        if not len(self.ids) or limit < 1:
            return []
        chunks: list[str] = []
        for i in _best(similarities, limit):
            if similarities[i] <= UNREADABLE:  # the rest are of collections the search may not see
                break
            chunks.extend(self.chunks[i][: limit - len(chunks)])
            if len(chunks) >= limit:
                break
        return chunks


class ParagraphVectors:
    """The paragraph vectors of one index, reloaded lazily whenever the document store's generation moves."""

    def __init__(
        self, docstore: DocStore, dim: int, pooled_only: bool = False, exact_limit: int = EXACT_LIMIT
    ) -> None:
        self.docstore = docstore
        self.pooled_only = pooled_only
        self.dim = dim
        self.exact_limit = exact_limit
        self._current = Paragraphs(-1, [], np.zeros((0, dim), dtype=np.float32), [], {}, {})
        self._lock = threading.Lock()

    def current(self) -> Paragraphs:
        """The vectors as of the document store's generation (reloaded when it moved on)."""
        generation = self.docstore.generation
        if self._current.generation != generation:
            with self._lock:
                if self._current.generation != generation:
                    self._current = self._build(generation)
        return self._current

    def _build(self, generation: int) -> Paragraphs:
        sums: dict[str, np.ndarray] = {}
        members: dict[str, list[str]] = {}
        parent: dict[str, str] = {}
        exact = self.docstore.counts()["chunks"] <= self.exact_limit
        chunk_ids: list[str] = []
        chunk_vectors: list[np.ndarray] = []
        of_document = self.docstore.collections()
        names = sorted(set(of_document.values()))
        number = {name: n for n, name in enumerate(names)}
        collection_of: dict[str, int] = {}  # each paragraph's
        chunk_collection: list[int] = []
        for rows in self.docstore.iter_chunks():
            for chunk_id, doc_id, paragraph_id, _, _, vector in rows:
                own = np.frombuffer(vector, dtype=np.float32)
                code = number.get(of_document.get(doc_id, ""), -1)  # -1: a document deleted meanwhile
                collection_of[paragraph_id] = code
                if exact:
                    chunk_ids.append(chunk_id)
                    chunk_vectors.append(own)
                    chunk_collection.append(code)
                if paragraph_id in sums:
                    sums[paragraph_id] = sums[paragraph_id] + own
                else:
                    sums[paragraph_id] = own.copy()
                members.setdefault(paragraph_id, []).append(chunk_id)
                parent[chunk_id] = paragraph_id
        if not self.pooled_only:
            for paragraph_id, vector in self.docstore.paragraph_vectors():
                if paragraph_id in sums:
                    sums[paragraph_id] = np.frombuffer(vector, dtype=np.float32)
        ids = list(sums)
        chunk_matrix = self._normalised(chunk_vectors) if exact else None
        logger.debug(
            "paragraph vectors built: %d paragraphs, %d chunks held, generation %d",
            len(ids),
            len(chunk_ids),
            generation,
        )
        return Paragraphs(
            generation,
            ids,
            self._normalised([sums[p] for p in ids]),
            [members[p] for p in ids],
            {p: i for i, p in enumerate(ids)},
            parent,
            chunk_ids,
            chunk_matrix,
            names,
            np.array([collection_of[p] for p in ids], dtype=np.int32),
            np.array(chunk_collection, dtype=np.int32),
        )

    def _normalised(self, rows: list[np.ndarray]) -> np.ndarray:
        """The rows stacked and L2-normalised (a zero row stays zero), float32."""
        matrix = np.stack(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (matrix / norms).astype(np.float32)


def _best(similarities: np.ndarray, count: int) -> np.ndarray:
    """Positions of the `count` highest similarities, highest first (ties in position order)."""
    count = min(count, len(similarities))
    best = np.argpartition(-similarities, count - 1)[:count]
    return best[np.argsort(-similarities[best], kind="stable")]
