"""The LLM nodes call, and the run's (judge, writer) pair.

`LLM` is the facade: it builds a spec's chat model and the parts that use it, and hands each call to the part
whose job it is: `window` (what fits the context window), `transport` (one request: the in-flight limit, the
time budget, retries, counting), `sampler` (structured output: methods, samples, repair). Its own job is the
configuration they share and the usage they meter.
"""

from __future__ import annotations

import logging

from langchain_core.language_models import BaseChatModel

from citewise.models.concurrency import ConcurrencyLimit, RunShared
from citewise.models.faults import BACKOFF_INITIAL, BACKOFF_MAX
from citewise.models.records import StageUsage
from citewise.models.sampling import MALFORMED_RETRIES, Sampler
from citewise.models.server import ServerFacts, Servers
from citewise.models.settings import ModelSettings
from citewise.models.specs import ResponseCaches, chat_model, parse_model
from citewise.models.structured import MalformedOutput, Method, Schema
from citewise.models.transport import Messages, Transport, finished_at_length, prepared_messages
from citewise.models.usage import UsageCallback, UsageMeter, scoped_meter
from citewise.models.window import Window

logger = logging.getLogger(__name__)


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
        self.sampler = Sampler(
            spec, context, facts=self.facts, transport=self.transport, quiet=self._quiet, fresh=self._fresh
        )
        """Structured output: the method the server takes, n samples, retries and repair."""

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
        return self.sampler.supports_n

    @property
    def method(self) -> Method:
        """The structured-output method the next call starts with."""
        return self.sampler.method

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
            reply = str(generations[0].message.text) if generations else ""
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

        One request asks for all samples where the server takes `n`, else n requests run concurrently; a
        method the server rejects gives way to the next (citewise.models.sampling). Provider errors propagate
        after the retries; malformed output never raises.
        """
        if n < 1:
            return []
        prepared = prepared_messages(messages, self.provider)
        return await self.sampler.structured(schema, prepared, stage=stage, n=n, max_tokens=max_tokens)


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
