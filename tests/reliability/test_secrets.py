"""Campaign: API keys never appear in logs, tracebacks, error messages or the JSON output (issue #11).

OPENAI_API_KEY and COHERE_API_KEY are recognisable canaries. The model provider and the reranker answer 401
or 500 with a message that echoes the keys (as some OpenAI-compatible proxies do), nothing listens at all
(connection refused on a closed loopback port), or only the reranker fails. The graph, `citewise ask
--json`, `citewise chat` and the chat page's turn run against each fault; stdout, stderr, every log record at
DEBUG (tracebacks included), the result serialised, every update the page streams and the thread store on
disk must not hold either key. The server's record of the Authorization header shows the
canaries were really sent.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from support.fake_openai import Fail, FakeOpenAI, SchemaResponder
from typer.testing import CliRunner

from citewise import models
from citewise.context import Context
from citewise.graph.query import builder

pytestmark = pytest.mark.integration

OPENAI_KEY = "sk-citewise-SECRET-canary-123"
COHERE_KEY = "co-citewise-SECRET-canary-456"
SECRETS = (OPENAI_KEY, COHERE_KEY, "SECRET-canary")
QUESTION = "How do vaccines train the immune system?"
FAULTS = ("401", "500", "refused", "rerank")
"""The chat model answers 401 / 500, nothing listens, or the chat model works and the reranker answers 500."""


def echoing(status: int) -> Fail:
    """An error whose message repeats both keys, as a careless proxy's would."""
    return Fail(status, f"Incorrect API key provided: {OPENAI_KEY} (rerank key {COHERE_KEY})")


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def provider(
    request: pytest.FixtureRequest,
    serve: Callable[..., FakeOpenAI],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> FakeOpenAI:
    """The fault `request.param` on loopback, both canary keys set, no backoff, every log record caught."""
    fault = request.param
    server = serve(SchemaResponder(), key=OPENAI_KEY)
    monkeypatch.setenv("COHERE_API_KEY", COHERE_KEY)
    monkeypatch.setenv("COHERE_BASE_URL", server.root_url)
    monkeypatch.setattr(models.Backoff, "__call__", lambda self, state: 0.0)
    if fault == "refused":
        dead = f"http://127.0.0.1:{closed_port()}"
        monkeypatch.setenv("OPENAI_BASE_URL", f"{dead}/v1")
        monkeypatch.setenv("COHERE_BASE_URL", dead)
    elif fault == "rerank":  # every passage is kept, so the reranker has several to order
        server.responder = SchemaResponder(scores={f"E{n}": 80 for n in range(1, 31)})
        server.script([echoing(500)] * 50, endpoint="rerank")
    else:
        failure = echoing(int(fault))
        server.responder = lambda body: failure
        server.script([failure] * 50, endpoint="rerank")
    caplog.set_level(logging.DEBUG)
    return server


def assert_no_secret(where: str, text: str) -> None:
    for secret in SECRETS:
        at = text.find(secret)
        assert at < 0, f"{secret!r} leaked into {where}: ...{text[max(0, at - 200) : at + 200]}"


def assert_log_clean(caplog: pytest.LogCaptureFixture) -> None:
    """No key in the log's text, nor in the arguments of any record (a handler may format them later)."""
    assert_no_secret("the log", caplog.text)
    assert_no_secret("log arguments", "\n".join(str(r.args) for r in caplog.records))


def assert_sent(server: FakeOpenAI, fault: str) -> None:
    """The canaries were live: the provider received them (unless nothing was listening)."""
    if fault == "refused":
        return
    sent = {r.headers.get("Authorization") or r.headers.get("authorization") for r in server.requests}
    assert f"Bearer {OPENAI_KEY}" in sent
    if fault == "rerank":
        assert server.rerank_requests and f"Bearer {COHERE_KEY}" in sent


@pytest.mark.parametrize("provider", FAULTS, indirect=True)
async def test_a_failing_provider_shows_no_key_in_the_result_or_the_logs(
    provider: FakeOpenAI,
    request: pytest.FixtureRequest,
    indexes: Callable[[str, list[dict[str, str]]], str],
    small_corpus_records: list[dict[str, str]],
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fault = request.node.callspec.params["provider"]
    context = Context(
        model="openai/test-model",
        judge_model="openai/test-judge",
        index_dir=indexes("corpus", small_corpus_records),
        max_retries=1,
        timeout_seconds=5,
    )
    result = await builder.compile().ainvoke({"messages": [HumanMessage(QUESTION)]}, context=context)

    assert result.get("error") or result.get("degraded"), "the fault did not reach the run"
    if fault == "401":
        assert result["error"]["kind"] == "model provider" and "refused (401)" in result["error"]["message"]
    assert_sent(provider, fault)
    assert_no_secret("the result", json.dumps(result, default=str))
    assert caplog.records, "nothing was logged"
    assert_log_clean(caplog)
    out, err = capsys.readouterr()
    assert_no_secret("stdout", out)
    assert_no_secret("stderr", err)


@pytest.mark.parametrize("provider", FAULTS, indirect=True)
def test_ask_json_with_a_failing_provider_shows_no_key(
    provider: FakeOpenAI,
    request: pytest.FixtureRequest,
    indexes: Callable[[str, list[dict[str, str]]], str],
    small_corpus_records: list[dict[str, str]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    from citewise.app.cli import app

    fault = request.node.callspec.params["provider"]
    index = indexes("corpus", small_corpus_records)
    arguments = ["ask", QUESTION, "--index", index, "--model", "openai/gpt-test", "--json"]
    result = CliRunner().invoke(app, arguments, catch_exceptions=False)

    assert result.exit_code in (0, 1), result.output
    if fault == "401":
        assert result.exit_code == 1 and "the API key was refused (401)" in result.stderr
    assert_sent(provider, fault)
    assert_no_secret("stdout", result.stdout)
    assert_no_secret("stderr", result.stderr)
    assert_log_clean(caplog)
    if result.exit_code == 0:
        payload: dict[str, Any] = json.loads(result.stdout)
        assert payload["degraded"], "the fault did not reach the run"


def stored_bytes(threads: Path) -> str:
    """Everything a thread store holds on disk (the SQLite file and its write-ahead log), as text."""
    return "".join(
        path.read_bytes().decode("latin-1")
        for path in threads.parent.glob(threads.name + "*")
        if path.is_file()
    )


def assert_kept_out(shown: str, caplog: pytest.LogCaptureFixture, threads: Path) -> None:
    """No key in what a conversation showed, in the log, or in its thread store (which must hold the turn)."""
    assert_no_secret("what it showed", shown)
    assert_log_clean(caplog)
    assert threads.exists() and QUESTION in stored_bytes(threads), "the turn was not stored"
    assert_no_secret("the thread store", stored_bytes(threads))


def conversation(
    indexes: Callable[[str, list[dict[str, str]]], str], records: list[dict[str, str]]
) -> Context:
    """The settings of a chat or page conversation with the model behind `provider`."""
    return Context(model="openai/test-model", index_dir=indexes("corpus", records), max_retries=1)


@pytest.mark.parametrize("provider", FAULTS, indirect=True)
def test_chat_with_a_failing_provider_shows_and_stores_no_key(
    provider: FakeOpenAI,
    request: pytest.FixtureRequest,
    indexes: Callable[[str, list[dict[str, str]]], str],
    small_corpus_records: list[dict[str, str]],
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """`citewise chat`: what it prints, logs and keeps in its thread store (`/sources` shown too)."""
    from citewise.app.chat import run_chat

    fault = request.node.callspec.params["provider"]
    threads = tmp_path / "threads.sqlite"
    lines = iter([QUESTION, "/sources", "/quit"])
    assert run_chat(conversation(indexes, small_corpus_records), threads=str(threads), lines=lines) == 0

    out, err = capsys.readouterr()
    if fault == "401":
        assert "refused (401)" in out + err, out + err
    assert_sent(provider, fault)
    assert_kept_out(out + err, caplog, threads)


@pytest.mark.parametrize("provider", FAULTS, indirect=True)
async def test_the_page_with_a_failing_provider_shows_and_stores_no_key(
    provider: FakeOpenAI,
    request: pytest.FixtureRequest,
    indexes: Callable[[str, list[dict[str, str]]], str],
    small_corpus_records: list[dict[str, str]],
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    """The chat page's turn: every update it streams to the browser, its log and its thread store."""
    from citewise.app.web.page import ChatPage

    fault = request.node.callspec.params["provider"]
    threads = tmp_path / "threads.sqlite"
    page = ChatPage(conversation(indexes, small_corpus_records), threads=str(threads))
    try:
        updates = [update async for update in page.ask(QUESTION, "answer", [], {})]
    finally:
        await page.close()

    shown = json.dumps([list(update) for update in updates], default=str)
    history = updates[-1][0]
    reply = history[-1]["content"]
    if fault == "401":
        assert "refused (401)" in reply, reply
    elif fault == "rerank":
        assert "[1]" in reply, reply  # the reranker's fault degrades the run, which still answers
    assert_sent(provider, fault)
    assert_kept_out(shown, caplog, threads)
