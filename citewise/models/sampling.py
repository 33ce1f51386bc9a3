"""Structured output from a model: `n` samples of a schema, by whichever method its server takes.

`Sampler.structured` starts with the method configured or learnt (`ServerFacts.method`) and moves on through
METHODS when a server rejects one, remembering the one that worked. By a method, the `n` samples come from one
request where the server honours `n`, else from concurrent requests (and the server is remembered not to).
A malformed sample is asked for again (uncached) up to MALFORMED_RETRIES times, then repaired by one request
that shows the model its output and what is wrong with it; still malformed, it is None. Malformed output
never raises; provider errors propagate after the transport's retries.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from citewise.models.faults import one_line, rejects_method
from citewise.models.server import ServerFacts
from citewise.models.settings import ModelSettings
from citewise.models.specs import parse_model, speaks_openai
from citewise.models.structured import (
    METHODS,
    PROMPTED,
    REPAIR_PROMPT,
    Method,
    Schema,
    StructuredRequest,
    first_method,
    json_mode_messages,
    next_method,
    parse_reply,
    structured_request,
)
from citewise.models.transport import Transport, finished_at_length
from citewise.prompts.common import quote

logger = logging.getLogger(__name__)


MALFORMED_RETRIES = 2
"""Extra requests for samples whose output is not valid JSON for the schema (before one repair request)."""


def _first_error(results: list[Any]) -> BaseException | None:
    return next((r for r in results if isinstance(r, BaseException)), None)


class Sampler:
    """Structured samples of one model (see the module's docstring)."""

    def __init__(
        self,
        spec: str,
        settings: ModelSettings,
        *,
        facts: ServerFacts,
        transport: Transport,
        quiet: BaseChatModel,
        fresh: BaseChatModel,
    ) -> None:
        """Sample `spec` through `transport`.

        Args:
            spec: "provider/model" (named in the log).
            settings: The run's settings (the structured-output method, the lean profile).
            facts: What the server turned out to support (the method it takes, whether it honours `n`).
            transport: Sends the requests.
            quiet: The model for first tries (never streams).
            fresh: The model for retries after malformed output (uncached).
        """
        self.spec = spec
        self.provider = parse_model(spec)[0]
        self.settings = settings
        self.facts = facts
        self.transport = transport
        self.quiet = quiet
        self.fresh = fresh

    @property
    def supports_n(self) -> bool:
        """Whether one request can ask for several samples (OpenAI-compatible servers)."""
        return speaks_openai(self.provider) and not self.facts.n_ignored

    @property
    def method(self) -> Method:
        """The structured-output method the next call starts with."""
        return METHODS[first_method(self.settings.structured_output, self.facts.method)]

    async def structured(
        self,
        schema: type[Schema],
        messages: list[BaseMessage],
        *,
        stage: str,
        n: int,
        max_tokens: int | None = None,
    ) -> list[Schema | None]:
        """`n` samples parsed as `schema` (None: still malformed); a method the server rejects gives way."""
        index = first_method(self.settings.structured_output, self.facts.method)
        while True:
            try:
                return await self._structured_with(
                    METHODS[index], schema, messages, stage=stage, n=n, max_tokens=max_tokens
                )
            except Exception as error:
                following = next_method(index, self.provider)
                if following >= len(METHODS) or not rejects_method(error):
                    raise
                # a known dialect (llama-cpp-python refuses json_schema): learnt once per process, quietly
                logger.debug(
                    "%s does not take structured output by %s (%s); using %s",
                    self.spec,
                    METHODS[index],
                    one_line(str(error)),
                    METHODS[following],
                )
                index = following
                self.facts.method = max(index, self.facts.method or 0)

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
        """`n` samples by `method`: a malformed one asked again, then repaired (else None)."""
        request = structured_request(method, schema, self.provider, max_tokens)
        if method in PROMPTED:
            messages = json_mode_messages(messages, request)
        results: list[Schema | None] = [None] * n
        raw: list[str] = [""] * n
        problems: list[str] = [""] * n
        pending = list(range(n))
        for attempt in range(1 + (0 if self.settings.lean else MALFORMED_RETRIES)):
            model = self.quiet if attempt == 0 else self.fresh
            replies = await self._samples(model, messages, request, stage=stage, count=len(pending))
            still: list[int] = []
            cut = 0
            for slot, reply in zip(pending, replies, strict=True):
                parsed, raw_text, problem = parse_reply(schema, reply, method)
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
        if self.settings.lean:  # no second request for a sample: the stage's local fallback takes it
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
        self,
        model: BaseChatModel,
        messages: list[BaseMessage],
        request: StructuredRequest,
        *,
        stage: str,
        n: int,
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
        request: StructuredRequest,
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

    async def _repair(
        self, schema: type[Schema], request: StructuredRequest, raw: str, problem: str, *, stage: str
    ) -> Schema | None:
        """One request to fix a malformed sample; None when it does not come back valid either."""
        instructions = REPAIR_PROMPT.format(
            name=request.name, problem=problem or "it is not valid JSON", schema=request.schema_json
        )
        messages: list[BaseMessage] = [SystemMessage(instructions), HumanMessage(quote("output", raw))]
        try:
            replies = await self._choices(self.quiet, messages, request, stage=stage, n=1)
        except Exception as error:
            if not rejects_method(error):
                raise
            logger.warning("%s: the repair request was refused (%s)", stage, error)
            return None
        parsed, _, still = parse_reply(schema, replies[0] if replies else None, request.method)
        if parsed is None:
            logger.warning("%s: sample given up after a repair (%s)", stage, still)
        return parsed
