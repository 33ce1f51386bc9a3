"""The whole query graph through the real `openai` client (langchain-openai) against FakeOpenAI on loopback.

The scripted server answers every citewise schema validly (SchemaResponder, whose verification replies cite
only the evidence lines the prompt shows); `ScoringScript` replaces the replies to scoring requests to
inject rate limits, malformed JSON, timeouts and outages.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import MemorySaver
from support.fake_openai import Fail, FakeOpenAI, Hang, Recorded, SchemaResponder

from citewise.context import Context
from citewise.core.evidence import NO_ANSWER
from citewise.graph.query import builder
from citewise.index import Index
from citewise.index.embeddings import Embedder

pytestmark = pytest.mark.integration

MARKER = re.compile(r"\[(\d+)\]")
QUESTION = "How do vaccines train the immune system?"
WRITER, JUDGE = "openai/test-model", "openai/test-judge"


def schema_of(body: Any) -> str | None:
    """The structured-output schema a request asks for (json_schema name, or forced tool)."""
    if not isinstance(body, dict):
        return None
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return (response_format.get("json_schema") or {}).get("name")
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        return (choice.get("function") or {}).get("name")
    return None


class ScoringScript:
    """The responder, except that scoring requests get `first` replies in turn (then `rest`, if given).

    `schema` names another structured-output request to script instead (SupportMap: verification).
    """

    def __init__(
        self,
        first: list[Any] = (),  # type: ignore[assignment]
        rest: Any = None,
        schema: str = "RelevanceScores",
    ) -> None:
        self.base = SchemaResponder()
        self.first = deque(first)
        self.rest = rest
        self.schema = schema
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Any:
        if schema_of(body) == self.schema:
            with self._lock:
                if self.first:
                    return self.first.popleft()
            if self.rest is not None:
                return self.rest
        return self.base(body)


def context(index_dir: str, **settings: Any) -> Context:
    """LLM mode on the index; one scoring batch per pass (max_candidates 30), so the first scoring request
    the server records is the one the script answers."""
    return Context(model=WRITER, judge_model=JUDGE, index_dir=index_dir, score_batch_size=30, **settings)


async def ask(ctx: Context, question: str = QUESTION) -> dict[str, Any]:
    graph = builder.compile(checkpointer=MemorySaver())
    return await graph.ainvoke(
        {"messages": [HumanMessage(question)]}, config={"configurable": {"thread_id": "t"}}, context=ctx
    )


def scoring(server: FakeOpenAI) -> list[Recorded]:
    return [r for r in server.chat_requests if schema_of(r.body) == "RelevanceScores"]


def assert_cited_answer(result: dict[str, Any], index_dir: str, embedder: Embedder) -> None:
    """A real answer whose every marker resolves to a citation of a chunk stored in the index."""
    assert result["answer"].strip() and not result["answer"].startswith(NO_ANSWER)
    markers = {int(m) for m in MARKER.findall(result["answer"])}
    assert markers and markers == {c["marker"] for c in result["citations"]}
    chunk_ids = [c["chunk_id"] for c in result["citations"]]
    with Index.open(index_dir, embedder=embedder, create=False) as index:
        stored = index.chunks(chunk_ids)
    assert set(stored) == set(chunk_ids)
    assert set(chunk_ids) <= {r["chunk_id"] for r in result["evidence"] if r["kept"]}


def assert_usage_matches_the_server(result: dict[str, Any], server: FakeOpenAI) -> None:
    """Every request the server saw is counted once, with the tokens it reported."""
    usage = result["usage"]
    reported = server.reported_usage()
    assert sum(u["calls"] for u in usage.values()) == len(server.chat_requests)
    assert sum(u["input_tokens"] for u in usage.values()) == reported["prompt_tokens"]
    assert sum(u["output_tokens"] for u in usage.values()) == reported["completion_tokens"]
    assert usage["score"]["calls"] == len(scoring(server))


async def test_llm_mode_end_to_end(
    serve: Callable[..., FakeOpenAI], corpus_index: str, embedder: Embedder
) -> None:
    server = serve()
    result = await ask(context(corpus_index))

    assert result["mode"] == "llm"
    for stage in ("rewrite", "score", "reflect", "answer", "verify"):
        assert result["usage"][stage]["calls"] >= 1, stage
    assert_usage_matches_the_server(result, server)
    requests = scoring(server)
    assert requests and all(r.body["n"] == 3 for r in requests)
    assert all(r.body["model"] == "test-judge" for r in requests)
    answers = [r for r in server.chat_requests if schema_of(r.body) is None]
    assert answers and {r.body["model"] for r in answers} == {"test-model"}  # the writer writes
    assert all(r.status == 200 for r in server.chat_requests)
    assert_cited_answer(result, corpus_index, embedder)
    for record in result["evidence"]:
        assert len(record["relevance_samples"]) == 3
        assert record["reflection"] is not None and record["reflection_note"]
        assert not any("used question similarity" in flag for flag in record["flags"])


async def test_a_rate_limited_scoring_request_is_retried(
    serve: Callable[..., FakeOpenAI], corpus_index: str, embedder: Embedder
) -> None:
    server = serve(ScoringScript([Fail(429, "slow down")]))
    result = await ask(context(corpus_index, max_retries=2))

    statuses = [r.status for r in scoring(server)]
    assert statuses[0] == 429 and statuses.count(429) == 1
    assert result["usage"]["score"]["calls"] == len(statuses)  # the refused call counts too
    assert result["usage"]["score"]["calls"] == statuses.count(200) + 1
    assert_usage_matches_the_server(result, server)
    assert_cited_answer(result, corpus_index, embedder)
    assert not any("used question similarity" in f for r in result["evidence"] for f in r["flags"])


async def test_malformed_scoring_json_is_asked_for_again(
    serve: Callable[..., FakeOpenAI], corpus_index: str, embedder: Embedder
) -> None:
    server = serve(ScoringScript(['{"scores": [{"id": "E1", "score": 9']))
    result = await ask(context(corpus_index))

    requests = scoring(server)
    first = requests[0].response["choices"]
    assert len(first) == 3 and all(
        c["message"]["content"].startswith('{"scores": [{"id": "E1"') for c in first
    )
    assert requests[1].body["n"] == 3  # the three malformed samples, asked for again in one request
    assert all(r.status == 200 for r in requests)
    assert result["usage"]["score"]["calls"] == len(requests)
    assert_cited_answer(result, corpus_index, embedder)
    assert not any("malformed" in f for r in result["evidence"] for f in r["flags"])
    assert all(len(r["relevance_samples"]) == 3 for r in result["evidence"])


async def test_scoring_json_still_malformed_after_retries_is_repaired(
    serve: Callable[..., FakeOpenAI], corpus_index: str, embedder: Embedder
) -> None:
    bad = 'Scores: {"scores": [{"id": "E1", "score": 90}, {"id": "E2", "score": 80}'
    server = serve(ScoringScript([bad, bad, bad]))
    result = await ask(context(corpus_index))

    requests = scoring(server)
    repairs = [r for r in requests if "corrected JSON object" in r.text]
    assert [r.body.get("n") for r in requests[:3]] == [3, 3, 3]
    assert len(repairs) == 3 and all(r.body.get("n") is None for r in repairs)  # one per sample
    assert all(bad in r.text for r in repairs)  # the repair sees the broken output, inside <output> tags
    assert result["usage"]["score"]["calls"] == len(requests)
    assert any(len(r["relevance_samples"]) == 3 for r in result["evidence"])  # the repaired samples count
    assert result["answer"].strip()


async def test_a_scoring_request_that_times_out_is_retried(
    serve: Callable[..., FakeOpenAI], corpus_index: str, embedder: Embedder
) -> None:
    server = serve(ScoringScript([Hang(10)]))
    result = await ask(context(corpus_index, timeout_seconds=1, max_retries=1))

    requests = scoring(server)
    assert requests[0].status is None  # the server never answered it: the client gave up
    assert requests[1].status == 200 and requests[1].body["n"] == 3
    assert result["usage"]["score"]["calls"] == len(requests)
    assert_cited_answer(result, corpus_index, embedder)
    assert not any("used question similarity" in f for r in result["evidence"] for f in r["flags"])


async def test_an_outage_of_the_judge_falls_back_to_question_similarity(
    serve: Callable[..., FakeOpenAI], corpus_index: str, embedder: Embedder
) -> None:
    server = serve(ScoringScript(rest=Fail(500, "judge down")))
    result = await ask(context(corpus_index, max_retries=1))

    requests = scoring(server)
    assert requests and all(r.status == 500 for r in requests)
    assert len(requests) % 2 == 0  # every scoring request was tried twice (max_retries=1)
    assert result["usage"]["score"] == {"calls": len(requests), "input_tokens": 0, "output_tokens": 0}
    # the class name is langchain-openai's (OpenAIAPIError, a subclass of openai's InternalServerError)
    flag = re.compile(r"judge failed \(\w+\): used question similarity")
    assert result["evidence"]
    assert all(any(flag.fullmatch(f) for f in r["flags"]) for r in result["evidence"])
    assert all(r["relevance_samples"] == [] and r["relevance_spread"] is None for r in result["evidence"])
    assert_cited_answer(result, corpus_index, embedder)
    # the fallback is in the output; `mode` still says models ran, and `degraded` says where they did not
    assert result["mode"] == "llm" and result["error"] is None
    scored = [entry for entry in result["degraded"] if entry["stage"] == "score"]
    assert scored and all("(HTTP 500): used question similarity" in entry["reason"] for entry in scored)
    assert {r["chunk_id"] for r in result["evidence"]} <= {c for entry in scored for c in entry["chunks"]}
    assert {entry["stage"] for entry in result["degraded"]} == {"score"}  # the other stages ran as told


async def test_a_refused_key_in_scoring_ends_the_run_instead_of_scoring_locally(
    serve: Callable[..., FakeOpenAI], corpus_index: str
) -> None:
    server = serve(ScoringScript(rest=Fail(401, "Incorrect API key provided")))
    result = await ask(context(corpus_index, max_retries=2))

    assert len(scoring(server)) == 1  # a refused key is neither retried nor worked around
    assert result["error"]["kind"] == "model provider" and result["error"]["stage"] == "evidence"
    assert result["error"]["message"].startswith("the API key was refused (401)")
    assert "Incorrect API key provided" in result["error"]["message"]
    assert result["answer"].startswith("citewise could not answer this (model provider, in evidence)")
    assert result["citations"] == [] and result["evidence"] == []
    assert not any(schema_of(r.body) == "SupportMap" for r in server.chat_requests)  # no answer was verified


async def test_a_refused_key_in_verification_is_not_word_overlap_verification(
    serve: Callable[..., FakeOpenAI], corpus_index: str
) -> None:
    server = serve(ScoringScript(rest=Fail(401, "key revoked"), schema="SupportMap"))
    result = await ask(context(corpus_index))

    assert [r.status for r in server.chat_requests if schema_of(r.body) == "SupportMap"] == [401]
    assert (
        result["error"]["stage"] == "verify" and "the API key was refused (401)" in result["error"]["message"]
    )
    assert result["citations"] == [] and result["messages"][-1].content == result["answer"]
    assert "key revoked" in result["answer"]


async def test_a_bug_under_scoring_fails_the_run_as_unexpected(
    serve: Callable[..., FakeOpenAI], corpus_index: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import citewise.models.structured

    validate = citewise.models.structured.validate_output

    def broken(schema: Any, value: Any) -> Any:
        if schema.__name__ == "RelevanceScores":
            raise KeyError("scores")  # a bug in a helper the judge's scores pass through
        return validate(schema, value)

    server = serve()
    monkeypatch.setattr(citewise.models.structured, "validate_output", broken)
    result = await ask(context(corpus_index))
    assert len(scoring(server)) == 1  # reached scoring, and a bug is not retried
    assert result["error"]["kind"] == "unexpected" and result["error"]["stage"] == "evidence"
    assert result["error"]["message"] == "KeyError: 'scores'"
    assert result["citations"] == [] and not result.get("degraded")


async def test_a_runs_usage_counts_only_its_own_requests(
    serve: Callable[..., FakeOpenAI], corpus_index: str
) -> None:
    server = serve()
    ctx = context(corpus_index)
    server.script([Fail(401, "bad key")])  # the first run's rewrite request is refused: that run fails
    failed = await ask(ctx)
    assert failed["error"]["kind"] == "model provider" and "bad key" in failed["error"]["message"]
    assert failed["error"]["message"].startswith("the API key was refused (401)")
    assert "Set a valid key for the provider" in failed["messages"][-1].content
    assert len(server.chat_requests) == 1

    result = await ask(ctx)  # the same settings, so the same cached models
    second_run = server.chat_requests[1:]
    rewrites = [r for r in second_run if schema_of(r.body) == "RewrittenQuery"]
    assert len(rewrites) == 1
    assert result["usage"]["rewrite"]["calls"] == 1
    assert sum(u["calls"] for u in result["usage"].values()) == len(second_run)


async def test_concurrent_runs_each_count_their_own_requests(
    serve: Callable[..., FakeOpenAI], corpus_index: str
) -> None:
    """The models are shared by the runs of a process; each run's usage must still be its own."""
    server = serve(SchemaResponder(delay=0.05))  # replies overlap in time
    ctx = context(corpus_index)
    graph = builder.compile()
    questions = [QUESTION, "What causes ocean tides?"]
    results = await asyncio.gather(
        *(graph.ainvoke({"messages": [HumanMessage(q)]}, context=ctx) for q in questions)
    )

    assert sum(u["calls"] for r in results for u in r["usage"].values()) == len(server.chat_requests)
    stages = {
        "rewrite": "RewrittenQuery",
        "score": "RelevanceScores",
        "reflect": "Reflections",
        "answer": None,
    }
    for question, result in zip(questions, results, strict=True):
        asked = [r for r in server.chat_requests if f"<question>\n{question}\n</question>" in r.text]
        for stage, schema in stages.items():
            mine = [r for r in asked if schema_of(r.body) == schema]
            assert mine, (question, stage)
            assert result["usage"][stage]["calls"] == len(mine), (question, stage)


def test_two_event_loops_in_one_process_each_reach_the_server(corpus_index: str, serve: Callable) -> None:
    """A terminal chat runs each turn in a new asyncio.run: the second must not reuse the first's client."""
    server = serve()
    first = asyncio.run(ask(context(corpus_index)))
    second = asyncio.run(ask(context(corpus_index)))
    assert first["mode"] == second["mode"] == "llm"
    assert first["answer"] == second["answer"] and second["citations"]
    assert len(server.chat_requests) >= 2 * len(first["usage"])


def test_ask_with_a_refusing_provider_prints_the_cause_in_two_lines_and_exits_1(
    serve: Callable[..., FakeOpenAI], corpus_index: str
) -> None:
    from typer.testing import CliRunner

    from citewise.app.cli import app

    server = serve()
    server.script([Fail(401, "bad key")])
    result = CliRunner().invoke(app, ["ask", QUESTION, "--index", corpus_index, "--model", "openai/gpt-test"])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and "bad key" in lines[0], result.stderr
    assert "the API key was refused (401)" in lines[0]
    assert "Set a valid key for the provider" in lines[1]
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
