"""Citations that cannot mislead: markers follow supporting lines; no judge sample counts a chunk twice.

Verification re-cites every sentence to the evidence its supporting lines come from and checks a writer's
sentence about the documents like any other; relevance scoring counts a chunk once per sample and, when the
judge cannot score it, falls back to the chunk's own text's similarity to the question, never to retrieval.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from langgraph.runtime import Runtime
from support.fakes import Samples, ScriptedChatModel, candidate, scoring_state, server_error

from citewise.context import Context
from citewise.core.evidence import NO_ANSWER, PART_UNANSWERED, failed_note
from citewise.core.report import is_own_text
from citewise.core.resources import Resources
from citewise.index.embeddings import Embedder
from citewise.nodes.critique import critique
from citewise.nodes.reflect import reflect
from citewise.nodes.score import score
from citewise.nodes.verify import split_answer, verify

MODEL = "openai/test-model"
MARKER = re.compile(r"\[(\d+)\]")

PARAGRAPHS = {
    "c-train": "Vaccines train the immune system to recognise a pathogen. They contain weakened viruses.",
    "c-memory": "After vaccination, B cells produce antibodies. Memory cells remain for years.",
    "c-bread": "Sourdough bread is leavened by wild yeast. Bakers feed the starter every day.",
    "c-review": "A review found that vaccines train the immune system to recognise a pathogen.",
}
"""Each chunk's paragraph: its sentences are the source lines E<n>.1, E<n>.2, ..."""
LABELS = {"E1": "c-train", "E2": "c-memory", "E3": "c-bread", "E4": "c-review"}


def run(context: Context, index: Any = None) -> Runtime[Context]:
    """The runtime of a node's run; its resources hand out `index` when the context has none yet."""
    if context.resources is None and index is not None:
        context.resources = Resources(index=index)
    return Runtime(context=context)


def record(chunk_id: str, text: str = "", **values: Any) -> dict[str, Any]:
    """A candidate record whose text is, by default, its paragraph's."""
    return candidate(chunk_id, text or PARAGRAPHS.get(chunk_id, ""), **values)


class ParagraphIndex(dict):
    """An index that holds only paragraphs, one per chunk id (as `candidate` names them)."""

    def paragraph(self, paragraph_id: str) -> SimpleNamespace | None:
        text = self.get(paragraph_id.removeprefix("paragraph-"))
        return None if text is None else SimpleNamespace(text=text)


@pytest.fixture
def paragraphs() -> ParagraphIndex:
    """Verification reads its source lines from PARAGRAPHS, the index the tests hand it."""
    return ParagraphIndex(PARAGRAPHS)


def verify_state(
    draft: str, labels: dict[str, str] = LABELS, question: str = "How do vaccines work?"
) -> dict[str, Any]:
    return {
        "question": question,
        "draft": draft,
        "labels": labels,
        "evidence": [record(chunk_id, kept=True) for chunk_id in dict.fromkeys(labels.values())],
    }


def supports(*items: tuple[int, list[str]]) -> ScriptedChatModel:
    """A judge whose one verification reply says sentence n is supported by exactly these line labels."""
    reply = {"sentences": [{"sentence": n, "sources": keys, "supported": bool(keys)} for n, keys in items]}
    return ScriptedChatModel(script=[reply])


def cited(result: dict[str, Any]) -> list[tuple[int, str]]:
    return [(c["marker"], c["chunk_id"]) for c in result["citations"]]


def assert_every_marker_names_supporting_evidence(result: dict[str, Any]) -> None:
    """Each kept sentence carries exactly the markers of the chunks its supporting lines come from."""
    by_marker = {c["marker"]: c["chunk_id"] for c in result["citations"]}
    for item in result["support"]:
        assert item["markers"] == sorted(
            {m for m, cid in by_marker.items() for line in item["lines"] if line["chunk_id"] == cid}
        )
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", result["answer"]) if MARKER.search(s)]
    assert [sorted({int(m) for m in MARKER.findall(s)}) for s in sentences] == [
        item["markers"] for item in result["support"] if item["markers"]
    ]


# a sentence keeps a marker only for evidence whose lines support it ----------------------------------


async def test_a_marker_whose_evidence_did_not_support_the_sentence_is_replaced_by_the_one_that_did(
    install: Callable, paragraphs: ParagraphIndex
) -> None:
    context = Context(model=MODEL)
    judge = supports((1, ["E2.2"]))  # support from line 2 of E2, though the writer cited E1
    install(context, index=paragraphs, judge=judge)
    result = await verify(
        verify_state("Memory cells remain for years after vaccination [E1]."), run(context, paragraphs)
    )

    assert result["answer"] == "Memory cells remain for years after vaccination [1]."
    assert cited(result) == [(1, "c-memory")]
    assert result["citations"][0]["text"] == "Memory cells remain for years."
    assert result["support"] == [
        {
            "sentence": "Memory cells remain for years after vaccination.",
            "lines": [{"chunk_id": "c-memory", "text": "Memory cells remain for years."}],
            "recited_from": ["E1"],
            "markers": [1],
        }
    ]
    assert result["unsupported"] == []


async def test_unsupporting_markers_go_supporting_ones_join_after_those_kept(
    install: Callable, paragraphs: ParagraphIndex
) -> None:
    context = Context(model=MODEL)
    install(context, index=paragraphs, judge=supports((1, ["E1.1", "E2.2"]), (2, ["E2.1"])))
    draft = (
        "Vaccines train the immune system and memory cells remain for years [E1][E3]. "
        "B cells produce antibodies [E3] after vaccination [E2]."
    )
    result = await verify(verify_state(draft), run(context, paragraphs))

    assert result["answer"] == (
        "Vaccines train the immune system and memory cells remain for years [1][2]. "
        "B cells produce antibodies after vaccination [2]."
    )
    assert cited(result) == [(1, "c-train"), (2, "c-memory")]  # bread supported nothing: never cited
    assert [item["recited_from"] for item in result["support"]] == [["E3"], ["E3"]]
    assert [item["markers"] for item in result["support"]] == [[1, 2], [2]]
    assert_every_marker_names_supporting_evidence(result)


async def test_a_sentence_citing_its_supporting_evidence_is_left_alone(
    install: Callable, paragraphs: ParagraphIndex
) -> None:
    context = Context(model=MODEL)
    install(context, index=paragraphs, judge=supports((1, ["E1.1", "E1.2"])))
    result = await verify(verify_state("Vaccines contain weakened viruses [E1]."), run(context, paragraphs))
    assert result["answer"] == "Vaccines contain weakened viruses [1]."
    assert result["support"][0]["recited_from"] == []
    assert result["support"][0]["markers"] == [1]


async def test_report_labels_are_re_cited_by_the_chunk_they_name(
    install: Callable, paragraphs: ParagraphIndex
) -> None:
    # two labels name c-train (its lines are keyed by its first label, S1E1); S2E2 names c-memory
    labels = {"S1E1": "c-train", "S2E1": "c-train", "S2E2": "c-memory"}
    context = Context(model=MODEL)
    judge = supports((1, ["S1E1.1"]), (2, ["S2E2.2"]))
    install(context, index=paragraphs, judge=judge)
    draft = (
        "Vaccines train the immune system to recognise a pathogen [S2E1]. "
        "Memory cells remain for years [S2E1]."
    )
    result = await verify(verify_state(draft, labels), run(context, paragraphs))

    assert set(judge.calls[0].evidence) == {"S1E1.1", "S1E1.2", "S2E2.1", "S2E2.2"}
    assert result["answer"] == (
        "Vaccines train the immune system to recognise a pathogen [1]. Memory cells remain for years [2]."
    )
    assert cited(result) == [(1, "c-train"), (2, "c-memory")]
    assert [item["recited_from"] for item in result["support"]] == [[], ["S2E1"]]  # same chunk: kept
    assert_every_marker_names_supporting_evidence(result)


async def test_a_sentence_no_line_supports_stays_unsupported_with_its_markers_when_flagged(
    install: Callable, paragraphs: ParagraphIndex
) -> None:
    context = Context(model=MODEL, drop_unsupported=False)
    install(context, index=paragraphs, judge=supports((1, [])))
    result = await verify(verify_state("Vaccines cure every cancer [E1]."), run(context, paragraphs))
    assert result["answer"] == "Vaccines cure every cancer [1]. (unsupported)"
    assert result["unsupported"] == ["Vaccines cure every cancer."]
    assert result["support"][0]["lines"] == [] and result["support"][0]["recited_from"] == []


async def test_local_verification_drops_a_marker_whose_evidence_shares_no_words(
    paragraphs: ParagraphIndex,
) -> None:
    result = await verify(verify_state("Memory cells remain for years [E2][E3]."), run(Context(), paragraphs))
    assert result["answer"] == "Memory cells remain for years [1]."
    assert cited(result) == [(1, "c-memory")]
    assert result["support"][0]["recited_from"] == ["E3"]
    assert_every_marker_names_supporting_evidence(result)


async def test_local_verification_keeps_every_cited_chunk_that_supports_the_sentence(
    paragraphs: ParagraphIndex,
) -> None:
    draft = "Vaccines train the immune system to recognise a pathogen [E1][E4]."
    result = await verify(verify_state(draft), run(Context(), paragraphs))
    assert result["answer"] == "Vaccines train the immune system to recognise a pathogen [1][2]."
    assert cited(result) == [(1, "c-train"), (2, "c-review")]
    assert result["support"][0]["recited_from"] == []
    assert_every_marker_names_supporting_evidence(result)


# only citewise's own words about missing evidence stand unverified ------------------------------------

CLAIM_ABOUT_DOCUMENTS = "The documents show the drug does not damage the liver."


@pytest.mark.parametrize("mode", ["local", "llm"])
async def test_a_claim_phrased_as_what_the_documents_show_is_verified_like_any_other(
    mode: str, install: Callable, paragraphs: ParagraphIndex
) -> None:
    context = Context(model=MODEL if mode == "llm" else None)
    if mode == "llm":  # the judge calls the second sentence supported, but names no line for it
        reply = [
            {"sentence": 1, "sources": ["E1.1"], "supported": True},
            {"sentence": 2, "sources": [], "supported": True},
        ]
        install(context, index=paragraphs, judge=ScriptedChatModel(script=[{"sentences": reply}]))
    draft = f"Vaccines train the immune system to recognise a pathogen [E1]. {CLAIM_ABOUT_DOCUMENTS}"
    result = await verify(verify_state(draft), run(context, paragraphs))

    assert "liver" not in result["answer"]
    assert result["unsupported"] == [CLAIM_ABOUT_DOCUMENTS]
    assert result["answer"] == "Vaccines train the immune system to recognise a pathogen [1]."


@pytest.mark.parametrize("mode", ["local", "llm"])
async def test_citewise_own_no_answer_sentences_stand_uncited_and_unverified(
    mode: str, install: Callable, paragraphs: ParagraphIndex
) -> None:
    context = Context(model=MODEL if mode == "llm" else None)
    judge = supports((1, ["E1.1"]))
    if mode == "llm":
        install(context, index=paragraphs, judge=judge)
    draft = (
        "Vaccines train the immune system to recognise a pathogen [E1]. "
        f"{PART_UNANSWERED} how long does immunity last."
    )
    question = "How do vaccines work, and how long does immunity last?"
    result = await verify(verify_state(draft, question=question), run(context, paragraphs))
    assert result["answer"] == (
        f"Vaccines train the immune system to recognise a pathogen [1]. {PART_UNANSWERED} how long does "
        "immunity last."
    )
    assert result["unsupported"] == []
    if mode == "llm":
        assert judge.calls[0].sentences == {1: "Vaccines train the immune system to recognise a pathogen ."}

    alone = await verify(verify_state(NO_ANSWER), run(context, paragraphs))
    assert alone["answer"] == NO_ANSWER and alone["unsupported"] == [] and alone["citations"] == []


# a chunk listed twice in one sample counts once ------------------------------------------------------


async def test_a_score_sample_listing_a_chunk_twice_counts_its_first_score_once(install: Callable) -> None:
    context = Context(model=MODEL, n_samples=2)
    judge = ScriptedChatModel(
        script=[
            Samples(
                [
                    {
                        "scores": [
                            {"id": "E1", "score": 80},
                            {"id": "E2", "score": 40},
                            {"id": " E1 ", "score": 10},  # a second score for E1 in the same sample
                        ]
                    },
                    {
                        "scores": [
                            {"id": "E1", "score": 84},
                            {"id": "E2", "score": 44},
                            {"id": "E2", "score": 0},
                        ]
                    },
                ]
            )
        ]
    )
    install(context, judge=judge)
    result = await score(scoring_state(record("c-train"), record("c-bread")), run(context))

    assert result["candidates"] == {
        "c-train": {"relevance_mean": 82.0, "relevance_spread": 2.0, "relevance_samples": [80.0, 84.0]},
        "c-bread": {"relevance_mean": 42.0, "relevance_spread": 2.0, "relevance_samples": [40.0, 44.0]},
    }


async def test_a_reflection_listing_a_chunk_twice_keeps_its_first_item(install: Callable) -> None:
    context = Context(model=MODEL)
    items = [
        {"id": "E1", "score": 35, "justification": "first"},
        {"id": "E2", "score": 50, "justification": "only"},
        {"id": "E1", "score": 90, "justification": "second"},
    ]
    install(context, judge=ScriptedChatModel(script=[{"items": items}]))
    state = scoring_state(record("a", relevance_mean=60.0), record("b", relevance_mean=70.0))
    result = await reflect(state, run(context))
    assert result["candidates"]["a"] == {"reflection": 35.0, "reflection_note": "first"}
    assert result["candidates"]["b"] == {"reflection": 50.0, "reflection_note": "only"}


async def test_a_critic_listing_a_chunk_twice_keeps_its_first_verdict(install: Callable) -> None:
    context = Context(model=MODEL)
    reflected = {"r90": 90.0, "r70": 70.0, "r55": 55.0, "r40": 40.0, "r10": 10.0, "r05": 5.0}
    records = [record(k, f"passage {k}", relevance_mean=50.0, reflection=v) for k, v in reflected.items()]
    items = [
        {"id": "E1", "score": 20, "reason": "first"},
        {"id": "E1", "score": 95, "reason": "second"},
        {"id": "E2", "score": 60, "reason": "only"},
    ]
    judge = ScriptedChatModel(script=[{"items": items}])
    install(context, judge=judge)
    result = await critique(scoring_state(*records), run(context))

    assert set(judge.calls[0].evidence) == {"E1", "E2"}  # the borderline r70 and r55
    assert result["candidates"] == {
        "r70": {"critic": 20.0, "critic_note": "first"},
        "r55": {"critic": 60.0, "critic_note": "only"},
    }


# a chunk the judge could not score falls back to its own text, not to retrieval -----------------------


class RecordingEmbedder:
    """The real embedder, noting what it embedded and on which thread."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.texts: list[list[str]] = []
        self.threads: list[threading.Thread] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.append(list(texts))
        self.threads.append(threading.current_thread())
        return self.embedder.embed(texts)


@pytest.fixture
def scoring_index(embedder: Embedder) -> RecordingEmbedder:
    """The embedder of the index score is handed: it records its calls."""
    return RecordingEmbedder(embedder)


ON_TOPIC = "Vaccines train the immune system to recognise a pathogen without causing the disease."
OFF_TOPIC = "Sourdough bread is leavened by a starter of wild yeast and lactic acid bacteria."


async def test_a_chunk_the_judge_left_out_is_scored_by_its_own_text_off_the_event_loop(
    install: Callable, scoring_index: RecordingEmbedder
) -> None:
    context = Context(model=MODEL)
    install(
        context,
        index=SimpleNamespace(embedder=scoring_index),
        judge=ScriptedChatModel(script=[{"scores": [{"id": "E9", "score": 99}]}]),
    )
    found_weakly = record("on", ON_TOPIC, dense=0.0, flags=["earlier problem"])
    found_strongly = record("off", OFF_TOPIC, dense=0.9)
    state = scoring_state(found_weakly, found_strongly)
    result = await score(state, run(context))

    on, off = result["candidates"]["on"], result["candidates"]["off"]
    assert on["relevance_mean"] >= 90.0  # its retrieval score would have given 0
    assert off["relevance_mean"] <= 10.0  # its retrieval score would have given 100
    assert on["flags"] == ["earlier problem", "judge output malformed: used question similarity"]
    assert off["flags"] == ["judge output malformed: used question similarity"]
    assert on["relevance_spread"] is None and on["relevance_samples"] == []
    assert scoring_index.texts == [[state["question"], ON_TOPIC, OFF_TOPIC]]  # the chunks' own text
    assert threading.main_thread() not in scoring_index.threads  # embedded off the event loop


async def test_a_judge_outage_scores_every_chunk_by_its_own_text(
    install: Callable, scoring_index: RecordingEmbedder
) -> None:
    context = Context(model=MODEL, max_retries=0)
    install(
        context,
        index=SimpleNamespace(embedder=scoring_index),
        judge=ScriptedChatModel(responder=lambda request: server_error()),
    )
    state = scoring_state(record("on", ON_TOPIC, dense=0.0), record("off", OFF_TOPIC, dense=0.9))
    result = await score(state, run(context))

    assert result["candidates"]["on"]["relevance_mean"] >= 90.0
    assert result["candidates"]["off"]["relevance_mean"] <= 10.0
    flag = "judge failed (InternalServerError): used question similarity"
    assert {cid: c["flags"] for cid, c in result["candidates"].items()} == {"on": [flag], "off": [flag]}
    assert threading.main_thread() not in scoring_index.threads


@pytest.mark.parametrize(
    "sentence",
    [
        f"{PART_UNANSWERED} the drug is safe for the liver.",  # names what the question does not ask
        f"{NO_ANSWER.rstrip('.')}, but the drug is safe.",  # a claim behind the no-answer phrase
        "This section could not be written because the drug is safe.",  # not the note collect writes
    ],
)
async def test_a_claim_dressed_as_citewise_own_text_is_verified_like_any_other(
    sentence: str, install: Callable, paragraphs: ParagraphIndex
) -> None:
    context = Context(model=None)
    result = await verify(verify_state(sentence), run(context, paragraphs))
    assert "safe" not in result["answer"]
    assert len(result["unsupported"]) == 1 and "safe" in result["unsupported"][0]


def test_a_failed_section_note_is_one_sentence_citewise_recognises() -> None:
    note = failed_note("ValueError: bad (input). Try again! [E1]")
    assert is_own_text(note, "Any question?")
    assert len(split_answer(note)) == 1


def test_a_label_after_a_closing_quote_stays_with_its_sentence() -> None:
    draft = 'He recorded it on "A Man Without Love." [E1] "Wonderland by Night" is a song by Kaempfert [E2].'
    assert split_answer(draft) == [
        'He recorded it on "A Man Without Love." [E1]',  # not carried into the next sentence's citations
        '"Wonderland by Night" is a song by Kaempfert [E2].',
    ]


def test_a_sentence_ends_after_its_labels_where_a_splitter_would_not_end_it() -> None:
    # local mode's answer to "Who funded the construction of the Subaru telescope?" on the sample: the
    # splitter ends no sentence before "8.2-m" nor after a table row with no full stop, so the three
    # sentences were verified as one against the last one's line and shown with one marker for all three
    draft = (
        "It is operated by the National Astronomical Observatory of Japan. [E1] "
        "8.2-m Subaru telescope (IRD), 3.6-m Canada France Hawai'i Telescope (CFHT) [E3] "
        "The first transit was observed with IRD. [E2]"
    )
    assert split_answer(draft) == [
        "It is operated by the National Astronomical Observatory of Japan [E1].",
        "8.2-m Subaru telescope (IRD), 3.6-m Canada France Hawai'i Telescope (CFHT) [E3]",
        "The first transit was observed with IRD [E2].",
    ]
    # a label inside a sentence, before what goes on in lower case, does not end it
    assert split_answer("Vaccines train it [E1] and memory cells remain [E2].") == [
        "Vaccines train it [E1] and memory cells remain [E2]."
    ]


async def test_no_sentence_is_shown_without_a_marker_verification_checked(
    install: Callable, paragraphs: ParagraphIndex
) -> None:
    # a list item is one part: its first sentence, unlabelled, was never checked against a line
    draft = (
        "- Bakers feed the starter every day. Vaccines train the immune system to recognise a pathogen [E1]."
    )
    result = await verify(verify_state(draft), run(Context(model=None), paragraphs))
    assert result["answer"] == "- Vaccines train the immune system to recognise a pathogen [1]."
    assert result["unsupported"] == ["Bakers feed the starter every day."]
    # the local draft above: each sentence keeps its own marker
    draft = (
        "After vaccination, B cells produce antibodies. [E2] Sourdough bread is leavened by wild yeast [E3] "
        "Vaccines train the immune system to recognise a pathogen. [E1]"
    )
    result = await verify(verify_state(draft), run(Context(model=None), paragraphs))
    assert result["answer"] == (
        "After vaccination, B cells produce antibodies [1]. Sourdough bread is leavened by wild yeast [2] "
        "Vaccines train the immune system to recognise a pathogen [3]."
    )
    assert [item["markers"] for item in result["support"]] == [[1], [2], [3]]


def test_a_source_s_own_marker_closing_a_clause_leaves_the_answer_sentence() -> None:
    from citewise.index.citations import soften_source_markers, without_trailing_source_markers

    def shown(text: str) -> str:
        return without_trailing_source_markers(soften_source_markers(text))

    assert (
        shown("GJ 486b orbits its star in 1.5 days [74] [E1].") == "GJ 486b orbits its star in 1.5 days [E1]."
    )
    assert shown("It was seen before [19], [31].") == "It was seen before."
    assert shown("As shown by Lee [4], the planet is hot [E1].") == "As shown by Lee, the planet is hot [E1]."
    # an author-year marker closing a clause goes too; one that is part of the sentence stays
    assert (
        shown("The writer cited one of them (Brown et al., 2021) [E2].")
        == "The writer cited one of them [E2]."
    )
    assert shown("Seen before (Lee, 2020; Park 2019), then again.") == "Seen before, then again."
    assert shown("Gao et al. (2023) argue this (see the review) [E1].") == (
        "Gao et al. (2023) argue this (see the review) [E1]."
    )
    # the source's marker as a sentence's subject, or inside a clause, stays (softened)
    assert shown("Using HST transits, [70] inferred an atmosphere [E2].") == (
        "Using HST transits, (ref. 70) inferred an atmosphere [E2]."
    )
    assert shown("methods [44], [45] as well as alignment [E1].") == (
        "methods (ref. 44), (ref. 45) as well as alignment [E1]."
    )
