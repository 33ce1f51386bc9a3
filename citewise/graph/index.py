"""The index graph: ingest files into the index the Context names, local or shared (Studio and the SDK)."""

from __future__ import annotations

import asyncio
from typing import Any, NotRequired

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from citewise.context import Context
from citewise.core.resources import Resources, resources_of
from citewise.deployment import DeploymentError, allowed_paths, check_settings, data_root, escapes_root
from citewise.index.loaders import iter_files


class IndexInput(TypedDict):
    """Files or folders to add to (or remove from) the index."""

    paths: list[str]
    """Paths on the server's file system (served: under CITEWISE_DATA_ROOT; relative ones taken from it)."""
    remove: NotRequired[bool]
    """Delete these files' documents instead of adding them."""


class IndexOutput(TypedDict):
    """What the run did and what the index holds now."""

    report: dict[str, Any]
    """Files, documents and chunks added or removed, files skipped with reasons, seconds."""
    stats: dict[str, Any]
    """Counts in each store after the run (the administrator's; empty for a user's run)."""
    error: NotRequired[str | None]
    """Why nothing was read (a path outside the data root, a setting only the server decides); else None."""


class IndexState(IndexInput, IndexOutput):
    """Both."""


def _run(
    paths: list[str], remove: bool, context: Context, resources: Resources, collection: str | None = None
) -> dict[str, Any]:
    """Ingest or remove: the report, and what the index holds.

    The counts are the administrator's (whose `collection` is None) alone: a user's would include
    collections they may not read.
    """
    check_settings(context)
    allowed = allowed_paths(paths)
    files, escaping = allowed, []
    if not remove and data_root() is not None:  # a symlink inside an allowed folder may lead out of the root
        found = [(f, escapes_root(f)) for f in iter_files(allowed)]
        files = [f for f, escapes in found if not escapes]
        escaping = [f for f, escapes in found if escapes]
    with resources.writer(context) as index:  # the shared store when the run names one: where runs read
        report = index.remove(files) if remove else index.ingest(files, collection=collection)
        report.skipped.extend((str(f), "a symlink leading outside the data root") for f in escaping)
        return {
            "report": {**report.__dict__, "skipped": [list(s) for s in report.skipped]},
            "stats": index.stats().as_dict() if collection is None else {},
            "error": None,
        }


async def ingest(state: IndexState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Decide nothing: add (or remove) the given files and report what changed."""
    resources = resources_of(runtime.context)
    try:
        paths, remove = state["paths"], state.get("remove", False)
        collection = await runtime.context.writable(remove)  # the caller's, on a served graph
        result = await asyncio.to_thread(_run, paths, remove, runtime.context, resources, collection)
    except (DeploymentError, PermissionError) as refused:
        return {"report": {}, "stats": {}, "error": str(refused)}
    given = [str(p) for p in allowed_paths(paths)]
    change = {"paths": given, "report": result["report"], "collection": collection}
    await asyncio.to_thread(runtime.context.log, "remove" if remove else "ingest", change)  # served: audited
    resources.forget_index(
        runtime.context
    )  # the next run reopens (an open one would see it at its next search)
    return result


builder = StateGraph(IndexState, input_schema=IndexInput, output_schema=IndexOutput, context_schema=Context)
builder.add_node(ingest)
builder.add_edge(START, "ingest")
builder.add_edge("ingest", END)

graph = builder.compile(name="citewise-index")
