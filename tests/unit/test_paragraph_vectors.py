"""Paragraph vectors: the chunks of the paragraphs nearest a query join dense search, capped in chunks."""

from __future__ import annotations

import numpy as np

from citewise.index.local.paragraphs import Paragraphs


def paragraphs(sizes: list[int]) -> Paragraphs:
    """Paragraphs p0, p1, ... with `sizes[i]` chunks each; p_i's vector is the i-th unit vector."""
    ids = [f"p{i}" for i in range(len(sizes))]
    chunks = [[f"p{i}c{j}" for j in range(size)] for i, size in enumerate(sizes)]
    parent = {chunk: ids[i] for i, group in enumerate(chunks) for chunk in group}
    matrix = np.eye(len(sizes), dtype=np.float32)
    return Paragraphs(1, ids, matrix, chunks, {p: i for i, p in enumerate(ids)}, parent)


def test_the_best_paragraphs_chunks_come_first_up_to_the_limit() -> None:
    found = paragraphs([3, 2, 4])
    similarity = np.array([0.2, 0.9, 0.5], dtype=np.float32)  # p1, then p2, then p0
    assert found.top_chunks(similarity, 100) == ["p1c0", "p1c1", "p2c0", "p2c1", "p2c2", "p2c3", "p0c0",
                                                 "p0c1", "p0c2"]  # fmt: skip
    assert found.top_chunks(similarity, 4) == ["p1c0", "p1c1", "p2c0", "p2c1"]  # cut inside a paragraph
    assert found.top_chunks(similarity, 0) == []


def test_a_chunk_reads_its_paragraph_s_similarity() -> None:
    found = paragraphs([2, 1])
    similarity = np.array([0.3, 0.8], dtype=np.float32)
    assert found.of_chunks(["p1c0", "p0c1", "gone"], similarity).tolist() == [
        np.float32(0.8),
        np.float32(0.3),
        0.0,
    ]
