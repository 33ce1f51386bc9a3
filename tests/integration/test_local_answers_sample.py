"""Regression questions on the bundled sample: the local answer holds the sentence that answers, first where
it can, and names the part of a question the papers do not answer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from citewise.context import Context
from citewise.core.evidence import CLOSEST, CLOSEST_HEADING, NO_ANSWER, PART_UNANSWERED
from citewise.core.resources import Resources
from citewise.graph.query import graph
from citewise.index import Index
from citewise.index.embeddings import Embedder

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parents[2] / "citewise" / "samples" / "unarxive_sample.jsonl"


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> str:
    path = tmp_path_factory.mktemp("sample") / "index"
    with Index.open(path, embedder=embedder) as index:
        assert index.ingest([SAMPLE]).documents_added == 3
    return str(path)


async def answer(resources: Resources, question: str, index_dir: str) -> str:
    result = await graph.ainvoke(
        {"messages": [HumanMessage(question)]}, context=Context(resources=resources, index_dir=index_dir)
    )
    assert result["mode"] == "local" and result["route"] == "direct"
    return result["answer"]


async def test_the_sentence_with_the_count_comes_first(resources: Resources, sample_index: str) -> None:
    text = await answer(resources, "How many transits of GJ 486b were observed?", sample_index)
    assert text.startswith(
        "We used three different instruments to observe three separate transit events of GJ 486b"
    )


async def test_the_quick_start_question_gets_the_finding_before_the_method(
    resources: Resources, sample_index: str
) -> None:
    text = await answer(
        resources, "What does the transmission spectrum of GJ 486b reveal about its atmosphere?", sample_index
    )
    assert text.startswith("In summary, our results indicate that GJ 486b does not possess a cloud-free H/He")


async def test_the_telescope_question_gets_the_telescope_sentence(
    resources: Resources, sample_index: str
) -> None:
    text = await answer(resources, "Which telescope observed the first transit of GJ 486b?", sample_index)
    cited = re.split(r"(?<=\]\.)\s+", text)  # one sentence per cited line
    assert any("8.2 meter Subaru telescope" in sentence for sentence in cited[:2])  # within the first two


async def test_a_part_the_papers_do_not_answer_is_named(resources: Resources, sample_index: str) -> None:
    text = await answer(
        resources,
        "What is the equilibrium temperature of GJ 486b, and how much did the telescope cost?",
        sample_index,
    )
    assert "equilibrium temperature of about 700 K" in text
    assert text.endswith(f"{PART_UNANSWERED} how much did the telescope cost.")


async def test_the_asked_planet_s_temperature_is_in_the_answer(
    resources: Resources, sample_index: str
) -> None:
    text = await answer(resources, "What is the equilibrium temperature of GJ 1132b?", sample_index)
    assert "and 580 K, respectively" in text


@pytest.mark.parametrize(
    "question",
    [
        "Who won the football World Cup in 2018?",  # nothing like it in the papers
        "What is the boiling point of ethanol?",
        "How many moons does Jupiter have?",  # astronomy, like one of the papers, but not in it
    ],
)
async def test_a_question_the_papers_do_not_answer_gets_the_honest_reply(
    resources: Resources, sample_index: str, question: str
) -> None:
    result = await graph.ainvoke(
        {"messages": [HumanMessage(question)]}, context=Context(resources=resources, index_dir=sample_index)
    )
    text = result["answer"]
    assert text.startswith(f"{NO_ANSWER} {CLOSEST}"), text
    assert not any(r.get("kept") for r in result["evidence"])
    assert all("no passage answers the question" in r["reason"] for r in result["evidence"])
    listed = [line for line in text.splitlines() if line.startswith("- ")]
    assert listed and len(listed) == len(result["citations"])  # the closest passages, each quoted and cited
    # the documents are named as the closest passages, and the works they cite are no references of anything
    assert result["references"]["primary"] and result["references"]["secondary"] == []
    reply = result["messages"][-1].content
    assert f"\n{CLOSEST_HEADING}:\n" in reply and "Sources:" not in reply


async def test_an_answer_lists_its_sources_and_the_works_they_cite(
    resources: Resources, sample_index: str
) -> None:
    result = await graph.ainvoke(
        {"messages": [HumanMessage("How many transits of GJ 486b were observed?")]},
        context=Context(resources=resources, index_dir=sample_index),
    )
    assert result["references"]["secondary"]  # the sample papers keep their bibliographies
    assert "\nSources:\n" in result["messages"][-1].content


async def test_answerable_sample_questions_are_still_answered(
    resources: Resources, sample_index: str
) -> None:
    for question in (
        "How many transits of GJ 486b were observed?",
        "Which telescope observed the first transit of GJ 486b?",
        "What is the equilibrium temperature of GJ 1132b?",
    ):
        text = await answer(resources, question, sample_index)
        assert not text.startswith(NO_ANSWER), (question, text)


async def converse(resources: Resources, index_dir: str, *turns: str) -> list[dict]:
    """Each turn's result, the conversation so far sent with it (what a thread's state holds)."""
    messages: list = []
    results = []
    for question in turns:
        messages.append(HumanMessage(question))
        result = await graph.ainvoke(
            {"messages": list(messages)}, context=Context(resources=resources, index_dir=index_dir)
        )
        messages = list(result["messages"])
        results.append(result)
    return results


async def test_a_follow_up_is_answered_by_what_it_adds_not_by_the_earlier_answer_again(
    resources: Resources,
    sample_index: str,
) -> None:
    first, second = await converse(
        resources,
        sample_index,
        "What does the transmission spectrum of GJ 486b reveal about its atmosphere?",
        "And GJ 1132b?",
    )
    asked = "What does the transmission spectrum of GJ 1132b reveal about its atmosphere?"
    assert second["question"] == asked  # the question before, asked about GJ 1132b
    assert first["answer"].startswith("In summary, our results indicate that GJ 486b does not possess")
    assert "GJ 1132b possesses a H/He rich atmosphere" in second["answer"]
    assert "cloud-free" not in second["answer"] and "upper-limits" not in second["answer"], second["answer"]


async def test_a_follow_up_the_papers_do_not_answer_gets_the_honest_reply_not_the_earlier_answer(
    resources: Resources,
    sample_index: str,
) -> None:
    first, second = await converse(
        resources,
        sample_index,
        "Which telescope observed the first transit of GJ 486b?",
        "When was it built?",
    )
    assert "8.2 meter Subaru telescope" in first["answer"]
    text = second["answer"]
    assert text.startswith(f"{NO_ANSWER} {CLOSEST}"), text
    listed = [line for line in text.splitlines() if line.startswith("- ")]
    assert listed and len(listed) == len(second["citations"])  # the closest passages, each quoted and cited
    reply = second["messages"][-1].content
    assert f"\n{CLOSEST_HEADING}:\n" in reply and "Sources:" not in reply


async def test_a_follow_up_answered_in_part_keeps_the_sentence_and_names_the_rest(
    resources: Resources, sample_index: str
) -> None:
    _, second = await converse(
        resources,
        sample_index,
        "What does the transmission spectrum of GJ 486b reveal about its atmosphere?",
        "What about its water content?",
    )
    assert "nor a clear 100% water-vapor atmosphere" in second["answer"]
    assert second["answer"].endswith(f"{PART_UNANSWERED} What about its water content.")
    assert "cloud-free" not in second["answer"]  # the earlier answer is not said again


async def test_a_report_of_two_parts_has_a_section_for_each(resources: Resources, sample_index: str) -> None:
    from citewise.core.report import section_bodies

    result = await graph.ainvoke(
        {"messages": [HumanMessage("Give an overview of how GJ 486b was observed and what was found")]},
        context=Context(resources=resources, index_dir=sample_index, route="report"),
    )
    bodies = section_bodies(result["answer"])
    titles = [title for title in bodies if title]
    assert titles == ["How GJ 486b was observed", "What was found", "Conclusion"]
    # the findings are under the part that asks for them, each sentence with its checked marker
    found = bodies["What was found"]
    assert re.search(r"atmosphere", found) and re.search(r"\[\d+\]", found)
