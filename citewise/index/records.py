"""What the index hands out on either tier: stored records, search hits, ingest reports, counts, its error."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from citewise.index.document import LineBox


class IndexOpenError(Exception):
    """The index cannot be opened or written as asked; the message says why."""


@dataclass(frozen=True)
class ChunkRecord:
    """A stored chunk with what a search hit needs to show about it."""

    id: str
    doc_id: str
    paragraph_id: str
    seq: int
    text: str
    title: str
    section: str


@dataclass(frozen=True)
class ParagraphRecord:
    """A stored paragraph, the bibliography keys it cites, and where its lines stand on a PDF's pages."""

    id: str
    doc_id: str
    seq: int
    section: str
    text: str
    citations: tuple[str, ...]
    boxes: tuple[LineBox, ...] = ()
    """Its lines' boxes (`citewise.index.document.LineBox`); empty for a text format, or an index made
    before they were kept."""


@dataclass(frozen=True)
class DocumentRecord:
    """A stored document (without its body)."""

    id: str
    file: str
    key: str
    title: str
    metadata: dict[str, Any]
    added: str = ""
    """When it was ingested (ISO 8601, UTC, to the second)."""


def document_tags(metadata: dict[str, Any]) -> list[str]:
    """The tags given at ingest (`citewise ingest --tag`), kept in a document's metadata."""
    tags = metadata.get("tags")
    return [str(tag) for tag in tags] if isinstance(tags, list) else []


DEFAULT_COLLECTION = "default"
"""The collection of a document ingested without `--collection` (and of every document stored before them)."""

COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@:\-]{0,63}")
"""What a collection name may be."""


def check_collection(name: str) -> str:
    """A collection name as given, when it is one.

    Raises:
        ValueError: 1-64 letters, digits, '_', '.', '@', ':' or '-' (a letter or digit first) it is not.
    """
    if not COLLECTION_NAME.fullmatch(name):
        raise ValueError(
            f"a collection name is 1-64 letters, digits, '_', '.', '@', ':' or '-': not {name!r}"
        )
    return name


def document_collection(metadata: dict[str, Any]) -> str:
    """The collection a document belongs to (`citewise ingest --collection`), kept in its metadata."""
    collection = metadata.get("collection")
    return collection if isinstance(collection, str) and collection else DEFAULT_COLLECTION


Collections = tuple[str, ...] | None
"""Which collections a search or a read may see: None for every one (an administrator), () for none."""


def paragraph_id(doc_id: str, seq: int) -> str:
    """The id of a document's `seq`-th paragraph."""
    return f"{doc_id}:p{seq}"


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk with everything needed to show, score and cite it.

    Attributes:
        chunk_id: content-hash id of the chunk (stable across re-ingests of the same text).
        doc_id: content-hash id of its document.
        paragraph_id: id of its paragraph (document id + position).
        title: the document title.
        section: the section heading of its paragraph ("" when none).
        text: the chunk text.
        bm25: its lexical score in [0, 1]: BM25 of the chunk and of its paragraph, each divided by the
            query's best, mixed by `paragraph_weight` (0 when it shares no term with the query).
        dense: its dense score: its cosine similarity to the query, mixed with its paragraph's by
            `paragraph_dense_weight`.
        score: the fused score the hits are ranked by (the single score in bm25 / dense mode).
        rank: its 1-based position in the result.
    """

    chunk_id: str
    doc_id: str
    paragraph_id: str
    title: str
    section: str
    text: str
    bm25: float
    dense: float
    score: float
    rank: int

    def as_dict(self) -> dict[str, Any]:
        """Plain data (for JSON output)."""
        return asdict(self)


@dataclass
class IngestReport:
    """What an ingest did."""

    files: int = 0
    ingested_files: int = 0
    unchanged_files: int = 0
    documents_added: int = 0
    documents_removed: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    documents_tagged: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        """Whether anything was added or removed."""
        return bool(self.documents_added or self.documents_removed)


@dataclass(frozen=True)
class IndexStats:
    """How much each store holds, in words both tiers share; `consistent` says whether they agree.

    `chunks` are the chunk records (SQLite, or PostgreSQL's table), `chunk_vectors` their vectors (Chroma,
    pgvector), `chunks_lexical` / `paragraphs_lexical` what the lexical indexes hold (bm25s, or the shared
    tier's term tables).
    """

    files: int
    documents: int
    paragraphs: int
    bibliography: int
    chunks: int
    chunk_vectors: int
    chunks_lexical: int
    paragraphs_lexical: int
    generation: int

    @property
    def consistent(self) -> bool:
        """True when the vectors and the lexical index hold exactly the chunks (and paragraphs) recorded."""
        return (
            self.chunks == self.chunk_vectors == self.chunks_lexical
            and self.paragraphs == self.paragraphs_lexical
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain data (for JSON output)."""
        return {**asdict(self), "consistent": self.consistent}


ProgressFactory = Callable[..., Any]
