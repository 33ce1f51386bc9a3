"""Scripted chat models for unit tests: langchain-core's fake chat model, taught citewise's LLM protocol.

`citewise.models.LLM` asks for structured output by passing `response_format` (json_schema / json_object) or
forced `tools` to `agenerate`, and for several samples with `n`; it reads every generation of the result as
one choice and counts the first generation's `usage_metadata` once per request. `ScriptedChatModel` replays
scripted replies (or asks a responder function) and answers in that shape, recording every request.

Replies:
- `str`: the message content (a JSON string for structured output, or anything malformed);
- `dict` / `list`: JSON content, or a tool call when the request forces a tool;
- `Samples([...])`: one reply per choice of an `n` request (any other reply is repeated for every choice);
- an exception instance: raised by the request (a provider error);
- an `AIMessage`: returned as is.
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field, PrivateAttr

from citewise.context import Context
from citewise.models import LLM

INPUT_TOKENS = 10
"""Prompt tokens every scripted request reports."""
OUTPUT_TOKENS = 2
"""Completion tokens every scripted request reports."""

_EVIDENCE = re.compile(r'<evidence\b[^>]*\bid="([^"]*)"[^>]*>\n(.*?)\n</evidence>', re.DOTALL)
_QUESTION = re.compile(r"<question>\n(.*?)\n</question>", re.DOTALL)
_DRAFT = re.compile(r"<draft>\n(.*?)\n</draft>", re.DOTALL)
_NUMBERED = re.compile(r"^(\d+)\. (.*)$", re.MULTILINE)
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Samples:
    """One reply per choice of an `n` > 1 request."""

    replies: list[Any]


@dataclass
class Request:
    """One request the scripted model received."""

    messages: list[BaseMessage]
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def prompt(self) -> str:
        """Every message's text, joined by blank lines."""
        return "\n\n".join(str(m.text) for m in self.messages)

    @property
    def n(self) -> int:
        """Choices asked for."""
        return int(self.kwargs.get("n") or 1)

    @property
    def schema(self) -> str | None:
        """The structured-output schema asked for (json_schema name or forced tool), None for free text."""
        response_format = self.kwargs.get("response_format") or {}
        if response_format.get("type") == "json_schema":
            return response_format["json_schema"]["name"]
        choice = self.kwargs.get("tool_choice")
        if isinstance(choice, dict):
            return choice["function"]["name"]
        if response_format.get("type") == "json_object":
            found = re.search(r"schema named (\w+)", self.prompt)
            return found.group(1) if found else "object"
        return None

    @property
    def forced_tool(self) -> str | None:
        """The function name a function-calling request forces."""
        choice = self.kwargs.get("tool_choice")
        return choice["function"]["name"] if isinstance(choice, dict) else None

    @property
    def evidence(self) -> dict[str, str]:
        """Evidence label -> unescaped text, as delimited in the prompt (escaped text cannot close a tag)."""
        return {label: html.unescape(body) for label, body in _EVIDENCE.findall(self.prompt)}

    @property
    def question(self) -> str:
        """The question inside <question> tags ("" when absent)."""
        found = _QUESTION.search(self.prompt)
        return html.unescape(found.group(1)) if found else ""

    @property
    def sentences(self) -> dict[int, str]:
        """Numbered answer sentences of a verification prompt."""
        found = _DRAFT.search(self.prompt)
        body = html.unescape(found.group(1)) if found else ""
        return {int(n): text for n, text in _NUMBERED.findall(body)}


Reply = Any
Responder = Callable[[Request], Reply]


class ScriptedChatModel(FakeMessagesListChatModel):
    """A fake chat model that replays `script`, then asks `responder`; records every request in `calls`."""

    responses: list[BaseMessage] = Field(default_factory=list)
    """Unused (the parent's cycling list); `script` and `responder` decide the replies."""
    script: list[Any] = Field(default_factory=list)
    """Replies for the next requests, consumed in order."""
    responder: Callable[[Request], Any] | None = None
    """Called with the request when the script is empty."""
    calls: list[Request] = Field(default_factory=list)
    """Every request, in arrival order."""
    input_tokens: int = INPUT_TOKENS
    output_tokens: int = OUTPUT_TOKENS
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "citewise-scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        request = Request(list(messages), dict(kwargs))
        with self._lock:
            self.calls.append(request)
            reply = self.script.pop(0) if self.script else None
        if reply is None:
            if self.responder is None:
                raise AssertionError(
                    f"unexpected request (script empty, no responder): {request.prompt[:200]}"
                )
            reply = self.responder(request)
        if isinstance(reply, BaseException):
            raise reply
        replies = reply.replies if isinstance(reply, Samples) else [reply] * request.n
        usage = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.input_tokens + self.output_tokens,
        }
        generations = []
        for one in replies:
            message = _message(one, request)
            message.usage_metadata = dict(usage)  # type: ignore[assignment]
            generations.append(ChatGeneration(message=message))
        return ChatResult(generations=generations)

    def requests_for(self, schema: str | None) -> list[Request]:
        """The requests that asked for `schema` (None: free-text requests)."""
        return [call for call in self.calls if call.schema == schema]


def _message(reply: Any, request: Request) -> AIMessage:
    if isinstance(reply, AIMessage):
        return reply.model_copy(deep=True)
    if isinstance(reply, dict | list):
        tool = request.forced_tool
        if tool and isinstance(reply, dict):
            return AIMessage("", tool_calls=[{"name": tool, "args": reply, "id": "call_scripted"}])
        return AIMessage(json.dumps(reply))
    return AIMessage(str(reply))


# responders for citewise's prompts --------------------------------------------------------------------


def words(text: str) -> set[str]:
    """Lower-case words of three letters or more."""
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


def overlap(claim: str, source: str) -> float:
    """Share of the claim's words found in the source (0..1)."""
    claim_words = words(claim)
    return len(claim_words & words(source)) / len(claim_words) if claim_words else 0.0


Scorer = Callable[[str, str, Request], int]
"""(label, evidence text, request) -> a 0-100 score."""


class Judge:
    """A responder for the judging model: valid replies for every citewise schema, scores from `scorer`.

    Relevance, reflection and critic scores all come from `scorer` (default: word overlap of question and
    evidence, x100). Verification marks a sentence supported by the evidence lines sharing at least
    `support` of its words. Free-text requests (condense) get `condensed` or the question back.
    """

    def __init__(
        self,
        scorer: Scorer | Mapping[str, int] | None = None,
        *,
        support: float = 0.5,
        condensed: str | None = None,
        query: str | None = None,
        follow_ups: list[str] | None = None,
    ) -> None:
        if isinstance(scorer, Mapping):
            fixed = dict(scorer)
            self.scorer: Scorer = lambda label, text, request: fixed[label]
        else:
            self.scorer = scorer or (
                lambda label, text, request: round(100 * overlap(request.question, text))
            )
        self.support = support
        self.condensed = condensed
        self.query = query
        self.follow_ups = follow_ups or []

    def __call__(self, request: Request) -> Reply:
        schema = request.schema
        evidence = request.evidence
        if schema == "RelevanceScores":
            return {"scores": [{"id": k, "score": self.scorer(k, v, request)} for k, v in evidence.items()]}
        if schema == "Reflections":
            return {
                "items": [
                    {"id": k, "score": self.scorer(k, v, request), "justification": f"reflected {k}"}
                    for k, v in evidence.items()
                ]
            }
        if schema == "CriticVerdicts":
            return {
                "items": [
                    {"id": k, "score": self.scorer(k, v, request), "reason": f"critic on {k}"}
                    for k, v in evidence.items()
                ]
            }
        if schema == "RewrittenQuery":
            return {"query": self.query or request.question, "sub_queries": []}
        if schema == "FollowUpQueries":  # no second hop unless scripted
            return {"needed": bool(self.follow_ups), "queries": self.follow_ups}
        if schema == "Summaries":
            return {"items": [{"id": k, "summary": v} for k, v in evidence.items()]}
        if schema == "SupportMap":
            return {"sentences": [self._support(n, s, evidence) for n, s in request.sentences.items()]}
        if schema is None:
            return self.condensed or request.question or "ok"
        raise AssertionError(f"the scripted judge does not know schema {schema!r}")

    def _support(self, number: int, sentence: str, lines: dict[str, str]) -> dict[str, Any]:
        sources = [label for label, text in lines.items() if overlap(sentence, text) >= self.support]
        return {"sentence": number, "sources": sources, "supported": bool(sources)}


def scripted_llm(model: ScriptedChatModel, context: Context, spec: str = "openai/test-model") -> LLM:
    """The LLM wrapper around a scripted model, retrying without waiting."""
    return LLM(spec, context, model=model, backoff=(0.0, 0.0))


def server_error() -> openai.InternalServerError:
    """What the OpenAI client raises for an HTTP 500 (a provider outage)."""
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    return openai.InternalServerError(
        "scripted outage", response=httpx.Response(500, request=request), body=None
    )


def auth_error() -> openai.AuthenticationError:
    """What the OpenAI client raises for an HTTP 401 (the API key was refused)."""
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    return openai.AuthenticationError(
        "Incorrect API key provided", response=httpx.Response(401, request=request), body=None
    )


def scoring_state(*records: dict[str, Any], question: str = "How do vaccines work?") -> dict[str, Any]:
    """The evidence subgraph's state as the scoring steps read it: the question and its candidates."""
    return {"question": question, "candidates": {r["chunk_id"]: r for r in records}}


def candidate(chunk_id: str, text: str = "", **values: Any) -> dict[str, Any]:
    """A candidate record as `retrieve` writes it (its paragraph id is in no index: the chunk is its line)."""
    return {
        "chunk_id": chunk_id,
        "doc_id": f"doc-{chunk_id}",
        "paragraph_id": f"paragraph-{chunk_id}",
        "title": f"Title {chunk_id}",
        "section": "",
        "text": text or f"text of {chunk_id}",
        "query": "q",
        "retrieval": 0.5,
        "bm25": 1.0,
        "dense": 0.4,
        "flags": [],
        **values,
    }
