"""What a local model server needs of citewise (issue #24), against the scripted server on 127.0.0.1.

A server where nothing listens, a server that serves one request at a time, a time budget that runs out, the
lean profile's request count, and a judge whose scores are nonsense: each with what citewise must do.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from support.fake_openai import FakeOpenAI, SchemaResponder

from citewise.context import Context
from citewise.core.evidence import NO_ANSWER
from citewise.graph.query import builder
from citewise.models import LLM, ProviderUnreachable, Servers, is_retryable
from citewise.state import RelevanceScores

pytestmark = pytest.mark.integration

MODEL = "openai/fake-model"
QUESTION = "How do vaccines train the immune system?"
SCORE_MESSAGES = 'Score <evidence id="E1">vaccines</evidence> for <question>vaccines</question>'


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def ask(context: Context, question: str = QUESTION) -> dict[str, Any]:
    return await builder.compile().ainvoke({"messages": [HumanMessage(question)]}, context=context)


async def test_a_refused_connection_fails_at_once_naming_the_url(
    monkeypatch: pytest.MonkeyPatch, corpus_index: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    llm = LLM(MODEL, Context(model=MODEL, max_retries=4))
    with pytest.raises(ProviderUnreachable, match=f"nothing answers at {url}") as raised:
        await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score")
    assert not is_retryable(raised.value) and not is_retryable(raised.value.__cause__)
    caplog.set_level(logging.WARNING)
    result = await ask(Context(model=MODEL, index_dir=corpus_index, max_retries=4))
    assert result["error"]["kind"] == "model provider" and url in result["error"]["message"]
    assert "Start the model server" in result["error"]["hint"]
    assert not [r for r in caplog.records if "retrying in" in r.getMessage()]  # not one retry


async def test_a_serial_server_is_found_and_then_sent_one_request_at_a_time(
    serve: Callable[..., FakeOpenAI],
) -> None:
    server = serve(serial=True, delay=0.8)  # long enough for the first four to overlap on a busy machine
    servers = Servers()  # what the way in keeps across runs
    llm = LLM(MODEL, Context(model=MODEL, max_concurrency=4), backoff=(0.0, 0.0), servers=servers)
    await asyncio.gather(
        *(llm.structured(RelevanceScores, f"{SCORE_MESSAGES} {n}", stage="score") for n in (0, 1, 2, 3))
    )
    assert server.max_in_flight == 4  # the first group went out together and queued at the server
    assert llm.facts.serial is True
    assert llm.facts.seconds_per_token is None or llm.facts.seconds_per_token > 0
    server.reset()
    await asyncio.gather(
        *(llm.structured(RelevanceScores, f"{SCORE_MESSAGES} {n}", stage="score") for n in range(4, 8))
    )
    assert server.max_in_flight == 1 and len(server.chat_requests) == 4
    other = LLM(MODEL, Context(model=MODEL, max_concurrency=4), servers=servers)  # the next run knows it
    assert other.facts.serial is True


async def test_a_request_that_timed_out_is_retried_with_a_longer_timeout(
    serve: Callable[..., FakeOpenAI],
) -> None:
    """A serial server still works on the request the client gave up: the same timeout again runs out
    behind it, every time; doubling it lets the retry through."""
    server = serve(serial=True, delay=0.8)
    context = Context(model=MODEL, timeout_seconds=0.5, max_retries=3)
    llm = LLM(MODEL, context, backoff=(0.0, 0.0))
    result = await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score")
    assert result  # answered on a later try
    assert 2 <= len(server.chat_requests) <= 4


async def test_a_parallel_server_keeps_its_requests_in_flight(serve: Callable[..., FakeOpenAI]) -> None:
    server = serve(delay=0.3)
    llm = LLM(MODEL, Context(model=MODEL, max_concurrency=4), backoff=(0.0, 0.0))
    for round_ in range(2):
        await asyncio.gather(
            *(
                llm.structured(RelevanceScores, f"{SCORE_MESSAGES} {round_} {n}", stage="score")
                for n in range(4)
            )
        )
    assert llm.facts.serial is False and server.max_in_flight == 4


async def test_the_time_budget_ends_a_run_with_its_local_fallbacks_listed(
    serve: Callable[..., FakeOpenAI], corpus_index: str
) -> None:
    serve(SchemaResponder(), delay=0.5)
    context = Context(model=MODEL, index_dir=corpus_index, budget_seconds=1.0, profile="full", route="direct")
    result = await ask(context)
    assert result["error"] is None, result["error"]
    budget = [d for d in result["degraded"] if "time budget" in d["reason"]]
    assert budget, result["degraded"]
    assert {"answer", "verify"} & {d["stage"] for d in budget}  # the late stages ran locally
    assert result["answer"] and (result["citations"] or result["answer"].startswith(NO_ANSWER))


async def test_the_lean_profile_answers_in_three_requests(
    serve: Callable[..., FakeOpenAI], corpus_index: str
) -> None:
    server = serve(SchemaResponder())
    counts = {}
    for profile in ("full", "lean"):
        server.reset()
        result = await ask(Context(model=MODEL, index_dir=corpus_index, profile=profile, route="auto"))
        assert result["error"] is None and result["citations"], result["answer"]
        counts[profile] = len(server.chat_requests)
        bodies = [r.body for r in server.chat_requests]
        if profile == "lean":
            assert all(body.get("n", 1) == 1 for body in bodies)
    assert counts["lean"] <= 3 < counts["full"], counts  # one judging batch, the answer, its verification


async def test_auto_is_lean_for_a_server_on_this_machine_and_full_for_a_hosted_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CITEWISE_PROFILE", "auto")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    assert Context(model=MODEL).lean
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert not Context(model="openai/gpt-4o-mini").lean
    assert Context(model="ollama/llama3.2").lean and not Context().lean


async def test_a_judge_that_scores_every_passage_zero_does_not_drop_an_answer_local_mode_gives(
    serve: Callable[..., FakeOpenAI], corpus_index: str
) -> None:
    local = await ask(Context(index_dir=corpus_index, route="direct"))
    assert not local["answer"].startswith(NO_ANSWER) and local["citations"]
    serve(SchemaResponder(scores={f"E{n}": 0 for n in range(1, 31)}))
    result = await ask(Context(model=MODEL, index_dir=corpus_index, profile="lean", route="direct"))
    assert result["error"] is None
    assert not result["answer"].startswith(NO_ANSWER) and result["citations"], result["answer"]
    unreliable = [d for d in result["degraded"] if "judge unreliable" in d["reason"]]
    assert unreliable and "same score" in unreliable[0]["reason"]
    cited = {c["doc_id"] for c in result["citations"]}
    assert cited & {c["doc_id"] for c in local["citations"]}  # the document local mode cites is cited
