"""Where a PDF paragraph's lines stand: read by the loader, kept by the local tier's document store.

The boxes are checked against PDFium's own character boxes for the paragraph's first and last words (an
independent reading of the page), and against the paragraph's text (every letter of it given by one line).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from support.pdfboxes import word_boxes

from citewise.index.chunking import Chunk, ChunkedDocument
from citewise.index.document import Document, LineBox, Paragraph
from citewise.index.loaders import load_path
from citewise.index.local.docstore import SCHEMA_VERSION, DocStore
from citewise.index.records import paragraph_id

PDFS = Path(__file__).resolve().parents[1] / "data" / "pdf"


def within(words: list[str], chars: int) -> str:
    """The longest word of letters (punctuation stripped) among the first `chars` letters of `words`."""
    found, used = "", 0
    for word in words:
        used += sum(c.isalnum() for c in word)
        if used > chars:
            break
        word = word.strip(".,;:()[]'\u2019")
        if word.isalpha() and len(word) > len(found):
            found = word
    return found


def overlaps(box: LineBox, other: tuple[float, float, float, float]) -> bool:
    """Whether a line's box and a (left, bottom, right, top) box share some area."""
    left, bottom, right, top = other
    return box.left < right and left < box.right and box.bottom < top and bottom < box.top


def test_a_pdf_paragraph_knows_its_page_and_the_box_of_each_of_its_lines() -> None:
    path = PDFS / "manual.pdf"  # four pages
    paragraphs = load_path(path)[0].paragraphs
    assert all(p.boxes for p in paragraphs)
    assert {p.page for p in paragraphs} >= {0, 1, 2}  # not every paragraph on the first page
    for paragraph in paragraphs:
        assert sum(box.chars for box in paragraph.boxes) == sum(c.isalnum() for c in paragraph.text)
        if paragraph.text.startswith("|"):  # a table: one box for the whole of it
            continue
        first = within(paragraph.text.split(), paragraph.boxes[0].chars)
        last = within(paragraph.text.split()[::-1], paragraph.boxes[-1].chars)
        start = [
            b for b in word_boxes(path, paragraph.boxes[0].page, [first]) if overlaps(paragraph.boxes[0], b)
        ]
        end = [
            b for b in word_boxes(path, paragraph.boxes[-1].page, [last]) if overlaps(paragraph.boxes[-1], b)
        ]
        assert start, f"{first!r} is not where the first line's box is: {paragraph.boxes[0]}"
        assert end, f"{last!r} is not where the last line's box is: {paragraph.boxes[-1]}"


def test_text_formats_have_no_boxes(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Tides\n\nThe tide turns twice a day.\n", encoding="utf-8")
    paragraphs = load_path(notes)[0].paragraphs
    assert paragraphs and all(p.boxes == () and p.page is None for p in paragraphs)


def chunked(document: Document) -> ChunkedDocument:
    """One chunk per paragraph, with made-up vectors: what the store keeps of a chunked document."""
    chunks = [
        Chunk(f"{document.id}c{i}", document.id, i, i, p.text, 0, len(p.text))
        for i, p in enumerate(document.paragraphs)
    ]
    return ChunkedDocument(document, chunks, np.ones((len(chunks), 4), dtype=np.float32))


BOXES = (LineBox(2, 72.0, 700.5, 540.25, 711.0, 40), LineBox(3, 72.0, 688.0, 300.0, 698.5, 12))


def test_the_local_store_keeps_a_paragraph_s_boxes_and_reads_them_back(tmp_path: Path) -> None:
    document = Document(
        "Tides",
        "tides.pdf",
        [Paragraph("The tide turns twice a day, on the coast.", "Intro", boxes=BOXES), Paragraph("Plain.")],
    )
    store = DocStore(tmp_path / "docs.sqlite3")
    try:
        store.add([chunked(document)], "tides.pdf", collection="sea")
        first = store.paragraph(paragraph_id(document.id, 0))
        assert first is not None and first.boxes == BOXES
        assert [p.boxes for p in store.paragraphs(document.id)] == [BOXES, ()]
        assert store.paragraph(paragraph_id(document.id, 0), ("land",)) is None  # its collection only
    finally:
        store.close()
    reopened = DocStore(tmp_path / "docs.sqlite3")
    try:
        assert reopened.paragraphs(document.id)[0].boxes == BOXES
    finally:
        reopened.close()


def test_a_store_of_the_previous_schema_gains_the_boxes_column_and_reads_none(tmp_path: Path) -> None:
    path = tmp_path / "docs.sqlite3"
    store = DocStore(path)
    document = Document("Tides", "tides.txt", [Paragraph("The tide turns twice a day.")])
    store.add([chunked(document)], "tides.txt")
    store.db.execute("ALTER TABLE paragraphs DROP COLUMN boxes")  # as schema 3 left it
    store.set_meta("schema", "3")
    store.close()
    upgraded = DocStore(path)
    try:
        assert upgraded.get_meta("schema") == SCHEMA_VERSION == "4"
        assert upgraded.paragraphs(document.id)[0].boxes == ()
        later = Document("Later", "later.pdf", [Paragraph("The moon pulls the sea.", boxes=BOXES[:1])])
        upgraded.add([chunked(later)], "later.pdf")
        assert upgraded.paragraphs(later.id)[0].boxes == BOXES[:1]
        stored = upgraded.db.execute("SELECT boxes FROM paragraphs WHERE doc_id = ?", (later.id,)).fetchone()
        assert json.loads(stored[0])[0] == [2, 72.0, 700.5, 540.25, 711.0, 40]
    finally:
        upgraded.close()
