"""The LLM nodes call: bounded, retried, structured, metered; and the run's (judge, writer) pair."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables import ensure_config
from langchain_core.utils.function_calling import convert_to_openai_function, convert_to_openai_tool
from langgraph.constants import TAG_NOSTREAM
from pydantic import BaseModel

from citewise.models.budget import budget_left
from citewise.models.concurrency import ConcurrencyLimit, RunShared
from citewise.models.faults import (
    BACKOFF_INITIAL,
    BACKOFF_MAX,
    BudgetSpent,
    PromptTooLong,
    ProviderUnreachable,
    UnreadableResponse,
    connection_refused,
    context_overflow,
    rejects_method,
    retrying,
    scrub,
    timed_out,
)
from citewise.models.records import StageUsage
from citewise.models.server import CHARS_PER_TOKEN, TOKEN_MARGIN, ServerFacts, Servers
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
from citewise.models.usage import STAGE_KEY, UsageCallback, UsageMeter, from_cache, scoped_meter
from citewise.prompts.common import quote

logger = logging.getLogger(__name__)


Messages = Sequence[BaseMessage] | str

NOSTREAM_TAGS = ("langsmith:nostream", TAG_NOSTREAM)
"""Tags of internal calls. LangGraph 1.2's message stream skips runs tagged "nostream"; LangSmith and the
LangGraph server UIs know "langsmith:nostream". Both, so only the answer streams whichever reads the tags."""
MALFORMED_RETRIES = 2
"""Extra requests for samples whose output is not valid JSON for the schema (before one repair request)."""

MAX_TOKENS = {
    "condense": 200,
    "rewrite": 300,
    "follow_up": 300,
    "route": 200,
    "score": 600,
    "judge": 1200,
    "reflect": 1200,
    "critique": 1200,
    "expand": 1600,
    "answer": 1000,
    "verify": 1000,
    "outline": 1000,
    "write_section": 900,
    "customize": 2400,
    "accuracy": 1000,
    "outline_learn": 800,
    "eval judge": 300,
}
"""What a request of each stage may write at most (a batch of ten scores needs a few hundred tokens, not the
context window): a weak model that loops stops there, and its cut reply is repaired or given up."""
DEFAULT_MAX_TOKENS = 1000
"""The cap of a stage not in MAX_TOKENS."""
MAX_TIMEOUT_GROWTH = 8
"""The most a request's timeout grows after its tries ran out of time (doubling each time)."""
MIN_REPLY_TOKENS = 128
"""A reply cut shorter to fit the context window keeps at least this many tokens (or a quarter of the stage's
cap, the larger); a prompt that leaves less is not sent (PromptTooLong)."""

# the LLM nodes call ------------------------------------------------------------------------------------


def _message_text(message: BaseMessage) -> str:
    return str(message.text)


def _with_handler(callbacks: Any, handler: BaseCallbackHandler) -> Any:
    """The run's callbacks (a list, a manager or None) with `handler` added; theirs stay as they are."""
    if callbacks is None:
        return [handler]
    if isinstance(callbacks, list):
        return [*callbacks, handler]
    manager = callbacks.copy()
    manager.add_handler(handler, inherit=True)
    return manager


def _usage_of(generations: list[Any]) -> tuple[int, int]:
    """(input tokens, output tokens) a reply reports (0, 0 when it reports none)."""
    for generation in generations:
        usage = getattr(getattr(generation, "message", None), "usage_metadata", None) or {}
        if usage:
            return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    return 0, 0


def _chat_generations(result: LLMResult) -> list[ChatGeneration]:
    """The generations of a chat model's one prompt.

    A chat model's `agenerate` makes ChatGenerations only; `LLMResult` types them as any kind of Generation.
    """
    return cast(list[ChatGeneration], result.generations[0])


def finished_at_length(reply: AIMessage | None) -> bool:
    """True when the reply stopped at its max_tokens (finish reason "length"): its text is cut off."""
    if reply is None:
        return False
    metadata = getattr(reply, "response_metadata", None) or {}
    return metadata.get("finish_reason") == "length"


def _whole_sentences(text: str) -> str:
    """`text` up to its last finished sentence (all of it when no sentence ends)."""
    cut = max(text.rfind(". "), text.rfind(".\n"), text.rfind("]\n"), text.rfind("]. "))
    if text.rstrip().endswith((".", "!", "?", "]")) or cut < 0:
        return text
    return text[: cut + 1]


def _first_error(results: list[Any]) -> BaseException | None:
    return next((r for r in results if isinstance(r, BaseException)), None)


class _RefusedForLength(PromptTooLong):
    """The server refused a request for length (what it said is learnt): `_generate` fits it, tries again."""


def one_line(text: str, limit: int = 300) -> str:
    """An error's text in one line of at most `limit` characters (a server may echo the whole prompt)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else f"{line[: limit - 3]}..."


@dataclass(frozen=True)
class _Structured:
    """How one structured-output method asks for a schema."""

    method: Method
    name: str
    schema_json: str
    kwargs: dict[str, Any]


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
        self.backoff = backoff
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
        self._call_kwargs: dict[str, Any] = (
            {"request_options": {"max_retries": 0}} if self.provider == "cohere" else {}
        )  # the cohere client retries 429 / 5xx twice on its own unless told not to

    def __repr__(self) -> str:
        return f"LLM({self.spec!r}, method={self.method!r})"

    # public ------------------------------------------------------------------------------------------

    @property
    def supports_n(self) -> bool:
        """Whether one request can ask for several samples (OpenAI-compatible servers)."""
        return speaks_openai(self.provider) and not self.facts.n_ignored

    @property
    def method(self) -> Method:
        """The structured-output method the next call starts with."""
        return METHODS[self._method_index()]

    def usage(self) -> dict[str, StageUsage]:
        """Calls and tokens of every stage so far."""
        return self.meter.usage()

    def take_usage(self, stage: str | None = None) -> dict[str, StageUsage]:
        """Usage counted since the last take (of one stage, or all), inside the current usage scope if any."""
        return (scoped_meter() or self.meter).take(stage)

    async def text(
        self, messages: Messages, *, stage: str, stream: bool = False, max_tokens: int | None = None
    ) -> str:
        """Free text. `stream=True` only for the answer the user watches; other calls are tagged nostream.

        An empty reply is asked for again (uncached), then raises MalformedOutput: an empty answer must not
        pass for "your documents do not answer". A reply cut at its max_tokens keeps its whole sentences.
        """
        prepared = self._prepare(messages)
        for attempt in range(1 + MALFORMED_RETRIES):
            model = (self.model if stream else self._quiet) if attempt == 0 else self._fresh
            generations = await self._generate(
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
        prepared = self._prepare(messages)
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

    # internals ---------------------------------------------------------------------------------------

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

    def context_window(self) -> int | None:
        """The model's context window in tokens: what the server says, else Context.context_window."""
        return self.facts.context_window or self.context.context_window

    def evidence_tokens(self, configured: int, stage: str, prompt_tokens: int = 600) -> int:
        """Evidence a writing request of `stage` may carry, in `estimate_tokens` units: `configured`, or less.

        The window must hold the prompt's own words (`prompt_tokens`, in the model's tokens), the evidence and
        the reply's cap; the evidence's share is converted to estimate units (four characters) at the
        characters a token the server has counted so far.
        """
        window = self.context_window()
        if not window:
            return configured
        room = window - MAX_TOKENS.get(stage, DEFAULT_MAX_TOKENS) - prompt_tokens
        chars = max(0, room) / TOKEN_MARGIN * (self.facts.chars_per_token or CHARS_PER_TOKEN)
        return max(100, min(configured, int(chars / 4)))

    def prompt_tokens(self, text: str) -> int:
        """The model's tokens for `text` sent as one message (an upper estimate: see ServerFacts)."""
        return self.facts.prompt_tokens(len(text))

    def fits(self, text: str, stage: str) -> bool:
        """Whether a one-message prompt `text` leaves room for the stage's reply in the context window."""
        window = self.context_window()
        return not window or self.prompt_tokens(text) + MAX_TOKENS.get(stage, DEFAULT_MAX_TOKENS) <= window

    async def probe(self) -> None:
        """Read the server's context window once per `Servers` (in a thread: it is a blocking request)."""
        if not self.facts.probed:
            await asyncio.to_thread(self.facts.probe, self.provider)

    def _fitted_cap(self, stage: str, chars: int, count: int, cap: int) -> int:
        """The reply's cap, cut to what the context window leaves after the prompt (when the window is known).

        Raises:
            PromptTooLong: the prompt leaves less than MIN_REPLY_TOKENS (or a quarter of `cap`): not sent.
        """
        window = self.context_window()
        if not window:
            return cap
        prompt = self.facts.prompt_tokens(chars, count)
        room = window - prompt
        if room >= cap:
            return cap
        if room >= min(cap, max(MIN_REPLY_TOKENS, cap // 4)):
            logger.debug("%s: reply cap %d -> %d to fit a %d-token window", stage, cap, room, window)
            return room
        raise PromptTooLong(
            f"{stage}: a prompt of about {prompt} tokens leaves no room for its reply in the model's "
            f"context window of {window} tokens",
            window=window,
            prompt_tokens=prompt,
        )

    def _request_options(
        self, stage: str, messages: list[BaseMessage], max_tokens: int | None, chars: int, timeouts: int = 0
    ) -> dict[str, Any]:
        """max_tokens for the stage (cut to fit the context window) and the timeout it needs.

        After `timeouts` tries of this request ran out of time the timeout doubles each (up to
        MAX_TIMEOUT_GROWTH times): a slow server that serves one request at a time still works on the one
        the client gave up, so the same timeout again would run out behind it (Qwen2.5-1.5B on 2 busy cores
        timed out twice on its first 1,300-token judging request at 60 s).
        """
        cap = self._fitted_cap(
            stage, chars, len(messages), max_tokens or MAX_TOKENS.get(stage, DEFAULT_MAX_TOKENS)
        )
        if self.provider == "cohere":
            return {"max_tokens": cap}
        # OpenAI-compatible servers know max_tokens (llama.cpp ignores max_completion_tokens); for OpenAI
        # itself langchain-openai sends max_tokens as max_completion_tokens
        options: dict[str, Any] = (
            {"extra_body": {"max_tokens": cap}} if self.facts.url else {"max_tokens": cap}
        )
        timeout = self.facts.timeout(self.context.timeout_seconds, cap, chars)
        timeout *= min(2**timeouts, MAX_TIMEOUT_GROWTH)
        left = budget_left()
        if left is not None:
            timeout = min(timeout, max(1.0, left))
        if timeout != self.context.timeout_seconds:
            options["timeout"] = timeout
        return options

    def _prepare(self, messages: Messages) -> list[BaseMessage]:
        prepared: list[BaseMessage] = (
            [HumanMessage(messages)] if isinstance(messages, str) else list(messages)
        )
        if not prepared:
            raise ValueError("no messages to send")
        if self.provider == "cohere" and not isinstance(prepared[-1], HumanMessage | ToolMessage):
            # Cohere's chat wants the last message from the user; a prompt-only call is sent as one
            last = prepared[-1]
            prepared[-1] = HumanMessage(last.content)
        return prepared

    async def _generate(
        self,
        model: BaseChatModel,
        messages: list[BaseMessage],
        *,
        stage: str,
        internal: bool = True,
        max_tokens: int | None = None,
        **kwargs: Any,
    ) -> list[ChatGeneration]:
        """One request (retried on transient errors, counted); all its choices.

        A refusal for length teaches the server's window and the prompt's size in its tokens; the request is
        then sent once more with its reply cut to fit, or not at all (PromptTooLong) when the prompt alone
        leaves no room: the stage packs less or runs its local fallback, and the question is never lost.

        Raises:
            BudgetSpent: the answer's time budget ran out before the request could be sent.
            ProviderUnreachable: nothing listens at the server's URL (at once, not retried).
            PromptTooLong: the prompt does not fit the model's context window.
        """
        chars = sum(len(str(m.content)) for m in messages) + len(json.dumps(kwargs.get("tools") or ""))
        for refit in range(2):
            try:
                return await self._generate_once(
                    model, messages, stage=stage, internal=internal, max_tokens=max_tokens, chars=chars,
                    **kwargs,
                )  # fmt: skip
            except _RefusedForLength as refused:
                if refit:
                    raise PromptTooLong(str(refused), window=refused.window) from refused
                logger.info("%s: the server refused the prompt for length; fitting it to the window", stage)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _generate_once(
        self,
        model: BaseChatModel,
        messages: list[BaseMessage],
        *,
        stage: str,
        internal: bool,
        max_tokens: int | None,
        chars: int,
        **kwargs: Any,
    ) -> list[ChatGeneration]:
        """One request as `_generate` describes, without the second try after a refusal for length."""
        config = ensure_config()  # the running node's config: its callbacks, tags and metadata
        tags = [*(config.get("tags") or []), *(NOSTREAM_TAGS if internal else ())]
        callbacks = _with_handler(config.get("callbacks"), self.usage_callback)
        metadata = {**(config.get("metadata") or {}), STAGE_KEY: stage}
        await self.probe()
        timeouts = 0  # a serial server still works on a request that timed out: the retry waits longer
        async for attempt in retrying(self.context.max_retries, self.backoff):
            with attempt:
                async with self.shared.limit.slot(self.facts.limit(self.shared.limit.limit)):
                    left = budget_left()
                    if left is not None and left <= 0:
                        raise BudgetSpent(f"{stage} was not asked: the answer's time budget is spent")
                    options = self._request_options(stage, messages, max_tokens, chars, timeouts)
                    ticket = self.facts.started()
                    ok = False
                    try:
                        result = await model.agenerate(
                            [messages], callbacks=callbacks, tags=tags, metadata=metadata,
                            **self._call_kwargs, **options, **kwargs,
                        )  # fmt: skip
                        ok = True
                    except Exception as error:
                        timeouts += timed_out(error)
                        scrub(error)  # before the retry log or any caller sees its message
                        if isinstance(error, json.JSONDecodeError):  # a body cut off or not JSON
                            raise UnreadableResponse(
                                f"the provider's reply could not be read: {error}"
                            ) from error
                        if connection_refused(error):
                            where = self.facts.url or self.provider
                            raise ProviderUnreachable.at(where) from error
                        overflow = context_overflow(error)
                        if overflow is not None:
                            self.facts.refused_for_length(*overflow, chars=chars)
                            raise _RefusedForLength(
                                f"{stage}: the model's server refused the prompt for length "
                                f"({one_line(str(error))})",
                                window=self.context_window(),
                            ) from error
                        raise
                    finally:
                        used = _usage_of(result.generations[0]) if ok else (0, 0)
                        self.facts.finished(ticket, output_tokens=used[1], input_tokens=used[0], ok=ok)
                        if ok and used[0] and not from_cache(_chat_generations(result)):
                            self.facts.counted(chars, used[0])
                    if self._cut_off(model, result.generations[0]):
                        raise UnreadableResponse("the reply was cut off before its end (no finish reason)")
        return _chat_generations(result)

    @staticmethod
    def _cut_off(model: BaseChatModel, generations: list[Any]) -> bool:
        """Whether an OpenAI client's reply ended without a finish reason (a stream that broke off).

        Only langchain_openai's models: the field is part of every complete OpenAI reply, streamed or not;
        cached replies and other providers are taken as they are.
        """
        if not type(model).__module__.startswith("langchain_openai") or not generations:
            return False
        if from_cache(generations):
            return False
        for generation in generations:
            info = getattr(generation, "generation_info", None) or {}
            metadata = getattr(generation.message, "response_metadata", None) or {}
            if not (info.get("finish_reason") or metadata.get("finish_reason")):
                return True
        return False

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
            generations = await self._generate(model, messages, stage=stage, **request.kwargs, **extra)
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
