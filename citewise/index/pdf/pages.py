"""One page's lines.

Its text objects placed in page space (Form XObjects' own coordinates turned into the
page's, a figure's labels left out), its tables made lines of their own, bands between rules drawn across
the page's middle, footnotes under a footnote rule; a page with only an image read by OCR.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import re
import statistics
import sys
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citewise.index.pdf.lines import (
    BOLD_FONT,
    LIGATURES,
    OCR_FONT,
    OMS_LETTERS,
    REGULAR_FONT,
    SYMBOL_FONT,
    SYMBOL_MARK,
    TEX_FONT,
    Line,
    Piece,
    group_lines,
    page_words,
    tex_encoding,
)
from citewise.index.tables import (
    CAPTION,
    Box4,
    CarriedCaption,
    Rule,
    centred_in,
    find_tables,
    in_page,
    page_box,
    page_rules,
    path_boxes,
)

logger = logging.getLogger(__name__)


def upright(page: Any) -> None:
    """Move the objects of a page that says /Rotate (stored sideways, shown upright) to where they are shown.

    dvips' landscape slides (powerdot, prosper, seminar) store each line standing on its end and rotate the
    page when it is shown: read as stored, every word was a line of its own. Each top-level object (its
    text, paths and images; a form's contents follow its matrix) is moved, in this page's memory only, into
    the page as shown, whose size `page.get_size()` already gives; the crop box's lower left is kept. Lines
    then stand as a reader sees them, and so do the boxes the chat page draws over the page it renders.
    """
    import pypdfium2 as pdfium

    turn = page.get_rotation() % 360
    if turn not in (90, 180, 270):
        return
    left, bottom, right, top = page.get_cropbox()
    width, height = right - left, top - bottom
    shown = {90: (0, -1, 1, 0, 0, width), 180: (-1, 0, 0, -1, width, height), 270: (0, 1, -1, 0, height, 0)}
    matrix = pdfium.PdfMatrix().translate(-left, -bottom).multiply(pdfium.PdfMatrix(*shown[turn]))
    matrix = matrix.translate(left, bottom)
    for obj in list(page.get_objects(max_depth=0)):
        obj.transform(matrix)


def has_image(pdf: object, number: int) -> bool:
    """Whether a page draws an image (a scan; a blank page has none)."""
    import pypdfium2.raw as raw

    return any(True for _ in pdf[number].get_objects(filter=[raw.FPDF_PAGEOBJ_IMAGE]))  # type: ignore[index]


GARBLED = 0.1
"""Share of a page's characters that are control characters from which its text layer maps its glyphs to
no characters. metre's manual (Type 3 bitmap fonts with no character map, Ghostscript 6) reads 0.15-0.20 on
every page, since its glyphs' codes read as they are; text elsewhere 0-0.03 a page, a font's table of glyph
variants up to 0.26 on a page but 0.06 over its document's pages (`garbled_pages`)."""
GARBLED_KINDS = 8
"""Distinct control characters a garbled page holds at least: its glyphs' codes spread over them (metre 26-53
a page, Ghostscript 5-6 output 14-53), where a list whose bullet maps to one (commonunicode's U+0088 before
every line, 0.10 of its characters) holds one or two."""
GARBLED_MEASURE = 50
"""Characters a page needs to be measured."""


def garbled_pages(pages: list[list[Line]]) -> list[int]:
    """The pages (0-based) whose text layer maps its glyphs to no characters, which only OCR can read.

    Their words are control characters of many kinds and stray ASCII ("N OQPSR4TVUJPSR^TWKXZY"). Pages at
    GARBLED or over (of GARBLED_KINDS kinds at least), in a document whose median page is: a document is
    garbled throughout, where a page of glyph tables (a font's documentation) stands among pages of text.
    """
    shares = {}
    for number, lines in enumerate(pages):
        text = "".join(line.text for line in lines).replace(" ", "")
        if len(text) >= GARBLED_MEASURE:
            controls = [c for c in text if unicodedata.category(c) == "Cc"]
            shares[number] = len(controls) / len(text) if len(set(controls)) >= GARBLED_KINDS else 0.0
    if not shares or statistics.median(shares.values()) < GARBLED:
        return []
    return [number for number, share in shares.items() if share >= GARBLED]


def ocr_lines(pdf: object, number: int, path: Path) -> list[Line]:
    """A page with no text layer, or a garbled one, read by OCR (`citewise.index.ocr`).

    No lines without an OCR engine.
    """
    from citewise.index import ocr

    if not ocr.available():
        return []
    page = pdf[number]  # type: ignore[index]
    try:
        words = ocr.page_words(page, page.get_height())
    except ocr.OcrError as error:
        logger.warning("%s: page %d has no text layer and OCR failed: %s", path, number + 1, error)
        return []
    pieces = [Piece(*word[:6], font=OCR_FONT, bold=word.bold) for word in words]
    logger.info("%s: page %d read by OCR (%d words)", path, number + 1, len(pieces))
    marks = {id(piece) for piece in bracket_labels(group_lines(pieces, number))}
    return group_lines([piece for piece in pieces if id(piece) not in marks], number)


def bracket_labels(lines: list[Line]) -> list[Piece]:
    """A reference's label read by OCR without its brackets gets them back: "10 P. Auer, ..." (in place).

    Returns the marks read between a label and its entry, to be left out: a closing bracket read apart as
    "—" or "ay", too narrow for the letters it says (under LABEL_MARK of an em).
    """
    marks = []
    for line in lines:
        first, *rest = line.pieces
        if rest and first.text.isdigit() and len(first.text) <= 3 and OCR_AUTHOR.match(rest[0].text):
            first.text = f"[{first.text}]"
        if (
            len(rest) > 1
            and LABELLED.fullmatch(first.text)
            and rest[0].right - rest[0].left < LABEL_MARK * first.size
        ):
            marks.append(rest[0])
            first.text = f"[{first.text.strip('[]')}]"
    return marks


LABELLED = re.compile(r"\[?\d{1,3}\]?")
LABEL_MARK = 0.3
"""The width, in ems, under which a piece right after a reference's label is a mark, not a word."""


OCR_AUTHOR = re.compile(r"[A-Z](?:\.|[a-z]+,)$")
"""An author's initial or surname opening a reference entry after its label ("P.", "Chen,"): read by OCR,
a bare number before it was the label "[10]"."""


@dataclass
class WordGaps:
    """Whether a document's text objects hide word spaces as gaps between glyphs, with no space between.

    groff through Ghostscript: "theyare" where the page shows "they are". Learnt from the first pages with
    text (reading each glyph's box costs a few ms a page); where they hide none, later pages are read by
    their objects alone.
    """

    checked: int = 0
    found: bool = False

    @property
    def wanted(self) -> bool:
        """Whether this page's glyphs are to be read for gaps."""
        return self.found or self.checked < GAP_PAGES


GAP_PAGES = 2
"""Pages with text read glyph by glyph before a document is taken to hide no word spaces."""
SAMPLE_CHARS = 1500
"""Characters of a page read glyph by glyph while a document is not yet known to hide word spaces."""
WORDS_AN_OBJECT = 3
"""Characters a page's text objects hold on average where they may hide word spaces (a word or more)."""
HIDDEN = 3
"""Objects on a page that hide a word space before the document is read glyph by glyph."""
WORD_GAP = 0.2
"""Ems between two glyphs of one text object that make a word space."""


def _slanted(matrix: tuple[float, ...]) -> bool:
    """Whether a text object's matrix sets it at a slant (15 to 75 degrees off the page's axes).

    Text turned a quarter (a margin's arXiv stamp, a table's column heads) is read; text set diagonally
    across a page is a watermark, and its huge glyphs otherwise join the lines they cross.
    """
    a, b = matrix[0], matrix[1]
    angle = math.degrees(math.atan2(abs(b), abs(a))) if a or b else 0.0
    return 15 < angle < 75


def _glyphs(textpage: Any, limit: int) -> dict[int, list[tuple[str, float, float]]]:
    """Each text object's glyphs (by the object's address), in order: character, left and right x.

    The page's first `limit` characters only (an object they end in is read as it was).
    """
    import ctypes

    import pypdfium2.raw as raw

    glyphs: dict[int, list[tuple[str, float, float]]] = {}
    box = raw.FS_RECTF()
    for index in range(min(limit, textpage.count_chars())):
        owner = ctypes.cast(raw.FPDFText_GetTextObject(textpage.raw, index), ctypes.c_void_p).value
        if owner and raw.FPDFText_GetLooseCharBox(textpage.raw, index, box):
            glyphs.setdefault(owner, []).append(
                (chr(raw.FPDFText_GetUnicode(textpage.raw, index)), box.left, box.right)
            )
    return glyphs


def _spaced(text: str, glyphs: list[tuple[str, float, float]], size: float) -> str:
    """An object's text with a space where its glyphs stand a word space apart.

    As it was where its glyphs do not spell it (PDFium's own spaces aside).
    """
    out = ""
    for at, (char, left, _) in enumerate(glyphs):
        if (
            at
            and not char.isspace()
            and not out[-1:].isspace()
            and left - glyphs[at - 1][2] > WORD_GAP * size
        ):
            out += " "
        out += char
    if "".join(out.split()) != "".join(text.split()):
        return text
    return out + " " * (len(text) - len(text.rstrip()))


LETTERSPACED = re.compile(r"(?:[^\W\d_]{1,2} ){3,}[^\W\d_]{1,2}")
"""Text PDFium reads a space between every letter of (classicthesis's spaced capitals: "C O N T E N T S")."""


def _unspaced(text: str, glyphs: list[tuple[str, float, float]], size: float) -> str:
    """Letterspaced text in its words: a space only where a gap is wider than the letters' own by a space.

    As it was where its glyphs do not spell it, or stand at no even tracking (groff's objects break
    words anywhere: "d as a l" is the end of "invoked", "as a" and the start of "login").
    """
    letters = [(char, left, right) for char, left, right in glyphs if not char.isspace()]
    if len(letters) < 2 or "".join(char for char, _, _ in letters) != "".join(text.split()):
        return text
    gaps = [left - before[2] for before, (_, left, _) in itertools.pairwise(letters)]
    tracking = statistics.median(gaps)
    if tracking < TRACKING * size or min(gaps) < 0.5 * tracking:
        return text
    out = letters[0][0]
    for gap, (char, _, _) in zip(gaps, letters[1:], strict=True):
        out += (" " if gap > tracking + WORD_GAP * size else "") + char
    return out


TRACKING = 0.05
"""Ems between the letters of a letterspaced word at least (type set solid stands a few hundredths apart)."""


def page_lines(
    pdf: object, number: int, carried: CarriedCaption | None = None, gaps: WordGaps | None = None
) -> list[Line]:
    """The text lines of one page (0-based `number`) of an open pypdfium2 document: box, font, size.

    `carried`: a caption the page before ended with (`caption_at_foot`), whose table may open this page.
    `gaps`: what the document's first pages said of word spaces hidden as gaps (updated here).
    """
    import ctypes

    import pypdfium2.raw as raw

    page = pdf[number]  # type: ignore[index]
    upright(page)
    textpage = page.get_textpage()
    width, height = page.get_size()
    figures: dict[int, tuple[Any, bool]] = {}  # outermost form -> whether it is a figure
    objects = [
        (obj, obj.extract()) for obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_TEXT], textpage=textpage)
    ]
    # glyphs are read where objects hold words or more: a browser's page of one object a glyph hides nothing
    lengths = [len(text.strip()) for _, text in objects if text.strip()]
    typeset = bool(lengths) and statistics.fmean(lengths) >= WORDS_AN_OBJECT
    glyphs = None
    sampled = False  # whether `glyphs` holds the page's first SAMPLE_CHARS characters only
    if gaps is not None and gaps.wanted and typeset:  # a sample of the page until hidden spaces are found
        sampled = not gaps.found and textpage.count_chars() > SAMPLE_CHARS
        glyphs = _glyphs(textpage, SAMPLE_CHARS if sampled else sys.maxsize)
    tracked = glyphs  # a heading set letterspaced ("B I B L I O G R A P H Y"): its gaps tell its words
    if (tracked is None or sampled) and any(LETTERSPACED.fullmatch(text.strip()) for _, text in objects):
        tracked = _glyphs(textpage, sys.maxsize)  # all of them: the heading may stand past the sample
    hidden = 0  # objects that hid a word space
    pieces = []
    fonts = [obj.get_font() for obj, _ in objects]
    names = [font.get_base_name() or "" for font in fonts]
    unnamed = [text for (_, text), name in zip(objects, names, strict=True) if not name]
    tex = tex_encoding(unnamed) if unnamed else None  # a bitmap font's control codes: TeX's encoding
    pixel_sizes: dict[int, float] | None = None  # measured when a font set in pixels is met
    for (obj, text), font, name in zip(objects, fonts, names, strict=True):
        if not text.strip() or obj.container is not None and _in_figure(obj, figures, (width, height)):
            continue
        left, _, right, _ = page_box(obj)
        matrix = obj.get_matrix().get()
        if _slanted(matrix):
            continue  # a watermark set across the page ("DRAFT", "TRAVAIL EN COURS"), not the text's
        size = _type_size(obj, matrix)
        # what its glyphs are kept under, where any were read
        address = (ctypes.cast(obj.raw, ctypes.c_void_p).value or 0) if tracked is not None else 0
        if glyphs is not None and name:  # a bitmap font's (Type 3, no name) glyph boxes say nothing
            spaced = _spaced(text, glyphs.get(address, []), size)
            hidden += spaced.split() != text.split()
            text = spaced
        if tracked is not None and LETTERSPACED.fullmatch(text.strip()):
            text = _unspaced(text, tracked.get(address, []), size)
        if tex is not None and not name:
            text = text.translate(tex)
        text = text.translate(LIGATURES).replace("\x02", "-")  # PDFium marks a line-end hyphen
        if SYMBOL_FONT.match(name):
            text = text.translate(OMS_LETTERS)
        if size < PIXEL_SIZE:
            pixel_sizes = _pixel_font_sizes(objects, fonts) if pixel_sizes is None else pixel_sizes
            size = pixel_sizes.get(_font_key(font), size)
        baseline = matrix[5]
        if obj.container is not None:  # in a form: its matrices scale and move the type too
            (x0, y0), (x1, y1) = in_page(obj, matrix[4], matrix[5]), in_page(obj, matrix[4], matrix[5] + 1.0)
            size, baseline = size * (math.hypot(x1 - x0, y1 - y0) or 1.0), y0
        # the height of the type, from the baseline, not the glyphs' own box: an "x" or a "." is as tall as
        # the line they stand in, and a subscript's baseline sits just below it
        bottom, top = baseline - 0.25 * size, baseline + 0.75 * size
        # TeX's own fonts say their weight in their name (CMBX bold, CMR not), and so do "Times-Roman" and
        # "Arial-ItalicMT": the weight PDFium reports for them (dvips and Ghostscript: CMR12 732, Times-Roman
        # 695) says nothing
        named = TEX_FONT.match(name) or REGULAR_FONT.search(name)
        bold = bool(BOLD_FONT.search(name)) or font.get_weight() >= 600 and not named
        pieces.append(Piece(left, bottom, right, top, text, round(size, 1), name, bold))
    pieces = _sized(pieces)
    _copyright_signs(pieces)
    if gaps is not None and glyphs is not None:
        gaps.checked += 1
        gaps.found = gaps.found or hidden >= HIDDEN
    paths = path_boxes(page)
    pieces += _drawn_bullets(paths, pieces)
    rules = page_rules(paths)
    lines = _with_tables(group_lines(pieces, number), rules, textpage, number, carried, tex)
    _mark_bands(lines, rules)
    _mark_ruled_notes(lines, rules)
    return lines


PIXEL_SIZE = 1.0
"""Points a font's size is under where it is set in device pixels: ESP Ghostscript's bitmap fonts from dvips
(a glyph unit one pixel at 600 dpi, 0.12 pt, the size 0.12: TUGboat's octavo article)."""


def _font_key(font: Any) -> int:
    """A font's handle: the same for each of a page's objects set in it."""
    import ctypes

    return ctypes.cast(font.raw, ctypes.c_void_p).value or 0


def _type_size(obj: Any, matrix: tuple[float, ...]) -> float:
    """A text object's type size: its font size by the matrix's vertical axis.

    Not the horizontal one: microtype's font expansion widens glyphs (a = 1.02), which says nothing of
    their height.
    """
    return float(obj.get_font_size() * (math.hypot(matrix[2], matrix[3]) or 1.0))


def _pixel_font_sizes(objects: list[tuple[Any, str]], fonts: list[Any]) -> dict[int, float]:
    """The type size of each font set in device pixels (`PIXEL_SIZE`): its tallest object's height.

    A bitmap font's size says nothing there, but a run of its glyphs with a parenthesis, or an ascender and a
    descender, stands about an em tall: the body's 10 pt type 9.8 pt. `fonts`: each object's, as read.
    """
    sizes: dict[int, float] = {}
    for (obj, text), font in zip(objects, fonts, strict=True):
        if text.strip() and _type_size(obj, obj.get_matrix().get()) < PIXEL_SIZE:
            _, bottom, _, top = obj.get_bounds()
            key = _font_key(font)
            sizes[key] = max(sizes.get(key, 0.0), top - bottom)
    return sizes


def same_sized_ocr(pages: list[list[Line]], numbers: list[int]) -> None:
    """The OCR pages' lines again, each size measured within SAME_OCR_SIZE of a commoner one taken as it.

    A size measured by OCR varies a little from line to line: one style of heading read 14 points on one
    page and 15 on the next became two levels ("11 Why casinos ..." under "10 How is ..."). Sizes are
    taken in the order of how many characters are set in them, each joining the first commoner one close by.
    """
    weights: Counter[float] = Counter()
    for number in numbers:
        for piece in (piece for line in pages[number] for piece in line.pieces):
            weights[piece.size] += len(piece.text)
    snapped: dict[float, float] = {}
    for size, _ in weights.most_common():
        snapped[size] = next(
            (kept for kept in snapped.values() if abs(size - kept) <= SAME_OCR_SIZE * kept), size
        )
    for number in numbers:
        _regroup(pages, number, snapped)
    body = weights.most_common(1)[0][0] if weights else 0.0
    for number in _numbered_alike([line for n in numbers for line in pages[n]], snapped.get(body, body)):
        _regroup(pages, number, {})  # (only the pages whose headings took another type)


def _regroup(pages: list[list[Line]], number: int, sizes: dict[float, float]) -> None:
    """A page's lines grouped anew from their pieces, a piece's size taken from `sizes` where it is there."""
    pieces = [piece for line in pages[number] for piece in line.pieces]
    for piece in pieces:
        piece.size = sizes.get(piece.size, piece.size)
        piece.top = piece.bottom + piece.size
    pages[number] = group_lines(pieces, number)


def _numbered_alike(lines: list[Line], body: float) -> set[int]:
    """Numbered headings of one depth read by OCR in one type: the type most of them were read in.

    Sizes are read to whole points and weights are guessed: llncs's "1 Introduction" read 13 points and
    "2 Methodology" 12, "3.7 Quantitative Analysis" 11 points and not bold among "3.x" in 10-point bold,
    each a level of its own. A heading (bold or larger than the body) within OCR_NUMBER_SIZE points of the
    type most of its depth's headings were read in takes that type. Returns the pages of the headings
    whose type changed (their pieces, in place: the pages' lines are to be grouped anew).
    """
    numbered = [
        (line, number.group(1).rstrip(".")) for line in lines if (number := OCR_NUMBER.match(line.text))
    ]
    headings = [
        (line, n) for line, n in numbered if len(line.text.split()) <= 12 and (line.bold or line.size > body)
    ]
    # and one read in the body's type between the headings numbered before and after it ("3.6 Baselines"
    # between "3.5" and "3.7")
    known = {n for _, n in headings}
    headings += [
        (line, n)
        for line, n in numbered
        if n not in known
        and len(line.text.split()) <= 8
        and not line.text.endswith((".", ",", ";", ":"))
        and {_beside(n, -1), _beside(n, 1)} <= known
    ]
    depths: dict[int, list[Line]] = {}
    for line, n in headings:
        depths.setdefault(n.count(".") + 1, []).append(line)
    changed: set[int] = set()
    for alike in depths.values():
        size, bold = Counter((line.size, line.bold) for line in alike).most_common(1)[0][0]
        for line in alike:
            if abs(line.size - size) > OCR_NUMBER_SIZE:
                continue
            for piece in line.pieces:
                if (piece.size, piece.bold) != (size, bold):
                    piece.size, piece.bold = size, bold
                    changed.add(line.page)
    return changed


def _beside(number: str, step: int) -> str:
    """The number before (-1) or after (1) a heading's at its depth: "3.6" -> "3.5", "3.7"."""
    head, _, last = number.rpartition(".")
    return f"{head}.{int(last) + step}" if head else str(int(last) + step)


OCR_NUMBER = re.compile(r"(\d{1,2}(?:\.\d{1,2})*\.?)\s+[A-Z][a-z]")
"""A numbered heading's number ("3.7 Quantitative", "2.2. Crossmodal"), its depth in its dots."""
OCR_NUMBER_SIZE = 1.0
"""Points a numbered heading read by OCR may be from its depth's commonest type and be taken as it."""

SAME_OCR_SIZE = 0.08
"""Share of a commoner size an OCR line's size may differ by and be taken as it (sizes are measured to
about 5%)."""


def _drawn_bullets(paths: list[Box4], pieces: list[Piece]) -> list[Piece]:
    """A "•" for each small mark drawn just before a line's first words: a list's bullet set as a shape.

    beamer draws its items' balls as stacks of shaded circles, and office programs draw square bullets: read
    as text, two items ran together as one paragraph. A mark is a path BULLET_SIZE points across or less,
    about as wide as high (overlapping paths one mark), that a piece starts within BULLET_REACH ems right of
    on its baseline; the bullet takes that piece's baseline and size. `paths`: the page's (`path_boxes`).
    """
    marks: list[list[float]] = []
    for left, bottom, right, top in paths:
        width, height = right - left, top - bottom
        if not (
            1.5 <= width <= BULLET_SIZE and 1.5 <= height <= BULLET_SIZE and 0.6 <= width / height <= 1.7
        ):
            continue
        for mark in marks:  # a ball drawn as concentric circles is one mark
            if left <= mark[2] and mark[0] <= right and bottom <= mark[3] and mark[1] <= top:
                mark[:] = [min(mark[0], left), min(mark[1], bottom), max(mark[2], right), max(mark[3], top)]
                break
        else:
            marks.append([left, bottom, right, top])
    bullets = []
    for left, bottom, right, top in marks:
        after = [
            p
            for p in pieces
            if 0 <= p.left - right <= BULLET_REACH * p.size
            and min(top, p.top) - max(bottom, p.bottom) >= 0.5 * (top - bottom)
            and p.text.strip()
        ]
        before = [
            p
            for p in pieces
            if p.right <= left + 0.5
            and left - p.right < BULLET_REACH * p.size
            and min(top, p.top) - max(bottom, p.bottom) > 0
        ]
        if after and not before:  # a mark inside a line of text is no bullet
            first = min(after, key=lambda p: p.left)
            bullets.append(Piece(left, first.bottom, right, first.top, "\u2022", first.size, "", False))
    return bullets


BULLET_SIZE = 9.0
"""Points across a drawn bullet is at most."""
BULLET_REACH = 1.5
"""Ems at most between a drawn bullet and the first words of its item."""


MIN_TYPE = 1.5
"""Points under which a piece's size is no type size: a bitmap (Type 3) font whose scale PDFium does not
apply (Ghostscript's output of dvips' bitmap fonts reads 0.12 for a 9 pt typewriter)."""


def _sized(pieces: list[Piece]) -> list[Piece]:
    """Pieces in type too small to read given the size most of the page's characters are set in.

    Such fonts are most often the text's own typewriter or symbols at the text's size; read at 0.12 points,
    their characters outweighed the body's and every line of it became small type.
    """
    if all(piece.size >= MIN_TYPE for piece in pieces):
        return pieces  # (every page but a few: nothing counted)
    sizes: Counter[float] = Counter()
    for piece in pieces:
        if piece.size >= MIN_TYPE:
            sizes[piece.size] += len(piece.text)
    if not sizes:
        return pieces
    usual = sizes.most_common(1)[0][0]
    out = []
    for piece in pieces:
        if piece.size < MIN_TYPE:
            baseline = piece.bottom + 0.25 * piece.size
            piece = dataclasses.replace(
                piece, bottom=baseline - 0.25 * usual, top=baseline + 0.75 * usual, size=usual
            )
        out.append(piece)
    return out


def _copyright_signs(pieces: list[Piece]) -> None:
    """Plain TeX's copyright sign: a "c" inside a symbol font's large circle (PDFium reads "°c") is "©"."""
    for circle, letter in itertools.pairwise(pieces):
        if (
            circle.text.strip() in ("°", "◯", "○")
            and SYMBOL_FONT.match(circle.font)
            and letter.text.startswith("c")
            and circle.left - 1 <= letter.left
            and letter.left + 0.6 * letter.size / 2 <= circle.right + 1
        ):
            circle.text, letter.text = "©" + circle.text[len(circle.text.rstrip()) :], letter.text[1:]


def _mark_ruled_notes(lines: list[Line], rules: list[Rule]) -> None:
    """Footnotes under a footnote rule: a short rule at a column's left, the lines under it set apart.

    Set apart: smaller, or opening with symbol marks (the first line and one more at least). SPIE sets its
    9 pt notes under 10 pt text, too close in size to tell them by type alone. ijmart's title page is in small
    type all over, its notes in the type of its contents, but each opens with a mark.
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
        smaller = all(x.size < 0.97 * usual for x in under)
        marks = [bool(SYMBOL_MARK.match(x.text)) for x in sorted(under, key=lambda x: -x.top)]
        marked = bool(marks) and marks[0] and sum(marks) >= 2
        marked = marked and any(abs(x.left - rule.left) < usual for x in under)  # marks set in an em at most
        if close and above and (smaller and at_left or marked):
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


def caption_at_foot(lines: list[Line]) -> CarriedCaption | None:
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
    lines: list[Line],
    rules: list[Rule],
    textpage: object,
    page: int,
    carried: CarriedCaption | None = None,
    tex: dict[int, str] | None = None,
) -> list[Line]:
    """A page's lines with each table on it (`citewise.index.tables`) made one line of kind "table".

    `tex`: how the page's bitmap fonts' control codes read (`tex_encoding`), for the table's words.
    """
    words: list[Piece] | None = None

    def words_in(left: float, bottom: float, right: float, top: float) -> list[Piece]:
        nonlocal words
        words = page_words(textpage, tex) if words is None else words
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
