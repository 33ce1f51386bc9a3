"""`citewise eval`'s pieces: input files, ALCE citation scores, the judges, an answer's row, aggregates."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from support.fakes import ScriptedChatModel, scripted_llm

from citewise.app.alce import (
    WORD_OVERLAP,
    LLMJudge,
    WordOverlapJudge,
    answer_claims,
    citation_scores,
    document_rankings,
    unresolved_markers,
)
from citewise.app.evaluate import (
    EvalInputError,
    Question,
    Scorer,
    aggregate,
    assess,
    format_report,
    make_judge,
    read_qrels,
    read_questions,
)
from citewise.app.stage_timer import StageTimer
from citewise.context import Context
from citewise.core.evidence import CLOSEST, NO_ANSWER, PART_UNANSWERED
from citewise.models import usage_scope


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# questions -------------------------------------------------------------------------------------------------
def test_questions_accept_id_question_and_beir_id_text(tmp_path: Path) -> None:
    path = write(
        tmp_path / "q.jsonl",
        '{"id": "a", "question": " How do vaccines work? "}\n\n'
        '{"_id": 7, "text": "Tides?", "metadata": {}}\n',
    )
    assert read_questions(path) == [Question("a", "How do vaccines work?"), Question("7", "Tides?")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"id": "a", "question": "ok"}\n{"id": "b", "question": \n', "q.jsonl:2: not valid JSON"),
        ('{"id": "a", "question": "ok"}\n["a list"]\n', "q.jsonl:2: expected a JSON object, got list"),
        ('{"question": "no id"}\n', 'q.jsonl:1: no "id" (or "_id")'),
        ('{"id": "a"}\n', 'q.jsonl:1: no "question" (or "text") string'),
        ('{"id": "a", "question": "   "}\n', 'q.jsonl:1: no "question" (or "text") string'),
        ('{"id": "a", "question": "x"}\n{"_id": "a", "text": "y"}\n', "q.jsonl:2: id 'a' appears twice"),
        ("\n\n", "q.jsonl: no questions"),
    ],
)
def test_bad_questions_files_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(EvalInputError) as raised:
        read_questions(write(tmp_path / "q.jsonl", text))
    assert message in str(raised.value)


def test_a_missing_questions_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(EvalInputError, match="nope.jsonl: no such file"):
        read_questions(tmp_path / "nope.jsonl")


# qrels -----------------------------------------------------------------------------------------------------
def test_beir_qrels_skip_the_header_and_non_positive_judgments(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels.tsv", "query-id\tcorpus-id\tscore\n1\td1\t1\n1\td2\t0\n2\td3\t2\n")
    assert read_qrels(path) == {"1": {"d1": 1}, "2": {"d3": 2}}


def test_trec_qrels_are_read_too(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels.txt", "q1 0 doc-a 1\nq1 0 doc-b 0\nq2 Q0 doc-c 3\n")
    assert read_qrels(path) == {"q1": {"doc-a": 1}, "q2": {"doc-c": 3}}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("query-id\tcorpus-id\tscore\n1\td1\n", "qrels:2: expected 3 columns, found 2"),
        ("query-id\tcorpus-id\tscore\n1\td1\thigh\n", "qrels:2: relevance 'high' is not an integer"),
        ("q1 0 d1 1\nq1 0 d2\n", "qrels:2: expected 4 columns, found 3"),
        ("just-one-column\n", "qrels:1: expected BEIR (query-id, corpus-id, score) or TREC"),
        ("query-id\tcorpus-id\tscore\n1\td1\t0\n", "qrels: no positive relevance judgments"),
    ],
)
def test_bad_qrels_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(EvalInputError) as raised:
        read_qrels(write(tmp_path / "qrels", text))
    assert message in str(raised.value)


# ALCE citation recall and precision ----------------------------------------------------------------------
class FactJudge:
    """Supports a claim when the passage holds every fact the claim needs (facts are marker words)."""

    name = "facts"

    def __init__(self, needs: dict[str, set[str]]) -> None:
        self.needs = needs
        self.calls: list[tuple[str, str]] = []

    async def supports(self, passage: str, claim: str) -> bool:
        self.calls.append((passage, claim))
        return all(fact in passage for fact in self.needs[claim])


async def test_one_supporting_citation_is_recalled_and_precise() -> None:
    judge = FactJudge({"A": {"fa"}})
    scores = await citation_scores([("A", ["has fa"])], judge)
    assert (scores.sentences, scores.supported, scores.citations, scores.precise) == (1, 1, 1, 1)
    assert scores.recall == 1.0 and scores.precision == 1.0


async def test_a_redundant_citation_is_imprecise() -> None:
    # p1 alone supports A; p2 does not, and without p2 the rest (p1) still supports: p2 is irrelevant
    judge = FactJudge({"A": {"fa"}})
    scores = await citation_scores([("A", ["has fa", "unrelated"])], judge)
    assert scores.supported == 1 and scores.citations == 2 and scores.precise == 1
    assert scores.precision == 0.5


async def test_citations_needed_together_are_both_precise() -> None:
    # neither passage alone supports B, but removing either breaks the joint support
    judge = FactJudge({"B": {"fx", "fy"}})
    scores = await citation_scores([("B", ["has fx", "has fy"])], judge)
    assert scores.supported == 1 and scores.precise == 2 and scores.precision == 1.0


async def test_citations_of_an_unsupported_sentence_are_all_imprecise() -> None:
    judge = FactJudge({"C": {"fz"}})
    scores = await citation_scores([("C", ["has fx", "has fy"])], judge)
    assert (scores.supported, scores.citations, scores.precise) == (0, 2, 0)
    assert scores.recall == 0.0 and scores.precision == 0.0
    assert len(judge.calls) == 1  # only the joint check: ALCE judges single citations of supported ones


async def test_an_uncited_sentence_counts_against_recall_only() -> None:
    judge = FactJudge({"A": {"fa"}, "D": set()})
    scores = await citation_scores([("A", ["has fa"]), ("D", [])], judge)
    assert scores.sentences == 2 and scores.supported == 1 and scores.recall == 0.5
    assert scores.citations == 1 and scores.precision == 1.0
    assert all(claim != "D" for _, claim in judge.calls)  # nothing to judge it against


async def test_a_verdict_is_asked_once_per_passage_and_claim() -> None:
    judge = FactJudge({"A": {"fa"}})
    await citation_scores([("A", ["has fa", "other"]), ("A", ["has fa", "other"])], judge)
    assert len(judge.calls) == len(set(judge.calls)) == 3  # joint, each alone (p1 alone is the rest of p2)


# the judges ------------------------------------------------------------------------------------------------
async def test_the_word_overlap_judge_says_what_it_is_and_applies_its_cut() -> None:
    judge = WordOverlapJudge()
    assert judge.name == WORD_OVERLAP == "word-overlap (not entailment)"
    claim = "Glaciers carve valleys leaving moraines behind"  # glaciers carve valleys leaving moraines behind
    assert await judge.supports("Glaciers carve deep valleys, leaving moraines.", claim)  # 5 of 6 words
    assert not await judge.supports("Glaciers carve deep valleys.", claim)  # 3 of 6 = 0.5 < 0.6
    assert await WordOverlapJudge(cut=0.5).supports("Glaciers carve deep valleys.", claim)


async def test_word_overlap_is_not_entailment_a_negated_claim_passes() -> None:
    # the reason for its name: "not" is a stopword, so the opposite claim shares every content word
    judge = WordOverlapJudge()
    assert await judge.supports(
        "Vaccines cause autism in children.", "Vaccines do not cause autism in children."
    )


async def test_the_llm_judge_asks_the_model_and_counts_malformed_replies_as_unsupported() -> None:
    model = ScriptedChatModel(script=[{"supported": True}, "not json at all", "still not", "nope", "no"])
    model.responder = lambda request: "malformed"
    judge = LLMJudge(scripted_llm(model, Context(max_retries=0)))
    assert judge.name == "LLM openai/test-model"
    with usage_scope() as meter:
        assert await judge.supports("Tides follow <the Moon>.", "The Moon causes tides.") is True
        assert await judge.supports("Tides follow the Moon.", "Bees make honey.") is False
    assert judge.malformed == 1
    first = model.calls[0].prompt
    assert "<evidence>\nTides follow &lt;the Moon&gt;.\n</evidence>" in first  # escaped, delimited
    assert "<draft>\nThe Moon causes tides.\n</draft>" in first
    assert meter.usage()["eval judge"]["calls"] >= 2


def test_without_a_model_the_judge_is_word_overlap_and_llm_is_refused() -> None:
    assert make_judge(Context()).name == WORD_OVERLAP
    assert make_judge(Context(), "word-overlap").name == WORD_OVERLAP
    with pytest.raises(ValueError, match="needs a model"):
        make_judge(Context(), "llm")


# reading one answer ----------------------------------------------------------------------------------------
def test_answer_claims_skip_citewises_own_words_and_keep_markers() -> None:
    question = "How do vaccines work and who invented them?"
    answer = (
        f"Vaccines train the immune system [1][2]. B cells make antibodies [2]. "
        f"{PART_UNANSWERED} who invented them.\n\n## Notes\n\nHerd immunity helps (unsupported)."
    )
    claims = answer_claims(answer, question)
    assert [(c.sentence, c.markers, c.flagged) for c in claims] == [
        ("Vaccines train the immune system.", (1, 2), False),
        ("B cells make antibodies.", (2,), False),
        ("Herd immunity helps.", (), True),
    ]


def test_unresolved_markers_have_no_citation_or_point_outside_the_evidence() -> None:
    citations = [{"marker": 1, "chunk_id": "c1"}, {"marker": 2, "chunk_id": "gone"}]
    evidence = [{"chunk_id": "c1"}]
    assert unresolved_markers("A [1]. B [2]. C [3].", citations, evidence) == [2, 3]
    assert unresolved_markers("A [1].", citations, evidence) == []


def test_documents_rank_by_their_best_chunk_in_retrieval_order_and_first_place_in_evidence_order() -> None:
    evidence = [
        {"chunk_id": "1", "doc_id": "h1", "retrieval": 0.4},
        {"chunk_id": "2", "doc_id": "h2", "retrieval": 0.9},
        {"chunk_id": "3", "doc_id": "h1", "retrieval": 0.95},
        {"chunk_id": "4", "doc_id": "h3", "retrieval": 0.9},
    ]
    rankings = document_rankings(evidence, lambda doc_id: doc_id.replace("h", "key"))
    assert rankings == {"retrieval": ["key1", "key2", "key3"], "evidence": ["key1", "key2", "key3"]}
    evidence[0]["doc_id"] = "h3"
    assert document_rankings(evidence, str)["evidence"] == ["h3", "h2", "h1"]


def test_the_stage_timer_gives_a_subgraphs_time_to_its_inner_nodes() -> None:
    import asyncio

    timer = StageTimer()
    outer, inner, graph_run, plain = uuid4(), uuid4(), uuid4(), uuid4()

    async def run() -> None:
        await timer.on_chain_start(
            {}, {}, run_id=outer, metadata={"langgraph_node": "evidence"}, name="evidence"
        )
        await timer.on_chain_start({}, {}, run_id=graph_run, parent_run_id=outer, name="LangGraph")
        await timer.on_chain_start(
            {}, {}, run_id=inner, parent_run_id=graph_run, metadata={"langgraph_node": "score"}, name="score"
        )
        await timer.on_chain_end({}, run_id=inner)
        await timer.on_chain_end({}, run_id=graph_run)
        await timer.on_chain_end({}, run_id=outer)
        await timer.on_chain_start({}, {}, run_id=plain, metadata={"langgraph_node": "answer"}, name="helper")
        await timer.on_chain_end({}, run_id=plain)

    asyncio.run(run())
    assert list(timer.seconds()) == ["score"]  # not the subgraph node, not a helper chain inside a node


# a row and the aggregates ----------------------------------------------------------------------------------
def record(chunk_id: str, doc_id: str, retrieval: float, text: str = "") -> dict[str, Any]:
    return {"chunk_id": chunk_id, "doc_id": doc_id, "retrieval": retrieval, "title": doc_id, "text": text}


ANSWERED = {
    "question": "What causes tides?",
    "answer": "Tides rise and fall twice a day [1]. The Moon pulls the oceans [2].",
    "citations": [{"marker": 1, "chunk_id": "t1"}, {"marker": 2, "chunk_id": "t2"}],
    "evidence": [
        record("t1", "tides", 0.9, "Tides rise and fall twice a day."),
        record("t2", "tides", 0.8, "Bees pollinate crops."),
        record("b1", "bees", 0.95, "Bees pollinate crops."),
    ],
    "unsupported": ["Tides are caused by wind."],
    "usage": {"score": {"calls": 2, "input_tokens": 100, "output_tokens": 10}},
    "route": "direct",
}
ABSTAINED = {
    "question": "Who won the 1998 World Cup?",
    "answer": f'{NO_ANSWER} {CLOSEST}\n- Bees: "Bees pollinate crops." [1]',
    "citations": [{"marker": 1, "chunk_id": "b1"}],
    "evidence": [record("b1", "bees", 0.5, "Bees pollinate crops.")],
    "unsupported": [],
    "usage": {},
}
FAILED = {"answer": "The model provider failed.", "error": {"kind": "model provider", "message": "HTTP 500"}}


def scorer() -> Scorer:
    return Scorer(key_of=str, passage_of=lambda r: r["text"], judge=WordOverlapJudge())


async def test_an_answer_row_measures_markers_verification_and_alce() -> None:
    row = await assess(Question("t", "What causes tides?"), ANSWERED, scorer(), 1.5, {"score": 0.25})
    assert row["abstained"] is False and row["citations_valid"] is True and row["markers"] == 2
    assert (row["sentences"], row["verified"], row["unsupported"]) == (2, 2, 1)
    assert row["verified_share"] == pytest.approx(2 / 3)
    # sentence 1 shares every word with its passage; sentence 2's passage is about bees
    assert row["citation_recall"] == 0.5 and row["citation_precision"] == 0.5
    assert row["rankings"] == {"retrieval": ["bees", "tides"], "evidence": ["tides", "bees"]}
    assert row["stages"]["score"] == {"calls": 2, "input_tokens": 100, "output_tokens": 10, "seconds": 0.25}


async def test_an_abstention_is_not_scored_for_citations() -> None:
    row = await assess(Question("w", "Who won the 1998 World Cup?"), ABSTAINED, scorer())
    assert row["abstained"] is True and row["sentences"] == 0
    assert row["citation_recall"] is None and row["citations_valid"] is True


async def test_a_failing_judge_costs_the_rows_scores_not_the_run() -> None:
    class Down:
        name = "down"

        async def supports(self, passage: str, claim: str) -> bool:
            raise ConnectionError("provider down")

    broken = Scorer(key_of=str, passage_of=lambda r: r["text"], judge=Down())
    row = await assess(Question("t", "What causes tides?"), ANSWERED, broken)
    assert row["citation_recall"] is None and "provider down" in row["judge_error"]


async def test_aggregates_over_answered_abstained_and_failed_questions() -> None:
    rows = [
        await assess(Question("t", "tides"), ANSWERED, scorer(), 2.0, {"score": 0.5}),
        await assess(Question("w", "cup"), ABSTAINED, scorer(), 1.0, {"score": 0.1}),
        await assess(Question("x", "fails"), FAILED, scorer(), 3.0),
    ]
    qrels = {"t": {"tides": 1}, "w": {"cup-final": 1}}
    figures = aggregate(rows, qrels)
    assert figures["questions"] == 3 and figures["errors"] == 1
    assert figures["abstention_rate"] == 0.5
    assert figures["citations_valid_rate"] == 1.0 and figures["markers"] == 3
    assert figures["sentences_verified_share"] == pytest.approx(2 / 3)
    assert figures["answered"] == 1 and figures["citation_recall"] == 0.5
    assert figures["judged_for_retrieval"] == 2
    # retrieval order puts tides second (nDCG 1/log2(3)); evidence order first; the cup question finds nothing
    assert figures["retrieval"]["retrieval"]["ndcg@10"] == pytest.approx((1 / math.log2(3) + 0) / 2)
    assert figures["retrieval"]["evidence"]["ndcg@10"] == pytest.approx(0.5)
    assert figures["retrieval"]["evidence"]["recall@10"] == pytest.approx(0.5)
    assert rows[0]["retrieval_metrics"]["evidence"]["ndcg@10"] == 1.0
    assert figures["per_question_by_stage"]["score"]["calls"] == pytest.approx(2 / 3)
    assert figures["per_question_by_stage"]["score"]["seconds"] == pytest.approx(0.2)
    assert figures["seconds_per_question"]["p50"] == 2.0


async def test_the_table_names_the_judge_on_every_citation_line() -> None:
    rows = [await assess(Question("t", "tides"), ANSWERED, scorer(), 2.0, {"score": 0.5})]
    report = {
        "settings": {"mode": "local"},
        "judge": {"name": WORD_OVERLAP},
        "aggregates": aggregate(rows, {"t": {"tides": 1}}),
    }
    table = format_report(report)
    assert "citation recall (ALCE; judge: word-overlap (not entailment))" in table
    assert "citation precision (ALCE; judge: word-overlap (not entailment))" in table
    assert "nDCG@10 (retrieval order, 1 judged)" in table and "abstention rate" in table
    assert "  score           2.00" in table
    assert "entailment))  0.500" in table
