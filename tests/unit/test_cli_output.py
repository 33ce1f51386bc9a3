"""What `citewise ask` prints for people, from a finished result."""

from __future__ import annotations

import re

import pytest

from citewise.app.cli import show_answer

SOURCE_TEXT = "Using HST transits, [70] inferred a H/He rich atmosphere for GJ 1132b."


def result() -> dict:
    chunk = {"chunk_id": "c1", "title": "GJ 486b", "section": "1 Introduction", "text": SOURCE_TEXT}
    return {
        "question": "What did HST find?",
        "mode": "local",
        "answer": "Using HST transits, (ref. 70) inferred a H/He rich atmosphere for GJ 1132b [1].",
        "citations": [{"marker": 1, **chunk, "evidence_id": "E1", "document_id": "d1"}],
        "references": {"primary": [], "secondary": []},
        "evidence": [{**chunk, "kept": True, "final": 90.0, "relevance_mean": 90.0}],
        "threshold": 50.0,
        "usage": {},
        "unsupported": [],
    }


def test_quotes_and_snippets_never_show_a_sources_own_numeric_marker(
    capsys: pytest.CaptureFixture[str],
) -> None:
    show_answer(result())
    out = capsys.readouterr().out

    quote = re.search(r'^\[1\] GJ 486b: "(.+)"$', out, re.M)
    assert quote and quote.group(1) == SOURCE_TEXT.replace("[70]", "(ref. 70)")
    row = re.search(r"^  kept .*\[1\]\s+GJ 486b › 1 Introduction: \"(.+)…\"$", out, re.M)
    assert row and "(ref. 70)" in row.group(1)
    assert "[70]" not in out  # the only bracketed numbers left are citewise's own markers
    assert re.findall(r"\[\d+\]", out) == ["[1]", "[1]", "[1]"]  # answer, quote line, evidence row


def test_the_command_line_loads_no_store_or_graph_code_until_a_command_needs_it() -> None:
    """`citewise --help` stays fast: importing the CLI pulls in neither Chroma, the model nor LangGraph."""
    import subprocess
    import sys

    heavy = ("chromadb", "torch", "langgraph", "citewise.index.local.store")
    probe = f"import sys, citewise.app.cli; print(','.join(m for m in {heavy!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == ""


def test_the_outline_commands_name_the_shipped_library() -> None:
    from citewise.app import outlines_cli
    from citewise.core import outlines

    assert outlines_cli.DEFAULT_LIBRARY == outlines.DEFAULT_LIBRARY


def test_a_report_s_evidence_table_shows_each_row_s_own_threshold(capsys: pytest.CaptureFixture[str]) -> None:
    from citewise.app.terminal import show_evidence

    evidence = [
        {"chunk_id": "a", "final": 60.0, "kept": True, "threshold": 55.0, "title": "A"},  # a section's pass
        {"chunk_id": "b", "final": 58.0, "kept": False, "threshold": 70.0, "title": "B"},  # the question's
    ]
    show_evidence({"evidence": evidence, "threshold": 70.0, "citations": []})
    out = capsys.readouterr().out
    assert "2 candidates, 1 kept (each pass its own threshold;" in out
    assert re.search(r"^  kept  60\.0  55\.0 ", out, re.M) and re.search(r"^  drop  58\.0  70\.0 ", out, re.M)
