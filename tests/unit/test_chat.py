"""The terminal chat's parts: command parsing, the stage lines, streaming, and threads in a SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage

from citewise.app.chat import (
    ChatCommand,
    ChatSession,
    TurnView,
    format_threads,
    parse_command,
    result_payload,
    run_command,
    stage_lines,
)
from citewise.app.memory import open_checkpointer, shown_setting
from citewise.context import Context


# commands --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("/sources", ChatCommand("sources")),
        ("  /NEW  ", ChatCommand("new")),
        ("/threads", ChatCommand("threads")),
        ("/thread 3f2a9c", ChatCommand("thread", "3f2a9c")),
        ("/mode Report", ChatCommand("mode", "report")),
        ("/mode answer", ChatCommand("mode", "answer")),
        ("/mode auto", ChatCommand("mode", "auto")),
        ("/help", ChatCommand("help")),
        ("/quit", ChatCommand("quit")),
        ("/exit", ChatCommand("quit")),
    ],
)
def test_commands_parse(line: str, expected: ChatCommand) -> None:
    assert parse_command(line) == expected


@pytest.mark.parametrize("line", ["What is a black hole?", "and its horizon?", "  why / how?", ""])
def test_anything_without_a_leading_slash_is_a_question(line: str) -> None:
    assert parse_command(line) is None


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("/bogus", "unknown command /bogus"),
        ("/thread", "/thread needs an id"),
        ("/mode", "/mode takes answer, report or auto"),
        ("/mode essay", "/mode takes answer, report or auto"),
        ("/new please", "/new takes no argument"),
        ("/quit now", "/quit takes no argument"),
    ],
)
def test_bad_commands_say_what_is_wrong(line: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_command(line)


# stage lines -----------------------------------------------------------------------------------------------
def test_each_stage_prints_what_it_decided() -> None:
    evidence = [{"chunk_id": "a", "kept": True}, {"chunk_id": "b", "kept": False}, {"chunk_id": "c"}]
    assert stage_lines("condense", {"question": "How do vaccines work? And how long do they last?"}) == [
        "condense: How do vaccines work? And how long do they last?"
    ]
    assert stage_lines("rewrite", {"queries": ["vaccines immune", "vaccine memory cells"], "attempt": 1}) == [
        "rewrite: 2 queries: vaccines immune | vaccine memory cells"
    ]
    assert stage_lines("rewrite", {"queries": ["one"]}) == ["rewrite: 1 query: one"]
    assert stage_lines("evidence", {"evidence": evidence, "threshold": 61.5, "attempt": 1}) == [
        "evidence: 3 retrieved, 1 kept (threshold 61.5)"
    ]
    assert stage_lines("evidence", {"evidence": [], "threshold": None, "attempt": 2}) == [
        "evidence: 0 retrieved, 0 kept (no threshold, after 2 passes)"
    ]
    assert stage_lines("route", {"route": "report", "route_reason": "a comparison"}) == [
        "route: report (a comparison)"
    ]
    assert stage_lines(
        "outline", {"outline": [{"id": "s1", "title": "Causes"}, {"id": "s2", "title": "Cures"}]}
    ) == ["outline: 2 sections: Causes; Cures"]


def test_a_written_report_section_prints_its_status_and_evidence() -> None:
    update = {
        "sections": {
            "s1": {"id": "s1", "title": "Causes", "status": "written", "kept": ["a", "b"], "threshold": 55},
            "s2": {"id": "s2", "title": "Cures", "status": "no_evidence", "kept": [], "threshold": None},
        }
    }
    assert stage_lines("section", update) == [
        "section: Causes: written, 2 kept (threshold 55)",
        "section: Cures: no_evidence, 0 kept (no threshold)",
    ]


@pytest.mark.parametrize("node", ["rerank", "expand", "verify", "references", "approve", "answer"])
def test_stages_with_nothing_new_to_say_are_quiet(node: str) -> None:
    assert stage_lines(node, {"kept": ["a"], "draft": "x", "answer": "y"}) == []
    assert stage_lines(node, None) == []


# streaming -------------------------------------------------------------------------------------------------
class Recorder:
    """An echo that records what would be printed, in order."""

    def __init__(self) -> None:
        self.out: list[str] = []

    def __call__(self, text: str = "", nl: bool = True, **_style: Any) -> None:
        self.out.append(text + ("\n" if nl else ""))

    @property
    def text(self) -> str:
        return "".join(self.out)


def tokens(text: str, node: str, message_id: str = "run-1") -> dict[str, Any]:
    chunk = AIMessageChunk(content=text, id=message_id)
    return {"type": "messages", "ns": (), "data": (chunk, {"langgraph_node": node})}


def test_only_the_answer_streams_and_a_stage_line_ends_the_token_line() -> None:
    echo = Recorder()
    view = TurnView(echo)
    view.show({"type": "updates", "ns": (), "data": {"condense": {"question": "Q?"}}})
    view.show(tokens('{"score": 80}', "evidence"))  # an internal judge call: never shown
    view.show(tokens("Vaccines train ", "answer"))
    view.show(tokens("the immune system [E1].", "answer"))
    view.show({"type": "updates", "ns": (), "data": {"answer": {"draft": "..."}}})
    view.show({"type": "updates", "ns": (), "data": {"verify": {"answer": "..."}}})
    view.show(tokens("A report draft.", "customize", message_id="run-2"))
    view.finish()
    assert echo.text == (
        "  condense: Q?\n"
        "  drafting (answer):\n"
        "Vaccines train the immune system [E1].\n"
        "  drafting (customize):\n"
        "A report draft.\n"
    )
    assert view.streamed


def test_a_local_turn_streams_no_tokens() -> None:
    echo = Recorder()
    view = TurnView(echo)
    view.show({"type": "updates", "ns": (), "data": {"route": {"route": "direct", "route_reason": "local"}}})
    view.show(
        {"type": "messages", "ns": (), "data": (AIMessage("final reply"), {"langgraph_node": "references"})}
    )
    view.finish()
    assert echo.text == "  route: direct (local)\n"
    assert not view.streamed


def test_the_payload_is_what_ask_shows_and_a_report_adds_its_sections() -> None:
    values = {"question": "Q", "answer": "A [1]", "route": "direct", "messages": [HumanMessage("Q")]}
    payload = result_payload(values)
    assert payload["answer"] == "A [1]" and payload["citations"] == [] and "messages" not in payload
    assert "sections" not in payload
    report = result_payload({**values, "route": "report", "sections": {"s1": {"id": "s1", "title": "T"}}})
    assert [s["title"] for s in report["sections"]] == ["T"]


# threads in a SQLite store ---------------------------------------------------------------------------------
async def remember(session: ChatSession, thread_id: str, *turns: tuple[str, str]) -> None:
    """Store a conversation in a thread without running the pipeline (as if `references` had replied)."""
    config = {"configurable": {"thread_id": thread_id}}
    for question, reply in turns:
        update = {
            "messages": [HumanMessage(question), AIMessage(reply)],
            "question": question,
            "answer": reply,
        }
        await session.graph.aupdate_state(config, update, as_node="references")


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[ChatSession]:
    async with open_checkpointer(str(tmp_path / "threads.sqlite")) as saver:
        yield ChatSession(saver, Context(index_dir=str(tmp_path / "no-index")), thread_id="current")


async def test_threads_lists_each_thread_with_its_first_question_and_turns(
    session: ChatSession, capsys: pytest.CaptureFixture[str]
) -> None:
    await remember(
        session, "alpha1", ("How do vaccines work?", "They train [1]."), ("And boosters?", "B [1].")
    )
    await remember(session, "beta22", ("What is a black hole?", "A region [1]."))
    summaries = await session.threads()
    assert [(s.thread_id, s.title, s.turns) for s in summaries] == [
        ("beta22", "What is a black hole?", 1),
        ("alpha1", "How do vaccines work?", 2),
    ]
    session.thread_id = "alpha1"
    lines = format_threads(summaries, current="alpha1")
    assert lines[0].split() == ["id", "turns", "updated", "first", "question"]
    assert lines[1].startswith("  beta22") and lines[1].endswith("What is a black hole?")
    assert lines[2].startswith("* alpha1      2  ") and lines[2].endswith("How do vaccines work?")
    assert await run_command(session, ChatCommand("threads")) is True
    assert "* alpha1" in capsys.readouterr().out


async def test_the_store_lists_its_newest_threads_as_a_full_read_would(session: ChatSession) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from citewise.app.memory import thread_summaries

    in_memory = ChatSession(InMemorySaver(), session.context)
    for store in (session, in_memory):  # SQLite asks its table for each thread's newest checkpoint
        for n in range(6):
            await remember(store, f"t{n}", (f"Question {n}?", f"Answer {n} [1]."))
        await remember(store, "t2", ("And then?", "Then [1]."))  # t2 is now the newest
    newest = await thread_summaries(session.saver, limit=3)
    assert [(s.thread_id, s.turns) for s in newest] == [("t2", 2), ("t5", 1), ("t4", 1)]
    read_whole = await thread_summaries(in_memory.saver, limit=3)
    assert [(s.thread_id, s.title, s.turns) for s in newest] == [
        (s.thread_id, s.title, s.turns) for s in read_whole
    ]
    assert len(await thread_summaries(session.saver, limit=50)) == 6


async def test_an_empty_store_says_so(session: ChatSession) -> None:
    assert format_threads(await session.threads()) == ["no stored threads yet"]


async def test_switching_threads_by_id_prefix_or_to_a_new_id(session: ChatSession) -> None:
    await remember(session, "alpha1", ("How do vaccines work?", "They train [1]."))
    await remember(session, "beta22", ("What is a black hole?", "A region [1]."))
    assert await session.switch("alp") == ("alpha1", True)
    assert session.last is not None and session.last["answer"] == "They train [1]."
    assert [m.content for m in await session.history()] == ["How do vaccines work?", "They train [1]."]
    assert await session.switch("gamma") == ("gamma", False)
    assert session.thread_id == "gamma" and session.last is None
    first = session.new()
    assert first != "gamma" and len(first) == 12 and session.new() != first


async def test_a_cancelled_question_is_dropped_from_its_thread(session: ChatSession) -> None:
    await remember(session, "current", ("How do vaccines work?", "They train [1]."))
    config = {"configurable": {"thread_id": "current"}}
    await session.graph.aupdate_state(
        config, {"messages": [HumanMessage("And boosters?")]}, as_node="condense"
    )
    assert [m.type for m in await session.history()] == ["human", "ai", "human"]
    await session.forget_unanswered()
    assert [m.content for m in await session.history()] == ["How do vaccines work?", "They train [1]."]
    await session.forget_unanswered()  # nothing unanswered: nothing changes
    assert len(await session.history()) == 2


async def test_mode_switches_the_route_for_the_next_question(session: ChatSession) -> None:
    assert session.mode == "auto"
    await run_command(session, ChatCommand("mode", "report"))
    assert session.mode == "report" and session.context.route == "report"
    await run_command(session, ChatCommand("mode", "answer"))
    assert session.context.route == "direct"
    assert await run_command(session, ChatCommand("quit")) is False


def test_the_store_is_named_without_its_password(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (
        shown_setting("postgresql://chat:s3cret@db.local:5432/threads")
        == "postgresql://chat:***@db.local:5432/threads"
    )
    assert shown_setting("postgresql://chat@127.0.0.1/threads") == "postgresql://chat@127.0.0.1/threads"
    monkeypatch.setenv("CITEWISE_THREADS", "/data/threads.sqlite")
    assert shown_setting(None) == "/data/threads.sqlite"
    monkeypatch.delenv("CITEWISE_THREADS")
    assert shown_setting(None) == ".citewise/threads.sqlite"
