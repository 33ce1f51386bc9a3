"""The query graph, from a conversation to a verified, cited answer.

condense -> rewrite -> retrieve -> score -> reflect -> critique -> threshold -> (corrective loop to
rewrite) -> rerank -> expand -> route -> answer -> verify -> references.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.types import RetryPolicy

from citewise.context import Context
from citewise.nodes.answer import answer
from citewise.nodes.condense import condense
from citewise.nodes.critique import critique
from citewise.nodes.expand import expand
from citewise.nodes.references import references
from citewise.nodes.reflect import reflect
from citewise.nodes.rerank import rerank
from citewise.nodes.retrieve import retrieve
from citewise.nodes.rewrite import rewrite
from citewise.nodes.route import route
from citewise.nodes.score import score
from citewise.nodes.threshold import threshold
from citewise.nodes.verify import verify
from citewise.state import InputState, OutputState, State

io_retry = RetryPolicy(max_attempts=3, retry_on=(OSError, TimeoutError))

builder = StateGraph(State, input_schema=InputState, output_schema=OutputState, context_schema=Context)
builder.add_node(condense)
builder.add_node(rewrite)
builder.add_node(retrieve, retry_policy=io_retry)
builder.add_node(score)
builder.add_node(reflect)
builder.add_node(critique)
builder.add_node(threshold)
builder.add_node(rerank)
builder.add_node(expand, retry_policy=io_retry)
builder.add_node(route)
builder.add_node(answer)
builder.add_node(verify)
builder.add_node(references, retry_policy=io_retry)

builder.add_edge(START, "condense")
builder.add_edge("condense", "rewrite")
builder.add_edge("rewrite", "retrieve")
builder.add_edge("retrieve", "score")
builder.add_edge("score", "reflect")
builder.add_edge("reflect", "critique")
builder.add_edge("critique", "threshold")
# threshold routes itself (Command): back to rewrite when nothing is kept and passes remain, else rerank
builder.add_edge("rerank", "expand")
builder.add_edge("expand", "route")
builder.add_edge("route", "answer")
builder.add_edge("answer", "verify")
builder.add_edge("verify", "references")
builder.add_edge("references", END)

graph = builder.compile(name="citewise")
