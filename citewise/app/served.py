"""The graphs a LangGraph server serves (langgraph.json points here), with the server's one set of resources.

A served run's Context comes from the client as JSON (the form LangGraph Studio draws from its schema), so it
cannot carry the index, the models and the embedder. The graphs served here take their runs' Context as
`ServedContext`: the same settings and the same JSON schema (`resources` is left out of it, so no client can
set it, and LangGraph's server drops keys the schema lacks), with the server's `RESOURCES` as the default
of `resources`. Every run of the process, of either graph, shares them: the index opened once, the
embedding model loaded once, the models built once per event loop and settings.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import ConfigDict
from pydantic.json_schema import SkipJsonSchema

from citewise.app.access import AccessError, ask_detail, change_detail
from citewise.app.served_auth import served_gate
from citewise.context import Context
from citewise.core.resources import Resources
from citewise.graph.index import graph as index_graph
from citewise.graph.query import graph as query_graph

logger = logging.getLogger(__name__)

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
        identity = _caller()
        if not identity:
            return ()
        gate = served_gate()
        if identity == gate.local_user:
            return None
        if gate.store is None:
            return ()
        return await asyncio.to_thread(gate.store.collections_of, identity)

    async def writable(self, remove: bool = False) -> str | None:
        """Where the caller's uploads go: the first collection (by name) they may write.

        None for the local user (the administrator). Removal through a served graph is the administrator's.

        Raises:
            PermissionError: the caller may write no collection, or asks to remove as another user.
        """
        identity = _caller()
        gate = served_gate()
        if identity and identity == gate.local_user:
            return None
        if remove:
            raise PermissionError(
                "removing documents is the administrator's: `citewise remove` on the server"
            )
        writable = (
            ()
            if gate.store is None or not identity
            else await asyncio.to_thread(gate.store.collections_of, identity, "write")
        )
        if not writable:
            raise PermissionError(
                f"{identity or 'this caller'} may not add documents: an administrator grants it with "
                f"`citewise users grant {identity or 'NAME'} --write COLLECTION`"
            )
        return writable[0]

    def log(self, action: str, run: Mapping[str, Any]) -> None:
        """Append what the run did to the server's audit log as its caller's (the API's, the CLI's shapes).

        An ask when the turn ends (answered or failed), with the documents it cited; an ingest or removal
        through the index graph that changed something. A log that cannot be written (a standby's) is
        logged; the run's reply stands.
        """
        identity, gate = _caller(), served_gate()
        if not identity or gate.store is None:
            return
        if action == "ask":
            detail = ask_detail(_thread_id(), run) | {"via": "langgraph"}
        else:
            report = run.get("report") or {}
            if not (report.get("documents_added") or report.get("documents_removed")):
                return  # nothing changed, as the command line leaves it out
            detail = change_detail(run["paths"], "langgraph", report, run.get("collection"))
        try:
            gate.store.record(action, identity, detail)
        except AccessError as error:
            logger.warning("not written to the audit log: %s", error)


def _thread_id() -> str | None:
    """The thread of the run in progress (None outside a run, or for a run without a thread)."""
    from langgraph.config import get_config

    try:
        thread = get_config().get("configurable", {}).get("thread_id")
    except RuntimeError:
        return None
    return str(thread) if thread else None


def _caller() -> str | None:
    """The authenticated user of the run in progress (LangGraph's auth user); None outside a run."""
    from langgraph.config import get_config

    try:
        user = get_config().get("configurable", {}).get("langgraph_auth_user")
    except RuntimeError:  # not inside a run
        return None
    identity = getattr(user, "identity", None)
    if identity is None and isinstance(user, dict):
        identity = user.get("identity")
    return str(identity) if identity else None


graph = query_graph.copy(update={"context_schema": ServedContext})
"""The query graph as served."""

index = index_graph.copy(update={"context_schema": ServedContext})
"""The index graph as served (it drops the server's open index after ingesting, so the next run reopens)."""
