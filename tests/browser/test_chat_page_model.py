"""The chat page with a model: tokens appear as the model streams them, and a report is written by sections.

`citewise serve --model openai/...` talks through the real `openai` client to the scripted OpenAI-compatible
server on 127.0.0.1 (tests/support/fake_openai.py), which streams its answer one word every STREAM_DELAY
seconds, so the page can be caught showing part of an answer the model has not finished.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fake_openai import FakeOpenAI, SchemaResponder, prompt_text, request_schema
from support.page import ANSWER_TIMEOUT, CITE, ask, leaving, open_cited, open_page, serving

pytestmark = pytest.mark.integration

STREAM_DELAY = 0.15  # s between streamed words: a 30-word answer takes about 4.5 s to arrive
ANSWER = (
    "Tokenfirst: vaccines expose the immune system to a harmless piece of a pathogen, so that it learns to "
    "recognise the real one, and memory cells then remain for years to answer a later infection quickly, "
    "which is the whole point of vaccination tokenlast [E1]."
)
TOPICS = ["vaccines immune system", "volcanoes magma eruption", "glaciers ice retreat"]


class Writer(SchemaResponder):
    """The scripted model: ANSWER to a question over evidence E1, E2, ...; everything else SchemaResponder's
    (a report's outline, sections and merge, the judges' scores, the verification)."""

    def reply(self, request: dict[str, Any]) -> Any:
        prompt = prompt_text(request)
        section = "Write the section" in prompt or "draft of the section" in prompt
        if request_schema(request) is None and "[E1]" in prompt and not section:
            return ANSWER
        return super().reply(request)


@pytest.fixture(scope="module")
def model_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(Writer(sections=3, queries=TOPICS), stream_delay=STREAM_DELAY) as fake:
        yield fake


@pytest.fixture(scope="module")
def model_page(sample_index: Path, model_server: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("model-page")
    # the full profile: under lean (auto's choice for a server on 127.0.0.1) only sentences the local lexical
    # check supports stand, and the scripted writer's tokens are not in the sample
    env = {"OPENAI_BASE_URL": model_server.base_url, "OPENAI_API_KEY": "test", "CITEWISE_PROFILE": "full"}
    with serving(root, sample_index, "--model", "openai/test-writer", env=env) as url:
        yield url


def test_a_model_answer_streams_into_the_page_before_it_is_finished(
    browser, model_page: str, model_server: FakeOpenAI, tmp_path: Path
) -> None:
    model_server.reset()
    seen: list[str] = []
    page = open_page(browser, model_page, seen)
    assert "LLM mode: openai/test-writer" in page.inner_text("#cw-header")
    page.locator("#cw-mode label", has_text="answer").click()
    ask(page, "How do vaccines train the immune system?")

    # part of the answer is on the page while the model is still writing it
    page.wait_for_function(
        "() => { const t = document.querySelector('#cw-chat').innerText;"
        " return t.includes('Tokenfirst') && !t.includes('tokenlast'); }",
        timeout=ANSWER_TIMEOUT,
    )
    partial = page.inner_text("#cw-chat")
    page.screenshot(path=tmp_path / "1-streaming.png", full_page=True)
    assert "Working: answer" in partial, partial  # the stage box names what is being written
    assert page.locator(CITE).count() == 0  # markers become links only once the answer is verified
    # nothing else can start meanwhile: a second question or another thread would be written over
    for control in ("#cw-ask", "#cw-new", "#cw-question textarea", "#cw-threads input"):
        assert page.locator(control).is_disabled(), control

    page.wait_for_selector(CITE, timeout=ANSWER_TIMEOUT)
    page.wait_for_selector("#cw-ask:not([disabled])")
    for control in ("#cw-new", "#cw-question textarea", "#cw-threads input"):
        assert page.locator(control).is_enabled(), control
    chat = page.inner_text("#cw-chat")
    assert re.search(r"Stages \(LLM mode, direct answer, [\d.]+s\)", chat), chat
    assert chat.count("Tokenfirst") == 1 and "tokenlast" in chat  # the draft gave way to the answer
    page.locator(CITE).first.click()
    page.wait_for_selector("#cw-passage .cw-passage mark.cw-support")
    assert "How vaccines work" in page.inner_text("#cw-passage")
    page.screenshot(path=tmp_path / "2-answer.png", full_page=True)

    streamed = [r for r in model_server.chat_requests if r.body.get("stream")]
    assert streamed, "the answer was not asked for as a stream"
    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"


def test_a_model_report_shows_its_sections_as_headings_with_working_citations(
    browser, model_page: str, model_server: FakeOpenAI, tmp_path: Path
) -> None:
    model_server.reset()
    seen: list[str] = []
    page = open_page(browser, model_page, seen)
    page.click("#cw-new")
    page.locator("#cw-mode label", has_text="report").click()
    ask(page, "Give an overview of vaccines, volcanoes and glaciers")

    page.wait_for_selector("#cw-chat :text('outline:')", timeout=ANSWER_TIMEOUT)
    page.wait_for_selector(CITE, timeout=ANSWER_TIMEOUT)
    chat = page.inner_text("#cw-chat")
    assert re.search(r"Stages \(LLM mode, report, [\d.]+s\)", chat), chat
    headings = page.locator("#cw-chat h2").all_inner_texts()
    assert [h for h in headings if h != "Conclusion"] == ["Part 1", "Part 2", "Part 3"], headings
    assert "Tokenfirst" not in chat  # the sections are the writer's sections, not the direct answer
    links = page.locator(CITE)
    assert links.count() >= 3
    for i in range(links.count()):
        open_cited(page, links.nth(i), tmp_path)
    page.screenshot(path=tmp_path / "3-report.png", full_page=True)
    print(f"screenshots in {tmp_path}")

    prompts = " ".join(str(r.body) for r in model_server.chat_requests)
    assert "PlannedOutline" in prompts  # the model planned the outline
    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"
