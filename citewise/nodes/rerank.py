"""rerank: Cohere rerank when configured, else the score order; then order against lost-in-the-middle."""

from __future__ import annotations

import logging
import os

from langgraph.runtime import Runtime

from citewise import llms
from citewise.context import Context
from citewise.evidence import edges_first
from citewise.state import EvidenceRecord, SectionState, State

logger = logging.getLogger(__name__)

__all__ = ["edges_first", "rerank"]  # edges_first lives in citewise.evidence, shared with accuracy


@llms.metered
async def rerank(state: State | SectionState, runtime: Runtime[Context]) -> dict:
    """Decide which kept chunks the answer sees, and in what order."""
    context = runtime.context
    kept: list[EvidenceRecord] = [r for r in state.get("evidence", []) if r.get("kept")]
    ranked = sorted(kept, key=lambda r: (-r.get("final", 0.0), -r.get("retrieval", 0.0), r["chunk_id"]))
    flags: dict[str, list[str]] = {}
    usage: dict = {}
    if len(ranked) > 1 and os.environ.get("COHERE_API_KEY"):
        from citewise.models import reranker

        cohere = reranker(context)
        if cohere is not None:
            try:
                order = await cohere.rerank(state["question"], [r["text"] for r in ranked], top_n=len(ranked))
                ranked = [ranked[i] for i, _ in order]
            except Exception as error:  # noqa: BLE001 - rerank is an improvement, not a requirement
                logger.warning("rerank failed, keeping the score order: %s", error)
                flags = {
                    r["chunk_id"]: [*r.get("flags", []), "rerank failed: score order kept"] for r in ranked
                }
            usage = cohere.take_usage()
    limit = state.get("evidence_limit") or context.max_evidence
    beyond = f"; not shown to the writer: only the best {limit} are (max_evidence)"
    cut = {r["chunk_id"]: {"rank": 0, "reason": f"{r.get('reason', 'kept')}{beyond}"} for r in ranked[limit:]}
    ordered = edges_first(ranked[:limit])
    updates = {r["chunk_id"]: {"rank": n} for n, r in enumerate(ordered, start=1)} | cut
    for chunk_id, extra in flags.items():
        updates.setdefault(chunk_id, {})["flags"] = extra
    evidence = [{**r, **updates.get(r["chunk_id"], {"rank": 0})} for r in state.get("evidence", [])]
    result = {"kept": [r["chunk_id"] for r in ordered], "evidence": evidence}
    return {**result, "usage": usage} if usage else result
