"""The chat page's pure helpers (marker links, escaping, passages, chart data) and its error replies."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("gradio")

from citewise.app.web import render
from citewise.app.web.page import ChatPage
from citewise.context import Context
from citewise.core.evidence import CLOSEST_HEADING

CITATIONS = [
    {"marker": 1, "chunk_id": "c1", "doc_id": "d1", "title": "Vaccines", "text": "They train immunity."},
    {"marker": 2, "chunk_id": "c2", "doc_id": "d2", "title": 'Evil "<b>"', "text": "x"},
]


def test_markers_become_links_and_everything_else_is_escaped() -> None:
    answer = "Vaccines <img src=http://evil.example/x.png> train [1]. "
    answer += "See ![a](http://evil.example/a.png) [2] [9]."
    shown = render.answer_markdown(answer, CITATIONS, turn=3)

    assert '<a class="cw-cite" href="#cite-3-1" title="Vaccines">[1]</a>' in shown
    assert 'href="#cite-3-2" title="Evil &quot;&lt;b&gt;&quot;"' in shown  # the title attribute is escaped
    assert "<img" not in shown and "&lt;img" in shown
    assert "![a](" not in shown and r"!\[a\](http" in shown  # no markdown image: nothing to fetch
    assert r"\[9\]" in shown and "cite-3-9" not in shown  # a marker no citation names stays plain text
    assert len(re.findall(r"<a ", shown)) == 2


def test_a_marker_link_parses_back_to_its_turn_and_marker() -> None:
    link = render.cite_link(4, 12)
    fragment = re.search(r'href="#([^"]+)"', link).group(1)
    assert render.parse_cite(fragment) == (4, 12)
    assert render.parse_cite("#cite-0-1") == (0, 1)
    assert render.parse_cite("cite-x-1") is None and render.parse_cite("cite-1-2-3") is None


def test_the_passage_marks_its_supporting_lines_and_escapes_the_document() -> None:
    values = {
        "citations": [
            {"marker": 1, "chunk_id": "c1", "doc_id": "d1", "title": "T", "text": "B <i>two</i>."},
        ],
        "evidence": [
            {
                "chunk_id": "c1",
                "title": "Doc <script>",
                "section": "Methods",
                "text": "A one. B <i>two</i>. C three.",
                "final": 71.5,
                "reason": "kept: final 71.5 >= threshold 40",
            }
        ],
        "support": [{"lines": [{"chunk_id": "c1", "text": "B <i>two</i>."}], "markers": [1]}],
        "references": {"primary": [{"doc_id": "d1", "file": "/data/papers/doc.md", "markers": [1]}]},
    }
    passage = render.passages(values)[1]
    assert passage["lines"] == ["B <i>two</i>."] and passage["file"] == "doc.md"

    shown = render.passage_html(passage)
    assert '<mark class="cw-support">B &lt;i&gt;two&lt;/i&gt;.</mark>' in shown
    assert "A one. " in shown and " C three." in shown
    assert "Doc &lt;script&gt;" in shown and "<script>" not in shown and "<i>" not in shown
    assert "› Methods" in shown and "final score 71.5" in shown


def test_a_report_sections_evidence_gives_the_passage_when_the_question_pass_lacks_it() -> None:
    values = {
        "citations": [{"marker": 1, "chunk_id": "s", "doc_id": "d", "title": "T", "text": "one … two"}],
        "evidence": [],
        "sections": {"s1": {"evidence": [{"chunk_id": "s", "title": "Sec doc", "text": "one and two"}]}},
    }
    passage = render.passages(values)[1]
    assert passage["title"] == "Sec doc" and passage["text"] == "one and two"
    assert passage["lines"] == ["one", "two"]  # the cited text's supporting lines, split back


def test_chart_rows_carry_score_spread_verdict_and_markers() -> None:
    evidence = [
        {"chunk_id": "c1", "final": 90.0, "relevance_spread": 15.0, "kept": True, "title": "A"},
        {"chunk_id": "c2", "final": 20.0, "relevance_spread": 30.0, "kept": False, "title": "B"},
        {"chunk_id": "c3", "final": 5.0, "kept": False, "title": "C"},
    ]
    rows = render.chart_rows(evidence, [{"marker": 2, "chunk_id": "c1"}])
    assert [(r["n"], r["final"], r["low"], r["high"], r["kept"]) for r in rows] == [
        (1, 90.0, 75.0, 100.0, True),  # the band is clipped to 0-100
        (2, 20.0, 0.0, 50.0, False),
        (3, 5.0, 5.0, 5.0, False),
    ]
    assert rows[0]["markers"] == [2] and rows[1]["markers"] == []

    svg = render.chart_svg(rows, threshold=42.5)
    assert svg.count('class="cw-point cw-kept"') == 1 and svg.count('class="cw-point cw-dropped"') == 2
    assert svg.count('class="cw-spread"') == 2  # no bar for a candidate without spread
    assert 'class="cw-threshold"' in svg and "threshold 42.5" in svg
    y = re.search(r'class="cw-threshold" x1="\d+" x2="\d+" y1="([\d.]+)"', svg).group(1)
    assert float(y) == pytest.approx(40 + 170 * (1 - 0.425), abs=0.1)  # top margin + plot height share


def test_chart_titles_from_documents_are_escaped() -> None:
    rows = render.chart_rows([{"chunk_id": "c", "final": 50, "kept": True, "title": "</title><script>x"}], [])
    svg = render.chart_svg(rows, None)
    assert "<script>" not in svg and "&lt;/title&gt;&lt;script&gt;x" in svg
    assert 'class="cw-threshold"' not in svg


def test_score_table_rows_follow_the_chart_order() -> None:
    evidence = [
        {"chunk_id": "c1", "final": 80, "relevance_mean": 80, "relevance_spread": 5, "kept": True,
         "retrieval": 0.91234, "title": "A", "section": "S", "text": "alpha " * 30},
        {"chunk_id": "c2", "final": 10, "relevance_mean": None, "kept": False, "title": "B", "text": "beta"},
    ]  # fmt: skip
    rows = render.score_table(evidence, [{"marker": 1, "chunk_id": "c1"}], threshold=54.2)
    assert rows[0][:9] == [1, "[1]", "kept", 80.0, "54.2", "80 ± 5", "-", "-", 0.912]
    assert rows[0][9].startswith("A › S: alpha") and len(rows[0][9]) <= len("A › S: ") + 80
    assert rows[1][1:6] == ["", "dropped", 10.0, "54.2", "-"]


def test_a_report_s_rows_show_and_chart_the_threshold_of_their_own_pass() -> None:
    evidence = [
        {"chunk_id": "c1", "final": 60.0, "kept": True, "threshold": 55.0, "title": "A"},  # a section's
        {"chunk_id": "c2", "final": 58.0, "kept": False, "threshold": 70.0, "title": "B"},  # the question's
    ]
    rows = render.score_table(evidence, [], threshold=70.0)
    assert [(r[2], r[3], r[4]) for r in rows] == [("kept", 60.0, "55"), ("dropped", 58.0, "70")]
    svg = render.chart_svg(render.chart_rows(evidence, []), 70.0)
    assert 'class="cw-threshold"' not in svg  # no one line: it would contradict the first row
    assert svg.count('class="cw-row-threshold"') == 2 and "threshold 55" in svg and "threshold 70" in svg


def test_references_list_primary_and_secondary_escaped() -> None:
    shown = render.references_html(
        {
            "primary": [{"doc_id": "d", "title": "<b>Paper</b>", "file": "/x/p.pdf", "markers": [2, 1, 2]}],
            "secondary": [{"text": "Lee <2021>", "fine": True}, {"text": "Kim 2020", "fine": False}],
        }
    )
    assert "[1] [2] &lt;b&gt;Paper&lt;/b&gt;" in shown and "p.pdf" in shown and "/x/" not in shown
    assert "★ Lee &lt;2021&gt;" in shown and "Kim 2020" in shown
    assert "No references yet" in render.references_html({"primary": [], "secondary": []})
    assert "<h4>Primary references</h4>" in shown
    closest = render.references_html(
        {"primary": [{"title": "P", "markers": [1]}], "secondary": []}, abstained=True
    )
    assert f"<h4>{CLOSEST_HEADING}</h4>" in closest and "Primary references" not in closest


async def test_asking_without_an_index_replies_what_happened_and_what_to_do(tmp_path: Path) -> None:
    page = ChatPage(Context(index_dir=str(tmp_path / "none")), threads=str(tmp_path / "threads.sqlite"))
    try:
        parts = [part async for part in page.ask("What is in my papers?", "answer", [], {})]
    finally:
        await page.close()
    history, session = parts[-1][0], parts[-1][1]
    reply = history[-1]["content"]
    assert history[0] == {"role": "user", "content": "What is in my papers?"}
    assert "could not answer this (no index" in reply and "citewise ingest" in reply
    assert "upload box" in reply  # what to do on the page itself
    assert history[-2]["metadata"]["title"].startswith("Stages (stopped: no index")
    assert session["turns"][0].payload["error"]["kind"] == "no index"


def test_the_page_imports_gradio_without_its_stub_writer_and_without_langgraph(tmp_path: Path) -> None:
    """What `citewise serve` waits for before its page answers: Gradio whole, not its `.pyi` rewriting
    (1.1 s), and none of LangGraph's graph (0.5 s, imported once the page is up)."""
    probe = (
        "import sys, citewise.app.web, gradio;"
        "import gradio.component_meta as meta, gradio.blocks_events as events;"
        "print(meta.create_or_modify_pyi.__name__, events.create_or_modify_pyi.__name__,"
        " any(type(f).__module__.startswith('citewise') for f in sys.meta_path),"
        " 'langgraph.graph' in sys.modules, gradio.Textbox(label='q').label)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert shown.stdout.split() == ["_no_stubs", "_no_stubs", "False", "False", "q"]


def test_gradio_imported_first_is_left_as_it_is() -> None:
    import gradio

    from citewise.app.web.gradio_import import import_gradio

    assert import_gradio() is gradio


def test_a_thread_started_on_the_page_has_an_id_of_128_random_bits() -> None:
    from citewise.app.web.page import page_thread_id

    ids = {page_thread_id() for _ in range(50)}
    assert len(ids) == 50 and all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
