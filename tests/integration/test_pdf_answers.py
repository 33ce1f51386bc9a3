"""Typeset PDFs through the whole product: ingested, searched and answered in local mode, with the papers as
primary references and the works their cited passages cite as secondary references (tests/data/pdf)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from citewise.app.cli import app

pytestmark = pytest.mark.integration

PAPERS = Path(__file__).parent.parent / "data" / "pdf"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pdfs") / "idx"
    result = CliRunner().invoke(app, ["ingest", str(PAPERS), "--index", str(root)])
    assert result.exit_code == 0, result.output
    # every PDF and the browser page's HTML source (.tex and the Makefile are skipped)
    readable = len([*PAPERS.glob("*.pdf"), *PAPERS.glob("*.html")])
    assert f"{readable} ingested" in result.stdout
    return root


def ask(index: Path, question: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["ask", question, "--index", str(index), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_two_column_paper_answers_with_its_numbered_reference(index: Path) -> None:
    payload = ask(index, "How does tidal heating depend on the orbital eccentricity?")
    assert "eccentricity" in payload["answer"] and "[1]" in payload["answer"]
    assert [p["title"] for p in payload["references"]["primary"]] == [
        "Tidal heating of rocky exoplanets around small stars"
    ]
    secondary = payload["references"]["secondary"]
    assert [entry["text"].split(".")[:2] for entry in secondary] == [["M", " Rossi, P"]]
    # no running head, page number or footnote of the page reached the evidence
    assert payload["evidence"]
    for row in payload["evidence"]:
        assert "citewise test papers" not in row["text"] and "Footnote text" not in row["text"]


def test_a_one_column_paper_answers_with_its_author_year_reference(index: Path) -> None:
    payload = ask(index, "How often did a citation point at a passage that did not support its sentence?")
    assert "one citation in five" in payload["answer"]
    # the paper's own "(Brown et al., 2021)" closing a clause is left out beside citewise's marker
    assert "(Brown et al., 2021)" not in payload["answer"]
    assert {entry["key"] for entry in payload["references"]["secondary"]} == {"brown2021"}


def test_a_number_in_a_table_is_answered_from_its_row_with_its_header(tmp_path: Path) -> None:
    tables = Path(__file__).parent.parent / "data" / "tables"
    result = CliRunner().invoke(
        app, ["ingest", str(tables / "harvest.pdf"), "--index", str(tmp_path / "idx")]
    )
    assert result.exit_code == 0, result.output
    payload = ask(tmp_path / "idx", "What was the protein content of Copper Crown in the first season?")
    row = "Variety: Copper Crown; Yield (t/ha): 6.95; Protein (%): 13.1; Days to ripen: 117"
    assert row in payload["answer"]
    assert "| --- |" not in payload["answer"]  # a row said with its header, not the table's Markdown
    (cited,) = [c for c in payload["citations"] if row in c["text"]]
    (passage,) = [e for e in payload["evidence"] if e["chunk_id"] == cited["chunk_id"]]
    assert "| Copper Crown | 6.95 | 13.1 | 117 |" in passage["text"]  # the passage is the table itself
