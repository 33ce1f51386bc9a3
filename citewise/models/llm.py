"""The LLM nodes call: bounded, retried, structured, metered; and the run's (judge, writer) pair.

What fits the context window is `window`'s; one request (the in-flight limit, the time budget, retries,
counting) is `transport`'s.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.utils.function_calling import convert_to_openai_function, convert_to_openai_tool
from pydantic import BaseModel

from citewise.models.concurrency import ConcurrencyLimit, RunShared
from citewise.models.faults import BACKOFF_INITIAL, BACKOFF_MAX, one_line, rejects_method
from citewise.models.records import StageUsage
from citewise.models.server import ServerFacts, Servers
from citewise.models.settings import ModelSettings
from citewise.models.specs import ResponseCaches, chat_model, parse_model, speaks_openai
from citewise.models.structured import (
    JSON_MODE_INSTRUCTION,
    METHODS,
    PROMPTED,
    REPAIR_PROMPT,
    MalformedOutput,
    Method,
    Schema,
    validate_output,
)
from citewise.models.transport import Messages, Transport, finished_at_length, prepared_messages
from citewise.models.usage import UsageCallback, UsageMeter, scoped_meter
from citewise.models.window import Window
from citewise.prompts.common import quote

logger = logging.getLogger(__name__)


MALFORMED_RETRIES = 2
"""Extra requests for samples whose output is not valid JSON for the schema (before one repair request)."""


def _message_text(message: BaseMessage) -> str:
    return str(message.text)


def _first_error(results: list[Any]) -> BaseException | None:
    return next((r for r in results if isinstance(r, BaseException)), None)


@dataclass(frozen=True)
class _Structured:
    """How one structured-output method asks for a schema."""

    method: Method
    name: str
    schema_json: str
    kwargs: dict[str, Any]


def _whole_sentences(text: str) -> str:
    """`text` up to its last finished sentence (all of it when no sentence ends)."""
    cut = max(text.rfind(". "), text.rfind(".\n"), text.rfind("]\n"), text.rfind("]. "))
    if text.rstrip().endswith((".", "!", "?", "]")) or cut < 0:
        return text
    return text[: cut + 1]


class LLM:
    """A chat model as graph nodes use it: bounded, retried, structured, metered.

    Nodes call `await llm.text(messages, stage=...)` or `await llm.structured(Schema, messages, stage=...,
    n=3)`; what the requests spent reaches the node's update through its usage scope (core.llms.metered).
    """

    def __init__(
        self,
        spec: str,
        context: ModelSettings,
        *,
        temperature: float | None = None,
        shared: RunShared | None = None,
        model: BaseChatModel | None = None,
        backoff: tuple[float, float] = (BACKOFF_INITIAL, BACKOFF_MAX),
        servers: Servers | None = None,
        caches: ResponseCaches | None = None,
    ) -> None:
        """Build the chat model for `spec` with the context's timeout, retries and cache.

        Args:
            spec: "provider/model".
            context: The run's settings (timeout, retries, concurrency, structured-output method, cache).
            temperature: Sampling temperature (default: the context's judge temperature).
            shared: The in-flight limit and server facts shared with the run's other LLM.
            model: A ready chat model to use instead of building one (tests).
            backoff: (first wait, longest wait) of retries in seconds.
            servers: What earlier runs learnt about servers (default: nothing; this LLM learns alone).
            caches: The open SQLite response caches (default: the context's cache opened for this LLM).
        """
        self.spec = spec
        self.provider, self.name = parse_model(spec)
        self.context = context
        self.facts: ServerFacts = (servers or Servers()).facts(self.provider, self.name)
        """What the server behind this spec turned out to support, kept by `servers` for later runs."""
        self.shared = shared or RunShared(ConcurrencyLimit(context.max_concurrency))
        self.meter = UsageMeter()
        self.usage_callback = UsageCallback(self.meter)
        """Attached to every request: counts it under its stage (citewise.models.usage)."""
        self.model: BaseChatModel
        """Streams when a streaming callback (LangGraph's message stream) is attached: the answer call."""
        self._quiet: BaseChatModel
        """Internal calls: never stream (n > 1 choices cannot be streamed into one message)."""
        self._fresh: BaseChatModel
        """Retries after malformed output: the cache would only hand the same output back."""
        if model is None:
            self.model = chat_model(
                spec,
                temperature=context.judge_temperature if temperature is None else temperature,
                timeout=context.timeout_seconds,
                cache=(caches or ResponseCaches()).get(context.llm_cache) if context.llm_cache else None,
            )
            self._quiet = self.model.model_copy(update={"disable_streaming": True})
            self._fresh = self._quiet.model_copy(update={"cache": False})
        else:  # a test's scripted model: copies would not share its script, so it plays every part
            self.model = self._quiet = self._fresh = model
        self.window = Window(self.facts, context)
        """What fits the model's context window."""
        self.transport = Transport(
            self.provider, context, facts=self.facts, shared=self.shared, window=self.window,
            usage_callback=self.usage_callback, backoff=backoff,
        )  # fmt: skip
        """Sends one request: in flight within the run's limit, within the time budget, retried, counted."""

    def __repr__(self) -> str:
        return f"LLM({self.spec!r}, method={self.method!r})"

    @property
    def backoff(self) -> tuple[float, float]:
        """(first wait, longest wait) of retries in seconds."""
        return self.transport.backoff

    @backoff.setter
    def backoff(self, backoff: tuple[float, float]) -> None:
        self.transport.backoff = backoff

    @property
    def supports_n(self) -> bool:
        """Whether one request can ask for several samples (OpenAI-compatible servers)."""
        return speaks_openai(self.provider) and not self.facts.n_ignored

    @property
    def method(self) -> Method:
        """The structured-output method the next call starts with."""
        return METHODS[self._method_index()]

    # usage -------------------------------------------------------------------------------------------

    def usage(self) -> dict[str, StageUsage]:
        """Calls and tokens of every stage so far."""
        return self.meter.usage()

    def take_usage(self, stage: str | None = None) -> dict[str, StageUsage]:
        """Usage counted since the last take (of one stage, or all), inside the current usage scope if any."""
        return (scoped_meter() or self.meter).take(stage)

    # the context window ------------------------------------------------------------------------------

    def context_window(self) -> int | None:
        """The model's context window in tokens: what the server says, else Context.context_window."""
        return self.window.size()

    def evidence_tokens(self, configured: int, stage: str, prompt_tokens: int = 600) -> int:
        """Evidence a writing request of `stage` may carry, in `estimate_tokens` units (see Window)."""
        return self.window.evidence_tokens(configured, stage, prompt_tokens)

    def prompt_tokens(self, text: str) -> int:
        """The model's tokens for `text` sent as one message (an upper estimate: see ServerFacts)."""
        return self.window.prompt_tokens(text)

    def fits(self, text: str, stage: str) -> bool:
        """Whether a one-message prompt `text` leaves room for the stage's reply in the context window."""
        return self.window.fits(text, stage)

    async def probe(self) -> None:
        """Read the server's context window once per `Servers` (in a thread: it is a blocking request)."""
        await self.transport.probe()

    # the calls ---------------------------------------------------------------------------------------

    async def text(
        self, messages: Messages, *, stage: str, stream: bool = False, max_tokens: int | None = None
    ) -> str:
        """Free text. `stream=True` only for the answer the user watches; other calls are tagged nostream.

        An empty reply is asked for again (uncached), then raises MalformedOutput: an empty answer must not
        pass for "your documents do not answer". A reply cut at its max_tokens keeps its whole sentences.
        """
        prepared = prepared_messages(messages, self.provider)
        for attempt in range(1 + MALFORMED_RETRIES):
            model = (self.model if stream else self._quiet) if attempt == 0 else self._fresh
            generations = await self.transport.generate(
                model, prepared, stage=stage, internal=not stream, max_tokens=max_tokens
            )
            reply = _message_text(generations[0].message) if generations else ""
            if generations and finished_at_length(generations[0].message):  # type: ignore[arg-type]
                logger.warning("%s: the reply reached its max_tokens; its last sentence is dropped", stage)
                reply = _whole_sentences(reply)
            if reply.strip():
                return reply
        raise MalformedOutput(f"the model's reply was empty {1 + MALFORMED_RETRIES} times")

    async def structured(
        self,
        schema: type[Schema],
        messages: Messages,
        *,
        stage: str,
        n: int = 1,
        max_tokens: int | None = None,
    ) -> list[Schema | None]:
        """`n` samples parsed as `schema`; None for a sample still malformed after retries and a repair.

        One request asks for all samples where the server takes `n`, else n requests run concurrently.
        Provider errors propagate after the retries; malformed output never raises.
        """
        if n < 1:
            return []
        prepared = prepared_messages(messages, self.provider)
        index = self._method_index()
        while True:
            try:
                return await self._structured_with(
                    METHODS[index], schema, prepared, stage=stage, n=n, max_tokens=max_tokens
                )
            except Exception as error:
                if self._next_method(index) >= len(METHODS) or not rejects_method(error):
                    raise
                # a known dialect (llama-cpp-python refuses json_schema): learnt once per process, quietly
                logger.debug(
                    "%s does not take structured output by %s (%s); using %s",
                    self.spec,
                    METHODS[index],
                    one_line(str(error)),
                    METHODS[self._next_method(index)],
                )
                index = self._next_method(index)
                self.facts.method = max(index, self.facts.method or 0)

    # structured output -------------------------------------------------------------------------------

    def _method_index(self) -> int:
        learnt = self.facts.method
        configured = METHODS.index(self.context.structured_output)
        return configured if learnt is None else max(learnt, configured)

    def _next_method(self, index: int) -> int:
        """The method after METHODS[index] for this provider (Cohere's json_schema is already json_object)."""
        index += 1
        if (
            index < len(METHODS)
            and METHODS[index] == "json_object_schema"
            and not speaks_openai(self.provider)
        ):
            index += 1
        return index

    def _structured_request(
        self, method: Method, schema: type[BaseModel], max_tokens: int | None = None
    ) -> _Structured:
        function = convert_to_openai_function(schema, strict=True)
        name, parameters = function["name"], function["parameters"]
        schema_json = json.dumps(parameters, indent=1)
        kwargs: dict[str, Any]
        if method == "json_schema":
            if self.provider == "cohere":
                kwargs = {"response_format": {"type": "json_object", "json_schema": parameters}}
            else:
                kwargs = {
                    "response_format": {
                        "type": "json_schema",
                        "json_schema": {
                            "name": name,
                            "description": function.get("description", ""),
                            "schema": parameters,
                            "strict": True,
                        },
                    }
                }
        elif method == "json_object_schema":  # llama.cpp: JSON constrained to the schema
            kwargs = {"response_format": {"type": "json_object", "schema": parameters}}
        elif method == "text":  # nothing asked of the server: the prompt spells the schema out
            kwargs = {}
        elif method == "function_calling":
            if self.provider == "cohere":
                kwargs = {"tools": [convert_to_openai_tool(schema)], "tool_choice": "REQUIRED"}
            else:
                kwargs = {
                    "tools": [convert_to_openai_tool(schema, strict=True)],
                    "tool_choice": {"type": "function", "function": {"name": name}},
                }
        else:
            kwargs = {"response_format": {"type": "json_object"}}
        return _Structured(method, name, schema_json, {**kwargs, "max_tokens": max_tokens})

    @staticmethod
    def _json_mode_messages(messages: list[BaseMessage], request: _Structured) -> list[BaseMessage]:
        """Spell the schema out in the system prompt (json_mode enforces JSON, not the schema)."""
        instruction = JSON_MODE_INSTRUCTION.format(name=request.name, schema=request.schema_json)
        first = messages[0]
        if isinstance(first, SystemMessage) and isinstance(first.content, str):
            return [SystemMessage(f"{first.content}\n\n{instruction}"), *messages[1:]]
        return [SystemMessage(instruction), *messages]

    async def _structured_with(
        self,
        method: Method,
        schema: type[Schema],
        messages: list[BaseMessage],
        *,
        stage: str,
        n: int,
        max_tokens: int | None = None,
    ) -> list[Schema | None]:
        request = self._structured_request(method, schema, max_tokens)
        if method in PROMPTED:
            messages = self._json_mode_messages(messages, request)
        results: list[Schema | None] = [None] * n
        raw: list[str] = [""] * n
        problems: list[str] = [""] * n
        pending = list(range(n))
        for attempt in range(1 + (0 if self.context.lean else MALFORMED_RETRIES)):
            model = self._quiet if attempt == 0 else self._fresh
            replies = await self._samples(model, messages, request, stage=stage, count=len(pending))
            still: list[int] = []
            cut = 0
            for slot, reply in zip(pending, replies, strict=True):
                parsed, raw_text, problem = self._parse(schema, reply, method)
                if parsed is None:
                    still.append(slot)
                    raw[slot], problems[slot] = raw_text, problem
                    if finished_at_length(reply):
                        cut += 1
                        problems[slot] = f"it was cut off at its max_tokens ({problem})"
                else:
                    results[slot] = parsed
            pending = still
            if not pending:
                return results
            if cut == len(pending):  # asked again, it would only run to the same limit: repair it instead
                break
            logger.warning(
                "%s/%s: %d of %d samples malformed (%s)", stage, method, len(pending), n, problems[pending[0]]
            )
        if self.context.lean:  # no second request for a sample: the stage's local fallback takes it
            logger.warning("%s/%s: %d of %d samples given up (lean profile)", stage, method, len(pending), n)
            return results
        repairs = await asyncio.gather(
            *(self._repair(schema, request, raw[slot], problems[slot], stage=stage) for slot in pending),
            return_exceptions=True,
        )
        if error := _first_error(repairs):
            raise error
        for slot, repaired in zip(pending, repairs, strict=True):
            results[slot] = repaired  # type: ignore[assignment]
        return results

    async def _choices(
        self, model: BaseChatModel, messages: list[BaseMessage], request: _Structured, *, stage: str, n: int
    ) -> list[AIMessage | None]:
        """The choices of one request; one None per asked choice when the reply was cut off or filtered."""
        import openai  # here, not at module level: local mode never loads the client

        extra: dict[str, Any] = {"n": n} if n > 1 else {}
        try:
            generations = await self.transport.generate(
                model, messages, stage=stage, **request.kwargs, **extra
            )
        except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as error:
            logger.warning("%s: the reply was cut off or filtered (%s)", stage, type(error).__name__)
            return [None] * n
        return [g.message if isinstance(g.message, AIMessage) else None for g in generations]

    async def _samples(
        self,
        model: BaseChatModel,
        messages: list[BaseMessage],
        request: _Structured,
        *,
        stage: str,
        count: int,
    ) -> list[AIMessage | None]:
        """`count` replies: one request with `n` where the server takes it, else concurrent requests."""
        replies: list[AIMessage | None] = []
        if count > 1 and self.supports_n:
            replies = (await self._choices(model, messages, request, stage=stage, n=count))[:count]
            if len(replies) < count:
                logger.info(
                    "%s answered n=%d with %d choice(s): sampling with separate requests from now on",
                    self.spec,
                    count,
                    len(replies),
                )
                self.facts.n_ignored = True
        missing = count - len(replies)
        if missing:
            singles = await asyncio.gather(
                *(self._choices(model, messages, request, stage=stage, n=1) for _ in range(missing)),
                return_exceptions=True,
            )
            if error := _first_error(singles):
                raise error
            replies += [single[0] if single else None for single in singles]  # type: ignore[index]
        return replies

    @staticmethod
    def _parse(
        schema: type[Schema], reply: AIMessage | None, method: Method
    ) -> tuple[Schema | None, str, str]:
        """(parsed sample or None, the raw output, what is wrong with it)."""
        if reply is None:
            return None, "", "the reply was cut off or filtered"
        raw = _message_text(reply)
        if method == "function_calling":
            if reply.tool_calls:
                raw = json.dumps(reply.tool_calls[0]["args"])
            elif reply.invalid_tool_calls:
                raw = reply.invalid_tool_calls[0].get("args") or raw
        try:
            return validate_output(schema, raw), raw, ""
        except MalformedOutput as error:
            return None, raw, str(error)

    async def _repair(
        self, schema: type[Schema], request: _Structured, raw: str, problem: str, *, stage: str
    ) -> Schema | None:
        """One request to fix a malformed sample; None when it does not come back valid either."""
        instructions = REPAIR_PROMPT.format(
            name=request.name, problem=problem or "it is not valid JSON", schema=request.schema_json
        )
        messages: list[BaseMessage] = [SystemMessage(instructions), HumanMessage(quote("output", raw))]
        try:
            replies = await self._choices(self._quiet, messages, request, stage=stage, n=1)
        except Exception as error:
            if not rejects_method(error):
                raise
            logger.warning("%s: the repair request was refused (%s)", stage, error)
            return None
        parsed, _, still = self._parse(schema, replies[0] if replies else None, request.method)
        if parsed is None:
            logger.warning("%s: sample given up after a repair (%s)", stage, still)
        return parsed


# the run's models --------------------------------------------------------------------------------------


def models_for(
    context: ModelSettings, *, servers: Servers | None = None, caches: ResponseCaches | None = None
) -> tuple[LLM | None, LLM | None]:
    """(judge, writer) sharing one in-flight limit; (None, None) in local mode (no model configured).

    `servers` and `caches` are what the way in keeps across runs (citewise.core.resources.Resources).
    """
    if not context.llm or not context.model:
        return None, None
    shared = RunShared(ConcurrencyLimit(context.max_concurrency))
    servers, caches = servers or Servers(), caches or ResponseCaches()
    writer = LLM(
        context.model, context, temperature=context.writer_temperature, shared=shared, servers=servers,
        caches=caches,
    )  # fmt: skip
    judge = LLM(
        context.judge or context.model, context, temperature=context.judge_temperature, shared=shared,
        servers=servers, caches=caches,
    )  # fmt: skip
    return judge, writer
