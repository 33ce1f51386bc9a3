"""Model usage: calls and tokens per stage, counted by a LangChain callback, apart per node run.

Every chat-model request carries a `UsageCallback`: LangChain reports its start, its end (with the provider's
token counts) or its error, and the callback adds a call to the stage the request names in its metadata
(`citewise_stage`, else the LangGraph node that made it). Requests LangChain answered from its cache are not
counted. A node run (`usage_scope`, which `citewise.core.llms.metered` opens around every node of the
graphs) sees only its own requests.

The node run's meter is a ContextVar, `_node_usage`, not a parameter:

- set by `usage_scope` (`metered` opens one around every node run; the evaluation opens its own);
- read by `UsageMeter.add`, which the `UsageCallback` calls from inside LangChain's request machinery, and
  by `scoped_meter` (`LLM.take_usage`, `Reranker.take_usage`);
- why not a parameter: the callback is LangChain's and is attached to a model that every run of the process
  shares, so it cannot hold one run's meter, and LangChain calls it with no argument of ours. The ContextVar
  follows the node's task into the tasks it gathers and into the callback (run inline in the request's
  task), so concurrent node runs each count only their own requests.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from citewise.models.records import StageUsage, merge_usage

logger = logging.getLogger(__name__)


STAGE_KEY = "citewise_stage"
"""The metadata key a request names its stage with."""


def _zero() -> StageUsage:
    return {"calls": 0, "input_tokens": 0, "output_tokens": 0}


_node_usage: ContextVar[UsageMeter | None] = ContextVar("citewise_node_usage", default=None)
"""The running node's meter (set by `usage_scope`); the module's docstring says why it is not a parameter."""


@contextmanager
def usage_scope() -> Iterator[UsageMeter]:
    """Count the requests made inside this block (one node run) apart from every other run's.

    Models are shared by the runs of a process, so their own meters mix concurrent runs; inside a scope,
    `take_usage()` hands out only what this block's requests spent. The meter reaches the usage callback
    through a ContextVar, not a parameter: LangChain calls the callback, and passes nothing of ours to it.
    """
    meter = UsageMeter()
    token = _node_usage.set(meter)
    try:
        yield meter
    finally:
        _node_usage.reset(token)


def scoped_meter() -> UsageMeter | None:
    """The meter of the node run this code is in (`usage_scope`), if any."""
    return _node_usage.get()


class Metered(Protocol):
    """A model that counts its usage (an LLM, the reranker)."""

    def take_usage(self, stage: str | None = None) -> dict[str, StageUsage]:
        """Usage counted since the last take."""
        ...


class UsageMeter:
    """Calls and tokens per stage: the total of the run, and what has not been taken by a node yet."""

    def __init__(self) -> None:
        self._total: dict[str, StageUsage] = {}
        self._pending: dict[str, StageUsage] = {}
        self._lock = threading.Lock()

    def add(self, stage: str, *, calls: int = 0, input_tokens: int = 0, output_tokens: int = 0) -> None:
        """Count one or more requests of a stage."""
        with self._lock:
            for book in (self._total, self._pending):
                entry = book.setdefault(stage, _zero())
                entry["calls"] += calls
                entry["input_tokens"] += input_tokens
                entry["output_tokens"] += output_tokens
        scoped = _node_usage.get()
        if scoped is not None and scoped is not self:
            scoped.add(stage, calls=calls, input_tokens=input_tokens, output_tokens=output_tokens)

    def usage(self) -> dict[str, StageUsage]:
        """Everything counted so far, per stage."""
        with self._lock:
            return {stage: StageUsage(**entry) for stage, entry in self._total.items()}

    def take(self, stage: str | None = None) -> dict[str, StageUsage]:
        """What was counted since the last take (of `stage`, or of all stages), and forget it."""
        with self._lock:
            if stage is None:
                taken, self._pending = self._pending, {}
                return taken
            entry = self._pending.pop(stage, None)
            return {stage: entry} if entry else {}


def take_usage(*llms: Metered | None) -> dict[str, StageUsage]:
    """The usage not yet taken from several models (e.g. a node that used the judge and the writer)."""
    merged: dict[str, StageUsage] = {}
    for llm in llms:
        if llm is not None:
            merged = merge_usage(merged, llm.take_usage())
    return merged


def from_cache(generations: list[ChatGeneration]) -> bool:
    """True when LangChain served the generations from its cache (it zeroes `total_cost` on cache hits)."""
    # read as a plain dict: LangChain's cache adds "total_cost", a key its UsageMetadata does not declare
    return bool(generations) and all(
        isinstance(g.message, AIMessage) and dict(g.message.usage_metadata or {}).get("total_cost") == 0
        for g in generations
    )


class UsageCallback(BaseCallbackHandler):
    """Counts the chat-model requests it is attached to into a meter, keyed by stage.

    A request that failed (an error status, a reset, a timeout) counts as a call too: it was sent.
    """

    run_inline = True  # count in the request's own task, before the caller reads the meter

    def __init__(self, meter: UsageMeter) -> None:
        """Count into `meter`."""
        self.meter = meter
        self._stages: dict[UUID, str] = {}
        self._lock = threading.Lock()

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[Any], *, run_id: UUID, **kwargs: Any
    ) -> None:
        """Remember the stage the request names (or its node)."""
        metadata = kwargs.get("metadata") or {}
        with self._lock:
            self._stages[run_id] = str(metadata.get(STAGE_KEY) or metadata.get("langgraph_node") or "model")

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """One call with the provider's token counts; none for a reply from LangChain's cache.

        Every choice of an n-request carries the whole request's usage: it is counted once.
        """
        stage = self._stage(run_id)
        generations = response.generations[0] if response.generations else []
        if from_cache(generations):  # type: ignore[arg-type]
            return
        message = getattr(generations[0], "message", None) if generations else None
        usage = getattr(message, "usage_metadata", None) or {}
        self.meter.add(
            stage,
            calls=1,
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
        )

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """One call, no tokens."""
        self.meter.add(self._stage(run_id), calls=1)

    def _stage(self, run_id: UUID) -> str:
        with self._lock:
            return self._stages.pop(run_id, "model")
