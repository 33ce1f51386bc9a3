"""Model usage: calls and tokens per stage, counted per node run."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol

from citewise.state.types import StageUsage, merge_usage

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)


# usage and concurrency ---------------------------------------------------------------------------------


def _zero() -> StageUsage:
    return {"calls": 0, "input_tokens": 0, "output_tokens": 0}


_node_usage: ContextVar[UsageMeter | None] = ContextVar("citewise_node_usage", default=None)


@contextmanager
def usage_scope() -> Iterator[UsageMeter]:
    """Count the requests made inside this block (one node run) apart from every other run's.

    Models are shared by the runs of a process, so their own meters mix concurrent runs; inside a scope,
    `take_usage()` hands out only what this block's requests spent.
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
