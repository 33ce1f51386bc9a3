"""The second hop: follow-up queries from the first round's best documents, and how the rounds merge."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
import pytest
from langgraph.runtime import Runtime
from support.fakes import Judge, ScriptedChatModel
from support.fakes import candidate as record

from citewise.context import Context
from citewise.core.evidence import BRIDGE_FLAG, judge_all
from citewise.core.llms import metered
from citewise.index.hops import follow_up_queries, interleave
from citewise.index.records import Hit
from citewise.nodes import retrieve as retrieve_node
from citewise.nodes.rerank import rerank
from citewise.nodes.retrieve import search_all


def hit(doc: str, n: int = 0, score: float = 0.5) -> Hit:
    return Hit(f"{doc}-c{n}", doc, f"{doc}:p0", doc.title(), "", f"text of {doc} {n}", 0.1, 0.2, score, 1)


class Paragraphs:
    """Just enough of an Index for the hop: paragraphs by id, searches by query."""

    def __init__(self, results: dict[str, list[Hit]]) -> None:
        self.results = results
        self.searched: list[str] = []
        self.embedder = SimpleNamespace(dim=max(1, 64))

    def chunk_vectors(self, ids: list[str]) -> np.ndarray:
        return np.eye(len(ids), self.embedder.dim, dtype=np.float32)

    def paragraph(self, paragraph_id: str) -> SimpleNamespace:
        return SimpleNamespace(text=f"The whole paragraph {paragraph_id} names Bizet.")

    def search(self, query: str, k: int = 10, **_: object) -> list[Hit]:
        self.searched.append(query)
        for prefix, hits in self.results.items():
            if query.startswith(prefix) and (prefix != "Q" or query == "Q"):
                return hits[:k]
        return []


def test_follow_up_queries_join_the_question_to_each_best_document_once() -> None:
    index = Paragraphs({})
    first = [hit("carmen", 0), hit("carmen", 1), hit("opera", 0)]
    queries = follow_up_queries(index, "Where was the composer of Carmen born?", first, 2)  # type: ignore[arg-type]
    assert queries == [
        "Where was the composer of Carmen born? Carmen: The whole paragraph carmen:p0 names Bizet.",
        "Where was the composer of Carmen born? Opera: The whole paragraph opera:p0 names Bizet.",
    ]
    assert follow_up_queries(index, "q", first, 0) == []  # type: ignore[arg-type]


def test_interleave_keeps_the_best_documents_on_top_and_alternates_the_rest() -> None:
    first = [hit("a"), hit("a", 1), hit("b"), hit("c"), hit("d")]
    later = [[hit("a"), hit("x"), hit("y"), hit("c")]]
    merged = interleave(first, later, k=10, keep=2)
    assert [h.chunk_id for h in merged] == ["a-c0", "a-c1", "b-c0", "x-c0", "c-c0", "y-c0", "d-c0"]
    assert [h.rank for h in merged] == list(range(1, 8))
    assert len(interleave(first, later, k=3, keep=1)) == 3


def test_retrieve_adds_the_second_hop_beyond_the_first_rounds_best_documents() -> None:
    index = Paragraphs(
        {"Q": [hit("carmen"), hit("opera"), hit("paris")], "Q ": [hit("carmen"), hit("bizet")]}
    )
    records = search_all(index, ["Q"], Context(second_hop=1))  # type: ignore[arg-type]
    assert set(records) == {"carmen-c0", "opera-c0", "paris-c0", "bizet-c0"}
    assert records["bizet-c0"]["query"].startswith("second hop: Carmen: ")
    assert records["carmen-c0"]["query"] == "Q"  # found by the question itself, not credited to the hop
    assert len(index.searched) == 2

    index = Paragraphs({"Q": [hit("carmen")], "Q ": [hit("bizet")]})
    assert set(search_all(index, ["Q"], Context(second_hop=0))) == {"carmen-c0"}  # type: ignore[arg-type]
    assert index.searched == ["Q"]


@pytest.mark.parametrize("follow_ups", [["Georges Bizet birthplace"], []])
async def test_with_a_model_the_second_hop_searches_what_the_model_writes(
    follow_ups: list[str], install: Callable
) -> None:
    index = Paragraphs({"Q": [hit("carmen"), hit("opera")], "Georges Bizet": [hit("bizet")]})
    context = Context(model="openai/test", second_hop=1)
    judge = ScriptedChatModel(responder=Judge(follow_ups=follow_ups))
    install(context, judge=judge, index=index)
    state = {"question": "Q", "queries": ["Q"]}
    result = await metered(retrieve_node.retrieve)(state, Runtime(context=context))

    records = result["candidates"].value
    (request,) = judge.requests_for("FollowUpQueries")
    assert "<passages>" in request.prompt and "names Bizet" in request.prompt  # the first round's paragraphs
    assert result["usage"]["follow_up"]["calls"] == 1
    if follow_ups:  # a multi-hop question: the model's search finds the bridge passage
        assert records["bizet-c0"]["query"] == "second hop: Georges Bizet birthplace"
        assert index.searched == ["Q", "Georges Bizet birthplace"]
    else:  # the model sees no need: single-hop questions keep the first round alone
        assert set(records) == {"carmen-c0", "opera-c0"}
        assert index.searched == ["Q"]


# the bridge passage of a two-hop question -----------------------------------------------------------------

LELAND = "Films such as Maximum Overdrive (1986) were shot in or around Leland."


def leland_records(overdrive_score: float = 31.5) -> list[dict]:
    return [
        record("leland", LELAND, title="Leland, North Carolina", relevance_mean=96.0, answering=0.62),
        record("leland-2", "Leland is a town in Brunswick County.", title="Leland, North Carolina",
               doc_id="doc-leland", relevance_mean=90.0, answering=0.5),
        record("overdrive", "Maximum Overdrive is a 1986 film directed by Stephen King.",
               title="Maximum Overdrive (film)", relevance_mean=overdrive_score, answering=0.2),
        record("bread", "Sourdough rises with wild yeast.", title="Sourdough", relevance_mean=25.0,
               answering=0.1),
    ]  # fmt: skip


def test_a_passage_the_best_kept_passage_names_is_kept_as_a_bridge() -> None:
    records = leland_records()
    cut, verdicts = judge_all(records, Context())
    assert cut > 31.5  # similarity alone would drop the film's passage
    assert verdicts["overdrive"]["kept"] and BRIDGE_FLAG in verdicts["overdrive"]["flags"]
    assert verdicts["overdrive"]["reason"].startswith("kept: a bridge, 'Leland, North Carolina' names")
    assert not verdicts["bread"]["kept"]  # named by nothing: still dropped
    # kept exactly when the final score reaches the threshold shown: the bridge's is raised to it
    assert verdicts["overdrive"]["final"] == cut == verdicts["overdrive"]["threshold"]
    assert f"its own final 31.5, raised to the threshold {cut:g}" in verdicts["overdrive"]["reason"]
    assert all(v["kept"] == (v["final"] >= v["threshold"]) for v in verdicts.values())


def test_what_the_kept_passage_s_paragraph_names_counts() -> None:
    records = leland_records()
    records[0]["text"] = "Leland is known for its film shoots."  # the kept sentence names no film
    _, alone = judge_all(records, Context())
    assert not alone["overdrive"]["kept"]
    paragraph = f"{records[0]['text']} {LELAND}"  # its paragraph does
    _, verdicts = judge_all(records, Context(), {"leland": paragraph})
    assert verdicts["overdrive"]["kept"] and BRIDGE_FLAG in verdicts["overdrive"]["flags"]


@pytest.mark.parametrize(
    ("context", "score", "why"),
    [
        (Context(model="openai/test"), 31.5, "a model's judgments stand"),
        (Context(second_hop=0), 31.5, "no second hop asked for"),
        (Context(), 12.0, "below the floor"),
    ],
)
def test_no_bridge_when_it_does_not_apply(context: Context, score: float, why: str) -> None:
    _, verdicts = judge_all(leland_records(score), context)
    assert not verdicts["overdrive"]["kept"], why


def test_no_bridge_when_nothing_answers_the_question() -> None:
    records = leland_records()
    for r in records:
        r["answering"] = 0.1  # local mode abstains: nothing at all is kept
    _, verdicts = judge_all(records, Context())
    assert not any(v["kept"] for v in verdicts.values())


def test_rerank_never_cuts_the_bridge() -> None:
    evidence = [record(f"c{n}", relevance_mean=90 - n, final=90 - n, kept=True) for n in range(4)]
    evidence.append(record("bridge", final=30.0, kept=True, flags=[BRIDGE_FLAG]))
    ranked = asyncio.run(
        rerank({"question": "q", "evidence": evidence}, Runtime(context=Context(max_evidence=3)))
    )
    assert "bridge" in ranked["kept"] and len(ranked["kept"]) == 3
