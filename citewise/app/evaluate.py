"""`citewise eval`: run a question set through the query graph and measure what came back.

Per question, from the graph's output: the documents it retrieved (nDCG@10 and Recall@10 with ranx, where
relevance judgments are given), whether it abstained (citewise's no-answer sentence), whether every [n]
marker of the answer resolves to a citation of a stored evidence record, the share of answer sentences
verification kept (verified / (verified + dropped as unsupported)), and the model calls, tokens and seconds
per stage. Retrieval is measured twice: in retrieval order (a document ranks by its best chunk's fused
retrieval score) and in evidence order (the order of the evidence list after scoring, best first).

Citation support follows ALCE (Gao et al., 2023, "Enabling Large Language Models to Generate Text with
Citations"): citation recall is the share of an answer's sentences that the concatenation of their cited
passages supports (a sentence citing nothing counts as unsupported); a citation is precise when its sentence
is supported and either the citation alone supports it or removing it breaks the support; citation
precision is precise citations / citations. Both are averaged over the answered questions (abstentions are
left out: their quotes are of passages citewise says do not answer). The passage of a citation is its
chunk's paragraph (the unit verification checks against), prefixed with the document title.

The judge of "supports" is pluggable: the configured LLM (the run's judge model, asked whether the passages
entail the claim), or with no model a word-overlap proxy named "word-overlap (not entailment)" wherever it
shows: a claim counts as supported when at least WORD_OVERLAP_CUT of its distinct content words (lower-cased,
stopwords removed) occur in the passages. It cannot see negation, swapped numbers or paraphrase, and in local
mode it restates the spirit of verification's own overlap rule, so it is a sanity check, not a measure of
faithfulness.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citewise.app.alce import (
    Judge,
    LLMJudge,
    WordOverlapJudge,
    all_evidence,
    answer_claims,
    citation_scores,
    document_rankings,
    unresolved_markers,
)
from citewise.app.stage_timer import StageTimer, stage_rows
from citewise.context import Context
from citewise.core.evidence import MARKER, is_abstention
from citewise.core.jsonl import json_objects, numbered_lines

if TYPE_CHECKING:
    from citewise.state import RunError

DEPTH = 10
"""Rank cut of the retrieval metrics."""
METRICS = (f"ndcg@{DEPTH}", f"recall@{DEPTH}")
SETTINGS_PROBLEMS = ("no index", "model setup", "server setting")
"""Kinds of run error that every other question would meet too: the evaluation stops on them."""


class EvalInputError(ValueError):
    """A questions or judgments file that cannot be used; the message names the file and line."""


class EvalRunError(RuntimeError):
    """A run failed for a reason every question would share (settings, a missing index)."""

    def __init__(self, problem: RunError) -> None:
        super().__init__(problem.get("message", "the run failed"))
        self.problem = problem


# reading the inputs ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """One question to evaluate."""

    id: str
    text: str


def read_questions(path: Path) -> list[Question]:
    """Questions from JSON lines: {"id" or "_id": ..., "question" or "text": ...} (BEIR queries work)."""
    questions: list[Question] = []
    seen: set[str] = set()
    for number, row in json_objects(path, EvalInputError):
        raw_id = row.get("id", row.get("_id"))
        if raw_id is None or isinstance(raw_id, dict | list) or not str(raw_id).strip():
            raise EvalInputError(f'{path}:{number}: no "id" (or "_id")')
        text = row.get("question", row.get("text"))
        if not isinstance(text, str) or not text.strip():
            raise EvalInputError(f'{path}:{number}: no "question" (or "text") string')
        qid = str(raw_id).strip()
        if qid in seen:
            raise EvalInputError(f"{path}:{number}: id {qid!r} appears twice")
        seen.add(qid)
        questions.append(Question(qid, text.strip()))
    if not questions:
        raise EvalInputError(f"{path}: no questions")
    return questions


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Relevance judgments: BEIR TSV (query-id, corpus-id, score; header line) or TREC (qid 0 docid rel).

    Judgments with a relevance of 0 or less are left out, as the benches do.
    """
    qrels: dict[str, dict[str, int]] = {}
    kind = None
    for number, line in numbered_lines(path, EvalInputError):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.rstrip("\n").split("\t") if "\t" in line else line.split()
        fields = [f.strip() for f in fields]
        if kind is None:
            kind = {3: "beir", 4: "trec"}.get(len(fields))
            if kind is None:
                raise EvalInputError(
                    f"{path}:{number}: expected BEIR (query-id, corpus-id, score) or TREC "
                    f"(query-id, 0, doc-id, relevance) columns, found {len(fields)}"
                )
            if kind == "beir" and not _is_int(fields[2]):
                continue  # the header line
        expected = 3 if kind == "beir" else 4
        if len(fields) != expected:
            raise EvalInputError(f"{path}:{number}: expected {expected} columns, found {len(fields)}")
        query, doc, score = fields if kind == "beir" else (fields[0], fields[2], fields[3])
        if not _is_int(score):
            raise EvalInputError(f"{path}:{number}: relevance {score!r} is not an integer")
        if int(score) > 0:
            qrels.setdefault(query, {})[doc] = int(score)
    if not qrels:
        raise EvalInputError(f"{path}: no positive relevance judgments")
    return qrels


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


# one question ----------------------------------------------------------------------------------------------


@dataclass
class Scorer:
    """What scoring an answer needs besides the result: document keys, cited passages, the judge."""

    key_of: Callable[[str], str]
    """A stored document id -> the id the judgments use (its BEIR key; the id itself when it has none)."""
    passage_of: Callable[[dict], str]
    """An evidence record -> the passage a judge reads for it."""
    judge: Judge


async def assess(
    question: Question, result: dict, scorer: Scorer, seconds: float = 0.0, stage_seconds: dict | None = None
) -> dict[str, Any]:
    """One question's row: answer, rankings, abstention, markers, verification, ALCE scores, spend."""
    answer = result.get("answer", "")
    evidence = all_evidence(result)
    citations = result.get("citations", [])
    abstained = is_abstention(answer)
    failed = bool(result.get("error"))
    claims = [] if abstained or failed else answer_claims(answer, result.get("question") or question.text)
    verified = sum(1 for claim in claims if not claim.flagged)
    unsupported = len(result.get("unsupported", []))
    unresolved = unresolved_markers(answer, citations, evidence)
    rankings = document_rankings(result.get("evidence", []), scorer.key_of)
    row: dict[str, Any] = {
        "id": question.id,
        "question": question.text,
        "answer": answer,
        "route": result.get("route", ""),
        "error": (result.get("error") or {}).get("message"),
        "abstained": abstained,
        "rankings": {name: keys[:DEPTH] for name, keys in rankings.items()},
        "markers": len(set(MARKER.findall(answer))),
        "unresolved_markers": unresolved,
        "citations_valid": not unresolved,
        "sentences": len(claims),
        "verified": verified,
        "unsupported": unsupported,
        "verified_share": verified / (verified + unsupported) if verified + unsupported else None,
        "citation_recall": None,
        "citation_precision": None,
        "seconds": round(seconds, 4),
        "stages": stage_rows(result.get("usage") or {}, stage_seconds or {}),
    }
    if not claims or row["error"]:
        return row
    by_chunk = {r["chunk_id"]: r for r in evidence if r.get("chunk_id")}
    chunk_of = {c["marker"]: c.get("chunk_id") for c in citations}
    cited = []
    for claim in claims:
        chunks = [chunk_of.get(m) for m in claim.markers]
        cited.append((claim.sentence, [scorer.passage_of(by_chunk[c]) for c in chunks if c in by_chunk]))
    try:
        scores = await citation_scores(cited, scorer.judge)
    except Exception as error:
        row["judge_error"] = f"{type(error).__name__}: {error}"
        return row
    row |= {
        "citation_recall": scores.recall,
        "citation_precision": scores.precision,
        "sentences_supported": scores.supported,
        "citations_judged": scores.citations,
        "citations_precise": scores.precise,
    }
    return row


# the whole set ---------------------------------------------------------------------------------------------


def make_judge(context: Context, kind: str = "auto") -> Judge:
    """The citation judge: the run's judge LLM (auto or llm, with a model configured), else word overlap."""
    from citewise.core import llms

    if kind == "word-overlap":
        return WordOverlapJudge()
    judge, _ = llms.models(context)
    if judge is None:
        if kind == "llm":
            raise ValueError("the LLM citation judge needs a model: give --model or --judge-model")
        return WordOverlapJudge()
    return LLMJudge(judge)


def judge_facts(judge: Judge) -> dict[str, Any]:
    """What the JSON says about the judge."""
    facts: dict[str, Any] = {"name": judge.name}
    if isinstance(judge, WordOverlapJudge):
        facts |= {"kind": "word-overlap", "cut": judge.cut, "entailment": False}
    elif isinstance(judge, LLMJudge):
        facts |= {"kind": "llm", "entailment": True, "malformed": judge.malformed}
    return facts


async def run_eval(
    questions: Sequence[Question],
    context: Context,
    qrels: dict[str, dict[str, int]] | None = None,
    judge_kind: str = "auto",
    progress: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Run every question through the query graph, one after another, and score the results.

    Returns the report: settings, the judge, the aggregates and one row per question. Raises EvalRunError
    when a run fails for a reason every question would share.
    """
    from langchain_core.messages import HumanMessage
    from langchain_core.runnables import RunnableConfig

    from citewise.app.memory import shown_setting
    from citewise.core.indexes import open_index
    from citewise.graph.query import graph
    from citewise.models import usage_scope
    from citewise.models.records import StageUsage

    judge = make_judge(context, judge_kind)
    index = await open_index(context)
    keys: dict[str, str] = {}

    def key_of(doc_id: str) -> str:
        if doc_id not in keys:
            record = index.document(doc_id)
            keys[doc_id] = (record.key if record else "") or doc_id
        return keys[doc_id]

    def passage_of(record: dict) -> str:
        paragraph = index.paragraph(record.get("paragraph_id", ""))
        text = paragraph.text if paragraph else record.get("text", "")
        return f"{record.get('title', '')}\n{text}".strip()

    scorer = Scorer(key_of, passage_of, judge)
    rows = []
    for question in questions:
        timer = StageTimer()
        started = time.perf_counter()
        result = await graph.ainvoke(
            {"messages": [HumanMessage(question.text)]},
            context=context,
            config=RunnableConfig(callbacks=[timer]),
        )
        seconds = time.perf_counter() - started
        problem = result.get("error")
        if problem and problem.get("kind") in SETTINGS_PROBLEMS:
            raise EvalRunError(problem)
        judging = time.perf_counter()
        with usage_scope() as meter:
            row = await assess(question, result, scorer, seconds, timer.seconds())
        spent = meter.usage().get("eval judge", StageUsage(calls=0, input_tokens=0, output_tokens=0))
        row["judge"] = {
            "calls": int(spent.get("calls", 0)),
            "input_tokens": int(spent.get("input_tokens", 0)),
            "output_tokens": int(spent.get("output_tokens", 0)),
            "seconds": round(time.perf_counter() - judging, 4),
        }
        rows.append(row)
        if progress is not None:
            progress()
    return {
        "settings": {
            "index": context.index_dir,
            "store": shown_setting(context.store) if context.store else None,
            "mode": "llm" if context.llm else "local",
            "model": context.model,
            "judge_model": context.judge,
            "route": context.route,
            "k": context.k,
        },
        "judge": judge_facts(judge),
        "aggregates": aggregate(rows, qrels),
        "questions": rows,
    }


def retrieval_scores(rows: list[dict], qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """nDCG@10 and Recall@10 (ranx) of both rankings over the questions that have judgments.

    Each judged row gets its own values under "retrieval_metrics"; questions without judgments are left out.
    """
    from ranx import Qrels, Run, evaluate

    judged = [row for row in rows if row["id"] in qrels and not row.get("error")]
    if not judged:
        return {}
    truth = Qrels.from_dict({row["id"]: qrels[row["id"]] for row in judged})
    scores: dict[str, dict[str, float]] = {}
    for name in ("retrieval", "evidence"):
        ranked = {
            row["id"]: {key: float(DEPTH - n) for n, key in enumerate(row["rankings"][name][:DEPTH])}
            for row in judged
            if row["rankings"][name]
        }
        if not ranked:
            scores[name] = dict.fromkeys(METRICS, 0.0)
            per_query: dict[str, dict[str, float]] = {}
        else:
            run = Run.from_dict(ranked)
            means = evaluate(truth, run, list(METRICS), make_comparable=True)
            scores[name] = {metric: float(means[metric]) for metric in METRICS}
            per_query = {metric: dict(run.scores[metric]) for metric in METRICS}
        for row in judged:
            row.setdefault("retrieval_metrics", {})[name] = {
                metric: float(per_query.get(metric, {}).get(row["id"], 0.0)) for metric in METRICS
            }
    return scores


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def aggregate(rows: list[dict], qrels: dict[str, dict[str, int]] | None = None) -> dict[str, Any]:
    """The figures of the table, over the rows (run errors are counted, and left out of the rates)."""
    ran = [row for row in rows if not row.get("error")]
    answered = [row for row in ran if not row["abstained"] and row["sentences"]]
    verified = sum(row["verified"] for row in ran)
    unsupported = sum(row["unsupported"] for row in ran)
    totals: dict[str, dict[str, float]] = {}
    for row in rows:
        for stage, spent in row["stages"].items():
            entry = totals.setdefault(
                stage, dict.fromkeys(("calls", "input_tokens", "output_tokens", "seconds"), 0)
            )
            for key in entry:
                entry[key] += spent[key]
    count = len(rows) or 1
    figures: dict[str, Any] = {
        "questions": len(rows),
        "errors": len(rows) - len(ran),
        "judged_for_retrieval": 0,
        "retrieval": {},
        "abstention_rate": sum(row["abstained"] for row in ran) / len(ran) if ran else None,
        "citations_valid_rate": sum(row["citations_valid"] for row in ran) / len(ran) if ran else None,
        "markers": sum(row["markers"] for row in ran),
        "unresolved_markers": sum(len(row["unresolved_markers"]) for row in ran),
        "sentences_verified_share": verified / (verified + unsupported) if verified + unsupported else None,
        "answered": len(answered),
        "citation_recall": _mean(row["citation_recall"] for row in answered),
        "citation_precision": _mean(row["citation_precision"] for row in answered),
        "seconds_per_question": {
            "mean": _mean(row["seconds"] for row in rows),
            "p50": statistics.median([row["seconds"] for row in rows]) if rows else None,
        },
        "per_question_by_stage": {
            stage: {key: value / count for key, value in entry.items()} for stage, entry in totals.items()
        },
        "judge_calls_per_question": sum(row.get("judge", {}).get("calls", 0) for row in rows) / count,
    }
    if qrels:
        figures["retrieval"] = retrieval_scores(rows, qrels)
        figures["judged_for_retrieval"] = sum(1 for row in rows if "retrieval_metrics" in row)
    return figures


# the table -------------------------------------------------------------------------------------------------


def _figure(value: Any, percent: bool = False) -> str:
    if value is None:
        return "-"
    if percent:
        return f"{100 * value:.1f}%"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def format_report(report: dict[str, Any]) -> str:
    """The report as aligned text tables for people: quality figures, then spend per stage."""
    figures = report["aggregates"]
    judge = report["judge"]["name"]
    lines = [f"{figures['questions']} questions, {report['settings']['mode']} mode"]
    if figures["errors"]:
        lines[0] += f", {figures['errors']} failed (left out of the rates)"
    rows: list[tuple[str, str]] = []
    for name, label in (("retrieval", "retrieval order"), ("evidence", "evidence order")):
        scores = figures["retrieval"].get(name)
        if scores:
            judged = figures["judged_for_retrieval"]
            rows.append((f"nDCG@{DEPTH} ({label}, {judged} judged)", _figure(scores[f"ndcg@{DEPTH}"])))
            rows.append((f"Recall@{DEPTH} ({label})", _figure(scores[f"recall@{DEPTH}"])))
    rows += [
        ("abstention rate", _figure(figures["abstention_rate"], percent=True)),
        (
            "citations valid (every marker resolves)",
            f"{_figure(figures['citations_valid_rate'], percent=True)}"
            f" ({figures['unresolved_markers']} of {figures['markers']} markers unresolved)",
        ),
        ("answer sentences verified", _figure(figures["sentences_verified_share"], percent=True)),
        (f"citation recall (ALCE; judge: {judge})", _figure(figures["citation_recall"])),
        (f"citation precision (ALCE; judge: {judge})", _figure(figures["citation_precision"])),
        ("answered questions scored for citations", str(figures["answered"])),
        (
            "seconds per question (mean / p50)",
            "{} / {}".format(
                _figure(figures["seconds_per_question"]["mean"]),
                _figure(figures["seconds_per_question"]["p50"]),
            ),
        ),
    ]
    width = max(len(label) for label, _ in rows)
    lines += ["", f"{'measure':<{width}}  value", f"{'-' * width}  {'-' * 5}"]
    lines += [f"{label:<{width}}  {value}" for label, value in rows]
    stages = figures["per_question_by_stage"]
    if stages:
        lines += ["", "Per question, by stage (means):"]
        lines.append(f"  {'stage':<12} {'calls':>7} {'in tokens':>10} {'out tokens':>10} {'seconds':>8}")
        for stage, spent in stages.items():
            lines.append(
                f"  {stage:<12} {spent['calls']:>7.2f} {spent['input_tokens']:>10.1f} "
                f"{spent['output_tokens']:>10.1f} {spent['seconds']:>8.3f}"
            )
        total = {
            key: sum(s[key] for s in stages.values())
            for key in ("calls", "input_tokens", "output_tokens", "seconds")
        }
        lines.append(
            f"  {'total':<12} {total['calls']:>7.2f} {total['input_tokens']:>10.1f} "
            f"{total['output_tokens']:>10.1f} {total['seconds']:>8.3f}"
        )
    lines.append(f"  citation judge: {judge}, {figures['judge_calls_per_question']:.2f} calls per question")
    return "\n".join(lines)
