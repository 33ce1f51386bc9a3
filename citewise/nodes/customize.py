"""customize: SynthRAG customization: sections merged, de-duplicated, framed, condensed, styled, checked.

With a model, the writer merges the sections in outline order under their headings, removes what another
section already says, adds an introduction and a conclusion, condenses to the length budget and follows the
style of exemplar answers (shipped defaults, or Context `style_exemplars`). Every draft is then validated
(citewise.core.report.validate); the graph sends a failed draft back here with its problems as feedback, at
most `max_customize_attempts` times, and the best draft goes on with its remaining problems listed, unless
local mode's merge of the same sections passes more checks: then that merge goes on (never worse than no
model), and `degraded` says so.

In local mode the merge is deterministic: sections in outline order, a sentence dropped when an earlier one
of the report says the same (cosine > 0.9), an extractive introduction (the question's own best evidence)
and conclusion (the sections' evidence sentences nearest what the sections say, findings first), then
condensed by dropping each longest section's last sentences until the budget holds. Validation runs all
the same.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core import llms
from citewise.core.evidence import kept_records, paragraph_texts
from citewise.core.indexes import in_thread, open_index
from citewise.core.questions import FINDING
from citewise.core.report import (
    assemble,
    cited_sentences,
    in_focus,
    load_exemplars,
    render_sentences,
    validate,
    words,
)
from citewise.core.writing import (
    DUPLICATE,
    Sentence,
    answering_sentences,
    candidate_sentences,
    no_answer,
    select_sentences,
)
from citewise.index.fusion import drop_redundant
from citewise.index.reading import SearchIndex
from citewise.models import degradation
from citewise.prompts.common import DATA_RULE, as_messages, quote, render
from citewise.state import EvidenceRecord, SectionResult, State, Validation

logger = logging.getLogger(__name__)

INTRO_SENTENCES = 2
CONCLUSION_SENTENCES = 2
INTRO_PREFIX = "S0"
"""Labels of the introduction's evidence (the question's own pass): S0E1, S0E2, ..."""

Cited = tuple[str, list[str]]


def planned_sections(state: State) -> list[SectionResult]:
    """The section results in outline order (a planned section that never reported is skipped)."""
    results = state.get("sections", {})
    return [results[s["id"]] for s in state.get("outline", []) if s["id"] in results]


def report_evidence(state: State, sections: list[SectionResult]) -> list[EvidenceRecord]:
    """The question's own candidates and every section's, one record per chunk, best first.

    A chunk judged in several passes shows the first pass that kept it (else the first that judged it): a
    passage a section cites is never shown as dropped by another pass. Each record keeps its own pass's
    threshold, so it is kept exactly when its final score reaches the threshold it shows.
    """
    records: dict[str, EvidenceRecord] = {}
    for record in [*state.get("evidence", []), *(r for s in sections for r in s.get("evidence", []))]:
        seen = records.get(record["chunk_id"])
        if seen is None or (record.get("kept") and not seen.get("kept")):
            records[record["chunk_id"]] = record
    return sorted(records.values(), key=lambda r: (-r.get("final", 0.0), r["chunk_id"]))


def _deduplicated(
    index: SearchIndex, bodies: list[list[Cited]], seen: np.ndarray
) -> tuple[list[list[Cited]], np.ndarray]:
    """Each body without the sentences an earlier part of the report says (empty: it says nothing else)."""
    flat = [sentence for body in bodies for sentence, _ in body]
    if not flat:
        return bodies, seen
    vectors = index.embedder.embed(flat)
    kept_bodies: list[list[Cited]] = []
    position = 0
    for body in bodies:
        kept: list[Cited] = []
        for item in body:
            vector = vectors[position]
            position += 1
            if len(seen) and float(np.max(seen @ vector)) > DUPLICATE:
                continue
            kept.append(item)
            seen = np.vstack([seen, vector[None, :]]) if len(seen) else vector[None, :]
        kept_bodies.append(kept)
    return kept_bodies, seen


def _refilled(
    index: SearchIndex,
    intro: list[Cited],
    bodies: list[list[Cited]],
    written: list[list[Cited]],
    pools: list[list[tuple[str, str]]],
    asks: list[str],
    seen: np.ndarray,
) -> tuple[list[Cited], np.ndarray]:
    """Give each section whose every sentence the report already says something of its own.

    Returns the introduction (empty once it moved) and the vectors of everything the report now says.

    The first such section takes the introduction's sentences (a one-document report, where both come from
    the same passage, opens with the section instead of saying it twice); a later one takes its best kept
    sentence nothing earlier says, else keeps its first written sentence (a repeat, which validation names).
    """
    for n, body in enumerate(bodies):
        if body or not written[n]:
            continue
        if intro:
            bodies[n], intro = list(intro), []
            continue
        candidates = candidate_sentences(pools[n])
        if candidates and len(seen):  # the best of what is left, not what is left near the best
            said = np.max(index.embedder.embed([text for _, text in candidates]) @ seen.T, axis=1)
            candidates = [
                c for c, similarity in zip(candidates, said, strict=True) if similarity <= DUPLICATE
            ]
        fresh, vectors = select_sentences(index, asks[n], candidates, limit=1)
        if fresh:
            bodies[n] = [(sentence, [label]) for label, sentence in fresh]
            seen = np.vstack([seen, vectors]) if len(seen) else vectors
        else:
            bodies[n] = written[n][:1]
    return intro, seen


def _condensed(intro: list[Cited], bodies: list[list[Cited]], conclusion: list[Cited], budget: int) -> None:
    """Drop the longest section's last sentence, then the conclusion's, then the introduction's, to budget."""

    def total() -> int:
        return sum(words(s) for part in (intro, conclusion, *bodies) for s, _ in part)

    while total() > budget:
        longest = max(bodies, key=len, default=[])
        if len(longest) > 1:
            longest.pop()
        elif conclusion:
            conclusion.pop()
        elif len(intro) > 1:
            intro.pop()
        else:
            return


FINDING_WEIGHT = 0.1
"""What stating a finding ("our results suggest", "we find", "rules out") adds to a concluding sentence."""


def concluding_sentences(
    index: SearchIndex, question: str, said: list[str], candidates: list[Sentence], seen: np.ndarray
) -> list[Sentence]:
    """The conclusion: sentences of the sections' evidence that sum up what the sections say.

    Each candidate the report does not say yet is scored by its similarity to the centre of the sections'
    sentences (what the report found) and to the question, each half, plus FINDING_WEIGHT when it states a
    finding; the best CONCLUSION_SENTENCES, no two alike. Scored against the question alone, the closing
    sentence was the question's best remaining one, often an introduction's background sentence.
    """
    if not candidates or not said:
        return []
    vectors = index.embedder.embed([question, *said, *(text for _, text in candidates)])
    centre = vectors[1 : 1 + len(said)].mean(axis=0)
    centre /= float(np.linalg.norm(centre)) or 1.0
    own = vectors[1 + len(said) :]
    scores = 0.5 * (own @ centre) + 0.5 * (own @ vectors[0])
    scores += FINDING_WEIGHT * np.array([FINDING.search(text) is not None for _, text in candidates])
    order = [int(i) for i in np.argsort(-scores, kind="stable")]
    if len(seen):  # what the report says already is not said again
        order = [i for i in order if float(np.max(seen @ own[i])) <= DUPLICATE]
    keys = drop_redundant([str(i) for i in order], own[order], DUPLICATE, limit=CONCLUSION_SENTENCES)
    return [candidates[int(i)] for i in keys]


def local_report(
    index: SearchIndex, state: State, sections: list[SectionResult], budget: int
) -> tuple[str, dict[str, str]]:
    """The deterministic merge (see the module docstring); returns the markdown and its extra labels."""
    question = state["question"]
    own = in_focus(question, kept_records(state))  # the intro keeps to what the outline was planned from
    intro_labels = {f"{INTRO_PREFIX}E{n}": r["chunk_id"] for n, r in enumerate(own, start=1)}
    paragraphs = paragraph_texts(index, own)
    sources = [
        (label, r.get("text", ""), paragraphs[r["chunk_id"]])
        for label, r in zip(intro_labels, own, strict=True)
    ]
    chosen = answering_sentences(index, question, sources)[0][:INTRO_SENTENCES]  # what is asked, first
    said = [sentence for _, sentence in chosen]
    empty = np.zeros((0, index.embedder.dim), dtype=np.float32)
    vectors = index.embedder.embed(said) if said else empty
    intro: list[Cited] = [(sentence, [label]) for label, sentence in chosen]
    written = [cited_sentences(s.get("text", "")) for s in sections]
    planned = {s["id"]: s for s in state.get("outline", [])}
    parts = [planned.get(s.get("id", ""), {}).get("asks", "") for s in sections]
    if any(parts):  # sections answering the question's parts say their own first; the intro adds the rest
        bodies, seen = _deduplicated(index, written, empty)
        fresh = [n for n in range(len(intro)) if not len(seen) or np.max(seen @ vectors[n]) <= DUPLICATE]
        intro = [intro[n] for n in fresh]
        seen = np.vstack([seen, vectors[fresh]]) if fresh else seen
    else:
        bodies, seen = _deduplicated(index, written, vectors)
    pools = []
    for section in sections:
        by_chunk = {chunk_id: label for label, chunk_id in section.get("labels", {}).items()}
        records = {r["chunk_id"]: r for r in section.get("evidence", [])}
        pools.append(
            [(by_chunk[c], records[c].get("text", "")) for c in section.get("kept", []) if c in by_chunk]
        )
    asks = [part or f"{question} ({s.get('title', '')})" for s, part in zip(sections, parts, strict=True)]
    intro, seen = _refilled(index, intro, bodies, written, pools, asks, seen)
    said_in_sections = [sentence for body in bodies for sentence, _ in body]
    pool = [item for items in pools for item in items]
    closing = concluding_sentences(index, question, said_in_sections, candidate_sentences(pool), seen)
    conclusion: list[Cited] = [(sentence, [label]) for label, sentence in closing]
    _condensed(intro, bodies, conclusion, budget)
    text = assemble(
        render_sentences(intro),
        [(s["title"], render_sentences(body)) for s, body in zip(sections, bodies, strict=True)],
        render_sentences(conclusion),
    )
    return text, intro_labels


async def _llm_report(writer, state: State, sections: list[SectionResult], context: Context) -> str:
    previous = state.get("validation") or {}
    problems = ""
    if previous.get("problems"):
        problems = quote("problems", "\n".join(f"- {p}" for p in previous["problems"]))
    exemplars = load_exemplars(context.style_exemplars)
    prompt = render(
        context.customize_prompt,
        words=str(context.report_words),
        data_rule=DATA_RULE,
        question=quote("question", state["question"]),
        problems=problems,
        exemplars="\n".join(quote("exemplar", e, id=f"X{n}") for n, e in enumerate(exemplars, start=1)),
        sections="\n".join(
            quote("section", s.get("text", ""), id=s["id"], title=s["title"]) for s in sections
        ),
    )
    return (await writer.text(as_messages(prompt), stage="customize", stream=True)).strip()


def _validation(
    previous: dict[str, Any], problems: list[str], better: bool, drafted: list[str] | None = None
) -> Validation:
    """The checks so far: each draft's problems (`drafted`, else `problems`), and the best draft's."""
    history = [*previous.get("history", []), problems if drafted is None else drafted]
    best = problems if better else previous.get("problems", [])
    return {"attempts": len(history), "problems": best, "passed": not best, "history": history}


async def customize(state: State, runtime: Runtime[Context]) -> dict:
    """Decide the report: its sections merged and framed, then checked (a failed check comes back here)."""
    context = runtime.context
    sections = planned_sections(state)
    evidence = report_evidence(state, sections)
    previous: dict[str, Any] = dict(state.get("validation") or {})
    if not any(s.get("status") == "written" for s in sections):
        draft, labels = no_answer({"evidence": evidence})
        problem = "no section found evidence in your documents"
        validation: Validation = {
            "attempts": 1,
            "problems": [problem],
            "passed": False,
            "history": [[problem]],
        }
        return {"draft": draft, "labels": labels, "evidence": evidence, "validation": validation}
    labels = {label: chunk_id for s in sections for label, chunk_id in s.get("labels", {}).items()}
    _, writer = llms.models(context)
    index = await open_index(context)
    if writer is None:
        draft, extra = await in_thread(local_report, index, state, sections, context.report_words)
        labels |= extra
    else:
        draft = await _llm_report(writer, state, sections, context) or state.get("draft", "")
    outline = state.get("outline", [])
    problems = validate(draft, outline, labels, context.report_words)
    better = not previous.get("history") or len(problems) < len(previous.get("problems", []))
    update: dict[str, Any] = {"evidence": evidence, "validation": _validation(previous, problems, better)}
    checked = update["validation"]
    last = checked["attempts"] >= context.max_customize_attempts
    if writer is not None and checked["problems"] and last:  # never worse than no model: local mode's merge
        merged, extra = await in_thread(local_report, index, state, sections, context.report_words)
        left = validate(merged, outline, labels | extra, context.report_words)
        if len(left) < len(checked["problems"]):
            reason = (
                f"the model's merged report failed its checks after {checked['attempts']} draft(s) "
                f"({checked['problems'][0]}): local mode's merge of the sections is shown"
            )
            logger.warning("customize: %s", reason)
            draft, labels, better = merged, labels | extra, True
            update["validation"] = _validation(previous, left, better, drafted=problems)
            update["degraded"] = [degradation("customize", reason, [])]
    if better:
        update |= {"draft": draft, "labels": labels}
    return update
