"""The query graph, from a conversation to a verified, cited answer or report.

condense -> rewrite -> evidence (subgraph: retrieve, score, reflect, critique, threshold, corrective loop)
-> rerank -> route
route --direct--> accuracy (only with trusted sources) -> expand -> answer -> verify -> references
route --report--> outline -> approve (optional interrupt) -> section x N (Send, in waves of at most
max_parallel_sections) -> collect -> ... -> customize (retried with its validation problems, capped) -> verify
-> references
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from citewise.context import Context
from citewise.core.llms import metered
from citewise.graph.evidence import graph as evidence
from citewise.graph.evidence import io_retry
from citewise.graph.section import graph as section
from citewise.nodes.accuracy import accuracy
from citewise.nodes.answer import answer
from citewise.nodes.approve import approve
from citewise.nodes.collect import collect, section_failed
from citewise.nodes.condense import condense
from citewise.nodes.customize import customize
from citewise.nodes.expand import expand
from citewise.nodes.failed import failed
from citewise.nodes.outline import outline
from citewise.nodes.references import references
from citewise.nodes.rerank import rerank
from citewise.nodes.rewrite import rewrite
from citewise.nodes.route import route
from citewise.nodes.verify import verify
from citewise.state import InputState, OutlineSection, OutputState, SectionInput, State


def by_route(state: State) -> Literal["accuracy", "outline"]:
    """The path `route` chose (a report's sections check accuracy and expand their own evidence)."""
    return "outline" if state.get("route") == "report" else "accuracy"


def section_input(state: State, planned: OutlineSection, position: int) -> SectionInput:
    """What one section branch is sent: its part of the outline, its focus and its own searches."""
    goal = planned.get("goal") or planned["title"]
    return {
        "section": planned,
        "position": position,
        "report_question": state["question"],
        "outline_titles": [s["title"] for s in state.get("outline", [])],
        "question": f"{state['question']} ({planned['title']}: {goal})",
        "queries": planned.get("queries") or [planned["title"]],
        "attempt": 1,
        "documents": planned.get("documents", []),
        "mode": state.get("mode", "local"),
        "evidence_limit": 0,
        "deadline": state.get("deadline"),
    }


def dispatch(state: State, runtime: Runtime[Context]) -> list[Send] | Literal["customize"]:
    """The next wave of sections not yet written (at most max_parallel_sections), or customize when done."""
    done = state.get("sections", {})
    planned = state.get("outline", [])
    pending = [(n, s) for n, s in enumerate(planned, start=1) if s["id"] not in done]
    if not pending:
        return "customize"
    width = max(1, runtime.context.max_parallel_sections)
    limit = runtime.context.section_evidence
    return [
        Send("section", {**section_input(state, s, n), "evidence_limit": limit}) for n, s in pending[:width]
    ]


def after_customize(state: State, runtime: Runtime[Context]) -> Literal["customize", "verify"]:
    """Another draft while validation fails, a model writes it and attempts remain; else verify."""
    validation = state.get("validation") or {}
    written = any(s.get("status") == "written" for s in state.get("sections", {}).values())
    retry = not validation.get("passed", True) and written and runtime.context.llm
    if retry and validation.get("attempts", 0) < runtime.context.max_customize_attempts:
        return "customize"
    return "verify"


builder = StateGraph(State, input_schema=InputState, output_schema=OutputState, context_schema=Context)
# a run that cannot go on ends with a reply saying why (per node: set_node_defaults breaks a second compile)
builder.add_node(metered(condense, starts_turn=True), error_handler=failed)
builder.add_node(metered(rewrite), error_handler=failed)
builder.add_node("evidence", evidence, error_handler=failed)
builder.add_node(metered(rerank), error_handler=failed)
builder.add_node(metered(accuracy), error_handler=failed)
builder.add_node(metered(expand), retry_policy=io_retry, error_handler=failed)
builder.add_node(metered(route), error_handler=failed)
builder.add_node(metered(answer), error_handler=failed)
builder.add_node(metered(outline), error_handler=failed)
builder.add_node(metered(approve), error_handler=failed)
builder.add_node("section", section, error_handler=section_failed)
builder.add_node(metered(collect), error_handler=failed)
builder.add_node(metered(customize), error_handler=failed)
builder.add_node(metered(verify), error_handler=failed)
builder.add_node(metered(references), retry_policy=io_retry, error_handler=failed)

builder.add_edge(START, "condense")
builder.add_edge("condense", "rewrite")
builder.add_edge("rewrite", "evidence")
builder.add_edge("evidence", "rerank")
builder.add_edge("rerank", "route")
builder.add_conditional_edges("route", by_route, ["accuracy", "outline"])
builder.add_edge("accuracy", "expand")
builder.add_edge("expand", "answer")
builder.add_edge("answer", "verify")
builder.add_edge("outline", "approve")
builder.add_conditional_edges("approve", dispatch, ["section", "customize"])
builder.add_edge("section", "collect")
builder.add_conditional_edges("collect", dispatch, ["section", "customize"])
builder.add_conditional_edges("customize", after_customize, ["customize", "verify"])
builder.add_edge("verify", "references")
builder.add_edge("references", END)

graph = builder.compile(name="citewise")
