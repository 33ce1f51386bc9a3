"""One request to a model: sent within the in-flight limit and the time budget, retried, counted, checked.

`Transport.generate` sends one chat request and returns all its choices. On the way it tags internal calls
so only the answer streams, attaches the usage callback, waits for a slot of the run's in-flight limit,
keeps to the answer's time budget (`citewise.models.budget`), caps the reply to fit the context window
(`citewise.models.window`), retries transient faults (`faults.retrying`, the timeout growing after a timed-out
try), and teaches the server's facts (speed, queueing, characters a token). What it tells apart:

- a refused connection: ProviderUnreachable at once, never retried;
- a body that is not JSON: UnreadableResponse (transient, retried);
- a refusal for length: the window and the prompt's size are learnt and the request is sent once more with
  its reply cut to fit, or not at all (PromptTooLong);
- a reply cut off before its end (an OpenAI reply without a finish reason): UnreadableResponse, retried.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Any, cast

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables import ensure_config
from langgraph.constants import TAG_NOSTREAM

from citewise.models.budget import budget_left
from citewise.models.concurrency import RunShared
from citewise.models.faults import (
    BudgetSpent,
    PromptTooLong,
    ProviderUnreachable,
    UnreadableResponse,
    connection_refused,
    context_overflow,
    one_line,
    retrying,
    scrub,
    timed_out,
)
from citewise.models.server import ServerFacts
from citewise.models.settings import ModelSettings
from citewise.models.usage import STAGE_KEY, UsageCallback, from_cache
from citewise.models.window import Window, stage_cap

logger = logging.getLogger(__name__)


Messages = Sequence[BaseMessage] | str

NOSTREAM_TAGS = ("langsmith:nostream", TAG_NOSTREAM)
"""Tags of internal calls. LangGraph 1.2's message stream skips runs tagged "nostream"; LangSmith and the
LangGraph server UIs know "langsmith:nostream". Both, so only the answer streams whichever reads the tags."""
MAX_TIMEOUT_GROWTH = 8
"""The most a request's timeout grows after its tries ran out of time (doubling each time)."""


def prepared_messages(messages: Messages, provider: str) -> list[BaseMessage]:
    """`messages` as a list the provider takes (a string is one user message).

    Raises:
        ValueError: no messages.
    """
    prepared: list[BaseMessage] = [HumanMessage(messages)] if isinstance(messages, str) else list(messages)
    if not prepared:
        raise ValueError("no messages to send")
    if provider == "cohere" and not isinstance(prepared[-1], HumanMessage | ToolMessage):
        # Cohere's chat wants the last message from the user; a prompt-only call is sent as one
        last = prepared[-1]
        prepared[-1] = HumanMessage(last.content)
    return prepared


def finished_at_length(reply: AIMessage | None) -> bool:
    """True when the reply stopped at its max_tokens (finish reason "length"): its text is cut off."""
    if reply is None:
        return False
    metadata = getattr(reply, "response_metadata", None) or {}
    return metadata.get("finish_reason") == "length"


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


class _RefusedForLength(PromptTooLong):
    """The server refused a request for length (what it said is learnt): `generate` fits it, tries again."""


class Transport:
    """Sends one model's requests (see the module's docstring)."""

    def __init__(
        self,
        provider: str,
        settings: ModelSettings,
        *,
        facts: ServerFacts,
        shared: RunShared,
        window: Window,
        usage_callback: UsageCallback,
        backoff: tuple[float, float],
    ) -> None:
        """Send to `provider`'s server with the settings' retries and timeout.

        Args:
            provider: The spec's provider.
            settings: The run's settings (timeout, retries).
            facts: What the server turned out to support; each request teaches it more.
            shared: The in-flight limit shared with the run's other model.
            window: The model's context window, which each reply's cap is fitted to.
            usage_callback: Attached to every request: counts it under its stage.
            backoff: (first wait, longest wait) of retries in seconds.
        """
        self.provider = provider
        self.settings = settings
        self.facts = facts
        self.shared = shared
        self.window = window
        self.usage_callback = usage_callback
        self.backoff = backoff
        self._call_kwargs: dict[str, Any] = (
            {"request_options": {"max_retries": 0}} if provider == "cohere" else {}
        )  # the cohere client retries 429 / 5xx twice on its own unless told not to

    async def probe(self) -> None:
        """Read the server's context window once per `Servers` (in a thread: it is a blocking request)."""
        if not self.facts.probed:
            await asyncio.to_thread(self.facts.probe, self.provider)

    async def generate(
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
        """One request as `generate` describes, without the second try after a refusal for length."""
        config = ensure_config()  # the running node's config: its callbacks, tags and metadata
        tags = [*(config.get("tags") or []), *(NOSTREAM_TAGS if internal else ())]
        callbacks = _with_handler(config.get("callbacks"), self.usage_callback)
        metadata = {**(config.get("metadata") or {}), STAGE_KEY: stage}
        await self.probe()
        timeouts = 0  # a serial server still works on a request that timed out: the retry waits longer
        async for attempt in retrying(self.settings.max_retries, self.backoff):
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
                                window=self.window.size(),
                            ) from error
                        raise
                    finally:
                        used = _usage_of(result.generations[0]) if ok else (0, 0)
                        self.facts.finished(ticket, output_tokens=used[1], input_tokens=used[0], ok=ok)
                        if ok and used[0] and not from_cache(_chat_generations(result)):
                            self.facts.counted(chars, used[0])
                    if _cut_off(model, result.generations[0]):
                        raise UnreadableResponse("the reply was cut off before its end (no finish reason)")
        return _chat_generations(result)

    def _request_options(
        self, stage: str, messages: list[BaseMessage], max_tokens: int | None, chars: int, timeouts: int = 0
    ) -> dict[str, Any]:
        """max_tokens for the stage (cut to fit the context window) and the timeout it needs.

        After `timeouts` tries of this request ran out of time the timeout doubles each (up to
        MAX_TIMEOUT_GROWTH times): a slow server that serves one request at a time still works on the one
        the client gave up, so the same timeout again would run out behind it (Qwen2.5-1.5B on 2 busy cores
        timed out twice on its first 1,300-token judging request at 60 s).
        """
        cap = self.window.fitted_cap(stage, chars, len(messages), max_tokens or stage_cap(stage))
        if self.provider == "cohere":
            return {"max_tokens": cap}
        # OpenAI-compatible servers know max_tokens (llama.cpp ignores max_completion_tokens); for OpenAI
        # itself langchain-openai sends max_tokens as max_completion_tokens
        options: dict[str, Any] = (
            {"extra_body": {"max_tokens": cap}} if self.facts.url else {"max_tokens": cap}
        )
        timeout = self.facts.timeout(self.settings.timeout_seconds, cap, chars)
        timeout *= min(2**timeouts, MAX_TIMEOUT_GROWTH)
        left = budget_left()
        if left is not None:
            timeout = min(timeout, max(1.0, left))
        if timeout != self.settings.timeout_seconds:
            options["timeout"] = timeout
        return options
