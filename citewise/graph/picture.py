"""The query graph's picture: Mermaid drawn from the compiled graph (docs/graph.mmd, the README).

Drawn with one level of subgraphs (`xray=1`): the evidence subgraph and the section subgraph open, the
section's own evidence step shown as one node (it is the same evidence subgraph; a deeper drawing repeats
it, which Mermaid refuses). Each node's error handler is left out: it has no edges, and every node has one.
"""

from __future__ import annotations

from citewise.graph.query import graph

ERROR_HANDLER = "__error_handler__"


def mermaid() -> str:
    """The query graph as Mermaid, subgraphs one level deep, error handlers left out."""
    drawing = graph.get_graph(xray=1)
    for node in [n for n in drawing.nodes.values() if n.id.startswith(ERROR_HANDLER)]:
        drawing.remove_node(node)
    return drawing.draw_mermaid()


if __name__ == "__main__":
    print(mermaid(), end="")
