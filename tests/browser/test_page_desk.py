"""The page as a research desk, in Chromium: a cited PDF passage on its page, and the answer's downloads.

The index holds two typeset PDFs (tests/data/pdf, copied so one can be moved away) and a paper printed by
Chromium here, whose paragraph goes on over a page break. A marker of a local answer opens the passage's
page beside the answer, rendered by the server, with the supporting lines marked: the marks are compared
with where PDFium (an independent reading of the same page) finds the cited words. The view's page buttons
turn to the neighbouring pages (marked only where the cited lines go on) and back to the cited one.
The download buttons give the answer as Markdown, DOCX, BibTeX and RIS, read back strictly.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import docx
import pytest
from support.exports import markdown_markers, read_bibtex, read_ris
from support.page import ANSWER_TIMEOUT, CITE, ask, leaving, open_page, serving
from support.pdfboxes import printed_pdf, word_boxes

from citewise.index import Index
from citewise.index.embeddings import Embedder

pytestmark = pytest.mark.integration

PDFS = Path(__file__).resolve().parents[1] / "data" / "pdf"
QUESTION = "What does the controller do with the brake band when the averaged tension reading rises?"
CITED_PAGE = 2  # 0-based: the Tension section of manual.pdf is on its third page

LOCK = (
    "The Ostbrygge lock keeper opens the upper gate only when the water in the chamber stands level with the "
    "canal. A barge waiting below the lock is raised by filling the chamber from the sluices in the upper "
    "gate, which takes about nine minutes for a laden barge of the largest size the canal admits. The keeper "
    "writes every barge raised into the lock ledger with its name, its cargo and the hour it passed, and the "
    "ledger is sent to the canal board at the end of each month."
)
CANAL = f"""<html><head><meta charset="utf-8"><style>
body {{ margin: 0; font: 12pt/18pt serif; }}
.first {{ height: 225mm; }}
h1 {{ font: bold 20pt/24pt serif; margin: 0 0 12pt 0; }}
h2 {{ font: bold 14pt/18pt serif; margin: 0 0 6pt 0; }}
p {{ margin: 0 0 12pt 0; text-align: justify; }}
</style></head><body>
<div class="first"><h1>The Ostbrygge canal and its locks</h1><h2>The harbour</h2>
<p>The harbour office logs every vessel at the northern quay before the tide turns, and a pilot boards each
one that draws more than two metres.</p></div>
<h2>The lock</h2><p>{LOCK}</p>
<h2>The quays</h2><p>The quays of Ostbrygge were rebuilt in stone after the flood of 1872, and their bollards
still carry the city arms.</p></body></html>"""
"""A two-page paper whose paragraph on the lock goes on over the page break: 257 mm of text a page, 18 pt a
line, the paragraph starting 225 mm and a heading down the first, so three of its lines are on the first page
and the rest on the second; its second sentence runs from the first page onto the second."""
CANAL_QUESTION = "What does the lock keeper do to raise a barge waiting below the Ostbrygge lock?"


@pytest.fixture(scope="module")
def pdf_index(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder, browser) -> Path:
    """A local index of three PDFs, ingested from copies in the test's folder (one printed by Chromium)."""
    root = tmp_path_factory.mktemp("desk")
    papers = root / "papers"
    papers.mkdir()
    for name in ("manual.pdf", "retrieval.pdf"):
        shutil.copyfile(PDFS / name, papers / name)
    printed_pdf(browser, CANAL, papers / "canal.pdf")
    with Index.open(root / "index", embedder=embedder) as index:
        assert index.ingest([papers]).documents_added == 3
    return root / "index"


@pytest.fixture(scope="module")
def desk(pdf_index: Path) -> Iterator[str]:
    """`citewise serve` over the PDF index; its URL."""
    with serving(pdf_index.parent, pdf_index) as url:
        yield url


def click_first_marker(page, question: str) -> str:
    """Ask, click the answer's first citation marker, and give the id of the passage it cites."""
    ask(page, question)
    page.wait_for_selector(CITE, timeout=ANSWER_TIMEOUT)
    link = page.locator(CITE).first
    cite = (link.get_attribute("href") or "").lstrip("#")
    link.click()
    return cite


def overlap(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """The area two (left, bottom, right, top) boxes share."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return max(width, 0.0) * max(height, 0.0)


def drawn_marks(page) -> list[tuple[float, float, float, float]]:
    """Where the document view draws its marks, in PDF points of the page shown (y up), from their places
    over the image; each checked against the box it states (`data-box`, the reader's)."""
    view = page.locator("#cw-document .cw-pdf")
    width = float(view.get_attribute("data-width") or 0)
    height = float(view.get_attribute("data-height") or 0)
    image = page.locator("#cw-document img.cw-page-image").bounding_box()
    assert image and width and height
    marks = page.locator("#cw-document .cw-mark")
    drawn = []
    for n in range(marks.count()):
        stated = tuple(float(v) for v in (marks.nth(n).get_attribute("data-box") or "").split())
        shown = marks.nth(n).bounding_box()
        assert shown is not None
        box = (
            (shown["x"] - image["x"]) / image["width"] * width,
            height - (shown["y"] + shown["height"] - image["y"]) / image["height"] * height,
            (shown["x"] + shown["width"] - image["x"]) / image["width"] * width,
            height - (shown["y"] - image["y"]) / image["height"] * height,
        )
        assert all(abs(a - b) < 2.0 for a, b in zip(box, stated, strict=True)), (box, stated)
        drawn.append(box)
    return drawn


def under_marks(boxes: list[tuple[float, ...]], marks: list[tuple[float, float, float, float]]) -> bool:
    """Whether one of a word's places lies mostly under a mark."""
    return any(overlap(m, box) > 0.5 * overlap(box, box) for m in marks for box in boxes)


def test_a_paragraph_going_on_over_a_page_break_is_marked_on_the_next_page_too(
    browser, desk: str, pdf_index: Path, tmp_path: Path
) -> None:
    canal = pdf_index.parent / "papers" / "canal.pdf"
    # the printed paper is what the test needs: the cited sentence starts on page 1 and ends on page 2
    assert word_boxes(canal, 0, ["sluices"]) and word_boxes(canal, 1, ["laden"]), (
        "no paragraph over the break"
    )
    seen: list[str] = []
    page = open_page(browser, desk, seen)
    cite = click_first_marker(page, CANAL_QUESTION)
    page.wait_for_selector(f"#cw-passage .cw-passage[data-cite='{cite}'] mark.cw-support")
    supporting = page.inner_text("#cw-passage mark.cw-support")
    assert "sluices in the upper gate" in supporting and "laden barge" in supporting, supporting
    view = f"#cw-document .cw-pdf[data-cite='{cite}']"
    page.wait_for_selector(f"{view}[data-page='0'] .cw-mark")
    page.wait_for_function("document.querySelector('#cw-document img.cw-page-image').naturalWidth > 0")
    assert page.inner_text("#cw-document .cw-source-head") == "canal.pdf · page 1 of 2"
    first = drawn_marks(page)
    for word in ("waiting", "sluices"):  # the sentence's start, on the cited page
        assert under_marks(word_boxes(canal, 0, [word]), first), word
    assert not under_marks(word_boxes(canal, 0, ["harbour"]), first)  # no other paragraph's line

    # the next page: the sentence's end marked there, over its words; the cited page is still the first
    started = time.perf_counter()
    page.click("#cw-document .cw-page-next")
    page.wait_for_selector(f"{view}[data-page='1'] .cw-mark")
    page.wait_for_function("document.querySelector('#cw-document img.cw-page-image').naturalWidth > 0")
    print(
        f"next page with its marks on screen {1000 * (time.perf_counter() - started):.0f} ms after the click"
    )
    assert page.inner_text("#cw-document .cw-source-head") == "canal.pdf · page 2 of 2"
    assert page.get_attribute(view, "data-cited-page") == "0"
    assert page.inner_text("#cw-document .cw-page-cited") == "Back to the cited page (1)"
    second = drawn_marks(page)
    assert second, "no mark on the page the cited sentence ends on"
    for word in ("nine", "minutes", "laden", "largest", "admits"):
        assert under_marks(word_boxes(canal, 1, [word]), second), word
    for word in ("ledger", "month", "quays"):  # the lines after the sentence's, and the next paragraph
        assert not under_marks(word_boxes(canal, 1, [word]), second), word
    page.screenshot(path=tmp_path / "next-page-marked.png", full_page=True)

    # back to the cited page: the same marks as at first
    page.click("#cw-document .cw-page-cited")
    page.wait_for_selector(f"{view}[data-page='0'] .cw-mark")
    page.wait_for_function("document.querySelector('#cw-document img.cw-page-image').naturalWidth > 0")
    again = drawn_marks(page)
    assert [v for box in again for v in box] == pytest.approx([v for box in first for v in box], abs=0.5)
    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"


def test_a_marker_opens_the_cited_pdf_page_with_the_supporting_lines_marked_where_the_words_are(
    browser, desk: str, pdf_index: Path, tmp_path: Path
) -> None:
    seen: list[str] = []
    page = open_page(browser, desk, seen)
    ask(page, QUESTION)
    page.wait_for_selector(CITE, timeout=ANSWER_TIMEOUT)
    link = page.locator(CITE).first
    marker = link.inner_text().strip("[]")
    link.click()
    page.wait_for_selector(f"#cw-passage .cw-passage[data-marker='{marker}'] mark.cw-support")
    supporting = page.inner_text("#cw-passage mark.cw-support")
    assert "eases the band" in supporting, supporting
    assert page.locator("#cw-passage a.cw-open-doc").count() == 1

    # the page beside the answer: the right one, an image made here, the marks over the supporting lines
    page.wait_for_selector(f"#cw-document .cw-pdf[data-cite='cite-0-{marker}'] .cw-mark")
    view = page.locator("#cw-document .cw-pdf")
    assert view.get_attribute("data-page") == str(CITED_PAGE)
    assert f"manual.pdf · page {CITED_PAGE + 1} of 4" in page.inner_text("#cw-document")
    src = page.get_attribute("#cw-document img.cw-page-image", "src") or ""
    assert src.startswith("gradio_api/file=") and src.endswith(".png"), src  # served by the page's server
    page.wait_for_function(
        "document.querySelector('#cw-document img.cw-page-image').naturalWidth > 0"
    )  # the browser decoded it
    words = sorted({w.strip(".,;") for w in supporting.split() if len(w.strip(".,;")) >= 4})
    truth = {
        word: word_boxes(pdf_index.parent / "papers" / "manual.pdf", CITED_PAGE, [word]) for word in words
    }
    assert all(truth.values()), truth  # PDFium finds every cited word on that page
    drawn = drawn_marks(page)
    assert len(drawn) >= 1
    places = [box for boxes in truth.values() for box in boxes]
    for mark in drawn:
        assert any(overlap(mark, box) > 0 for box in places), f"mark {mark} over none of the cited words"
    for word, boxes in truth.items():  # every cited word lies, at one of its places, mostly under a mark
        assert under_marks(boxes, drawn), word
    page.screenshot(path=tmp_path / "desk-page.png", full_page=True)

    # the original moved away: said plainly, and the passage shown as text
    papers = pdf_index.parent / "papers"
    moved = pdf_index.parent / "moved"
    papers.rename(moved)
    try:
        page.locator("#cw-document").evaluate("e => e.querySelector('.cw-source').dataset.cite = 'gone'")
        link.click()
        page.wait_for_selector("#cw-document .cw-text .cw-source-note")
        note = page.inner_text("#cw-document .cw-source-note")
        assert "manual.pdf is no longer where it was ingested from" in note and "as text" in note
        assert str(papers) not in page.inner_text("#cw-document")
        assert "eases the band" in page.inner_text("#cw-document .cw-cited-paragraph mark.cw-support")
        assert "Traceback" not in page.inner_text("#cw-document")
    finally:
        moved.rename(papers)
    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"


def test_the_document_view_turns_to_the_next_page_unmarked_and_back_to_the_cited_page_marked(
    browser, desk: str, tmp_path: Path
) -> None:
    seen: list[str] = []
    page = open_page(browser, desk, seen)
    cite = click_first_marker(page, QUESTION)
    view = f"#cw-document .cw-pdf[data-cite='{cite}']"
    page.wait_for_selector(f"{view}[data-page='{CITED_PAGE}'] .cw-mark")

    def shown() -> tuple[str, list[str], str]:
        """The page shown (its header), its marks' boxes, and its image's address once decoded."""
        page.wait_for_function("document.querySelector('#cw-document img.cw-page-image').naturalWidth > 0")
        marks = page.locator("#cw-document .cw-mark")
        boxes = [marks.nth(n).get_attribute("data-box") or "" for n in range(marks.count())]
        head = page.inner_text("#cw-document .cw-source-head")
        return head, boxes, page.get_attribute("#cw-document img.cw-page-image", "src") or ""

    cited_head, cited_marks, cited_src = shown()
    assert cited_head == f"manual.pdf · page {CITED_PAGE + 1} of 4" and cited_marks, (cited_head, cited_marks)
    assert page.locator("#cw-document .cw-page-cited").count() == 0
    page.screenshot(path=tmp_path / "cited-page.png", full_page=True)

    # next: the last page, rendered by the server too, no marks (they are the cited page's), no next page
    started = time.perf_counter()
    page.click("#cw-document .cw-page-next")
    page.wait_for_selector(f"{view}[data-page='{CITED_PAGE + 1}']")
    head, marks, src = shown()
    print(f"next page on screen {1000 * (time.perf_counter() - started):.0f} ms after the click")
    assert head == f"manual.pdf · page {CITED_PAGE + 2} of 4" and marks == [], (head, marks)
    assert src.startswith("gradio_api/file=") and src != cited_src, src
    assert page.locator("#cw-document .cw-page-next").is_disabled()
    assert page.inner_text("#cw-document .cw-page-cited") == f"Back to the cited page ({CITED_PAGE + 1})"
    page.screenshot(path=tmp_path / "next-page.png", full_page=True)

    # previous: the cited page again, with the same marks over the same lines
    page.click("#cw-document .cw-page-prev")
    page.wait_for_selector(f"{view}[data-page='{CITED_PAGE}'] .cw-mark")
    head, marks, _ = shown()
    assert (head, marks) == (cited_head, cited_marks), (head, marks)
    assert page.locator("#cw-document .cw-page-cited").count() == 0

    # back two pages to the first (no previous one there); "back to the cited page" returns to the marks
    for number in (CITED_PAGE - 1, CITED_PAGE - 2):
        page.click("#cw-document .cw-page-prev")
        page.wait_for_selector(f"{view}[data-page='{number}']")
        assert shown()[1] == []
    assert page.locator("#cw-document .cw-page-prev").is_disabled()
    page.click("#cw-document .cw-page-cited")
    page.wait_for_selector(f"{view}[data-page='{CITED_PAGE}'] .cw-mark")
    assert shown()[1] == cited_marks
    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"


def test_the_download_buttons_give_the_answer_in_four_formats_read_back_strictly(
    browser, desk: str, tmp_path: Path
) -> None:
    seen: list[str] = []
    page = open_page(browser, desk, seen)
    assert page.locator("#cw-download-md").is_disabled()  # nothing to download before an answer
    ask(page, "How are citations checked against their passages, and how often were they wrong?")
    page.wait_for_selector(CITE, timeout=ANSWER_TIMEOUT)
    page.wait_for_selector("#cw-download-md:not([disabled])", timeout=60_000)
    files = {}
    for fmt in ("md", "docx", "bib", "ris"):
        with page.expect_download() as download:
            page.click(f"#cw-download-{fmt}")
        files[fmt] = tmp_path / f"answer.{fmt}"
        download.value.save_as(files[fmt])
        assert download.value.suggested_filename.endswith(f".{fmt}")
    shown = {int(m.strip("[]")) for m in page.locator(CITE).all_inner_texts()}

    used, listed = markdown_markers(files["md"].read_text(encoding="utf-8"))
    assert used and set(used) <= listed and shown <= listed
    document = docx.Document(str(files["docx"]))
    texts = [p.text for p in document.paragraphs]
    references = [t for t in texts[texts.index("References") + 1 :] if t.startswith("[")]
    assert {int(t[1 : t.index("]")]) for t in references} >= shown
    body = " ".join(texts[1 : texts.index("References")])
    assert all(f"[{n}]" in body for n in shown)
    entries = read_bibtex(files["bib"].read_text(encoding="utf-8"))
    records = read_ris(files["ris"].read_bytes().decode("utf-8"))
    assert entries and len(records) == len(entries)
    titles = {title for _, _, fields in entries for title in [fields.get("title", "")]}
    assert any("retrieval" in title.lower() for title in titles), titles

    # a second answer, from the other PDF: markers of either turn show their own page and evidence
    ask(page, QUESTION)
    page.wait_for_selector("#cw-chat a.cw-cite[href^='#cite-1-']", timeout=ANSWER_TIMEOUT)
    for turn, file, title in [
        *[(0, "retrieval.pdf", "Citations as evidence"), (1, "manual.pdf", "Loomwright")] * 2
    ]:
        link = page.locator(f"#cw-chat a.cw-cite[href^='#cite-{turn}-']").first
        cite = (link.get_attribute("href") or "").lstrip("#")
        link.click()
        page.wait_for_selector(f"#cw-document .cw-pdf[data-cite='{cite}'] .cw-mark")
        assert file in page.inner_text("#cw-document .cw-source-head")
        assert title in page.inner_text("#cw-references"), (turn, page.inner_text("#cw-references"))
    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"
