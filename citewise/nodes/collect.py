"""collect: the join after a wave of report sections; a failed branch is recorded in its section's place.

Sections finish in any order and arrive through the idempotent `merge_sections` reducer; the join puts them
back in outline order. A branch that raised is recorded by `section_failed` (the section node's error
handler), so one failing section costs only itself: the others' results stand and the join still runs.
"""

from __future__ import annotations

from langgraph.errors import NodeError
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from citewise.context import Context
from citewise.core.evidence import failed_note
from citewise.models import degradation
from citewise.state import SectionInput, State


def in_outline_order(state: State) -> dict:
    """The sections received so far, keyed by id, in outline order (unplanned ids last)."""
    sections = state.get("sections", {})
    order = [s["id"] for s in state.get("outline", []) if s["id"] in sections]
    order += [section_id for section_id in sections if section_id not in order]
    return {section_id: sections[section_id] for section_id in order}


async def collect(state: State, runtime: Runtime[Context]) -> dict:
    """Decide the order of the sections written so far: the outline's."""
    return {"sections": Overwrite(in_outline_order(state))}


async def section_failed(state: SectionInput, error: NodeError) -> dict:
    """Record a failed section branch in its place, with the reason, so the report goes on without it.

    The run's `degraded` list names it too: the report stands without that section's findings.
    """
    section = state["section"]
    reason = f"{type(error.error).__name__}: {error.error}"
    lost = degradation(
        "section", f"section {section['title']!r} failed ({reason}): the report goes on without it", []
    )
    return {
        "degraded": [lost],
        "sections": {
            section["id"]: {
                "id": section["id"],
                "title": section["title"],
                "status": "failed",
                "error": reason,
                "text": failed_note(reason),
                "labels": {},
                "kept": [],
                "evidence": [],
            }
        },
    }
