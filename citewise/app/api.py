"""A JSON API to the query graph: the server several citewise replicas behind one proxy run (`citewise api`).

Each replica is one process: this app, the query graph compiled with the thread store (`--threads`: SQLite
for one machine, a `postgresql://` URL for several replicas) and the index it answers from. A thread lives in
the thread store, not in a replica: a turn asked on one replica continues on another ("And its radius?" is
read with the turns before it wherever they were asked). Every stage's checkpoint is stored before the next
stage starts (`durability="sync"`), so a replica killed mid-answer loses nothing it had committed: the thread
shows the question and the stages still to run (`GET /threads/{id}`), and any replica finishes it
(`POST /threads/{id}/resume`); a new question in that thread drops the unanswered one first, as the terminal
chat does. LangGraph's own server (`langgraph dev`) keeps runs and queues in one process, and its scaling
server needs a licence key self-hosted: this is the licence-clean replica path.

Routes:
- `POST /threads/{thread_id}/ask` with `{"question": "...", "mode": "auto" | "answer" | "report"}`: run one
  turn; the answer, its citations, references and what verification dropped (as `citewise ask --json`).
- `POST /threads/{thread_id}/resume`: finish the thread's cut-off turn (409 when there is none).
- `GET /threads/{thread_id}`: the thread's messages and its cut-off turn, if any (404 for an unknown thread).
- `GET /health`: the replica answers.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import FastAPI, HTTPException
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, Field

from citewise.app.chat import result_payload
from citewise.app.memory import open_checkpointer
from citewise.app.terminal import ROUTES, AnswerMode
from citewise.context import Context
from citewise.core.text import message_text

THREAD_ID = re.compile(r"[A-Za-z0-9_.:\-]{1,128}")
"""What a thread id may be: it names a row of the thread store, never a path or a query."""


class Ask(BaseModel):
    """One turn: the question, and how to answer it."""

    question: str = Field(min_length=1, max_length=10_000)
    mode: Literal["auto", "answer", "report"] = "answer"


def build_app(context: Context, threads: str | None = None) -> FastAPI:
    """The API of one replica: the query graph with the thread store `threads` names, runs under `context`."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        from citewise.graph.query import graph

        async with open_checkpointer(threads) as saver:
            app.state.graph = graph.copy(update={"checkpointer": saver})
            app.state.saver = saver
            yield

    app = FastAPI(title="citewise", lifespan=lifespan, docs_url=None, redoc_url=None)

    def config(thread_id: str) -> RunnableConfig:
        if not THREAD_ID.fullmatch(thread_id):
            raise HTTPException(422, "a thread id is 1-128 letters, digits, '_', '.', ':' or '-'")
        return RunnableConfig(configurable={"thread_id": thread_id})

    async def run(graph: Any, given: Any, settings: RunnableConfig, run_context: Context) -> dict[str, Any]:
        await graph.ainvoke(given, settings, context=run_context, durability="sync")
        return result_payload((await graph.aget_state(settings)).values)

    async def cut_off(graph: Any, settings: RunnableConfig) -> dict[str, Any] | None:
        snapshot = await graph.aget_state(settings)
        messages = snapshot.values.get("messages", [])
        if not snapshot.next or any(task.interrupts for task in snapshot.tasks):
            return None
        if not messages or messages[-1].type != "human":
            return None
        return {"question": message_text(messages[-1]), "stages": list(snapshot.next), "id": messages[-1].id}

    @app.get("/health")
    async def health() -> dict[str, bool]:
        return {"ok": True}

    @app.post("/threads/{thread_id}/ask")
    async def ask(thread_id: str, body: Ask) -> dict[str, Any]:
        from langchain_core.messages import RemoveMessage

        from citewise.core.questions import check_question

        settings = config(thread_id)
        try:
            question = check_question(body.question)
        except ValueError as error:
            raise HTTPException(422, str(error)) from error
        graph = app.state.graph
        pending = await cut_off(graph, settings)
        if pending is not None:  # a turn a killed replica left: its question goes, as the terminal chat does
            update = {"messages": [RemoveMessage(id=pending["id"])]}
            await graph.aupdate_state(settings, update, as_node="references")
        run_context = dataclasses.replace(context, route=ROUTES[AnswerMode(body.mode)])
        return await run(graph, {"messages": [("user", question)]}, settings, run_context)

    @app.post("/threads/{thread_id}/resume")
    async def resume(thread_id: str) -> dict[str, Any]:
        settings = config(thread_id)
        graph = app.state.graph
        if await cut_off(graph, settings) is None:
            raise HTTPException(409, "the thread has no cut-off turn to finish")
        return await run(graph, None, settings, context)

    @app.get("/threads/{thread_id}")
    async def thread(thread_id: str) -> dict[str, Any]:
        settings = config(thread_id)
        graph = app.state.graph
        stored = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        if await app.state.saver.aget_tuple(stored) is None:
            raise HTTPException(404, f"no thread {thread_id}")
        snapshot = await graph.aget_state(settings)
        messages = [
            {"role": "user" if m.type == "human" else "assistant", "text": message_text(m)}
            for m in snapshot.values.get("messages", [])
        ]
        pending = await cut_off(graph, settings)
        if pending is not None:
            pending.pop("id")
        return {"thread_id": thread_id, "messages": messages, "cut_off": pending}

    return app
