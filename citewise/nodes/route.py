"""route: the direct cited answer or the report path (the report path plugs in here when it lands)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.state import State


async def route(state: State, runtime: Runtime[Context]) -> dict:
    """Decide the path: every question takes the direct answer until the report path lands (recorded)."""
    return {"route": "direct"}
