"""`citewise show`: how a document was read, from a file or from the index, in text and JSON (#41 part 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from citewise.app.cli import app

pytestmark = pytest.mark.integration

PAPERS = Path(__file__).resolve().parents[1] / "data" / "pdf"
TABLES = Path(__file__).resolve().parents[1] / "data" / "tables"
runner = CliRunner()


def run(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_a_pdf_file_is_shown_as_read_with_what_was_left_out() -> None:
    result = run("show", PAPERS / "tidal.pdf")
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("Tidal heating of rocky exoplanets around small stars\n")
    assert "  1 Introduction  [3]\n    1.1 Models and assumptions  [2]\n" in out  # the section tree, counted
    assert "references (3):" in out and "[3] M. Rossi, P. Dupont, and Q. Lee." in out
    assert "left out as footnotes: 1\n  - Footnote text: a remark that belongs to no paragraph." in out
    assert "Tidal heating of rocky planets citewise test papers" in out  # the running head, left out
    assert "warnings: none" in out


def test_json_gives_every_part_and_a_browser_print_shows_its_stamps_as_furniture() -> None:
    result = run("show", PAPERS / "spectrum.pdf", "--json")
    assert result.exit_code == 0, result.output
    (reading,) = json.loads(result.output)
    assert reading["title"] == "Sharing radio spectrum between dense cellular networks"
    assert [s["path"] for s in reading["sections"]][:2] == ["Abstract", "1 Introduction"]
    assert reading["paragraphs"] == 10 and len(reading["references"]) == 3
    furniture = reading["dropped"]["furniture"]
    assert "1/1" in furniture and any("spectrum" in line and "file:" in line for line in furniture)
    assert reading["pages"] == 1 and reading["pages_without_text"] == []


def test_tables_are_listed_with_their_shape_in_the_file_and_in_the_index(tmp_path: Path) -> None:
    result = run("show", TABLES / "harvest.pdf")
    assert result.exit_code == 0, result.output
    assert (
        "tables (3):\n  Table 1: Yield of each variety in the first season. (3 rows x 4 columns)\n"
        in result.output
    )
    assert run("ingest", TABLES / "harvest-print.pdf", "--index", tmp_path / "idx").exit_code == 0
    result = run("show", "Harvest", "--index", tmp_path / "idx", "--json")
    (reading,) = json.loads(result.output)
    (table,) = reading["tables"]
    assert table["caption"] == "Table 1: Yield of each variety in the first season."  # set glyph by glyph
    assert table["header"] == ["Variety", "Yield (t/ha)", "Protein (%)", "Days to ripen"]
    assert table["rows"] == 3


def test_a_stored_document_is_found_by_part_of_its_title(tmp_path: Path) -> None:
    assert run("ingest", PAPERS / "spectrum.pdf", "--index", tmp_path / "idx").exit_code == 0
    result = run("show", "radio SPECTRUM", "--index", tmp_path / "idx")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Sharing radio spectrum between dense cellular networks\n")
    assert "4 Conclusions  [1]" in result.output


def test_what_cannot_be_shown_says_why_with_a_non_zero_exit(tmp_path: Path) -> None:
    missing = run("show", "no such document", "--index", tmp_path / "none")
    assert missing.exit_code == 2 and "no index at" in missing.output
    broken = tmp_path / "broken.pdf"
    broken.write_text("this is no PDF")
    unreadable = run("show", broken)
    assert unreadable.exit_code == 2 and "corrupt or unreadable PDF" in unreadable.output
    assert run("ingest", PAPERS / "tidal.pdf", "--index", tmp_path / "idx").exit_code == 0
    unknown = run("show", "melting point of tungsten", "--index", tmp_path / "idx")
    assert unknown.exit_code == 1 and "no indexed document" in unknown.output


def test_a_document_read_badly_is_warned_about(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("\n\n".join(f"Line {n} of a note with no headings at all." for n in range(5)))
    result = run("show", text)
    assert result.exit_code == 0, result.output
    assert "no section headings were recognised" in result.output
