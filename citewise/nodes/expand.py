"""expand: kept chunks -> their paragraphs and documents, with graded summaries by score band.

ScoreRAG maps chunks back to the full source and summarises it at a length that follows its score;
LLM-Ref keeps the paragraph as the unit of context. A chunk's context here is its paragraph (the
hierarchy the index keeps). With a model, one request summarises every kept paragraph at its band's
length; in local mode the summary is extractive: the paragraph's sentences closest to the question, as many
as the band allows (LEAN_SENTENCES at most under the lean profile), in reading order. When the summary
request fails (a transient provider fault after the retries, or output malformed after repairs) the
paragraphs themselves are the context, listed in `degraded`.
"""

from __future__ import annotations

import logging

from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core import llms
from citewise.core.evidence import kept_records, paragraph_texts
from citewise.core.indexes import in_thread, open_index
from citewise.core.judge import ask as judge_ask
from citewise.core.judge import by_label, fell_back
from citewise.core.writing import extractive_summary
from citewise.prompts.common import DATA_RULE, quote, render
from citewise.prompts.expand import band
from citewise.state import SectionState, State, Summaries

logger = logging.getLogger(__name__)

LEAN_SENTENCES = 2
"""Sentences of a kept chunk's paragraph a lean writer gets as its context, at most (six for the best band:
most of a lean answer's prompt, bench/realmodel.py)."""
PARAGRAPHS = "the paragraphs themselves are the context"
"""What the writer sees when the summaries failed (recorded in `degraded`)."""


async def expand(state: State | SectionState, runtime: Runtime[Context]) -> dict:
    """Decide the context each kept chunk brings: its paragraph, summarised at its band's length."""
    context = runtime.context
    by_id = {r["chunk_id"]: r for r in state.get("evidence", [])}
    kept = kept_records(state)
    if not kept:
        return {"summaries": {}}
    index = await open_index(context)
    texts = await in_thread(paragraph_texts, index, kept)
    judge, _ = llms.models(context, "expand")
    if judge is None:
        summaries = {}
        for record in kept:
            count, _ = band(record.get("final", 0.0))
            if context.lean:  # a small model on a CPU: the prompt is most of the wait
                count = min(count, LEAN_SENTENCES)
            summaries[record["chunk_id"]] = await in_thread(
                extractive_summary, index, state["question"], texts[record["chunk_id"]], count
            )
        return {"summaries": summaries}
    labels = {f"E{n}": r["chunk_id"] for n, r in enumerate(kept, start=1)}
    blocks = "\n".join(
        quote(
            "evidence",
            texts[chunk_id],
            id=label,
            title=by_id[chunk_id].get("title", ""),
            length=band(by_id[chunk_id].get("final", 0.0))[1],
        )
        for label, chunk_id in labels.items()
    )
    prompt = render(
        context.summary_prompt,
        labels=", ".join(labels),
        data_rule=DATA_RULE,
        question=quote("question", state["question"]),
        evidence=blocks,
    )
    summaries = {chunk_id: texts[chunk_id] for chunk_id in labels.values()}
    verdicts = await judge_ask(judge, Summaries, prompt, stage="expand")
    if verdicts.first is None:
        return {
            "summaries": summaries,
            "degraded": fell_back("expand", verdicts.failure, PARAGRAPHS, list(labels.values())),
        }
    written = [item for item in verdicts.first.items if item.summary.strip()]
    for chunk_id, item in by_label(written, labels, lambda item: item.id).items():
        summaries[chunk_id] = item.summary.strip()
    return {"summaries": summaries}
