"""reflect: self-reflection revisits each relevance score with a one-line justification (ChunkRAG).

A chunk the reply lists more than once keeps its first item; a chunk it leaves out keeps its relevance score,
flagged "reflection missing". A batch the judge fails (a transient provider fault after the retries, or
output malformed after repairs) keeps its relevance scores and is listed in `degraded`; a refused key or a
rejected request ends the run.
"""

from __future__ import annotations

import asyncio
import logging

from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core import llms
from citewise.core.evidence import batches, labelled
from citewise.core.judge import ask as judge_ask
from citewise.core.judge import by_label, fell_back
from citewise.prompts.common import DATA_RULE, quote, render
from citewise.state import Degraded, EvidenceRecord, EvidenceState, Reflections

logger = logging.getLogger(__name__)

SKIPPED = "reflection skipped (local mode)"
KEPT = "relevance scores kept unreflected"
"""What a batch the judge could not reflect on keeps (recorded in `degraded`)."""


async def _reflect_batch(
    judge, batch: list[EvidenceRecord], question: str, context: Context
) -> tuple[dict[str, EvidenceRecord], list[Degraded]]:
    """The batch's reflected scores, and the fallback taken when the judge failed it (if it did)."""
    labels, evidence = labelled(batch, score="relevance_mean")
    prompt = render(
        context.reflect_prompt,
        labels=", ".join(labels),
        data_rule=DATA_RULE,
        question=quote("question", question),
        evidence=evidence,
    )
    updates: dict[str, EvidenceRecord] = {
        r["chunk_id"]: {"reflection": None, "flags": [*r.get("flags", []), "reflection missing"]}
        for r in batch
    }
    verdicts = await judge_ask(judge, Reflections, prompt, stage="reflect")
    if verdicts.first is None:
        return updates, fell_back("reflect", verdicts.failure, KEPT, list(updates))
    for chunk_id, item in by_label(verdicts.first.items, labels, lambda item: item.id).items():
        updates[chunk_id] = {"reflection": float(item.score), "reflection_note": item.justification.strip()}
    return updates, []


async def reflect(state: EvidenceState, runtime: Runtime[Context]) -> dict:
    """Decide each chunk's reflected score and the one line that justifies it."""
    context = runtime.context
    records = list(state.get("candidates", {}).values())
    judge, _ = llms.models(context, "reflect")
    if judge is None:
        return {
            "candidates": {r["chunk_id"]: {"reflection": None, "reflection_note": SKIPPED} for r in records}
        }
    results = await asyncio.gather(
        *(
            _reflect_batch(judge, b, state["question"], context)
            for b in batches(records, context.score_batch_size)
        )
    )
    degraded = [entry for _, entries in results for entry in entries]
    update = {"candidates": {k: v for r, _ in results for k, v in r.items()}}
    return {**update, "degraded": degraded} if degraded else update
