"""Pages with no text layer read by OCR: Tesseract's words as the pieces the layout reader takes.

A scanned page holds an image and no text objects. When Debian's `tesseract` (tesseract-ocr, with its
English data) is on the PATH, the page is rendered at OCR_DPI by PDFium and Tesseract's words (its TSV:
each word's box, grouped in lines) become `Word`s in the page's own coordinates, one type size per line
from its words' heights and bold where its letters are wider for that size than the page's other lines';
`citewise.index.pdf` then reads them as it reads any page: lines, columns, headings by size and weight,
paragraphs. Italic is not known (Tesseract 5 does not report fonts).
Without Tesseract, a PDF of such pages is refused with what to install.
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

OCR_DPI = 300
"""Resolution pages are rendered at for OCR (Tesseract reads 300 dpi best)."""
OCR_TIMEOUT = 180.0
"""Seconds one page's OCR may take before it is given up (the page is then left empty, with a warning)."""
EM_OF_CHAR = 0.5
"""A letter's mean width as a share of its type size (about half an em in text faces): the size of a line
with no word of two letters, and with the size by height, the line's weight."""
LABEL = re.compile(r"[\[({](\d{1,3})[\]|}]?|(?<!\S)[\[|{]?(\d{1,3})[\]|}]")
"""A numbered entry's label as OCR reads it, one bracket or both kept, or a bracket read as a bar, a brace
or a parenthesis ("2|", "(6", "{1]")."""
BARRED = re.compile(r"\|(?=\d{1,3}(?:(?:,\s?|[\u2013-])\d{1,3})*\])")
"""A citation's opening bracket read as a bar: "|8]", "|3,4]", "(MAB)|6, 7]" over two words."""
INSTALL_HINT = "install Tesseract to read them by OCR (Debian: apt-get install tesseract-ocr)"


class Word(NamedTuple):
    """One word read by OCR: its box in PDF points (y up), its text and its line's type size."""

    left: float
    bottom: float
    right: float
    top: float
    text: str
    size: float
    bold: bool = False


class OcrError(Exception):
    """Tesseract could not read a page (it failed or timed out); the message says why."""


def available() -> bool:
    """Whether Tesseract is installed (on the PATH)."""
    return shutil.which("tesseract") is not None


def page_words(page: object, height: float) -> list[Word]:
    """The words of a rendered page (a pypdfium2 page of `height` points), by Tesseract.

    Raises:
        OcrError: Tesseract failed or took longer than OCR_TIMEOUT.
    """
    scale = OCR_DPI / 72
    image = page.render(scale=scale).to_pil()  # type: ignore[attr-defined]
    return tsv_words(image_tsv(image), height, 1 / scale)


def image_tsv(image: object) -> str:
    """Tesseract's TSV of a page image (a PIL image).

    Raises:
        OcrError: Tesseract failed or took longer than OCR_TIMEOUT.
    """
    with tempfile.TemporaryDirectory(prefix="citewise-ocr-") as folder:
        source = Path(folder) / "page.png"
        image.save(source)  # type: ignore[attr-defined]
        try:
            done = subprocess.run(
                ["tesseract", str(source), "stdout", "-l", "eng", "tsv"],
                capture_output=True,
                text=True,
                timeout=OCR_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as error:
            raise OcrError(f"Tesseract took more than {OCR_TIMEOUT:.0f} s") from error
    if done.returncode != 0:
        raise OcrError(f"Tesseract failed: {done.stderr.strip()[:200]}")
    return done.stdout


def tsv_words(tsv: str, height: float, points_per_pixel: float) -> list[Word]:
    """Tesseract's TSV words in PDF points (y up), each with its line's box, type size and weight.

    The size from the words' heights (`_size_by_height`): the letters' widths vary with the words and the
    weight, heights only with ascenders and descenders, which the words' letters tell. The weight from the
    widths: a line whose letters are BOLD_WIDER times as wide for its size as the page's lines' usual is
    bold ("7 Method", "Abstract" in body-size bold).
    """
    lines: dict[tuple[str, ...], list[list[str]]] = {}
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5" or not cells[11].strip():
            continue
        lines.setdefault(tuple(cells[1:5]), []).append(cells)
    measured = []
    for words in lines.values():
        chars = sum(len(w[11]) for w in words)
        width = sum(int(w[8]) for w in words) * points_per_pixel / chars / EM_OF_CHAR if chars else 0.0
        size, loose = _size_by_height(words, points_per_pixel)
        size = size or width
        if size > 0:
            measured.append((words, size, _wideness(words, points_per_pixel) / size, loose))
    # the page's usual size and width for a size, on lines of prose (four words or more)
    prose = [(size, r) for words, size, r, _ in measured if len(words) >= 4]
    body = statistics.median([size for size, _ in prose] or [0.0])
    usual = statistics.median([r for _, r in prose if r > 0] or [1.0])
    pieces: list[Word] = []
    for words, measure, ratio, loose in measured:
        # whole points, and the body's size for a line within SAME_SIZE of it: a size measured 10.6 on one
        # line of a paragraph and 10.4 on the next is one size, not 11 and 10 (BRACKET_SAME for a line
        # measured by bracketed words only, whose span is the font's)
        near = BRACKET_SAME if loose else SAME_SIZE
        size = float(round(body if abs(measure - body) <= near * body else measure))
        # a numbered line's weight counts from NUMBERED_WIDER: a section's "1. Introduction" in bold Latin
        # Modern reads 1.15-1.2 times as wide, and a line of prose does not open with a number
        text = " ".join(w[11] for w in words)
        wider = NUMBERED_WIDER if NUMBERED_HEAD.match(text) and len(words) <= 10 else BOLD_WIDER
        # (bold only in the body's size or smaller: a heading is set apart by its size, and a measured
        # weight, noisier on short lines, would make one style of heading two)
        bold = ratio >= wider * usual and size <= round(body)
        bottom = max(int(w[7]) + int(w[9]) for w in words)
        base = height - bottom * points_per_pixel  # the line box's foot, in points from the page's foot
        label = LABEL.fullmatch(words[0][11])
        if label:  # a reference entry's "[15]" read as "[15", "15]" or "15|"
            words[0][11] = f"[{label.group(1) or label.group(2)}]"
        _unbar(words)
        for w in words:
            left = int(w[6]) * points_per_pixel
            right = (int(w[6]) + int(w[8])) * points_per_pixel
            pieces.append(Word(left, base, right, base + size, w[11], size, bold))
    return pieces


def _unbar(words: list[list[str]]) -> None:
    """A citation's opening bracket read as a bar gets its bracket back, in a word or over a line's words."""
    line = " ".join(w[11] for w in words)
    bars = {m.start() for m in BARRED.finditer(line)}
    start = 0
    for w in words:
        text = w[11]
        w[11] = "".join("[" if start + k in bars else c for k, c in enumerate(text))
        start += len(text) + 1


def _size_by_height(words: list[list[str]], points_per_pixel: float) -> tuple[float, bool]:
    """A line's type size from its words' box heights, each by the share of an em its letters span.

    A word of x-height letters ("avenue") spans X_HEIGHT of an em; one with an ascender, a capital or a
    digit ASCENDER; a descender adds DESCENDER. The median over the words of two letters or more, or a
    label alone by its height; 0 for neither (a formula's pieces: their size is their width's). A word
    with a bracket counts only on a line of no other: a bracket spans the font's own share of an em; then
    the size is loose (True).
    """
    sizes = []
    lettered = [w for w in words if sum(c.isalpha() for c in w[11]) >= 2]
    # a bracket's height is the font's (Computer Modern's span an em, Times's 0.87): a word without one
    # measures the line better ("[physics.chem-ph]" alone read 12 points among 10-point lines)
    lettered = [w for w in lettered if not BRACKETS.intersection(w[11])] or lettered
    labelled = LABEL.fullmatch(words[0][11]) if words else None
    for w in lettered or (words[:1] if labelled else []):  # (a line of none: a reference's label "(6")
        text = w[11]
        if BRACKETS.intersection(text):
            span = BRACKET
        else:
            span = ASCENDER if any(c in TALL or c.isupper() or c.isdigit() for c in text) else X_HEIGHT
            span += DESCENDER if any(c in DEEP for c in text) else 0.0
        sizes.append(int(w[9]) * points_per_pixel / span)
    loose = bool(lettered) and all(BRACKETS.intersection(w[11]) for w in lettered)
    return (statistics.median(sizes) if sizes else 0.0), loose


def _wideness(words: list[list[str]], points_per_pixel: float) -> float:
    """The median width of a letter, as a share of EM_OF_CHAR, in the line's words of letters only.

    Words of three letters or more, nothing else: digits and punctuation are wider than letters ("1-21"),
    and a line of them ("Studies, 1-21.", a reference entry's end) read as bold. 0 when there are none.
    """
    widths = [
        int(w[8]) * points_per_pixel / len(w[11]) / EM_OF_CHAR
        for w in words
        if w[11].replace("-", "").isalpha() and len(w[11]) >= 3  # a compound's hyphen too: "Back-End"
    ]
    return statistics.median(widths) if widths else 0.0


X_HEIGHT = 0.45
"""The share of an em a word of x-height letters spans (Computer Modern 0.43, Times 0.45)."""
ASCENDER = 0.69
"""The share of an em from the baseline to the top of an ascender, a capital or a digit."""
DESCENDER = 0.2
"""The share of an em a descender, or a bracket, adds below the baseline."""
TALL = set("bdfhijklt/!?'\"")  # the dots of i and j stand about as high as an ascender
DEEP = set("gjpqy,;")
BRACKETS = frozenset("()[]{}|")
BRACKET = 0.95
"""The share of an em a word with a bracket or a bar spans: the bracket's own height, from Times's 0.87 to
Computer Modern's 1.0 (43 px for 10 points at 300 dpi, 1.03 em), so a size measured by it is loose."""
NUMBERED_WIDER = 1.12
"""Times as wide for its size a numbered line's letters are, at least, for it to be bold."""
NUMBERED_HEAD = re.compile(r"\d{1,2}(?:\.\d{1,2})*\.?\s+[A-Z][a-z]|[IVX]{1,5}\.\s+[A-Z]{2}")
"""A section's number and its title's first word ("1. Introduction", "2.3 Methods", "IV. RESULTS"; not an
author's initial, "V. Kumar")."""
SAME_SIZE = 0.08
"""Share of the page's body size a line's measured size may differ by and still be the body's."""
BRACKET_SAME = 0.12
"""SAME_SIZE for a line measured by bracketed words only (BRACKET's span is the font's: +-9%)."""
BOLD_WIDER = 1.25
"""Times as wide for its size as the page's usual lines a bold line's letters are, at least (on the tuned
papers bold headings read 1.25-1.5 times, lines of prose up to 1.24: Tesseract's word boxes vary)."""
