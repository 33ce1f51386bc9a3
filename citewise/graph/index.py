"""The index graph: ingest files into the index named by the Context (for Studio and the SDK)."""

from __future__ import annotations

import asyncio
from typing import Any, NotRequired

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from citewise.context import Context
from citewise.index import Index
from citewise.indexes import forget_index


class IndexInput(TypedDict):
    """Files or folders to add to (or remove from) the index."""

    paths: list[str]
    """Paths on the server's file system."""
    remove: NotRequired[bool]
    """Delete these files' documents instead of adding them."""


class IndexOutput(TypedDict):
    """What the run did and what the index holds now."""

    report: dict[str, Any]
    """Files, documents and chunks added or removed, files skipped with reasons, seconds."""
    stats: dict[str, Any]
    """Counts in each store after the run."""


class IndexState(IndexInput, IndexOutput):
    """Both."""


def _run(paths: list[str], remove: bool, context: Context) -> dict[str, Any]:
    with Index.open(context.index_dir, chroma_url=context.chroma_url) as index:
        report = index.remove(paths) if remove else index.ingest(paths)
        return {
            "report": {**report.__dict__, "skipped": [list(s) for s in report.skipped]},
            "stats": index.stats().as_dict(),
        }


async def ingest(state: IndexState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Decide nothing: add (or remove) the given files and report what changed."""
    result = await asyncio.to_thread(_run, state["paths"], state.get("remove", False), runtime.context)
    forget_index(runtime.context)  # the next run reopens (an open index would also see it on its next search)
    return result


builder = StateGraph(IndexState, input_schema=IndexInput, output_schema=IndexOutput, context_schema=Context)
builder.add_node(ingest)
builder.add_edge(START, "ingest")
builder.add_edge("ingest", END)

graph = builder.compile(name="citewise-index")
