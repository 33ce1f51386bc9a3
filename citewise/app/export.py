"""Export of a finished answer or report: Markdown, DOCX, and the cited works as BibTeX and RIS.

Every exporter reads the reply `citewise ask --json` prints (the API's `Reply`): the text with its [n]
markers, the citations, and the primary and secondary references. Each marker resolves to a numbered
reference (the cited document and the passage quoted); the works those documents cite are listed apart.

Everything in a reply but its frame comes from documents or a person, so each format escapes it for
itself: Markdown keeps a document's `#`, `>`, `[`, `*` from making headings, quotes, links or emphasis;
BibTeX fields carry no brace, backslash or newline that could end a field or an entry; an RIS value is
one line, so no document can start a tag such as `ER  -`; DOCX text is XML-safe. Fields are the ones the
reply holds (title, authors when the file named them, the source's key, the file, a DOI or URL written in
a bibliography entry): none is invented.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citewise.core.evidence import MARKER
from citewise.core.report import FRAME
from citewise.index.citations import soften_source_markers

FORMATS = {".md": "md", ".docx": "docx", ".bib": "bib", ".ris": "ris"}
"""A file suffix -> the export format it names."""

MEDIA_TYPES = {
    "md": "text/markdown; charset=utf-8",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "bib": "application/x-bibtex; charset=utf-8",
    "ris": "application/x-research-info-systems; charset=utf-8",
}
"""Each format's media type (the API's Content-Type)."""

REFERENCES_HEADING = "References"
SECONDARY_HEADING = "Works cited by these sources"
SECONDARY_NOTE = (
    "From the cited documents' own bibliographies (* cited in the very line that supports the answer)."
)

_XML_UNSAFE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_HEADING_LINE = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s,;\"'<>{}\\%#]+)")
_URL = re.compile(r"https?://[^\s,;\"'<>{}\\]+")
_VERBATIM_UNSAFE = re.compile(r"[{}\\%#]")
"""What a verbatim BibTeX field (url, doi, file, eprint) cannot hold: it is escaped by no one."""
_ARXIV_ID = re.compile(r"(?:\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?")


class ExportError(ValueError):
    """An export that cannot be made: an unknown format, or a reply with nothing to export."""


def export_format(path: str | Path) -> str:
    """The format a file's suffix names (md, docx, bib, ris).

    Raises:
        ExportError: the suffix is none of .md, .docx, .bib, .ris.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        known = ", ".join(FORMATS)
        raise ExportError(f"cannot export to {Path(path).name!r}: the file name must end in {known}")
    return FORMATS[suffix]


def render(payload: dict[str, Any], fmt: str) -> bytes:
    """The reply exported in `fmt` (md, docx, bib, ris), as the file's bytes.

    Raises:
        ExportError: an unknown format.
    """
    exporters: dict[str, Callable[[dict[str, Any]], str | bytes]] = {
        "md": to_markdown,
        "docx": to_docx,
        "bib": to_bibtex,
        "ris": to_ris,
    }
    if fmt not in exporters:
        raise ExportError(f"unknown export format {fmt!r}: md, docx, bib or ris")
    made = exporters[fmt](payload)
    return made if isinstance(made, bytes) else made.encode("utf-8")


def write_export(payload: dict[str, Any], path: Path) -> None:
    """Write the reply to `path` in the format its suffix names (its folder made if missing)."""
    data = render(payload, export_format(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# the reply, read once for every format ---------------------------------------------------------------------
def one_line(text: Any) -> str:
    """Text on one line: line and paragraph breaks (of every kind) and runs of spaces become one space.

    `str.split` breaks at every character Unicode calls a space: the separators of lines and paragraphs
    (carriage return, vertical tab, form feed, the information separators, NEL, U+2028, U+2029) among them.
    """
    return " ".join(str(text).split())


@dataclass(frozen=True)
class Block:
    """One block of the answer: a heading of the report, or a paragraph."""

    text: str
    """Its text on one line, markers in place."""
    heading: bool = False
    """A report's section heading."""


def blocks(payload: dict[str, Any]) -> list[Block]:
    """The answer's blocks in order; a line is a heading only when it is a report's `## section title`.

    A document's sentence that starts with `#` stays a paragraph: a heading must name a section of the
    report's outline (or its introduction or conclusion).
    """
    titles = {one_line(s.get("title", "")) for s in (payload.get("sections") or payload.get("outline") or [])}
    is_report = payload.get("route") == "report"
    out: list[Block] = []
    for chunk in re.split(r"\n\s*\n", str(payload.get("answer", ""))):
        paragraph: list[str] = []
        for line in chunk.splitlines():
            match = _HEADING_LINE.match(line.strip()) if is_report and line.startswith("## ") else None
            title = one_line(match.group(1)) if match else ""
            if match and (title in titles or title.lower() in FRAME):
                if paragraph:
                    out.append(Block(one_line(" ".join(paragraph))))
                    paragraph = []
                out.append(Block(title, heading=True))
            else:
                paragraph.append(line)
        if one_line(" ".join(paragraph)):
            out.append(Block(one_line(" ".join(paragraph))))
    return out


def numbered(payload: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Marker -> its citation (document title, key, quoted text), in marker order."""
    citations = {int(c["marker"]): c for c in payload.get("citations") or []}
    return dict(sorted(citations.items()))


def _authors_of(payload: dict[str, Any]) -> dict[str, str]:
    return {
        str(entry.get("doc_id", "")): one_line(entry.get("authors", ""))
        for entry in payload.get("references", {}).get("primary") or []
        if entry.get("authors")
    }


def reference_line(citation: dict[str, Any], authors: str = "") -> str:
    """A numbered reference's text, unescaped: title, authors, key, and the passage quoted."""
    parts = [one_line(citation.get("title", "")) or "(untitled)"]
    if authors:
        parts.append(authors)
    if citation.get("key"):
        parts.append(one_line(citation["key"]))
    quote = one_line(soften_source_markers(str(citation.get("text", ""))))
    return ". ".join(parts) + (f': "{quote}"' if quote else "")


def secondary_line(entry: dict[str, Any]) -> str:
    """A secondary reference's text, unescaped: the bibliography entry and the document citing it."""
    cited_in = one_line(entry.get("cited_in", ""))
    text = one_line(soften_source_markers(str(entry.get("text", ""))))
    return text + (f" (cited in {cited_in})" if cited_in else "")


# Markdown -------------------------------------------------------------------------------------------------
_MD_INLINE = re.compile(r"[\\`*_\[\]<>~]|&(?=#?\w+;)")
_MD_LINE_START = re.compile(r"^(?:[#>+\-=|]|(\d+)([.)]))")


def escape_markdown(text: str) -> str:
    """One line of untrusted text as Markdown that shows it verbatim and makes no structure.

    Backslashes, code, emphasis, link and HTML characters and entities are escaped everywhere; a heading,
    quote, list or rule mark is escaped where it starts the line.
    """
    return _line_start(_inline(one_line(text)))


def _inline(text: str) -> str:
    return _MD_INLINE.sub(lambda m: "\\" + m[0], text)


def _line_start(line: str) -> str:
    """The line with the mark that would open a block (heading, quote, list, rule) escaped at its start."""
    start = _MD_LINE_START.match(line)
    if start is None:
        return line
    if start.group(1):
        return f"{start.group(1)}\\{start.group(2)}{line[start.end() :]}"
    return "\\" + line


def markdown_heading(text: str) -> str:
    """A heading's text for Markdown: escaped inline, its `#` too (none can close or open a heading)."""
    return _inline(one_line(text)).replace("#", "\\#")


def markdown_text(text: str, resolved: set[int]) -> str:
    """A paragraph for Markdown: escaped, its markers that name a citation kept as [n], any other escaped."""
    out: list[str] = []
    position = 0
    for match in MARKER.finditer(text):
        out.append(_inline(text[position : match.start()]))
        out.append(match[0] if int(match.group(1)) in resolved else f"\\[{match.group(1)}\\]")
        position = match.end()
    out.append(_inline(text[position:]))
    return _line_start("".join(out))


def to_markdown(payload: dict[str, Any]) -> str:
    """The answer or report in Markdown: its question as the title, its text, the numbered references.

    Every [n] left in the text names an entry of the numbered list; the works the cited documents cite
    follow apart, as a bulleted list.
    """
    citations = numbered(payload)
    authors = _authors_of(payload)
    lines = [f"# {markdown_heading(payload.get('question', '')) or 'Answer'}", ""]
    for block in blocks(payload):
        if block.heading:
            lines += [f"## {markdown_heading(block.text)}", ""]
        else:
            lines += [markdown_text(block.text, set(citations)), ""]
    if citations:
        lines += [f"## {REFERENCES_HEADING}", ""]
        for marker, citation in citations.items():
            line = reference_line(citation, authors.get(str(citation.get("doc_id", "")), ""))
            lines += [f"[{marker}] {escape_markdown(line)}", ""]
    secondary = payload.get("references", {}).get("secondary") or []
    if secondary:
        lines += [f"## {SECONDARY_HEADING}", "", escape_markdown(SECONDARY_NOTE), ""]
        for entry in secondary:
            mark = "\\* " if entry.get("fine") else ""
            lines.append(f"- {mark}{escape_markdown(secondary_line(entry))}")
        lines.append("")
    return "\n".join(lines)


# DOCX -----------------------------------------------------------------------------------------------------
def xml_safe(text: Any) -> str:
    """Text Word's XML can hold: one line, control characters and lone surrogates dropped."""
    return _XML_UNSAFE.sub("", one_line(text))


def to_docx(payload: dict[str, Any]) -> bytes:
    """The answer or report as a Word document (the file's bytes).

    The question is its title; a report's sections are headings; the paragraphs keep their [n] markers;
    the numbered references and the works they cite follow.
    """
    from docx import Document

    document = Document()
    question = xml_safe(payload.get("question", "")) or "Answer"
    document.core_properties.title = question[:255]
    document.add_heading(question, level=1)
    for block in blocks(payload):
        if block.heading:
            document.add_heading(xml_safe(block.text), level=2)
        else:
            document.add_paragraph(xml_safe(block.text))
    citations = numbered(payload)
    authors = _authors_of(payload)
    if citations:
        document.add_heading(REFERENCES_HEADING, level=2)
        for marker, citation in citations.items():
            line = reference_line(citation, authors.get(str(citation.get("doc_id", "")), ""))
            document.add_paragraph(xml_safe(f"[{marker}] {line}"))
    secondary = payload.get("references", {}).get("secondary") or []
    if secondary:
        document.add_heading(SECONDARY_HEADING, level=2)
        document.add_paragraph(SECONDARY_NOTE)
        for entry in secondary:
            mark = "* " if entry.get("fine") else ""
            document.add_paragraph(xml_safe(mark + secondary_line(entry)), style="List Bullet")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


# the cited works: BibTeX and RIS --------------------------------------------------------------------------
@dataclass(frozen=True)
class Work:
    """One cited work, with only the fields the reply holds."""

    key: str
    """A stable citation key: the source's own key, else its document id; a work it cites adds its entry's."""
    kind: str
    """primary (a document of the user's the answer cites) or secondary (a work such a document cites)."""
    title: str = ""
    """Its title (primary works: secondary ones are known only as their bibliography entry)."""
    authors: tuple[str, ...] = ()
    """Its authors, when the file named them."""
    note: str = ""
    """The markers citing a primary work; a secondary one's bibliography entry and the document citing it."""
    file: str = ""
    """The file a primary work was ingested from."""
    eprint: str = ""
    """Its arXiv id, when its key is one."""
    doi: str = ""
    """A DOI written in its bibliography entry."""
    url: str = ""
    """A URL written in its bibliography entry (or arXiv's page of its eprint)."""


def split_authors(authors: str) -> tuple[str, ...]:
    """Names from an author list ("A B, C D and E F"); the whole list as one name when it is not plain."""
    text = one_line(authors)
    if not text:
        return ()
    if re.search(r"[()\d;]", text):  # affiliations or numbering: kept whole rather than guessed apart
        return (text,)
    names = [name.strip() for name in re.split(r",\s*(?:and\s+)?|\s+and\s+", text)]
    return tuple(name for name in names if name)


def _key_part(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:-]+", "-", text).strip("-.:")


def cited_works(payload: dict[str, Any]) -> list[Work]:
    """The documents the answer cites, in order of first citation, then the works they cite.

    Keys are stable (the same reply always gives the same keys) and unique within the export.
    """
    references = payload.get("references") or {}
    used: set[str] = set()

    def unique(key: str) -> str:
        candidate, n = key, 1
        while candidate.lower() in used:
            n += 1
            candidate = f"{key}-{n}"
        used.add(candidate.lower())
        return candidate

    works: list[Work] = []
    base: dict[str, str] = {}
    for entry in references.get("primary") or []:
        doc_id = str(entry.get("doc_id", ""))
        own = one_line(entry.get("key", ""))
        key = unique(_key_part(own) or f"doc-{_key_part(doc_id)[:12] or 'untitled'}")
        base[doc_id] = key
        eprint = own if _ARXIV_ID.fullmatch(own) else ""
        markers = ", ".join(f"[{int(m)}]" for m in sorted(set(entry.get("markers") or [])))
        works.append(
            Work(
                key=key,
                kind="primary",
                title=one_line(entry.get("title", "")),
                authors=split_authors(str(entry.get("authors", ""))),
                file=one_line(entry.get("file", "")),
                note=f"cited in the answer as {markers}" if markers else "",
                eprint=eprint,
                url=f"https://arxiv.org/abs/{eprint}" if eprint else "",
            )
        )
    for entry in references.get("secondary") or []:
        doc_id = str(entry.get("doc_id", ""))
        parent = base.get(doc_id) or f"doc-{_key_part(doc_id)[:12]}"
        key = unique(f"{parent}-{_key_part(str(entry.get('key', '')))[:8] or 'ref'}")
        text = one_line(entry.get("text", ""))
        doi = _DOI.search(text)
        url = _URL.search(text)
        works.append(
            Work(
                key=key,
                kind="secondary",
                note=secondary_line(entry),
                doi=doi.group(1).rstrip(".") if doi else "",
                url=url.group(0).rstrip(".") if url else "",
            )
        )
    return works


_BIB_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\textbraceleft{}",
    "}": r"\textbraceright{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def escape_bibtex(text: Any) -> str:
    """A BibTeX field value (to go inside braces): one line, LaTeX's special characters escaped.

    BibTeX counts braces even after a backslash, so a brace is written as a command (textbraceright):
    the braces of every value balance, and none can close its field or its entry.
    """
    return "".join(_BIB_SPECIAL.get(char, char) for char in xml_safe(text))


def to_bibtex(payload: dict[str, Any]) -> str:
    """The cited works as BibTeX: a @misc entry per work, only the fields the reply holds."""
    entries = []
    for work in cited_works(payload):
        fields: list[tuple[str, str]] = []
        if work.title:
            fields.append(("title", work.title))
        if work.authors:
            fields.append(("author", " and ".join(work.authors)))
        if work.eprint:
            fields += [("eprint", work.eprint), ("archiveprefix", "arXiv")]
        verbatim = [("doi", xml_safe(work.doi)), ("url", xml_safe(work.url)), ("file", xml_safe(work.file))]
        notes = [work.note] if work.note else []
        for name, value in verbatim:
            if value and _VERBATIM_UNSAFE.search(value):
                notes.append(f"{name}: {value}")  # said in the note, escaped, rather than broken
            elif value:
                fields.append((name, value))
        if notes:
            fields.append(("note", "; ".join(notes)))
        body = ",\n".join(
            f"  {name} = {{{value if (name, value) in verbatim else escape_bibtex(value)}}}"
            for name, value in fields
        )
        entries.append(f"@misc{{{work.key},\n{body}\n}}\n")
    return "\n".join(entries)


def to_ris(payload: dict[str, Any]) -> str:
    """The cited works as RIS: a record per work (TY ... ER), every value on its own single line."""
    records = []
    for work in cited_works(payload):
        tags: list[tuple[str, str]] = [("TY", "GEN"), ("ID", work.key)]
        if work.title:
            tags.append(("TI", work.title))
        tags += [("AU", name) for name in work.authors]
        if work.doi:
            tags.append(("DO", work.doi))
        if work.url:
            tags.append(("UR", work.url))
        if work.file:
            tags.append(("L1", work.file))
        if work.note:
            tags.append(("N1", work.note))
        lines = [f"{tag}  - {xml_safe(value)}" for tag, value in tags]
        records.append("\r\n".join([*lines, "ER  - "]) + "\r\n")
    return "\r\n".join(records)
