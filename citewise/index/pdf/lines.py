"""Text objects gathered into lines.

A piece of text with its box, size and font, a line of pieces on one
baseline (words spaced one by one joined, footnote marks and drop capitals set apart), and the measures
of lines the other modules share (same column, line pitch, whether a word would have fitted).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import statistics
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

from citewise.index.tables import (
    Table,
    cover,
    minus,
)

MATH_FONT = re.compile(
    r"Math|CMMI|CMSY|CMEX|MSAM|MSBM|Symbol|rsfs|eufm"
    r"|(?<![a-z])(?:n|new)?[tp]xb?(?:ex|exx|sys?|mia?)\b",
    re.IGNORECASE,
)
"""Maths fonts: Computer Modern's and AMS's, and the TX and PX fonts' and newtx's ("txex", "ntxmi"), which
PDFium may read as bold (elstest-5p's integrals and sums headed a section)."""


BOLD_FONT = re.compile(
    r"Bold|Black|Heavy|Semibold|Demi|CMB(?:X|SY|\d)|CMSSBX|\b(?:SF|EC)(?:BX|BI|BO|SX)|Medi(?:Ital)?$|-Bd",
    re.IGNORECASE,
)
"""Bold faces by name: PostScript names, Computer Modern (CMBX, CMB10, the bold symbols' CMBSY of "§1."),
cm-super and EC (SFBX, ECBX: their weight reads 250), URW's Times (NimbusRomNo9L-Medi)."""


REGULAR_FONT = re.compile(r"Roman|Regular|Regu$|Book|Light|Italic|Oblique|Ital$", re.IGNORECASE)
"""Faces whose name says they are not bold: the weight a producer reports for them says nothing (Ghostscript
gives groff's Times-Roman 695)."""


ITALIC_FONT = re.compile(
    r"Italic|Oblique|Ital$|-It$|\b(?:SF|EC)(?:TI|SI|SL|BI|IT)|CMTI|CMSL|CMBXTI", re.IGNORECASE
)
"""Italic and slanted faces by name (the same families)."""


NUMBERED = re.compile(r"(?:(?:[A-Z]\.)?\d{1,2}(?:\.\d{1,2})*|[IVX]{1,4}|[A-Z])\.?\s")
"""A heading's number: "2", "2.1.3", "IV", "B", an appendix's "A.1"."""


EQUATION_NUMBER = re.compile(r"^\(\d{1,3}[a-z]?\)$")

_NUMBERED_DISPLAY = r"=.*\(\d{1,3}[a-z]?\)"
NUMBERED_EQUATION = re.compile(rf"{_NUMBERED_DISPLAY}$")
"""A displayed equation read as text, its number at its end: "F(a) = ... (3)" (a scanned page's, by OCR,
where no maths font tells it; its integral signs make it as tall as a heading)."""
OCR_EQUATION = re.compile(rf"{_NUMBERED_DISPLAY}[\]|)]?$")
"""A display read by OCR, its number at its end ("... (1)", a bracket read after it: "(1)]"); a sentence that
cites an equation ends with a stop."""

FOOTNOTE_MARK = re.compile(r"(?:\d{1,2}\.?|[*\u2217\u2020\u2021\u00a7\u00b6]{1,3})\s*[^\W\d_]")
"""A footnote's opening mark: "1.", "2", "*", a dagger, before its first word; a symbol may be doubled or
tripled ("**", "††": the second and third notes of a page in amsart's order), and TeX's asterisk is
often the asterisk operator U+2217."""
ANGLES = ("\u27e8", "\u27e9", "\u2329", "\u232a", "\u3008", "\u3009")
"""Angle brackets, as a placeholder in a command's syntax is set: "<value>"."""
SYMBOL_MARK = re.compile(r"[*\u2217\u2020\u2021\u00a7\u00b6]{1,3}\s*[^\W\d_]")
"""A footnote's symbol mark (not a number, which a numbered list opens with too)."""


ENTRY_LABEL = re.compile(r"\[\d{1,3}\]\s")
"""The label a numbered reference entry starts with."""
BULLETS = "\u2022\u25aa\u25cf\u25e6\u2023\u2219\u25b6\u25ba\u27a2\u25a0\u25c6\u2666\u27a4"
"""Characters a list item opens with: bullets round, square (Dingbats' and office programs' black square),
diamond and arrow."""
LONE_BULLET = re.compile(f"[{BULLETS}]\\s")


OCR_FONT = "OCR"
"""The font name of words read by OCR (`citewise.index.ocr`): no face is known."""
TEX_FONT = re.compile(
    r"(?:[A-Z]{6}\+)?(?:CM|EC|TC|SF|LM|MS[AB]|CS|PL)[A-Z]*\d+(?:~[0-9a-f]{1,4})?$", re.IGNORECASE
)
"""A TeX font by its name (Computer Modern, the EC, cm-super and Latin Modern fonts, AMS symbols, the Czech
and Polish CS and PL fonts; Ghostscript writes some in lower case: "cstt9", and old ones add a re-encoding's
number: "CMR12~15")."""


SMALL_CAPS_FONT = re.compile(r"CMCSC|\b(?:SF|EC)CC|SmallCap|[-_]SC$|Caps\d*(?:-|$)", re.IGNORECASE)
"""A small-capitals face: its lower-case letters print as capitals (TeX's cmcsc: "Finer Objectives")."""


JOINING_WORDS = frozenset("a an the of to for and or in on with from by at as".split())
"""Words a title's line does not end in (the title runs on over the next line), nor a sentence opens in after
a full stop (the stop was an abbreviation's)."""


MONO_FONT = re.compile(
    r"(?:cm|lm|ec|t1x|x|sf)tt|(?:^|\+)tt-|mono|courier|typewriter|consol|menlo|monaco|sourcecode|firacode|pcr[rbo]",
    re.IGNORECASE,
)
"""A typewriter face: a line set wholly in one is code (a command shown on its own line); kpfonts' is
"Tt-Kp-Regular"."""


DROP_CAPITAL = 2.5
"""Times the page's usual type size an initial letter set over several lines is at least."""


LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"})

TEX_T1 = str.maketrans(
    {
        "\x1b": "ff", "\x1c": "fi", "\x1d": "fl", "\x1e": "ffi", "\x1f": "ffl",
        "\x10": "\u201c", "\x11": "\u201d", "\x12": "\u201e", "\x13": "\u00ab", "\x14": "\u00bb",
        "\x15": "\u2013", "\x16": "\u2014", "\x0e": "\u2039", "\x0f": "\u203a",
        "\xff": "\u00df", "\xd7": "\u0152", "\xf7": "\u0153",
    }
)  # fmt: skip
"""TeX's T1 (Cork) encoding in its control codes (ligatures, quotation marks, guillemets, dashes) and where
it leaves Latin-1, which a font without a Unicode map is read in: "heiÿt" is "heißt"."""
TEX_OT1 = str.maketrans(
    {
        "\x0b": "ff", "\x0c": "fi", "\x0d": "fl", "\x0e": "ffi", "\x0f": "ffl", "\x10": "\u0131",
        "\x11": "\u0237", "\x19": "\u00df", "\x1a": "\u00e6", "\x1b": "\u0153", "\x1c": "\u00f8",
        "\x1d": "\u00c6", "\x1e": "\u0152", "\x1f": "\u00d8",
    }
)  # fmt: skip
"""TeX's OT1 encoding in its control codes: ligatures, dotless i and j, the Nordic and German letters."""
TEX_CODES = 12
"""Distinct control codes TeX's encodings put in a page's text at most (ligatures, quotes, dashes)."""
TEX_SHARE = 0.05
"""Share of the text that control codes may be at most (a garbled page's: 0.1 or more)."""
IN_WORD = re.compile(r"(?<=[^\W\d_])[\x0b-\x0f\x1b-\x1f]|[\x0b-\x0f\x1b-\x1f](?=[a-z])")
"""A control code within a word or before its letters: a ligature ("Certi\x1ccat", "\x1cction")."""


IN_WORD_RETURN = re.compile(r"(?<=[^\W\d_])\r(?!\n)|\r(?=[^\W\d_])")
"""A carriage return inside a word ("Pa\rkage"): a glyph PDFium named so, no line break."""
GLYPH_CR_SHARE = 0.005
"""Share of a text's characters that carriage returns inside words are at least where they stand for "c".

ESP Ghostscript names a bitmap font's glyphs by their codes in base 36 (code 11 "AB", 64 "BS", 99 "CR") and
maps the names of control characters to them ("CR" a carriage return, "BS" a backspace): every "c" of a dvips
document it made (TUGboat's octavo article, minipage-marginpar) comes out so. TeX's "fl" (OT1's code 13)
comes out so too, but far more seldom than a letter (0.05% of characters against c's 3%), and beside c's of
its own."""


def tex_encoding(texts: list[str]) -> dict[int, str] | None:
    r"""How to read the control codes of text in fonts that map their glyphs to no characters, or None.

    dvips' bitmap fonts (Type 3, no name, no Unicode map) give a glyph's code in TeX's encoding: letters come
    out as letters, but "fi" as a control code ("Certi\x1ccat"), and the guillemets too. Which encoding:
    the ligatures inside words tell, codes 27-31 in T1 (Cork), 11-15 in OT1.
    """
    codes = Counter(c for text in texts for c in text if c < " " and c not in "\t\n\r")
    letters = sum(len(text) for text in texts)
    if len(codes) > TEX_CODES or codes.total() >= TEX_SHARE * letters:
        return None  # a text layer of glyph codes (metre's): garbled, read by OCR (`pages.garbled_pages`)
    returns = sum(len(IN_WORD_RETURN.findall(text)) for text in texts)
    named = returns >= GLYPH_CR_SHARE * letters and sum(text.count("c") for text in texts) * 10 <= returns
    found = Counter(
        "t1" if match.group() >= "\x1b" else "ot1"
        for text in texts
        for match in IN_WORD.finditer(text)
        if not (named and match.group() == "\r")
    )
    table = (TEX_T1 if found["t1"] >= found["ot1"] else TEX_OT1) if found else None
    if named:  # Ghostscript's glyphs "CR" and "BS" are codes 99 and 64: "Pa\rkage", "\mpgmpar\x08save"
        # and "CL" (93) and "AE" (14) came out as the signs of those names: "[1\u2104" for "[1]", and "Æ" for
        # the encoding's code 14 (OT1's "ffi": "e\u00c6cient")
        code_14 = (table or TEX_OT1).get(0x0E, "\x0e")
        table = {**(table or {}), ord("\r"): "c", ord("\b"): "@", ord("\u2104"): "]", ord("\u00c6"): code_14}
    return table


SYMBOL_FONT = re.compile(r"(?:[A-Z]{6}\+)?CMSY\d", re.IGNORECASE)
"""Computer Modern's symbols (TeX's OMS encoding), whose glyph names PDFium does not always know."""
OMS_LETTERS = str.maketrans(
    dict(zip("`abcdefghijklmnopqrstuvwxyz", "⊢⊣⌊⌋⌈⌉{}⟨⟩|‖↕⇕\\≀√⨿∇∫⊔⊓⊑⊒§†‡", strict=True))
)
"""Where a symbol font's glyph came out as its code: a dvips PDF's "hoptionsi" is "⟨options⟩" (no letter
stands at those codes in the font: its letters are calligraphic capitals)."""


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
    """A line of text as read: its pieces left to right and what the layout says it is.

    What its pieces say (box, size, face) is worked out once: a line's pieces are not changed after it is
    made (a line that grows is made anew, `dataclasses.replace`).
    """

    pieces: list[Piece]
    page: int
    column: str = "full"  # "left", "right" or "full" (spans the page's middle)
    kind: str = "text"  # "text", "title", "heading", "equation", "furniture", "note", "table", "contents"
    level: int = 0  # heading level, 1 for the largest headings
    starts: bool = False  # starts a paragraph (or a reference entry)
    edge: float = 0.0  # the left edge of its column on its page
    far_edge: float = 0.0  # the right edge of its column on its page
    table: Table | None = None  # a table's rows and caption; its text is then the table in Markdown
    band: int = 0  # how many rules across the page's middle stand above it (each closes the columns)
    cut: bool = False  # what is left of a line a table took pieces of
    hang: float = 0.0  # where a tagged line's description starts ("-i  If the ..."), its next lines under it
    text: str = field(default="", init=False)

    def __post_init__(self) -> None:
        self.text = self.table.markdown() if self.table else line_text(self.pieces)

    @cached_property
    def left(self) -> float:
        """Its leftmost x."""
        return min(p.left for p in self.pieces)

    @cached_property
    def right(self) -> float:
        """Its rightmost x."""
        return max(p.right for p in self.pieces)

    @cached_property
    def top(self) -> float:
        """The top of its type."""
        return max(p.top for p in self.pieces)

    @cached_property
    def bottom(self) -> float:
        """The bottom of its type."""
        return min(p.bottom for p in self.pieces)

    @cached_property
    def size(self) -> float:
        """The type size most of its characters are set in."""
        weights: Counter[float] = Counter()
        for piece in self.pieces:
            weights[round(piece.size, 1)] += len(piece.text.strip())
        return weights.most_common(1)[0][0]

    @cached_property
    def bold(self) -> bool:
        """Whether most of its letters are bold."""
        letters = [(p.bold, len(p.text.strip())) for p in self.pieces if not p.math]
        return bool(letters) and sum(n for b, n in letters if b) > 0.6 * sum(n for _, n in letters)

    @cached_property
    def italic(self) -> bool:
        """Whether most of its letters are italic."""
        letters = [(p.italic, len(p.text.strip())) for p in self.pieces if not p.math]
        return bool(letters) and sum(n for i, n in letters if i) > 0.6 * sum(n for _, n in letters)

    @cached_property
    def heading_size(self) -> float:
        """Its type size as a heading's: small capitals count at their capitals' size."""
        return max(p.size for p in self.pieces) if self.caps else self.size

    @cached_property
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

    @cached_property
    def code(self) -> bool:
        """Whether it is set wholly in a typewriter face (code, a command, a file shown on its own)."""
        pieces = [p for p in self.pieces if p.text.strip()]
        if len(pieces) > 1 and pieces[0].text.strip().isdigit() and len(pieces[0].text.strip()) <= 4:
            pieces = pieces[1:]  # a listing's line number, in the text's type: "10 \\def\\@headerfont"
            words = [p for p in pieces if not p.math]
            if len(pieces) >= 3 and pieces[0].math and pieces[-1].math and len(words) == 1:
                return len(words[0].text.split()) == 1  # a docstrip guard in doc's listings: "<*install>"
        # a placeholder's angle brackets come from the maths fonts: "freekey=<value>" is code
        pieces = [p for p in pieces if not (p.math and p.text.strip() in ANGLES)] or pieces
        mono = [bool(MONO_FONT.search(p.font)) for p in pieces]
        # a command with a placeholder in italic among its arguments: "\\usepackage[options]{sublabel}"
        args = zip(mono, pieces, strict=True)
        placeholders = all(m or p.italic and len(p.text.split()) == 1 for m, p in args)
        return all(mono) or bool(mono) and mono[0] and mono[-1] and placeholders

    @cached_property
    def math_share(self) -> float:
        """The share of its characters set in math fonts."""
        chars = sum(len(p.text.strip()) for p in self.pieces) or 1
        return sum(len(p.text.strip()) for p in self.pieces if p.math) / chars


def page_words(textpage: object, tex: dict[int, str] | None = None) -> list[Piece]:
    """A page's words from its characters (PDFium's spaces, or a gap of a quarter em, end a word)."""
    import pypdfium2.raw as raw

    words: list[Piece] = []
    current: Piece | None = None
    for index in range(textpage.count_chars()):  # type: ignore[attr-defined]
        char = chr(raw.FPDFText_GetUnicode(textpage, index)).replace("\x02", "-")  # PDFium's line-end hyphen
        # a bitmap font's code in TeX's encoding (`tex_encoding`), not a line break PDFium made up
        if tex is not None and char < " " and not raw.FPDFText_IsGenerated(textpage, index):
            char = char.translate(tex)
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


def group_lines(pieces: list[Piece], page: int) -> list[Line]:
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


LEADER_OPENING = re.compile(r"\s*(?:\.\s*){4,}")
"""A piece opening with a leader's dots: the rest of a contents entry, never a column of its own."""

LEADER_REACH = 3.0
"""Ems a leader may stand after its entry's words (a list of tables in larger type than its leaders)."""

COLON_OPENING = re.compile(r"\s*:(?:\s|$)")
"""A piece opening with a colon: what a description list says of the name set left of it."""

COLON_REACH = 8.0
"""Ems a description may stand after its name (arrayjobx's command reference: 6.4 em)."""


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
        # a heading's number, a reference entry's label or a list's bullet stands a quad (1 em) or more before
        # its words; elsewhere a gap of 0.8 em is a gutter
        label = line[0].text.strip() + " "
        labels = (NUMBERED, ENTRY_LABEL, LONE_BULLET)
        reach = 1.5 if len(line) == 1 and any(form.fullmatch(label) for form in labels) else 0.8
        if LEADER_OPENING.match(piece.text):  # a contents entry's dots begin no column ("chassis.   . . . 6")
            reach = LEADER_REACH
        elif COLON_OPENING.match(piece.text):  # nor a colon: a name's description ("\\newarray    : Define")
            reach = COLON_REACH
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


def line_text(pieces: list[Piece]) -> str:
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
                # (a glyph kerned under the one before is no word's start, whatever space PDFium read: the
                # X and the mirrored E of the XeTeX logo)
                own = before.text != before.text.rstrip() and gap > -0.05 * size
                apart = own or gap > 0.35 * size
            else:
                # a piece's own space (pdfTeX keeps it: "The journal " before an italic "Monthly") or a gap;
                # not before a glyph kerned under its last one (the logo's mirrored E after "The X ")
                kerned = gap < -0.02 * size
                own = before.text[-1:].isspace() and not kerned or piece.text[:1].isspace()
                apart = own or gap > 0.2 * size or text[-1] in ",;:."
            text += " " if apart else ""
        text += piece.text.strip()
    return _accented(WIDE_SPACE.sub("", " ".join(text.split())))


SPACING_ACCENTS = {
    "\u02c7": "\u030c",  # caron: "Toluˇsis"
    "\u00b4": "\u0301",  # acute
    "\u00a8": "\u0308",  # diaeresis: "Schr¨oder"
    "\u02c6": "\u0302",  # circumflex
    "\u02dc": "\u0303",  # tilde
    "\u00af": "\u0304",  # macron
    "\u02d8": "\u0306",  # breve
    "\u02d9": "\u0307",  # dot above
    "\u02da": "\u030a",  # ring above
    "\u02dd": "\u030b",  # double acute
    "\u00b8": "\u0327",  # cedilla: "Fran¸cois"
    "\u02db": "\u0328",  # ogonek
}
"""Accents TeX sets as glyphs of their own before the letter they mark (PDFium reads "Schr¨oder")."""
_MARKS = "".join(SPACING_ACCENTS)
_ACCENTED = re.compile(f"([{_MARKS}])((?<=[^\\W\\d_][{_MARKS}]) )?([^\\W\\d_])")


GRAVE = re.compile(r"(?<=[^\W\d_])`([aeiouAEIOU])")
"""TeX's grave accent read as a backquote inside a word ("Auri`ere"): before a vowel only, as code's quotes
open after a space."""


def _accented(text: str) -> str:
    """Spacing accents joined to their letters: "Toluˇsis" -> "Tolušis", "H`enon" -> "Hènon"."""
    if "`" in text:
        text = GRAVE.sub(lambda m: unicodedata.normalize("NFC", m[1] + "\u0300"), text)
    if not any(c in text for c in SPACING_ACCENTS):
        return text
    return _ACCENTED.sub(lambda m: unicodedata.normalize("NFC", m[3] + SPACING_ACCENTS[m[1]]), text)


CJK_LETTERS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""Kana and Chinese characters (a character class's ranges): text set without spaces between words."""
WIDE_MARKS = "\u3000-\u303f\uff00-\uffef"
"""Chinese and Japanese punctuation and the full-width forms (a character class's ranges)."""
WIDE_SPACE = re.compile(
    f"(?<=[{WIDE_MARKS}]) (?=\\S)|(?<=\\S) (?=[{WIDE_MARKS}])|(?<=[{CJK_LETTERS}]) (?=[{CJK_LETTERS}])"
)
"""A gap a word processor's justification leaves in Chinese or Japanese text, or beside full-width punctuation
("写作标 准", "（ 1 ）"): no word space, as the script sets none."""


BODY_GAPS = 20
"""Gaps between lines of body-size text that give the pitch by themselves (fewer: every text line's)."""


def line_pitch(lines: list[Line], body: float) -> float:
    """The distance between the baselines of consecutive lines inside a paragraph of body text.

    The median gap, or the smallest gap that is common (a quarter as common as the commonest): in a
    manual of short paragraphs set apart by a skip, the skips outnumber the lines within paragraphs.
    """
    gaps = text_gaps(lines, body)
    if not gaps:
        return 1.2 * body
    in_body = body_gaps(gaps, body)
    # the body's own lines where there are enough of them: a manual's listings in smaller type, a line
    # apart each, outnumber its prose's lines (ocg-p: code 9.5 points apart, prose 12; read by the code's
    # pitch, every line of prose started a paragraph)
    # and prose's, not code's, where there is enough of it: listings in the body's size set solid under
    # prose set wider (econ-bst's example: code 12 points apart, prose 16)
    prose = body_gaps([(a, b, g) for a, b, g in gaps if not (a.code and b.code)], body)
    if len(prose) >= BODY_GAPS:
        in_body = prose
    usual = statistics.median(in_body if len(in_body) >= BODY_GAPS else [g for _, _, g in gaps])
    bins = Counter(round(g * 2) / 2 for g in in_body)
    common = [g for g, n in bins.items() if n >= max(3, 0.25 * max(bins.values(), default=0))]
    smallest = min(common, default=usual)
    if smallest < usual - 0.5:  # the usual gap is a paragraph's skip: the lines inside are closer
        return statistics.median(g for g in in_body if abs(g - smallest) <= 0.5)
    return usual


def body_gaps(gaps: list[tuple[Line, Line, float]], body: float) -> list[float]:
    """The gaps (`text_gaps`) between two lines both in the body's size."""
    return [g for a, b, g in gaps if abs(a.size - body) < 0.5 and abs(b.size - body) < 0.5]


def text_gaps(lines: list[Line], body: float) -> list[tuple[Line, Line, float]]:
    """Consecutive text lines in one column of one page, with the distance between their baselines.

    Under three body sizes only: lines farther apart are no two lines of one passage. Over half a body size:
    cells side by side in a table's row stand on one baseline, a hair apart (zed-csp's symbol tables: the
    pitch came to 0.00006 points, and every line of the document started a paragraph).
    """
    text = [line for line in lines if line.kind == "text"]
    return [
        (a, b, a.bottom - b.bottom)
        for a, b in zip(text, text[1:], strict=False)
        if a.page == b.page and a.column == b.column and 0.5 * body < a.bottom - b.bottom < 3 * body
    ]


def word_fits(previous: Line, line: Line, edge: float | None = None) -> bool:
    """Whether the first word of `line` would have fit at the end of `previous` (before `edge` if given).

    Then `previous` ended its paragraph by choice; in ragged text a line also ends short, for want of room
    for the next word. `edge`: the right edge of a block set narrower than its column (the column's far
    edge by default).
    """
    word = line.text.split()[0] if line.text.split() else ""
    width = (line.right - line.left) * (len(word) + 1) / max(1, len(line.text))
    return (previous.far_edge if edge is None else edge) - previous.right > width + 0.5 * line.size


def bold_lead(line: Line) -> list[Piece]:
    """The bold pieces a line opens with (maths aside)."""
    return list(itertools.takewhile(lambda p: p.bold and not p.math, line.pieces))


def bold_label(line: Line) -> str:
    """The bold words a line opens with, when other words follow them ("" when none)."""
    bold = bold_lead(line)
    return line_text(bold) if bold and len(bold) < len(line.pieces) else ""


def same_column(one: Line, other: Line) -> bool:
    """Whether two lines stand on one page in one column."""
    return (one.page, one.column) == (other.page, other.column)
