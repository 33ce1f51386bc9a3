"""The graph's picture in docs/graph.mmd and the README is the compiled graph's own drawing."""

from __future__ import annotations

from pathlib import Path

from citewise.graph.picture import mermaid

REPO = Path(__file__).resolve().parents[2]
REDRAW = "python -m citewise.graph.picture > docs/graph.mmd, then paste it under README's 'The query graph'"


def test_docs_graph_mmd_is_the_current_drawing() -> None:
    saved = (REPO / "docs" / "graph.mmd").read_text(encoding="utf-8")
    assert saved == mermaid(), f"docs/graph.mmd is stale: {REDRAW}"


def test_the_readme_embeds_the_current_drawing() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"```mermaid\n{mermaid()}```" in readme, f"the README's graph picture is stale: {REDRAW}"


def test_the_drawing_shows_every_step_and_no_error_handler() -> None:
    drawing = mermaid()
    for node in (
        "condense", "rewrite", "evidence\\3aretrieve", "evidence\\3ascore", "evidence\\3areflect",
        "evidence\\3acritique", "evidence\\3athreshold", "evidence\\3arewrite", "rerank", "accuracy",
        "expand", "route", "answer", "outline", "approve", "section\\3aevidence", "section\\3arerank",
        "section\\3aexpand", "section\\3awrite_section", "collect", "customize", "verify", "references",
    ):  # fmt: skip
        assert f"\t{node}(" in drawing, node
    assert "__error_handler__" not in drawing
