"""The terminal chat (`citewise chat`): a conversation with memory over the query graph.

Every turn runs the query graph compiled with the thread store's checkpointer under the thread's id, so
`condense` reads the conversation so far (a follow-up becomes a standalone question) and a thread survives a
restart. Each stage prints one line as it finishes, a model's answer streams token by token, and the answer
is then shown the way `citewise ask` shows it. Ctrl-C while an answer runs cancels that answer only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sys
import uuid
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import typer
from langchain_core.messages import AIMessageChunk, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import StreamPart

from citewise.app.memory import ThreadSummary, open_checkpointer, shown_setting, thread_summaries
from citewise.app.terminal import (
    OUTPUT_KEYS,
    ROUTES,
    AnswerMode,
    report_payload,
    show_answer,
    show_evidence,
    with_source_keys,
)
from citewise.context import Context
from citewise.core.questions import BadQuestion, check_question
from citewise.core.text import message_text

logger = logging.getLogger(__name__)

HELP = """Ask a question; a follow-up may refer to what was said before. Commands:
  /sources       the evidence of the last answer, with its scores
  /new           start a new thread
  /threads       list the stored threads (id, first question, turns, last update)
  /thread ID     switch to a stored thread (an unknown id starts a new thread with that id)
  /mode MODE     answer (a cited answer), report (sections) or auto (decided per question)
  /help          this list
  /quit          leave (so do Ctrl-D and Ctrl-C at the prompt; Ctrl-C during an answer cancels it)"""

COMMANDS = ("sources", "new", "threads", "thread", "mode", "help", "quit")
"""Every command the chat knows, without the slash."""

ALIASES = {"exit": "quit", "q": "quit", "?": "help"}

STREAMED_NODES = ("answer", "customize")
"""Nodes whose model output the person watches; every other call is internal (and tagged nostream)."""

PROMPT = "you> "


@dataclass(frozen=True)
class ChatCommand:
    """A parsed slash command."""

    name: str
    """One of COMMANDS."""
    argument: str = ""
    """The thread id of /thread, the mode of /mode; empty otherwise."""


def parse_command(line: str) -> ChatCommand | None:
    """The command a line gives, or None when the line is a question.

    Raises:
        ValueError: an unknown command, or one with a missing or wrong argument (the message says which).
    """
    text = line.strip()
    if not text.startswith("/"):
        return None
    name, _, argument = text[1:].partition(" ")
    name, argument = ALIASES.get(name.lower(), name.lower()), argument.strip()
    if name not in COMMANDS:
        raise ValueError(f"unknown command /{name} (/help lists the commands)")
    if name == "thread" and not argument:
        raise ValueError("/thread needs an id (/threads lists them)")
    if name == "mode":
        argument = argument.lower()
        if argument not in {m.value for m in AnswerMode}:
            raise ValueError("/mode takes answer, report or auto")
    elif name != "thread" and argument:
        raise ValueError(f"/{name} takes no argument")
    return ChatCommand(name, argument)


def _cut(threshold: Any) -> str:
    return f"threshold {threshold:g}" if isinstance(threshold, int | float) else "no threshold"


def _short(text: str, width: int = 100) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def stage_lines(node: str, update: Any) -> list[str]:
    """The progress lines a finished node's update gives (none for the stages that say nothing new)."""
    if not isinstance(update, dict):
        return []
    if node == "condense" and update.get("question"):
        return [f"condense: {_short(update['question'], 160)}"]
    if node == "rewrite":
        queries = update.get("queries") or []
        shown = " | ".join(_short(q, 60) for q in queries)
        return [f"rewrite: {len(queries)} {'query' if len(queries) == 1 else 'queries'}: {shown}"]
    if node == "evidence":
        evidence = update.get("evidence") or []
        kept = sum(1 for r in evidence if r.get("kept"))
        passes = update.get("attempt") or 1
        again = f", after {passes} passes" if passes > 1 else ""
        return [f"evidence: {len(evidence)} retrieved, {kept} kept ({_cut(update.get('threshold'))}{again})"]
    if node == "route" and update.get("route"):
        return [f"route: {update['route']} ({_short(update.get('route_reason', ''), 120)})"]
    if node == "outline" and update.get("outline"):
        titles = [s.get("title", "") for s in update["outline"]]
        return [f"outline: {len(titles)} sections: " + "; ".join(_short(t, 40) for t in titles)]
    if node == "section":
        lines = []
        for section in (update.get("sections") or {}).values():
            kept = len(section.get("kept") or [])
            status = section.get("status", "")
            lines.append(
                f"section: {_short(section.get('title', ''), 60)}: {status}, {kept} kept "
                f"({_cut(section.get('threshold'))})"
            )
        return lines
    if node == "customize" and update.get("validation"):
        validation = update["validation"]
        problems = len(validation.get("problems", []))
        verdict = "passed" if validation.get("passed") else f"{problems} problem(s)"
        return [f"customize: draft {validation.get('attempts', 0)}, {verdict}"]
    return []


def result_payload(values: dict[str, Any]) -> dict[str, Any]:
    """What `ask` shows of a run, from the thread's state after the turn (report keys for a report)."""
    payload = {key: values.get(key, default) for key, default in OUTPUT_KEYS.items()}
    payload["error"] = values.get("error")
    if values.get("route") == "report":
        payload |= report_payload(values)
    return with_source_keys(payload)


class TurnView:
    """Prints one turn as it streams: a line per finished stage, the answer's tokens as they come."""

    def __init__(self, echo: Callable[..., None] = typer.secho) -> None:
        """Print through `echo` (typer.secho's signature)."""
        self.echo = echo
        self.streaming = False
        """A token line is open (a stage line first ends it)."""
        self.streamed = False
        """Some answer text was streamed this turn."""
        self._message_id: str | None = None

    def show(self, part: StreamPart[Any, Any]) -> None:
        """Print what one stream part (LangGraph's v2 format) tells the person."""
        if part["type"] == "updates":
            for node, update in part["data"].items():
                for line in stage_lines(node, update):
                    self._end_tokens()
                    self.echo(f"  {line}", dim=True)
        elif part["type"] == "messages":
            chunk, metadata = part["data"]
            if not isinstance(chunk, AIMessageChunk) or metadata.get("langgraph_node") not in STREAMED_NODES:
                return
            text = message_text(chunk)
            if not text:
                return
            if chunk.id != self._message_id:  # a new draft (a refine pass, a report's redraft)
                self._end_tokens()
                self.echo(f"  drafting ({metadata['langgraph_node']}):", dim=True)
                self._message_id = chunk.id
            self.echo(text, nl=False)
            self.streaming = self.streamed = True

    def finish(self) -> None:
        """End the turn's output (closes an open token line)."""
        self._end_tokens()

    def _end_tokens(self) -> None:
        if self.streaming:
            self.echo("")
            self.streaming = False


def new_thread_id() -> str:
    """A fresh thread id: short enough to type after /thread."""
    return uuid.uuid4().hex[:12]


class ChatSession:
    """One person's chat: the compiled graph with its thread store, the current thread, mode and answer."""

    def __init__(self, saver: BaseCheckpointSaver, context: Context, thread_id: str | None = None) -> None:
        """Compile the query graph with `saver`; start on `thread_id` (a new thread when None)."""
        from citewise.graph.query import graph

        self.saver = saver
        # the compiled graph with this store attached, as the LangGraph server attaches its own checkpointer
        self.graph = graph.copy(update={"checkpointer": saver})
        self.context = context
        self.thread_id = thread_id or new_thread_id()
        self.last: dict[str, Any] | None = None
        """The last answer's payload in this thread (for /sources)."""

    @property
    def config(self) -> RunnableConfig:
        """The run config that names the current thread."""
        return RunnableConfig(configurable={"thread_id": self.thread_id})

    @property
    def mode(self) -> str:
        """The answer mode in use: auto, answer or report."""
        return next(mode.value for mode, route in ROUTES.items() if route == self.context.route)

    def set_mode(self, mode: str) -> None:
        """Answer, report or auto from the next question on."""
        self.context = dataclasses.replace(self.context, route=ROUTES[AnswerMode(mode)])

    async def ask(self, question: str | None, view: TurnView | None = None) -> dict[str, Any]:
        """Run one turn in the current thread, streaming to `view`; the answer's payload (as `ask --json`).

        With `question` None the thread's cut-off run (`cut_off`) goes on from its last checkpoint: the
        stages it finished are not run again.
        """
        view = view or TurnView()
        try:
            async for part in self.graph.astream(
                None if question is None else {"messages": [HumanMessage(question)]},
                self.config,
                context=self.context,
                stream_mode=["updates", "messages"],
                version="v2",
                # store each stage's checkpoint before the next stage starts, so a process killed
                # mid-answer leaves the thread at the stage it was in (LangGraph by default stores it later)
                durability="sync",
            ):
                view.show(part)
        finally:
            view.finish()
        snapshot = await self.graph.aget_state(self.config)
        self.last = result_payload(snapshot.values)
        return self.last

    async def cut_off(self) -> tuple[str, tuple[str, ...]] | None:
        """The current thread's question whose run stopped before its end, with the stages still to run.

        A process killed mid-answer leaves the thread's last checkpoint with stages still to run and the
        question without its answer; None when the last run ended (or waits for the person, as an outline
        approval does).
        """
        snapshot = await self.graph.aget_state(self.config)
        if not snapshot.next or any(task.interrupts for task in snapshot.tasks):
            return None
        messages = snapshot.values.get("messages", [])
        if not messages or messages[-1].type != "human":
            return None
        return message_text(messages[-1]), tuple(snapshot.next)

    async def forget_unanswered(self) -> None:
        """After a cancelled turn: drop its question from the thread, so follow-ups do not build on it."""
        snapshot = await self.graph.aget_state(self.config)
        messages = snapshot.values.get("messages", [])
        if messages and messages[-1].type == "human":
            update = {"messages": [RemoveMessage(id=messages[-1].id)]}
            await self.graph.aupdate_state(self.config, update, as_node="references")

    async def history(self, thread_id: str | None = None) -> list[Any]:
        """The messages stored in a thread (the current one by default)."""
        config = RunnableConfig(configurable={"thread_id": thread_id or self.thread_id})
        snapshot = await self.graph.aget_state(config)
        return list(snapshot.values.get("messages", []))

    async def exists(self, thread_id: str) -> bool:
        """Whether the store holds a thread with this id."""
        found = await self.saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        return found is not None

    async def switch(self, wanted: str) -> tuple[str, bool]:
        """Make `wanted` the current thread (a unique prefix of a stored id will do); (its id, stored)."""
        thread_id = wanted
        if not await self.exists(wanted):
            matches = [s.thread_id for s in await self.threads(limit=1000) if s.thread_id.startswith(wanted)]
            if len(matches) == 1:
                thread_id = matches[0]
        self.thread_id = thread_id
        stored = await self.exists(thread_id)
        self.last = None
        if stored:
            values = (await self.graph.aget_state(self.config)).values
            self.last = result_payload(values) if values.get("answer") else None
        return thread_id, stored

    def new(self) -> str:
        """Start a new thread; its id."""
        self.thread_id, self.last = new_thread_id(), None
        return self.thread_id

    async def threads(self, limit: int = 50) -> list[ThreadSummary]:
        """The stored threads, most recently updated first."""
        return await thread_summaries(self.saver, limit=limit)


def format_threads(summaries: list[ThreadSummary], current: str | None = None) -> list[str]:
    """The /threads table: id, turns, last update, first question; the current thread marked with *."""
    if not summaries:
        return ["no stored threads yet"]
    width = max(len("id"), *(len(s.thread_id) for s in summaries))
    lines = [f"  {'id':{width}}  turns  {'updated':16}  first question"]
    for summary in summaries:
        mark = "*" if summary.thread_id == current else " "
        updated = summary.updated[:16].replace("T", " ")
        lines.append(f"{mark} {summary.thread_id:{width}}  {summary.turns:>5}  {updated:16}  {summary.title}")
    return lines


def show_history(messages: list[Any], echo: Callable[..., None] = typer.secho, turns: int = 3) -> None:
    """The last few turns of a resumed thread, one short line per message."""
    questions = [n for n, m in enumerate(messages) if m.type == "human"]
    start = questions[-turns] if len(questions) > turns else 0
    if start:
        echo(f"  ... {len(questions) - turns} earlier turn(s)", dim=True)
    for message in messages[start:]:
        who = "you" if message.type == "human" else "citewise"
        echo(f"  {who}: {_short(message_text(message), 100)}", dim=True)


async def run_command(session: ChatSession, command: ChatCommand) -> bool:
    """Carry out a slash command; False when the chat should end."""
    echo = typer.secho
    if command.name == "quit":
        return False
    if command.name == "help":
        echo(HELP)
    elif command.name == "sources":
        if session.last is None:
            echo("no answer yet in this thread")
        else:
            show_evidence(session.last, rows=len(session.last["evidence"]))
    elif command.name == "new":
        echo(f"new thread {session.new()}")
    elif command.name == "threads":
        for line in format_threads(await session.threads(), current=session.thread_id):
            echo(line)
    elif command.name == "thread":
        await announce_thread(session, *await session.switch(command.argument))
    elif command.name == "mode":
        session.set_mode(command.argument)
        echo(f"mode {session.mode}")
    return True


async def announce_thread(session: ChatSession, thread_id: str, stored: bool) -> None:
    """Say which thread is current: a stored one with its last turns, or a new one."""
    if not stored:
        typer.secho(f"no stored thread {thread_id}: starting a new thread with that id")
        return
    messages = await session.history()
    turns = sum(1 for m in messages if m.type == "human")
    typer.secho(f"resumed thread {thread_id} ({turns} turn{'s' if turns != 1 else ''})", bold=True)
    show_history(messages)


async def open_session(
    stack: AsyncExitStack, context: Context, threads: str | None, thread_id: str | None
) -> ChatSession:
    """Open the thread store and the index (kept warm for every turn) and start on the asked thread."""
    from citewise.core.indexes import open_index

    saver = await stack.enter_async_context(open_checkpointer(threads))
    session = ChatSession(saver, context)
    await open_index(context)  # the index and its embedding model load once, before the first question
    if thread_id:
        await announce_thread(session, *await session.switch(thread_id))
    else:
        typer.secho(f"new thread {session.thread_id}")
    return session


def run_chat(
    context: Context, threads: str | None = None, thread_id: str | None = None, lines: Any = None
) -> int:
    """The chat loop until /quit, end of input or Ctrl-C at the prompt; the exit code (0).

    `lines` replaces standard input (an iterator of lines, for tests).

    Each turn runs on one event loop that lives as long as the chat (the thread store's connection and the
    index stay open across turns). Ctrl-C during a turn cancels that turn's task: the thread is kept
    without the cancelled question, and the prompt returns.

    Raises:
        ValueError: the thread store cannot be opened (the message says why).
    """
    interactive = lines is None and sys.stdin.isatty()
    if interactive:
        import readline  # noqa: F401 - line editing and history for input()

    def read() -> str:
        if interactive:
            return input(PROMPT)
        line = next(lines) if lines is not None else input()
        typer.echo(f"{PROMPT}{line}")  # piped input: the transcript shows what was asked
        return line

    with asyncio.Runner() as runner:
        stack = AsyncExitStack()
        try:
            session = runner.run(open_session(stack, context, threads, thread_id))
            llm = "LLM mode" if context.llm else "local mode (no LLM configured)"
            typer.secho(
                f"citewise chat: {llm}, mode {session.mode}, threads in {shown_setting(threads)}; "
                "/help lists the commands",
                dim=True,
            )
            finish_cut_off(runner, session)
            while True:
                try:
                    line = read()
                except (EOFError, StopIteration, KeyboardInterrupt):
                    typer.echo("")
                    return 0
                if not line.strip():
                    continue
                try:
                    command = parse_command(line)
                except ValueError as error:
                    typer.secho(str(error), fg=typer.colors.YELLOW)
                    continue
                if command is not None:
                    try:
                        if not runner.run(run_command(session, command)):
                            return 0
                    except KeyboardInterrupt:  # Ctrl-C during a command (a slow /threads): back to the prompt
                        typer.secho("\ncancelled", fg=typer.colors.YELLOW)
                    if command.name == "thread":
                        finish_cut_off(runner, session)
                    continue
                try:
                    question = check_question(line)
                except BadQuestion as error:
                    typer.secho(f"error: {error}", fg=typer.colors.YELLOW)
                    continue
                _turn(runner, session, question)
        finally:
            runner.run(stack.aclose())


def finish_cut_off(runner: asyncio.Runner, session: ChatSession) -> None:
    """Answer the current thread's cut-off question (a process killed mid-answer) from its checkpoint."""
    try:
        found = runner.run(session.cut_off())
    except Exception as error:
        logger.warning("could not read the thread's last run: %s", error)
        return
    if found is None:
        return
    question, stages = found
    typer.secho(
        f'the last question in this thread, "{_short(question, 80)}", was cut off before its answer '
        f"(next: {', '.join(stages)}): finishing it from where it stopped",
        fg=typer.colors.YELLOW,
    )
    _turn(runner, session, None)


def _turn(runner: asyncio.Runner, session: ChatSession, question: str | None) -> None:
    """One question (None: the cut-off one): stream it, show the answer; Ctrl-C cancels only it."""
    try:
        payload = runner.run(session.ask(question))
    except KeyboardInterrupt:  # asyncio.Runner cancelled the turn's task on the first Ctrl-C
        typer.secho("\ncancelled: the thread is kept without this question", fg=typer.colors.YELLOW)
        try:
            runner.run(session.forget_unanswered())
        except (ValueError, KeyError) as error:
            logger.warning("could not drop the cancelled question: %s", error)
        return
    except Exception as error:
        logger.debug("turn failed", exc_info=True)
        typer.secho(f"error: {error} (the thread is kept; ask again or /quit)", fg=typer.colors.RED)
        return
    typer.echo("")
    problem = payload.get("error")
    if isinstance(problem, dict) and problem.get("message"):
        typer.secho(f"error: {problem['message']}", fg=typer.colors.RED)
        if problem.get("hint"):
            typer.echo(problem["hint"])
        return
    show_answer(payload)
