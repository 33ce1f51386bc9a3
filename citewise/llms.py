"""The judge and writer models of a run, built once per event loop and distinct model settings.

The async provider clients belong to the event loop they were first used on, so a new loop (another
`asyncio.run`, as the terminal chat and benchmarks do) gets its own pair; pairs of closed loops are dropped.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from citewise.context import Context
from citewise.deployment import check_settings

_cache: dict[tuple[Any, ...], tuple[asyncio.AbstractEventLoop | None, tuple[Any, Any]]] = {}
_lock = threading.Lock()


def models(context: Context) -> tuple[Any, Any]:
    """(judge, writer) LLMs for the context, or (None, None) in local mode."""
    if not context.llm:
        return None, None
    check_settings(context)
    from citewise.models import models_for

    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    key = (
        id(loop),
        context.model,
        context.judge,
        context.judge_temperature,
        context.writer_temperature,
        context.timeout_seconds,
        context.max_retries,
        context.max_concurrency,
        context.structured_output,
        context.llm_cache,
    )
    with _lock:
        for stale in [k for k, (owner, _) in _cache.items() if owner is not None and owner.is_closed()]:
            del _cache[stale]
        if key not in _cache:
            _cache[key] = (loop, models_for(context))
        return _cache[key][1]


Node = TypeVar("Node", bound=Callable[..., Awaitable[Any]])


def metered(node: Node) -> Node:
    """Run a node inside its own usage scope and report what its requests spent as its update's `usage`.

    The graphs wrap every node in it when they add it, so nodes carry no metering code. The requests are
    counted by a LangChain callback (citewise.models.usage) into the scope, so the usage a node reports is
    only its own run's, however many runs share the models. A node that resets the usage (`Overwrite`, at a
    new turn) gets its own requests inside the reset.
    """

    @functools.wraps(node)
    async def run(*args: Any, **kwargs: Any) -> Any:
        from langgraph.types import Overwrite

        from citewise.models import usage_scope
        from citewise.state.types import merge_usage

        with usage_scope() as meter:
            result = await node(*args, **kwargs)
        spent = meter.take()
        if spent and isinstance(result, dict):
            given = result.get("usage") or {}
            if isinstance(given, Overwrite):
                result = {**result, "usage": Overwrite(merge_usage(given.value, spent))}
            else:
                result = {**result, "usage": merge_usage(given, spent)}
        return result

    return run  # type: ignore[return-value]
