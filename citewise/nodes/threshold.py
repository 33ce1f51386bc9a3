"""threshold: a per-query cut from the score distribution; every chunk records why it was kept or dropped.

The rule: t = max(floor, min(mean + spread * stdev, top_ratio * best)). The first term adapts to the query:
when a few chunks stand out from many weak ones, the cut lands between the groups. The cap at a fraction of
the best score keeps a uniformly strong set from being cut in half (mean + 0.5 sd of scores that are all
about 80 is above most of them). The floor (20, ScoreRAG) keeps chunks no judge found useful out, so
"nothing relevant" stays possible and triggers the corrective loop.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from citewise.context import Context
from citewise.state import EvidenceRecord, State


def dynamic_threshold(scores: Sequence[float], floor: float, spread: float, top_ratio: float) -> float:
    """The cut for one query's final scores (see the module docstring)."""
    if not scores:
        return floor
    mean = statistics.fmean(scores)
    deviation = statistics.pstdev(scores) if len(scores) > 1 else 0.0
    return round(max(floor, min(mean + spread * deviation, top_ratio * max(scores))), 1)


def final_score(record: EvidenceRecord) -> float:
    """The critic's score when it judged the chunk, else the reflected score, else the relevance mean."""
    for key in ("critic", "reflection", "relevance_mean"):
        value = record.get(key)
        if value is not None:
            return float(value)
    return 0.0


def judge_all(records: Sequence[EvidenceRecord], context: Context) -> tuple[float, dict[str, EvidenceRecord]]:
    """Apply the threshold: the cut and, per chunk, final score, verdict and reason."""
    finals = {r["chunk_id"]: final_score(r) for r in records}
    cut = dynamic_threshold(
        list(finals.values()), context.threshold_floor, context.threshold_spread, context.threshold_top_ratio
    )
    updates: dict[str, EvidenceRecord] = {}
    for chunk_id, value in finals.items():
        kept = value >= cut
        if kept:
            reason = f"kept: final {value:g} >= threshold {cut:g}"
        elif value < context.threshold_floor:
            reason = f"dropped: final {value:g} below the floor {context.threshold_floor:g}"
        else:
            reason = f"dropped: final {value:g} < threshold {cut:g}"
        updates[chunk_id] = {"final": value, "kept": kept, "reason": reason}
    return cut, updates


async def threshold(state: State, runtime: Runtime[Context]) -> Command[Literal["rewrite", "rerank"]]:
    """Decide which chunks pass, and whether to go back and rewrite when none does."""
    context = runtime.context
    records = list(state.get("candidates", {}).values())
    cut, updates = judge_all(records, context)
    evidence = sorted(
        ({**r, **updates[r["chunk_id"]]} for r in records), key=lambda r: (-r["final"], r["chunk_id"])
    )
    kept_any = any(r["kept"] for r in evidence)
    update = {"candidates": updates, "threshold": cut, "evidence": evidence}
    if not kept_any and state.get("attempt", 0) <= context.max_rewrites:
        best = evidence[0]["final"] if evidence else 0.0
        update["feedback"] = f"no chunk reached the threshold {cut:g} (best {best:g})"
        return Command(goto="rewrite", update=update)
    return Command(goto="rerank", update=update)
