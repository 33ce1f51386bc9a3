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

Every request but `/health` and the schema is someone's (`citewise.app.access.Gate`: a bearer token, a
trusted proxy's user header, or the local user on loopback). A thread belongs to the user of its first
turn; any other user is told it does not exist (404, never 403). Asks and deletions go to the audit log.
The schema FastAPI publishes (`GET /openapi.json`) describes every field of every reply.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from citewise.app.access import AccessError, AccessStore, Gate, ask_detail
from citewise.app.chat import result_payload
from citewise.app.export import MEDIA_TYPES, render
from citewise.app.memory import claim_thread, delete_thread, open_checkpointer, thread_owner, thread_summaries
from citewise.app.terminal import ROUTES, AnswerMode
from citewise.context import Context
from citewise.core.text import message_text
from citewise.models.records import Degraded, StageUsage
from citewise.state.types import EvidenceRecord, OutlineSection, RunError, Validation

logger = logging.getLogger(__name__)

THREAD_ID = re.compile(r"[A-Za-z0-9_.:\-]{1,128}")
"""What a thread id may be: it names a row of the thread store, never a path or a query."""

BEARER = HTTPBearer(
    auto_error=False, description="An API token from `citewise users add NAME` (not needed on loopback)."
)
"""The bearer scheme (module-level: the route's annotations are resolved in this module's namespace)."""

THREADS_LISTED = 100
"""The most threads `GET /threads` lists (the most recently updated)."""


class Ask(BaseModel):
    """One turn: the question, and how to answer it."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    question: str = Field(min_length=1, max_length=10_000)
    """The question, read with the thread's earlier turns ("And its radius?")."""
    mode: Literal["auto", "answer", "report"] = "auto"
    """auto (a direct answer or a report, decided per question, as `citewise ask`), answer, or report."""


class CitedSource(TypedDict):
    """One numbered citation marker of the answer, resolved to stored evidence and its source."""

    marker: int
    """The number shown in the answer as [n]."""
    chunk_id: str
    """The evidence chunk it points at (always a stored chunk)."""
    doc_id: str
    """Its document's id in the index (a content hash)."""
    key: str
    """The source's own key (an arXiv id, a BEIR `_id`; "" when the source has none)."""
    title: str
    """The source's title."""
    text: str
    """The cited text (the chunk, or the supporting sentence when fine-grained)."""


class PrimaryReference(TypedDict, total=False):
    """A source document the answer cites."""

    doc_id: str
    """Its id in the index."""
    title: str
    """Its title."""
    file: str
    """The file it was ingested from."""
    key: str
    """The source's own key ("" when none)."""
    authors: str
    """Its authors as its file names them (absent when it does not)."""
    markers: list[int]
    """The answer's markers that cite it."""
    flags: list[str]
    """Notes on it, such as that it contradicts the trusted sources."""


class SecondaryReference(TypedDict, total=False):
    """A work a cited paragraph itself cites (from the source's bibliography)."""

    doc_id: str
    """The citing source's id."""
    cited_in: str
    """The citing source's title."""
    key: str
    """The bibliography entry's key."""
    text: str
    """The bibliography entry, readable."""
    fine: bool
    """Cited in the very lines that support an answer sentence (not only somewhere in the paragraph)."""


class ReferenceLists(TypedDict):
    """The answer's references."""

    primary: list[PrimaryReference]
    """The source documents cited."""
    secondary: list[SecondaryReference]
    """The works those sources cite in the paragraphs used."""


class ReportSection(TypedDict, total=False):
    """One written section of a report."""

    id: str
    """The outline section's id (s1, s2, ...)."""
    title: str
    """Its heading."""
    status: str
    """written, no_evidence or failed."""
    text: str
    """The section as written, before verification."""
    markers: list[int]
    """The citation markers of its verified sentences."""
    evidence: list[str]
    """The kept evidence chunk ids, in the order the writer saw them."""
    threshold: float | None
    """The section's own score threshold."""
    error: str
    """Why the section failed ("" otherwise)."""


class Reply(BaseModel):
    """One turn's result: the cited answer (or report) and everything that decided it, as `ask --json`."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    thread_id: str
    """The thread the turn was asked in."""
    question: str = ""
    """The standalone question that was answered (the turn read with the thread's earlier turns)."""
    answer: str = ""
    """The cited answer in markdown, markers like [1] (a report: the whole report, a ## heading a section)."""
    mode: Literal["llm", "local"] = "local"
    """Whether language models or the local (no-LLM) fallbacks produced it."""
    route: Literal["direct", "report"] = "direct"
    """The path taken: a direct cited answer or a report."""
    route_reason: str = ""
    """Why that route (the caller's mode, the model's reason, or the local rule)."""
    citations: list[CitedSource] = []
    """Every marker of the answer, with its chunk, source key, title and cited text."""
    references: ReferenceLists = {"primary": [], "secondary": []}
    """Primary references (sources) and secondary ones (works they cite)."""
    evidence: list[EvidenceRecord] = []
    """Every candidate chunk with its scores, verdict and reason, best first."""
    threshold: float | None = None
    """The cut applied to the final scores (None when nothing was scored)."""
    usage: dict[str, StageUsage] = {}
    """Model calls and tokens per stage (empty in local mode)."""
    unsupported: list[str] = []
    """Answer sentences verification dropped because no evidence supports them."""
    gentext: str = ""
    """With trusted sources: the short text written from them that evidence is checked against."""
    degraded: list[Degraded] = []
    """Stages that fell back to a weaker method this turn, and why."""
    error: RunError | None = None
    """Set when the turn could not answer (the answer then says why)."""
    outline_type: str | None = None
    """Reports: the question type whose outline instruction was used."""
    outline: list[OutlineSection] | None = None
    """Reports: the planned sections (id, title, goal, queries, documents)."""
    sections: list[ReportSection] | None = None
    """Reports: each section as written, in outline order."""
    validation: Validation | None = None
    """Reports: the final checks (attempts, problems, passed)."""


class CutOff(BaseModel):
    """A turn a replica stopped in (killed mid-answer): any replica finishes it."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    question: str
    """The question asked."""
    stages: list[str]
    """The stages still to run."""


class Message(BaseModel):
    """One message of a thread."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    role: Literal["user", "assistant"]
    """Who wrote it."""
    text: str
    """What it says (an answer with its markers)."""


class Thread(BaseModel):
    """A thread's conversation."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    thread_id: str
    """Its id."""
    messages: list[Message]
    """Its messages, oldest first."""
    cut_off: CutOff | None
    """Its cut-off turn, if a replica stopped in one."""


class ThreadListed(BaseModel):
    """A thread, as the caller's list shows it."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    thread_id: str
    """Its id."""
    title: str
    """Its first question."""
    turns: int
    """Questions asked in it."""
    updated: str
    """When it last changed (ISO 8601)."""


class NewThread(BaseModel):
    """A thread made for the caller."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    thread_id: str
    """Its id: random, unguessable, the caller's alone."""


def build_app(
    context: Context, threads: str | None = None, gate: Gate | None = None, audit: AccessStore | None = None
) -> FastAPI:
    """The API of one replica: the query graph with the thread store `threads` names, runs under `context`.

    `gate` says who each request is (none: everyone is the local user, as on loopback before logins);
    `audit` is where asks and deletions are logged (none: nowhere).
    """
    gate = gate or Gate(store=None)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        from citewise.graph.query import graph

        async with open_checkpointer(threads) as saver:
            app.state.graph = graph.copy(update={"checkpointer": saver})
            app.state.saver = saver
            yield

    app = FastAPI(
        title="citewise",
        summary="Cited answers from your documents, in threads that belong to their users.",
        lifespan=lifespan,
        docs_url=None,  # Swagger's and ReDoc's pages load scripts from a CDN: the schema is served alone
        redoc_url=None,
    )

    def caller(
        request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]
    ) -> str:
        """Who the request is (looked up afresh: a revoked token is refused at once); 401 for nobody."""
        token = credentials.credentials if credentials is not None else None
        if token is None and request.headers.get("authorization"):
            token = ""  # a header of another scheme, or an empty one: refused, never read as the local user
        user = gate.user_of(token, request.client.host if request.client else None, request.headers)
        if user is None:
            raise HTTPException(
                401, "log in: send Authorization: Bearer TOKEN", {"WWW-Authenticate": "Bearer"}
            )
        return user

    async def readable_by(user: str) -> tuple[str, ...] | None:
        """What `user`'s runs may read, read afresh at each ask (None: every collection, the local user's)."""
        if user == gate.local_user:
            return None
        if gate.store is None:
            return ()  # nowhere to look a grant up: nothing
        return await run_in_threadpool(gate.store.collections_of, user)

    async def log(action: str, user: str, detail: dict[str, Any]) -> None:
        """Append to the audit log; one that cannot be written (a standby's) is logged, the reply stands."""
        if audit is None:
            return
        try:
            await run_in_threadpool(audit.record, action, user, detail)
        except AccessError as error:
            logger.warning("not written to the audit log: %s", error)

    def config(thread_id: str) -> RunnableConfig:
        if not THREAD_ID.fullmatch(thread_id):
            raise HTTPException(422, "a thread id is 1-128 letters, digits, '_', '.', ':' or '-'")
        return RunnableConfig(configurable={"thread_id": thread_id})

    async def owned(thread_id: str, user: str) -> RunnableConfig:
        """The thread's config when `user` owns it; 404 when it is another's or does not exist (alike)."""
        settings = config(thread_id)
        if await thread_owner(app.state.saver, thread_id) != user:
            raise HTTPException(404, f"no thread {thread_id}")
        return settings

    async def run(
        graph: Any, given: Any, settings: RunnableConfig, run_context: Context, user: str, action: str
    ) -> dict[str, Any]:
        await graph.ainvoke(given, settings, context=run_context, durability="sync")
        payload = result_payload((await graph.aget_state(settings)).values)
        thread_id = settings["configurable"]["thread_id"]
        await log(action, user, ask_detail(thread_id, payload))
        return {"thread_id": thread_id, **payload}

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
        """The replica answers (no login needed)."""
        return {"ok": True}

    @app.post("/threads", response_model=NewThread, status_code=201)
    async def new_thread(user: str = Depends(caller)) -> dict[str, Any]:
        """Make a thread for the caller, with a random id no one else can use."""
        thread_id = secrets.token_urlsafe(18)
        await claim_thread(app.state.saver, thread_id, user)
        return {"thread_id": thread_id}

    @app.get("/threads", response_model=list[ThreadListed])
    async def my_threads(user: str = Depends(caller)) -> list[dict[str, Any]]:
        """The caller's threads that hold a turn, most recently updated first (at most 100)."""
        summaries = await thread_summaries(app.state.saver, THREADS_LISTED, owner=user)
        return [dataclasses.asdict(summary) for summary in summaries]

    @app.post("/threads/{thread_id}/ask", response_model=Reply)
    async def ask(thread_id: str, body: Ask, user: str = Depends(caller)) -> dict[str, Any]:
        """Ask in a thread (a new id starts one, the caller's from then on): the cited answer or report."""
        from langchain_core.messages import RemoveMessage

        from citewise.core.questions import check_question

        settings = config(thread_id)
        try:
            question = check_question(body.question)
        except ValueError as error:
            raise HTTPException(422, str(error)) from error
        if await claim_thread(app.state.saver, thread_id, user) != user:
            raise HTTPException(404, f"no thread {thread_id}")
        graph = app.state.graph
        pending = await cut_off(graph, settings)
        if pending is not None:  # a turn a killed replica left: its question goes, as the terminal chat does
            update = {"messages": [RemoveMessage(id=pending["id"])]}
            await graph.aupdate_state(settings, update, as_node="references")
        run_context = dataclasses.replace(
            context, route=ROUTES[AnswerMode(body.mode)], collections=await readable_by(user)
        )
        return await run(graph, {"messages": [("user", question)]}, settings, run_context, user, "ask")

    @app.post("/threads/{thread_id}/resume", response_model=Reply)
    async def resume(thread_id: str, user: str = Depends(caller)) -> dict[str, Any]:
        """Finish the thread's cut-off turn (409 when there is none)."""
        settings = await owned(thread_id, user)
        graph = app.state.graph
        if await cut_off(graph, settings) is None:
            raise HTTPException(409, "the thread has no cut-off turn to finish")
        run_context = dataclasses.replace(context, collections=await readable_by(user))
        return await run(graph, None, settings, run_context, user, "ask.resume")

    @app.get("/threads/{thread_id}", response_model=Thread)
    async def thread(thread_id: str, user: str = Depends(caller)) -> dict[str, Any]:
        """The thread's messages and its cut-off turn, if any."""
        settings = await owned(thread_id, user)
        graph = app.state.graph
        snapshot = await graph.aget_state(settings)
        messages = [
            {"role": "user" if m.type == "human" else "assistant", "text": message_text(m)}
            for m in snapshot.values.get("messages", [])
        ]
        pending = await cut_off(graph, settings)
        if pending is not None:
            pending.pop("id")
        return {"thread_id": thread_id, "messages": messages, "cut_off": pending}

    @app.get(
        "/threads/{thread_id}/export",
        response_class=Response,
        responses={200: {"content": {media: {} for media in MEDIA_TYPES.values()}}},
    )
    async def export(
        thread_id: str,
        kind: Annotated[Literal["md", "docx", "bib", "ris"], Query(alias="format")] = "md",
        user: str = Depends(caller),
    ) -> Response:
        """The thread's last answer or report as a file: Markdown, DOCX, or the works it cites (BibTeX, RIS).

        409 while the thread's last turn is cut off (finish it with `resume` first); 404 before any answer.
        """
        settings = await owned(thread_id, user)
        graph = app.state.graph
        if await cut_off(graph, settings) is not None:
            raise HTTPException(409, "the thread's last turn was cut off: resume it, then export")
        values = (await graph.aget_state(settings)).values
        if not values.get("answer"):
            raise HTTPException(404, f"thread {thread_id} has no answer to export")
        data = await run_in_threadpool(render, result_payload(values), kind)
        disposition = f'attachment; filename="citewise-{thread_id}.{kind}"'
        return Response(data, media_type=MEDIA_TYPES[kind], headers={"Content-Disposition": disposition})

    @app.delete("/threads/{thread_id}", status_code=204)
    async def delete(thread_id: str, user: str = Depends(caller)) -> Response:
        """Delete the thread: its turns and checkpoints."""
        await owned(thread_id, user)
        await delete_thread(app.state.saver, thread_id)
        await log("thread.delete", user, {"thread_id": thread_id})
        return Response(status_code=204)

    return app
