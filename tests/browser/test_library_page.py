"""The page as a research desk in Chromium: the Library tab, a report's outline approved on the page, uploads.

The page runs behind a "trusted proxy" on loopback (`--trusted-proxy 127.0.0.1 --user-header X-User`), so
each browser context is a user by its header: alice reads and writes the default collection and `secret`,
bob only reads the default one. Every request the page makes is recorded; none may leave 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect
from support.page import ANSWER_TIMEOUT, CITE, ask, leaving, open_page, serving

from citewise.app.access import AccessStore
from citewise.index import Index
from citewise.index.embeddings import Embedder

pytestmark = pytest.mark.integration

PDF = Path(__file__).parent.parent / "data" / "pdf" / "tidal.pdf"
PDF_TITLE = "Tidal heating of rocky exoplanets around small stars"
LIGHTHOUSE = "The Quillmoor lighthouse"
SECRET = "The Varnholt vault ledger"
HEADER = "X-User"
SOURDOUGH = "Sourdough baking"  # one of the twelve documents of corpus.jsonl


@pytest.fixture(scope="module")
def desk_index(
    tmp_path_factory: pytest.TempPathFactory, embedder: Embedder, small_corpus_records: list[dict[str, str]]
) -> Path:
    """The twelve-document corpus, a typeset PDF, a note to remove, and a note in collection `secret`."""
    root = tmp_path_factory.mktemp("desk-index")
    docs = root / "docs"
    docs.mkdir()
    corpus = docs / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in small_corpus_records), encoding="utf-8")
    shutil.copyfile(PDF, docs / "tidal.pdf")
    (docs / "lighthouse.md").write_text(
        f"# {LIGHTHOUSE}\n\nThe Quillmoor lighthouse was built in 1843 by the engineer Maren Tolv. Its lamp "
        "burned whale oil until 1901, when it was converted to kerosene.\n",
        encoding="utf-8",
    )
    secret = root / "secret.md"
    secret.write_text(
        f"# {SECRET}\n\nThe Varnholt vault ledger records every deposit of the guild of glassblowers.\n",
        encoding="utf-8",
    )
    with Index.open(root / "index", embedder=embedder) as index:
        index.ingest([corpus, docs / "tidal.pdf", docs / "lighthouse.md"])
        index.ingest([secret], collection="secret")
    access = AccessStore(root / "index" / "access.sqlite3")
    for collection in ("default", "secret"):
        access.grant("alice", collection, "write")
    access.close()
    return root / "index"


@pytest.fixture(scope="module")
def desk(desk_index: Path) -> Iterator[str]:
    """`citewise serve` in local mode, its users named by a trusted proxy's header."""
    options = ("--trusted-proxy", "127.0.0.1", "--user-header", HEADER)
    with serving(desk_index.parent, desk_index, *options) as url:
        yield url


TABLE_FITS = """() => {
  const view = document.querySelector('#cw-library .virtual-table-viewport');
  const broken = [];
  for (const th of document.querySelectorAll('#cw-library th')) {
    const walk = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      if (!node.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      if (range.getClientRects().length > 1) broken.push(node.textContent.trim());
    }
  }
  return {scroll: view.scrollWidth, client: view.clientWidth, broken};
}"""
"""The library table's width against its frame's, and the headers broken over two lines or more."""


def as_user(browser, url: str, seen: list[str], user: str):
    """The page in a new browser context whose requests say they are `user`'s."""
    context = browser.new_context(viewport={"width": 1400, "height": 1150}, extra_http_headers={HEADER: user})
    return open_page(browser, url, seen, context)


def library(page):
    """Open the Library tab and wait for its list."""
    page.get_by_role("tab", name="Library").click()  # rows are the table's grid cells
    page.wait_for_selector("#cw-lib-status :text('documents')", timeout=60_000)


def search(page, text: str, count: str) -> None:
    """Search the library by title and wait for the count it should then say ("1 of 15 documents")."""
    page.fill("#cw-lib-search textarea", text)
    try:
        page.wait_for_function(
            "(t) => document.querySelector('#cw-lib-status').innerText.includes(t)", arg=count, timeout=30_000
        )
    except Exception:  # said with what the page showed instead
        pytest.fail(f"searching {text!r}: {page.inner_text('#cw-lib-status')!r}, not {count!r}")


def ask_outline_first(page, question: str) -> tuple[list[str], list[str]]:
    """Ask for a report "outline first"; the planned sections' titles and goals, two at least."""
    page.locator("#cw-mode label", has_text="outline first").click()
    ask(page, question)
    page.wait_for_selector("#cw-outline-title-1 textarea", timeout=ANSWER_TIMEOUT)
    planned, goals = outline_titles(page), outline_titles(page, "goal")
    assert len(planned) >= 2, planned
    return planned, goals


def outline_titles(page, field: str = "title") -> list[str]:
    """The outline editor's section titles (or goals), in order, as shown."""
    shown = []
    for n in range(1, 13):
        if not page.locator(f"#cw-outline-row-{n}").is_visible():
            break
        shown.append(page.input_value(f"#cw-outline-{field}-{n} textarea"))
    return shown


def test_the_library_lists_opens_and_removes_documents_of_the_users_collections(
    browser, desk: str, desk_index: Path, embedder: Embedder, tmp_path: Path
) -> None:
    seen: list[str] = []
    page = as_user(browser, desk, seen, "alice")
    # the Library is a tab of the page beside the chat, not a part of the chat's column
    tabs = [t.strip() for t in page.locator("#cw-tabs [role=tab]").all_inner_texts()]
    assert tabs == ["Chat", "Library"], tabs
    assert page.locator("#cw-chat").is_visible() and not page.locator("#cw-library").is_visible()
    library(page)
    assert not page.locator("#cw-chat").is_visible() and not page.locator("#cw-chart").is_visible()
    assert "15 documents" in page.inner_text("#cw-lib-status")
    listed = page.inner_text("#cw-library")
    assert PDF_TITLE in listed and LIGHTHOUSE in listed and SECRET in listed, listed
    page.screenshot(path=tmp_path / "1-library.png", full_page=True)
    # in a 1280 px window the table fits: no sideways scrolling, every header on one line, the id short
    page.set_viewport_size({"width": 1280, "height": 1150})
    page.wait_for_timeout(300)  # laid out again
    fits = page.evaluate(TABLE_FITS)
    assert fits["scroll"] <= fits["client"] and not fits["broken"], fits
    cells = [c.strip() for c in page.locator("#cw-library [role=gridcell]").all_inner_texts()]
    rows = [cells[n : n + 9] for n in range(0, len(cells), 9)]  # title, ..., ingested, warnings, id
    assert rows and all(len(row[-1]) == 8 for row in rows), rows
    warned = [row[-2] for row in rows if row[-2] != "none"]
    assert any(len(w) > 40 for w in warned), warned  # a long warning among them, wrapped in its column
    page.screenshot(path=tmp_path / "1-library-1280.png", full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1150})

    # the PDF opened: its sections with paragraph counts, its references, what its layout left out
    search(page, "tidal heating", "1 of 15 documents")
    page.locator("#cw-library [role=gridcell]", has_text=PDF_TITLE).first.click()
    page.wait_for_selector(f"#cw-lib-doc h3:text('{PDF_TITLE}')")
    sections = page.locator("#cw-lib-doc .cw-doc-section").all_inner_texts()
    assert [s.split()[-1] for s in sections] == ["[1]", "[3]", "[2]", "[3]", "[1]"], sections
    assert "Models and assumptions" in sections[2]
    references = page.locator("#cw-lib-doc .cw-doc-references li").all_inner_texts()
    assert len(references) == 3 and "Transits of small planets" in references[0], references
    left_out = page.inner_text("#cw-lib-doc .cw-doc-left-out")
    assert "page furniture" in left_out and "footnotes" in left_out, left_out
    page.screenshot(path=tmp_path / "2-document.png", full_page=True)

    # removal asks first; cancelled, nothing goes; confirmed, the document leaves the index and the list
    search(page, "quillmoor", "1 of 15 documents")
    page.locator("#cw-library [role=gridcell]", has_text=LIGHTHOUSE).first.click()
    page.wait_for_selector(f"#cw-lib-doc h3:text('{LIGHTHOUSE}')")
    page.click("#cw-lib-remove")
    page.wait_for_selector("#cw-lib-confirm-box :text('cannot be undone')")
    page.click("#cw-lib-cancel")
    page.wait_for_selector("#cw-lib-confirm-box", state="hidden")
    assert "1 of 15 documents" in page.inner_text("#cw-lib-status")
    page.click("#cw-lib-remove")
    page.click("#cw-lib-confirm")
    page.wait_for_selector("#cw-lib-status :text('Removed')", timeout=60_000)
    assert LIGHTHOUSE not in page.inner_text("#cw-library")
    page.screenshot(path=tmp_path / "3-removed.png", full_page=True)
    with Index.open(desk_index, embedder=embedder, create=False) as index:
        assert not [d for d in index.documents() if d.title == LIGHTHOUSE]
        hits = index.search("Quillmoor lighthouse Maren Tolv", k=5)
        assert all("Quillmoor" not in hit.text for hit in hits), hits
    events = AccessStore(desk_index / "access.sqlite3").events(user="alice")
    removals = [e for e in events if e["action"] == "remove"]
    assert removals and removals[-1]["via"] == "page" and removals[-1]["title"] == LIGHTHOUSE, removals

    # one document of a file of twelve (a JSONL): it goes alone, the file's eleven others stay
    search(page, "sourdough", "1 of 14 documents")
    page.locator("#cw-library [role=gridcell]", has_text=SOURDOUGH).first.click()
    page.wait_for_selector(f"#cw-lib-doc h3:text('{SOURDOUGH}')")
    doc_id = re.findall(r"· id (\S+)", page.inner_text("#cw-lib-doc .cw-note"))
    page.click("#cw-lib-remove")
    page.wait_for_selector("#cw-lib-confirm-box :text('the 11 other documents of its file')")
    page.click("#cw-lib-confirm")
    page.wait_for_function(
        "(t) => document.querySelector('#cw-lib-status').innerText.includes(t)",
        arg=f"Removed “{SOURDOUGH}”: 1 document(s)",
        timeout=60_000,
    )
    page.fill("#cw-lib-search textarea", "")
    page.wait_for_function("document.querySelector('#cw-lib-status').innerText.trim() === '13 documents'")
    page.wait_for_function("document.querySelector('#cw-library').innerText.includes('Black holes')")
    listed = page.inner_text("#cw-library")
    assert SOURDOUGH not in listed and "Black holes" in listed and "How vaccines work" in listed, listed
    with Index.open(desk_index, embedder=embedder, create=False) as index:
        corpus = [d.title for d in index.documents() if Path(d.file).name == "corpus.jsonl"]
        assert len(corpus) == 11 and SOURDOUGH not in corpus, corpus
        assert all(hit.title != SOURDOUGH for hit in index.search("sourdough starter of wild yeast", k=5))
    events = AccessStore(desk_index / "access.sqlite3").events(user="alice")
    removed = [e for e in events if e["action"] == "remove"][-1]
    assert removed["title"] == SOURDOUGH and removed["documents_removed"] == 1, removed
    assert len(doc_id) == 1 and removed["doc_ids"] == doc_id, (removed, doc_id)

    # back to the chat: the tab shows it as it was
    page.get_by_role("tab", name="Chat").click()
    page.wait_for_selector("#cw-chat", state="visible")
    assert not page.locator("#cw-library").is_visible()

    # bob reads only the default collection: the secret document is never listed; he may not remove
    other = as_user(browser, desk, seen, "bob")
    library(other)
    assert "12 documents" in other.inner_text("#cw-lib-status")
    assert SECRET not in other.inner_text("#cw-library")
    search(other, "varnholt", "0 of 12 documents")
    search(other, "tidal", "1 of 12 documents")
    other.locator("#cw-library [role=gridcell]", has_text=PDF_TITLE).first.click()
    other.wait_for_selector(f"#cw-lib-doc h3:text('{PDF_TITLE}')")
    assert other.locator("#cw-lib-remove").is_disabled()
    other.screenshot(path=tmp_path / "4-bob.png", full_page=True)
    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"


def test_a_report_waits_at_its_outline_which_is_edited_on_the_page_and_run(
    browser, desk: str, tmp_path: Path
) -> None:
    seen: list[str] = []
    page = as_user(browser, desk, seen, "alice")
    planned, _ = ask_outline_first(
        page, "Give an overview of how vaccines and antibodies protect against disease"
    )
    assert "the outline waits for your approval" in page.inner_text("#cw-chat")
    assert page.locator(CITE).count() == 0  # nothing is written before the outline is approved
    # the update that holds it lands after the outline shows: on a loaded two-core machine more than 5 s after
    # (CI at stop 61, the test's default wait)
    expect(page.locator("#cw-ask")).to_be_disabled(timeout=ANSWER_TIMEOUT)

    def titles() -> list[str]:
        return outline_titles(page)

    page.screenshot(path=tmp_path / "5-outline.png", full_page=True)
    if len(planned) < 3:  # enough sections to drop one and still reorder two
        page.click("#cw-outline-add")
        page.wait_for_selector(f"#cw-outline-row-{len(planned) + 1}", state="visible")
        page.fill(f"#cw-outline-title-{len(planned) + 1} textarea", "How vaccines train the immune system")
        planned = titles()

    # a section without a title is refused, plainly, and nothing runs
    page.fill("#cw-outline-title-2 textarea", "")
    page.click("#cw-outline-run")
    page.wait_for_selector("#cw-outline-error :text('no title')")
    assert page.locator(CITE).count() == 0

    # rename the first, drop the last, move the (renamed) first down one place
    page.fill("#cw-outline-title-2 textarea", planned[1])
    page.fill("#cw-outline-title-1 textarea", "How antibodies protect against disease")
    last = len(planned)
    page.click(f"#cw-outline-drop-{last}")
    page.wait_for_selector(f"#cw-outline-row-{last}", state="hidden")
    page.click("#cw-outline-down-1")
    expected = [planned[1], "How antibodies protect against disease", *planned[2 : last - 1]]
    page.wait_for_function(
        "(t) => document.querySelector('#cw-outline-title-1 textarea').value === t", arg=expected[0]
    )
    assert titles() == expected
    page.screenshot(path=tmp_path / "6-edited.png", full_page=True)
    page.click("#cw-outline-run")
    page.wait_for_selector("#cw-outline", state="hidden")
    page.wait_for_selector(CITE, timeout=ANSWER_TIMEOUT)
    chat = page.inner_text("#cw-chat")
    assert re.search(r"Stages \(local mode, report, [\d.]+s\)", chat), chat
    headings = [h for h in page.locator("#cw-chat h2").all_inner_texts() if h != "Conclusion"]
    assert headings == expected, (headings, expected)
    page.wait_for_selector("#cw-ask:not([disabled])")
    page.screenshot(path=tmp_path / "7-report.png", full_page=True)
    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"


def test_an_outline_waiting_for_approval_is_shown_again_after_a_reload_and_runs(
    browser, desk: str, tmp_path: Path
) -> None:
    seen: list[str] = []
    page = as_user(browser, desk, seen, "alice")
    question = "Give an overview of how glaciers and ocean tides shape coastlines"
    planned, goals = ask_outline_first(page, question)

    # the reload: the thread's interrupt, kept by the thread store, waits again in the editor
    page.reload()
    page.wait_for_selector("#cw-question textarea")
    page.wait_for_selector("#cw-outline-title-1 textarea", timeout=60_000)
    assert outline_titles(page) == planned and outline_titles(page, "goal") == goals
    chat = page.inner_text("#cw-chat")
    assert question in chat and "edit it, then Run" in chat, chat
    assert page.locator(CITE).count() == 0
    for held in ("#cw-ask", "#cw-new"):  # as before the reload: nothing else runs in the thread meanwhile
        expect(page.locator(held)).to_be_disabled()
    page.screenshot(path=tmp_path / "outline-after-reload.png", full_page=True)

    page.click("#cw-outline-run")
    page.wait_for_selector("#cw-outline", state="hidden")
    page.wait_for_selector(CITE, timeout=ANSWER_TIMEOUT)
    chat = page.inner_text("#cw-chat")
    assert re.search(r"Stages \(local mode, report, [\d.]+s\)", chat), chat
    assert chat.count(question) == 1, chat  # the question once, answered by the report
    headings = [h for h in page.locator("#cw-chat h2").all_inner_texts() if h != "Conclusion"]
    assert headings == planned, (headings, planned)
    page.wait_for_selector("#cw-ask:not([disabled])")
    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"


def test_a_thread_whose_outline_waits_is_listed_and_picked_from_the_list_shows_the_outline_to_run(
    browser, desk: str, tmp_path: Path
) -> None:
    seen: list[str] = []
    page = as_user(browser, desk, seen, "alice")
    question = "Give an overview of black holes and how massive stars end their lives"
    planned, goals = ask_outline_first(page, question)
    # the Threads box names the waiting thread (held, as the question box is, until the outline runs)
    page.wait_for_function(
        "(q) => document.querySelector('#cw-threads input').value.includes(q)", arg=question[:40]
    )
    assert page.locator("#cw-threads input").is_disabled()

    # another browser of alice's (nothing remembered) picks the thread from the list: the outline waits there
    other = as_user(browser, desk, seen, "alice")
    assert not other.locator("#cw-outline").is_visible()
    other.click("#cw-threads input")
    other.get_by_role("option", name=re.compile(re.escape(question[:40]))).first.click()
    other.wait_for_selector("#cw-outline-title-1 textarea", timeout=60_000)
    assert outline_titles(other) == planned and outline_titles(other, "goal") == goals
    chat = other.inner_text("#cw-chat")
    assert question in chat and "edit it, then Run" in chat, chat
    assert other.locator(CITE).count() == 0
    for held in ("#cw-ask", "#cw-new", "#cw-question textarea", "#cw-threads input"):  # as after a reload
        expect(other.locator(held)).to_be_disabled()
    other.screenshot(path=tmp_path / "outline-picked.png", full_page=True)

    # edited there and run: the report has the edited outline
    other.fill("#cw-outline-title-1 textarea", "How black holes form")
    other.click("#cw-outline-run")
    other.wait_for_selector("#cw-outline", state="hidden")
    other.wait_for_selector(CITE, timeout=ANSWER_TIMEOUT)
    chat = other.inner_text("#cw-chat")
    assert chat.count(question) == 1, chat
    headings = [h for h in other.locator("#cw-chat h2").all_inner_texts() if h != "Conclusion"]
    assert headings == ["How black holes form", *planned[1:]], (headings, planned)
    other.wait_for_selector("#cw-ask:not([disabled])")
    assert not other.locator("#cw-threads input").is_disabled()
    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"


def test_an_upload_shows_each_files_pages_read_and_texts_embedded(browser, desk: str, tmp_path: Path) -> None:
    """A four-page PDF and twenty notes; runs last (it adds documents to the module's index)."""
    seen: list[str] = []
    page = as_user(browser, desk, seen, "alice")
    files = [str(shutil.copyfile(PDF.parent / "manual.pdf", tmp_path / "manual.pdf"))]
    for n in range(20):
        note = tmp_path / f"pier-{n:02d}.md"
        lines = [f"Pier {n}-{k} of the Ostbrygge harbour holds {k + n} moorings." for k in range(20)]
        note.write_text(f"# Ostbrygge pier {n}\n\n" + " ".join(lines) + "\n", encoding="utf-8")
        files.append(str(note))
    page.set_input_files("#cw-upload input[type=file]", files)
    shown: list[str] = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        text = page.inner_text("#cw-ingest")
        if "Ingested" in text:
            break
        if "Ingesting" in text and text not in shown:
            shown.append(text)
            if len(shown) == 3:
                page.screenshot(path=tmp_path / "8-upload-progress.png", full_page=True)
        page.wait_for_timeout(50)
    assert "Ingested 21 of 21 file(s)" in page.inner_text("#cw-ingest")
    every = "\n".join(shown)
    assert re.search(r"manual\.pdf: (reading|done), [1-4] of 4 pages read", every), every
    assert re.search(r"pier-\d\d\.md: done, \d+ texts embedded, \d+ chunks stored", every), every
    assert re.search(r"\d+ file\(s\) waiting", every), every
    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"
