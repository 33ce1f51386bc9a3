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
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import re
import statistics
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from citewise.index.citations import is_reference_heading
from citewise.index.tables import (
    CAPTION,
    CarriedCaption,
    Rule,
    Table,
    centred_in,
    cover,
    find_tables,
    in_page,
    minus,
    page_box,
    page_rules,
)

logger = logging.getLogger(__name__)

MATH_FONT = re.compile(r"Math|CMMI|CMSY|CMEX|MSAM|MSBM|Symbol|rsfs|eufm", re.IGNORECASE)
BOLD_FONT = re.compile(
    r"Bold|Black|Heavy|Semibold|Demi|CMBX|CMSSBX|\b(?:SF|EC)(?:BX|BI|BO|SX)|Medi(?:Ital)?$|-Bd", re.IGNORECASE
)
"""Bold faces by name: PostScript names, Computer Modern (CMBX), cm-super and EC (SFBX, ECBX: their weight
reads 250), URW's Times (NimbusRomNo9L-Medi)."""
ITALIC_FONT = re.compile(
    r"Italic|Oblique|Ital$|-It$|\b(?:SF|EC)(?:TI|SI|SL|BI|IT)|CMTI|CMSL|CMBXTI", re.IGNORECASE
)
"""Italic and slanted faces by name (the same families)."""
CAPS_HEADING_WORD = re.compile(
    r"(?:abstract|references|bibliography|acknowledge?ments?|appendix|introduction|conclusions?|summary"
    r"|discussion|results|methods?)\.?$",
    re.IGNORECASE,
)
"""Headings an unnumbered line in capitals may be."""
RUN_IN_WORD = re.compile(r"(abstract|index terms|keywords)[.:\u2014\u2013]?$", re.IGNORECASE)
"""A heading word a paragraph may open with in its own face ("Abstract—", IEEE)."""
EQUATION_NUMBER = re.compile(r"^\(\d{1,3}[a-z]?\)$")
HEADING_WORD = re.compile(r"(?:abstract|summary|contents|(?:\d{1,2}|[IVX]{1,4})\.?\s+[A-Z])", re.IGNORECASE)
NUMBERED = re.compile(r"(?:\d{1,2}(?:\.\d{1,2})*|[IVX]{1,4}|[A-Z])\.?\s")
SUBSECTION = re.compile(r"\d{1,2}(?:\.\d{1,2})+\.?\s")
"""A subsection's number ("2.2."): a line it opens is a title even when it ends in a stop (Elsevier's
"2.3. Renormalisation.")."""
ENTRY_LABEL = re.compile(r"\[\d{1,3}\]\s")
"""The label a numbered reference entry starts with."""
TEX_FONT = re.compile(r"(?:[A-Z]{6}\+)?(?:CM|EC|TC|SF|LM|MS[AB])[A-Z]*\d+$")
"""A TeX font by its name (Computer Modern, the EC, cm-super and Latin Modern fonts, AMS symbols)."""
SMALL_CAPS_FONT = re.compile(r"CMCSC|\b(?:SF|EC)CC|SmallCap|[-_]SC$|Caps\d*(?:-|$)", re.IGNORECASE)
"""A small-capitals face: its lower-case letters print as capitals (TeX's cmcsc: "Finer Objectives")."""
MONO_FONT = re.compile(r"(?:cm|lm|ec|t1x|x)tt|mono|courier|typewriter|consol", re.IGNORECASE)
"""A typewriter face: a line set wholly in one is code (a command shown on its own line)."""
BULLETS = "\u2022\u25aa\u25cf\u25e6\u2023\u2219\u25b6\u25ba\u27a2"
BULLET = re.compile(f"[{BULLETS}]\\s")
"""A bullet: a line starting with one starts a list item, at a page's or column's top too."""
ITEM_LABEL = re.compile(f"(?:[{BULLETS}*-]|\\(?\\d{{1,2}}[.)]|\\(?[a-z][.)]|\\([ivx]{{1,4}}\\))\\s")
"""A list item's label: a bullet, "3.", "(2)", "b)"."""
LABEL = re.compile(rf"\[\d{{1,3}}\]\s|{ITEM_LABEL.pattern}")
"""A label a list's items open with: ITEM_LABEL's or a reference entry's "[12]"."""
DROP_CAPITAL = 2.5
"""Times the page's usual type size an initial letter set over several lines is at least."""
OVERHANG = 5.0
"""Points a line's end must stand beyond every other line's to be passed over as overhanging."""
SENTENCE_END = re.compile(r"(?:[a-z]{2}|[\])])[.!?](?:\s|$)")
"""A sentence's end: a word's (not a numeral's: "II. METHOD") or a citation's ("[3]."), stop."""
LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"})


class PdfReadError(Exception):
    """The PDF cannot be read at all; the message says why."""


@dataclass
class Piece:
    """One text object: its box (PDF points, y up), text, type size and font."""

    left: float
    bottom: float
    right: float
    top: float
    text: str
    size: float
    font: str
    bold: bool

    @property
    def italic(self) -> bool:
        """Whether it is set in an italic or slanted face."""
        return bool(ITALIC_FONT.search(self.font)) and not self.math

    @property
    def math(self) -> bool:
        """Whether it is set in a math font."""
        return bool(MATH_FONT.search(self.font))


@dataclass
class Line:
    """A line of text as read: its pieces left to right and what the layout says it is."""

    pieces: list[Piece]
    page: int
    column: str = "full"  # "left", "right" or "full" (spans the page's middle)
    kind: str = "text"  # "text", "title", "heading", "equation", "furniture", "note", "table"
    level: int = 0  # heading level, 1 for the largest headings
    starts: bool = False  # starts a paragraph (or a reference entry)
    edge: float = 0.0  # the left edge of its column on its page
    far_edge: float = 0.0  # the right edge of its column on its page
    table: Table | None = None  # a table's rows and caption; its text is then the table in Markdown
    band: int = 0  # how many rules across the page's middle stand above it (each closes the columns)
    cut: bool = False  # what is left of a line a table took pieces of
    text: str = field(default="", init=False)

    def __post_init__(self) -> None:
        self.text = self.table.markdown() if self.table else _line_text(self.pieces)

    @property
    def left(self) -> float:
        """Its leftmost x."""
        return min(p.left for p in self.pieces)

    @property
    def right(self) -> float:
        """Its rightmost x."""
        return max(p.right for p in self.pieces)

    @property
    def top(self) -> float:
        """The top of its type."""
        return max(p.top for p in self.pieces)

    @property
    def bottom(self) -> float:
        """The bottom of its type."""
        return min(p.bottom for p in self.pieces)

    @property
    def size(self) -> float:
        """The type size most of its characters are set in."""
        weights: Counter[float] = Counter()
        for piece in self.pieces:
            weights[round(piece.size, 1)] += len(piece.text.strip())
        return weights.most_common(1)[0][0]

    @property
    def bold(self) -> bool:
        """Whether most of its letters are bold."""
        letters = [(p.bold, len(p.text.strip())) for p in self.pieces if not p.math]
        return bool(letters) and sum(n for b, n in letters if b) > 0.6 * sum(n for _, n in letters)

    @property
    def italic(self) -> bool:
        """Whether most of its letters are italic."""
        letters = [(p.italic, len(p.text.strip())) for p in self.pieces if not p.math]
        return bool(letters) and sum(n for i, n in letters if i) > 0.6 * sum(n for _, n in letters)

    @property
    def heading_size(self) -> float:
        """Its type size as a heading's: small capitals count at their capitals' size."""
        return max(p.size for p in self.pieces) if self.caps else self.size

    @property
    def caps(self) -> bool:
        """Whether its letters are all capitals (small capitals read so too), three at least, maths aside."""
        letters = [
            c.upper() if SMALL_CAPS_FONT.search(p.font) else c
            for p in self.pieces
            if not p.math
            for c in p.text
            if c.isalpha()
        ]
        return len(letters) >= 3 and all(c.isupper() for c in letters)

    @property
    def code(self) -> bool:
        """Whether it is set wholly in a typewriter face (code, a command, a file shown on its own)."""
        return all(MONO_FONT.search(p.font) for p in self.pieces if p.text.strip())

    @property
    def math_share(self) -> float:
        """The share of its characters set in math fonts."""
        chars = sum(len(p.text.strip()) for p in self.pieces) or 1
        return sum(len(p.text.strip()) for p in self.pieces if p.math) / chars


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


def read_layout(path: Path, data: bytes) -> Layout:
    """Read a PDF's lines in reading order (see the module docstring).

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
        pages, ocr_pages, image_pages = [], [], []
        carried: CarriedCaption | None = None  # a caption a page ended with, its table not under it
        for number in range(len(pdf)):
            try:
                lines = page_lines(pdf, number, carried)
                if carried is not None and any(x.table and x.table.caption == carried.text for x in lines):
                    for line in pages[-1]:  # the caption is the table's now, on the next page
                        if id(line) in carried.source:
                            line.kind = "furniture"
                carried = _caption_at_foot(lines)
                if not lines and _has_image(pdf, number):
                    lines = _ocr_lines(pdf, number, path)
                    (ocr_pages if lines else image_pages).append(number)
                pages.append(lines)
            except (pdfium.PdfiumError, ValueError, OSError) as error:
                logger.warning("%s: page %d skipped: %s", path, number + 1, error)
                pages.append([])
                carried = None
        count = len(pdf)
    finally:
        pdf.close()
    faces: Counter[tuple[float, str]] = Counter()
    for piece in (piece for page in pages for line in page for piece in line.pieces):
        faces[piece.size, piece.font] += len(piece.text)
    # the body is one face in one size: a manual's examples set in another font at 10 pt outweigh its
    # 12 pt text by size alone (elsarticle's documentation)
    body, face = faces.most_common(1)[0][0] if faces else (10.0, "")
    _mark_furniture(pages)
    ordered = _join_split_tables([line for page in pages for line in _reading_order(page)])
    _mark_notes_and_equations(ordered, body)
    _mark_title(ordered, body)
    _mark_headings(ordered, body)
    ordered = _join_wrapped_headings(ordered)
    _mark_contents(ordered)
    _mark_starts(ordered, body, face)
    ordered = _split_run_in_headings(ordered)
    return Layout(ordered, count, title, body, ocr_pages, image_pages)


def _has_image(pdf: object, number: int) -> bool:
    """Whether a page draws an image (a scan; a blank page has none)."""
    import pypdfium2.raw as raw

    return any(True for _ in pdf[number].get_objects(filter=[raw.FPDF_PAGEOBJ_IMAGE]))  # type: ignore[index]


def _ocr_lines(pdf: object, number: int, path: Path) -> list[Line]:
    """A page with no text layer read by OCR (`citewise.index.ocr`); no lines without an OCR engine."""
    from citewise.index import ocr

    if not ocr.available():
        return []
    page = pdf[number]  # type: ignore[index]
    try:
        words = ocr.page_words(page, page.get_height())
    except ocr.OcrError as error:
        logger.warning("%s: page %d has no text layer and OCR failed: %s", path, number + 1, error)
        return []
    pieces = [Piece(*word, font="OCR", bold=False) for word in words]
    logger.info("%s: page %d read by OCR (%d words)", path, number + 1, len(pieces))
    return _group_lines(pieces, number)


# --- pages into lines ----------------------------------------------------------------------------------


def page_lines(pdf: object, number: int, carried: CarriedCaption | None = None) -> list[Line]:
    """The text lines of one page (0-based `number`) of an open pypdfium2 document: box, font, size.

    `carried`: a caption the page before ended with (`_caption_at_foot`), whose table may open this page.
    """
    import pypdfium2.raw as raw

    page = pdf[number]  # type: ignore[index]
    textpage = page.get_textpage()
    width, height = page.get_size()
    figures: dict[int, tuple[Any, bool]] = {}  # outermost form -> whether it is a figure
    pieces = []
    for obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_TEXT], textpage=textpage):
        text = obj.extract().translate(LIGATURES).replace("\x02", "-")  # PDFium marks a line-end hyphen
        if not text.strip() or obj.container is not None and _in_figure(obj, figures, (width, height)):
            continue
        left, _, right, _ = page_box(obj)
        matrix = obj.get_matrix().get()
        # the type's height: the matrix's vertical axis (microtype's font expansion widens glyphs, a = 1.02)
        size = obj.get_font_size() * (math.hypot(matrix[2], matrix[3]) or 1.0)
        baseline = matrix[5]
        if obj.container is not None:  # in a form: its matrices scale and move the type too
            (x0, y0), (x1, y1) = in_page(obj, matrix[4], matrix[5]), in_page(obj, matrix[4], matrix[5] + 1.0)
            size, baseline = size * (math.hypot(x1 - x0, y1 - y0) or 1.0), y0
        # the height of the type, from the baseline, not the glyphs' own box: an "x" or a "." is as tall as
        # the line they stand in, and a subscript's baseline sits just below it
        bottom, top = baseline - 0.25 * size, baseline + 0.75 * size
        font = obj.get_font()
        name = font.get_base_name() or ""
        # TeX's own fonts say their weight in their name (CMBX bold, CMR not); the weight PDFium reports
        # for them (dvips and Ghostscript: CMR12 732) says nothing
        bold = bool(BOLD_FONT.search(name)) or font.get_weight() >= 600 and not TEX_FONT.match(name)
        pieces.append(Piece(left, bottom, right, top, text, round(size, 1), name, bold))
    rules = page_rules(page)
    lines = _with_tables(_group_lines(pieces, number), rules, textpage, number, carried)
    _mark_bands(lines, rules)
    _mark_ruled_notes(lines, rules)
    return lines


def _mark_ruled_notes(lines: list[Line], rules: list[Rule]) -> None:
    """Footnotes under a footnote rule: a short rule at a column's left, the lines under it smaller.

    SPIE sets its 9 pt notes under 10 pt text, too close in size to tell them by type alone.
    """
    text = [line for line in lines if line.kind == "text"]
    if len(text) < 4:
        return
    usual = statistics.median(line.size for line in text)
    for rule in rules:
        if not rule.horizontal or not 20 <= rule.right - rule.left <= 0.45 * (
            max(x.right for x in text) - min(x.left for x in text)
        ):
            continue
        under = [x for x in text if x.top < rule.bottom and x.left >= rule.left - 2 and x.left < rule.right]
        above = [x for x in text if x.bottom > rule.top and x.left < rule.right and x.right > rule.left]
        close = under and min(abs(rule.bottom - x.top) for x in under) < 2 * usual
        at_left = any(abs(x.left - rule.left) < 3 for x in [*under, *above])
        if close and at_left and above and all(x.size < 0.97 * usual for x in under):
            for line in under:
                line.kind = "note"


def _in_figure(obj: Any, figures: dict[int, tuple[Any, bool]], page: tuple[float, float]) -> bool:
    """Whether a text object stands in a figure: a Form XObject printed smaller than half the page.

    A figure's labels ("inlet valve", the text of a specimen page shown shrunk) are no passage of the text
    and, placed where they print, run into the lines beside them. A form as large as the page (a page a tool
    wrapped whole) holds the text itself.
    """
    form = obj.container
    while form.container is not None:
        form = form.container
    if id(form) not in figures:  # the form is kept with its answer, so its id is not reused meanwhile
        left, bottom, right, top = page_box(form)
        width, height = page
        # what of it lies on the page (a specimen page shown shrunk and cut declares its whole box)
        seen = max(0.0, min(right, width) - max(left, 0.0)) * max(0.0, min(top, height) - max(bottom, 0.0))
        figures[id(form)] = (form, seen < 0.5 * width * height)
    return figures[id(form)][1]


def _mark_bands(lines: list[Line], rules: list[Rule]) -> None:
    """Number the stretches of a page between horizontal rules drawn across its middle, in gaps of the text.

    Two columns balanced above such a rule end there: what follows is read after both (revtex's rule over
    its reference list, a rule under a title block). A footnote rule stays in its column and counts not.
    """
    text = [line for line in lines if line.kind != "table"]
    if not text:
        return
    left_edge, right_edge = min(line.left for line in text), max(line.right for line in text)
    middle, width = (left_edge + right_edge) / 2, right_edge - left_edge
    across = sorted(
        (
            rule.top
            for rule in rules
            if rule.horizontal
            and rule.left < middle - 0.1 * width
            and rule.right > middle + 0.1 * width
            and not any(line.bottom < rule.top and rule.bottom < line.top for line in text)
        ),
        reverse=True,
    )
    for line in lines:
        line.band = sum(1 for top in across if top > line.top - 0.1 * line.size)


def _caption_at_foot(lines: list[Line]) -> CarriedCaption | None:
    """A table's caption the page ends with (its lines the lowest of their column), or None."""
    text = [x for x in lines if x.kind == "text" and x.text.strip() and not x.text.strip().isdigit()]
    for line in sorted(text, key=lambda x: x.top)[:3]:  # the three lowest lines
        if CAPTION.match(line.text):
            below = [x for x in text if x.top < line.bottom and x.right > line.left and x.left < line.right]
            rest = sorted(below, key=lambda x: -x.top)
            if len(rest) <= 2 and all(abs(x.left - line.left) < 2 * line.size for x in rest):
                parts = [line, *rest]
                return CarriedCaption(
                    " ".join(x.text for x in parts), line.size, source={id(x) for x in parts}
                )
    return None


def _with_tables(
    lines: list[Line], rules: list[Rule], textpage: object, page: int, carried: CarriedCaption | None = None
) -> list[Line]:
    """A page's lines with each table on it (`citewise.index.tables`) made one line of kind "table"."""
    words: list[Piece] | None = None

    def words_in(left: float, bottom: float, right: float, top: float) -> list[Piece]:
        nonlocal words
        words = _words(textpage) if words is None else words
        return [
            w for w in words if left <= w.right and w.left <= right and bottom <= w.top and w.bottom <= top
        ]

    tables = find_tables(lines, rules, words_in, carried)
    if not tables:
        return lines
    taken = {id(line) for table in tables for line in table.lines}
    kept = []
    for line in lines:
        if id(line) in taken:
            continue
        pieces = [p for p in line.pieces if not any(centred_in(p, table.box) for table in tables)]
        if len(pieces) == len(line.pieces):
            kept.append(line)
        elif pieces:  # a line that ran into a table (a justified column beside a wide one)
            kept.append(Line(pieces, page, cut=True))
    return kept + [Line(table.words, page, kind="table", table=table) for table in tables]


def _words(textpage: object) -> list[Piece]:
    """A page's words from its characters (PDFium's spaces, or a gap of a quarter em, end a word)."""
    import pypdfium2.raw as raw

    words: list[Piece] = []
    current: Piece | None = None
    for index in range(textpage.count_chars()):  # type: ignore[attr-defined]
        char = chr(raw.FPDFText_GetUnicode(textpage, index)).replace("\x02", "-")  # PDFium's line-end hyphen
        if char.isspace() or not char.isprintable():
            current = None
            continue
        left, bottom, right, top = textpage.get_charbox(index, loose=True)  # type: ignore[attr-defined]
        size = 0.85 * (top - bottom)  # the loose box spans the font's ascent and descent
        if (
            current is None
            or left - current.right > 0.25 * max(size, current.size)
            or left < current.left
            or abs(bottom + top - current.bottom - current.top) > 0.7 * max(size, current.size)  # centres
        ):
            current = Piece(left, bottom, right, top, "", size, "", False)
            words.append(current)
        current.text += char.translate(LIGATURES)
        current.right, current.top = max(current.right, right), max(current.top, top)
    return words


def _group_lines(pieces: list[Piece], page: int) -> list[Line]:
    """Pieces on one baseline (sub- and superscripts too) and next to each other, as lines.

    Small raised marks after a word (footnote marks) are dropped.
    """
    if not pieces:
        return []
    lines: list[list[Piece]] = []
    buckets: dict[int, list[list[Piece]]] = {}
    bounds: dict[int, list[float]] = {}
    caps = _drop_capitals(pieces)
    for piece in sorted(pieces, key=lambda p: p.left):  # left to right: a line grows at its right end
        if piece not in caps:
            _place(lines, buckets, bounds, piece)
    lines = _join_spaced_words(lines)
    for cap in caps:  # the letter goes before the first line it stands beside
        beside = [
            line
            for line in lines
            if 0 <= min(p.left for p in line) - cap.right < 3 * line[0].size
            and cap.bottom < _bottom(line) < cap.top
        ]
        if beside:
            first = max(beside, key=_top)
            for line in beside:  # the lines beside it stand at the column's edge, which the letter holds
                line.sort(key=lambda p: p.left)
                text = cap.text.strip() + line[0].text.lstrip() if line is first else line[0].text
                line[0] = dataclasses.replace(line[0], text=text, left=cap.left)
        else:
            lines.append([cap])
    out = []
    for pieces_of_line in lines:
        main = max(pieces_of_line, key=lambda p: len(p.text))
        kept = [p for p in pieces_of_line if p is main or not _footnote_mark(pieces_of_line, main, p)]
        out.append(Line(sorted(kept, key=lambda p: p.left), page))
    return [line for line in out if line.text.strip()]


def _drop_capitals(pieces: list[Piece]) -> list[Piece]:
    """Initial letters set in large type over several lines at a paragraph's start ("T" of "This")."""
    if not pieces:
        return []
    usual = statistics.median(p.size for p in pieces)
    return [
        p
        for p in pieces
        if len(p.text.strip()) == 1 and p.text.strip().isupper() and p.size >= DROP_CAPITAL * usual
    ]


def _place(
    lines: list[list[Piece]],
    buckets: dict[int, list[list[Piece]]],
    bounds: dict[int, list[float]],
    piece: Piece,
) -> None:
    """Add a piece to the line it overlaps most, or start a line when none is on its baseline beside it.

    `bounds` keeps each line's top, bottom, left, right and largest size as it grows (a browser's line is
    made of a piece per glyph: measuring its pieces again for each new one cost most of a page's reading).
    """
    best, most = None, 0.0
    centre = int((piece.top + piece.bottom) / 2 // 4)
    for line in (line for key in range(centre - 3, centre + 4) for line in buckets.get(key, ())):
        top, bottom, left, right, largest = bounds[id(line)]
        overlap = min(top, piece.top) - max(bottom, piece.bottom)
        size = min(piece.size, largest)
        # a heading's number, or a reference entry's label, stands a quad (1 em) before its words;
        # elsewhere a gap of 0.8 em is a gutter
        label = line[0].text.strip() + " "
        reach = 1.5 if len(line) == 1 and (NUMBERED.fullmatch(label) or ENTRY_LABEL.fullmatch(label)) else 0.8
        gap = max(piece.left - right, left - piece.right)  # negative where they overlap
        if overlap >= 0.5 * min(top - bottom, piece.top - piece.bottom) and gap < reach * size:
            if overlap > most:
                best, most = line, overlap
    if best is None:
        best = [piece]
        lines.append(best)
        buckets.setdefault(centre, []).append(best)
        bounds[id(best)] = [piece.top, piece.bottom, piece.left, piece.right, piece.size]
    else:
        best.append(piece)
        box = bounds[id(best)]
        box[0], box[1] = max(box[0], piece.top), min(box[1], piece.bottom)
        box[2], box[3], box[4] = min(box[2], piece.left), max(box[3], piece.right), max(box[4], piece.size)


SPACED_WORDS = 4.0
"""Ems a justified line may space two words apart at most (a wider gap is never a word space)."""
GUTTER_WINDOW = 15.0
"""Line heights above and below a gap within which rows tell a column gutter from a wide word space."""
TELLING = 3
"""The nearest rows on each side of a gap, with letters on both sides of it, that decide it."""


def _join_spaced_words(lines: list[list[Piece]]) -> list[list[Piece]]:
    """Lines on one baseline split at a gap that is no gutter joined again: justified text.

    A browser or office program justifying a line spaces its words apart, often further than the 0.8 em
    `_place` takes for a gutter ("Cellular" / "wireless" / "systems" read as three lines). A gutter runs down
    the page: the lines above and below it leave it empty. A wide word space does not: the lines around it
    have letters where it is (`_word_space`).
    """
    if len(lines) < 2:
        return lines
    rows = _rows(lines)
    covers = [_cover(row) for row in rows]
    centres = [(_top(row[0]) + _bottom(row[0])) / 2 for row in rows]  # highest first, as `_rows` makes them
    joined: list[list[Piece]] = []
    for n, row in enumerate(rows):
        row.sort(key=lambda line: min(p.left for p in line))
        current = row[0]
        for line in row[1:]:
            size = max(p.size for p in current + line)
            left, right = max(p.right for p in current), min(p.left for p in line)
            window = GUTTER_WINDOW * max(_height(current), _height(line))
            if 0 <= right - left < SPACED_WORDS * size and _word_space(
                *_around(covers, centres, n, window), left, right, size
            ):
                current = current + line
            else:
                joined.append(current)
                current = line
        joined.append(current)
    return joined


def _around(
    covers: list[list[tuple[float, float]]], centres: list[float], n: int, window: float
) -> tuple[list[list[tuple[float, float]]], list[list[tuple[float, float]]]]:
    """The covers of the rows within `window` above and below row `n`, nearest first (rows run downwards)."""
    above = [covers[m] for m in range(n - 1, -1, -1) if centres[m] - centres[n] <= window]
    below = [covers[m] for m in range(n + 1, len(covers)) if centres[n] - centres[m] <= window]
    return above, below


def _rows(lines: list[list[Piece]]) -> list[list[list[Piece]]]:
    """Lines grouped by baseline: each overlapping the row's first by half its height, in one type size."""
    rows: list[list[list[Piece]]] = []
    for line in sorted(lines, key=lambda line: -(_top(line) + _bottom(line))):
        for row in rows[-3:]:
            first = row[0]
            overlap = min(_top(first), _top(line)) - max(_bottom(first), _bottom(line))
            sizes = max(p.size for p in first), max(p.size for p in line)
            if overlap >= 0.5 * min(_height(first), _height(line)) and min(sizes) >= 0.8 * max(sizes):
                row.append(line)
                break
        else:
            rows.append([line])
    return rows


def _cover(row: list[list[Piece]]) -> list[tuple[float, float]]:
    """The x ranges a row's letters cover, merged where the letters of a word touch (within 0.15 em)."""
    return cover([p for line in row for p in line])


def _word_space(
    above: list[list[tuple[float, float]]],
    below: list[list[tuple[float, float]]],
    left: float,
    right: float,
    size: float,
) -> bool:
    """Whether the gap from `left` to `right` is a word space, by the rows above and below it (nearest first).

    A gutter runs down the page: the nearest rows on one side of the gap (TELLING of them with letters on
    both sides of it) leave a common strip of it empty, at least 0.4 em wide. Word spaces do not line up
    like that from row to row. Full-width lines (a title, a running head) cover a gutter, so each side is
    judged alone: at the top of a column the rows below tell. With fewer than two rows that tell on either
    side, the gap is kept (as `_place` left it).
    """
    judged = False
    for rows in (above, below):
        telling = [
            cover for cover in rows if any(a < left for a, _ in cover) and any(b > right for _, b in cover)
        ][:TELLING]
        if len(telling) < 2:
            continue
        judged = True
        empty = [(left, right)]
        for spans in telling:
            empty = minus(empty, spans)
        if any(b - a >= 0.4 * size for a, b in empty):
            return False
    return judged


def _top(line: list[Piece]) -> float:
    return max(p.top for p in line)


def _bottom(line: list[Piece]) -> float:
    return min(p.bottom for p in line)


def _height(line: list[Piece]) -> float:
    return _top(line) - _bottom(line)


def _footnote_mark(line: list[Piece], main: Piece, piece: Piece) -> bool:
    """A small raised digit or symbol after text: a footnote mark, not a word of the line."""
    return (
        piece.size < 0.85 * main.size  # MNRAS sets its marks at 7.3 pt in 9 pt text
        and piece.bottom > main.bottom + 0.25 * (main.top - main.bottom)
        and len(piece.text.strip()) <= 3
        and not piece.math
        and not any(p.math for p in line if abs(p.right - piece.left) < 1)
        and bool(re.fullmatch(r"[\d*\u2020\u2021\u00a7\u00b6,]+", piece.text.strip()))
    )


def _line_text(pieces: list[Piece]) -> str:
    """A line's text: pieces apart by a word space, or after a stop, are spaced.

    Text set glyph by glyph (a browser's centred or table text) carries its spaces in its pieces, and a
    narrow glyph's box stands far from the next ("1" and ":" in "Table 1:"): there only a piece's own space,
    or a gap of more than a third of an em, is a word space.
    """
    text = ""
    size = max((p.size for p in pieces), default=10.0)
    for before, piece in zip([None, *pieces], pieces, strict=False):
        if text and before is not None:
            gap = piece.left - before.right
            if len(before.text.strip()) == 1 and len(piece.text.strip()) == 1:  # set glyph by glyph
                apart = before.text != before.text.rstrip() or gap > 0.35 * size
            else:
                # a piece's own space (pdfTeX keeps it: "The journal " before an italic "Monthly") or a gap
                own = before.text[-1:].isspace() or piece.text[:1].isspace()
                apart = own or gap > 0.2 * size or text[-1] in ",;:."
            text += " " if apart else ""
        text += piece.text.strip()
    return " ".join(text.split())


# --- reading order -------------------------------------------------------------------------------------


def _reading_order(lines: list[Line]) -> list[Line]:
    """Bands between full-width lines; in each band the left column, then the right one."""
    body = [line for line in lines if line.kind != "furniture"]
    if not body:
        return lines
    left_edge = -_shared_extreme([-line.left for line in body])
    right_edge = _shared_extreme([line.right for line in body])
    middle, slack = (left_edge + right_edge) / 2, 0.02 * (right_edge - left_edge)
    for line in body:
        if line.right < middle + slack:
            line.column = "left"
        elif line.left > middle - slack:
            line.column = "right"
    # the short last line of a paragraph set across both columns (an abstract) goes on across them
    previous = None
    for line in sorted(body, key=lambda line: -line.top):
        if (
            previous is not None
            and previous.column == "full"
            and line.column != "full"
            and abs(line.left - previous.left) < 1
            and 0 <= previous.bottom - line.top < 0.6 * line.size
            and line.right - line.left < 0.4 * (right_edge - left_edge)  # shorter than a column's line
        ):
            line.column = "full"
        previous = line
    # two columns when most lines of some length sit in one half or the other (display fragments and the
    # short last lines of paragraphs do not make a column)
    long = [line for line in body if line.right - line.left >= 0.35 * (right_edge - left_edge)]
    sides = Counter(line.column for line in long)
    two_columns = min(sides["left"], sides["right"]) >= 3 and sides["left"] + sides["right"] > 0.5 * len(long)
    if not two_columns:
        for line in lines:
            line.column = "full"
    ordered: list[Line] = []
    band: list[Line] = []
    for line in sorted(lines, key=lambda line: (line.band, -line.top)):
        if two_columns and line.column == "full" and line.kind != "furniture":
            ordered.extend(_band(band))
            band = []
            ordered.append(line)
        else:
            if band and line.band != band[-1].band and line.kind != "furniture":
                ordered.extend(_band(band) if two_columns else band)
                band = []
            band.append(line)
    ordered.extend(_band(band) if two_columns else band)
    for column in ("left", "right", "full"):
        lines_of_column = [line for line in ordered if line.column == column and line.kind != "furniture"]
        rights = [line.right for line in lines_of_column]
        # the column's left edge: where its long lines start, the leftmost x shared by two of them
        widest = max((line.right - line.left for line in lines_of_column), default=0.0)
        starts = Counter(
            round(line.left) for line in lines_of_column if line.right - line.left > 0.7 * widest
        )
        shared = [x for x, count in starts.items() if count >= 2]
        edge = float(min(shared)) if shared else min((line.left for line in lines_of_column), default=0.0)
        far_edge = max(rights, default=0.0)
        if two_columns and column == "full":  # a line across both columns stands in the whole text block
            edge, far_edge = left_edge, right_edge
        for line in ordered:
            if line.column == column:
                line.edge, line.far_edge = edge, far_edge or line.right
    return ordered


def _join_split_tables(lines: list[Line]) -> list[Line]:
    """A table's rows carried over to the next page (no caption, as many columns) joined to the table.

    Word and LibreOffice move the rows that do not fit to the next page; the part there, read alone, had no
    caption and no header. A header repeated over the carried rows is dropped.
    """
    out: list[Line] = []
    last: Line | None = None  # the last line that is not page furniture
    for line in lines:
        table, before = line.table, last.table if last is not None else None
        if (
            last is not None
            and table is not None
            and before is not None
            and not table.caption
            and line.page == last.page + 1
            and len(table.rows[0]) == len(before.rows[0])
        ):
            before.rows.extend(table.rows[1:] if table.rows[0] == before.rows[0] else table.rows)
            last.text = before.markdown()
            continue
        out.append(line)
        if line.kind != "furniture":
            last = line
    return out


def _shared_extreme(values: list[float]) -> float:
    """The largest value, passing over one or two that stand OVERHANG points or more beyond the rest.

    Where the text block ends, not a URL that overhangs its column's edge: it moved the page's middle past
    the right column's reference labels, which were then read as lines across both columns. Ragged lines end
    close to one another and are all kept.
    """
    ordered = sorted(values, reverse=True)
    at = 0
    while at < min(2, len(ordered) - 1) and ordered[at] - ordered[at + 1] >= OVERHANG:
        at += 1
    return ordered[at]


def _band(lines: list[Line]) -> list[Line]:
    furniture = [line for line in lines if line.kind == "furniture"]
    left = [line for line in lines if line.column != "right" and line.kind != "furniture"]
    right = [line for line in lines if line.column == "right" and line.kind != "furniture"]
    return [*left, *right, *furniture]


def _mark_furniture(pages: list[list[Line]]) -> None:
    """Running heads (top or bottom lines repeated across pages, digits aside) and lone page numbers."""

    def shape(line: Line) -> str:
        # digits aside, wherever they stand: a page number is a word of its own line on some pages only
        return " ".join(re.sub(r"\d+", " ", line.text.lower()).split())

    ends: list[list[Line]] = []
    one_page = sum(bool(page) for page in pages) == 1
    for lines in pages:
        by_height = sorted(lines, key=lambda line: -line.top)
        ends.append([*by_height[:2], *by_height[-2:]] if len(by_height) > 4 else by_height)
        if one_page and len(by_height) > 4:
            # nothing repeats on one page: a line set apart by a margin's gap, in body type or smaller
            head, foot = by_height[0], by_height[-1]
            size = statistics.median(line.size for line in by_height)
            if head.bottom - by_height[1].top > 2.5 * size and head.size <= 1.05 * size:
                head.kind = "furniture"
            if by_height[-2].bottom - foot.top > 2.5 * size and len(foot.text.split()) <= 8:
                foot.kind = "furniture"
    for lines in pages:
        _mark_stamps(lines)
        _mark_line_numbers(lines)
    counts = Counter(s for end in ends for s in {shape(line) for line in end})
    repeated = max(2, min(3, round(0.4 * len(pages))))  # a chapter's own head repeats on its pages
    first_sizes = [line.size for line in pages[0]] if pages and pages[0] else [0.0]
    display = 1.2 * statistics.median(first_sizes)
    for number, end in enumerate(ends):
        for line in end:
            page_number = re.fullmatch(r"(?:page\s*)?[\divxlc]{1,5}(?:\s*(?:of|/)\s*\d+)?", line.text, re.I)
            if number == 0 and line.size > display:  # the title, which later pages repeat as their head
                continue
            if page_number or (len(pages) >= 2 and counts[shape(line)] >= repeated):
                line.kind = "furniture"

    # a sidebar or a footer block: lines standing at the same place with the same words on several pages,
    # wherever on the page (elsarticle's manual repeats a box of links and a four-line footer on every page)
    def place(line: Line) -> tuple[str, int, int]:
        return shape(line), round(line.left), round(line.top)

    placed = Counter(key for lines in pages for key in {place(line) for line in lines})
    for number, lines in enumerate(pages if len(pages) >= 2 else []):
        for line in lines:
            title = number == 0 and line.size > display  # a manual repeats its title in the sidebar
            if placed[place(line)] >= repeated and line.kind == "text" and not title:
                line.kind = "furniture"
    # a line at a page's top, standing where the other pages' running heads stand, in their type, is one
    # too, whatever it says ("Typeset with jpsj2.cls" where later pages say "J. Phys. Soc. Jpn.")
    # (the foot is left alone: a last page's last line may stand where others' feet do)
    tops = []
    for lines in (lines for lines in pages if lines):
        highest = max(line.top for line in lines)
        tops.append([line for line in lines if line.top > highest - 1.0])
    for number, top in enumerate(tops):
        others = [x for n, other in enumerate(tops) if n != number for x in other if x.kind == "furniture"]
        for line in top:
            alike = [
                x for x in others if abs(x.top - line.top) < 1.5 and abs(x.size - line.size) < 0.15 * x.size
            ]
            if line.kind == "text" and len(alike) >= max(2, repeated - 1) and line.size <= display:
                line.kind = "furniture"


def _mark_line_numbers(lines: list[Line]) -> None:
    """Numbers in a page's margin beside its lines (AASTeX's and a draft's line numbers): furniture.

    Five or more lines of digits alone standing wholly left or right of every other line's text.
    """
    numbers = [line for line in lines if re.fullmatch(r"\d{1,4}", line.text)]
    text = [line for line in lines if line not in numbers]
    if len(numbers) < 5 or not text:
        return
    left, right = min(line.left for line in text), max(line.right for line in text)
    margin = [line for line in numbers if line.right < left or line.left > right]
    if len(margin) >= 5:
        for line in margin:
            line.kind = "furniture"


STAMP = re.compile(
    r"[a-z][a-z+.-]{1,9}://\S+|\d{1,2}/\d{1,2}/\d{2,4},?(?:\d{1,2}:\d{2}(?:[AP]M)?)?|\d{1,4}/\d{1,4}",
    re.IGNORECASE,
)
"""What a browser or office program stamps in a page's margin, as a whole line (spaces aside): a URL, a
date (and time), a page counter "3/7". A reference entry's "Available at https://..." is no stamp."""


def _mark_stamps(lines: list[Line]) -> None:
    """The topmost and bottommost rows of a page, in small type, that hold a URL, a date or "n/m": furniture.

    Chromium prints the date and the page's title at the top of every page and the file's URL and "1/3" at
    its foot; on a one-page document nothing repeats to give them away.
    """
    text = [line for line in lines if line.kind == "text"]
    if len(text) < 4:
        return
    size = statistics.median(line.size for line in text)
    highest, lowest = max(line.top for line in text), min(line.bottom for line in text)
    for row in (
        [line for line in text if line.top >= highest - 1],
        [line for line in text if line.bottom <= lowest + 1],
    ):
        stamped = any(STAMP.fullmatch(re.sub(r"\s", "", x.text)) for x in row)
        if row and stamped and all(line.size <= 0.9 * size for line in row):
            for line in row:
                line.kind = "furniture"


def _mark_notes_and_equations(lines: list[Line], body: float) -> None:
    """Display equations and their numbers, then footnotes."""
    numbers = []
    for line in lines:
        if line.kind != "text":
            continue
        words = re.findall(r"[^\W\d_]{3,}", "".join(p.text for p in line.pieces if not p.math))
        if EQUATION_NUMBER.match(line.text):
            line.kind = "equation"
            numbers.append(line)
        elif line.math_share >= 0.3 and len(words) <= 2 or not re.search(r"\w", line.text):
            line.kind = "equation"
        elif line.size < 0.8 * body and len(line.text) <= 3:
            line.kind = "equation"  # a sub- or superscript of a display standing on its own
    # a numbered display set in text fonts: the lines beside its number, and centred lines stacked on them
    for number in numbers:
        for index, line in enumerate(lines):
            beside = _same_column(line, number) and min(line.top, number.top) > max(
                line.bottom, number.bottom
            )
            if line.kind == "text" and beside:
                line.kind = "equation"
                _stacked(lines, index, body)
    _mark_notes(lines, body)


def _mark_notes(lines: list[Line], body: float) -> None:
    """Footnotes: the run of smaller-type lines, set off by a gap, that closes a column.

    Not a run under a reference-list heading, nor one whose lines start entries ("[3] ..."): a reference list
    set small at the end of a column.
    """
    for _, column in itertools.groupby(lines, key=lambda line: (line.page, line.column)):
        segment = [line for line in column if line.kind == "text"]
        run = len(segment)
        while run > 0 and segment[run - 1].size < 0.9 * body:
            run -= 1
        if 0 < run < len(segment) and segment[run - 1].bottom - segment[run].top > 0.3 * body:
            entries = sum(bool(ENTRY_LABEL.match(line.text)) for line in segment[run:])
            if is_reference_heading(segment[run - 1].text) or entries >= 2:
                continue  # a reference list in small type (IEEE, a browser's print), not footnotes
            for line in segment[run:]:
                line.kind = "note"


def _stacked(lines: list[Line], index: int, body: float) -> None:
    """Mark centred lines right above and below an equation line (fraction parts) as equation lines."""
    for step in (-1, 1):
        at, near = index + step, lines[index]
        while 0 <= at < len(lines):
            line = lines[at]
            close = line.page == near.page and abs(line.bottom - near.bottom) < 1.6 * body
            centred = line.left - line.edge > 2 * body and line.far_edge - line.right > 2 * body
            if line.kind not in ("text", "equation") or not close or line.kind == "text" and not centred:
                break
            line.kind, near, at = "equation", line, at + step


def _mark_title(lines: list[Line], body: float) -> None:
    """The largest type at the top of the first page, before any body text; what else stands there."""
    first = [line for line in lines if line.page == lines[0].page and line.kind == "text"] if lines else []
    head: list[Line] = []
    above = 0  # small lines over the title (a journal's name, an arXiv stamp): passed over, then furniture
    for line in first:
        if not head and above < 3 and line.size < 0.95 * body and not HEADING_WORD.match(line.text):
            above += 1
            continue
        if line.size <= 1.05 * body or HEADING_WORD.match(line.text):
            break
        if head and _centred(head[0], body) and not _centred(line, body):
            break  # a heading flush at its column's edge under a centred title block ("Introduction")
        head.append(line)
    if not head:  # a title in body-size type (AASTeX): bold or capitals, centred, over the abstract
        for line in first[above:]:
            # a wrapped title's lines run wide; after a short one, a line in its type is a subtitle or a
            # version ("TrIO: Transparent file I/O" over "Version of 2022-04-30")
            short = bool(head) and head[-1].right - head[-1].left < 0.6 * (head[-1].far_edge - head[-1].edge)
            if head and (_face(line) != _face(head[-1]) or len(head) == 3 or short):
                break
            if not head and not (
                (line.bold or line.caps) and (_centred(line, body) or _unnumbered(line, first))
            ):
                return
            head.append(line)
        if not head or HEADING_WORD.match(head[0].text) or CAPS_HEADING_WORD.match(head[0].text):
            return
    for line in first[:above]:
        line.kind = "furniture"
    largest = max(line.size for line in head)
    for line in head:
        line.kind = "title" if line.size == largest else "furniture"  # authors, dates: not the body
    # centred short lines under the title, before the first heading or paragraph: authors, affiliations
    for line in first[above + len(head) :]:
        if HEADING_WORD.match(line.text) or not _centred(line, body) or len(line.text.split()) > 14:
            break
        line.kind = "furniture"


def _unnumbered(line: Line, first: list[Line]) -> bool:
    """Whether a bold line opening the first page is unnumbered where the headings after it are numbered.

    A title set flush left in body-size bold (a TUGboat draft), not a section heading.
    """
    later = [x for x in first if x is not line and x.bold and x.size == line.size]
    return (
        line is first[0]
        and not NUMBERED.match(line.text)
        and len(line.text.split()) <= 14
        and any(NUMBERED.match(x.text) for x in later[:3])
    )


def _centred(line: Line, body: float) -> bool:
    """Whether a line stands clear of both edges of its column (by an em and a twentieth of the width)."""
    width = line.far_edge - line.edge
    margin = min(line.left - line.edge, line.far_edge - line.right)
    return width > 0 and margin > max(body, 0.05 * width)


def _mark_headings(lines: list[Line], body: float) -> None:
    """Headings: short lines set apart from body text that read like a title; levels by their type.

    Set apart: bold or larger type; or numbered ("2.1", "IV.", "B.") in italic or capitals (IEEE's small
    capitals, Elsevier's italic subsections, AASTeX's capitals); or a heading word in capitals
    ("REFERENCES"). Levels follow the type: larger first, then capitals, bold, italic.
    """
    running = _running_text(lines)
    candidates = [
        line
        for line in lines
        if line.kind == "text"
        and id(line) not in running
        and (line.bold or line.size >= 1.1 * body or _set_apart(line))
        and line.heading_size >= 0.85 * body
        and len(line.text.split()) <= 14
        and re.search(r"[^\W\d_]", line.text)
        and not line.text.endswith((",", ";"))
        # a bold sentence, or a bold line filling its column, is emphasis in a paragraph
        and not (
            line.size < 1.1 * body
            and (line.text.endswith(".") and not _subsection_title(line) or _fills_column(line))
        )
    ]
    spaced = {id(line) for line in _spaced_headings(lines, body)}
    candidates += [
        line for line in lines if id(line) in spaced and id(line) not in {id(c) for c in candidates}
    ]
    considered, chosen = {id(line) for line in candidates}, set()
    for index, line in enumerate(lines):
        if id(line) not in considered:
            continue
        above = lines[index - 1] if index else None
        # a line starting in lower case only goes on from a heading right above it, in the same type
        goes_on = (
            above is not None and id(above) in chosen and (above.size, above.bold) == (line.size, line.bold)
        )
        if not line.text[:1].islower() or goes_on or ITEM_LABEL.match(line.text):  # "a) Rules"
            chosen.add(id(line))
    for index, line in enumerate(lines[1:], start=1):  # a heading's second line in its type: "RESULTS"
        above = lines[index - 1]
        if (
            id(above) in chosen
            and id(above) not in spaced  # one set in the body's type heads the body's next line
            and line.kind == "text"
            and id(line) not in chosen
            and _face(line) == _face(above)
            and _same_column(line, above)
            and 0 <= above.bottom - line.top < 0.6 * line.heading_size
            and len(above.text.split()) + len(line.text.split()) <= 24
            and not line.text.endswith((",", ";"))
        ):
            chosen.add(id(line))
            candidates.append(line)
    candidates = [line for line in candidates if id(line) in chosen]
    styles = sorted({_style(line) for line in candidates})
    for line in candidates:
        line.kind = "heading"
        line.level = styles.index(_style(line)) + 1


def _spaced_headings(lines: list[Line], body: float) -> list[Line]:
    """Headings set in the body's type, told by space alone ("a) Meaning of 'transparent'").

    A short line ending no sentence, with more room above it than below, where the text it heads goes on
    close under it.
    """
    # neighbours as read, page furniture (margin line numbers) passed over: a table or a display between
    # the line and the text above it is what made the room
    read = [line for line in lines if line.kind != "furniture"]
    pitch = _pitch(lines, body)
    found = []
    for above, line, below in zip(read, read[1:], read[2:], strict=False):
        if not above.kind == line.kind == below.kind == "text":
            continue
        words = line.text.split()
        if (
            line.code
            or not 1 <= len(words) <= 8
            or not re.search(r"[^\W\d_]{3}", line.text)
            or line.text.rstrip().endswith((".", ":", ";", ",", "!"))
            or not (_same_column(above, line) and _same_column(line, below))
            or line.right - line.left > 0.6 * (line.far_edge - line.edge)
            or abs(line.size - below.size) > 0.5
            # the text above ended its sentence; a heading opens with a capital or a label ("a) Rules")
            or not above.text.rstrip().endswith((".", "!", "?", ":", ")"))
            or not (line.text[:1].isupper() or line.text[:1].isdigit() or ITEM_LABEL.match(line.text))
        ):
            continue
        if (
            line.cut
            or not _word_fits(line, below)
            or any(
                x is not line and _same_column(x, line) and abs(x.bottom - line.bottom) < 0.3 * line.size
                for x in read
            )
        ):
            continue  # a piece of a line split at a wide gap or by a table, or ragged text that wrapped
        room_above, room_below = above.bottom - line.bottom, line.bottom - below.bottom
        if (
            room_above >= 1.45 * pitch
            and room_below <= 1.4 * pitch
            and room_above >= room_below + 0.35 * pitch
        ):
            found.append(line)
    return found


def _running_text(lines: list[Line]) -> set[int]:
    """Lines (by id) that run on as text: three or more in a face, two filling their column, a sentence ended.

    A letter whose reference list, in smaller type, holds more characters than its body has the body's
    face "larger than the body"; a heading wrapped over three lines of a narrow column ends no sentence.
    """
    found: set[int] = set()
    run: list[Line] = []
    faces = {id(line): _face(line) for line in lines if line.kind == "text"}
    for line in [*lines, None]:
        if line is not None and run and line.kind == "text" and faces[id(line)] == faces[id(run[-1])]:
            # on into the next column or page too, where a paragraph runs on
            if _same_column(line, run[-1]) or run[-1].column != "full" != line.column:
                run.append(line)
                continue
        full = sum(1 for x in run if x.right - x.left > 0.9 * (x.far_edge - x.edge))
        if len(run) >= 3 and full >= 2 and SENTENCE_END.search(" ".join(x.text for x in run)):
            found.update(id(x) for x in run)
        run = [line] if line is not None and line.kind == "text" else []
    return found


def _style(line: Line) -> tuple[float, bool, bool, bool]:
    """A heading's type as it ranks: larger first, then capitals, then bold, then italic."""
    return (-line.heading_size, not line.caps, not line.bold, line.italic)


def _face(line: Line) -> tuple[float, bool, bool, bool]:
    """What a heading's lines share when it wraps: size, capitals, bold, italic.

    Not the heading size: a second line in small capitals may have no capital letter to give it.
    """
    return (line.size, line.caps, line.bold, line.italic)


def _set_apart(line: Line) -> bool:
    """A short line in body-size type that italics or capitals set apart as a heading (see _mark_headings)."""
    words = line.text.split()
    stop = line.text.endswith((".", ":")) and not NUMBERED.fullmatch(line.text + " ")
    if len(words) > 10 or stop and not _subsection_title(line):
        return False
    numbered = bool(NUMBERED.match(line.text)) and len(words) >= 2
    if not re.search(r"[^\W\d_]{3}", line.text):  # initials and numbers ("P. M., 2020, 642"): no title
        return False
    small_caps = all(SMALL_CAPS_FONT.search(p.font) for p in line.pieces if not p.math and p.text.strip())
    if line.caps:  # a line wholly in a small-capitals face is set apart by it (text in capitals is not)
        return small_caps or numbered or bool(CAPS_HEADING_WORD.match(re.sub(r"\s+", "", line.text)))
    return line.italic and numbered


def _subsection_title(line: Line) -> bool:
    """Whether a line is a numbered subsection's short title, stop and all ("2.3. Renormalisation.")."""
    return bool(SUBSECTION.match(line.text)) and 2 <= len(line.text.split()) <= 8


def _fills_column(line: Line) -> bool:
    """Whether an unnumbered line runs the width of its column (a heading that wraps is numbered)."""
    width = line.far_edge - line.edge
    return width > 0 and line.right - line.left > 0.9 * width and not NUMBERED.match(line.text)


def _entry_text(text: str) -> str:
    """A contents line or a heading as compared: lower case, without dot leaders and a page number."""
    text = re.sub(r"(?:\s*\.){2,}\s*\d*\s*$|\s+\d{1,4}\s*$", "", text)
    return " ".join(text.lower().split())


def _mark_contents(lines: list[Line]) -> None:
    """A table of contents: four or more lines in a row that each repeat a heading of the document.

    A page number and dot leaders aside; the "Contents" heading over them goes too. Kept out of passages: a
    contents line quoted as an answer names sections and says nothing.
    """
    headings = Counter(_entry_text(line.text) for line in lines if line.kind == "heading")
    run: list[Line] = []
    for line in lines:
        entry = _entry_text(line.text) if line.kind in ("text", "heading") else ""
        # a heading line starts a run only when its heading stands twice: a contents line read as a heading;
        # a heading already in the run is the document's own, after its contents
        repeated = any(_entry_text(x.text) == entry for x in run)
        if headings[entry] and (line.kind == "text" or run or headings[entry] >= 2) and not repeated:
            run.append(line)
            continue
        _drop_contents(lines, run)
        run = []
    _drop_contents(lines, run)


def _drop_contents(lines: list[Line], run: list[Line]) -> None:
    if len(run) < 4:
        return
    for entry in run:
        entry.kind = "furniture"
    at = lines.index(run[0])
    if at and re.fullmatch(r"(?:table of )?contents", _entry_text(lines[at - 1].text)):
        lines[at - 1].kind = "furniture"


def _join_wrapped_headings(lines: list[Line]) -> list[Line]:
    """A heading set on two or more lines (same type, right under each other) as one line."""
    out: list[Line] = []
    for line in lines:
        last = out[-1] if out else None
        if (
            last is not None
            and line.kind == last.kind == "heading"
            and _same_column(line, last)
            and _face(line) == _face(last)
            and 0 <= last.bottom - line.top < 0.6 * line.heading_size
            and len(last.text.split()) + len(line.text.split()) <= 24
        ):
            last.pieces = [*last.pieces, *line.pieces]
            broken = last.text.endswith("-") and line.text[:1].islower()
            last.text = f"{last.text[:-1]}{line.text}" if broken else f"{last.text} {line.text}"
            continue
        out.append(line)
    return out


def _mark_starts(lines: list[Line], body: float, face: str) -> None:
    """Which text lines start a paragraph: indented, or after a gap, a heading or a display.

    `face` is the body's font: a description's label is set in another.
    """
    pitch = _pitch(lines, body)
    previous: Line | None = None
    after_display = False
    item: float | None = None  # the left edge of the list item the lines go on, by its label
    label: str | None = None  # the form of that item's label ("[0]", "0.", a bullet): the next one's too
    hang: float | None = None  # where the item's later lines hang
    prior: Line | None = None  # the text line before `previous`
    for index, line in enumerate(lines):
        if line.kind != "text":
            if line.kind in ("heading", "title"):
                prior, previous, item = None, None, None
            after_display = after_display or line.kind in ("equation", "table")  # a paragraph goes on after
            continue
        # the next lines: margin line numbers and other furniture between lines are passed over
        following, after = _next_lines(lines, index)
        indented = False
        if following is not None and following.kind == "text" and _same_column(following, line):
            # the lines after it start left of it
            indented = 0.6 * body <= line.left - following.left <= 8 * body
        from_edge = 0.6 * body <= line.left - line.edge <= 8 * body
        same_column = previous is not None and _same_column(previous, line)
        flows = previous is not None and (same_column or abs(line.edge - previous.edge) < 1)
        # a list item's next lines hang under its text, right of its label: they go on with it (an x in
        # another column says nothing)
        hangs = item is not None and flows and line.left > item + 0.3 * body
        # at the item's edge, a label of the item's own form opens the next item ("[12]" after "[11]", whose
        # last line hung)
        sibling = item is not None and flows and label is not None and abs(line.left - item) <= 0.3 * body
        sibling = sibling and _label_form(line.text) == label
        if previous is not None and same_column and not hangs:
            indented = indented or 0.6 * body <= line.left - previous.left <= 8 * body
            # after a short line (the end of a paragraph), a line indented from the edge starts one
            # (not where it ends with the lines around it: an abstract or a quotation justified narrower than
            # its column)
            around = [line.right, following.right if following is not None else line.right]
            if prior is not None and _same_column(prior, previous):
                around.append(prior.right)
            short = previous.right < line.far_edge - 3 * body and all(
                abs(previous.right - x) > 0.5 * body for x in (max(around[:2]), *around[2:])
            )
            indented = indented or from_edge and short
        elif not indented:
            indented = from_edge
        # a full line at its column's edge whose next line hangs right of it: an item of a description list
        # ("draft  Set up for a draft copy ...") or a reference entry set with a hanging indent
        # (a hang, not the next paragraph's indent: the item's label is set in a face of its own, or more
        # than one line hangs)
        hung = (
            following is not None
            and following.kind == "text"
            and _same_column(following, line)
            and 0.6 * body <= following.left - line.left <= 3 * body
            and line.left - line.edge < 0.6 * body
            and line.right >= line.far_edge - body
            and (
                _hangs_on(following, after)
                # a labelled item of two lines: the hanging one ends it short or the next item follows,
                # where a paragraph's indented first line (after a line opening with a command in
                # typewriter) runs on into its next line
                or _labelled(line, face)
                and (following.right < following.far_edge - 2 * body or _labelled_text(after, face))
            )
        )
        # a line left of the list item's label, after a line that ends short, ends the list (on the next
        # page too, in one column); after a full line it goes on with the item (MNRAS runs an item's lines
        # back to the margin)
        ended = previous is not None and _word_fits(previous, line)
        outdented = item is not None and flows and ended and line.left < item - 0.3 * body
        # a label inside a list starts an item of a list nested in it; a reference entry nests none ("29.
        # Curran Associates" is its volume)
        nested = hangs and ITEM_LABEL.match(line.text) and label != "[0]"
        if previous is None or BULLET.match(line.text) or nested or outdented:
            line.starts = True  # a bullet, a nested item, or a line back left of the list's labels
        elif sibling or ended and (_label_ends(line, face) or LABEL.match(line.text)):
            line.starts = True  # the next item; or a bold label after a line that ended by choice
        elif hung and not hangs:
            line.starts = True
        elif hangs and same_column:
            # a paragraph's indented first line after an item that ended short stands left of its hang
            back = hang is not None and line.left < hang - 0.3 * body and ended
            line.starts = back or previous.bottom - line.bottom > 1.6 * pitch
        elif same_column and not after_display:
            line.starts = indented or previous.bottom - line.bottom > 1.6 * pitch
        else:
            line.starts = indented  # a paragraph goes on after a display and into the next column
        if previous is not None and same_column and previous.code != line.code:
            # code shown on its own lines is a block of its own, and so is the text after it
            line.starts = True
        if line.starts or not _same_column(previous or line, line) or not hangs:
            # an item's lines hang right of its label; a line back at the label's edge ends the list
            item = line.left if line.starts and (LABEL.match(line.text) or hung or sibling) else None
            label = _label_form(line.text) if item is not None else None
            hang = None
        elif hangs and hang is None:
            hang = line.left
        prior, previous, after_display = previous, line, False


def _label_form(text: str) -> str | None:
    """The form of the label a line opens with, numbers as 0 and letters as a ("[0]", "(a)"), or None."""
    found = LABEL.match(text)
    return re.sub(r"[a-z]", "a", re.sub(r"\d+", "0", found.group().strip())) if found else None


def _pitch(lines: list[Line], body: float) -> float:
    """The usual distance between the baselines of consecutive text lines in a column."""
    text = [line for line in lines if line.kind == "text"]
    pitches = [
        a.bottom - b.bottom
        for a, b in zip(text, text[1:], strict=False)
        if a.page == b.page and a.column == b.column and 0 < a.bottom - b.bottom < 3 * body
    ]
    return statistics.median(pitches) if pitches else 1.2 * body


def _word_fits(previous: Line, line: Line) -> bool:
    """Whether the first word of `line` would have fit at the end of `previous`.

    Then `previous` ended its paragraph by choice; in ragged text a line also ends short, for want of room
    for the next word.
    """
    word = line.text.split()[0] if line.text.split() else ""
    width = (line.right - line.left) * (len(word) + 1) / max(1, len(line.text))
    return previous.far_edge - previous.right > width + 0.5 * line.size


def _labelled(line: Line, face: str) -> bool:
    """Whether a line opens with a word or two in a face not the body's, the rest in it: a label."""
    first, rest = line.pieces[0], line.pieces[1:]
    short = len(first.text.split()) <= 2 and not first.math
    return bool(rest) and short and first.font != face == rest[0].font


def _next_lines(lines: list[Line], index: int) -> tuple[Line | None, Line | None]:
    """The two lines after `lines[index]` that are not furniture (None where there are none)."""
    found: list[Line | None] = [x for x in lines[index + 1 : index + 7] if x.kind != "furniture"][:2]
    found += [None] * (2 - len(found))
    return found[0], found[1]


def _labelled_text(line: Line | None, face: str) -> bool:
    """Whether a text line opens with a label: the next item of a description list."""
    return line is not None and line.kind == "text" and _labelled(line, face)


def _hangs_on(hanging: Line, after: Line | None) -> bool:
    """Whether the text line `after` the `hanging` one stands where it does: two lines hang, no indent.

    The first hanging line runs to the column's far edge: one that ends short ends its item, and a line
    after it at the same indent is the next one-line paragraph.
    """
    return (
        hanging.right >= hanging.far_edge - hanging.size
        and after is not None
        and after.kind == "text"
        and _same_column(after, hanging)
        and abs(after.left - hanging.left) < 0.3 * after.size
    )


def _split_run_in_headings(lines: list[Line]) -> list[Line]:
    """A paragraph opening with a bold phrase ending in a stop ("Data. We use ...") as heading and paragraph.

    The heading is of the lowest level, under every heading set on a line of its own.
    """
    level = 1 + max((line.level for line in lines if line.kind == "heading"), default=0)
    starts = [line for line in lines if line.kind == "text" and line.starts]
    labelled = [_bold_label(line).endswith(":") for line in starts]
    # two paragraphs in a row opening with a bold label and a colon are items of a description list
    # ("asaetr.sty: LaTeX style", "asaetr.bst: BibTeX style"), not run-in headings
    items = {
        id(line)
        for n, line in enumerate(starts)
        if labelled[n] and (n > 0 and labelled[n - 1] or n + 1 < len(starts) and labelled[n + 1])
    }
    out: list[Line] = []
    for line in lines:
        if line.kind != "text" or not line.starts or id(line) in items:
            out.append(line)
            continue
        bold = _bold_lead(line)
        rest = line.pieces[len(bold) :]
        phrase = _line_text(bold)
        word = RUN_IN_WORD.match(line.pieces[0].text.strip())
        if word and len(line.pieces) > 1 and (line.pieces[0].italic or line.pieces[0].bold):
            # IEEE: "Abstract—No matter ..." in one bold paragraph: the word is the heading
            first, *others = line.pieces
            lead = dataclasses.replace(others[0], text=others[0].text.lstrip("\u2014\u2013-: "))
            bold, rest, phrase = [first], [lead, *others[1:]], word.group(1) + "."
        if (
            bold
            and rest
            and re.search(r"[^\W\d_]{2}", phrase)
            and phrase.endswith((".", ":"))
            and len(phrase.split()) <= 10
        ):
            heading = Line(
                bold,
                line.page,
                line.column,
                "heading",
                level,
                edge=line.edge,
                far_edge=line.far_edge,
                band=line.band,
            )
            body = Line(
                rest,
                line.page,
                line.column,
                "text",
                starts=True,
                edge=line.edge,
                far_edge=line.far_edge,
                band=line.band,
            )
            out.extend([heading, body])
        else:
            out.append(line)
    return out


def _label_ends(line: Line, face: str) -> bool:
    """Whether a line opens with a label in bold or a face of its own, ending in a colon or a stop.

    "asaetr.sty:" before its description, "Keywords." in small capitals under an abstract.
    """
    label = _bold_label(line) or (line.pieces[0].text.strip() if _labelled(line, face) else "")
    return label.endswith((":", ".", "]", ")"))  # "[letter] for letter papers": an option's name


def _bold_lead(line: Line) -> list[Piece]:
    """The bold pieces a line opens with (maths aside)."""
    return list(itertools.takewhile(lambda p: p.bold and not p.math, line.pieces))


def _bold_label(line: Line) -> str:
    """The bold words a line opens with, when other words follow them ("" when none)."""
    bold = _bold_lead(line)
    return _line_text(bold) if bold and len(bold) < len(line.pieces) else ""


def _same_column(one: Line, other: Line) -> bool:
    return (one.page, one.column) == (other.page, other.column)


def iter_text(lines: list[Line]) -> Iterator[Line]:
    """The lines that carry the body's words and tables (not furniture, notes or equations)."""
    return (line for line in lines if line.kind in ("text", "heading", "title", "table"))
