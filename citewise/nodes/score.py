"""score: relevance 0-100 per chunk, n samples averaged with their spread (ScoreRAG self-consistency).

Many chunks are judged per request and all n samples come from one request where the provider supports
`n`; batches run concurrently under the run's concurrency cap. In local mode the score is the cosine
similarity of the chunk's own text to the question, mapped linearly to 0-100 (Context.local_cosine_zero
-> 0, local_cosine_full -> 100), an absolute scale, so "nothing relevant" can still be recognised.

The chunk text is embedded afresh for this (up to `max_candidates` short texts, a fraction of a second)
rather than reusing the stored retrieval vector, which is pooled with the document title: that helps find a
document, but it lifts every chunk of a document whose title matches the question to the same score. On a
one-paper question over the sample corpus the stored vectors scored 14 of 14 candidates 100; on the 100
HotpotQA questions the chunk's own text raised the gold answer's presence in the local answer from 0.35 to
0.39 and answers citing a supporting passage from 0.94 to 0.96.

Never worse than no model: a weak judge must not make citewise worse than local mode. Under the lean profile
(the one for small local models, Context.profile) local mode's answering score decides, as in local mode,
whether the documents answer at all (the judge can narrow what is kept, never answer what local mode would
not); and when the judge is unreliable on this question each chunk's relevance is its local relevance (the
judge's samples stay on the record); when only its samples disagree widely with each other, the judge's mean
and the local relevance are averaged. Either way the chunks are flagged and `degraded` says so. A judge is
told reliable or not by what it gets right, never by agreement with the embedding: disagreeing with cosine
similarity is what a judge is for (for "What kind of approach is Chemformer?" similarity ranks "...
Chemformer, a sequence-to-sequence approach ..." third, and a judge overruled for ranking otherwise left the
question unanswered). Unreliable is a sample malformed or missing a chunk, every chunk about the same score,
or a control passage scored as relevant: the lean batch carries one, a passage about something unrelated
to any document (the one of two further from the question) under a label like the real passages', and a
judge that scores it CONTROL_CEILING or more is not reading them. The lean profile judges one batch only,
the LEAN_JUDGED passages local answering ranks first, in one request with one sample and the reflection
step's self-check folded into its prompt; the rest keep their local relevance (on a CPU the prompt is most
of the wait). Where local mode's rule finds no passage that answers, nothing would be kept whatever the
judge said, and no request is sent. Under the full profile (hosted models) every candidate is judged, n
samples each, and the judge is trusted, chunk by chunk as before.

A chunk the judge could not score (a transient provider fault after the retries, or no sample scored it)
gets the same local score, flagged with the reason and listed in the run's `degraded` output; never the
retrieval score, which comes from the stored vector (and is mixed with its paragraph's) and so says how the
chunk was found, not what it says. A refused key or a rejected request is no fallback: it ends the run. A
sample that lists a chunk more than once counts its first score only, so each sample weighs every chunk once
in the mean and the spread.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
from collections.abc import Sequence

from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core import llms
from citewise.core.answerable import answering_scores
from citewise.core.evidence import batches, labelled
from citewise.core.indexes import in_thread, open_index
from citewise.core.judge import UNRELIABLE, by_label, fell_back
from citewise.core.judge import ask as judge_ask
from citewise.core.questions import report_form
from citewise.index.reading import SearchIndex
from citewise.models import degradation
from citewise.prompts.common import DATA_RULE, quote, render
from citewise.state import Degraded, EvidenceRecord, EvidenceState, RelevanceScores

logger = logging.getLogger(__name__)

FALLBACK = "used question similarity"
"""The end of the flag on a chunk scored locally because the judge could not score it."""
WIDE_SPREAD = 30.0
"""Mean spread of a chunk's samples above which the judge's mean is averaged with the local relevance."""
FLAT = 5.0
"""Standard deviation of the judge's scores over a question's chunks below which they say nothing."""
CONTROL_CEILING = 40.0
"""A control passage's score from which the judge is taken not to be reading the passages."""
UNANSWERED = "no passage answers the question by local mode's rule, so none is kept (its local relevance)"
"""The flag on each candidate of a lean question no judge was asked about (no fallback: nothing failed)."""
LEAN_JUDGED = 5
"""Passages a lean judge reads (at most `score_batch_size`): those local answering ranks first. On a CPU the
prompt is most of the wait, and the answer is written from the first few kept passages (bench/realmodel.py:
ten judged took 1,131-1,517 prompt tokens of a direct answer's 4,158-5,928)."""
CONTROLS = (
    "The recipe says to whisk two eggs with the sugar until pale, fold in the flour and bake the sponge for "
    "twenty-five minutes.",
    "The ferry timetable lists departures every forty minutes in summer and every hour in winter, the last "
    "boat leaving at ten.",
)
"""Control passages, unrelated to any document; a batch carries the one less similar to the question."""
CONTROL_ID = "control"
"""The chunk id a batch's control passage goes under (never a stored chunk's id: those are hashes)."""
MIN_COMPARED = 5
"""Chunks needed before the judge's scores are taken to be flat."""
LEAN_CHECK = """

Score each passage once, carefully: before you give a score, read the passage again and check that the
score matches what it says about the question (no second review of your scores follows)."""
"""Appended to the score prompt under the lean profile: relevance and reflection in one request."""


def local_relevance(similarity: float, context: Context) -> float:
    """A cosine similarity to the question mapped to 0-100 (clamped)."""
    low, high = context.local_cosine_zero, context.local_cosine_full
    value = (similarity - low) / (high - low)
    return round(100.0 * min(1.0, max(0.0, value)), 1)


def question_similarity(
    index: SearchIndex, question: str, records: Sequence[EvidenceRecord]
) -> dict[str, float]:
    """Cosine similarity of each chunk's own text to the question itself (not to the query that found it)."""
    ids = [r["chunk_id"] for r in records]
    if not ids:
        return {}
    vectors = index.embedder.embed([question, *(r.get("text", "") for r in records)])
    similarity = vectors[1:] @ vectors[0]
    return dict(zip(ids, similarity.tolist(), strict=True))


def fallback(record: EvidenceRecord, similarity: float, context: Context, why: str) -> EvidenceRecord:
    """The record scored from its own text's similarity to the question, with a visible flag saying why."""
    return {
        "relevance_mean": local_relevance(similarity, context),
        "relevance_spread": None,
        "relevance_samples": [],
        "flags": [*record.get("flags", []), f"{why}: {FALLBACK}"],
    }


async def fallbacks(
    records: Sequence[EvidenceRecord], question: str, context: Context, why: str
) -> dict[str, EvidenceRecord]:
    """The records the judge did not score, each scored locally (off the event loop) and flagged."""
    if not records:
        return {}
    similarity = await in_thread(question_similarity, await open_index(context), question, records)
    return {r["chunk_id"]: fallback(r, similarity[r["chunk_id"]], context, why) for r in records}


async def control_passage(question: str, context: Context) -> str:
    """The control passage further from the question (a question about baking gets the ferry timetable)."""
    index = await open_index(context)
    vectors = await in_thread(index.embedder.embed, [question, *CONTROLS])
    similarity = (vectors[1:] @ vectors[0]).tolist()
    return CONTROLS[similarity.index(min(similarity))]


def with_control(batch: list[EvidenceRecord], control: str) -> list[EvidenceRecord]:
    """The batch with the control passage among its passages (third, or last in a shorter batch)."""
    record: EvidenceRecord = {"chunk_id": CONTROL_ID, "text": control, "title": "Notes"}
    at = min(2, len(batch))
    return [*batch[:at], record, *batch[at:]]


async def _score_batch(
    judge, batch: list[EvidenceRecord], question: str, context: Context, control: str | None = None
) -> tuple[dict[str, EvidenceRecord], list[Degraded]]:
    """The batch's score updates, and the fallback taken for chunks the judge did not score (if any).

    With a `control` passage, its scores come back under CONTROL_ID (an update with only
    `relevance_samples`), missing when the judge left it out.
    """
    labels, evidence = labelled(with_control(batch, control) if control else batch)
    prompt = render(
        context.score_prompt,
        labels=", ".join(labels),
        data_rule=DATA_RULE,
        question=quote("question", question),
        evidence=evidence,
    )
    by_id = {r["chunk_id"]: r for r in batch}
    if context.lean:
        prompt += LEAN_CHECK
    n = 1 if context.lean else context.n_samples
    verdicts = await judge_ask(judge, RelevanceScores, prompt, stage="score", n=n)
    if verdicts.error:  # the provider failed: every chunk scored locally
        scored = await fallbacks(batch, question, context, f"judge failed ({verdicts.error})")
        return scored, fell_back("score", verdicts.failure, FALLBACK, list(by_id))
    values: dict[str, list[float]] = {cid: [] for cid in [*by_id, CONTROL_ID]}
    for sample in verdicts.samples:  # a chunk listed twice in a sample counts once
        for chunk_id, item in by_label(sample.scores, labels, lambda item: item.id).items():
            values[chunk_id].append(float(item.score))
    controlled = values.pop(CONTROL_ID)
    missed = [record for chunk_id, record in by_id.items() if not values[chunk_id]]
    fallen = await fallbacks(missed, question, context, "judge output malformed")
    updates: dict[str, EvidenceRecord] = {CONTROL_ID: {"relevance_samples": controlled}} if controlled else {}
    for chunk_id, got in values.items():
        if not got:
            updates[chunk_id] = fallen[chunk_id]
            continue
        updates[chunk_id] = {
            "relevance_mean": round(statistics.fmean(got), 1),
            "relevance_spread": round(statistics.pstdev(got), 1) if len(got) > 1 else 0.0,
            "relevance_samples": got,
        }
    if not missed:
        return updates, []
    reason = f"judge output malformed after repairs or missing the chunk: {FALLBACK}"
    return updates, [degradation("score", reason, [r["chunk_id"] for r in missed])]


async def score(state: EvidenceState, runtime: Runtime[Context]) -> dict:
    """Decide each candidate's relevance to the question (mean and spread of n samples)."""
    context = runtime.context
    records = list(state.get("candidates", {}).values())
    judge, _ = llms.models(context)
    if judge is None:
        similarity, answering = await in_thread(
            answering_scores,
            await open_index(context),
            state.get("search_question") or state["question"],
            records,
        )
        # a report request asks for a synthesis no single sentence answers: the threshold alone decides
        synthesis = context.route == "report" or report_form(state["question"]) is not None
        scored = {
            chunk_id: {
                "relevance_mean": local_relevance(value, context),
                "relevance_spread": 0.0,
                "relevance_samples": [],
                **({} if synthesis else {"answering": answering[chunk_id]}),
            }
            for chunk_id, value in similarity.items()
        }
        return {"candidates": scored}
    if context.lean:
        searched = state.get("search_question") or state["question"]
        return await _lean_score(judge, records, state["question"], searched, context)
    results = await asyncio.gather(
        *(
            _score_batch(judge, batch, state["question"], context)
            for batch in batches(records, context.score_batch_size)
        )
    )
    updates = {k: v for result, _ in results for k, v in result.items()}
    degraded = [entry for _, entries in results for entry in entries]
    result = {"candidates": updates}
    return {**result, "degraded": degraded} if degraded else result


async def _lean_score(
    judge, records: list[EvidenceRecord], question: str, searched: str, context: Context
) -> dict:
    """Small local models: one batch judged, the passages local answering ranks first, with a control.

    The rest keep their local relevance: on a CPU the prompt is most of the wait, and a passage local
    answering ranks below the first batch seldom answers (the judge may still reorder the batch, which is
    where similarity misses the answer). The judge is checked by what it gets right (`judge_problem`).
    """
    if not records:  # nothing to judge: no request (the control alone would be one)
        return {"candidates": {}}
    index = await open_index(context)
    # read as local mode reads them (a follow-up with the question before it): its rule on whether the
    # documents answer at all decides for the lean path too (a follow-up local mode refused was answered)
    similarity, answering = await in_thread(answering_scores, index, searched, records)
    synthesis = context.route == "report" or report_form(question) is not None
    if not synthesis and max(answering.values()) < context.local_answerable:
        # local mode's rule finds no passage that answers: nothing will be kept, whatever a judge says
        flag = f"not judged: {UNANSWERED}"
        return {"candidates": _local_updates(records, similarity, answering, context, flag)}
    ranked = sorted(records, key=lambda r: (-answering[r["chunk_id"]], r["chunk_id"]))
    size = min(context.score_batch_size, LEAN_JUDGED)
    judged, rest = ranked[:size], ranked[size:]
    control = await control_passage(question, context)
    updates, degraded = await _score_batch(judge, judged, question, context, control)
    controls = updates.pop(CONTROL_ID, {}).get("relevance_samples")
    updates |= _local_updates(
        rest, similarity, {}, context, f"not judged (lean: {len(judged)} judged): {FALLBACK}"
    )
    malformed = bool(degraded) or not controls  # a control left out is malformed
    controls_seen = [statistics.fmean(controls)] if controls else []
    degraded += _check_judge(updates, malformed, controls_seen, similarity, answering, question, context)
    result = {"candidates": updates}
    return {**result, "degraded": degraded} if degraded else result


def _local_updates(
    records: Sequence[EvidenceRecord],
    similarity: dict[str, float],
    answering: dict[str, float],
    context: Context,
    flag: str,
) -> dict[str, EvidenceRecord]:
    """Records a lean judge does not read: their local relevance (and answering score if given), flagged."""
    updates: dict[str, EvidenceRecord] = {}
    for record in records:
        chunk_id = record["chunk_id"]
        updates[chunk_id] = {
            "relevance_mean": local_relevance(similarity[chunk_id], context),
            "relevance_spread": 0.0,
            "relevance_samples": [],
            "flags": [*record.get("flags", []), flag],
            **({"answering": answering[chunk_id]} if chunk_id in answering else {}),
        }
    return updates


def judge_problem(
    judged: dict[str, float], controls: list[float], spreads: list[float], malformed: bool
) -> str:
    """Why the judge's scores cannot be trusted on this question ("" when they can).

    `controls`: what it gave each batch's control passage, unrelated to the question.
    """
    if malformed:
        return "some of its output was malformed or missed a passage"
    if controls and max(controls) >= CONTROL_CEILING:
        return f"it scored a passage unrelated to the question {max(controls):.0f}"
    if len(judged) >= MIN_COMPARED:
        values = list(judged.values())
        if statistics.pstdev(values) < FLAT:
            return f"it gave every passage about the same score ({statistics.fmean(values):.0f})"
    if spreads and statistics.fmean(spreads) > WIDE_SPREAD:
        return f"its samples disagree widely (mean spread {statistics.fmean(spreads):.0f})"
    return ""


def _check_judge(
    updates: dict[str, EvidenceRecord],
    malformed: bool,
    controls: list[float],
    similarity: dict[str, float],
    answering: dict[str, float],
    question: str,
    context: Context,
) -> list[Degraded]:
    """Local mode's answering score on every chunk (its abstention rule applies); the local relevance too.

    The local relevance is averaged in, or taken instead, where the judge is unreliable on this question.
    """
    local = {cid: local_relevance(value, context) for cid, value in similarity.items()}
    judged: dict[str, float] = {}
    spreads: list[float] = []
    for cid, u in updates.items():  # the judge's (`_score_batch`): samples, their mean and their spread
        samples = u.get("relevance_samples") or []
        if samples:
            mean = u["relevance_mean"]
            assert mean is not None, "a judged chunk has its samples' mean"
            judged[cid] = mean
        if len(samples) > 1:
            spread = u["relevance_spread"]
            assert spread is not None, "a chunk judged more than once has its samples' spread"
            spreads.append(spread)
    synthesis = context.route == "report" or report_form(question) is not None
    for chunk_id, update in updates.items():  # whether the documents answer at all: local mode's rule decides
        if not synthesis:
            update["answering"] = answering[chunk_id]
    problem = judge_problem(judged, controls, spreads, malformed)
    if not problem:
        return []
    averaged = problem.startswith("its samples disagree")
    how = "averaged with question similarity" if averaged else FALLBACK
    for chunk_id, update in updates.items():
        if chunk_id in judged:
            value = round((judged[chunk_id] + local[chunk_id]) / 2, 1) if averaged else local[chunk_id]
            update["relevance_mean"] = value
            update["flags"] = [*update.get("flags", []), f"{UNRELIABLE}: {how}"]
    logger.warning("the judge is unreliable on this question (%s): %s", problem, how)
    return [degradation("score", f"{UNRELIABLE} ({problem}): {how}", list(judged))]
