"""The answer's time budget: once its deadline has passed, no request for the answer is sent.

The deadline (the state's `deadline`, in time.time() seconds) reaches the requests through a ContextVar, not
a parameter, because no signature between the node and the request could carry it without all of them
changing:

- set by `answer_deadline`, which `citewise.core.llms.metered` opens around every node run;
- read by `budget_left`, in the transport (`citewise.models.transport`) before each attempt of a request
  (not sent once the budget is spent, its timeout cut to what is left);
- why not a parameter: the requests are made deep inside node code (`await llm.text(...)` in nodes and the
  helpers they call), and one LLM serves every run of a process, so the deadline cannot live on it either. A
  ContextVar follows the node's task and the tasks it gathers (asyncio copies the context into each), so
  concurrent runs each see their own deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_deadline: ContextVar[float | None] = ContextVar("citewise_deadline", default=None)
"""The running answer's deadline (time.time()), None without one: see the module's docstring."""


@contextmanager
def answer_deadline(deadline: float | None) -> Iterator[None]:
    """Requests made inside this block stop being sent after `deadline` (time.time()): BudgetSpent.

    A ContextVar, not a parameter (the module's docstring says why): `citewise.core.llms.metered` opens this
    around every node run, and the transport reads it before each attempt of each request.
    """
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def budget_left() -> float | None:
    """Seconds left of the running answer's time budget (None: no budget)."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.time()
