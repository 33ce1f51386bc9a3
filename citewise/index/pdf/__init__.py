"""A PDF's layout read into the lines a reader follows: columns in order, furniture and notes left out.

PDFium (through pypdfium2) gives every text object of a page with its box, font and size; typeset papers
put one line of a column in one object, split where the font changes. From those this module rebuilds:

- lines: objects on one baseline and next to each other (a two-column page has two lines at each height);
  a small raised object after a word (a footnote mark) is left out;
- reading order: per page, bands between lines that span both columns (or a rule drawn across the gutter
  between them: APS closes its balanced columns so before the reference list), each band's left column
  before its right column;
- page furniture: the top and bottom lines that repeat across pages once their digits are ignored (running
  heads), and lone page numbers;
- footnotes: the run of smaller-type lines that closes a column, and display equations (lines set mostly in
  math fonts, and their "(3)" numbers);
- what each line is: the title (the largest type at the top of the first page), a heading (bold or larger
  type, short, no final stop; its level from its type size), the first line of a paragraph (indented, or
  after a gap), or a reference entry's first line (flush left where the others hang).

`citewise.index.loaders` turns the lines into paragraphs and sections; nothing here knows about documents.

The package, by job: `lines` (text objects into lines: what a line is), `pages` (one page's lines, its
tables, figures and rules; OCR for a page with no text layer), `order` (columns and bands into reading
order, tags beside their descriptions), `furniture` (running heads, line numbers, stamps, notes, equations,
contents), `headings` (the title, headings, run-in heads) and `starts` (where paragraphs and reference
entries begin).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from citewise.index.pdf.furniture import mark_contents, mark_furniture, mark_index, mark_notes_and_equations
from citewise.index.pdf.headings import (
    join_wrapped_headings,
    mark_headings,
    mark_title,
    split_run_in_headings,
)
from citewise.index.pdf.lines import MONO_FONT, Line
from citewise.index.pdf.order import join_split_tables, mark_tags, reading_order
from citewise.index.pdf.pages import (
    WordGaps,
    caption_at_foot,
    garbled_pages,
    has_image,
    ocr_lines,
    page_lines,
    same_sized_ocr,
)
from citewise.index.pdf.starts import LISTING_LINE, mark_starts
from citewise.index.tables import CarriedCaption

__all__ = ["Layout", "Line", "PdfReadError", "iter_text", "read_layout"]

logger = logging.getLogger(__name__)


class PdfReadError(Exception):
    """The PDF cannot be read at all; the message says why."""


@dataclass
class Layout:
    """A PDF read as lines in reading order, with its page count, metadata title and body type size."""

    lines: list[Line]
    pages: int
    metadata_title: str
    body_size: float
    ocr_pages: list[int] = field(default_factory=list)
    """Pages (0-based) read by OCR: they had an image and no text layer."""
    image_pages: list[int] = field(default_factory=list)
    """Pages (0-based) with an image and no text layer that were not read (no OCR engine, or it failed)."""
    garbled_pages: list[int] = field(default_factory=list)
    """Pages (0-based) whose text layer maps its glyphs to no characters (`pages.garbled_pages`): read by OCR
    (then in `ocr_pages` too) or, with no OCR engine, left without text."""


def read_layout(path: Path, data: bytes, on_page: Callable[[int, int], None] | None = None) -> Layout:
    """Read a PDF's lines in reading order (see the module docstring); `on_page(read, pages)` after each page.

    Raises:
        PdfReadError: the file is not a PDF PDFium can open, or it needs a password.
    """
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as error:
        if "password" in str(error).lower():
            raise PdfReadError("encrypted PDF (needs a password)") from error
        raise PdfReadError(f"corrupt or unreadable PDF ({error})") from error
    try:
        title = str(pdf.get_metadata_dict().get("Title") or "")
        pages: list[list[Line]] = []
        ocr_pages: list[int] = []
        image_pages: list[int] = []
        carried: CarriedCaption | None = None  # a caption a page ended with, its table not under it
        gaps = WordGaps()
        for number in range(len(pdf)):
            try:
                lines = page_lines(pdf, number, carried, gaps)
                if carried is not None and any(x.table and x.table.caption == carried.text for x in lines):
                    for line in pages[-1]:  # the caption is the table's now, on the next page
                        if id(line) in carried.source:
                            line.kind = "furniture"
                carried = caption_at_foot(lines)
                if not lines and has_image(pdf, number):
                    lines = ocr_lines(pdf, number, path)
                    (ocr_pages if lines else image_pages).append(number)
                pages.append(lines)
            except (pdfium.PdfiumError, ValueError, OSError) as error:
                logger.warning("%s: page %d skipped: %s", path, number + 1, error)
                pages.append([])
                carried = None
            if on_page is not None:
                on_page(number + 1, len(pdf))
        garbled = garbled_pages(pages)
        for number in garbled:
            # its words are not the page's: read by OCR, or no text rather than noise in the index
            pages[number] = ocr_lines(pdf, number, path)
            if pages[number]:
                ocr_pages.append(number)
            done = "read by OCR" if pages[number] else "left without text"
            logger.warning(
                "%s: page %d's text layer maps its glyphs to no characters: %s", path, number + 1, done
            )
        count = len(pdf)
    finally:
        pdf.close()
    if ocr_pages:
        same_sized_ocr(pages, ocr_pages)
    body, face = body_face(pages)
    mark_furniture(pages)
    ordered = join_split_tables([line for page in pages for line in reading_order(page)])
    mark_tags(ordered)
    mark_notes_and_equations(ordered, body)
    mark_title(ordered, body)
    mark_headings(ordered, body)
    ordered = join_wrapped_headings(ordered)
    mark_contents(ordered)
    mark_starts(ordered, body, face)
    ordered = split_run_in_headings(ordered)
    mark_index(ordered)
    return Layout(ordered, count, title, body, sorted(ocr_pages), image_pages, garbled)


def body_face(pages: list[list[Line]]) -> tuple[float, str]:
    """The body's type size and face: the prose face and size with the most letters.

    The body is one face in one size: a manual's examples set in another font at 10 pt outweigh its 12 pt
    text by size alone (elsarticle's documentation). It is prose: a package's documentation whose
    implementation part prints its code in 9 pt typewriter has more characters in it than in its 10 pt text
    (Frankenstein's moredefs), so typewriter faces are left aside unless they hold over 80% of the
    characters. And it is words: letters are counted, not an index's page numbers and dot leaders (nomentbl's
    9 pt index has more characters than its 10 pt text, 175 letters to 2,362). Not the larger of two faces
    nearly as common: biblatex-chicago's sample of notes sets its 10 pt notes under 12 pt filler text.
    """
    characters: Counter[tuple[float, str]] = Counter()
    letters: Counter[tuple[float, str]] = Counter()
    # (nor a listing's numbered lines, whatever their share: ftnxtra's documentation is three pages of them
    # in 9 pt typewriter under one paragraph of 10 pt prose, which read as a heading)
    listing = {id(line) for page in pages for line in page if line.code and LISTING_LINE.match(line.text)}
    lines = (line for page in pages for line in page if id(line) not in listing)
    for piece in (piece for line in lines for piece in line.pieces):
        characters[piece.size, piece.font] += len(piece.text)
        letters[piece.size, piece.font] += sum(c.isalpha() for c in piece.text)
    prose = Counter({key: n for key, n in letters.items() if not MONO_FONT.search(key[1])})
    if prose and sum(characters[key] for key in prose) >= 0.2 * characters.total():
        letters = prose
    return letters.most_common(1)[0][0] if letters else (10.0, "")


def iter_text(lines: list[Line]) -> Iterator[Line]:
    """The lines that carry the body's words and tables (not furniture, notes or equations)."""
    return (line for line in lines if line.kind in ("text", "heading", "title", "table"))
