"""The graphs a LangGraph server serves (langgraph.json points here), with the server's one set of resources.

A served run's Context comes from the client as JSON (the form LangGraph Studio draws from its schema), so it
cannot carry the index, the models and the embedder. The graphs served here take their runs' Context as
`ServedContext`: the same settings and the same JSON schema (`resources` is left out of it, so no client can
set it, and LangGraph's server drops keys the schema lacks), with the server's `RESOURCES` as the default
of `resources`. Every run of the process, of either graph, shares them: the index opened once, the
embedding model loaded once, the models built once per event loop and settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import ConfigDict
from pydantic.json_schema import SkipJsonSchema

from citewise.context import Context
from citewise.core.resources import Resources
from citewise.graph.index import graph as index_graph
from citewise.graph.query import graph as query_graph

RESOURCES = Resources()
"""The server's index, chat models, embedder, reranker and outline centroids (each made at first use)."""


def _served() -> Resources:
    return RESOURCES


@dataclass(kw_only=True)
class ServedContext(Context):
    """The Context of a served run: the client's settings, and the server's resources."""

    # Studio's form keeps the Context's name and description: its schema is the Context's, field for field
    __pydantic_config__ = ConfigDict(title="Context", json_schema_extra={"description": Context.__doc__})

    resources: Annotated[Any, SkipJsonSchema()] = field(
        default_factory=_served,
        repr=False,
        compare=False,
        metadata={
            "description": "The server's resources (RESOURCES); not in the schema, so never a client's."
        },
    )

    async def readable(self) -> tuple[str, ...] | None:
        """What the run's caller may read: their grants, read afresh (LangGraph's auth user of the run).

        A run without an authenticated user (none is configured) reads nothing.
        """
        import asyncio

        from langgraph.config import get_config

        from citewise.app.served_auth import served_gate

        try:
            user = get_config().get("configurable", {}).get("langgraph_auth_user")
        except RuntimeError:  # not inside a run
            return ()
        identity = getattr(user, "identity", None)
        if identity is None and isinstance(user, dict):
            identity = user.get("identity")
        if not identity:
            return ()
        gate = served_gate()
        if identity == gate.local_user:
            return None
        if gate.store is None:
            return ()
        return await asyncio.to_thread(gate.store.collections_of, str(identity))


graph = query_graph.copy(update={"context_schema": ServedContext})
"""The query graph as served."""

index = index_graph.copy(update={"context_schema": ServedContext})
"""The index graph as served (it drops the server's open index after ingesting, so the next run reopens)."""
