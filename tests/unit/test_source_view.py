"""The passage in its document (`citewise.app.web.source`): the lines marked, the page rendered, for whom."""

from __future__ import annotations

import base64
import io
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image
from support.pdfboxes import turned

from citewise.app.web import source
from citewise.index.document import Document, LineBox
from citewise.index.loaders import load_path
from citewise.index.records import Collections, DocumentRecord, ParagraphRecord, paragraph_id

PDFS = Path(__file__).resolve().parents[1] / "data" / "pdf"


class Shelf:
    """An index of one document in one collection: the reads by id the document view makes, filtered."""

    def __init__(self, document: Document, file: Path, collection: str = "looms") -> None:
        self.record = DocumentRecord(document.id, str(file), "", document.title, {"collection": collection})
        self.collection = collection
        self.rows = [
            ParagraphRecord(
                paragraph_id(document.id, n), document.id, n, p.section, p.text, p.citations, p.boxes
            )
            for n, p in enumerate(document.paragraphs)
        ]

    def _readable(self, collections: Collections) -> bool:
        return collections is None or self.collection in collections

    def document(self, doc_id: str, collections: Collections = None) -> DocumentRecord | None:
        return self.record if doc_id == self.record.id and self._readable(collections) else None

    def paragraph(self, pid: str, collections: Collections = None) -> ParagraphRecord | None:
        found = [p for p in self.rows if p.id == pid]
        return found[0] if found and self._readable(collections) else None

    def paragraphs(self, doc_id: str, collections: Collections = None) -> list[ParagraphRecord]:
        return list(self.rows) if doc_id == self.record.id and self._readable(collections) else []


SUPPORT = "When the averaged reading rises above the set tension the controller eases the band by one step"


@pytest.fixture
def manual(tmp_path: Path) -> tuple[Shelf, dict[str, object]]:
    """manual.pdf (four pages) copied and read; the passage of its brake paragraph (page 3)."""
    copy = tmp_path / "manual.pdf"
    shutil.copyfile(PDFS / "manual.pdf", copy)
    (document,) = load_path(copy)
    shelf = Shelf(document, copy)
    seq = next(n for n, p in enumerate(document.paragraphs) if p.text.startswith("The brake"))
    passage = {"doc_id": document.id, "paragraph_id": paragraph_id(document.id, seq), "lines": [SUPPORT]}
    return shelf, passage


def marks(html: str) -> list[tuple[float, ...]]:
    return [tuple(float(v) for v in box.split()) for box in re.findall(r'data-box="([^"]+)"', html)]


def test_the_lines_holding_a_supporting_sentence_are_the_ones_marked() -> None:
    boxes = (LineBox(0, 0, 90, 100, 100, 10), LineBox(0, 0, 80, 100, 90, 10), LineBox(1, 0, 70, 100, 80, 11))
    # three lines' letters and digits: "Alpha beta G" (10), "amma delta [6]" (10), "epsilon zeta." (11)
    text = "Alpha beta. Gamma delta [6] epsilon zeta."
    assert sum(c.isalnum() for c in text) == 31
    assert source.supporting_boxes(text, boxes, ["Gamma delta (ref. 6) epsilon zeta."]) == list(boxes)
    assert source.supporting_boxes(text, boxes, ["Alpha beta."]) == [boxes[0]]
    assert source.supporting_boxes(text, boxes, ["Alpha beta. Gamma"]) == list(boxes[:2])
    # a line the paragraph does not hold: the chunk's text decides, then the whole paragraph
    assert source.supporting_boxes(text, boxes, ["no such line"], chunk="epsilon zeta") == [boxes[2]]
    assert source.supporting_boxes(text, boxes, ["no such line"]) == list(boxes)
    assert source.supporting_boxes(text, (), ["Alpha"]) == []


def test_a_pdf_passage_is_its_page_rendered_with_the_supporting_lines_marked(manual) -> None:
    shelf, passage = manual
    html = source.source_html(shelf, passage, ("looms",), "cite-0-1")  # type: ignore[arg-type]
    assert 'data-page="2"' in html and "manual.pdf · page 3 of 4" in html and 'data-cite="cite-0-1"' in html
    data = re.search(r'src="data:image/png;base64,([^"]+)"', html)
    assert data is not None
    image = Image.open(io.BytesIO(base64.b64decode(data.group(1))))
    assert image.size == (round(595.276 * source.PAGE_SCALE), round(841.89 * source.PAGE_SCALE))
    paragraph = shelf.paragraph(str(passage["paragraph_id"]))
    assert paragraph is not None
    # the supporting words start at the end of the paragraph's first line and end on its second: those two
    expected = [v for b in paragraph.boxes[:2] for v in (b.left, b.bottom, b.right, b.top)]
    assert [v for box in marks(html) for v in box] == pytest.approx(expected, abs=0.01)
    # the marks' places over the image, in percent, put them where the boxes are on the page
    first = re.search(r'style="left:([\d.]+)%;top:([\d.]+)%;width:([\d.]+)%;height:([\d.]+)%"', html)
    assert first is not None
    left, top = float(first.group(1)), float(first.group(2))
    assert left == pytest.approx(100 * paragraph.boxes[0].left / 595.276, abs=0.01)
    assert top == pytest.approx(100 * (841.89 - paragraph.boxes[0].top) / 841.89, abs=0.01)


def test_a_page_stored_sideways_is_drawn_as_shown_with_its_marks_where_the_upright_page_has_them(
    manual, tmp_path: Path
) -> None:
    # a landscape page dvips stores on its side, /Rotate 90: the image and the marks stand as it is shown
    shelf, passage = manual
    upright = source.source_html(shelf, passage, ("looms",), "cite-0-1")  # type: ignore[arg-type]
    copy = turned(PDFS / "manual.pdf", tmp_path / "manual-turned.pdf", 90)
    (document,) = load_path(copy)
    sideways = Shelf(document, copy)
    seq = next(n for n, p in enumerate(document.paragraphs) if p.text.startswith("The brake"))
    moved = {"doc_id": document.id, "paragraph_id": paragraph_id(document.id, seq), "lines": [SUPPORT]}
    html = source.source_html(sideways, moved, ("looms",), "cite-0-1")  # type: ignore[arg-type]
    data = re.search(r'src="data:image/png;base64,([^"]+)"', html)
    assert data is not None
    image = Image.open(io.BytesIO(base64.b64decode(data.group(1))))
    assert image.size == (round(595.276 * source.PAGE_SCALE), round(841.89 * source.PAGE_SCALE))
    places = re.compile(r'style="(left:[\d.]+%;top:[\d.]+%;width:[\d.]+%;height:[\d.]+%)"')
    assert places.findall(html) and places.findall(html) == places.findall(upright)


def test_the_neighbouring_pages_are_rendered_unmarked_with_buttons_to_turn_and_to_go_back(manual) -> None:
    shelf, passage = manual
    cited = source.source_html(shelf, passage, ("looms",), "cite-0-1")  # type: ignore[arg-type]
    assert re.findall(r'class="cw-page-(\w+)" data-page="(\d+)"( disabled)?', cited) == [
        ("prev", "1", ""),
        ("next", "3", ""),
    ]  # no way back from where one is
    last = source.source_html(shelf, passage, ("looms",), "cite-0-1", page=3)  # type: ignore[arg-type]
    assert 'data-page="3"' in last and 'data-cited-page="2"' in last and "manual.pdf · page 4 of 4" in last
    assert marks(last) == [] and "data:image/png;base64," in last  # the page, and no mark on it
    assert re.findall(r'class="cw-page-(\w+)" data-page="(\d+)"( disabled)?', last) == [
        ("prev", "2", ""),
        ("next", "4", " disabled"),
        ("cited", "2", ""),
    ]
    assert "Back to the cited page (3)" in last
    first = source.source_html(shelf, passage, ("looms",), page=0)  # type: ignore[arg-type]
    assert 'class="cw-page-prev" data-page="-1" disabled' in first and marks(first) == []
    again = source.source_html(shelf, passage, ("looms",), "cite-0-1", page=2)  # type: ignore[arg-type]
    assert marks(again) == marks(cited) != [] and "cw-page-cited" not in again  # the cited page, marked
    beyond = source.source_html(shelf, passage, ("looms",), "cite-0-1", page=9)  # type: ignore[arg-type]
    assert "manual.pdf has 4 pages: there is no page 10." in beyond and "data:image" not in beyond
    other = source.source_html(shelf, passage, ("other",), page=3)  # type: ignore[arg-type]
    assert "not yours to read" in other and "data:image" not in other  # another's: as absent, any page


CROSSING = (
    "Pick 375 of 400: tension 214 newtons, brake at step 14, no broken threads, pattern twill, shaft lift "
    "order one to eight."
)
"""A sentence of manual.pdf's first sample quote, a paragraph that goes on from page 3 to page 4."""


def test_a_paragraph_over_a_page_break_is_marked_on_each_page_where_its_supporting_lines_stand(
    manual,
) -> None:
    shelf, passage = manual
    quote = next(p for p in shelf.rows if p.text.startswith("Pick 25 of 400"))
    assert {b.page for b in quote.boxes} == {2, 3}  # the reader placed its lines on both pages
    crossing = {"doc_id": passage["doc_id"], "paragraph_id": quote.id, "lines": [CROSSING]}
    expected = source.supporting_boxes(quote.text, quote.boxes, [CROSSING])
    assert [b.page for b in expected] == [2, 3]  # the sentence starts on the last line of page 3
    cited = source.source_html(shelf, crossing, ("looms",), "cite-0-2")  # type: ignore[arg-type]
    assert 'data-page="2"' in cited and 'data-cited-page="2"' in cited
    box = expected[0]
    assert marks(cited) == [pytest.approx((box.left, box.bottom, box.right, box.top), abs=0.01)]
    # the next page: the sentence's end marked there, where the reader placed its line; still cited: page 3
    after = source.source_html(shelf, crossing, ("looms",), "cite-0-2", page=3)  # type: ignore[arg-type]
    box = expected[1]
    assert 'data-page="3"' in after and 'data-cited-page="2"' in after and "page 4 of 4" in after
    assert marks(after) == [pytest.approx((box.left, box.bottom, box.right, box.top), abs=0.01)]
    assert "Back to the cited page (3)" in after
    top = re.search(r'class="cw-mark"[^>]*style="left:[\d.]+%;top:([\d.]+)%', after)
    assert top is not None and float(top.group(1)) == pytest.approx(
        100 * (841.89 - box.top) / 841.89, abs=0.01
    )
    # a page the paragraph is not on: nothing marked
    before = source.source_html(shelf, crossing, ("looms",), "cite-0-2", page=1)  # type: ignore[arg-type]
    assert marks(before) == [] and "Back to the cited page (3)" in before


def test_a_document_outside_the_asker_s_collections_is_not_shown(manual) -> None:
    shelf, passage = manual
    html = source.source_html(shelf, passage, ("other",))  # type: ignore[arg-type]
    assert "not yours to read" in html and "data:image" not in html and "manual.pdf" not in html
    assert "averaged" not in html
    nothing = source.source_html(shelf, {"lines": []}, None)  # type: ignore[arg-type]
    assert "no longer in the index" in nothing


def test_a_moved_or_changed_original_is_said_plainly_and_the_passage_shown_as_text(manual, tmp_path) -> None:
    shelf, passage = manual
    (tmp_path / "manual.pdf").rename(tmp_path / "moved.pdf")
    html = source.source_html(shelf, passage, ("looms",))  # type: ignore[arg-type]
    assert "The page cannot be shown: the original file manual.pdf is no longer where it was ingested" in html
    assert str(tmp_path) not in html  # the server's folders are not shown
    assert "data:image" not in html and '<mark class="cw-support">' + SUPPORT in html
    # the file there again, but another PDF of a single page: it changed since it was indexed
    shutil.copyfile(PDFS / "aps.pdf", tmp_path / "manual.pdf")
    changed = source.source_html(shelf, passage, ("looms",))  # type: ignore[arg-type]
    assert "has 1 pages, not the page 3 it was indexed with" in changed and "data:image" not in changed
    (tmp_path / "manual.pdf").write_bytes(b"not a pdf")
    broken = source.source_html(shelf, passage, ("looms",))  # type: ignore[arg-type]
    assert "cannot be read as a PDF any more" in broken and "Traceback" not in broken


def test_a_pdf_indexed_before_boxes_were_kept_says_how_to_see_its_page(manual) -> None:
    shelf, passage = manual
    shelf.rows = [ParagraphRecord(p.id, p.doc_id, p.seq, p.section, p.text, p.citations) for p in shelf.rows]
    html = source.source_html(shelf, passage, None)  # type: ignore[arg-type]
    assert "Where this passage stands on its pages is not known" in html and "data:image" not in html
    assert "cw-cited-paragraph" in html and "4 Tension" in html


async def test_the_page_shows_a_document_only_to_a_user_who_may_read_its_collection(manual, tmp_path) -> None:
    """Beyond loopback (logins): alice reads the collection, bob does not, mallory is nobody."""
    import gradio as gr

    from citewise.app.access import open_access, require_login
    from citewise.app.web.page import ChatPage
    from citewise.context import Context
    from citewise.core.resources import Resources

    shelf, passage = manual
    access = open_access(tmp_path / "index")
    access.add_user("alice")
    access.add_user("bob")
    access.grant("alice", "looms", "read")
    gate = require_login("0.0.0.0", "the page", access)
    context = Context(index_dir=str(tmp_path / "index"), resources=Resources(index=shelf))  # type: ignore[arg-type]
    page = ChatPage(context, threads=str(tmp_path / "threads.sqlite"), gate=gate)

    def asking(name: str) -> gr.Request:
        return gr.Request(username=name, client=SimpleNamespace(host="10.0.0.9"), headers={})

    try:
        shown = await page.source_view(passage, "cite-0-1", asking("alice"))
        assert "cw-pdf" in shown and 'src="gradio_api/file=' in shown and "cw-mark" in shown
        served = re.search(r'src="gradio_api/file=([^"]+)"', shown)
        assert served is not None and Path(served.group(1)).parent == page.pages_dir  # the page's own folder
        assert Path(served.group(1)).read_bytes().startswith(b"\x89PNG")
        for other in ("bob", "mallory"):
            hidden = await page.source_view(passage, "cite-0-1", asking(other))
            assert "cw-pdf" not in hidden and "manual.pdf" not in hidden and "averaged" not in hidden
    finally:
        await page.close()
    assert not page.pages_dir.exists()  # the rendered pages go with the page
