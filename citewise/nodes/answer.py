"""answer: the cited answer, synthesised iteratively so every call fits the context budget (LLM-Ref).

The writer sees the kept chunks under labels E1..En (in rerank order), each with the graded summary of its
paragraph. Evidence is packed into batches of at most `context_tokens`; the first batch gets the answer
prompt, each later batch refines the draft. With nothing kept, the answer says so and lists the closest
evidence instead of guessing. In local mode the answer is extractive: the kept evidence's sentences closest
to the question, each cited.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.index import Index
from citewise.index.fusion import drop_redundant
from citewise.nodes import llms
from citewise.nodes.shared import in_thread, open_index, sentences
from citewise.prompts.common import DATA_RULE, as_messages, quote, render
from citewise.state import EvidenceRecord, State

NO_ANSWER = "Your documents do not answer this question."
MAX_LOCAL_SENTENCES = 4
LOCAL_RELATIVE_FLOOR = 0.75


def estimate_tokens(text: str) -> int:
    """A provider-neutral token estimate (about four characters a token in English)."""
    return max(1, len(text) // 4)


def evidence_blocks(records: list[EvidenceRecord], summaries: dict[str, str]) -> list[tuple[str, str, str]]:
    """(label, chunk id, prompt block) per kept record, in the order given."""
    blocks = []
    for n, record in enumerate(records, start=1):
        label = f"E{n}"
        body = record.get("text", "")
        summary = summaries.get(record["chunk_id"], "")
        if summary and summary != body:
            body = f"{body}\n(context from the same paragraph: {summary})"
        blocks.append(
            (label, record["chunk_id"], quote("evidence", body, id=label, title=record.get("title", "")))
        )
    return blocks


def pack(blocks: list[tuple[str, str, str]], budget: int) -> list[list[tuple[str, str, str]]]:
    """Consecutive groups of blocks whose estimated tokens fit the budget (a lone oversized block alone)."""
    groups: list[list[tuple[str, str, str]]] = []
    used = 0
    for block in blocks:
        size = estimate_tokens(block[2])
        if groups and used + size <= budget:
            groups[-1].append(block)
            used += size
        else:
            groups.append([block])
            used = size
    return groups


def no_answer(state: State) -> tuple[str, dict[str, str]]:
    """The honest reply when nothing passed the threshold, with the closest evidence cited."""
    closest = sorted(state.get("evidence", []), key=lambda r: -r.get("final", 0.0))[:3]
    if not closest:
        return f"{NO_ANSWER} Nothing in the index matched it.", {}
    labels = {f"E{n}": r["chunk_id"] for n, r in enumerate(closest, start=1)}
    lines = [f"{NO_ANSWER} No passage was relevant enough to answer from; the closest were:"]
    for label, record in zip(labels, closest, strict=True):
        lines.append(f'- {record.get("title", "")}: "{_clip(record.get("text", ""))}" [{label}]')
    return "\n".join(lines), labels


def _clip(text: str, size: int = 200) -> str:
    return text if len(text) <= size else text[:size].rsplit(" ", 1)[0] + "…"


def extractive_answer(
    index: Index, question: str, records: list[EvidenceRecord]
) -> tuple[str, dict[str, str]]:
    """The kept chunks' sentences closest to the question (at most four, near-duplicates dropped), cited."""
    labels = {f"E{n}": r["chunk_id"] for n, r in enumerate(records, start=1)}
    candidates: list[tuple[str, str]] = []
    for label, record in zip(labels, records, strict=True):
        candidates.extend((label, s) for s in sentences(record.get("text", "")) if len(s) > 20)
    if not candidates:
        return NO_ANSWER, {}
    vectors = index.embedder.embed([question, *(s for _, s in candidates)])
    similarity = vectors[1:] @ vectors[0]
    order = sorted(range(len(candidates)), key=lambda i: -similarity[i])
    best = float(similarity[order[0]])
    order = [i for i in order if similarity[i] >= LOCAL_RELATIVE_FLOOR * best]
    keys = [str(i) for i in order]
    kept = drop_redundant(keys, vectors[1:][order], 0.9)[:MAX_LOCAL_SENTENCES]
    text = " ".join(f"{candidates[int(i)][1]} [{candidates[int(i)][0]}]" for i in kept)
    return text, labels


@llms.metered
async def answer(state: State, runtime: Runtime[Context]) -> dict:
    """Decide the answer text, citing evidence labels."""
    context = runtime.context
    by_id = {r["chunk_id"]: r for r in state.get("evidence", [])}
    kept = [by_id[c] for c in state.get("kept", []) if c in by_id]
    if not kept:
        draft, labels = no_answer(state)
        return {"draft": draft, "labels": labels}
    _, writer = llms.models(context)
    if writer is None:
        index = await open_index(context)
        draft, labels = await in_thread(extractive_answer, index, state["question"], kept)
        return {"draft": draft, "labels": labels}
    blocks = evidence_blocks(kept, state.get("summaries", {}))
    question = quote("question", state["question"])
    draft = ""
    groups = pack(blocks, context.context_tokens)
    for n, group in enumerate(groups):
        evidence = "\n".join(block for _, _, block in group)
        if n == 0:
            prompt = render(context.answer_prompt, data_rule=DATA_RULE, question=question, evidence=evidence)
        else:
            prompt = render(
                context.refine_prompt,
                data_rule=DATA_RULE,
                question=question,
                draft=quote("draft", draft),
                evidence=evidence,
            )
        draft = (
            await writer.text(as_messages(prompt), stage="answer", stream=n == len(groups) - 1)
        ).strip() or draft
    return {
        "draft": draft,
        "labels": {label: chunk_id for label, chunk_id, _ in blocks},
        "usage": writer.take_usage(),
    }
