"""Where words stand on a PDF page by PDFium's own text search: a source apart from citewise's reader."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pypdfium2 as pdfium


def word_boxes(path: Path, page: int, words: Sequence[str]) -> list[tuple[float, float, float, float]]:
    """PDFium's boxes (left, bottom, right, top, PDF points) of every place the given words are on a page."""
    pdf = pdfium.PdfDocument(path)
    try:
        text = pdf[page].get_textpage()
        found = []
        for word in words:
            searcher = text.search(word, match_case=True, match_whole_word=True)
            while (hit := searcher.get_next()) is not None:
                start, count = hit
                boxes = [text.get_charbox(i) for i in range(start, start + count)]
                found.append(
                    (
                        min(b[0] for b in boxes),
                        min(b[1] for b in boxes),
                        max(b[2] for b in boxes),
                        max(b[3] for b in boxes),
                    )
                )
        return found
    finally:
        pdf.close()


def printed_pdf(browser, html: str, path: Path) -> Path:
    """`html` printed to an A4 PDF at `path` by the browser (headless Chromium, Playwright), 20 mm margins."""
    page = browser.new_page()
    try:
        page.set_content(html)
        page.pdf(
            path=str(path), format="A4", margin={side: "20mm" for side in ("top", "bottom", "left", "right")}
        )
    finally:
        page.close()
    return path


def turned(source: Path, target: Path, turn: int) -> Path:
    """`source` stored as dvips stores a landscape page: its content turned by -`turn`, /Rotate `turn` set."""
    document = pdfium.PdfDocument(source)
    for page in document:
        left, bottom, right, top = page.get_cropbox()
        width, height = right - left, top - bottom
        # the inverse of the turn the page is shown with: stored (x, y) for a shown (X, Y)
        stored = {
            90: (0, 1, -1, 0, height, 0),
            180: (-1, 0, 0, -1, width, height),
            270: (0, -1, 1, 0, 0, width),
        }
        matrix = pdfium.PdfMatrix(*stored[turn])
        for obj in list(page.get_objects(max_depth=0)):
            obj.transform(matrix)
        page.gen_content()
        size = (height, width) if turn != 180 else (width, height)
        page.set_mediabox(0, 0, *size)
        page.set_cropbox(0, 0, *size)
        page.set_rotation(turn)
    document.save(target)
    document.close()
    return target


def garbled(source: Path, target: Path, lines: int = 40) -> Path:
    """`source` (a scan) under an invisible text layer whose glyphs map to no characters.

    As Type 3 bitmap fonts with no character map give it (metre's manual, Ghostscript 6): each glyph's code
    read as it is, control characters and stray ASCII. The codes are drawn at random (seeded), in Helvetica
    with text render mode 3 (invisible), so the page shows the scan and its text layer says nothing.
    """
    from pypdf import PdfWriter
    from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter(clone_from=str(source))
    page = writer.pages[0]
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    page["/Resources"][NameObject("/Font")] = DictionaryObject({NameObject("/FG"): writer._add_object(font)})
    rng = random.Random(7)
    codes = [*range(1, 32), *range(33, 127)]
    shown = []
    for n in range(lines):
        text = bytes(rng.choice(codes) for _ in range(60))
        text = text.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
        shown.append(b"1 0 0 1 72 %d Tm (%s) Tj" % (740 - 16 * n, text))
    layer = DecodedStreamObject()
    layer.set_data(b"BT /FG 10 Tf 3 Tr " + b" ".join(shown) + b" ET")
    contents = page["/Contents"]
    parts = list(contents) if isinstance(contents, ArrayObject) else [page.raw_get("/Contents")]
    page[NameObject("/Contents")] = ArrayObject([*parts, writer._add_object(layer)])
    writer.write(str(target))
    return target
