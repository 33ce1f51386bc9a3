"""The threshold rule: each chunk's final score, the per-query cut, and the verdict every chunk records.

t = max(floor, min(mean + spread * stdev, top_ratio * best)). The first term adapts to the
query: when a few chunks stand out from many weak ones, the cut lands between the groups. The cap at a
fraction of the best score keeps a uniformly strong set from being cut in half (mean + 0.5 sd of scores that
are all about 80 is above most of them). The floor (20, ScoreRAG) keeps chunks no judge found useful out, so
"nothing relevant" stays possible and triggers the corrective loop.

The threshold step (citewise.nodes.threshold) applies it; the critic (citewise.nodes.critique) re-judges
the chunks near the provisional cut it gives.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from citewise.context import Context
from citewise.core.evidence.bridges import bridges

if TYPE_CHECKING:  # annotations only: the state's module loads LangGraph (0.5 s)
    from citewise.state import EvidenceRecord


def final_score(record: EvidenceRecord) -> float:
    """The critic's score when it judged the chunk, else the reflected score, else the relevance mean."""
    for value in (record.get("critic"), record.get("reflection"), record.get("relevance_mean")):
        if value is not None:
            return float(value)
    return 0.0


def dynamic_threshold(scores: Sequence[float], floor: float, spread: float, top_ratio: float) -> float:
    """The cut for one query's final scores (see the module docstring)."""
    if not scores:
        return floor
    mean = statistics.fmean(scores)
    deviation = statistics.pstdev(scores) if len(scores) > 1 else 0.0
    return round(max(floor, min(mean + spread * deviation, top_ratio * max(scores))), 1)


def context_threshold(scores: Sequence[float], context: Context) -> float:
    """`dynamic_threshold` with the run's settings."""
    return dynamic_threshold(
        scores, context.threshold_floor, context.threshold_spread, context.threshold_top_ratio
    )


def shared_threshold(evidence: Sequence[EvidenceRecord], threshold: float | None) -> float | None:
    """The one threshold every row was judged against, or None for rows with cuts of their own.

    `threshold` stands for rows that record none; a report's sections each judge with their own cut.
    """
    if not evidence:
        return threshold
    cuts = {record.get("threshold", threshold) for record in evidence}
    return next(iter(cuts)) if len(cuts) == 1 else None


def threshold_text(evidence: Sequence[EvidenceRecord], threshold: float | None) -> str:
    """How the evidence views name the cut: "threshold 54.2", or one per pass for a report's sections."""
    shared = shared_threshold(evidence, threshold)
    if isinstance(shared, int | float):
        return f"threshold {shared:g}"
    return "no threshold" if not evidence else "each pass its own threshold"


def judge_all(
    records: Sequence[EvidenceRecord], context: Context, paragraphs: Mapping[str, str] | None = None
) -> tuple[float, dict[str, EvidenceRecord]]:
    """Apply the threshold: the cut and, per chunk, final score, verdict and reason.

    In local mode nothing is kept when no candidate's answering score (citewise.core.answerable) reaches
    Context.local_answerable: the documents are taken not to answer the question. `paragraphs` (chunk id ->
    its paragraph's text) let the local bridge rule read what the best kept passage's paragraph names.
    """
    finals = {r["chunk_id"]: round(final_score(r), 1) for r in records}  # as shown: 0.1 apart
    cut = context_threshold(list(finals.values()), context)
    answering = [r["answering"] for r in records if r.get("answering") is not None]
    unanswered = bool(answering) and max(answering) < context.local_answerable
    if unanswered and finals:  # the cut shown is the one applied: above every passage
        cut = max(cut, math.floor(max(finals.values()) * 10 + 1) / 10)
    updates: dict[str, EvidenceRecord] = {}
    for chunk_id, value in finals.items():
        kept = value >= cut
        if unanswered:
            reason = (
                f"dropped: no passage answers the question (best answering score {max(answering):.2f} < "
                f"{context.local_answerable:g}), so the threshold {cut:g} is above every passage"
            )
        elif kept:
            reason = f"kept: final {value:g} >= threshold {cut:g}"
        elif value < context.threshold_floor:
            reason = f"dropped: final {value:g} below the floor {context.threshold_floor:g}"
        else:
            reason = f"dropped: final {value:g} < threshold {cut:g}"
        updates[chunk_id] = {"final": value, "kept": kept, "reason": reason, "threshold": cut}
    if not context.llm and not unanswered and context.second_hop:
        updates |= bridges(records, updates, context, paragraphs or {}, cut)
    return cut, updates
