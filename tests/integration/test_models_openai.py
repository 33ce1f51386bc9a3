"""citewise.models against a scripted OpenAI-compatible server on loopback, through the real openai / cohere
clients (langchain-openai, cohere.ClientV2): samples, retries, timeouts, fallbacks, repair, limits, usage."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from cohere.errors import BadRequestError as CohereBadRequest
from cohere.errors import ServiceUnavailableError as CohereServiceUnavailable
from langchain_core.messages import AIMessageChunk, SystemMessage
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, Field
from support.fake_openai import Choices, Fail, FakeOpenAI, Hang, SchemaResponder, ToolCall
from typing_extensions import TypedDict

from citewise.context import Context
from citewise.models import LLM, PromptTooLong, Servers, models_for, reranker
from citewise.prompts import answer, score
from citewise.prompts.common import DATA_RULE, quote, render
from citewise.state.schemas import CriticVerdicts, Reflections, RelevanceScores, RewrittenQuery, SupportMap

pytestmark = pytest.mark.integration

MODEL = "openai/fake-model"
FAST = (0.01, 0.05)  # backoff (first, longest) in seconds: retries without slowing the suite

EVIDENCE = {
    "E1": "Vaccines train the immune system to recognise a pathogen without causing the disease.",
    "E2": "Sourdough bread is leavened by a starter of wild yeast and lactic acid bacteria.",
    "E3": "After vaccination, B cells produce antibodies and memory cells remain for years.",
}
QUESTION = "How do vaccines train the immune system?"


def evidence_block() -> str:
    return "\n".join(quote("evidence", text, id=label, title="doc") for label, text in EVIDENCE.items())


SCORE_MESSAGES = [
    SystemMessage(
        render(
            score.PROMPT,
            labels=", ".join(EVIDENCE),
            data_rule=DATA_RULE,
            question=quote("question", QUESTION),
            evidence=evidence_block(),
        )
    )
]
ANSWER_MESSAGES = [
    SystemMessage(
        render(
            answer.PROMPT,
            data_rule=DATA_RULE,
            question=quote("question", QUESTION),
            evidence=evidence_block(),
        )
    )
]
VALID_QUERY = {"query": "vaccines immune system training", "sub_queries": []}


@pytest.fixture(autouse=True)
def _no_stray_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("COHERE_BASE_URL", "CITEWISE_LLM_CACHE", "CITEWISE_MODEL", "CITEWISE_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server(serve: Callable[..., FakeOpenAI]) -> FakeOpenAI:  # serve: tests/integration/conftest.py
    return serve()


def make_llm(servers: Servers | None = None, **settings: Any) -> LLM:
    return LLM(MODEL, Context(model=MODEL, **settings), backoff=FAST, servers=servers)


def score_sets(samples: list[RelevanceScores | None]) -> list[dict[str, int]]:
    return [{s.id: s.score for s in sample.scores} for sample in samples if sample is not None]


# n samples ----------------------------------------------------------------------------------------------


async def test_n_samples_come_from_one_request_with_n(serve: Callable[..., FakeOpenAI]) -> None:
    server = serve(SchemaResponder(scores={"E1": 80, "E2": 10, "E3": 60}, jitter=4))
    llm = make_llm()
    samples = await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score", n=3)

    assert len(server.chat_requests) == 1
    body = server.chat_requests[0].body
    assert body["n"] == 3
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "RelevanceScores"
    assert body["response_format"]["json_schema"]["strict"] is True
    # every choice is read, not the first one three times
    assert score_sets(samples) == [
        {"E1": 80, "E2": 10, "E3": 60},
        {"E1": 84, "E2": 14, "E3": 64},
        {"E1": 76, "E2": 6, "E3": 56},
    ]
    assert llm.usage()["score"]["calls"] == 1


async def test_a_server_that_ignores_n_gets_separate_requests(serve: Callable[..., FakeOpenAI]) -> None:
    server = serve(ignore_n=True)
    llm = make_llm()
    samples = await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score", n=3)
    assert len(samples) == 3 and all(samples)
    assert [r.body.get("n") for r in server.chat_requests] == [3, None, None]
    await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score", n=2)
    assert [r.body.get("n") for r in server.chat_requests[3:]] == [None, None]


# retries ------------------------------------------------------------------------------------------------


async def test_rate_limit_is_retried_and_both_calls_are_counted(server: FakeOpenAI) -> None:
    server.script([Fail(429, "slow down")])
    llm = make_llm()
    samples = await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score", n=3)

    assert len(samples) == 3 and all(samples)
    assert [r.status for r in server.chat_requests] == [429, 200]
    reported = server.reported_usage()
    assert llm.usage() == {
        "score": {
            "calls": 2,
            "input_tokens": reported["prompt_tokens"],
            "output_tokens": reported["completion_tokens"],
        }
    }


async def test_server_error_is_retried(server: FakeOpenAI) -> None:
    server.script([Fail(500), Fail(503)])
    llm = make_llm()
    text = await llm.text(ANSWER_MESSAGES, stage="answer")
    assert "[E1]" in text
    assert [r.status for r in server.chat_requests] == [500, 503, 200]


@pytest.mark.parametrize(
    ("status", "error"),
    [(400, openai.BadRequestError), (401, openai.AuthenticationError), (404, openai.NotFoundError)],
)
async def test_client_errors_are_not_retried(server: FakeOpenAI, status: int, error: type[Exception]) -> None:
    server.script([Fail(status)])
    llm = make_llm()
    with pytest.raises(error):
        await llm.text(ANSWER_MESSAGES, stage="answer")
    assert len(server.chat_requests) == 1
    assert llm.usage()["answer"]["calls"] == 1


async def test_bad_request_in_the_last_structured_method_propagates(server: FakeOpenAI) -> None:
    server.script([Fail(400, "invalid model")])
    llm = make_llm(structured_output="json_mode")
    with pytest.raises(openai.BadRequestError):
        await llm.structured(RewrittenQuery, SCORE_MESSAGES, stage="rewrite")
    assert len(server.chat_requests) == 1


async def test_retries_stop_after_max_retries_and_the_error_propagates(server: FakeOpenAI) -> None:
    server.script([Fail(503)] * 4)
    llm = make_llm(max_retries=2)
    with pytest.raises(openai.InternalServerError):
        await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score")
    assert len(server.chat_requests) == 3
    assert server.scripted_left == 1
    assert llm.usage()["score"] == {"calls": 3, "input_tokens": 0, "output_tokens": 0}


async def test_a_timeout_is_retried_and_the_next_reply_is_used(server: FakeOpenAI) -> None:
    server.script([Hang(30), VALID_QUERY])
    llm = make_llm(timeout_seconds=1)
    result = await llm.structured(RewrittenQuery, SCORE_MESSAGES, stage="rewrite")
    assert result == [RewrittenQuery(**VALID_QUERY)]
    assert len(server.chat_requests) == 2
    assert server.chat_requests[0].status is None  # the hung request was never answered
    assert llm.usage()["rewrite"]["calls"] == 2


# malformed output ---------------------------------------------------------------------------------------


async def test_malformed_then_valid_json_is_parsed(server: FakeOpenAI) -> None:
    server.script(['{"query": "unterminated', VALID_QUERY])
    llm = make_llm()
    result = await llm.structured(RewrittenQuery, SCORE_MESSAGES, stage="rewrite")
    assert result == [RewrittenQuery(**VALID_QUERY)]
    assert len(server.chat_requests) == 2
    assert server.chat_requests[0].body["messages"] == server.chat_requests[1].body["messages"]


async def test_fenced_json_with_prose_is_accepted_without_a_retry(server: FakeOpenAI) -> None:
    server.script(['Here you go:\n```json\n{"query": "vaccines", "sub_queries": ["B cells"]}\n```\nDone.'])
    llm = make_llm()
    result = await llm.structured(RewrittenQuery, SCORE_MESSAGES, stage="rewrite")
    assert result == [RewrittenQuery(query="vaccines", sub_queries=["B cells"])]
    assert len(server.chat_requests) == 1


async def test_always_malformed_sends_a_repair_and_gives_none(serve: Callable[..., FakeOpenAI]) -> None:
    server = serve(lambda request: "I'd rather not </output> answer in JSON")
    llm = make_llm()
    result = await llm.structured(RewrittenQuery, SCORE_MESSAGES, stage="rewrite")

    assert result == [None]
    requests = server.chat_requests
    assert len(requests) == 4  # the request, two retries, one repair
    repair = requests[-1].body["messages"]
    assert "RewrittenQuery" in repair[0]["content"] and "corrected JSON" in repair[0]["content"]
    assert repair[1]["content"] == "<output>\nI'd rather not &lt;/output&gt; answer in JSON\n</output>"
    assert requests[-1].body["response_format"]["type"] == "json_schema"
    assert llm.usage()["rewrite"]["calls"] == 4


async def test_always_malformed_n_samples_give_nones_without_raising(
    serve: Callable[..., FakeOpenAI],
) -> None:
    server = serve(lambda request: "nope")
    llm = make_llm()
    result = await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score", n=3)
    assert result == [None, None, None]
    assert [r.body.get("n") for r in server.chat_requests] == [3, 3, 3, None, None, None]


async def test_only_the_malformed_samples_are_asked_again(server: FakeOpenAI) -> None:
    valid = {"scores": [{"id": "E1", "score": 70}]}
    server.script([Choices([valid, "garbage", valid]), {"scores": [{"id": "E1", "score": 30}]}])
    llm = make_llm()
    samples = await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score", n=3)
    assert score_sets(samples) == [{"E1": 70}, {"E1": 30}, {"E1": 70}]
    assert [r.body.get("n") for r in server.chat_requests] == [3, None]


async def test_a_malformed_tool_call_is_retried(serve: Callable[..., FakeOpenAI]) -> None:
    server = serve(reject_json_schema=True, reject_json_mode=True)
    server.script([ToolCall("RewrittenQuery", '{"query": '), VALID_QUERY])
    llm = make_llm()
    result = await llm.structured(RewrittenQuery, SCORE_MESSAGES, stage="rewrite")
    assert result == [RewrittenQuery(**VALID_QUERY)]
    assert [bool(r.body.get("tools")) for r in server.chat_requests] == [False, False, True, True]
    assert [r.status for r in server.chat_requests] == [400, 400, 200, 200]


# structured-output fallback -----------------------------------------------------------------------------


async def test_server_without_json_schema_falls_back_to_function_calling(
    serve: Callable[..., FakeOpenAI],
) -> None:
    server = serve(reject_json_schema=True, reject_json_mode=True)
    llm = make_llm()
    first = await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score", n=2)
    assert len(first) == 2 and all(first)
    assert llm.method == "function_calling"
    await llm.structured(RewrittenQuery, SCORE_MESSAGES, stage="rewrite")

    requests = server.chat_requests
    assert [r.status for r in requests] == [400, 400, 200, 200]
    assert requests[0].body["response_format"]["type"] == "json_schema"
    assert requests[1].body["response_format"]["type"] == "json_object"
    requests = requests[1:]
    for request in requests[1:]:
        assert "response_format" not in request.body
        assert request.body["tool_choice"]["type"] == "function"
        assert request.body["tools"][0]["function"]["name"] == request.body["tool_choice"]["function"]["name"]
    assert requests[1].body["n"] == 2


async def test_server_without_json_schema_takes_llama_cpps_json_object_with_a_schema(
    serve: Callable[..., FakeOpenAI],
) -> None:
    server = serve(reject_json_schema=True, reject_status=500)  # llama-cpp-python's server
    llm = make_llm()
    samples = await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score")
    assert set(score_sets(samples)[0]) == {"E1", "E2", "E3"}
    assert llm.method == "json_object_schema"
    requests = server.chat_requests
    assert [r.status for r in requests] == [500, 200]
    assert requests[1].body["response_format"]["type"] == "json_object"
    assert requests[1].body["response_format"]["schema"]["properties"].keys() == {"scores"}
    assert "schema named RelevanceScores" in requests[1].body["messages"][0]["content"]


async def test_server_without_json_schema_or_tools_falls_back_to_json_mode(
    serve: Callable[..., FakeOpenAI],
) -> None:
    server = serve(reject_json_schema=True, reject_tools=True, reject_json_object_schema=True)
    llm = make_llm()
    samples = await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score")
    assert set(score_sets(samples)[0]) == {"E1", "E2", "E3"}
    assert llm.method == "json_mode"
    requests = server.chat_requests
    assert [r.status for r in requests] == [400, 400, 400, 200]
    assert requests[3].body["response_format"] == {"type": "json_object"}
    system = requests[3].body["messages"][0]["content"]
    assert "schema named RelevanceScores" in system and '"scores"' in system


@pytest.mark.parametrize("status", [400, 422, 500])
async def test_a_server_refusing_every_format_is_asked_in_plain_text_without_retries(
    serve: Callable[..., FakeOpenAI], status: int
) -> None:
    server = serve(reject_json_schema=True, reject_tools=True, reject_json_mode=True, reject_status=status)
    servers = Servers()  # what the way in's resources keep across runs
    llm = make_llm(servers)
    samples = await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score")
    assert set(score_sets(samples)[0]) == {"E1", "E2", "E3"}
    assert [r.status for r in server.chat_requests] == [status, status, status, status, 200]  # none retried
    assert (
        "response_format" not in server.chat_requests[-1].body
        and "tools" not in server.chat_requests[-1].body
    )
    assert llm.method == "text"
    again = make_llm(servers)  # another run with the same resources starts where this one ended
    await again.structured(RelevanceScores, SCORE_MESSAGES, stage="score")
    assert len(server.chat_requests) == 6 and server.chat_requests[-1].status == 200


async def test_a_400_about_response_format_downgrades_only_that_model_spec(server: FakeOpenAI) -> None:
    server.script([Fail(400, "'response_format' of type 'json_schema' is not supported by this model")])
    judge = make_llm()
    writer = LLM("openai/other-model", judge.context, shared=judge.shared, backoff=FAST)
    samples = await judge.structured(RelevanceScores, SCORE_MESSAGES, stage="score")
    assert set(score_sets(samples)[0]) == {"E1", "E2", "E3"}
    await writer.structured(RewrittenQuery, SCORE_MESSAGES, stage="rewrite")

    assert (judge.method, writer.method) == ("json_object_schema", "json_schema")
    requests = server.chat_requests
    assert [r.status for r in requests] == [400, 200, 200]
    assert requests[1].body["response_format"]["type"] == "json_object"
    assert requests[1].body["model"] == "fake-model"
    assert requests[2].body["model"] == "other-model"
    assert requests[2].body["response_format"]["type"] == "json_schema"  # the other spec keeps its method


async def test_a_400_about_the_prompt_length_is_learnt_and_downgrades_nothing(server: FakeOpenAI) -> None:
    too_long = (
        "This model's maximum context length is 8192 tokens. However, you requested 9100 tokens "
        "(8100 in the messages, 1000 in the functions). Please reduce the length of the messages."
    )
    server.script([Fail(400, too_long)])
    llm = make_llm()
    with pytest.raises(PromptTooLong, match="context window of 8192 tokens"):
        await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score")
    assert llm.method == "json_schema" and llm.context_window() == 8192
    with pytest.raises(PromptTooLong):  # known not to fit (8,100 tokens counted): not sent again
        await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score")
    requests = server.chat_requests
    assert [r.status for r in requests] == [400]  # not retried, not re-sent by another method
    assert requests[0].body["response_format"]["type"] == "json_schema"


# concurrency and usage ----------------------------------------------------------------------------------


async def test_requests_in_flight_never_exceed_max_concurrency(serve: Callable[..., FakeOpenAI]) -> None:
    server = serve(delay=0.2)
    judge, writer = models_for(Context(model=MODEL, max_concurrency=2))
    assert judge is not None and writer is not None
    for llm in (judge, writer):
        llm.backoff = FAST
    await asyncio.gather(
        *(judge.structured(RelevanceScores, SCORE_MESSAGES, stage="score", n=3) for _ in range(3)),
        *(writer.text(ANSWER_MESSAGES, stage="answer") for _ in range(3)),
    )
    assert len(server.chat_requests) == 6
    assert server.max_in_flight == 2


async def test_usage_tokens_equal_what_the_server_reported(server: FakeOpenAI) -> None:
    llm = make_llm()
    await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score", n=3)
    await llm.text(ANSWER_MESSAGES, stage="answer")
    await llm.text(ANSWER_MESSAGES, stage="answer")
    usage = llm.take_usage()
    reported = server.reported_usage()
    assert usage["score"]["calls"] == 1 and usage["answer"]["calls"] == 2
    assert sum(u["input_tokens"] for u in usage.values()) == reported["prompt_tokens"] > 0
    assert sum(u["output_tokens"] for u in usage.values()) == reported["completion_tokens"] > 0
    assert llm.take_usage() == {}
    assert llm.usage()["answer"]["calls"] == 2


async def test_the_sqlite_cache_answers_repeated_calls(server: FakeOpenAI, tmp_path: Path) -> None:
    llm = make_llm(llm_cache=str(tmp_path / "llm.db"))
    first = await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score", n=3)
    second = await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score", n=3)
    assert second == first and len(second) == 3
    assert len(server.chat_requests) == 1
    assert llm.usage()["score"]["calls"] == 1  # a cache hit sends no request


# streaming ----------------------------------------------------------------------------------------------


class Answered(TypedDict):
    answer: str


async def test_only_the_answer_streams_in_langgraph(server: FakeOpenAI) -> None:
    llm = make_llm()

    async def write(state: Answered) -> dict[str, str]:
        await llm.structured(RelevanceScores, SCORE_MESSAGES, stage="score", n=2)
        await llm.text(SCORE_MESSAGES, stage="condense")
        return {"answer": await llm.text(ANSWER_MESSAGES, stage="answer", stream=True)}

    builder = StateGraph(Answered)
    builder.add_node("write", write)
    builder.add_edge(START, "write")
    builder.add_edge("write", END)
    graph = builder.compile()

    chunks: list[Any] = []
    final: dict[str, Any] = {}
    async for mode, data in graph.astream({"answer": ""}, stream_mode=["messages", "values"]):
        if mode == "messages":
            chunks.append(data[0])
        else:
            final = data

    assert len(chunks) > 2 and all(isinstance(c, AIMessageChunk) for c in chunks)
    assert "".join(str(c.content) for c in chunks) == final["answer"]
    assert final["answer"].startswith("Vaccines train the immune system")
    assert len(server.chat_requests) == 3
    streamed = [r.body for r in server.chat_requests if r.body.get("stream")]
    assert len(streamed) == 1 and streamed[0]["messages"][0]["content"].startswith("Answer the question")
    assert streamed[0]["stream_options"] == {"include_usage": True}
    assert llm.usage()["answer"]["output_tokens"] > 0  # usage of a streamed answer is counted too


# rerank -------------------------------------------------------------------------------------------------

TEXTS = [
    "Sourdough bread baking in a Dutch oven",
    "Vaccines train the immune system",
    "The immune system fights infection",
    "Vaccines are stored cold",
]


@pytest.fixture
def cohere_env(server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    monkeypatch.setenv("COHERE_API_KEY", "co-test")
    monkeypatch.setenv("COHERE_BASE_URL", server.root_url)
    return server


async def test_rerank_orders_by_relevance_through_cohere_client_v2(cohere_env: FakeOpenAI) -> None:
    found = reranker(Context(rerank_model="rerank-v3.5"))
    assert found is not None
    ranked = await found.rerank("how do vaccines train the immune system", TEXTS, top_n=3)
    assert [index for index, _ in ranked] == [1, 2, 3]
    assert [relevance for _, relevance in ranked] == sorted((r for _, r in ranked), reverse=True)
    (request,) = cohere_env.rerank_requests
    assert request.path == "/v2/rerank"
    assert request.body["model"] == "rerank-v3.5" and request.body["top_n"] == 3
    assert request.body["documents"] == TEXTS
    assert request.headers.get("Authorization") == "Bearer co-test"
    assert found.usage() == {"rerank": {"calls": 1, "input_tokens": 0, "output_tokens": 0}}


async def test_rerank_retries_a_rate_limit_itself_not_in_the_cohere_client(cohere_env: FakeOpenAI) -> None:
    cohere_env.script([Fail(429)], endpoint="rerank")
    found = reranker(Context())
    assert found is not None
    found.backoff = FAST
    ranked = await found.rerank("vaccines", TEXTS, top_n=2)
    assert [index for index, _ in ranked] == [1, 3]
    assert [r.status for r in cohere_env.rerank_requests] == [429, 200]
    assert found.usage()["rerank"]["calls"] == 2  # both tries went through our retry loop


async def test_rerank_gives_up_after_max_retries(cohere_env: FakeOpenAI) -> None:
    cohere_env.script([Fail(503)] * 6, endpoint="rerank")
    found = reranker(Context(max_retries=1))
    assert found is not None
    found.backoff = FAST
    with pytest.raises(CohereServiceUnavailable):
        await found.rerank("vaccines", TEXTS, top_n=2)
    assert len(cohere_env.rerank_requests) == 2  # the cohere client's own retries are off


async def test_rerank_bad_request_is_not_retried(cohere_env: FakeOpenAI) -> None:
    cohere_env.script([Fail(400, "bad model")], endpoint="rerank")
    found = reranker(Context())
    assert found is not None
    with pytest.raises(CohereBadRequest):
        await found.rerank("vaccines", TEXTS, top_n=2)
    assert len(cohere_env.rerank_requests) == 1


# the fake server itself ---------------------------------------------------------------------------------


class Summary(BaseModel):
    id: str
    summary: str
    score: int = Field(ge=0, le=100)


class Summaries(BaseModel):
    """A schema the SchemaResponder does not know by name: generated from its JSON schema."""

    items: list[Summary]


VERIFY_MESSAGES = [
    SystemMessage(
        "Return one item for every sentence (1 to 3).\n<draft>\n1. A [E1].\n2. B [E3].\n3. C.\n</draft>\n"
        '<evidence id="E1.1">Vaccines train.</evidence>\n<evidence id="E3.1">B cells.</evidence>'
    )
]


@pytest.mark.parametrize("method", ["json_schema", "function_calling", "json_mode"])
@pytest.mark.parametrize("schema", [RelevanceScores, Reflections, CriticVerdicts, RewrittenQuery, Summaries])
async def test_schema_responder_answers_every_schema_by_every_method(
    serve: Callable[..., FakeOpenAI], method: str, schema: type[BaseModel]
) -> None:
    server = serve(
        reject_json_schema=method != "json_schema",
        reject_tools=method == "json_mode",
    )
    llm = make_llm(structured_output=method)
    (sample,) = await llm.structured(schema, SCORE_MESSAGES, stage="test")
    assert sample is not None
    assert server.chat_requests[-1].status == 200 and len(server.chat_requests) == 1
    labels = [item.id for item in getattr(sample, "scores", None) or getattr(sample, "items", [])]
    if schema is not RewrittenQuery:
        assert labels == ["E1", "E2", "E3"]
    else:
        assert sample.query == QUESTION


async def test_schema_responder_maps_every_answer_sentence(server: FakeOpenAI) -> None:
    llm = make_llm()
    (support,) = await llm.structured(SupportMap, VERIFY_MESSAGES, stage="verify")
    assert support is not None
    assert [s.sentence for s in support.sentences] == [1, 2, 3]
    assert all(s.supported and s.sources and s.sources[0] in ("E1.1", "E3.1") for s in support.sentences)


async def test_fake_server_lists_its_model_and_streams_to_the_plain_openai_client(server: FakeOpenAI) -> None:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
    models = await client.models.list()
    assert [m.id for m in models.data] == ["fake-model"]
    stream = await client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "hi"}], stream=True, n=2, max_tokens=50
    )
    text = {0: "", 1: ""}
    async for chunk in stream:
        for choice in chunk.choices:
            text[choice.index] += choice.delta.content or ""
    assert text == {0: "This is a test answer.", 1: "This is a test answer."}  # no evidence, no question
    await client.close()
