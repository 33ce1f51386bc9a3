"""Semantic chunking: sentence spans, grouping by similarity and size, paragraphs, vectors."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np
import pytest

from citewise.index.chunking import (
    ChunkingConfig,
    chunk_documents,
    chunk_input,
    group_sentences,
    normalize_space,
    split_sentences,
)
from citewise.index.document import Document, Paragraph
from citewise.index.embeddings import Embedder

TOPICS = ("vaccine", "galaxy", "bread")


class KeywordEmbedder:
    """Deterministic fake: one axis per topic word (plus one for "none of them"), L2-normalised."""

    name = "keyword-fake"
    dim = len(TOPICS) + 1

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            lowered = text.lower()
            for j, topic in enumerate(TOPICS):
                rows[i, j] = lowered.count(topic)
            if not rows[i].any():
                rows[i, -1] = 1.0
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def sentences_of(text: str, max_chars: int = 500) -> list[str]:
    return [text[start:end] for start, end in split_sentences(text, max_chars)]


def spans_of(lengths: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive sentence spans of the given lengths, separated by one space."""
    spans, position = [], 0
    for length in lengths:
        spans.append((position, position + length))
        position += length + 1
    return spans


def unit(*components: float) -> np.ndarray:
    vector = np.asarray(components, dtype=np.float64)
    return vector / np.linalg.norm(vector)


def at_angle(degrees: float) -> np.ndarray:
    radians = math.radians(degrees)
    return np.array([math.cos(radians), math.sin(radians)])


# split_sentences -------------------------------------------------------------------------------------------
def test_split_sentences_keeps_abbreviations_and_decimals_inside_sentences() -> None:
    text = (
        "Vaccines train the immune system, e.g. with a harmless antigen. "
        "The usual dose is 0.5 ml and protection reaches 95.3 percent. "
        "Boosters follow later."
    )
    assert sentences_of(text) == [
        "Vaccines train the immune system, e.g. with a harmless antigen.",
        "The usual dose is 0.5 ml and protection reaches 95.3 percent.",
        "Boosters follow later.",
    ]


def test_split_sentences_spans_are_ordered_disjoint_and_cover_every_word() -> None:
    text = normalize_space(
        "Black holes bend light.   Nothing escapes   the event horizon!\n\nDo they evaporate? "
        "Hawking said so (in 1974)."
    )
    spans = split_sentences(text, 500)
    assert len(spans) == 4
    assert all(0 <= start < end <= len(text) for start, end in spans)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
    assert " ".join(text[start:end] for start, end in spans) == text


def test_split_sentences_of_blank_text_is_empty() -> None:
    assert split_sentences("", 100) == []
    assert split_sentences("   ", 100) == []


def test_long_sentence_is_cut_at_word_boundaries_within_max_chars() -> None:
    words = [f"word{i:02d}" for i in range(60)]  # one 419-character sentence
    text = " ".join(words) + "."
    spans = split_sentences(text, 60)
    pieces = [text[start:end] for start, end in spans]
    assert len(pieces) > 1
    assert all(len(piece) <= 60 for piece in pieces)
    # every cut falls on a space: no word is split, nothing is lost
    assert all(piece == piece.strip() for piece in pieces)
    assert " ".join(pieces) == text
    assert [w for piece in pieces for w in piece.split()] == text.split()
    # cuts are as late as the cap allows: the next word would not have fitted
    for piece, following in zip(pieces, pieces[1:], strict=False):
        assert len(piece) + 1 + len(following.split()[0]) > 60


def test_word_longer_than_max_chars_is_cut_hard() -> None:
    text = "x" * 130
    spans = split_sentences(text, 50)
    assert spans == [(0, 50), (50, 100), (100, 130)]


def test_only_the_long_sentence_is_cut() -> None:
    short = "Sourdough needs a starter."
    long = "Wheat " + " ".join(["flour"] * 30) + "."
    pieces = sentences_of(f"{short} {long} {short}", 80)
    assert pieces[0] == short and pieces[-1] == short
    assert all(len(piece) <= 80 for piece in pieces)
    assert " ".join(pieces[1:-1]) == long


def test_split_sentences_survives_text_that_blingfire_rewrites() -> None:
    text = "First one. A\x00 b. C d."
    pieces = sentences_of(text)
    assert pieces == ["First one.", "A\x00 b.", "C d."]


# group_sentences -------------------------------------------------------------------------------------------
def test_similarity_drop_below_threshold_starts_a_chunk() -> None:
    e0, e1 = unit(1, 0), unit(0, 1)
    vectors = np.stack([e0, e0, e1, e1])
    groups = group_sentences(spans_of([10] * 4), vectors, ChunkingConfig(threshold=0.8, max_chars=500))
    assert groups == [[0, 1], [2, 3]]


def test_similarity_equal_to_threshold_stays_in_the_chunk() -> None:
    at_threshold = np.stack([unit(1, 0), np.array([0.5, math.sqrt(0.75)])])
    config = ChunkingConfig(threshold=0.5, max_chars=500)
    assert group_sentences(spans_of([10] * 2), at_threshold, config) == [[0, 1]]
    below = np.stack([unit(1, 0), np.array([0.49, math.sqrt(1 - 0.49**2)])])
    assert group_sentences(spans_of([10] * 2), below, config) == [[0], [1]]


def test_similarity_is_to_the_running_chunk_not_the_last_sentence() -> None:
    # each sentence is 20 degrees from the previous one (cos 0.94), but 30 degrees from the chunk mean
    vectors = np.stack([at_angle(20 * i) for i in range(5)])
    groups = group_sentences(spans_of([10] * 5), vectors, ChunkingConfig(threshold=0.9, max_chars=500))
    assert groups == [[0, 1], [2, 3], [4]]


def test_cap_ends_a_chunk_even_when_similar() -> None:
    vectors = np.stack([unit(1, 0)] * 6)
    spans = spans_of([20] * 6)
    groups = group_sentences(spans, vectors, ChunkingConfig(threshold=0.0, max_chars=50))
    assert groups == [[0, 1], [2, 3], [4, 5]]
    for group in groups:
        assert spans[group[-1]][1] - spans[group[0]][0] <= 50


def test_min_chars_keeps_a_short_chunk_growing_across_a_drop() -> None:
    e0, e1 = unit(1, 0), unit(0, 1)
    vectors = np.stack([e0, e1, e1, e0])
    spans = spans_of([10] * 4)
    assert group_sentences(spans, vectors, ChunkingConfig(threshold=0.8, max_chars=500)) == [[0], [1, 2], [3]]
    grown = group_sentences(spans, vectors, ChunkingConfig(threshold=0.8, max_chars=500, min_chars=30))
    # the chunk is 10 then 21 characters long (< 30) when the drops come, 32 when the last one comes
    assert grown == [[0, 1, 2], [3]]


def test_min_chars_never_pushes_a_chunk_past_max_chars() -> None:
    vectors = np.stack([unit(1, 0), unit(0, 1)] * 3)
    spans = spans_of([20] * 6)
    groups = group_sentences(spans, vectors, ChunkingConfig(threshold=0.99, max_chars=50, min_chars=50))
    assert groups == [[0, 1], [2, 3], [4, 5]]


@pytest.mark.parametrize("seed", range(20))
def test_groups_partition_the_sentences_in_order_and_respect_the_cap(seed: int) -> None:
    rng = random.Random(seed)
    config = ChunkingConfig(
        threshold=rng.uniform(-1, 1), max_chars=rng.randint(50, 200), min_chars=rng.randint(0, 50)
    )
    lengths = [rng.randint(1, config.max_chars) for _ in range(rng.randint(1, 30))]
    spans = spans_of(lengths)
    vectors = np.asarray([unit(*[rng.gauss(0, 1) for _ in range(5)]) for _ in lengths])
    groups = group_sentences(spans, vectors, config)
    assert [i for group in groups for i in group] == list(range(len(spans)))
    assert all(group == list(range(group[0], group[-1] + 1)) for group in groups)
    for group in groups:
        assert spans[group[-1]][1] - spans[group[0]][0] <= config.max_chars


# ChunkingConfig --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"threshold": 1.01}, "threshold"),
        ({"threshold": -1.5}, "threshold"),
        ({"max_chars": 49}, "max_chars"),
        ({"min_chars": -1}, "min_chars"),
        ({"max_chars": 100, "min_chars": 101}, "min_chars"),
        ({"vectors": "mean"}, "vectors"),
    ],
)
def test_chunking_config_rejects_bad_settings(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ChunkingConfig(**settings)  # type: ignore[arg-type]


def test_chunking_config_accepts_the_edges_and_round_trips_as_data() -> None:
    config = ChunkingConfig(threshold=-1.0, max_chars=50, min_chars=50, vectors="embed", title_context=False)
    assert ChunkingConfig(**config.as_dict()) == config  # type: ignore[arg-type]
    assert ChunkingConfig(threshold=1.0).threshold == 1.0


# chunk_documents -------------------------------------------------------------------------------------------
def vaccine_paragraph(n: int) -> str:
    return " ".join(f"The vaccine study number {i} was positive." for i in range(n))


def test_chunks_never_cross_a_paragraph() -> None:
    document = Document(
        title="Vaccine notes",
        source="notes.txt",
        paragraphs=[
            Paragraph(vaccine_paragraph(2), section="Intro"),
            Paragraph(vaccine_paragraph(3), section="Intro"),
        ],
    )
    (result,) = chunk_documents([document], KeywordEmbedder(), ChunkingConfig(threshold=0.5))
    # every sentence has the same vector, and both paragraphs would fit in one chunk, yet there are two
    assert [(c.paragraph, c.seq) for c in result.chunks] == [(0, 0), (1, 1)]
    for chunk in result.chunks:
        paragraph = normalize_space(document.paragraphs[chunk.paragraph].text)
        assert paragraph[chunk.start : chunk.end] == chunk.text
        assert chunk.text == paragraph
        assert chunk.doc_id == document.id


def test_topic_change_within_a_paragraph_splits_it() -> None:
    text = (
        "The vaccine was tested. The vaccine worked well. "
        "A galaxy is far away. Every galaxy has stars. "
        "Bake bread at dawn."
    )
    document = Document(title="Mixed", source="m.txt", paragraphs=[Paragraph(text)])
    (result,) = chunk_documents([document], KeywordEmbedder(), ChunkingConfig(threshold=0.8))
    assert [c.text for c in result.chunks] == [
        "The vaccine was tested. The vaccine worked well.",
        "A galaxy is far away. Every galaxy has stars.",
        "Bake bread at dawn.",
    ]
    assert [c.seq for c in result.chunks] == [0, 1, 2]


@pytest.mark.parametrize("title_context", [True, False])
def test_pooled_vectors_are_unit_length(title_context: bool) -> None:
    text = "The vaccine was tested. A galaxy is far away. Bread and galaxy and vaccine, all at once."
    documents = [
        Document(title="Bread", source="a.txt", paragraphs=[Paragraph(text), Paragraph("Vaccine galaxy.")]),
        Document(title="Vaccines", source="a.txt", paragraphs=[Paragraph("Galaxy bread bread.")], key="2"),
    ]
    config = ChunkingConfig(threshold=0.8, title_context=title_context)
    results = chunk_documents(documents, KeywordEmbedder(), config)
    for result in results:
        assert result.vectors.shape == (len(result.chunks), KeywordEmbedder.dim)
        assert result.vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(result.vectors, axis=1), 1.0, rtol=1e-5)


def test_pooled_vector_is_the_normalised_sum_of_sentence_and_title_vectors() -> None:
    embedder = KeywordEmbedder()
    document = Document(
        title="Bread", source="a.txt", paragraphs=[Paragraph("The vaccine works. The vaccine and galaxy.")]
    )
    (result,) = chunk_documents([document], embedder, ChunkingConfig(threshold=0.0))
    (chunk,) = result.chunks
    expected = embedder.embed(["The vaccine works.", "The vaccine and galaxy."]).sum(axis=0)
    expected = expected + embedder.embed(["Bread"])[0]
    np.testing.assert_allclose(result.vectors[0], expected / np.linalg.norm(expected), rtol=1e-5)


def test_embed_mode_embeds_the_titled_chunk_text() -> None:
    embedder = KeywordEmbedder()
    document = Document(
        title="Galaxy  facts", source="a.txt", paragraphs=[Paragraph("The vaccine works. Bread rises.")]
    )
    config = ChunkingConfig(threshold=0.8, vectors="embed")
    (result,) = chunk_documents([document], embedder, config)
    assert [c.text for c in result.chunks] == ["The vaccine works.", "Bread rises."]
    assert embedder.calls[-1] == ["Galaxy facts\nThe vaccine works.", "Galaxy facts\nBread rises."]
    np.testing.assert_allclose(result.vectors, embedder.embed(embedder.calls[-1]), rtol=1e-6)
    assert chunk_input("Galaxy facts", "x", ChunkingConfig(title_context=False)) == "x"


def test_sentences_of_all_documents_are_embedded_in_one_pass() -> None:
    embedder = KeywordEmbedder()
    documents = [
        Document(title=f"Doc {i}", source="a.jsonl", key=str(i), paragraphs=[Paragraph(vaccine_paragraph(3))])
        for i in range(4)
    ]
    results = chunk_documents(documents, embedder, ChunkingConfig())
    assert len(embedder.calls) == 1
    assert len(embedder.calls[0]) == 4 * 3 + 4 + 4  # sentences, then titles, then paragraphs whole
    assert embedder.calls[0][-1] == f"Doc 3\n{vaccine_paragraph(3)}"
    for result in results:  # each document keeps its own paragraph's vector
        assert result.paragraph_vectors is not None and result.paragraph_vectors.shape[0] == 1
    np.testing.assert_allclose(
        results[2].paragraph_vectors[0], embedder.embed([f"Doc 2\n{vaccine_paragraph(3)}"])[0], rtol=1e-6
    )
    pooled = chunk_documents(documents, embedder, ChunkingConfig(paragraph_vectors="pooled"))
    assert len(embedder.calls[-1]) == 4 * 3 + 4 and pooled[0].paragraph_vectors is None


def test_document_without_text_gives_no_chunks() -> None:
    documents = [
        Document(title="Empty", source="a.txt", paragraphs=[Paragraph("   ")]),
        Document(title="Vaccine", source="a.txt", key="2", paragraphs=[Paragraph("The vaccine works.")]),
    ]
    empty, full = chunk_documents(documents, KeywordEmbedder(), ChunkingConfig())
    assert empty.chunks == [] and empty.vectors.shape[0] == 0
    assert [c.text for c in full.chunks] == ["The vaccine works."]


def test_embed_and_pooled_give_the_same_boundaries_with_the_real_model(embedder: Embedder) -> None:
    document = Document(
        title="Notes",
        source="notes.txt",
        paragraphs=[
            Paragraph(
                "Vaccines train the immune system to recognise a virus. Antibodies and memory cells remain "
                "for years. Black holes are regions of spacetime that trap light. The event horizon is their "
                "boundary. Sourdough bread rises thanks to wild yeast."
            ),
            Paragraph("Photosynthesis turns sunlight into sugar. Chlorophyll absorbs red and blue light."),
        ],
    )
    pooled, embedded = (
        chunk_documents([document], embedder, ChunkingConfig(threshold=0.3, vectors=kind))[0]
        for kind in ("pooled", "embed")
    )
    boundaries = [(c.id, c.paragraph, c.start, c.end, c.text) for c in pooled.chunks]
    assert boundaries == [(c.id, c.paragraph, c.start, c.end, c.text) for c in embedded.chunks]
    assert len(pooled.chunks) >= 3  # the topic changes really split the first paragraph
    np.testing.assert_allclose(np.linalg.norm(embedded.vectors, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(pooled.vectors, axis=1), 1.0, rtol=1e-5)
    # the two representations differ, but describe the same chunks
    similarity = np.sum(pooled.vectors * embedded.vectors, axis=1)
    assert np.all(similarity > 0.5)
