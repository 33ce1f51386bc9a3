"""The chat page in Chromium: ask, watch it stream, open a citation, upload and ask, reload and resume.

Every request the page makes is recorded; a test fails if any leaves 127.0.0.1. Screenshots go to the test's
tmp_path (the path is printed) so a person can look at what the browser showed.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from support.page import ANSWER_TIMEOUT, CITE, ask, leaving, open_cited, open_page

pytestmark = pytest.mark.integration

QUESTION = "How do vaccines train the immune system?"


def test_a_question_streams_its_stages_then_a_cited_answer_whose_passage_opens(
    browser, server: str, tmp_path: Path
) -> None:
    seen: list[str] = []
    page = open_page(browser, server, seen)
    # streamed: the stage box shows the graph working before any answer is there. The page itself records
    # what it showed, at every change of the chat (a poll from here can miss the moment on a busy machine)
    page.evaluate(
        """(cite) => {
          window.cwStreamed = false;
          const chat = document.querySelector('#cw-chat');
          new MutationObserver(() => {
            if (chat.innerText.includes('Working:') && !chat.querySelector(cite)) window.cwStreamed = true;
          }).observe(chat, {childList: true, subtree: true, characterData: true});
        }""",
        CITE.removeprefix("#cw-chat "),
    )
    ask(page, QUESTION)
    page.wait_for_selector("#cw-chat :text('rewrite:')", timeout=ANSWER_TIMEOUT)
    page.wait_for_selector(CITE, timeout=ANSWER_TIMEOUT)
    assert page.evaluate("window.cwStreamed"), "the stages never showed before the answer"
    chat = page.inner_text("#cw-chat")
    assert QUESTION in chat and "Vaccines train the immune system" in chat
    assert re.search(r"Stages \(local mode, direct answer, [\d.]+s\)", chat), chat
    page.screenshot(path=tmp_path / "1-answer.png", full_page=True)

    # the evidence: a chart with kept and dropped points and the threshold, the table beside it
    assert page.locator("#cw-chart circle.cw-kept").count() >= 1
    assert page.locator("#cw-chart circle.cw-dropped").count() >= 1
    threshold = page.text_content("#cw-chart svg") or ""
    assert re.search(r"threshold [\d.]+", threshold), threshold
    table = page.inner_text("#cw-table")  # the table scrolls: its first rows are the best candidates
    assert re.search(r"1\s+\[1\]\s+kept\s+100", table), table
    assert "How vaccines work" in page.inner_text("#cw-references")

    # a click on [1] opens its passage: document, text, the supporting line highlighted
    link = page.locator(CITE).first
    marker = link.inner_text().strip("[]")
    link.click()
    page.wait_for_selector(f"#cw-passage .cw-passage[data-marker='{marker}'] mark.cw-support")
    passage = page.inner_text("#cw-passage")
    assert "How vaccines work" in passage
    assert "Vaccines train the immune system" in page.inner_text("#cw-passage mark.cw-support")
    assert page.url.rstrip("/") == server.rstrip("/")  # the link did not navigate anywhere
    page.screenshot(path=tmp_path / "2-passage.png", full_page=True)
    print(f"screenshots in {tmp_path}")

    # reload: the browser reopens the thread, and the list of threads has it. While the page's load event
    # (held here) restores it, nothing can be asked: a question would go to another thread and then be
    # overwritten by the restored one
    held: list = []
    page.route("**/queue/join*", lambda route: held.append(route))
    page.reload()
    page.wait_for_selector("#cw-question textarea")
    for _ in range(600):  # at most a minute: only a page that never loads reaches the end
        if held:
            break
        page.wait_for_timeout(100)
    else:
        pytest.fail("the page's load event never reached the server")
    assert page.locator("#cw-ask").is_disabled()
    assert page.locator("#cw-question textarea").is_disabled()
    for route in held:
        route.continue_()
    page.unroute("**/queue/join*")
    page.wait_for_selector(CITE, timeout=60_000)
    page.wait_for_selector("#cw-ask:not([disabled])")
    assert QUESTION in page.inner_text("#cw-chat")
    page.click("#cw-threads input")
    assert page.get_by_role("option", name=re.compile(re.escape(QUESTION))).count() >= 1
    page.keyboard.press("Escape")
    page.locator(CITE).first.click()
    page.wait_for_selector("#cw-passage mark.cw-support")
    page.screenshot(path=tmp_path / "3-reloaded.png", full_page=True)

    # another browser (nothing remembered) finds the thread in the list and opens it
    fresh = open_page(browser, server, seen)
    assert fresh.locator(CITE).count() == 0
    fresh.click("#cw-threads input")
    fresh.get_by_role("option", name=re.compile(re.escape(QUESTION))).first.click()
    fresh.wait_for_selector(CITE, timeout=60_000)
    assert "Vaccines train the immune system" in fresh.inner_text("#cw-chat")
    fresh.screenshot(path=tmp_path / "4-other-browser.png", full_page=True)

    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"
    assert any("127.0.0.1" in url for url in seen)


def test_an_uploaded_document_is_ingested_and_answers_a_question(
    browser, server: str, tmp_path: Path
) -> None:
    seen: list[str] = []
    page = open_page(browser, server, seen)
    page.click("#cw-new")
    notes = tmp_path / "lighthouse.md"
    notes.write_text(
        "# The Quillmoor lighthouse\n\nThe Quillmoor lighthouse was built in 1843 by the engineer "
        "Maren Tolv. Its lamp burned whale oil until 1901, when it was converted to kerosene.\n",
        encoding="utf-8",
    )
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    page.set_input_files("#cw-upload input[type=file]", [str(notes), str(empty)])
    page.wait_for_selector("#cw-ingest :text('Ingested')", timeout=ANSWER_TIMEOUT)
    report = page.inner_text("#cw-ingest")
    assert "Ingested 1 of 2 file(s)" in report, report
    assert re.search(r"skipped empty\.txt: \S", report), report  # the reason is shown
    page.screenshot(path=tmp_path / "5-uploaded.png", full_page=True)

    ask(page, "Who built the Quillmoor lighthouse?")
    page.wait_for_selector(CITE, timeout=ANSWER_TIMEOUT)
    assert "Maren Tolv" in page.inner_text("#cw-chat")
    page.locator(CITE).first.click()
    page.wait_for_selector("#cw-passage mark.cw-support")
    assert "Quillmoor" in page.inner_text("#cw-passage")
    page.screenshot(path=tmp_path / "6-upload-answer.png", full_page=True)

    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"


def test_a_report_shows_its_outline_and_sections_and_each_citation_opens_its_passage(
    browser, server: str, tmp_path: Path
) -> None:
    seen: list[str] = []
    page = open_page(browser, server, seen)
    page.click("#cw-new")
    page.locator("#cw-mode label", has_text="report").click()
    ask(page, "Give an overview of how vaccines and antibodies protect against disease")

    # the stage box names the outline and then each section as it is written
    line = page.wait_for_selector("#cw-chat :text('outline:')", timeout=ANSWER_TIMEOUT).inner_text()
    outline = re.search(r"outline: (\d+) sections: (.+)", line)
    assert outline, line
    titles = [t.strip() for t in outline.group(2).split(";")]
    assert len(titles) == int(outline.group(1)) >= 2, line
    page.wait_for_selector("#cw-chat :text('section:')", timeout=ANSWER_TIMEOUT)
    page.wait_for_selector(CITE, timeout=ANSWER_TIMEOUT)
    chat = page.inner_text("#cw-chat")
    assert re.search(r"Stages \(local mode, report, [\d.]+s\)", chat), chat
    headings = page.locator("#cw-chat h2").all_inner_texts()  # the sections render as headings
    sections = [h for h in headings if h != "Conclusion"]  # the stage line shortens long titles
    assert len(sections) == len(titles), (headings, titles)
    assert all(h.startswith(t.rstrip(".…")) for h, t in zip(sections, titles, strict=True)), (
        headings,
        titles,
    )
    page.screenshot(path=tmp_path / "7-report.png", full_page=True)

    # every marker of the report opens a passage that names its document and highlights a supporting line
    links = page.locator(CITE)
    markers = {links.nth(i).inner_text() for i in range(links.count())}
    assert len(markers) >= 2, markers
    for i in range(links.count()):
        open_cited(page, links.nth(i), tmp_path)
        assert page.inner_text("#cw-passage").strip()
    # two markers clicked in quick succession: the passage shown is the last one clicked (a click made
    # while the first was still loading was dropped, and the first passage stayed)
    first, last = links.nth(0).inner_text().strip("[]"), links.nth(links.count() - 1).inner_text().strip("[]")
    if first == last:
        last = next(m.strip("[]") for m in markers if m.strip("[]") != first)
    page.evaluate(
        "([a, b]) => { const pick = (m) => [...document.querySelectorAll('#cw-chat a.cw-cite')]"
        ".find((x) => x.innerText.trim() === `[${m}]`); pick(a).click(); pick(b).click(); }",
        [last, first],
    )
    try:
        page.wait_for_selector(f"#cw-passage .cw-passage[data-marker='{first}'] mark.cw-support")
    except PlaywrightTimeout:
        state = page.evaluate(
            "() => [window.citewiseWanted, JSON.stringify(window.citewiseAsked),"
            " document.querySelector('#cw-passage').innerHTML.slice(0, 400)]"
        )
        pytest.fail(f"clicked [{last}] then [{first}]; wanted, asked, panel: {state}")
    references = page.inner_text("#cw-references")
    assert "How vaccines work" in references, references
    page.screenshot(path=tmp_path / "8-report-passage.png", full_page=True)

    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"


def test_an_upload_shows_its_progress_while_it_is_ingested(browser, server: str, tmp_path: Path) -> None:
    """Forty notes of twenty sentences: long enough here (seconds of embedding) to watch the count move."""
    seen: list[str] = []
    page = open_page(browser, server, seen)
    files = []
    for n in range(40):
        note = tmp_path / f"harbour-{n:02d}.md"
        lines = [
            f"Pier {n}-{k} of the Ostbrygge harbour holds {k + n} moorings for fishing boats."
            for k in range(20)
        ]
        note.write_text(f"# Ostbrygge pier {n}\n\n" + " ".join(lines) + "\n", encoding="utf-8")
        files.append(str(note))
    page.set_input_files("#cw-upload input[type=file]", files)
    shown: list[str] = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # polled as a person would look, until the report replaces it
        text = page.inner_text("#cw-ingest")
        if "Ingested" in text:
            break
        if "Ingesting" in text:
            shown.append(text)
            if len(shown) == 1:
                page.screenshot(path=tmp_path / "9-upload-progress.png", full_page=True)
        page.wait_for_timeout(50)
    report = page.inner_text("#cw-ingest")
    assert "Ingested 40 of 40 file(s)" in report, report
    assert shown, "no progress was shown while forty files were ingested"
    done = [int(m.group(1)) for text in shown if (m := re.search(r"(\d+) of 40 file\(s\) done", text))]
    chunks = [int(m.group(1)) for text in shown if (m := re.search(r"(\d+) texts embedded", text))]
    assert done and chunks, shown
    assert max(done) > min(done) and max(chunks) > 0, shown  # it moved while the files were ingested
    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"
