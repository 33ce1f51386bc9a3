"""Pages with no text layer read by OCR: Tesseract's words as the pieces the layout reader takes.

A scanned page holds an image and no text objects. When Debian's `tesseract` (tesseract-ocr, with its
English data) is on the PATH, the page is rendered at OCR_DPI by PDFium and Tesseract's words (its TSV:
each word's box, grouped in lines) become `Word`s in the page's own coordinates, one type size per line
from its letters' mean width; `citewise.index.pdf` then reads them as it reads any page: lines, columns,
headings by size, paragraphs. Bold and italic are not known (Tesseract 5 does not report fonts).
Without Tesseract, a PDF of such pages is refused with what to install.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

OCR_DPI = 300
"""Resolution pages are rendered at for OCR (Tesseract reads 300 dpi best)."""
OCR_TIMEOUT = 180.0
"""Seconds one page's OCR may take before it is given up (the page is then left empty, with a warning)."""
EM_OF_CHAR = 0.5
"""A letter's mean width as a share of its type size (about half an em in text faces; wider in bold, so a
bold heading reads as larger, which is what sets it apart)."""
LABEL = re.compile(r"\[(\d{1,3})\]?|(?<!\S)\[?(\d{1,3})\]")
"""A numbered entry's label as OCR reads it, one bracket or both kept."""
INSTALL_HINT = "install Tesseract to read them by OCR (Debian: apt-get install tesseract-ocr)"


class Word(NamedTuple):
    """One word read by OCR: its box in PDF points (y up), its text and its line's type size."""

    left: float
    bottom: float
    right: float
    top: float
    text: str
    size: float


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
    with tempfile.TemporaryDirectory(prefix="citewise-ocr-") as folder:
        source = Path(folder) / "page.png"
        image.save(source)
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
    return tsv_words(done.stdout, height, 1 / scale)


def tsv_words(tsv: str, height: float, points_per_pixel: float) -> list[Word]:
    """Tesseract's TSV words in PDF points (y up), each with its line's box and type size."""
    lines: dict[tuple[str, ...], list[list[str]]] = {}
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5" or not cells[11].strip():
            continue
        lines.setdefault(tuple(cells[1:5]), []).append(cells)
    pieces: list[Word] = []
    for words in lines.values():
        bottom = max(int(w[7]) + int(w[9]) for w in words)
        # the type size from the letters' mean width, not the box's height: a line without descenders
        # ("1 Introduction") is as tall as its capitals, a body line as its ascenders and descenders
        chars = sum(len(w[11]) for w in words)
        width = sum(int(w[8]) for w in words) * points_per_pixel
        size = float(round(width / chars / EM_OF_CHAR)) if chars else 0.0  # whole points: less noise
        if size <= 0:
            continue
        base = height - bottom * points_per_pixel  # the line box's foot, in points from the page's foot
        label = LABEL.fullmatch(words[0][11])
        if label:  # a reference entry's "[15]" read as "[15" or "15]"
            words[0][11] = f"[{label.group(1) or label.group(2)}]"
        for w in words:
            left = int(w[6]) * points_per_pixel
            right = (int(w[6]) + int(w[8])) * points_per_pixel
            pieces.append(Word(left, base, right, base + size, w[11], size))
    return pieces
