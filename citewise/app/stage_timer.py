"""Seconds per stage of a graph run, from LangChain's callbacks, beside the calls and tokens it spent."""

from __future__ import annotations

import time
from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler

# timing the stages -----------------------------------------------------------------------------------------


class StageTimer(AsyncCallbackHandler):
    """Seconds spent in each graph node, summed over its runs; a subgraph's time goes to its inner nodes."""

    def __init__(self) -> None:
        self.parents: dict[UUID, UUID | None] = {}
        self.started: dict[UUID, tuple[str, float]] = {}
        self.spent: dict[UUID, tuple[str, float]] = {}

    async def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember every run's parent, and when a node run started."""
        self.parents[run_id] = parent_run_id
        node = (metadata or {}).get("langgraph_node")
        if node and kwargs.get("name") == node:
            self.started[run_id] = (node, time.perf_counter())

    async def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Count a node run's seconds."""
        if run_id in self.started:
            node, started = self.started.pop(run_id)
            self.spent[run_id] = (node, time.perf_counter() - started)

    async def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A failed node run took its time too."""
        await self.on_chain_end(None, run_id=run_id)

    def seconds(self) -> dict[str, float]:
        """Seconds per node in the order nodes first ran; subgraphs left out (their inner nodes count)."""
        containers = set()
        for run_id in self.spent:
            parent = self.parents.get(run_id)
            while parent is not None:
                if parent in self.spent:
                    containers.add(parent)
                parent = self.parents.get(parent)
        totals: dict[str, float] = {}
        for run_id, (node, spent) in self.spent.items():
            if run_id not in containers:
                totals[node] = totals.get(node, 0.0) + spent
        return totals


def stage_rows(usage: dict[str, dict], seconds: dict[str, float]) -> dict[str, dict[str, float]]:
    """Calls, tokens and seconds per stage (timed stages first, in the order they ran)."""
    stages: dict[str, dict[str, float]] = {}
    for stage in dict.fromkeys([*seconds, *usage]):
        spent = usage.get(stage, {})
        stages[stage] = {
            "calls": int(spent.get("calls", 0)),
            "input_tokens": int(spent.get("input_tokens", 0)),
            "output_tokens": int(spent.get("output_tokens", 0)),
            "seconds": round(seconds.get(stage, 0.0), 4),
        }
    return stages
