"""Writing cited text from evidence: iterative synthesis with a model, extractive selection without one.

With a model (LLM-Ref's iterative synthesis), evidence is packed into groups that fit the context budget; the
first group gets the writing prompt, each later group refines the draft. Without one, the text is the
evidence's own sentences closest to what is asked, each cited with its label, near-duplicates dropped.
The direct answer, every report section and the report's introduction and conclusion are written this way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from citewise.evidence import NO_ANSWER, Block, pack
from citewise.index import Index
from citewise.index.fusion import drop_redundant
from citewise.prompts.common import DATA_RULE, as_messages, quote, render
from citewise.text import sentences

MAX_LOCAL_SENTENCES = 4
"""Sentences a local answer (or section) may take at most."""
LOCAL_RELATIVE_FLOOR = 0.75
"""A local sentence must reach this share of the best sentence's similarity to what is asked."""
DUPLICATE = 0.9
"""Cosine similarity above which two sentences say the same thing."""

Sentence = tuple[str, str]
"""(evidence label, sentence text)."""


async def synthesize(
    writer,  # noqa: ANN001 - citewise.models.LLM
    blocks: list[Block],
    budget: int,
    first: Callable[[str], str],
    refine: Callable[[str, str], str],
    *,
    stage: str,
    stream: bool = False,
) -> str:
    """Write over the evidence in budget-sized groups: `first(evidence)`, then `refine(draft, evidence)`."""
    draft = ""
    groups = pack(blocks, budget)
    for n, group in enumerate(groups):
        evidence = "\n".join(block for _, _, block in group)
        prompt = first(evidence) if n == 0 else refine(quote("draft", draft), evidence)
        reply = await writer.text(as_messages(prompt), stage=stage, stream=stream and n == len(groups) - 1)
        draft = reply.strip() or draft
    return draft


def prompt_pair(
    first: str, refine: str, **values: str
) -> tuple[Callable[[str], str], Callable[[str, str], str]]:
    """The first-group and refine prompts of `synthesize`, filled with the data rule and `values`."""

    def fill_first(evidence: str) -> str:
        return render(first, data_rule=DATA_RULE, evidence=evidence, **values)

    def fill_refine(draft: str, evidence: str) -> str:
        return render(refine, data_rule=DATA_RULE, draft=draft, evidence=evidence, **values)

    return fill_first, fill_refine


def candidate_sentences(labelled_texts: Sequence[tuple[str, str]], minimum: int = 20) -> list[Sentence]:
    """(label, sentence) for every sentence of every labelled text longer than `minimum` characters."""
    return [(label, s) for label, text in labelled_texts for s in sentences(text) if len(s) > minimum]


def select_sentences(
    index: Index,
    asked: str,
    candidates: list[Sentence],
    limit: int = MAX_LOCAL_SENTENCES,
    avoid: np.ndarray | None = None,
) -> tuple[list[Sentence], np.ndarray]:
    """The candidates closest to `asked` (within the relative floor), near-duplicates and `avoid` dropped.

    Returns the chosen sentences best first and their vectors (so callers can avoid them later).
    """
    if not candidates:
        return [], np.zeros((0, index.embedder.dim), dtype=np.float32)
    vectors = index.embedder.embed([asked, *(s for _, s in candidates)])
    similarity = vectors[1:] @ vectors[0]
    order = sorted(range(len(candidates)), key=lambda i: (-similarity[i], i))
    best = float(similarity[order[0]])
    order = [i for i in order if similarity[i] >= LOCAL_RELATIVE_FLOOR * best]
    if avoid is not None and len(avoid):
        order = [i for i in order if float(np.max(avoid @ vectors[1 + i])) <= DUPLICATE]
    if not order:
        return [], np.zeros((0, vectors.shape[1]), dtype=vectors.dtype)
    keys = [str(i) for i in order]
    chosen = [int(i) for i in drop_redundant(keys, vectors[1:][order], DUPLICATE)[:limit]]
    return [candidates[i] for i in chosen], vectors[[1 + i for i in chosen]]


def cite(chosen: list[Sentence], prefix: str = "") -> str:
    """Sentences joined, each followed by its label as a marker, e.g. "... [S2E1]"."""
    return " ".join(f"{text} [{prefix}{label}]" for label, text in chosen)


def extractive_summary(index: Index, asked: str, text: str, count: int) -> str:
    """The `count` sentences of `text` most similar to `asked`, in reading order."""
    parts = sentences(text)
    if len(parts) <= count:
        return " ".join(parts)
    vectors = index.embedder.embed([asked, *parts])
    similarity = vectors[1:] @ vectors[0]
    best = sorted(np.argsort(-similarity)[:count].tolist())
    return " ".join(parts[i] for i in best)


def no_answer(state: dict) -> tuple[str, dict[str, str]]:
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
