"""The in-flight limit: how many requests a run's models may have in flight at once, per event loop."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass


@dataclass
class _LoopSlots:
    condition: asyncio.Condition
    busy: int = 0


class ConcurrencyLimit:
    """At most `limit` requests in flight, per event loop (a cached LLM may see several loops).

    `slot(cap)` lowers the limit for one server (one found to serve one request at a time) without a new
    limit: the requests in flight finish, and no new one starts until fewer than `cap` are left.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(1, int(limit))
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopSlots] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def _loop_slots(self) -> _LoopSlots:
        loop = asyncio.get_running_loop()
        with self._lock:
            slots = self._slots.get(loop)
            if slots is None:
                slots = self._slots[loop] = _LoopSlots(asyncio.Condition())
            return slots

    @asynccontextmanager
    async def slot(self, cap: int | None = None) -> AsyncIterator[None]:
        """Hold one of the slots (at most min(limit, cap) held at once) for the block."""
        slots = self._loop_slots()
        async with slots.condition:
            await slots.condition.wait_for(lambda: slots.busy < min(self.limit, cap or self.limit))
            slots.busy += 1
        try:
            yield
        finally:
            async with slots.condition:
                slots.busy -= 1
                slots.condition.notify_all()


@dataclass
class RunShared:
    """What the models of one run share: the in-flight limit (what each server supports is ServerFacts)."""

    limit: ConcurrencyLimit
