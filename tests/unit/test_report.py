"""The report path's decisions with scripted models: route, fan-out, join, reducer, customize loop, verify."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.errors import NodeError
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send
from support.fakes import ScriptedChatModel

from citewise.app.outline_editor import apply_edit
from citewise.context import Context
from citewise.core.evidence import NO_SECTION_EVIDENCE, SECTION_FAILED
from citewise.core.llms import metered
from citewise.core.report import cited_sentences, headings, in_focus, validate, words
from citewise.core.resources import Resources
from citewise.graph.query import after_customize, dispatch
from citewise.nodes.approve import OutlineEditError, edited_outline
from citewise.nodes.collect import collect, section_failed
from citewise.nodes.customize import customize
from citewise.nodes.route import local_route, route
from citewise.nodes.verify import split_answer, verify
from citewise.nodes.write_section import relabel
from citewise.state import merge_sections

MODEL = "openai/test-model"


def run(context: Context) -> Runtime[Context]:
    return Runtime(context=context)


def planned(*titles: str) -> list[dict[str, Any]]:
    return [
        {"id": f"s{n}", "title": t, "goal": f"goal {n}", "queries": [t.lower()], "documents": []}
        for n, t in enumerate(titles, start=1)
    ]


# route --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "documents", "path"),
    [
        ("Compare vaccines and antibiotics", 2, "report"),
        ("How does photosynthesis differ from respiration?", 1, "report"),
        ("Give an overview of glacier retreat", 1, "report"),
        ("Write a short report on honeybee decline", 1, "report"),
        ("What are the pros and cons of bitcoin?", 1, "report"),
        ("How did jazz evolve over the years?", 1, "report"),
        ("Explain why glaciers retreat", 3, "report"),  # an explanation spanning documents
        ("Explain why glaciers retreat", 1, "direct"),  # ... from one document: a direct answer
        ("How deep is Lake Baikal?", 2, "direct"),
        ("Compare vaccines and antibiotics", 0, "direct"),  # nothing kept: the direct path says so
        ("What is the history of the Roman aqueducts?", 1, "report"),
        # a topic word is not a request for a report (SciFact claims once went to reports and never abstained)
        ("LDL cholesterol has a causal role in the development of cardiovascular disease.", 2, "direct"),
        ("Satellite cell dysfunction is a key factor in sarcopenia development.", 2, "direct"),
        ("NAC destabilizes NO to increase the effect of contrast agents on renal functions.", 2, "direct"),
        ("how is Tampa Bay Buccaneers draft history and Lee Roy Selmon connected?", 2, "direct"),
    ],
)
def test_local_route_follows_the_question_form(question: str, documents: int, path: str) -> None:
    decided, reason = local_route(question, documents)
    assert decided == path
    assert reason.startswith(("local rule", "nothing passed"))


@pytest.mark.parametrize(("override", "path"), [("report", "report"), ("direct", "direct")])
async def test_the_caller_overrides_the_route(override: str, path: str) -> None:
    state = {"question": "How deep is Lake Baikal?", "evidence": []}
    result = await route(state, run(Context(route=override)))
    assert result == {"route": path, "route_reason": f"chosen by the caller (route={override})"}


async def test_the_model_routes_with_its_reason(install: Callable) -> None:
    context = Context(model=MODEL)
    judge = ScriptedChatModel(script=[{"route": "report", "reason": "asks for the causes and the effects"}])
    install(context, judge=judge)
    state = {
        "question": "What causes glacier retreat and what follows from it?",
        "evidence": [
            {"chunk_id": "a", "doc_id": "d", "title": "Glaciers", "text": "Ice melts.", "kept": True}
        ],
        "kept": ["a"],
    }
    result = await metered(route)(state, run(context))
    assert result["route"] == "report"
    assert result["route_reason"] == "asks for the causes and the effects"
    assert result["usage"]["route"]["calls"] == 1
    (request,) = judge.calls
    assert "<question>" in request.prompt and "1 passages kept from 1 documents" in request.prompt


async def test_a_malformed_route_falls_back_to_the_local_rule(install: Callable) -> None:
    context = Context(model=MODEL)
    install(context, judge=ScriptedChatModel(responder=lambda request: "not json at all"))
    state = {
        "question": "Compare vaccines and antibiotics",
        "evidence": [{"chunk_id": "a", "doc_id": "d", "title": "V", "text": "x", "kept": True}],
    }
    result = await metered(route)(state, run(context))
    assert result["route"] == "report"
    assert "malformed" in result["route_reason"]


# fan-out, join, reducer ---------------------------------------------------------------------------------


def test_the_fan_out_sends_one_branch_per_section_up_to_the_cap() -> None:
    state = {"question": "Q?", "outline": planned("A", "B", "C", "D", "E"), "sections": {}, "mode": "local"}
    sends = dispatch(state, run(Context(max_parallel_sections=2, section_evidence=4)))
    assert [type(s) for s in sends] == [Send, Send]
    assert [s.node for s in sends] == ["section", "section"]
    assert [s.arg["section"]["id"] for s in sends] == ["s1", "s2"]
    assert [s.arg["position"] for s in sends] == [1, 2]
    first = sends[0].arg
    assert first["queries"] == ["a"] and first["attempt"] == 1 and first["evidence_limit"] == 4
    assert first["question"] == "Q? (A: goal 1)" and first["report_question"] == "Q?"
    assert first["outline_titles"] == ["A", "B", "C", "D", "E"]
    assert "candidates" not in first and "evidence" not in first  # private per branch

    state["sections"] = {"s1": {"id": "s1"}, "s2": {"id": "s2"}}
    assert [s.arg["section"]["id"] for s in dispatch(state, run(Context(max_parallel_sections=2)))] == [
        "s3",
        "s4",
    ]
    wide = dispatch({**state, "sections": {}}, run(Context(max_parallel_sections=10)))
    assert len(wide) == 5
    state["sections"] = {f"s{n}": {"id": f"s{n}"} for n in range(1, 6)}
    assert dispatch(state, run(Context())) == "customize"


def test_an_empty_outline_goes_straight_to_customize() -> None:
    assert dispatch({"question": "Q?", "outline": [], "sections": {}}, run(Context())) == "customize"


async def test_the_join_restores_outline_order_when_sections_finish_out_of_order() -> None:
    state = {
        "outline": planned("A", "B", "C"),
        "sections": {"s3": {"id": "s3", "text": "c"}, "s1": {"id": "s1", "text": "a"}, "s2": {"id": "s2"}},
    }
    update = await collect(state, run(Context()))
    assert isinstance(update["sections"], Overwrite)
    assert list(update["sections"].value) == ["s1", "s2", "s3"]


def test_the_section_reducer_is_idempotent() -> None:
    first = {"s1": {"id": "s1", "text": "a", "status": "written"}}
    second = {"s2": {"id": "s2", "text": "b", "status": "written"}}
    merged = merge_sections(first, second)
    assert merge_sections(merged, second) == merged  # a re-delivered branch result changes nothing
    assert merge_sections(merge_sections(merged, first), first) == merged
    marked = merge_sections(merged, {"s1": {"markers": [1, 2]}})  # verify adds fields, keeps the rest
    assert marked["s1"] == {"id": "s1", "text": "a", "status": "written", "markers": [1, 2]}
    assert merge_sections(None, None) == {}


async def test_a_failed_section_is_recorded_in_its_place() -> None:
    state = {"section": {"id": "s2", "title": "Costs"}, "position": 2}
    update = await section_failed(state, NodeError(node="section", error=RuntimeError("provider exploded")))
    result = update["sections"]["s2"]
    assert result["status"] == "failed"
    assert result["error"] == "RuntimeError: provider exploded"
    assert result["text"].startswith(SECTION_FAILED)
    (listed,) = update["degraded"]  # the run's own list says the report lacks a section
    assert (
        listed["stage"] == "section"
        and "'Costs' failed (RuntimeError: provider exploded)" in listed["reason"]
    )


# approval edits -----------------------------------------------------------------------------------------


class FakeIndex:
    """Only what edited_outline asks of an index: does a document exist."""

    def document(self, doc_id: str) -> object | None:
        return object() if doc_id.startswith("doc-") else None


@pytest.mark.parametrize("reply", [None, True, "ok", {}])
def test_approving_keeps_the_planned_outline(reply: Any) -> None:
    outline = planned("A", "B")
    assert edited_outline(reply, outline, FakeIndex(), "Q?") == outline


def test_an_edited_outline_renames_reorders_drops_adds_and_pins() -> None:
    outline = planned("Causes", "Effects", "Costs")
    reply = {
        "sections": [
            {"id": "s2", "title": "Consequences"},  # renamed and moved first
            {"id": "s1", "title": "Causes", "documents": ["doc-7"]},  # pinned
            "Open questions",  # added (a bare title)
        ]
    }  # s3 dropped
    edited = edited_outline(reply, outline, FakeIndex(), "Why do glaciers retreat?")
    assert [s["id"] for s in edited] == ["s2", "s1", "s4"]  # a new id: the dropped s3's is not reused
    assert [s["title"] for s in edited] == ["Consequences", "Causes", "Open questions"]
    assert edited[0]["goal"] == "goal 2" and edited[0]["queries"][1:] == [
        "effects"
    ]  # kept, title searched too
    assert edited[1]["queries"] == ["causes"] and edited[1]["documents"] == ["doc-7"]
    assert edited[2]["queries"] == ["Open questions Why do glaciers retreat?"]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ([], "non-empty list"),
        ("rewrite it all", "non-empty list"),
        ([{"goal": "no title"}], "section 1 of the edited outline has no title"),
        ([{"title": "A", "documents": ["nope"]}], "pins documents not in the index: nope"),
    ],
)
def test_a_bad_outline_edit_is_refused_with_its_reason(reply: Any, message: str) -> None:
    with pytest.raises(OutlineEditError, match=message):
        edited_outline(reply, planned("A"), FakeIndex(), "Q?")


def test_the_cli_outline_editor_commands() -> None:
    sections = planned("A", "B", "C")
    sections = apply_edit(sections, "rename 2 Better B")
    sections = apply_edit(sections, "move 3 1")
    sections = apply_edit(sections, "drop 2")
    sections = apply_edit(sections, "add New part")
    sections = apply_edit(sections, "pin 1 doc-1 doc-2")
    assert [s["title"] for s in sections] == ["C", "Better B", "New part"]
    assert sections[0]["documents"] == ["doc-1", "doc-2"]
    with pytest.raises(ValueError, match="there is no section 9"):
        apply_edit(sections, "drop 9")
    with pytest.raises(ValueError, match="unknown edit"):
        apply_edit(sections, "shuffle")


# report checks ------------------------------------------------------------------------------------------

GOOD = """Glaciers retreat as the climate warms [S1E1].

## Causes

Warmer summers melt more ice than winter snow replaces [S1E1]. Dark dust speeds melting [S1E2].

## Effects

Sea level rises as the ice melts [S2E1].

## Conclusion

Retreat follows warming and raises the sea [S2E1]."""
LABELS = {"S1E1": "c1", "S1E2": "c2", "S2E1": "c3"}


def test_a_good_report_passes_every_check() -> None:
    assert validate(GOOD, planned("Causes", "Effects"), LABELS, budget=200) == []
    assert headings(GOOD) == ["Causes", "Effects", "Conclusion"]
    assert words("Ice melts [S1E1].") == 2


def test_each_report_problem_is_named() -> None:
    outline = planned("Causes", "Effects", "Costs")
    bad = GOOD.replace("[S2E1]", "[S9E9]") + "\n\n## Costs\n\n"
    problems = validate(bad, outline, LABELS, budget=20)
    assert "citations that name no evidence: [S9E9]" in problems
    assert "section empty: ## Costs" in problems
    assert any(p.startswith("words") or "over the budget of 20" in p for p in problems)
    missing = validate(GOOD, outline, LABELS, budget=200)
    assert missing == ["section missing: ## Costs"]
    swapped = (
        GOOD.replace("## Causes", "## X").replace("## Effects", "## Causes").replace("## X", "## Effects")
    )
    assert any(
        p.startswith("headings do not match the outline")
        for p in validate(swapped, planned("Causes", "Effects"), LABELS, 200)
    )
    repeated = GOOD.replace("Sea level rises as the ice melts [S2E1].", "Dark dust speeds melting [S1E2].")
    repeated = repeated.replace("Warmer summers melt more ice than winter snow replaces [S1E1]. ", "")
    assert any(
        p.startswith("paragraph repeated")
        for p in validate(repeated, planned("Causes", "Effects"), LABELS, 200)
    )


def test_cited_sentences_keep_their_labels() -> None:
    text = "Ice melts fast. [S1E1] Dust darkens it [S1E2][S1E3]. An uncited tail"
    assert cited_sentences(text) == [
        ("Ice melts fast.", ["S1E1"]),
        ("Dust darkens it.", ["S1E2", "S1E3"]),  # labels before the full stop
        ("An uncited tail", []),
    ]


def test_section_labels_become_unique_and_invented_ones_go() -> None:
    assert relabel("A [E1]. B [E2][E7].", "S3", {"E1", "E2"}) == "A [S3E1]. B [S3E2]."


# customize loop -----------------------------------------------------------------------------------------


def report_state(outline: list[dict[str, Any]]) -> dict[str, Any]:
    sections = {
        s["id"]: {
            "id": s["id"],
            "title": s["title"],
            "status": "written",
            "text": f"{s['title']} holds [S{n}E1].",
            "labels": {f"S{n}E1": f"c{n}"},
            "kept": [f"c{n}"],
            "evidence": [{"chunk_id": f"c{n}", "doc_id": "d", "title": "T", "text": "t", "final": 50.0}],
        }
        for n, s in enumerate(outline, start=1)
    }
    return {"question": "Q?", "outline": outline, "sections": sections, "evidence": [], "kept": []}


async def test_customize_retries_with_its_problems_and_stops_at_the_cap(
    install: Callable, tmp_path, embedder
) -> None:
    outline = planned("Causes", "Effects")
    drafts = [
        "Intro [S1E1].\n\n## Causes\n\nCauses holds [S1E1].",  # 1 problem: Effects missing
        "Intro [S9E9].\n\n## Causes\n\nCauses holds [S1E1].",  # 2 problems: worse
    ]
    context = Context(model=MODEL, max_customize_attempts=2, index_dir=str(tmp_path / "none"))
    writer = ScriptedChatModel(script=list(drafts))
    install(context, writer=writer, index=LocalIndex(embedder))
    state = report_state(outline)
    first = await customize(state, run(context))
    assert first["validation"] == {
        "attempts": 1,
        "problems": ["section missing: ## Effects"],
        "passed": False,
        "history": [["section missing: ## Effects"]],
    }
    state |= first
    assert after_customize(state, run(context)) == "customize"  # a second draft, with feedback
    second = await customize(state, run(context))
    state |= second
    assert "<problems>\n- section missing: ## Effects\n</problems>" in writer.calls[1].prompt
    assert "<problems>\n" not in writer.calls[0].prompt
    validation = state["validation"]
    assert validation["attempts"] == 2 and len(validation["history"][1]) == 2
    # at the cap the best model draft still misses a section: local mode's merge of the same sections has both
    assert state["draft"] == "## Causes\n\nCauses holds. [S1E1]\n\n## Effects\n\nEffects holds. [S2E1]"
    assert validation["passed"] is True and validation["problems"] == []
    (listed,) = second["degraded"]
    assert listed["stage"] == "customize" and "(section missing: ## Effects)" in listed["reason"]
    assert after_customize(state, run(context)) == "verify"  # the cap holds


class NoParagraphs:
    """An index that knows no paragraph: verification reads each chunk's own text."""

    def paragraph(self, paragraph_id: str) -> None:
        return None


class LocalIndex(NoParagraphs):
    """An index that knows no paragraph and embeds with the real model: local mode's merge can run."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder

    def embed(self, texts: list[str]) -> Any:
        return self.embedder.embed(texts)


def test_local_mode_never_retries_customize() -> None:
    state = report_state(planned("A")) | {"validation": {"attempts": 1, "passed": False, "problems": ["x"]}}
    assert after_customize(state, run(Context(max_customize_attempts=5))) == "verify"


# verify on a report --------------------------------------------------------------------------------------


def test_headings_and_paragraphs_are_parts_of_their_own() -> None:
    parts = split_answer(
        "Intro [S1E1].\n\n## Causes\nIce melts. [S1E2]\nDust too [S1E3].\n\n## Effects\nSea rises."
    )
    assert parts == [
        "Intro [S1E1].",
        "",
        "## Causes",
        "",
        "Ice melts [S1E2].",
        "Dust too [S1E3].",
        "",
        "## Effects",
        "",
        "Sea rises.",
    ]


async def test_verify_keeps_headings_numbers_one_marker_per_chunk_and_notes_empty_sections() -> None:
    draft = (
        "Warm summers melt the ice [S0E1].\n\n## Causes\n\nWarm summers melt the ice [S1E1].\n\n## Effects"
        "\n\nThe moon is made of cheese [S2E1].\n\n## Conclusion\n\nThe sea rises as ice melts [S2E1]."
    )
    state = {
        "draft": draft,
        "labels": {"S0E1": "c1", "S1E1": "c1", "S2E1": "c2"},  # two labels of one chunk
        "evidence": [
            {"chunk_id": "c1", "doc_id": "d1", "title": "Ice", "text": "Warm summers melt the ice."},
            {"chunk_id": "c2", "doc_id": "d2", "title": "Sea", "text": "The sea rises as ice melts."},
        ],
        "outline": planned("Causes", "Effects"),
    }
    result = await verify(state, run(Context(local_support=0.6, resources=Resources(index=NoParagraphs()))))
    assert result["answer"] == (
        "Warm summers melt the ice [1].\n\n## Causes\n\nWarm summers melt the ice [1].\n\n## Effects\n\n"
        "No sentence of this section could be verified against its sources.\n\n## Conclusion\n\n"
        "The sea rises as ice melts [2]."
    )
    assert [(c["marker"], c["chunk_id"]) for c in result["citations"]] == [(1, "c1"), (2, "c2")]
    assert result["unsupported"] == ["The moon is made of cheese."]
    assert result["sections"] == {"s1": {"markers": [1]}, "s2": {"markers": []}}


def test_a_section_without_evidence_says_so_and_stands_unverified() -> None:
    assert NO_SECTION_EVIDENCE.startswith("Your documents hold no evidence")
    assert split_answer(f"## A\n\n{NO_SECTION_EVIDENCE}") == ["## A", "", NO_SECTION_EVIDENCE]


async def test_a_new_turn_resets_usage_and_the_report_keys() -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    from citewise.nodes.condense import condense

    state = {"messages": [HumanMessage("Compare A and B"), AIMessage("..."), HumanMessage("How deep is it?")]}
    update = await condense(state, run(Context()))
    assert isinstance(update["usage"], Overwrite) and update["usage"].value == {}
    assert isinstance(update["sections"], Overwrite) and update["sections"].value == {}
    assert update["outline"] == [] and update["validation"] == {} and update["attempt"] == 0


async def test_a_new_turn_keeps_its_own_condense_request_inside_the_reset(install: Callable) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    from citewise.nodes.condense import condense

    context = Context(model=MODEL)
    install(context, judge=ScriptedChatModel(script=["How deep is Lake Baikal?"]))
    state = {"messages": [HumanMessage("Lake Baikal"), AIMessage("..."), HumanMessage("How deep is it?")]}
    update = await metered(condense)(state, run(context))
    assert update["question"] == "How deep is Lake Baikal?"
    # the reset drops the earlier turns' usage; this turn's own request is counted inside it, once
    assert isinstance(update["usage"], Overwrite)
    assert update["usage"].value["condense"]["calls"] == 1 and list(update["usage"].value) == ["condense"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"local_cosine_zero": 0.7, "local_cosine_full": 0.7}, "local_cosine_zero (0.7) must be below"),
        ({"local_cosine_zero": 0.71}, "local_cosine_zero (0.71) must be below local_cosine_full (0.7)"),
        ({"max_parallel_sections": 0}, "max_parallel_sections must be at least 1 (got 0)"),
        ({"min_sections": 4, "max_sections": 3}, "min_sections (4) must not exceed max_sections (3)"),
        ({"score_batch_size": -5}, "score_batch_size must be at least 1 (got -5)"),
        ({"max_rewrites": -1}, "max_rewrites must not be negative (got -1)"),
        ({"alpha": 1.5}, "alpha must be between 0 and 1 (got 1.5)"),
        ({"paragraph_dense_weight": -0.1}, "paragraph_dense_weight must be between 0 and 1 (got -0.1)"),
        ({"second_hop": -1}, "second_hop must not be negative (got -1)"),
    ],
)
def test_settings_no_run_can_use_are_refused_with_the_reason(settings: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Context(**settings)


def test_every_default_setting_is_valid() -> None:
    assert Context().max_parallel_sections >= 1


def test_citewise_s_own_no_evidence_sentences_are_not_repeated_paragraphs() -> None:
    text = (
        "Glaciers retreat as the climate warms [S1E1].\n\n## Causes\n\nWarm summers melt ice [S1E1].\n\n"
        f"## Effects\n\n{NO_SECTION_EVIDENCE}\n\n## Costs\n\n{NO_SECTION_EVIDENCE}"
    )
    assert validate(text, planned("Causes", "Effects", "Costs"), LABELS, budget=200) == []


def tower(doc: str, name: str, text: str = "was painted white in 1871.") -> dict[str, Any]:
    return {
        "doc_id": doc,
        "chunk_id": f"{doc}#0",
        "title": f"The {name} tower",
        "text": f"The {name} tower {text}",
    }


def test_a_report_on_a_named_thing_keeps_to_the_documents_that_name_it() -> None:
    records = [
        tower("a", "Kalmvik"),
        tower("b", "Ormholm"),
        {"doc_id": "b", "chunk_id": "b#1", "title": "", "text": "Its keeper was Maelis Quarrington."},
        tower("c", "Varholm"),
    ]
    focused = in_focus("Write a report on the Ormholm tower and who kept it", records)
    assert [r["chunk_id"] for r in focused] == ["b#0", "b#1"]  # the whole document, its keeper chunk too
    # nothing named, or everything (or nothing) names it: every record stays
    assert in_focus("Write a report on painted towers", records) == records
    assert in_focus("Write a report on the towers of the 1871 survey", records) == records
    assert in_focus("Write a report on the Zunessa tower", records) == records


def test_the_local_conclusion_sums_up_the_sections_not_the_background(embedder) -> None:
    from types import SimpleNamespace

    import numpy as np

    from citewise.nodes.customize import concluding_sentences

    said = [
        "The transmission spectrum of GJ 486b shows no water absorption at the precision reached.",
        "A clear hydrogen-dominated atmosphere is excluded at high confidence by the IRD data.",
    ]
    candidates = [
        ("E1", "Exoplanets around M dwarfs are common, and many of them are found by transit surveys."),
        ("E2", "Our results suggest that GJ 486b has no clear water or hydrogen-dominated atmosphere."),
        ("E3", "A clear hydrogen-dominated atmosphere is excluded at high confidence by the IRD data."),
    ]
    index = SimpleNamespace(embedder=embedder)
    seen = embedder.embed(said)
    chosen = concluding_sentences(
        index, "Write a report on the atmosphere of GJ 486b", said, candidates, seen
    )
    assert chosen[0][0] == "E2", chosen  # the finding that sums up the sections comes first
    assert "E3" not in [label for label, _ in chosen]  # what a section already says is not said again
    assert concluding_sentences(index, "anything", [], candidates, np.zeros((0, embedder.dim))) == []
