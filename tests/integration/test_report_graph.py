"""The report path end to end on a real index: local mode, scripted models, approval through a checkpointer,
and the real `openai` client against a loopback server."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from support.fake_openai import Delay, SchemaResponder
from support.fakes import Judge, Request, ScriptedChatModel, scripted_llm
from typer.testing import CliRunner

from citewise.app.cli import app
from citewise.context import Context
from citewise.core.evidence import NO_ANSWER, SECTION_FAILED
from citewise.core.report import headings
from citewise.core.resources import Resources
from citewise.graph.query import builder, graph
from citewise.index import Index
from citewise.index.embeddings import Embedder

pytestmark = pytest.mark.integration

MARKER = re.compile(r"\[(\d+)\]")
OVERVIEW = "Give an overview of how vaccines and antibodies protect against disease"
UNANSWERABLE = "Compare the 1998 and 2002 FIFA World Cup finals"
SPREAD = "Give an overview of vaccines, volcanoes and glaciers"


async def ask(question: str, context: Context) -> dict[str, Any]:
    return await graph.ainvoke({"messages": [HumanMessage(question)]}, context=context)


def assert_markers_resolve(result: dict[str, Any], index_dir: str, embedder: Embedder) -> None:
    """Every [n] of the answer has a citation, and every citation points at a stored chunk."""
    markers = {int(m) for m in MARKER.findall(result["answer"])}
    cited = {c["marker"]: c["chunk_id"] for c in result["citations"]}
    assert markers == set(cited), (markers, cited)
    with Index.open(index_dir, embedder=embedder, create=False) as index:
        assert set(index.chunks(list(cited.values()))) == set(cited.values())


def section_titles(result: dict[str, Any]) -> list[str]:
    return [h for h in headings(result["answer"]) if h != "Conclusion"]


# local mode ---------------------------------------------------------------------------------------------


async def test_a_local_report_has_the_outline_s_sections_each_cited(
    resources: Resources, corpus_index: str, embedder: Embedder
) -> None:
    result = await ask(OVERVIEW, Context(resources=resources, index_dir=corpus_index))

    assert result["route"] == "report" and result["route_reason"].startswith("local rule")
    assert result["mode"] == "local"
    titles = [s["title"] for s in result["outline"]]
    assert 1 <= len(titles) <= Context().max_sections
    assert section_titles(result) == titles  # headings in outline order, nothing merged into sentences
    assert list(result["sections"]) == [s["id"] for s in result["outline"]]
    assert all(s["status"] in ("written", "no_evidence") for s in result["sections"].values())
    assert result["validation"]["passed"], result["validation"]
    assert result["citations"]
    assert_markers_resolve(result, corpus_index, embedder)
    for section in result["sections"].values():  # each section cites only evidence of its own
        assert set(section["labels"].values()) <= {r["chunk_id"] for r in section["evidence"]}
        assert all(
            label.startswith(f"S{list(result['sections']).index(section['id']) + 1}E")
            for label in section["labels"]
        )
    written = [s for s in result["sections"].values() if s["status"] == "written"]
    assert any(s["markers"] for s in written)


async def test_a_report_the_documents_cannot_support_says_so(resources: Resources, corpus_index: str) -> None:
    result = await ask(UNANSWERABLE, Context(resources=resources, index_dir=corpus_index, route="report"))
    assert result["route"] == "report"
    assert result["answer"].startswith(NO_ANSWER)
    assert not [s for s in result["sections"].values() if s["status"] == "written"]
    assert result["validation"]["passed"] is False


async def test_auto_routes_a_simple_question_to_the_direct_answer(
    resources: Resources, corpus_index: str
) -> None:
    result = await ask(
        "What do B cells produce after vaccination?", Context(resources=resources, index_dir=corpus_index)
    )
    assert result["route"] == "direct"
    assert not result["outline"] and not result["sections"]
    assert "##" not in result["answer"]


async def test_a_report_then_a_direct_question_on_one_thread_keeps_no_stale_report_keys(
    resources: Resources,
    corpus_index: str,
) -> None:
    paused = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    context = Context(resources=resources, index_dir=corpus_index)
    first = await paused.ainvoke({"messages": [HumanMessage(OVERVIEW)]}, config, context=context)
    second = await paused.ainvoke(
        {"messages": [HumanMessage("What do B cells produce after vaccination?")]}, config, context=context
    )
    assert first["route"] == "report" and second["route"] == "direct"
    assert second["outline"] == [] and second["sections"] == {} and second["validation"] == {}


def test_ask_mode_report_json_has_the_report_keys(corpus_index: str) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["ask", OVERVIEW, "--index", corpus_index, "--mode", "report", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["route"] == "report" and payload["route_reason"] == "chosen by the caller (route=report)"
    assert {"id", "title", "goal", "queries", "documents"} <= set(payload["outline"][0])
    assert [s["id"] for s in payload["sections"]] == [s["id"] for s in payload["outline"]]
    assert {"id", "title", "text", "markers", "evidence", "threshold", "status"} <= set(
        payload["sections"][0]
    )
    assert set(payload["validation"]) >= {"attempts", "problems", "passed"}
    shown = runner.invoke(app, ["ask", OVERVIEW, "--index", corpus_index, "--mode", "report"])
    assert shown.exit_code == 0
    assert "Sections (" in shown.stdout and "validation after 1 draft(s): passed" in shown.stdout
    direct = runner.invoke(app, ["ask", OVERVIEW, "--index", corpus_index, "--mode", "answer", "--json"])
    assert json.loads(direct.stdout)["route"] == "direct"


# approval ------------------------------------------------------------------------------------------------


async def test_the_outline_is_approved_edited_and_resumed_through_a_checkpointer(
    resources: Resources, corpus_index: str
) -> None:
    paused = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "approve"}}
    context = Context(resources=resources, index_dir=corpus_index, route="report", approve_outline=True)
    stopped = await paused.ainvoke({"messages": [HumanMessage(OVERVIEW)]}, config, context=context)

    (pending,) = stopped["__interrupt__"]
    planned = pending.value["outline"]
    assert planned and "how_to_resume" in pending.value
    assert "answer" not in stopped or not stopped.get("citations")  # nothing written before approval
    edited = [
        {"id": planned[0]["id"], "title": "What vaccines contain"},
        {"title": "How honeybees pollinate", "queries": ["honeybees pollinate flowers"]},
    ]
    result = await paused.ainvoke(Command(resume=edited), config, context=context)

    assert [s["title"] for s in result["outline"]] == ["What vaccines contain", "How honeybees pollinate"]
    assert section_titles(result) == ["What vaccines contain", "How honeybees pollinate"]
    assert set(result["sections"]) == {s["id"] for s in result["outline"]}
    bees = result["sections"][result["outline"][1]["id"]]
    assert bees["status"] == "written" and "honeybee" in bees["text"].lower()


async def test_approval_without_a_checkpointer_is_refused_clearly(
    resources: Resources, corpus_index: str
) -> None:
    context = Context(resources=resources, index_dir=corpus_index, route="report", approve_outline=True)
    result = await ask(OVERVIEW, context)
    assert result["error"]["kind"] == "request"
    assert "outline approval needs a checkpointer" in result["error"]["message"]
    assert result["messages"][-1].content.startswith("citewise could not answer this (request, in approve)")
    assert result["citations"] == [] and result["evidence"] == []


def test_ask_approve_takes_edits_from_the_terminal(corpus_index: str) -> None:
    runner = CliRunner()
    result = runner.invoke(
        app,
        ["ask", OVERVIEW, "--index", corpus_index, "--mode", "report", "--approve", "--json"],
        input="rename 1 Vaccine ingredients\nadd Tides and the moon\nok\n",
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout[result.stdout.index("{") :])  # the test runner echoes typed input
    titles = [s["title"] for s in payload["outline"]]
    assert titles[0] == "Vaccine ingredients" and titles[-1] == "Tides and the moon"
    assert "Planned outline:" in result.stderr


# scripted models -----------------------------------------------------------------------------------------

SECTION = re.compile(r'<section\b[^>]*\btitle="([^"]*)"[^>]*>\n(.*?)\n</section>', re.DOTALL)


class Writer:
    """The scripted writer: a three-part outline, sections citing their first evidence, a merged report."""

    def __init__(self, fail: str | None = None) -> None:
        self.fail = fail

    def __call__(self, request: Request) -> Any:
        if request.schema == "PlannedOutline":
            return {
                "sections": [
                    {"title": "Vaccines", "goal": "what vaccines do", "queries": ["vaccines immune system"]},
                    {"title": "Antibodies", "goal": "what B cells make", "queries": ["B cells antibodies"]},
                    {
                        "title": "Memory",
                        "goal": "how long it lasts",
                        "queries": ["memory cells remain years"],
                    },
                ]
            }
        sections = SECTION.findall(request.prompt)
        if sections:
            return SchemaResponder.report([(t, b) for t, b in sections])
        if self.fail and f'section "{self.fail}"' in request.prompt:
            raise RuntimeError(f"the writer failed on {self.fail}")
        first = next(iter(request.evidence.items()), None)
        return f"{first[1].split('.')[0]} [{first[0]}]." if first else "Nothing."


class Routing(Judge):
    """The scripted judge, which also routes to a report."""

    def __call__(self, request: Request) -> Any:
        if request.schema == "RouteDecision":
            return {"route": "report", "reason": "three parts"}
        return super().__call__(request)


@pytest.fixture
def scripted() -> Callable[..., tuple[ScriptedChatModel, ScriptedChatModel]]:
    """Give a context resources whose models are scripted (a routing judge, or the one given; the writer)."""

    def install(
        context: Context, writer: Writer, judge: Routing | None = None
    ) -> tuple[ScriptedChatModel, ScriptedChatModel]:
        judge_model = ScriptedChatModel(responder=judge or Routing(support=0.3))
        writer_model = ScriptedChatModel(responder=writer)
        pair = (scripted_llm(judge_model, context), scripted_llm(writer_model, context))
        context.resources = Resources(models=pair)
        return judge_model, writer_model

    return install


async def test_a_failing_section_does_not_lose_the_others(corpus_index: str, scripted: Callable) -> None:
    context = Context(index_dir=corpus_index, model="openai/test-model", n_samples=1)
    _, writer = scripted(context, Writer(fail="Antibodies"))
    result = await ask(OVERVIEW, context)

    assert result["route"] == "report" and result["route_reason"] == "three parts"
    statuses = {s["title"]: s["status"] for s in result["sections"].values()}
    assert statuses == {"Vaccines": "written", "Antibodies": "failed", "Memory": "written"}
    failed = next(s for s in result["sections"].values() if s["status"] == "failed")
    assert "RuntimeError: the writer failed on Antibodies" in failed["error"]
    assert section_titles(result) == ["Vaccines", "Antibodies", "Memory"]
    assert SECTION_FAILED in result["answer"]
    assert len(writer.requests_for("PlannedOutline")) == 1
    (lost,) = result["degraded"]
    assert lost["stage"] == "section" and "'Antibodies' failed" in lost["reason"]
    assert result["usage"]["write_section"]["calls"] >= 2
    assert 1 <= result["usage"]["customize"]["calls"] <= context.max_customize_attempts


class Uncited(Writer):
    """A writer whose "Memory" section cites nothing (a small model's prose without markers)."""

    def __call__(self, request: Request) -> Any:
        if 'section "Memory"' in request.prompt and not SECTION.findall(request.prompt):
            return "Memory lasts a long time. It is very important for everyone."
        return super().__call__(request)


async def test_a_model_section_citing_nothing_is_local_mode_s_section_and_listed(
    corpus_index: str, scripted: Callable
) -> None:
    context = Context(index_dir=corpus_index, model="openai/test-model", n_samples=1)
    scripted(context, Uncited())
    result = await ask(OVERVIEW, context)

    memory = next(s for s in result["sections"].values() if s["title"] == "Memory")
    assert memory["status"] == "written" and "important for everyone" not in memory["text"]
    assert re.search(r"\[S3E\d+\]", memory["text"])  # the evidence's own sentences, cited
    (listed,) = [d for d in result["degraded"] if d["stage"] == "write_section"]
    assert "'Memory' cites none of its evidence: local mode's section is shown" in listed["reason"]


class BadMerge(Writer):
    """A writer whose merged report loses the sections (a small model repeating a heading)."""

    def __call__(self, request: Request) -> Any:
        if SECTION.findall(request.prompt):
            return "## Conclusion\n\nThe end.\n\n## Conclusion\n\nThe end."
        return super().__call__(request)


async def test_a_merged_report_worse_than_local_mode_s_merge_is_replaced_and_listed(
    corpus_index: str, scripted: Callable, embedder: Embedder
) -> None:
    context = Context(index_dir=corpus_index, model="openai/test-model", n_samples=1)
    _, writer = scripted(context, BadMerge())
    result = await ask(OVERVIEW, context)

    assert len([r for r in writer.calls if SECTION.findall(r.prompt)]) == context.max_customize_attempts
    assert section_titles(result) == ["Vaccines", "Antibodies", "Memory"]  # the sections, merged locally
    assert "The end." not in result["answer"]
    assert not any("section missing" in p for p in result["validation"]["problems"])
    (listed,) = [d for d in result["degraded"] if d["stage"] == "customize"]
    assert "local mode's merge of the sections is shown" in listed["reason"]
    assert_markers_resolve(result, corpus_index, embedder)


class Vetoing(Routing):
    """A routing judge that finds no sentence supported (a small model's verify step)."""

    def __call__(self, request: Request) -> Any:
        if request.schema == "SupportMap":
            none = [{"sentence": n, "sources": [], "supported": False} for n in request.sentences]
            return {"sentences": none}
        return super().__call__(request)


async def test_a_report_the_model_verifies_none_of_keeps_its_sentences_checked_locally(
    corpus_index: str, scripted: Callable, embedder: Embedder
) -> None:
    context = Context(index_dir=corpus_index, model="openai/test-model", n_samples=1)
    scripted(context, Writer(), judge=Vetoing(support=0.3))
    result = await ask(OVERVIEW, context)

    assert not result["answer"].startswith(NO_ANSWER)  # not withheld whole
    assert section_titles(result) == ["Vaccines", "Antibodies", "Memory"]
    assert_markers_resolve(result, corpus_index, embedder)
    (listed,) = [d for d in result["degraded"] if d["stage"] == "verify"]
    assert "checked by word overlap" in listed["reason"]


class NoOutline(Writer):
    """A writer whose outline has no sections."""

    def __call__(self, request: Request) -> Any:
        return {"sections": []} if request.schema == "PlannedOutline" else super().__call__(request)


async def test_an_unusable_model_outline_is_planned_from_the_evidence_and_listed(
    corpus_index: str, scripted: Callable
) -> None:
    context = Context(index_dir=corpus_index, model="openai/test-model", n_samples=1)
    scripted(context, NoOutline())
    result = await ask(OVERVIEW, context)

    assert result["route"] == "report" and len(result["outline"]) >= 2  # the local planner's sections
    assert all(s["status"] == "written" for s in result["sections"].values())
    (listed,) = [d for d in result["degraded"] if d["stage"] == "outline"]
    assert listed["stage"] == "outline" and "planned from the evidence" in listed["reason"]


@pytest.mark.parametrize("profile", ["lean", "full"])
async def test_under_lean_a_question_of_parts_is_planned_a_section_per_part_without_asking(
    corpus_index: str, scripted: Callable, profile: str
) -> None:
    context = Context(index_dir=corpus_index, model="openai/test-model", n_samples=1, profile=profile)
    _, writer = scripted(context, Writer())
    result = await ask("Give an overview of how vaccines train immunity and what memory cells do", context)

    asked = len(writer.requests_for("PlannedOutline"))
    if profile == "lean":  # a small model's outline lost the question's parts
        assert asked == 0
        assert [s["title"] for s in result["outline"]] == [
            "How vaccines train immunity",
            "What memory cells do",
        ]
    else:
        assert asked == 1


class OneSection(Writer):
    """A writer whose outline has one section, however often it is asked."""

    def __call__(self, request: Request) -> Any:
        if request.schema == "PlannedOutline":
            return {"sections": [{"title": "Everything", "goal": "All of it.", "queries": ["vaccines"]}]}
        return super().__call__(request)


async def test_an_outline_with_too_few_sections_is_asked_again_then_filled_from_the_evidence(
    corpus_index: str, scripted: Callable
) -> None:
    context = Context(index_dir=corpus_index, model="openai/test-model", n_samples=1, min_sections=2)
    _, writer = scripted(context, OneSection())
    result = await ask(OVERVIEW, context)

    assert len(writer.requests_for("PlannedOutline")) == 2  # asked once more, with the problem
    assert "had 1 section(s), fewer than the 2" in writer.requests_for("PlannedOutline")[1].prompt
    assert result["route"] == "report" and len(result["outline"]) >= 2
    assert result["outline"][0]["title"] == "Everything"  # the model's section first, then the evidence's
    (listed,) = [d for d in result["degraded"] if d["stage"] == "outline"]
    assert "filled from the evidence" in listed["reason"]


# the real openai client ---------------------------------------------------------------------------------


class SlowFirstSection(SchemaResponder):
    """SchemaResponder that answers the first section's writing request last."""

    def __call__(self, request: dict[str, Any]) -> Any:
        reply = self.reply(request)
        text = json.dumps(request.get("messages", []))
        if 'section \\"Part 1\\"' in text:
            return Delay(0.8, reply)
        return reply


async def test_a_report_through_the_openai_client_restores_outline_order(
    corpus_index: str, embedder: Embedder, serve: Callable
) -> None:
    topics = ["vaccines immune system", "volcanoes magma eruption", "glaciers ice retreat"]
    server = serve(SlowFirstSection(route="report", sections=3, queries=topics))
    context = Context(index_dir=corpus_index, model="openai/test-writer", judge_model="openai/test-judge")
    result = await ask(SPREAD, context)

    assert result["mode"] == "llm" and result["route"] == "report"
    assert [s["title"] for s in result["outline"]] == ["Part 1", "Part 2", "Part 3"]
    assert section_titles(result) == ["Part 1", "Part 2", "Part 3"]  # Part 1 finished last
    assert list(result["sections"]) == ["s1", "s2", "s3"]
    assert result["validation"]["passed"], result["validation"]
    assert_markers_resolve(result, corpus_index, embedder)
    stages = {stage for stage, spent in result["usage"].items() if spent["calls"]}
    assert {"route", "outline", "write_section", "customize", "verify"} <= stages
    assert server.max_in_flight > 1  # sections ran side by side


def test_sections_of_one_wave_write_concurrently_and_waves_respect_the_cap(
    corpus_index: str, serve: Callable
) -> None:
    seen: list[int] = []
    lock = threading.Lock()

    class Counting(SchemaResponder):
        def __call__(self, request: dict[str, Any]) -> Any:
            text = json.dumps(request.get("messages", []))
            found = re.search(r'section \\"Part (\d)\\"', text)
            if found:
                with lock:
                    seen.append(int(found.group(1)))
            return Delay(0.2, self.reply(request))

    topics = ["vaccines immune system", "volcanoes magma", "glaciers ice", "tides moon"]
    server = serve(Counting(route="report", sections=4, queries=topics))
    context = Context(
        index_dir=corpus_index, model="openai/w", judge_model="openai/j", max_parallel_sections=2, n_samples=1
    )
    import asyncio

    result = asyncio.run(ask(SPREAD, context))
    assert len(result["sections"]) == 4
    first_wave, second_wave = seen[:2], seen[2:]
    assert sorted(first_wave) == [1, 2]  # the first wave: two sections side by side
    assert second_wave and set(second_wave) <= {3, 4}  # the rest only after it (a section may find nothing)
    assert server.max_in_flight <= Context().max_concurrency
