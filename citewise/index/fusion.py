"""Hybrid scoring arithmetic: per-query normalisation, weighted fusion, reciprocal-rank fusion, redundancy.

Kept free of I/O so the arithmetic is easy to test and to read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

RRF_K = 60


def minmax(scores: Mapping[str, float]) -> dict[str, float]:
    """Scale scores to [0, 1] within one query's candidates (all 1.0 when they are all equal)."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low <= 1e-12:
        return {key: 1.0 for key in scores}
    return {key: (value - low) / (high - low) for key, value in scores.items()}


def weighted_fusion(bm25: Mapping[str, float], dense: Mapping[str, float], alpha: float) -> dict[str, float]:
    """Alpha * dense + (1 - alpha) * bm25 after min-max normalising each; a missing score counts as 0."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    lexical, semantic = minmax(bm25), minmax(dense)
    keys = set(lexical) | set(semantic)
    return {key: alpha * semantic.get(key, 0.0) + (1 - alpha) * lexical.get(key, 0.0) for key in keys}


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Sum of 1 / (k + rank) over the rankings a key appears in (rank counts from 1)."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return fused


def drop_redundant(
    order: Sequence[str], vectors: np.ndarray, threshold: float, limit: int | None = None
) -> list[str]:
    """Keep keys in order, dropping each whose cosine similarity to an already kept one exceeds threshold.

    `vectors` holds one L2-normalised row per key of `order`, in the same order. With `limit`, stop once that
    many are kept (the first `limit` of the full result): a key is compared only with the kept ones, so a
    search's 10 hits out of 900 candidates cost 10 x 900 products, not the 900 x 900 matrix.
    """
    if threshold >= 1.0 or len(order) == 0:
        return list(order)[:limit]
    kept: list[str] = []
    rows: list[int] = []
    for i, key in enumerate(order):
        if limit is not None and len(kept) >= limit:
            break
        if rows and float(np.max(vectors[rows] @ vectors[i])) > threshold:
            continue
        kept.append(key)
        rows.append(i)
    return kept


def rank(scores: Mapping[str, float]) -> list[str]:
    """Keys by descending score, ties broken by key for a stable order."""
    return sorted(scores, key=lambda key: (-scores[key], key))
