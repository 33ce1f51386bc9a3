"""`citewise eval` run as a command on a real index of the small corpus (local mode, no model)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

QUESTIONS = [
    {"id": "vac", "question": "How do vaccines train the immune system?"},
    {"_id": "tide", "text": "What causes the tides?"},  # BEIR queries spell it this way
    {"id": "cup", "question": "Who won the 1998 FIFA World Cup final?"},  # nothing in the corpus answers it
]
QRELS = "query-id\tcorpus-id\tscore\nvac\tvaccines\t1\ntide\ttides\t1\ncup\tworld-cup\t1\n"


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str
    report: dict[str, Any]


def citewise(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "citewise.app.cli", *(str(a) for a in args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def evaluated(corpus_index: str, tmp_path_factory: pytest.TempPathFactory) -> Done:
    """One `citewise eval` run over the three questions, with judgments, writing JSON."""
    root = tmp_path_factory.mktemp("eval")
    questions = root / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    (root / "qrels.tsv").write_text(QRELS, encoding="utf-8")
    out = root / "results" / "eval.json"
    done = citewise(
        "eval", "--questions", questions, "--qrels", root / "qrels.tsv", "--index", corpus_index, "--out", out
    )
    assert done.returncode == 0, done.stderr
    return Done(done.returncode, done.stdout, done.stderr, json.loads(out.read_text(encoding="utf-8")))


def value(table: str, label: str) -> str:
    found = re.search(rf"^{re.escape(label)}\s+(\S+)", table, re.M)
    assert found, f"{label!r} not in\n{table}"
    return found.group(1)


def test_the_table_shows_retrieval_abstention_citations_and_the_labelled_judge(evaluated: Done) -> None:
    table = evaluated.stdout
    assert table.startswith("3 questions, local mode\n")
    assert value(table, "abstention rate") == "33.3%"
    assert value(table, "citations valid (every marker resolves)") == "100.0%"
    assert float(value(table, "nDCG@10 (retrieval order, 3 judged)")) == pytest.approx(2 / 3, abs=1e-3)
    assert float(value(table, "Recall@10 (evidence order)")) == pytest.approx(2 / 3, abs=1e-3)
    judge = "word-overlap (not entailment)"
    assert re.search(rf"^citation recall \(ALCE; judge: {re.escape(judge)}\)\s+\d\.\d{{3}}$", table, re.M)
    assert re.search(rf"^citation precision \(ALCE; judge: {re.escape(judge)}\)\s+\d\.\d{{3}}$", table, re.M)
    assert re.search(r"^  retrieve\s+0\.00\s+0\.0\s+0\.0\s+\d+\.\d{3}$", table, re.M)  # no model: no calls
    assert "entailment" not in table.replace("(not entailment)", "")  # never called entailment
    assert re.search(r"^wrote .+/results/eval\.json$", table, re.M)


def test_the_json_has_per_question_rows_aggregates_and_the_judge(evaluated: Done) -> None:
    report = evaluated.report
    assert report["judge"] == {
        "name": "word-overlap (not entailment)",
        "kind": "word-overlap",
        "cut": 0.6,
        "entailment": False,
    }
    assert report["settings"]["mode"] == "local" and report["settings"]["questions"].endswith(
        "questions.jsonl"
    )
    figures = report["aggregates"]
    assert figures["questions"] == 3 and figures["errors"] == 0 and figures["judged_for_retrieval"] == 3
    assert figures["abstention_rate"] == pytest.approx(1 / 3)
    assert figures["citations_valid_rate"] == 1.0 and figures["unresolved_markers"] == 0
    assert figures["answered"] == 2
    assert 0.0 <= figures["citation_recall"] <= 1.0 and 0.0 <= figures["citation_precision"] <= 1.0
    assert {"retrieve", "score", "answer", "verify"} <= set(figures["per_question_by_stage"])
    assert figures["per_question_by_stage"]["retrieve"]["seconds"] > 0

    rows = {row["id"]: row for row in report["questions"]}
    assert list(rows) == ["vac", "tide", "cup"]
    for answered, gold in (("vac", "vaccines"), ("tide", "tides")):
        row = rows[answered]
        assert row["abstained"] is False and row["markers"] >= 1 and row["citations_valid"] is True
        assert row["rankings"]["evidence"][0] == gold  # stored documents map back to their BEIR ids
        assert row["retrieval_metrics"]["evidence"]["ndcg@10"] == 1.0
        assert row["sentences"] >= 1 and row["verified_share"] == 1.0
        assert row["citation_recall"] == 1.0  # local answers are sentences of the cited paragraphs
        assert row["seconds"] > 0 and row["judge"]["calls"] == 0
    cup = rows["cup"]
    assert cup["abstained"] is True and cup["answer"].startswith(
        "Your documents do not answer this question."
    )
    assert cup["citation_recall"] is None and cup["retrieval_metrics"]["retrieval"]["recall@10"] == 0.0


def test_a_bad_questions_file_exits_2_naming_the_line(tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text('{"id": "a", "question": "fine"}\n{"id": "b", "question": \n', encoding="utf-8")
    done = citewise("eval", "--questions", questions, "--index", tmp_path / "unused")
    assert done.returncode == 2
    assert f"error: {questions}:2: not valid JSON" in done.stderr
    assert done.stdout == ""


def test_a_bad_qrels_file_exits_2_naming_the_line(tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps(QUESTIONS[0]) + "\n", encoding="utf-8")
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nvac\tvaccines\tyes\n", encoding="utf-8")
    done = citewise("eval", "--questions", questions, "--qrels", qrels, "--index", tmp_path / "unused")
    assert done.returncode == 2
    assert f"error: {qrels}:2: relevance 'yes' is not an integer" in done.stderr
