"""`citewise chat`: a conversation over the bundled sample, threads that survive a restart (SQLite and a real
PostgreSQL server on loopback), and Ctrl-C that cancels one answer only."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from citewise.app import chat
from citewise.app.chat import ChatSession, run_chat
from citewise.app.cli import app
from citewise.app.memory import open_checkpointer, thread_summaries
from citewise.context import Context

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "citewise" / "samples" / "unarxive_sample.jsonl"
PG_BIN = Path("/usr/lib/postgresql/15/bin")

FIRST = "How many transits of GJ 486b were observed?"
FOLLOW_UP = "And what is its equilibrium temperature?"
STANDALONE = "And what is GJ 486b's equilibrium temperature?"  # its reference resolved, nothing glued


def chat_process(index: Path, threads: Path, *args: str, stdin: str, timeout: float = 300) -> tuple[int, str]:
    """Run `citewise chat` as its own process with `stdin` piped in; (exit code, stdout and stderr)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "citewise.app.cli",
            "chat",
            "--index",
            str(index),
            "--threads",
            str(threads),
            *args,
        ],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=index.parent,
        env=os.environ | {"LANGSMITH_TRACING": "false", "CITEWISE_LOG": "WARNING"},
    )
    return done.returncode, done.stdout + done.stderr


async def stored_messages(threads: str, thread_id: str) -> list[Any]:
    """The messages of a thread, read back from the store through a fresh checkpointer."""
    async with open_checkpointer(threads) as saver:
        found = await saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    assert found is not None, f"thread {thread_id} is not in {threads}"
    return list(found.checkpoint["channel_values"]["messages"])


async def test_a_follow_up_uses_the_conversation_and_the_thread_survives_a_restart(
    sample_index: Path, tmp_path: Path
) -> None:
    threads = tmp_path / "threads.sqlite"
    code, out = chat_process(
        sample_index, threads, "--thread", "gj486", stdin=f"{FIRST}\n{FOLLOW_UP}\n/quit\n"
    )
    assert code == 0, out
    assert "no stored thread gj486: starting a new thread with that id" in out
    assert f"condense: {FIRST}\n" in out
    assert f"condense: {STANDALONE}\n" in out  # the follow-up was made standalone from the history
    assert out.count("evidence: ") == 2 and "route: direct" in out
    assert "three separate transit events of GJ 486b [1]" in out
    assert "equilibrium temperature of about 700 K" in out.split(f"you> {FOLLOW_UP}")[1]

    code, out = chat_process(sample_index, threads, "--thread", "gj486", stdin="/threads\n/sources\n")  # EOF
    assert code == 0, out
    assert "resumed thread gj486 (2 turns)" in out
    assert f"you: {FIRST}" in out and f"you: {FOLLOW_UP}" in out
    row = next(line for line in out.splitlines() if line.startswith("* gj486"))
    assert row.split()[:2] == ["*", "gj486"] and row.split()[2] == "2" and row.endswith(FIRST)
    assert "kept (threshold" in out.split("you> /sources")[1]  # the last answer's evidence, from the store

    messages = await stored_messages(str(threads), "gj486")
    assert [m.type for m in messages] == ["human", "ai", "human", "ai"]
    assert [m.content for m in messages[::2]] == [FIRST, FOLLOW_UP]
    assert "700 K" in messages[3].content


def test_chat_on_a_missing_index_exits_2_with_a_clear_message(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["chat", "--index", str(tmp_path / "absent")], input="/quit\n")
    assert result.exit_code == 2
    assert f"error: no index at {tmp_path / 'absent'}" in result.stderr
    assert not (tmp_path / "threads.sqlite").exists()


class InterruptedView(chat.TurnView):
    """Sends this process a Ctrl-C once the first question has been condensed, as a person would."""

    fired = False

    def show(self, part: dict[str, Any]) -> None:
        super().show(part)
        if part["type"] == "updates" and "condense" in part["data"] and not InterruptedView.fired:
            InterruptedView.fired = True
            os.kill(os.getpid(), signal.SIGINT)


def test_ctrl_c_cancels_the_answer_only_and_the_chat_goes_on(
    sample_index: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    # a runner started in the background ignores SIGINT; asyncio.Runner cancels a turn only under the default
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    monkeypatch.setattr(chat, "TurnView", InterruptedView)
    InterruptedView.fired = False
    threads = str(tmp_path / "threads.sqlite")

    def lines() -> Iterator[str]:
        yield FIRST  # cancelled mid-run
        yield "Which telescope observed the first transit of GJ 486b?"
        raise KeyboardInterrupt  # Ctrl-C at the prompt: leave cleanly

    code = run_chat(Context(index_dir=str(sample_index)), threads=threads, thread_id="cut", lines=lines())
    out = capsys.readouterr().out
    assert code == 0
    assert InterruptedView.fired
    assert "cancelled: the thread is kept without this question" in out
    cancelled, answered = out.split("you> Which telescope")
    assert "evidence: " not in cancelled  # the first run stopped before retrieval finished
    assert "8.2 meter Subaru telescope" in answered

    messages = asyncio.run(stored_messages(threads, "cut"))
    assert [m.content for m in messages if m.type == "human"] == [
        "Which telescope observed the first transit of GJ 486b?"
    ]
    assert [m.type for m in messages] == ["human", "ai"]


# PostgreSQL ------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def as_postgres(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a PostgreSQL tool as the postgres user (the server refuses to run as root)."""
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run([*prefix, *command], capture_output=True, text=True, check=check, timeout=120)


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A throwaway PostgreSQL 15 server on a free loopback port, in a temporary directory; stopped after."""
    if not (PG_BIN / "initdb").exists() or not (PG_BIN / "pg_ctl").exists():
        pytest.skip(f"PostgreSQL server binaries not installed ({PG_BIN}/initdb, pg_ctl); CI installs them")
    root = Path(tempfile.mkdtemp(prefix="citewise-pg-"))
    if os.geteuid() == 0:
        import pwd

        owner = pwd.getpwnam("postgres")
        os.chown(root, owner.pw_uid, owner.pw_gid)
    data, port = root / "data", free_port()
    as_postgres(str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
    options = f"-p {port} -c listen_addresses=127.0.0.1 -k {root} -c fsync=off"
    started = as_postgres(
        str(PG_BIN / "pg_ctl"),
        "-D",
        str(data),
        "-o",
        options,
        "-l",
        str(root / "log"),
        "-w",
        "start",
        check=False,
    )
    try:
        assert started.returncode == 0, started.stderr + (root / "log").read_text(errors="replace")
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop", check=False)
        time.sleep(0.2)
        shutil.rmtree(root, ignore_errors=True)


async def test_a_thread_kept_in_postgresql_survives_closing_the_store(
    postgres_url: str, sample_index: Path
) -> None:
    context = Context(index_dir=str(sample_index))
    async with open_checkpointer(postgres_url) as saver:
        session = ChatSession(saver, context, thread_id="pg-thread")
        first = await session.ask(FIRST)
        second = await session.ask(FOLLOW_UP)
    assert "three separate transit events" in first["answer"]
    assert second["question"] == STANDALONE and "700 K" in second["answer"]

    async with open_checkpointer(postgres_url) as saver:
        [summary] = await thread_summaries(saver)
        reopened = ChatSession(saver, context)
        assert await reopened.switch("pg-thread") == ("pg-thread", True)
        messages = await reopened.history()
        assert reopened.last is not None and reopened.last["answer"] == second["answer"]
    assert (summary.thread_id, summary.title, summary.turns) == ("pg-thread", FIRST, 2)
    assert [m.type for m in messages] == ["human", "ai", "human", "ai"]
    assert [m.content for m in messages[::2]] == [FIRST, FOLLOW_UP]


async def test_replicas_opening_a_fresh_postgresql_thread_store_at_the_same_instant_all_start(
    postgres_url: str,
) -> None:
    """Several `citewise api` replicas started together on a fresh database each set the thread store up:
    unserialised, one crashed on a duplicate key in the migrations table or a deadlock between two
    CREATE INDEX CONCURRENTLY."""
    import psycopg

    name = f"threads_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = postgres_url.rsplit("/", 1)[0] + f"/{name}"

    async def start() -> None:
        async with open_checkpointer(url):
            pass

    for _ in range(2):  # the first round on a fresh database, the second on one already set up
        results = await asyncio.gather(*(start() for _ in range(6)), return_exceptions=True)
        assert [r for r in results if r is not None] == []


def test_an_unreachable_postgresql_store_is_a_clear_error(sample_index: Path) -> None:
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres?connect_timeout=2"
    with pytest.raises(
        ValueError, match=r"cannot open the thread store at postgresql://postgres@127\.0\.0\.1"
    ):
        run_chat(Context(index_dir=str(sample_index)), threads=url, lines=iter(["/quit"]))


# a model writing -------------------------------------------------------------------------------------------
class Recorder:
    """An echo that records what would be printed."""

    def __init__(self) -> None:
        self.out: list[str] = []

    def __call__(self, text: str = "", nl: bool = True, **_style: Any) -> None:
        self.out.append(text + ("\n" if nl else ""))


async def test_with_a_model_the_answer_streams_and_the_follow_up_sends_the_conversation(
    serve: Any, corpus_index: str, tmp_path: Path
) -> None:
    server = serve()
    context = Context(model="openai/test-model", judge_model="openai/test-judge", index_dir=corpus_index)
    async with open_checkpointer(str(tmp_path / "threads.sqlite")) as saver:
        session = ChatSession(saver, context, thread_id="llm")
        echo = Recorder()
        first_view = chat.TurnView(echo)
        first = await session.ask("How do vaccines train the immune system?", first_view)
        asked = len(server.chat_requests)
        await session.ask("How long do their memory cells last?", chat.TurnView(Recorder()))
    printed = "".join(echo.out)
    assert first["mode"] == "llm" and first_view.streamed
    streamed = printed.split("  drafting (answer):\n")[1].split("\n")[0]
    assert streamed.strip() and "[E1]" in streamed  # the writer's draft, token by token, before verification
    assert "condense: " in printed and "evidence: " in printed
    condensing = [r for r in server.chat_requests[asked:] if "conversation" in str(r.body.get("messages"))]
    assert condensing, "the follow-up was not condensed with the conversation"
    assert "How do vaccines train the immune system?" in str(condensing[0].body["messages"])


class StageRecorder(chat.TurnView):
    """Notes, as each stage's update streams, how many of the turn's checkpoints the store had finished."""

    def __init__(self, saver: Any) -> None:
        super().__init__(echo=lambda *args, **kwargs: None)
        self.saver = saver
        self.seen: list[tuple[str, int]] = []

    def show(self, part: dict[str, Any]) -> None:
        if part["type"] == "updates":
            self.seen += [(node, self.saver.stored) for node in part["data"]]
        super().show(part)


async def test_every_finished_stage_is_stored_before_the_next_one_starts(
    sample_index: Path, tmp_path: Path
) -> None:
    """A chat killed mid-answer resumes from the stage it was in only if each stage's checkpoint was stored
    before the next stage ran; a slow store (a loaded machine) must not let the run get ahead of it."""
    async with open_checkpointer(str(tmp_path / "threads.sqlite")) as saver:
        put = saver.aput
        saver.stored = 0

        async def slow_put(config: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(0.2)
            stored = await put(config, *args, **kwargs)
            saver.stored += not config["configurable"].get("checkpoint_ns")  # the graph's, not a subgraph's
            return stored

        saver.aput = slow_put
        session = ChatSession(saver, Context(index_dir=str(sample_index)), thread_id="slow")
        view = StageRecorder(saver)
        await session.ask(FIRST, view)
    nodes = [node for node, _ in view.seen]
    assert nodes[:2] == ["condense", "rewrite"] and nodes[-1] == "references"
    # the input's checkpoint, then one per finished step, each stored when the next step's update streams
    assert [stored for _, stored in view.seen] == list(range(2, len(view.seen) + 2))
