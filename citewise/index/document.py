"""The parsed form of a source file: a document with sections, paragraphs and a bibliography.

Loaders turn files into `Document`s; the chunker cuts their paragraphs; the document store keeps the
hierarchy (document -> section -> paragraph -> chunk) and the bibliography so that answers can name both
primary references (the documents) and secondary ones (the works their paragraphs cite).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


def content_hash(*parts: str, size: int = 32) -> str:
    """Return a stable hex id for the given text parts (sha256, truncated to `size` hex digits)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x1f")
    return digest.hexdigest()[:size]


@dataclass(frozen=True)
class LineBox:
    """Where one line of a paragraph stands on its PDF page, and how much of the paragraph's text it gives.

    Attributes:
        page: the page's index (0 for the first page).
        left, bottom, right, top: the line's box in PDF points, y up from the page's bottom edge.
        chars: the letters and digits the line gives the paragraph's text: spaces, hyphens and the joins
            made when lines become a paragraph change no letter, so a span of the text maps to its lines.
    """

    page: int
    left: float
    bottom: float
    right: float
    top: float
    chars: int

    def as_list(self) -> list[float]:
        """Plain data for a store: [page, left, bottom, right, top, chars]."""
        return [self.page, self.left, self.bottom, self.right, self.top, self.chars]

    @classmethod
    def of(cls, values: list[float] | tuple[float, ...]) -> LineBox:
        """One read back from `as_list`'s form."""
        page, left, bottom, right, top, chars = values
        return cls(int(page), float(left), float(bottom), float(right), float(top), int(chars))


@dataclass(frozen=True)
class Paragraph:
    """One paragraph of a document, in reading order.

    Attributes:
        text: the paragraph text, citation markers left in place as they appear in the source.
        section: the heading of the section the paragraph sits in ("" when the source has none).
        citations: keys into the document's bibliography for every citation marker in the text.
        boxes: where its lines stand on the pages of a PDF, in reading order (empty for other formats).
            Not part of the document's id: where a line stands does not change what it says.
    """

    text: str
    section: str = ""
    citations: tuple[str, ...] = ()
    boxes: tuple[LineBox, ...] = ()

    @property
    def page(self) -> int | None:
        """The PDF page (0-based) the paragraph starts on, or None when its place is unknown."""
        return self.boxes[0].page if self.boxes else None


@dataclass(frozen=True)
class BibEntry:
    """One entry of a document's reference list (a secondary reference)."""

    key: str
    text: str


@dataclass
class Document:
    """A source document as loaded from a file.

    Attributes:
        title: a human title (the file's heading or name when there is none).
        source: the path of the file it came from.
        key: what distinguishes this document among several in one file (a record id), "" otherwise.
        paragraphs: the body, in reading order, each with its section heading.
        bibliography: the document's reference list, by key.
        metadata: anything else worth keeping (authors, licence, original ids); must be JSON-serialisable.
    """

    title: str
    source: str
    paragraphs: list[Paragraph]
    key: str = ""
    bibliography: dict[str, BibEntry] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """A content hash: the same title, text, hierarchy and bibliography always give the same id."""
        body = json.dumps(
            {
                "title": self.title,
                "key": self.key,
                "paragraphs": [[p.section, p.text, list(p.citations)] for p in self.paragraphs],
                "bibliography": sorted((b.key, b.text) for b in self.bibliography.values()),
            },
            ensure_ascii=False,
            sort_keys=True,
        )
        return content_hash(body)


class LoadError(Exception):
    """A file could not be turned into documents; the message says why (unreadable, empty, unsupported)."""
