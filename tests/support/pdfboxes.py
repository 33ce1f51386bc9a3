"""Where words stand on a PDF page by PDFium's own text search: a source apart from citewise's reader."""

from __future__ import annotations

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
