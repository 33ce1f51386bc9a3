"""answer: the cited answer, synthesised iteratively so every call fits the context budget (LLM-Ref).

The writer sees the kept chunks under labels E1..En (in rerank order), each with the graded summary of its
paragraph. Evidence is packed into batches of at most `context_tokens`; the first batch gets the answer
prompt, each later batch refines the draft. With nothing kept, the answer says so and lists the closest
evidence instead of guessing. In local mode the answer is extractive: sentences of the kept chunks'
paragraphs chosen for what the question asks (its answer kind and terms, not topical similarity alone), the
answering one first, each cited, and the parts of the question no sentence answers named.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core import llms
from citewise.core.evidence import NO_ANSWER, evidence_blocks, kept_records
from citewise.core.indexes import in_thread, open_index
from citewise.core.report import LABEL
from citewise.core.writing import extractive_answer, local_follow_up, no_answer, prompt_pair, synthesize
from citewise.prompts import answer as prompts
from citewise.prompts.common import quote
from citewise.state import State

LEAN_PASSAGES = 4
"""Kept passages a lean writer is shown at most: the ones local mode's answer quotes first. On a CPU the
prompt is most of the wait (ten passages were 1,341-1,620 prompt tokens of an answer, bench/realmodel.py)."""


async def answering_documents(context: Context, question: str, kept: list) -> list:
    """Under the lean profile, the kept chunks of the documents local mode's answer would cite, a few.

    A small writer draws sentences from every passage it is shown, and the lexical check stands them when
    they paraphrase any of them: SmolLM2's answers cited a non-gold abstract beside the gold one (citation
    precision by document 0.72 against local mode's 0.93). Shown only the documents local answering picks,
    it cites no more documents than local mode would; when local answering picks none, the first kept chunks
    stay. At most LEAN_PASSAGES, the ones local mode quotes first: the writer sees what verification holds its
    answer against (an answer that does not rest on every line local mode quotes gives way to local mode's).
    """
    index = await open_index(context)
    draft, labels = await in_thread(extractive_answer, index, question, kept)
    chosen = {labels[label] for label in LABEL.findall(draft) if label in labels}
    if draft == NO_ANSWER or not chosen:
        return kept[:LEAN_PASSAGES]
    documents = {r.get("doc_id") for r in kept if r["chunk_id"] in chosen}
    ordered = [r for r in kept if r["chunk_id"] in chosen] + [
        r for r in kept if r["chunk_id"] not in chosen and r.get("doc_id") in documents
    ]
    return ordered[:LEAN_PASSAGES]


async def answer(state: State, runtime: Runtime[Context]) -> dict:
    """Decide the answer text, citing evidence labels."""
    context = runtime.context
    kept = kept_records(state)
    if not kept:
        draft, labels = no_answer(state)
        return {"draft": draft, "labels": labels}
    _, writer = llms.models(context)
    if writer is None:
        index = await open_index(context)
        follow = local_follow_up(state)
        question, earlier = (follow[0], follow[1:]) if follow else (state["question"], None)
        draft, labels = await in_thread(extractive_answer, index, question, kept, earlier)
        if draft == NO_ANSWER:  # the kept passages hold nothing that answers: list them as not answering
            draft, labels = no_answer(state)
        return {"draft": draft, "labels": labels}
    if context.lean:
        kept = await answering_documents(context, state["question"], kept)
    blocks = evidence_blocks(kept, state.get("summaries", {}))
    template = context.answer_prompt
    if context.lean and template == prompts.PROMPT:  # local mode's rule decided that the documents answer
        template = prompts.LEAN_PROMPT
    asked = quote("question", state["question"])
    first, refine = prompt_pair(template, context.refine_prompt, question=asked)
    draft = await synthesize(
        writer,
        blocks,
        context.context_tokens,
        first,
        refine,
        stage="answer",
        stream=True,
        max_groups=1 if context.lean else None,
    )
    return {
        "draft": draft,
        "labels": {label: chunk_id for label, chunk_id, _ in blocks},
    }
