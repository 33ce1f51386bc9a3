"""The evidence subgraph: retrieve -> score -> reflect -> critique -> threshold, with the corrective loop.

One compiled graph serves the question's own pass in the query graph and every report section, unchanged.
Its input is the question it judges against and the searches of the first pass; its private state holds the
pass's candidates (so two sections never share them); it hands back every candidate with its verdict and the
cut. When a pass keeps nothing and corrective passes remain (Context.max_rewrites), `rewrite` writes new
searches from what failed and the pass runs again.
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from citewise.context import Context
from citewise.core.llms import metered
from citewise.nodes.critique import critique
from citewise.nodes.reflect import reflect
from citewise.nodes.retrieve import retrieve
from citewise.nodes.rewrite import rewrite
from citewise.nodes.score import score
from citewise.nodes.threshold import threshold
from citewise.state import EvidenceInput, EvidenceOutput, EvidenceState

io_retry = RetryPolicy(max_attempts=3, retry_on=(OSError, TimeoutError))


def after_threshold(state: EvidenceState, runtime: Runtime[Context]) -> Literal["rewrite", "__end__"]:
    """Back to rewrite when nothing passed and corrective passes remain, else done.

    Under the lean profile only a pass no judge read goes back (local mode's rule found no answering passage,
    so no request was sent): its corrective pass is local mode's, which finds what a follow-up's own words
    missed ("What physical states survive the Virasoro constraints?" after a question on N=2 strings), and
    costs a request only if it finds a passage to judge. After a pass a judge read, another would judge
    again: the lean request budget ends it.
    """
    evidence = state.get("evidence", [])
    kept_any = any(r.get("kept") for r in evidence)
    judged = any(r.get("relevance_samples") for r in evidence)
    spent = runtime.context.lean and judged
    if not kept_any and state.get("attempt", 0) <= runtime.context.max_rewrites and not spent:
        return "rewrite"
    return "__end__"  # END, which langgraph types as a plain str


builder = StateGraph(
    EvidenceState, input_schema=EvidenceInput, output_schema=EvidenceOutput, context_schema=Context
)
builder.add_node(metered(retrieve), retry_policy=io_retry)
builder.add_node(metered(score))
builder.add_node(metered(reflect))
builder.add_node(metered(critique))
builder.add_node(metered(threshold))
builder.add_node(metered(rewrite))

builder.add_edge(START, "retrieve")
builder.add_edge("retrieve", "score")
builder.add_edge("score", "reflect")
builder.add_edge("reflect", "critique")
builder.add_edge("critique", "threshold")
builder.add_conditional_edges("threshold", after_threshold, {"rewrite": "rewrite", END: END})
builder.add_edge("rewrite", "retrieve")

graph = builder.compile(name="evidence")
