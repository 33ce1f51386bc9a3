"""approve: optional human approval of a report's outline before the sections fan out (one interrupt).

The run stops with the planned outline; it resumes with `Command(resume=...)` carrying either nothing (`None`,
`True`, "ok": approve as planned) or the edited outline: a list of sections (or {"sections": [...]}), each
{"title", and optionally "id", "goal", "queries", "documents"}. The list's order is the new order; a section
left out is dropped; one without an id is added; an id keeps the planned section's goal and queries unless the
edit gives new ones (a renamed one also searches its new title); "documents" pins document ids to the section.
The node re-runs from its start on resume, so it does nothing before the interrupt that must not happen twice.
"""

from __future__ import annotations

from typing import Any

from langgraph._internal._constants import CONFIG_KEY_CHECKPOINTER
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from citewise.context import Context
from citewise.core.indexes import in_thread, open_index
from citewise.index.reading import SearchIndex
from citewise.state import OutlineSection, State

APPROVED = (None, True, "ok", "approve", "approved", "yes")
HOW_TO_RESUME = (
    "Resume with null (approve as planned) or with the edited outline: a list of sections, each "
    '{"title": ..., "id": (keep a planned section), "goal": ..., "queries": [...], "documents": [doc ids]}; '
    "list order is the new order, a section left out is dropped."
)


class OutlineEditError(ValueError):
    """The resume value is not an outline citewise can follow."""


def edited_outline(
    reply: Any, planned: list[OutlineSection], index: SearchIndex, question: str
) -> list[OutlineSection]:
    """The outline the person sent back, validated, with ids for new sections (see the module docstring)."""
    if reply in APPROVED or reply == {}:
        return planned
    sections = reply.get("sections") if isinstance(reply, dict) else reply
    if not isinstance(sections, list) or not sections:
        raise OutlineEditError(f"the edited outline must be a non-empty list of sections; got {reply!r:.120}")
    by_id = {s["id"]: s for s in planned}
    taken = {s["id"] for s in planned}
    result: list[OutlineSection] = []
    for n, item in enumerate(sections, start=1):
        if isinstance(item, str):
            item = {"title": item}
        if not isinstance(item, dict) or not str(item.get("title", "")).strip():
            raise OutlineEditError(f"section {n} of the edited outline has no title: {item!r:.120}")
        base = by_id.get(str(item.get("id", "")), {})
        section_id = base.get("id") or _new_id(taken)
        taken.add(section_id)
        title = " ".join(str(item["title"]).split())
        documents = [str(d) for d in item.get("documents", base.get("documents", []))]
        unknown = [d for d in documents if index.document(d) is None]
        if unknown:
            raise OutlineEditError(
                f"section {n} ({title}) pins documents not in the index: {', '.join(unknown)}"
            )
        queries = [str(q) for q in item.get("queries", []) if str(q).strip()]
        if not queries:  # a planned section keeps its searches; a renamed or new one also searches its title
            queries = list(base.get("queries", []))
            if base.get("title") != title:
                queries = [f"{title} {question}", *queries][:3]
        result.append(
            {
                "id": section_id,
                "title": title,
                "goal": str(item.get("goal", base.get("goal", ""))).strip(),
                "queries": list(queries),
                "documents": documents,
                "asks": str(base.get("asks", "")) if base.get("title") == title else "",
            }
        )
    return result


def _new_id(taken: set[str]) -> str:
    n = 1
    while f"s{n}" in taken:
        n += 1
    return f"s{n}"


async def approve(state: State, runtime: Runtime[Context]) -> dict:
    """Decide the outline the sections follow: as planned, or as the person edited it."""
    if not runtime.context.approve_outline or not state.get("outline"):
        return {}
    if get_config().get("configurable", {}).get(CONFIG_KEY_CHECKPOINTER) is None:
        raise OutlineEditError(
            "outline approval needs a checkpointer to pause the run: compile the graph with one "
            "(builder.compile(checkpointer=...)), use the LangGraph server, or turn approve_outline off"
        )
    reply = interrupt(
        {"question": state["question"], "outline": state["outline"], "how_to_resume": HOW_TO_RESUME}
    )
    index = await open_index(runtime.context)
    outline = await in_thread(edited_outline, reply, state["outline"], index, state["question"])
    return {"outline": outline}
