"""Local mode's "not in your documents": the answering score and the threshold's use of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from citewise.context import Context
from citewise.core.answerable import KIND_FOUND, answering, answering_scores, coverage, sentence_signals
from citewise.core.evidence import judge_all
from citewise.index import Index
from citewise.index.embeddings import Embedder
from citewise.state import EvidenceRecord


def record(chunk_id: str, final: float, answering_score: float | None) -> EvidenceRecord:
    scored: EvidenceRecord = {"chunk_id": chunk_id, "relevance_mean": final}
    if answering_score is not None:
        scored["answering"] = answering_score
    return scored


def test_nothing_is_kept_when_no_candidate_answers_the_question() -> None:
    context = Context(local_answerable=0.45)
    records = [record("a", 90.0, 0.41), record("b", 70.0, 0.30)]
    cut, updates = judge_all(records, context)
    assert not any(u["kept"] for u in updates.values())
    assert cut == 90.1 and all(u["threshold"] == cut for u in updates.values())  # the cut shown is applied
    assert updates["a"]["reason"] == (
        "dropped: no passage answers the question (best answering score 0.41 < 0.45), so the threshold 90.1 "
        "is above every passage"
    )


def test_one_answering_candidate_lets_the_usual_threshold_decide() -> None:
    context = Context(local_answerable=0.45)
    _, updates = judge_all([record("a", 90.0, 0.52), record("b", 10.0, 0.30)], context)
    assert updates["a"]["kept"] and not updates["b"]["kept"]
    # scored by a judge (no answering score): the judge's scores alone decide
    _, judged = judge_all([record("a", 90.0, None), record("b", 85.0, None)], context)
    assert judged["a"]["kept"] and judged["b"]["kept"]


def test_coverage_weighs_rare_terms_and_the_mix_takes_the_best_sentence() -> None:
    weights = {"baikal": 3.0, "deep": 1.0}
    assert coverage(weights, {"baikal"}) == pytest.approx(0.75)
    assert coverage({}, {"baikal"}) == 0.0
    assert answering([(0.2, 0.0), (0.6, 1.0)], weight=0.5) == pytest.approx(0.8)


def test_a_sentence_that_answers_outscores_a_related_one(tmp_path: Path, embedder: Embedder) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text(
        "Lake Baikal is the deepest lake in the world, at 1,642 metres.\n\n"
        "Lakes in Siberia freeze over every winter.\n\n"
        "Sourdough bread rises with wild yeast.\n",
        encoding="utf-8",
    )
    with Index.open(tmp_path / "idx", embedder=embedder) as index:
        index.ingest([notes])
        records = [
            {"chunk_id": h.chunk_id, "text": h.text} for h in index.search("How deep is Lake Baikal?", k=3)
        ]
        own, scores = answering_scores(index, "How deep is Lake Baikal?", records)  # type: ignore[arg-type]
    by_text = {r["text"]: scores[r["chunk_id"]] for r in records}
    best = max(by_text, key=lambda text: by_text[text])
    assert best.startswith("Lake Baikal is the deepest")
    assert by_text[best] > by_text["Sourdough bread rises with wild yeast."] + 0.3
    assert set(own) == set(scores)


def test_a_passage_named_by_another_answers_with_it(tmp_path: Path, embedder: Embedder) -> None:
    # a two-hop question: the song's passage names Yoko Ono, whose passage holds the rest; neither alone
    # covers the question's terms, the two together do
    song = "Death of Samantha is a song written by Yoko Ono in 1973."
    ono = "Yoko Ono was the second wife of John Lennon, a singer."
    question = "The writer of Death of Samantha was the second wife of which singer?"
    (tmp_path / "song.txt").write_text(song, encoding="utf-8")
    (tmp_path / "ono.txt").write_text(ono, encoding="utf-8")
    records: list[EvidenceRecord] = [
        {"chunk_id": "song", "doc_id": "d1", "title": "Death of Samantha (song)", "text": song},
        {"chunk_id": "ono", "doc_id": "d2", "title": "Yoko Ono", "text": ono},
    ]
    with Index.open(tmp_path / "idx", embedder=embedder) as index:
        index.ingest([tmp_path / "song.txt", tmp_path / "ono.txt"])
        _, together = answering_scores(index, question, records)
        _, alone = answering_scores(index, question, records[1:])
        unnamed = [records[0] | {"text": "Death of Samantha is a song from 1973."}, records[1]]
        _, apart = answering_scores(index, question, unnamed)
    assert together["ono"] > alone["ono"] + 0.1  # read with the sentence that names it
    assert apart["ono"] == alone["ono"]  # nothing names it: its own sentences only


def test_a_sentence_giving_the_kind_of_thing_asked_scores_more(tmp_path: Path, embedder: Embedder) -> None:
    # "How many ...?" answered by a number: the sentence that gives it shares no more words than one that
    # does not, so the number is what tells them apart
    valued = "The campus network held 412 hosts during the recording."
    vague = "The campus network held many hosts during the recording."
    (tmp_path / "net.txt").write_text(f"{valued}\n\n{vague}\n", encoding="utf-8")
    records: list[EvidenceRecord] = [
        {"chunk_id": "valued", "text": valued},
        {"chunk_id": "vague", "text": vague},
    ]
    question = "How many hosts did the campus network hold?"
    with Index.open(tmp_path / "idx", embedder=embedder) as index:
        index.ingest([tmp_path / "net.txt"])
        _, scores = answering_scores(index, question, records)
        _, signals = sentence_signals(index, question, records)
        _, described = answering_scores(index, "Describe the campus network.", records)
    assert scores["valued"] == round(answering(signals["valued"]) * KIND_FOUND, 4)
    assert scores["vague"] == answering(signals["vague"])  # no number: no bonus
    assert scores["valued"] > scores["vague"] + 0.05
    assert abs(described["valued"] - described["vague"]) < 0.1  # no kind asked: no bonus either way
