"""The judge and writer models a stage runs with (or none, locally), and each node's metering and budget.

The pair comes from the run's resources (`citewise.core.resources.Resources`, carried by the Context), which
build one per event loop and model settings: the async provider clients belong to the event loop they were
first used on, so a new loop (another `asyncio.run`, as the terminal chat and benchmarks do) gets its own
pair; pairs of closed loops are dropped.

Whether a node runs its local fallback is a ContextVar, `_local_only`, not a parameter:

- set by `metered` (in `_within_budget`) while it runs a node a second time for its local fallback, after
  the answer's time budget ran out or its prompt did not fit the model's context window;
- read by `models`, which then gives no models, so the node and the helpers it calls take their local paths;
- why not a parameter: `models` is called by seventeen nodes, often inside helpers a few calls below the node
  (a scoring batch, a verification pass), and the node functions are LangGraph's `(state, runtime)`; a flag
  would have to be threaded through each of them for the one wrapper that sets it. Nor can it ride on the
  Context: nodes read `context.llm` for more than their models (the local bridge rule, the mode a turn
  records), and a fallback must not change those.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, TypeVar

from citewise.context import Context
from citewise.core.resources import resources_of

logger = logging.getLogger(__name__)

_local_only: ContextVar[bool] = ContextVar("citewise_local_only", default=False)
"""True while a node runs its local fallback (set by `_within_budget`, read by `models`): see the module's
docstring for why it is not a parameter."""


LEAN_LOCAL = frozenset(
    {"condense", "rewrite", "follow_up", "reflect", "critique", "expand", "route", "accuracy"}
)
"""Stages the lean profile runs locally (Context.profile): the model only judges relevance, writes and
verifies."""


def models(context: Context, stage: str | None = None) -> tuple[Any, Any]:
    """(judge, writer) LLMs for `stage`, or (None, None) when it runs locally.

    Locally: in local mode, once the answer's time budget is spent, and for the LEAN_LOCAL stages under the
    lean profile.
    """
    if not context.llm or _local_only.get() or (stage in LEAN_LOCAL and context.lean):
        return None, None
    return resources_of(context).models(context)


Node = TypeVar("Node", bound=Callable[..., Awaitable[Any]])


def _spent(deadline: float | None) -> bool:
    """Whether the answer's time budget, until `deadline` (time.time()), is spent (never, without one)."""
    return deadline is not None and deadline - time.time() <= 0


def metered(node: Node, *, starts_turn: bool = False) -> Node:
    """Run a node inside its own usage scope and report what its requests spent as its update's `usage`.

    The node's requests also keep to the answer's time budget (the state's `deadline`, which the node that
    `starts_turn` sets and does not read): once it is spent, or when a request fails after it, the node runs
    its local fallback (`models` gives no models) and the update lists it in `degraded`. So does a node
    whose prompt could not be fitted to the model's context window (PromptTooLong): the question is answered
    locally, never lost.

    The graphs wrap every node in it when they add it, so nodes carry no metering code. The requests are
    counted by a LangChain callback (citewise.models.usage) into the scope, so the usage a node reports is
    only its own run's, however many runs share the models. A node that resets the usage (`Overwrite`, at a
    new turn) gets its own requests inside the reset.
    """

    @functools.wraps(node)
    async def run(*args: Any, **kwargs: Any) -> Any:
        from citewise.models import answer_deadline, degradation, usage_scope
        from citewise.state.types import merge_degraded, merge_usage

        state = args[0] if args and isinstance(args[0], dict) and not starts_turn else {}
        context = getattr(args[1] if len(args) > 1 else kwargs.get("runtime"), "context", None)
        deadline = state.get("deadline")
        with usage_scope() as meter, answer_deadline(deadline):
            result, local = await _within_budget(node, args, kwargs, deadline)
        if local and context is not None and context.llm and isinstance(result, dict):
            entry = degradation(node.__name__, f"{local}: local fallback used", [])
            result = _added(result, "degraded", [entry], merge_degraded)
        spent = meter.take()
        if spent and isinstance(result, dict):
            result = _added(result, "usage", spent, merge_usage)
        return result

    return run  # type: ignore[return-value]


async def _within_budget(
    node: Callable[..., Awaitable[Any]], args: Any, kwargs: Any, deadline: float | None
) -> tuple[Any, str]:
    """The node's update, and why it ran its local fallback instead ("" when it did not).

    It runs locally (`models` gives no models) when the answer's time budget (until `deadline`, time.time())
    was spent before it, or when a request failed after the budget ran out.
    """
    from citewise.models import PromptTooLong, is_transient

    if _spent(deadline):
        local = "the answer's time budget was spent before the stage"
    else:
        try:
            return await node(*args, **kwargs), ""
        except PromptTooLong as error:
            local = f"the prompt did not fit the model's context window ({error})"
        except Exception as error:
            if not (is_transient(error) and _spent(deadline)):
                raise
            local = f"the answer's time budget ran out during the stage ({type(error).__name__})"
    logger.warning("%s: %s; running its local fallback", getattr(node, "__name__", "node"), local)
    # a ContextVar, not a parameter (the module's docstring says why): `models` reads it wherever the node
    # and its helpers ask for their models during this second run
    token = _local_only.set(True)
    try:
        return await node(*args, **kwargs), local
    finally:
        _local_only.reset(token)


def _added(result: dict, key: str, extra: Any, merge: Callable[[Any, Any], Any]) -> dict:
    """`result` with `extra` merged into its `key` (inside an Overwrite, when the node resets the key)."""
    from langgraph.types import Overwrite

    given = result.get(key)
    if isinstance(given, Overwrite):
        return {**result, key: Overwrite(merge(given.value, extra))}
    return {**result, key: merge(given, extra)}
