"""critique: a critic re-judges the borderline chunks, those near the provisional threshold.

A chunk the critic's reply lists more than once keeps its first verdict; one it leaves out keeps its score.
A batch the critic fails (a transient provider fault after the retries, or output malformed after repairs)
keeps its scores and is listed in `degraded`; a refused key or a rejected request ends the run.
"""

from __future__ import annotations

import asyncio
import logging

from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core import llms
from citewise.core.evidence import batches, context_threshold, final_score, labelled
from citewise.core.judge import ask as judge_ask
from citewise.core.judge import by_label, fell_back
from citewise.prompts.common import DATA_RULE, quote, render
from citewise.state import CriticVerdicts, Degraded, EvidenceRecord, EvidenceState

logger = logging.getLogger(__name__)

STANDS = "the reflected scores stand"
"""What a batch the critic could not judge keeps (recorded in `degraded`)."""


def borderline(records: list[EvidenceRecord], context: Context) -> list[EvidenceRecord]:
    """Chunks whose score lies within `context.borderline` of the provisional threshold."""
    scores = [final_score(r) for r in records]
    cut = context_threshold(scores, context)
    return [r for r, s in zip(records, scores, strict=True) if abs(s - cut) <= context.borderline]


async def _critique_batch(
    judge, batch: list[EvidenceRecord], question: str, context: Context
) -> tuple[dict[str, EvidenceRecord], list[Degraded]]:
    """The critic's verdicts on the batch, and the fallback taken when the critic failed it (if it did)."""
    labels, evidence = labelled(
        batch, score="reflection" if batch[0].get("reflection") is not None else "relevance_mean"
    )
    prompt = render(
        context.critique_prompt,
        labels=", ".join(labels),
        data_rule=DATA_RULE,
        question=quote("question", question),
        evidence=evidence,
    )
    verdicts = await judge_ask(judge, CriticVerdicts, prompt, stage="critique")
    if verdicts.first is None:
        failed: dict[str, EvidenceRecord] = {
            r["chunk_id"]: {"flags": [*r.get("flags", []), "critic failed"]} for r in batch
        }
        return failed, fell_back("critique", verdicts.failure, STANDS, list(failed))
    found = by_label(verdicts.first.items, labels, lambda item: item.id)
    return {
        cid: {"critic": float(item.score), "critic_note": item.reason.strip()} for cid, item in found.items()
    }, []


async def critique(state: EvidenceState, runtime: Runtime[Context]) -> dict:
    """Decide the critic's score for each borderline chunk (the others keep their reflected score)."""
    context = runtime.context
    records = list(state.get("candidates", {}).values())
    judge, _ = llms.models(context, "critique")
    if judge is None:
        return {"candidates": {r["chunk_id"]: {"critic": None} for r in records}}
    doubtful = borderline(records, context)
    if not doubtful:
        return {}
    results = await asyncio.gather(
        *(
            _critique_batch(judge, b, state["question"], context)
            for b in batches(doubtful, context.score_batch_size)
        )
    )
    degraded = [entry for _, entries in results for entry in entries]
    update = {"candidates": {k: v for r, _ in results for k, v in r.items()}}
    return {**update, "degraded": degraded} if degraded else update
