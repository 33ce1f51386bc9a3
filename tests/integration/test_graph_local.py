"""The whole query graph in local mode (no model) on a real index: MiniLM, embedded Chroma, bm25s."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import MemorySaver
from typer.testing import CliRunner

from citewise.app.cli import app
from citewise.context import Context
from citewise.core.evidence import NO_ANSWER
from citewise.core.resources import Resources
from citewise.graph.query import builder
from citewise.index import Index
from citewise.index.embeddings import Embedder
from citewise.nodes.reflect import SKIPPED

pytestmark = pytest.mark.integration

MARKER = re.compile(r"\[(\d+)\]")
ANSWERABLE = "How do vaccines train the immune system?"
UNANSWERABLE = "Who won the 1998 FIFA World Cup final?"


async def ask(context: Context, *questions: str, thread: str = "t") -> list[dict[str, Any]]:
    """Ask the questions in turn on one conversation thread; the graph's output after each."""
    graph = builder.compile(checkpointer=MemorySaver())
    config = {"configurable": {"thread_id": thread}}
    return [
        await graph.ainvoke({"messages": [HumanMessage(q)]}, config=config, context=context)
        for q in questions
    ]


def stored_chunks(index_dir: str, embedder: Embedder, chunk_ids: list[str]) -> dict[str, Any]:
    """The chunks the index holds under these ids (a separate handle: what any reader would see)."""
    with Index.open(index_dir, embedder=embedder, create=False) as index:
        return index.chunks(chunk_ids)


def doc_keys(index_dir: str, embedder: Embedder, doc_ids: list[str]) -> list[str]:
    """The BEIR ids of stored documents."""
    with Index.open(index_dir, embedder=embedder, create=False) as index:
        return [index.document(doc_id).key for doc_id in doc_ids]  # type: ignore[union-attr]


async def test_an_answerable_question_gets_a_cited_local_answer(
    resources: Resources, corpus_index: str, embedder: Embedder
) -> None:
    context = Context(resources=resources, index_dir=corpus_index)
    (result,) = await ask(context, ANSWERABLE)

    assert result["mode"] == "local"
    assert result["question"] == ANSWERABLE
    assert result["answer"].strip() and not result["answer"].startswith(NO_ANSWER)
    markers = {int(m) for m in MARKER.findall(result["answer"])}
    citations = {c["marker"]: c for c in result["citations"]}
    assert markers and markers == set(citations)
    stored = stored_chunks(corpus_index, embedder, [c["chunk_id"] for c in result["citations"]])
    assert set(stored) == {c["chunk_id"] for c in result["citations"]}
    for citation in result["citations"]:
        assert stored[citation["chunk_id"]].doc_id == citation["doc_id"]
    assert set(doc_keys(corpus_index, embedder, [c["doc_id"] for c in result["citations"]])) == {"vaccines"}

    assert result["evidence"]
    for record in result["evidence"]:
        for key in ("retrieval", "relevance_mean", "final", "kept", "reason"):
            assert key in record, (key, record)
        assert 0.0 <= record["retrieval"] <= 1.0
        assert record["reflection"] is None and record["reflection_note"] == SKIPPED
        assert record["critic"] is None
        assert record["reason"].startswith("kept" if record["kept"] else "dropped")
    kept = [r for r in result["evidence"] if r["kept"]]
    assert kept and all(r["final"] >= result["threshold"] for r in kept)
    assert all(r["final"] < result["threshold"] for r in result["evidence"] if not r["kept"])
    assert {c["chunk_id"] for c in result["citations"]} <= {r["chunk_id"] for r in kept}
    assert [r["final"] for r in result["evidence"]] == sorted(
        (r["final"] for r in result["evidence"]), reverse=True
    )

    assert not result.get("usage")  # no model was called
    assert [e["title"] for e in result["references"]["primary"]] == ["How vaccines work"]
    reply = result["messages"][-1]
    assert isinstance(reply, AIMessage) and reply.content.startswith(result["answer"])
    assert "Sources:" in reply.content


async def test_an_unanswerable_question_gets_the_honest_reply(
    resources: Resources, corpus_index: str, embedder: Embedder
) -> None:
    context = Context(resources=resources, index_dir=corpus_index)
    (result,) = await ask(context, UNANSWERABLE)

    assert result["mode"] == "local"
    assert result["answer"].startswith(NO_ANSWER)
    assert not any(r["kept"] for r in result["evidence"])
    assert result["threshold"] == context.threshold_floor
    assert "world cup" not in result["answer"].lower()  # nothing about the question is claimed
    # the closest evidence is listed and every marker still resolves to a stored chunk
    citations = {c["marker"]: c for c in result["citations"]}
    assert {int(m) for m in MARKER.findall(result["answer"])} == set(citations)
    stored = stored_chunks(corpus_index, embedder, [c["chunk_id"] for c in result["citations"]])
    assert set(stored) == {c["chunk_id"] for c in result["citations"]}


async def test_a_follow_up_question_is_condensed_with_the_first_questions_topic(
    resources: Resources, corpus_index: str, embedder: Embedder
) -> None:
    context = Context(resources=resources, index_dir=corpus_index)
    first, second = await ask(
        context, "What causes ocean tides?", "and what about their effect on coasts?", thread="follow-up"
    )

    assert "tides" in first["question"].lower()
    assert "tides" in second["question"].lower()
    # made to stand alone by what the question before was about, never by that question glued to it
    assert second["question"] == "and what about their effect on coasts? (causes ocean tides)"
    assert [m.type for m in second["messages"]] == ["human", "ai", "human", "ai"]
    assert "tides" in doc_keys(corpus_index, embedder, [c["doc_id"] for c in second["citations"]])


def test_the_cli_prints_the_result_as_json(corpus_index: str) -> None:
    result = CliRunner().invoke(app, ["ask", ANSWERABLE, "--index", corpus_index, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)

    for key in ("answer", "mode", "citations", "references", "evidence", "threshold", "usage"):
        assert key in payload, key
    assert set(payload["references"]) == {"primary", "secondary"}
    assert payload["mode"] == "local"
    assert payload["answer"] and not payload["answer"].startswith(NO_ANSWER)
    assert {int(m) for m in MARKER.findall(payload["answer"])} == {c["marker"] for c in payload["citations"]}
    assert isinstance(payload["threshold"], float)
    assert payload["evidence"] and all("final" in r for r in payload["evidence"])


def test_the_cli_prints_the_answer_citations_and_evidence_table_for_people(corpus_index: str) -> None:
    result = CliRunner().invoke(app, ["ask", ANSWERABLE, "--index", corpus_index])
    assert result.exit_code == 0, result.output
    out = result.stdout

    assert out.startswith(f"Q: {ANSWERABLE}  [local mode (no LLM configured)]")
    markers = sorted({int(m) for m in MARKER.findall(out.split("\n\n")[1])})
    assert markers and markers == list(range(1, len(markers) + 1))
    for marker in markers:  # each marker has its citation line and its row in the evidence table
        assert re.search(rf"^\[{marker}\] .+: \"", out, re.M), marker
        assert re.search(rf"^  kept .*\[{marker}\]", out, re.M), marker
    header = re.search(
        r"^Evidence: (\d+) candidates, (\d+) kept \(threshold [\d.]+; scores 0-100\):$", out, re.M
    )
    assert header and 0 < int(header.group(2)) <= int(header.group(1))
    assert "Model use:" not in out  # no model, no spend line


def test_the_command_keeps_stderr_free_of_library_noise(tmp_path: Path, small_corpus: Path) -> None:
    # --docs builds the index first, where bm25s logged at DEBUG and transformers drew a loading bar
    command = [sys.executable, "-m", "citewise.app.cli", "ask", ANSWERABLE, "--index", str(tmp_path / "idx")]
    command += ["--docs", str(small_corpus)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert f"Q: {ANSWERABLE}" in done.stdout
    assert "DEBUG" not in done.stderr and "Loading weights" not in done.stderr, done.stderr
