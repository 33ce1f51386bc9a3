"""Semantic chunking (ChunkRAG): sentences grouped while they stay similar, never across a paragraph.

Every sentence of a paragraph is embedded once. A chunk grows sentence by sentence while the next sentence's
cosine similarity to the chunk's running mean vector stays at or above `threshold` and the chunk stays within
`max_chars`; otherwise a new chunk starts. `min_chars` lets a chunk absorb a dissimilar sentence while it is
still shorter than that (a one-line chunk rarely retrieves well), but never past `max_chars`.

Because the sentences are embedded anyway, a chunk's vector can be pooled from its sentence vectors
(`vectors="pooled"`: the normalised mean) instead of embedding the chunk text a second time
(`vectors="embed"`); `bench/retrieval.py` and `bench/ingest.py` measure what each costs and gains.
With `title_context`, the document title is part of what a chunk is matched on: it is embedded once per
document and pooled in (or prefixed to the embedded text), and it is prefixed to the BM25 text.

With `paragraph_vectors="whole"` each paragraph is also embedded whole (title + text, in the same model pass)
for dense search at paragraph granularity (the local tier's `paragraphs`); "pooled" derives the paragraph's
vector from its chunks' instead, at no ingest cost. On HotpotQA the whole paragraph lifts dense R@5 from
0.720 (pooled) to 0.755 and hybrid from 0.800 to 0.810 (bench/results/retrieval-hotpotqa.json).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import blingfire
import numpy as np

from citewise.index.document import Document, content_hash
from citewise.index.embeddings import Embedder
from citewise.index.tables import is_markdown_table


@dataclass(frozen=True)
class ChunkingConfig:
    """How documents are cut into chunks and how chunks are represented.

    Attributes:
        threshold: start a new chunk when a sentence's cosine similarity to the chunk falls below this.
        max_chars: a chunk never grows beyond this many characters (a longer sentence is cut at words).
        min_chars: below this length a chunk keeps growing even across a similarity drop.
        vectors: "pooled" (mean of sentence vectors, no second model pass) or "embed" (embed chunk text).
        title_context: match chunks on their document title too (dense and BM25).
        paragraph_vectors: "whole" (embed each paragraph, title first) or "pooled" (sum of its chunks').
    """

    threshold: float = 0.8
    max_chars: int = 500
    min_chars: int = 0
    vectors: Literal["pooled", "embed"] = "pooled"
    title_context: bool = True
    paragraph_vectors: Literal["whole", "pooled"] = "whole"

    def __post_init__(self) -> None:
        if not -1.0 <= self.threshold <= 1.0:
            raise ValueError(f"chunking threshold must be a cosine in [-1, 1], got {self.threshold}")
        if self.max_chars < 50:
            raise ValueError(f"max_chars must be at least 50, got {self.max_chars}")
        if not 0 <= self.min_chars <= self.max_chars:
            raise ValueError(f"min_chars must be in [0, max_chars], got {self.min_chars}")
        if self.vectors not in ("pooled", "embed"):
            raise ValueError(f"vectors must be 'pooled' or 'embed', got {self.vectors!r}")
        if self.paragraph_vectors not in ("whole", "pooled"):
            raise ValueError(f"paragraph_vectors must be 'whole' or 'pooled', got {self.paragraph_vectors!r}")

    def as_dict(self) -> dict[str, object]:
        """The settings as plain data (stored with the index)."""
        return asdict(self)


@dataclass(frozen=True)
class Chunk:
    """A piece of one paragraph, the unit that is indexed, retrieved and scored.

    Attributes:
        id: content hash of the document id, position and text.
        doc_id: the document it belongs to.
        paragraph: index of its paragraph in the document.
        seq: its position among the document's chunks.
        text: the chunk text (whitespace normalised).
        start: where it starts in the whitespace-normalised paragraph text.
        end: where it ends there.
    """

    id: str
    doc_id: str
    paragraph: int
    seq: int
    text: str
    start: int
    end: int


def normalize_space(text: str) -> str:
    """Collapse all runs of whitespace into single spaces (a table's rows keep their own lines)."""
    if is_markdown_table(text):
        return "\n".join(" ".join(line.split()) for line in text.split("\n") if line.strip())
    return " ".join(text.split())


def split_sentences(text: str, max_chars: int) -> list[tuple[int, int]]:
    """Return (start, end) spans of the sentences of whitespace-normalised `text`, none over `max_chars`."""
    if is_markdown_table(text):  # a table is one passage; a longer one is cut between rows
        return _table_spans(text, max_chars)
    spans: list[tuple[int, int]] = []
    position = 0
    for sentence in blingfire.text_to_sentences(text).split("\n"):
        sentence = sentence.strip()
        if not sentence:
            continue
        start = text.find(sentence, position)
        if start < 0:  # blingfire rewrote characters (e.g. NUL -> space): same length, next non-space
            start = position
            while start < len(text) and text[start].isspace():
                start += 1
        end = min(len(text), start + len(sentence))
        spans.extend(_cut_long(text, start, end, max_chars))
        position = end
    if not spans and text.strip():
        spans.extend(_cut_long(text, 0, len(text), max_chars))
    return spans


def _table_spans(text: str, max_chars: int) -> list[tuple[int, int]]:
    """A table's spans: all of it, or runs of whole rows of at most `max_chars` (a row longer is cut)."""
    spans: list[tuple[int, int]] = []
    start = position = 0
    for line in text.split("\n"):
        end = position + len(line)
        if end - start > max_chars and position > start:
            spans.append((start, position - 1))
            start = position
        position = end + 1
    spans.extend(_cut_long(text, start, len(text), max_chars))
    return spans


def _cut_long(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Split one span into pieces of at most `max_chars`, at spaces where possible."""
    pieces = []
    while end - start > max_chars:
        cut = text.rfind(" ", start + 1, start + max_chars + 1)
        if cut <= start:
            cut = start + max_chars
        pieces.append((start, cut))
        start = cut + 1 if text[cut : cut + 1] == " " else cut
    if end > start:
        pieces.append((start, end))
    return pieces


def group_sentences(
    spans: Sequence[tuple[int, int]], vectors: np.ndarray, config: ChunkingConfig
) -> list[list[int]]:
    """Group consecutive sentence indexes into chunks by similarity to the running chunk and the size cap."""
    groups: list[list[int]] = []
    current: list[int] = []
    running = np.zeros(vectors.shape[1], dtype=np.float32)
    for i, (_, end) in enumerate(spans):
        if current:
            chunk_start = spans[current[0]][0]
            similarity = float(vectors[i] @ running) / (float(np.linalg.norm(running)) or 1.0)
            too_long = end - chunk_start > config.max_chars
            drifted = (
                similarity < config.threshold and spans[current[-1]][1] - chunk_start >= config.min_chars
            )
            if too_long or drifted:
                groups.append(current)
                current, running = [], np.zeros_like(running)
        current.append(i)
        running = running + vectors[i]
    if current:
        groups.append(current)
    return groups


@dataclass
class ChunkedDocument:
    """A document's chunks with their vectors (and, embedded whole, its paragraphs'), ready for the stores."""

    document: Document
    chunks: list[Chunk]
    vectors: np.ndarray
    paragraph_vectors: np.ndarray | None = None


def chunk_documents(
    documents: Sequence[Document], embedder: Embedder, config: ChunkingConfig
) -> list[ChunkedDocument]:
    """Chunk many documents with one embedding pass over all their sentences (and titles)."""
    paragraph_texts: list[list[str]] = []
    sentence_spans: list[list[list[tuple[int, int]]]] = []
    sentences: list[str] = []
    for document in documents:
        texts = [normalize_space(p.text) for p in document.paragraphs]
        document_spans = [split_sentences(text, config.max_chars) for text in texts]
        paragraph_texts.append(texts)
        sentence_spans.append(document_spans)
        for text, paragraph_spans in zip(texts, document_spans, strict=True):
            sentences.extend(text[s:e] for s, e in paragraph_spans)
    titles = [normalize_space(d.title) for d in documents] if config.title_context else []
    whole: list[str] = []
    if config.paragraph_vectors == "whole":
        for document, texts in zip(documents, paragraph_texts, strict=True):
            whole.extend(chunk_input(document.title, text, config) for text in texts)
    vectors = embedder.embed(sentences + titles + whole)
    sentence_vectors = vectors[: len(sentences)]
    title_vectors = vectors[len(sentences) : len(sentences) + len(titles)]
    whole_vectors = vectors[len(sentences) + len(titles) :]

    results: list[ChunkedDocument] = []
    offset = whole_offset = 0
    for d, document in enumerate(documents):
        chunks: list[Chunk] = []
        pooled: list[np.ndarray] = []
        doc_id = document.id
        for p, (text, spans) in enumerate(zip(paragraph_texts[d], sentence_spans[d], strict=True)):
            own = sentence_vectors[offset : offset + len(spans)]
            offset += len(spans)
            for group in group_sentences(spans, own, config):
                start, end = spans[group[0]][0], spans[group[-1]][1]
                chunk_text = text[start:end]
                seq = len(chunks)
                chunk_id = content_hash(doc_id, str(p), str(seq), chunk_text)
                chunks.append(Chunk(chunk_id, doc_id, p, seq, chunk_text, start, end))
                pooled.append(own[group].sum(axis=0))
        if not chunks:
            chunk_vectors = np.zeros((0, embedder.dim), dtype=np.float32)
        elif config.vectors == "embed":
            chunk_vectors = embedder.embed([chunk_input(document.title, c.text, config) for c in chunks])
        else:
            stacked = np.asarray(pooled, dtype=np.float32)
            if config.title_context:
                stacked = stacked + title_vectors[d]
            chunk_vectors = _normalize_rows(stacked)
        paragraph_vectors = None
        if whole:
            paragraph_vectors = whole_vectors[whole_offset : whole_offset + len(paragraph_texts[d])]
            whole_offset += len(paragraph_texts[d])
        results.append(ChunkedDocument(document, chunks, chunk_vectors, paragraph_vectors))
    return results


def chunk_input(title: str, text: str, config: ChunkingConfig) -> str:
    """The text a chunk is matched on: its own text, headed by its document title with `title_context`."""
    if config.title_context and title:
        return f"{normalize_space(title)}\n{text}"
    return text


def _normalize_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32)
