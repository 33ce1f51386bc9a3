"""The threshold shown is the one applied: in the terminal, the page's table and chart, and `--json`, a row
is kept exactly when its final score reaches the threshold shown for it (a report's sections each have
their own), for a direct answer, a report, and a question the documents do not answer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citewise.app.cli import app
from citewise.app.web import render
from citewise.core.evidence import NO_ANSWER

pytestmark = pytest.mark.integration

runner = CliRunner()
ROW = re.compile(r"^  (kept|drop) +([\d.]+) ", re.M)
PER_PASS_ROW = re.compile(r"^  (kept|drop) +([\d.]+) +([\d.]+) ", re.M)
TIP = re.compile(r"<title>#(\d+) (kept|dropped): final ([\d.]+)")


def ask(*args: str | Path) -> str:
    result = runner.invoke(app, ["ask", *(str(a) for a in args)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize(
    ("question", "mode"),
    [
        ("How many transits of GJ 486b were observed?", "answer"),
        ("Write a report on the atmosphere of GJ 486b and how it was observed.", "report"),
        ("Who won the 1998 FIFA World Cup final?", "answer"),
    ],
)
def test_every_view_keeps_a_row_exactly_when_its_final_score_reaches_its_threshold(
    sample_index: Path, question: str, mode: str
) -> None:
    payload = json.loads(ask(question, "--mode", mode, "--json", "--index", sample_index))
    evidence, top = payload["evidence"], payload["threshold"]
    assert evidence
    cuts = [r.get("threshold", top) for r in evidence]
    assert all(isinstance(c, int | float) for c in cuts)
    assert [r["kept"] for r in evidence] == [r["final"] >= c for r, c in zip(evidence, cuts, strict=True)]
    cited = {c["chunk_id"] for c in payload["citations"]}
    if not payload["answer"].startswith(NO_ANSWER):  # an abstention lists the closest passages, dropped
        assert all(
            r["kept"] for r in evidence if r["chunk_id"] in cited
        )  # a cited passage is never "dropped"

    text = ask(question, "--mode", mode, "--index", sample_index)
    header = re.search(
        r"Evidence: \d+ candidates, \d+ kept \((threshold ([\d.]+)|each pass its own threshold)", text
    )
    assert header is not None, text
    rows = (PER_PASS_ROW if header.group(2) is None else ROW).findall(text)
    assert rows
    for verdict, final, *own in rows:  # a report's rows each show the cut of their own pass
        cut = float(own[0]) if own else float(header.group(2))
        assert (verdict == "kept") == (float(final) >= cut), (verdict, final, cut)

    table = render.score_table(evidence, payload["citations"], top)
    assert all((row[2] == "kept") == (row[3] >= float(row[4])) for row in table)

    svg = render.chart_svg(render.chart_rows(evidence, payload["citations"]), top)
    tips = TIP.findall(svg)
    assert len(tips) == len(evidence)
    line = re.search(r">threshold ([\d.]+)</text>", svg)
    ticks = re.findall(r'class="cw-row-threshold"[^>]*><title>threshold ([\d.]+)</title>', svg)
    for n, verdict, final in tips:
        cut = float(ticks[int(n) - 1]) if ticks else float(line.group(1))
        assert (verdict == "kept") == (float(final) >= cut)
