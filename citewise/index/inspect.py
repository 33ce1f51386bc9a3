"""How a document was read: its title, sections, references, and what the reader left out and why.

`citewise show` prints it, so that a user can judge a file before trusting answers from it: a PDF whose
sections came out as one, whose reference list is missing, or whose pages had no text layer is seen at once,
without opening the index's SQLite file. A file is read afresh (`describe_file`); a stored document is shown
as stored, with what its file's layout left out when that file is still there (`describe_stored`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from citewise.index.document import Document, LoadError
from citewise.index.records import DocumentRecord, ParagraphRecord
from citewise.index.tables import whole_tables

SHOWN_DROPPED = 12
"""Lines of each kind left out that are listed (the count is always given)."""
DROPPED_KINDS = {
    "furniture": "page furniture (running heads, page numbers, margin stamps, author lines)",
    "note": "footnotes",
    "equation": "display equations",
    "contents": "a table of contents (lines that repeat the headings, with page numbers)",
}


@dataclass
class Section:
    """One section as read: its path of headings ("2 Methods > 2.1 Data") and its paragraph count."""

    path: str
    paragraphs: int


@dataclass
class TableRead:
    """A table as read: its caption, section, header and how many rows and columns it has."""

    caption: str
    section: str
    header: list[str]
    rows: int


@dataclass
class Reading:
    """What a reader made of one document (see the module docstring)."""

    title: str
    source: str
    kind: str
    sections: list[Section]
    references: list[tuple[str, str]]
    pages: int | None = None
    dropped: dict[str, list[str]] = field(default_factory=dict)
    dropped_counts: dict[str, int] = field(default_factory=dict)
    pages_without_text: list[int] = field(default_factory=list)
    ocr_pages: list[int] = field(default_factory=list)
    tables: list[TableRead] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    doc_id: str = ""

    @property
    def paragraphs(self) -> int:
        """Paragraphs in all sections."""
        return sum(section.paragraphs for section in self.sections)

    def as_dict(self) -> dict[str, Any]:
        """The reading as JSON-ready data (`citewise show --json`)."""
        data = asdict(self)
        data["paragraphs"] = self.paragraphs
        data["references"] = [{"key": key, "text": text} for key, text in self.references]
        return data


def describe_file(path: Path) -> list[Reading]:
    """Read a file as ingest would, one Reading per document it holds.

    Raises:
        LoadError: the file cannot be read (the message says why, as at ingest).
    """
    from citewise.index.loaders import load_path, pdf_with_layout

    if path.suffix.lower() == ".pdf" and path.is_file():  # read once: its layout is what was left out
        documents, layout = pdf_with_layout(path)
    else:
        documents, layout = load_path(path), None
    readings = [_reading_of(document, path) for document in documents]
    if layout is not None and readings:
        _add_layout(readings[0], layout)
    return readings


def describe_stored(
    record: DocumentRecord,
    paragraphs: list[ParagraphRecord],
    bibliography: dict[str, str],
    *,
    layout: bool = True,
) -> Reading:
    """A stored document as the index holds it, with its file's layout when the file is still there.

    Without `layout` the file is not read again (a list of many documents): what its layout left out is not
    in the reading.
    """
    path = Path(record.file)
    reading = _reading(record.title, path, [p.section for p in paragraphs], bibliography, record.metadata)
    reading.tables = _tables([(p.section, p.text) for p in paragraphs])
    reading.doc_id = record.id
    if layout and path.suffix.lower() == ".pdf":
        try:
            _add_layout(reading, _pdf_layout(path))
        except (LoadError, OSError):
            reading.warnings.append("the file is gone or unreadable now: what its layout left out is unknown")
    return reading


def _reading_of(document: Document, path: Path) -> Reading:
    references = {key: entry.text for key, entry in document.bibliography.items()}
    sections = [p.section for p in document.paragraphs]
    reading = _reading(document.title, path, sections, references, document.metadata)
    reading.tables = _tables([(p.section, p.text) for p in document.paragraphs])
    reading.doc_id = document.id
    if document.title == path.stem:
        reading.warnings.append("no title found in the file: it is titled by its file name")
    return reading


def _reading(
    title: str, path: Path, sections: list[str], references: dict[str, str], metadata: dict[str, Any]
) -> Reading:
    """A document's reading from its parts, with the warnings its shape earns."""
    pages = metadata.get("pages")
    reading = Reading(
        title=title,
        source=str(path),
        kind=path.suffix.lower().lstrip(".") or "text",
        sections=_sections(sections),
        references=list(references.items()),
        pages=pages if isinstance(pages, int) else None,
    )
    _warn(reading)
    return reading


def _tables(paragraphs: list[tuple[str, str]]) -> list[TableRead]:
    """The tables among a document's passages, the parts of a long one counted as one."""
    return [
        TableRead(caption, paragraphs[first][0], rows[0], len(rows) - 1)
        for first, caption, rows in whole_tables([text for _, text in paragraphs])
    ]


def _sections(sections: Any) -> list[Section]:
    """Sections in reading order with their paragraph counts (a section met again later counts apart)."""
    out: list[Section] = []
    for section in sections:
        if out and out[-1].path == section:
            out[-1].paragraphs += 1
        else:
            out.append(Section(section, 1))
    return out


def _warn(reading: Reading) -> None:
    """Warnings any reading gets: the shapes of a document read badly."""
    if reading.paragraphs and all(not s.path for s in reading.sections):
        reading.warnings.append("no section headings were recognised: every paragraph is in one section")
    named = Counter(s.path for s in reading.sections if s.path)
    if reading.paragraphs >= 20 and len(named) > reading.paragraphs / 2:
        reading.warnings.append("more sections than half the paragraphs: body lines may be read as headings")
    if reading.kind == "pdf" and reading.pages and reading.paragraphs > 60 * reading.pages:
        reading.warnings.append("unusually many paragraphs a page: lines may have been split into paragraphs")
    if reading.kind == "pdf" and not reading.references:
        reading.warnings.append("no reference list was found")


def _pdf_layout(path: Path) -> Any:
    from citewise.index.loaders import read_pdf_layout

    return read_pdf_layout(path)


def _add_layout(reading: Reading, layout: Any) -> None:
    """What the PDF's layout left out of the text, and its pages with no text at all."""
    by_kind: dict[str, list[str]] = {}
    for line in layout.lines:
        if line.kind in DROPPED_KINDS:
            by_kind.setdefault(line.kind, []).append(line.text)
    reading.dropped_counts = {kind: len(texts) for kind, texts in by_kind.items()}
    reading.dropped = {kind: list(dict.fromkeys(texts))[:SHOWN_DROPPED] for kind, texts in by_kind.items()}
    with_text = {line.page for line in layout.lines}
    reading.pages = layout.pages
    reading.pages_without_text = [n + 1 for n in range(layout.pages) if n not in with_text]
    reading.ocr_pages = [n + 1 for n in layout.ocr_pages]
    if reading.pages_without_text:
        pages = ", ".join(str(n) for n in reading.pages_without_text[:10])
        reading.warnings.append(
            f"pages with no text (scanned, and not read by OCR?): {pages}; their words are not in the index"
        )
    if layout.garbled_pages:
        pages = ", ".join(str(n + 1) for n in layout.garbled_pages[:10])
        reading.warnings.append(
            f"pages whose text layer maps its glyphs to no characters: {pages}; read by OCR where Tesseract"
            " is installed, else left without text"
        )
    if reading.ocr_pages:
        pages = ", ".join(str(n) for n in reading.ocr_pages[:10])
        reading.warnings.append(
            f"pages read by OCR: {pages}; words may be misread, and headings are found by size, numbering"
            " and capitals (weight is guessed, italic unknown)"
        )
