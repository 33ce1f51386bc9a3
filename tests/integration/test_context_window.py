"""No question lost to a server's context window (#42 part 1), through the real openai client.

FakeOpenAI refuses a prompt that fills its window in llama-cpp-python's words and reports the window nowhere
else, as llama-cpp-python's server does; it counts three characters a token, fewer than the four citewise
would guess for English, as a small model's tokenizer does on scientific text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import MemorySaver
from support.fake_openai import FakeOpenAI, Recorded, SchemaResponder, prompt_tokens

from citewise.context import Context
from citewise.core.evidence import NO_ANSWER
from citewise.graph.query import builder
from citewise.models import LLM, PromptTooLong, Servers, context_overflow, is_retryable, rejects_method
from citewise.nodes.failed import explain

pytestmark = pytest.mark.integration

MODEL = "openai/small-window"
CHARS_PER_TOKEN = 3.0
REFUSED = "maximum context length"
LLAMA_CPP_PYTHON = (
    "This model's maximum context length is 8192 tokens. However, you requested 9200 tokens (8200 in the "
    "messages, 1000 in the completion). Please reduce the length of the messages or completion."
)


def refusals(server: FakeOpenAI) -> list[Recorded]:
    return [r for r in server.chat_requests if r.status == 400 and REFUSED in str(r.response)]


def answered(server: FakeOpenAI) -> list[Recorded]:
    return [r for r in server.chat_requests if r.status == 200]


def fits(record: Recorded, window: int) -> bool:
    """The request's prompt and the reply it allowed fit the window (what vLLM and OpenAI check)."""
    cap = record.body.get("max_tokens") or record.body.get("max_completion_tokens") or 0
    return prompt_tokens(record.body, CHARS_PER_TOKEN) + cap <= window


async def ask(ctx: Context, question: str) -> dict[str, Any]:
    graph = builder.compile(checkpointer=MemorySaver())
    return await graph.ainvoke(
        {"messages": [HumanMessage(question)]}, config={"configurable": {"thread_id": "t"}}, context=ctx
    )


def windowed(serve: Callable[..., FakeOpenAI], window: int, **options: Any) -> FakeOpenAI:
    return serve(SchemaResponder(), context_window=window, chars_per_token=CHARS_PER_TOKEN, **options)


def context(index_dir: str, **settings: Any) -> Context:
    return Context(model=MODEL, index_dir=index_dir, **settings)


# what a refusal says ------------------------------------------------------------------------------------


def _bad_request(message: str, body: Any = None) -> openai.BadRequestError:
    import httpx

    response = httpx.Response(400, request=httpx.Request("POST", "http://127.0.0.1/v1/chat/completions"))
    return openai.BadRequestError(message, response=response, body=body)


def test_a_refusal_for_length_is_read_in_each_servers_words() -> None:
    llama_cpp_python = _bad_request(f"Error code: 400 - {LLAMA_CPP_PYTHON}", {"message": LLAMA_CPP_PYTHON})
    assert context_overflow(llama_cpp_python) == (8192, 8200)
    llama_server = {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 9000,
        "n_ctx": 8192,
    }
    assert context_overflow(_bad_request(f"Error code: 400 - {llama_server}", llama_server)) == (8192, 9000)
    hosted = (
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130310 "
        "tokens."
    )
    assert context_overflow(_bad_request(hosted)) == (128000, 130310)
    unknown_model = _bad_request("Error code: 400 - the model 'nope' does not exist")
    assert context_overflow(unknown_model) is None
    # neither retried as it is, nor taken for a refused structured-output method, nor for a bad URL or key
    refused = _bad_request(f"Error code: 400 - {LLAMA_CPP_PYTHON} (response_format json_schema)")
    assert not is_retryable(refused) and not rejects_method(refused)
    problem = explain(PromptTooLong("answer: no room", window=8192), "answer")
    assert problem["kind"] == "model context window" and "URL" not in problem["hint"].split("(")[0]


# one request ----------------------------------------------------------------------------------------------


async def test_the_first_refusal_teaches_the_window_and_later_prompts_are_fitted_before_sending(
    serve: Callable[..., FakeOpenAI],
) -> None:
    server = windowed(serve, 1200)
    llm = LLM(MODEL, Context(model=MODEL), backoff=(0.01, 0.05), servers=Servers())
    assert llm.context_window() is None  # llama-cpp-python's server says it nowhere
    long_prompt = "Transmission spectra of rocky planets constrain their atmospheres. " * 60  # ~1,350 tokens
    with pytest.raises(PromptTooLong):
        await llm.text(long_prompt, stage="answer")
    assert len(refusals(server)) == 1  # refused once; not sent again as it was, nor retried blindly
    assert llm.context_window() == 1200
    counted = prompt_tokens(server.chat_requests[0].body, CHARS_PER_TOKEN)
    assert llm.facts.chars_per_token == pytest.approx(len(long_prompt) / counted, rel=0.05)
    with pytest.raises(PromptTooLong):  # known too long now: not sent at all
        await llm.text(long_prompt, stage="answer")
    assert len(server.chat_requests) == 1
    # a prompt that fits with a shorter reply is sent with its reply cut to the room left
    medium = "Transmission spectra of rocky planets constrain their atmospheres. " * 30  # ~680 tokens
    assert await llm.text(medium, stage="answer")
    sent = server.chat_requests[-1]
    assert sent.status == 200 and sent.body["max_tokens"] < 1000 and fits(sent, 1200)


async def test_a_server_that_counts_the_reply_in_its_window_gets_a_shorter_cap_after_its_refusal(
    serve: Callable[..., FakeOpenAI],
) -> None:
    server = windowed(serve, 1500, window_counts_reply=True)  # vLLM's and OpenAI's check
    llm = LLM(MODEL, Context(model=MODEL), backoff=(0.01, 0.05), servers=Servers())
    medium = "Transmission spectra of rocky planets constrain their atmospheres. " * 30
    assert await llm.text(medium, stage="answer")  # refused once, then sent again with a cap that fits
    assert [r.status for r in server.chat_requests] == [400, 200]
    assert fits(server.chat_requests[-1], 1500)


# whole runs -----------------------------------------------------------------------------------------------


async def test_an_answer_over_a_small_window_is_packed_to_fit_and_cited(
    serve: Callable[..., FakeOpenAI], sample_index: Path
) -> None:
    server = windowed(serve, 1100)
    ctx = context(str(sample_index))
    result = await ask(ctx, "What does the transmission spectrum of GJ 486b reveal about its atmosphere?")
    assert not result.get("error"), result.get("error")
    assert result["answer"].strip() and not result["answer"].startswith(NO_ANSWER)
    assert result["citations"] and re.search(r"\[\d+\]", result["answer"])
    # the requests in flight when the first refusal taught the window may be refused too; none after them
    assert 1 <= len(refusals(server)) <= ctx.max_concurrency
    assert all(prompt_tokens(r.body, CHARS_PER_TOKEN) < 1100 for r in answered(server))
    written = [r for r in answered(server) if not r.body.get("response_format")]
    assert written and all(fits(r, 1100) for r in written)  # the answer's requests: evidence and reply fit


async def test_a_report_over_a_small_window_verifies_in_batches_and_loses_no_section(
    serve: Callable[..., FakeOpenAI], sample_index: Path
) -> None:
    # verification of every section at once was 8,200 prompt tokens with the README's recipe (8,192)
    server = windowed(serve, 1100)
    ctx = context(str(sample_index), route="report")
    result = await ask(ctx, "Compare how GJ 486b was observed and what its transmission spectrum revealed")
    assert not result.get("error"), result.get("error")
    assert result["route"] == "report" and result["citations"]
    assert result["answer"].count("## ") >= 2
    assert 1 <= len(refusals(server)) <= ctx.max_concurrency
    assert all(prompt_tokens(r.body, CHARS_PER_TOKEN) < 1100 for r in answered(server))
    verify = [r for r in answered(server) if "SupportMap" in str(r.body.get("response_format", ""))]
    assert len(verify) >= 2  # batched to the window: one request would not have fitted
    reasons = [d["reason"] for d in result.get("degraded", [])]
    assert all("URL" not in reason and "key" not in reason for reason in reasons)


async def test_a_window_too_small_for_any_prompt_answers_locally_and_says_why(
    serve: Callable[..., FakeOpenAI], corpus_index: str
) -> None:
    windowed(serve, 600)
    result = await ask(context(corpus_index), "How do vaccines train the immune system?")
    assert not result.get("error"), result.get("error")
    assert result["answer"].strip() and result["citations"]  # local mode's cited answer, not a failure
    reasons = " ".join(d["reason"] for d in result.get("degraded", []))
    assert "context window" in reasons
