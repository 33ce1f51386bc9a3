"""Export of a local-mode answer and report of the bundled sample: `ask --export` and the API's route."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import docx
import pytest
from fastapi.testclient import TestClient
from support.exports import bib_unescape, markdown_markers, read_bibtex, read_ris
from typer.testing import CliRunner

from citewise.app.access import open_access, require_login
from citewise.app.api import build_app
from citewise.context import Context
from citewise.core.resources import Resources
from citewise.index.embeddings import Embedder

pytestmark = pytest.mark.integration

runner = CliRunner()
QUESTIONS = {
    "answer": "How many transits of GJ 486b were observed?",
    "report": "Write a report on the atmosphere of GJ 486b and how it was observed.",
}


def ask(*args: str | Path) -> tuple[int, str]:
    from citewise.app.cli import app

    result = runner.invoke(app, ["ask", *(str(a) for a in args)], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture(scope="module", params=["answer", "report"])
def exported(request: pytest.FixtureRequest, sample_index: Path) -> tuple[dict, dict[str, Path]]:
    """One question asked once per format with --json --export: the payloads agree; the four files."""
    mode = request.param
    folder = sample_index.parent / f"export-{mode}"
    files, payloads = {}, []
    for suffix in ("md", "docx", "bib", "ris"):
        path = folder / f"out.{suffix}"
        code, output = ask(
            QUESTIONS[mode], "--mode", mode, "--json", "--export", path, "--index", sample_index
        )
        assert code == 0, output
        payloads.append(json.loads(output[output.index("{") : output.rindex("}") + 1]))
        files[suffix] = path
    assert all(p["answer"] == payloads[0]["answer"] for p in payloads)  # local mode: the same reply each time
    assert payloads[0]["route"] == ("report" if mode == "report" else "direct") and payloads[0]["citations"]
    return payloads[0], files


def test_every_marker_of_the_markdown_resolves_to_a_numbered_reference(exported: tuple[dict, dict]) -> None:
    payload, files = exported
    text = files["md"].read_text(encoding="utf-8")
    used, listed = markdown_markers(text)
    assert used and set(used) <= listed
    assert listed == {c["marker"] for c in payload["citations"]}
    for citation in payload["citations"]:
        assert f"[{citation['marker']}] {citation['title']}" in text
    if payload["references"]["secondary"]:
        assert "\n## Works cited by these sources\n" in text
    for section in payload.get("sections") or []:
        if section["status"] == "written":
            assert f"\n## {section['title']}\n" in text


def test_python_docx_reads_the_headings_paragraphs_and_references(exported: tuple[dict, dict]) -> None:
    payload, files = exported
    document = docx.Document(str(files["docx"]))
    headings = [p.text for p in document.paragraphs if p.style and p.style.name.startswith("Heading")]
    texts = [p.text for p in document.paragraphs]
    assert headings[0] == payload["question"] and "References" in headings
    sections = [s["title"] for s in payload.get("sections") or [] if s["status"] == "written"]
    assert all(title in headings for title in sections)
    for citation in payload["citations"]:
        assert f"[{citation['marker']}]" in " ".join(texts[1 : texts.index("References")])
        assert any(text.startswith(f"[{citation['marker']}] {citation['title']}") for text in texts)


def test_bibtex_and_ris_hold_one_entry_per_cited_work(exported: tuple[dict, dict]) -> None:
    payload, files = exported
    primary, secondary = payload["references"]["primary"], payload["references"]["secondary"]
    entries = read_bibtex(files["bib"].read_text(encoding="utf-8"))
    assert len(entries) == len(primary) + len(secondary)
    keys = [key for _, key, _ in entries]
    assert len(set(keys)) == len(keys) and keys[0] == "2212.11816"
    first = entries[0][2]
    assert bib_unescape(first["title"]) == primary[0]["title"]
    assert first["author"].startswith("Andrew Ridden-Harper and Stevanus Nugroho and ")
    assert "year" not in first  # the sample's metadata gives none: none is made up
    records = read_ris(files["ris"].read_bytes().decode("utf-8"))  # CRLF lines, as RIS has them
    assert len(records) == len(entries)
    assert [dict(r)["ID"] for r in records] == keys
    assert all(record[0] == ("TY", "GEN") for record in records)


def test_an_unknown_suffix_exits_2_before_the_question_runs(sample_index: Path, tmp_path: Path) -> None:
    code, output = ask(QUESTIONS["answer"], "--export", tmp_path / "out.pdf", "--index", sample_index)
    assert code == 2 and "must end in .md, .docx, .bib, .ris" in output
    assert "Evidence" not in output and not list(tmp_path.iterdir())


@pytest.fixture(scope="module")
def api(sample_index: Path, embedder: Embedder) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """The API beyond loopback with two users, as `citewise api --host 0.0.0.0` serves it."""
    access = open_access(sample_index)
    tokens = {name: access.add_user(name) for name in ("erin", "finn")}
    context = Context(index_dir=str(sample_index), resources=Resources(embedder=embedder))
    gate = require_login("0.0.0.0", "the API", access)
    app = build_app(context, str(sample_index.parent / "export-threads.sqlite"), gate=gate, audit=access)
    with TestClient(app, client=("203.0.113.9", 40000)) as client:
        yield client, {name: f"Bearer {token}" for name, token in tokens.items()}


def test_the_api_exports_the_owner_s_last_turn_and_no_one_else_s(api: tuple[TestClient, dict]) -> None:
    client, tokens = api
    erin, finn = {"Authorization": tokens["erin"]}, {"Authorization": tokens["finn"]}
    thread = client.post("/threads", headers=erin).json()["thread_id"]
    assert client.get(f"/threads/{thread}/export", headers=erin).status_code == 404  # nothing asked yet
    body = {"question": QUESTIONS["report"], "mode": "report"}
    reply = client.post(f"/threads/{thread}/ask", json=body, headers=erin).json()
    markdown = client.get(f"/threads/{thread}/export?format=md", headers=erin)
    assert markdown.status_code == 200 and markdown.headers["content-type"].startswith("text/markdown")
    assert f'filename="citewise-{thread}.md"' in markdown.headers["content-disposition"]
    used, listed = markdown_markers(markdown.text)
    assert used and set(used) <= listed == {c["marker"] for c in reply["citations"]}
    document = docx.Document(
        io.BytesIO(client.get(f"/threads/{thread}/export?format=docx", headers=erin).content)
    )
    assert document.paragraphs[0].text == reply["question"]
    bib = client.get(f"/threads/{thread}/export?format=bib", headers=erin).text
    ris = client.get(f"/threads/{thread}/export?format=ris", headers=erin).text
    works = len(reply["references"]["primary"]) + len(reply["references"]["secondary"])
    assert len(read_bibtex(bib)) == len(read_ris(ris)) == works
    assert client.get(f"/threads/{thread}/export?format=pdf", headers=erin).status_code == 422
    for kind in ("md", "bib"):
        refused = client.get(f"/threads/{thread}/export?format={kind}", headers=finn)
        assert refused.status_code == 404 and refused.json()["detail"] == f"no thread {thread}"
    assert client.get(f"/threads/{thread}/export").status_code == 401
