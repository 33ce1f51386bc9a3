"""threshold: a per-query cut from the score distribution; every chunk records why it was kept or dropped.

The rule itself (citewise.core.evidence.threshold) is shared with the critic, which re-judges the chunks
near the provisional cut. Whether a pass that kept nothing goes back to rewrite is the graph's decision
(graph/evidence.py), read from what this step records.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core.evidence import judge_all, may_bridge, paragraph_texts
from citewise.core.indexes import in_thread, open_index
from citewise.state import EvidenceRecord, EvidenceState


async def threshold(state: EvidenceState, runtime: Runtime[Context]) -> dict:
    """Decide which chunks pass, recording each chunk's final score, verdict and reason."""
    context = runtime.context
    records = list(state.get("candidates", {}).values())
    cut, updates = judge_all(records, context)
    if may_bridge(records, updates, context):  # the local bridge rule reads what the kept paragraphs name
        kept = [r for r in records if updates[r["chunk_id"]]["kept"]]
        paragraphs = await in_thread(paragraph_texts, await open_index(context), kept)
        cut, updates = judge_all(records, context, paragraphs)
    judged: list[EvidenceRecord] = [{**r, **updates[r["chunk_id"]]} for r in records]
    evidence = sorted(judged, key=lambda r: (-r["final"], r["chunk_id"]))
    return {"candidates": updates, "threshold": cut, "evidence": evidence}
