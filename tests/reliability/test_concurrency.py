"""Campaign: concurrent users (issue #11). Twenty conversations at once, each about its own document, while a
second process ingests into the same index: every conversation gets its own facts and none of another's.

Each of the twenty documents tells two facts about an invented place (the year its tower was painted, the
name of its keeper) that no other document shares, so an answer that holds another thread's place, year or
keeper took evidence or history from the wrong conversation. Each conversation asks for the year, then a
follow-up ("Who was its keeper?") that only the thread's history can resolve. Meanwhile `citewise ingest`
adds twenty more documents from another process; afterwards the index holds exactly forty documents and
answers about a document added during the campaign. Run through the Python API (one compiled graph with a
checkpointer, twenty threads in one event loop) and through `langgraph dev` with the SDK (twenty threads,
twenty runs at once). Waits are bounded only to turn a hang into a failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from support.langgraph_dev import langgraph_dev

from citewise.context import Context
from citewise.graph.query import builder
from citewise.index import Index
from citewise.index.embeddings import Embedder

pytestmark = pytest.mark.integration

CONVERSATIONS = 20
GUARD = 900.0  # seconds; only a hang reaches it
FIRST = ["Var", "Orm", "Tel", "Bris", "Kalm", "Zun", "Pell", "Dro", "Quen", "Hask"]
LAST = ["holm", "vik", "ardo", "essa", "unga"]
KEEPERS = ["Idris", "Maelis", "Torvald", "Annuk", "Berenike", "Casimir", "Doriel", "Eskil", "Faustine",
           "Gideon"]  # fmt: skip
SURNAMES = ["Quarrington", "Vellacott", "Ashbury", "Merriwether", "Tolliver"]


def place(n: int) -> str:
    return f"{FIRST[n % len(FIRST)]}{LAST[n // len(FIRST) % len(LAST)]}"


def keeper(n: int) -> str:
    return f"{KEEPERS[n % len(KEEPERS)]} {SURNAMES[n // len(KEEPERS) % len(SURNAMES)]}"


def year(n: int) -> str:
    return str(1871 + 3 * n)


def record(n: int) -> dict[str, str]:
    name = place(n)
    return {
        "_id": f"tower-{n}",
        "title": f"The {name} tower",
        "text": f"The {name} tower on the northern cliffs was painted white in {year(n)}. "
        f"Its keeper for forty years was {keeper(n)}, who logged every passing ship.",
    }


def write_corpus(path: Path, numbers: range) -> Path:
    path.write_text("".join(json.dumps(record(n)) + "\n" for n in numbers), encoding="utf-8")
    return path


def others(n: int, total: int) -> list[str]:
    """What only other conversations' documents say: their places, years and keepers."""
    return [text for m in range(total) if m != n for text in (place(m), year(m), keeper(m))]


def check(n: int, first: str, second: str) -> list[str]:
    """Problems with conversation n's two answers (empty when both are its own and only its own)."""
    problems = []
    if year(n) not in first:
        problems.append(f"{place(n)}: the year {year(n)} is not in {first!r}")
    if keeper(n) not in second:
        problems.append(f"{place(n)}: the keeper {keeper(n)} is not in the follow-up {second!r}")
    foreign = [text for text in others(n, 2 * CONVERSATIONS) if text in first or text in second]
    if foreign:
        problems.append(f"{place(n)}: another conversation's facts {foreign} in {first!r} / {second!r}")
    return problems


@pytest.fixture
def towers(tmp_path: Path, embedder: Embedder) -> tuple[Path, Path]:
    """An index of the first twenty towers, and a corpus of twenty more for the concurrent ingest."""
    index_dir = tmp_path / "index"
    with Index.open(index_dir, embedder=embedder) as index:
        report = index.ingest([write_corpus(tmp_path / "first.jsonl", range(CONVERSATIONS))])
        assert report.documents_added == CONVERSATIONS
    later = write_corpus(tmp_path / "later.jsonl", range(CONVERSATIONS, 2 * CONVERSATIONS))
    return index_dir, later


def start_ingest(index_dir: Path, corpus: Path) -> subprocess.Popen:
    """`citewise ingest` from another process, while the conversations run."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    return subprocess.Popen(
        [sys.executable, "-m", "citewise.app.cli", "ingest", str(corpus), "--index", str(index_dir)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish_ingest(ingest: subprocess.Popen, index_dir: Path) -> None:
    """The ingest ended well and the index holds exactly the forty documents, each once."""
    output, _ = ingest.communicate(timeout=GUARD)
    assert ingest.returncode == 0, output
    with sqlite3.connect(f"file:{index_dir / 'docs.sqlite3'}?mode=ro", uri=True) as db:
        keys = [row[0] for row in db.execute("SELECT key FROM documents")]
    assert sorted(keys) == sorted(f"tower-{n}" for n in range(2 * CONVERSATIONS))


async def test_twenty_conversations_at_once_through_the_python_api(towers: tuple[Path, Path]) -> None:
    index_dir, later = towers
    graph = builder.compile(checkpointer=InMemorySaver())
    context = Context(index_dir=str(index_dir))

    async def conversation(n: int) -> list[str]:
        config = {"configurable": {"thread_id": f"tower-{n}"}}
        first = await graph.ainvoke(
            {"messages": [HumanMessage(f"In which year was the {place(n)} tower painted white?")]},
            config=config,
            context=context,
        )
        second = await graph.ainvoke(
            {"messages": [HumanMessage("Who was its keeper?")]}, config=config, context=context
        )
        return check(n, first["answer"], second["answer"])

    ingest = start_ingest(index_dir, later)
    try:
        everyone = asyncio.gather(*(conversation(n) for n in range(CONVERSATIONS)))
        found = await asyncio.wait_for(everyone, GUARD)
    finally:
        finish_ingest(ingest, index_dir)
    assert [problem for problems in found for problem in problems] == []
    # the long-running process sees what the other process added meanwhile
    n = 2 * CONVERSATIONS - 1
    added = await graph.ainvoke(
        {"messages": [HumanMessage(f"In which year was the {place(n)} tower painted white?")]},
        config={"configurable": {"thread_id": "after"}},
        context=context,
    )
    assert year(n) in added["answer"]


def test_twenty_conversations_at_once_through_langgraph_dev(
    towers: tuple[Path, Path], tmp_path: Path
) -> None:
    from langgraph_sdk import get_client

    index_dir, later = towers

    async def campaign(url: str) -> list[list[str]]:
        client = get_client(url=url)

        async def ask(thread_id: str, question: str) -> str:
            output = await client.runs.wait(
                thread_id, "citewise", input={"messages": [{"role": "user", "content": question}]}
            )
            return output["answer"]

        async def conversation(n: int) -> list[str]:
            thread = await client.threads.create()
            first = await ask(thread["thread_id"], f"In which year was the {place(n)} tower painted white?")
            second = await ask(thread["thread_id"], "Who was its keeper?")
            return check(n, first, second)

        return await asyncio.wait_for(asyncio.gather(*(conversation(n) for n in range(CONVERSATIONS))), GUARD)

    with langgraph_dev(tmp_path, {"CITEWISE_INDEX": str(index_dir)}) as url:
        ingest = start_ingest(index_dir, later)
        try:
            found = asyncio.run(campaign(url))
        finally:
            finish_ingest(ingest, index_dir)
    assert [problem for problems in found for problem in problems] == []


REPORTS = 8


async def test_reports_at_once_each_keep_their_own_sections_while_an_ingest_runs(
    towers: tuple[Path, Path],
) -> None:
    """The report path under the same load: eight reports at once, each a tower's outline and sections (the
    sections of one report run in parallel too), while another process ingests; each report holds its own
    tower's year and keeper under its headings and nothing of another tower, and its every marker is cited."""
    index_dir, later = towers
    graph = builder.compile(checkpointer=InMemorySaver())
    context = Context(index_dir=str(index_dir), route="report")

    async def report(n: int) -> list[str]:
        config = {"configurable": {"thread_id": f"report-{n}"}}
        question = f"Write a report on the {place(n)} tower: when it was painted white and who its keeper was"
        result = await graph.ainvoke({"messages": [HumanMessage(question)]}, config=config, context=context)
        problems = []
        if result.get("route") != "report" or not result.get("outline"):
            problems.append(f"{place(n)}: not written as a report ({result.get('route')})")
        answer = result["answer"]
        problems += check(n, answer, answer)
        markers = {int(m) for m in re.findall(r"\[(\d+)\]", answer)}
        cited = {c["marker"] for c in result["citations"]}
        if not markers or markers != cited:
            problems.append(f"{place(n)}: markers {sorted(markers)} vs citations {sorted(cited)}")
        titles = {c["title"] for c in result["citations"]}
        if titles != {f"The {place(n)} tower"}:
            problems.append(f"{place(n)}: cites {sorted(titles)}")
        return problems

    ingest = start_ingest(index_dir, later)
    try:
        found = await asyncio.wait_for(asyncio.gather(*(report(n) for n in range(REPORTS))), GUARD)
    finally:
        finish_ingest(ingest, index_dir)
    assert [problem for problems in found for problem in problems] == []
