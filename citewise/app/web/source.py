"""The cited passage in its document: a PDF's page with the supporting lines marked, or a text's section.

A marker's passage names its document and paragraph by id (from the run's evidence, never from the browser).
The document is read from the index as the asker may read it (their collections): a document they may not
read is as absent. For a PDF whose paragraph knows where its lines stand (`Paragraph.boxes`), the page is
rendered here by PDFium (pypdfium2) from the file the index recorded, and the lines that hold the supporting
sentences are marked by translucent boxes laid over the image (positioned in percent of the page, so they
follow the image at any width). Nothing leaves the machine: the image is served by the page's own server
under a random name (or inlined as a data: URL). The view's previous and next page buttons show the
neighbouring pages the same way (`page`), each with the marks of the supporting lines that stand on it: a
paragraph that goes on over a page break is marked on both pages, and the cited page (the one its first
supporting line is on) stays the one "back to the cited page" returns to. A file that cannot be read any
more (moved, deleted, changed) is said plainly, and the passage is shown as text.
Text documents show the paragraph among the others of its section.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citewise.app.web.render import escape, highlight
from citewise.index.citations import soften_source_markers
from citewise.index.document import LineBox
from citewise.index.reading import SearchIndex
from citewise.index.records import Collections, DocumentRecord, ParagraphRecord

PAGE_SCALE = 1.5
"""Pixels per PDF point of a rendered page (108 dpi: sharp in a side column, twice that on a HiDPI screen)."""

SECTION_AROUND = 3
"""Paragraphs of the section shown before and after the cited one (text documents)."""

_SOFTENED = re.compile(r"\(ref\. ([^)]{1,40})\)")


@dataclass(frozen=True)
class RenderedPage:
    """One PDF page as an image, and its size in points."""

    png: bytes
    page: int
    """0-based."""
    pages: int
    width: float
    height: float
    left: float
    """The page's visible area's left edge in PDF points (its crop box)."""
    bottom: float


class SourceUnreadable(Exception):
    """The document's original file cannot be rendered; the message says why, in plain words."""


class NoSuchPage(SourceUnreadable):
    """The PDF has no such page (`pages`: how many it has)."""

    def __init__(self, message: str, pages: int) -> None:
        super().__init__(message)
        self.pages = pages


def letters(text: str) -> str:
    """The letters and digits of a text: what a paragraph and its lines have in common."""
    return "".join(c for c in text if c.isalnum())


def supporting_boxes(
    text: str, boxes: tuple[LineBox, ...], lines: list[str], chunk: str = ""
) -> list[LineBox]:
    """The boxes of the paragraph's lines that hold the supporting lines.

    A supporting line is found in the paragraph by its letters and digits alone (line ends, hyphens and the
    "(ref. 6)" a source's own markers were softened to do not count); each line box gives the paragraph a
    known number of them (`LineBox.chars`), so a span of letters maps to its boxes. When no supporting line
    is found, the chunk's text is; failing that, the whole paragraph.
    """
    if not boxes:
        return []
    key = letters(text)
    spans = _spans(key, lines) or _spans(key, [chunk])
    if not spans:
        return list(boxes)
    marked, start = [], 0
    for box in boxes:
        if box.chars and any(start < end and begin < start + box.chars for begin, end in spans):
            marked.append(box)
        start += box.chars
    return marked


def _spans(key: str, texts: list[str]) -> list[tuple[int, int]]:
    """Where each text is among a paragraph's letters (`key`), as (start, end); none for one not found."""
    spans = []
    for text in texts:
        needle = letters(_SOFTENED.sub(r"[\1]", text))
        at = key.find(needle) if needle else -1
        if at >= 0:
            spans.append((at, at + len(needle)))
    return spans


def render_page(path: Path, page: int, scale: float = PAGE_SCALE) -> RenderedPage:
    """Render one page of a PDF file as a PNG.

    Raises:
        SourceUnreadable: the file is missing, unreadable, not a PDF any more, or has no such page.
    """
    import pypdfium2 as pdfium

    if not path.is_file():
        # the folder is the server's business: a message names the file alone, as the references do
        raise SourceUnreadable(
            f"the original file {path.name} is no longer where it was ingested from (moved, deleted, or on "
            "another machine)"
        )
    try:
        pdf = pdfium.PdfDocument(path)
    except (pdfium.PdfiumError, OSError) as error:
        why = (
            error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        )  # no folder in it
        raise SourceUnreadable(
            f"the original file {path.name} cannot be read as a PDF any more ({why})"
        ) from error
    try:
        if not 0 <= page < len(pdf):
            raise NoSuchPage(
                f"the original file {path.name} has {len(pdf)} pages, not the page {page + 1} it was "
                "indexed with: it changed since (ingest it again)",
                len(pdf),
            )
        sheet = pdf[page]
        left, bottom, _, _ = sheet.get_cropbox()
        width, height = sheet.get_size()  # as shown: a page with /Rotate turned, as the reader reads it
        image = sheet.render(scale=scale).to_pil()
        out = io.BytesIO()
        image.save(out, "PNG", compress_level=1)  # 4x faster than the default level, 7% larger
        return RenderedPage(out.getvalue(), page, len(pdf), width, height, left, bottom)
    except pdfium.PdfiumError as error:
        raise SourceUnreadable(f"page {page + 1} of {path.name} cannot be rendered ({error})") from error
    finally:
        pdf.close()


def page_html(
    rendered: RenderedPage,
    marks: list[LineBox],
    file: str,
    cite: str,
    src: str = "",
    cited: int | None = None,
) -> str:
    """The rendered page with each marked line as a translucent box over it (percent of the page).

    `src` is where the browser gets the image (the page's own server); without one it is inlined. `cited`:
    the cited page (when another is shown, a button leads back to it; None: this one).
    """
    overlays = []
    for box in marks:
        if box.page != rendered.page:
            continue
        x = 100 * (box.left - rendered.left) / rendered.width
        y = 100 * (rendered.bottom + rendered.height - box.top) / rendered.height
        w = 100 * (box.right - box.left) / rendered.width
        h = 100 * (box.top - box.bottom) / rendered.height
        overlays.append(
            f'<div class="cw-mark" data-box="{box.left:.2f} {box.bottom:.2f} {box.right:.2f} {box.top:.2f}" '
            f'style="left:{x:.3f}%;top:{y:.3f}%;width:{w:.3f}%;height:{h:.3f}%"></div>'
        )
    src = src or "data:image/png;base64," + base64.b64encode(rendered.png).decode("ascii")
    where = f"{escape(Path(file).name)} · page {rendered.page + 1} of {rendered.pages}"
    cited = rendered.page if cited is None else cited
    return (
        f'<div class="cw-source cw-pdf" data-cite="{escape(cite)}" data-page="{rendered.page}" '
        f'data-cited-page="{cited}" data-width="{rendered.width:.2f}" data-height="{rendered.height:.2f}">'
        f'<div class="cw-source-head">{where}</div>{page_nav(rendered.page, rendered.pages, cited)}'
        '<div class="cw-page-frame">'
        f'<div class="cw-page" style="aspect-ratio:{rendered.width:.2f}/{rendered.height:.2f}">'
        f'<img class="cw-page-image" alt="page {rendered.page + 1} of {escape(Path(file).name)}" '
        f'src="{escape(src)}"/>{"".join(overlays)}</div></div></div>'
    )


def page_nav(page: int, pages: int, cited: int) -> str:
    """The previous and next page buttons (off at either end), and one back to the cited page from another.

    Each names the page it shows (`data-page`, 0-based); the view's script sends it with the view's marker.
    """

    def button(kind: str, label: str, target: int) -> str:
        off = " disabled" if not 0 <= target < pages else ""
        return f'<button type="button" class="cw-page-{kind}" data-page="{target}"{off}>{label}</button>'

    back = button("cited", f"Back to the cited page ({cited + 1})", cited) if page != cited else ""
    return (
        f'<div class="cw-page-nav">{button("prev", "‹ Previous page", page - 1)}'
        f"{button('next', 'Next page ›', page + 1)}{back}</div>"
    )


def section_html(
    paragraphs: list[ParagraphRecord],
    cited: ParagraphRecord,
    lines: list[str],
    file: str,
    cite: str,
    note: str = "",
) -> str:
    """The cited paragraph among its section's others, its supporting lines marked (everything escaped)."""
    same = [p for p in paragraphs if p.section == cited.section]
    at = next((n for n, p in enumerate(same) if p.id == cited.id), 0)
    shown = []
    for paragraph in same[max(0, at - SECTION_AROUND) : at + SECTION_AROUND + 1]:
        text = soften_source_markers(paragraph.text)
        if paragraph.id == cited.id:
            marked = highlight(text, [soften_source_markers(line) for line in lines])
            shown.append(f'<p class="cw-cited-paragraph">{marked}</p>')
        else:
            shown.append(f"<p>{escape(text)}</p>")
    section = f" › {escape(cited.section)}" if cited.section else ""
    warning = f'<p class="cw-source-note">{escape(note)}</p>' if note else ""
    return (
        f'<div class="cw-source cw-text" data-cite="{escape(cite)}">'
        f'<div class="cw-source-head">{escape(Path(file).name)}{section}</div>{warning}'
        f'<div class="cw-section-text">{"".join(shown)}</div></div>'
    )


def source_html(
    index: SearchIndex,
    passage: dict[str, Any],
    collections: Collections,
    cite: str = "",
    publish: Callable[[bytes], str] | None = None,
    page: int | None = None,
) -> str:
    """The document view of a marker's passage, read from the index as the asker may read it.

    `page` (0-based) shows another page of a PDF passage's document, for the view's previous and next
    buttons: rendered the same way, with the supporting lines that stand on it marked (a paragraph that goes
    on over a page break; None: the cited page, the one the first supporting line is on).

    `publish` keeps a rendered page's PNG where the page's server serves it and gives its URL (the chat page
    does so: a page inlined in the view's HTML went through the page's event stream, whose browser side took
    longer at every click); without it the image is inlined. Blocking (SQLite or PostgreSQL, and PDFium):
    called in a worker thread.
    """
    doc_id, paragraph_id = passage.get("doc_id") or "", passage.get("paragraph_id") or ""
    document: DocumentRecord | None = index.document(doc_id, collections) if doc_id else None
    paragraph = index.paragraph(paragraph_id, collections) if document and paragraph_id else None
    if document is None or paragraph is None:
        return empty_html("This passage's document is no longer in the index (or not yours to read).", cite)
    lines = list(passage.get("lines") or [])
    note = ""
    if paragraph.boxes and Path(document.file).suffix.lower() == ".pdf":
        marks = supporting_boxes(paragraph.text, paragraph.boxes, lines, str(passage.get("text", "")))
        cited = marks[0].page  # the page of the first supporting line (a paragraph may go on over a break)
        shown = cited if page is None else page
        try:
            rendered = render_page(Path(document.file), shown)
        except SourceUnreadable as error:
            if isinstance(error, NoSuchPage) and shown != cited:  # a page asked for the file does not have
                name = Path(document.file).name
                return empty_html(f"{name} has {error.pages} pages: there is no page {shown + 1}.", cite)
            note = f"The page cannot be shown: {error}. Here is the passage as text."
        else:
            src = publish(rendered.png) if publish else ""
            return page_html(rendered, marks, document.file, cite, src, cited)
    elif Path(document.file).suffix.lower() == ".pdf":
        # no boxes: an index made before they were kept, or a PDF with no typography, read as plain text
        note = (
            "Where this passage stands on its pages is not known (the PDF was ingested by an older citewise, "
            "or read as plain text), so it is shown as text. For the first: citewise remove FILE, then "
            "ingest it again."
        )
    return section_html(index.paragraphs(doc_id, collections), paragraph, lines, document.file, cite, note)


def empty_html(text: str = "", cite: str = "") -> str:
    """The document view with nothing in it (a plain sentence instead)."""
    text = text or "Click a citation marker to see its passage in the document."
    return f'<div class="cw-source cw-empty" data-cite="{escape(cite)}">{escape(text)}</div>'
