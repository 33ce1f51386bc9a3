"""rerank: Cohere rerank when configured, else the score order; then order against lost-in-the-middle.

A rerank that fails with a transient provider fault after its retries keeps the score order (listed in
`degraded`); a refused key or a rejected request ends the run.
"""

from __future__ import annotations

import logging

from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core.evidence import BRIDGE_FLAG, edges_first
from citewise.core.resources import resources_of
from citewise.models import degradation, fault_reason, is_transient, provider_errors
from citewise.state import Degraded, EvidenceRecord, SectionState, State

logger = logging.getLogger(__name__)

__all__ = ["edges_first", "rerank"]  # edges_first lives in citewise.core.evidence, shared with accuracy


async def rerank(state: State | SectionState, runtime: Runtime[Context]) -> dict:
    """Decide which kept chunks the answer sees, and in what order."""
    context = runtime.context
    kept: list[EvidenceRecord] = [r for r in state.get("evidence", []) if r.get("kept")]
    ranked = sorted(kept, key=lambda r: (-r.get("final", 0.0), -r.get("retrieval", 0.0), r["chunk_id"]))
    flags: dict[str, list[str]] = {}
    degraded: list[Degraded] = []
    if len(ranked) > 1:
        cohere = resources_of(context).reranker(context)  # None without COHERE_API_KEY: the score order stays
        if cohere is not None:
            try:
                order = await cohere.rerank(state["question"], [r["text"] for r in ranked], top_n=len(ranked))
                ranked = [ranked[i] for i, _ in order]
            except provider_errors() as error:
                if not is_transient(error):
                    raise  # a refused key or a rejected request ends the run
                logger.warning("rerank failed, keeping the score order: %s", error)
                flags = {
                    r["chunk_id"]: [*r.get("flags", []), "rerank failed: score order kept"] for r in ranked
                }
                reason = f"{fault_reason(error)}: score order kept"
                degraded = [degradation("rerank", reason, [r["chunk_id"] for r in ranked])]
    section_limit = state.get("evidence_limit")  # a report section's (SectionState); the question's has none
    limit = section_limit if isinstance(section_limit, int) and section_limit else context.max_evidence
    bridged = [r for r in ranked if BRIDGE_FLAG in r.get("flags", [])][:limit]  # never cut: kept for the hop
    ranked = [r for r in ranked if r not in bridged]
    ranked = ranked[: limit - len(bridged)] + bridged + ranked[limit - len(bridged) :]
    beyond = f"; not shown to the writer: only the best {limit} are (max_evidence)"
    cut: dict[str, EvidenceRecord] = {
        r["chunk_id"]: {"rank": 0, "reason": f"{r.get('reason', 'kept')}{beyond}"} for r in ranked[limit:]
    }
    ordered = edges_first(ranked[:limit])
    updates: dict[str, EvidenceRecord] = {r["chunk_id"]: {"rank": n} for n, r in enumerate(ordered, start=1)}
    updates |= cut
    for chunk_id, extra in flags.items():
        updates.setdefault(chunk_id, {})["flags"] = extra
    evidence = [{**r, **updates.get(r["chunk_id"], {"rank": 0})} for r in state.get("evidence", [])]
    result = {"kept": [r["chunk_id"] for r in ordered], "evidence": evidence}
    if degraded:
        result["degraded"] = degraded
    return result
