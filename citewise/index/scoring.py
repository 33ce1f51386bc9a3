"""One search's scoring, shared by both index tiers: the retrievers' candidates in, ranked hits out.

A search asks its stores for candidates (the local tier: bm25s, the paragraph vectors in numpy and Chroma;
the shared tier: PostgreSQL, `citewise.index.shared`) and hands them here, with a `PoolReader` that reads
what scoring needs of the pooled candidates: their stored vectors, their lexical scores, their paragraphs'
similarity to the query and their records. Everything after that is this module's, for both tiers alike:

1. The pool is the union of the lexical top, the dense top and the chunks of the paragraphs nearest the
   query (the widening), in that order; a chunk that is no longer stored drops out of every list.
2. A chunk's dense score is its stored vector's cosine with the query, mixed with its paragraph's by
   `paragraph_dense_weight`; its lexical score is the tier's (BM25 of the chunk and of its paragraph, each
   divided by the query's best, mixed by `paragraph_weight`; see `blend_lexical`).
3. Fusion: the lexical list alone (bm25), the dense scores of the dense candidates (dense), min-max weighted
   fusion of both scores over the pool, or reciprocal-rank fusion of the two rankings.
4. Ranking (ties by chunk id), then the redundancy filter keeps the first k that are not near-copies of a
   better hit.

So the tiers can differ only in what their stores return (the exactness of their dense search, float
widths), never in the arithmetic: `Index.search` and `SharedIndex.search` both end in `score_hits`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from citewise.index.fusion import drop_redundant, rank, reciprocal_rank_fusion, weighted_fusion
from citewise.index.records import ChunkRecord, Hit

SearchMode = Literal["hybrid", "bm25", "dense"]
Fusion = Literal["minmax", "rrf"]
PARAGRAPH_WEIGHT = 0.7
"""The default share of a chunk's lexical score that comes from its paragraph's BM25."""
PARAGRAPH_DENSE_WEIGHT = 0.5
"""The default share of a chunk's dense score that comes from its paragraph's vector."""


def check_search(k: int, mode: str, fusion: str) -> None:
    """Refuse a search's arguments that no tier answers.

    Raises:
        ValueError: k below 1, or an unknown mode or fusion.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if mode not in ("hybrid", "bm25", "dense"):
        raise ValueError(f"mode must be hybrid, bm25 or dense, got {mode!r}")
    if fusion not in ("minmax", "rrf"):
        raise ValueError(f"fusion must be minmax or rrf, got {fusion!r}")


def blend_lexical(own: np.ndarray, paragraph: np.ndarray, weight: float) -> np.ndarray:
    """A chunk's lexical score: (1 - weight) * its BM25 / the best + weight * its paragraph's BM25 / the best.

    Args:
        own: each chunk's BM25, already divided by the query's best chunk BM25 (so in [0, 1]).
        paragraph: the BM25 of each chunk's paragraph, divided by the query's best paragraph BM25 (0 for a
            paragraph sharing no term with the query).
        weight: the paragraph's share (`paragraph_weight`).
    """
    return (1 - weight) * own + weight * paragraph


@dataclass(frozen=True)
class Candidates:
    """What one search's retrievers found, each list best first.

    Attributes:
        lexical: the best chunks by lexical score, (chunk id, score in [0, 1]), only scores above 0 (empty in
            dense mode).
        semantic: the chunks nearest the query, (chunk id, cosine similarity) (empty in bm25 mode).
        widened: the chunks of the paragraphs nearest the query, best paragraph first (empty in bm25 mode, or
            when `paragraph_dense_weight` is 0).
    """

    lexical: list[tuple[str, float]] = field(default_factory=list)
    semantic: list[tuple[str, float]] = field(default_factory=list)
    widened: list[str] = field(default_factory=list)


class PoolReader(Protocol):
    """What scoring reads of the pooled candidates, from one tier's stores as of this search."""

    def stored_vectors(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """The given chunk ids still stored, in the given order, and their L2-normalised vectors."""
        ...

    def lexical_scores(self, ids: Sequence[str]) -> list[float]:
        """Each chunk's lexical score (see `blend_lexical`; 0 when it shares no term with the query)."""
        ...

    def paragraph_similarities(self, ids: Sequence[str]) -> np.ndarray:
        """The cosine similarity to the query of each chunk's paragraph (0 where it has no vector)."""
        ...

    def chunks(self, ids: Sequence[str]) -> dict[str, ChunkRecord]:
        """The records of the given chunk ids that are stored."""
        ...


def score_hits(
    query_vector: np.ndarray,
    candidates: Candidates,
    reader: PoolReader,
    *,
    k: int,
    depth: int,
    mode: SearchMode,
    fusion: Fusion,
    alpha: float,
    redundancy: float,
    paragraph_dense_weight: float,
) -> list[Hit]:
    """Rank a search's candidates into its hits (see the module for the steps).

    Args:
        query_vector: the query's L2-normalised embedding.
        candidates: what the retrievers found.
        reader: reads the pool's vectors, scores and records from the tier's stores.
        k: how many hits to return.
        depth: how many candidates each retriever contributed (RRF ranks the dense side to this depth).
        mode: "hybrid", "bm25" or "dense".
        fusion: "minmax" or "rrf" (hybrid only).
        alpha: weight of the dense score in min-max fusion.
        redundancy: drop a hit whose cosine similarity to a better hit exceeds this (1.0 keeps all).
        paragraph_dense_weight: share of a chunk's dense score that comes from its paragraph's vector.
    """
    lexical, semantic, widened = candidates.lexical, candidates.semantic, candidates.widened
    pool = list(dict.fromkeys([i for i, _ in lexical] + [i for i, _ in semantic] + widened))
    # chunks deleted since a store was read (or by a writer ahead of a derived store) drop out here
    pool, vectors = reader.stored_vectors(pool)
    if not pool:
        return []
    stored = set(pool)
    lexical = [(i, score) for i, score in lexical if i in stored]
    semantic = [(i, score) for i, score in semantic if i in stored]
    widened = [i for i in widened if i in stored]
    own_dense = vectors @ query_vector
    if paragraph_dense_weight > 0:
        own_dense = (1 - paragraph_dense_weight) * own_dense + paragraph_dense_weight * (
            reader.paragraph_similarities(pool)
        )
    dense = dict(zip(pool, own_dense.tolist(), strict=True))
    bm25 = dict(zip(pool, reader.lexical_scores(pool), strict=True))
    if mode == "bm25":
        fused = dict(lexical)
    elif mode == "dense":
        fused = {i: dense[i] for i in dict.fromkeys([i for i, _ in semantic] + widened)}
    elif fusion == "rrf":
        semantic_order = rank({i: dense[i] for i in dict.fromkeys([i for i, _ in semantic] + widened)})
        fused = reciprocal_rank_fusion([[i for i, _ in lexical], semantic_order[:depth]])
    else:
        fused = weighted_fusion(bm25, dense, alpha)
    order = rank(fused)
    in_pool = {chunk_id: i for i, chunk_id in enumerate(pool)}
    order = drop_redundant(order, vectors[[in_pool[i] for i in order]], redundancy, limit=k)
    records = reader.chunks(order)
    order = [chunk_id for chunk_id in order if chunk_id in records]  # deleted a moment ago
    return [
        _hit(records[chunk_id], bm25[chunk_id], dense[chunk_id], fused[chunk_id], n)
        for n, chunk_id in enumerate(order, start=1)
    ]


def _hit(record: ChunkRecord, bm25: float, dense: float, score: float, n: int) -> Hit:
    return Hit(
        chunk_id=record.id,
        doc_id=record.doc_id,
        paragraph_id=record.paragraph_id,
        title=record.title,
        section=record.section,
        text=record.text,
        bm25=bm25,
        dense=dense,
        score=score,
        rank=n,
    )
