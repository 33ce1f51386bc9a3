"""The section subgraph: one report section's own evidence, ranked, checked for accuracy, expanded, written.

With trusted sources (Context.trusted) the section's evidence is stance-checked and ordered by RSV as a
direct answer's is; without, `accuracy` passes it through.

Sent once per outline section (graph/query.py fans out with Send). Its state is private to the branch, so
parallel sections never overwrite each other's candidates; what it hands back is only its result under its
section id and its model spend.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from citewise.context import Context
from citewise.core.llms import metered
from citewise.graph.evidence import graph as evidence
from citewise.graph.evidence import io_retry
from citewise.nodes.accuracy import accuracy
from citewise.nodes.expand import expand
from citewise.nodes.rerank import rerank
from citewise.nodes.write_section import write_section
from citewise.state import SectionInput, SectionOutput, SectionState

builder = StateGraph(
    SectionState, input_schema=SectionInput, output_schema=SectionOutput, context_schema=Context
)
builder.add_node("evidence", evidence)
builder.add_node(metered(rerank))
builder.add_node(metered(accuracy))
builder.add_node(metered(expand), retry_policy=io_retry)
builder.add_node(metered(write_section))

builder.add_edge(START, "evidence")
builder.add_edge("evidence", "rerank")
builder.add_edge("rerank", "accuracy")
builder.add_edge("accuracy", "expand")
builder.add_edge("expand", "write_section")
builder.add_edge("write_section", END)

graph = builder.compile(name="section")
