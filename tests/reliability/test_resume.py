"""Campaign: a graph run killed mid-way goes on from its checkpoint on the same thread (issue #11).

`citewise chat`, in LLM mode against a FakeOpenAI on 127.0.0.1, is killed with SIGKILL while its answer
request is in flight: every stage before the answer has finished and been checkpointed in the thread store
(SQLite). Opening the thread again finishes the cut-off question from that checkpoint: the answer is written,
verified and cited, and no stage the killed process finished is asked of the model again (the server's own
records say which requests came after the kill). The Python API does the same with `graph.ainvoke(None,
config)`, which is what the chat calls.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.fake_openai import FakeOpenAI, Hang, SchemaResponder, request_schema

from citewise.app.chat import ChatSession
from citewise.app.memory import open_checkpointer
from citewise.context import Context

pytestmark = pytest.mark.integration

QUESTION = "How do vaccines train the immune system?"
THREAD = "killed-thread"
WAIT = 120.0
"""How long the test waits for the chat to reach the answer (a bound, not a timing)."""
BEFORE_ANSWER = {
    "RewrittenQuery",
    "FollowUpQueries",
    "RelevanceScores",
    "Reflections",
    "CriticVerdicts",
    "Summaries",
}
"""What the stages before the answer may ask the model for (rewrite, the second hop's follow-up, score,
reflect, critique for borderline passages, expand)."""


class HeldAnswer:
    """SchemaResponder's replies, except that the answer request (text over evidence) hangs while held."""

    def __init__(self) -> None:
        self.base = SchemaResponder()
        self.held = threading.Event()
        self.held.set()

    def __call__(self, request: dict[str, Any]) -> Any:
        if self.held.is_set() and is_answer(request):
            return Hang(600)
        return self.base(request)


def is_answer(body: Any) -> bool:
    """A writing request over evidence (the answer prompt labels its evidence E1, E2, ...)."""
    if request_schema(body) is not None or not isinstance(body, dict):
        return False
    return any("[E1]" in str(message.get("content", "")) for message in body.get("messages", []))


def chat_command(index_dir: str, threads: Path) -> list[str]:
    citewise = shutil.which("citewise", path=str(Path(sys.executable).parent)) or "citewise"
    return [
        citewise,
        "chat",
        "--index",
        index_dir,
        "--threads",
        str(threads),
        "--thread",
        THREAD,
        "--mode",
        "answer",
        "--model",
        "openai/test-writer",
    ]


def chat_env(server: FakeOpenAI) -> dict[str, str]:
    return {
        **os.environ,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "test",
        "CITEWISE_LOG": "WARNING",
    }


def wait_for(condition: Callable[[], bool], what: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"the chat ended before {what}: {out[-2000:]} {err[-2000:]}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"no {what} within {WAIT:g} s")
        time.sleep(0.05)


async def thread_state(threads: Path, index_dir: str) -> tuple[Any, list[Any]]:
    """What the thread store says of the thread: its cut-off question (or None) and its messages."""
    async with open_checkpointer(str(threads)) as saver:
        session = ChatSession(saver, Context(index_dir=index_dir), thread_id=THREAD)
        return await session.cut_off(), await session.history()


def test_a_chat_killed_mid_answer_finishes_its_question_from_the_checkpoint(
    tmp_path: Path, indexes: Callable[[str, list[dict[str, str]]], str], small_corpus_records: list
) -> None:
    index_dir = indexes("corpus", small_corpus_records)
    threads = tmp_path / "threads.sqlite"
    responder = HeldAnswer()
    with FakeOpenAI(responder) as server:
        killed = subprocess.Popen(
            chat_command(index_dir, threads),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=chat_env(server),
        )
        assert killed.stdin is not None
        killed.stdin.write(QUESTION + "\n")
        killed.stdin.flush()
        wait_for(lambda: any(is_answer(r.body) for r in server.chat_requests), "answer request", killed)
        killed.send_signal(signal.SIGKILL)
        killed.communicate()
        assert killed.returncode == -signal.SIGKILL
        before = server.chat_requests
        asked_before = {request_schema(r.body) for r in before}
        assert {"RewrittenQuery", "RelevanceScores", "Summaries"} <= asked_before  # the earlier stages ran

        cut_off, messages = asyncio.run(thread_state(threads, index_dir))
        assert cut_off == (QUESTION, ("answer",))
        assert [m.type for m in messages] == ["human"]

        responder.held.clear()
        resumed = subprocess.run(
            chat_command(index_dir, threads),
            input="/quit\n",
            capture_output=True,
            text=True,
            env=chat_env(server),
            timeout=WAIT,
        )
        after = server.chat_requests[len(before) :]

    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "was cut off before its answer (next: answer)" in resumed.stdout
    assert "[1]" in resumed.stdout  # the answer, cited
    asked_after = [request_schema(r.body) for r in after]
    assert asked_after.count(None) == 1 and is_answer(
        next(r.body for r in after if not request_schema(r.body))
    )
    assert not BEFORE_ANSWER & set(asked_after), asked_after  # nothing the killed run finished is asked again
    assert set(asked_after) <= {None, "SupportMap"}  # the answer, then verification

    cut_off, messages = asyncio.run(thread_state(threads, index_dir))
    assert cut_off is None
    assert [m.type for m in messages] == ["human", "ai"]
    assert "[1]" in messages[-1].content
