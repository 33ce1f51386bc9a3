"""The chat page (`citewise serve`): Gradio Blocks over the query graph, with threads kept on disk.

Each question runs the query graph, compiled with the thread store's checkpointer, under the thread's id and
streams: each stage appears as it finishes (in a "thought" box of the chat), a model's answer token by token,
then the verified answer with clickable markers, the evidence chart and scores table, and the references.
A marker opens its passage (document, section, the supporting lines highlighted) in the side panel, and the
passage in its document under it: a PDF's page rendered with the supporting lines marked, a text's section
(`citewise.app.web.source`). The finished answer or report downloads as Markdown, DOCX, BibTeX or RIS
(`citewise.app.export`). Threads
live in the store `memory.open_checkpointer` opens, so they survive a reload and a restart; the browser
remembers which one was open.

With a shared store (`Context.store`, `citewise serve --store postgresql://...`) the page answers from it,
and uploads are queued in it and ingested by the page's process as one worker of any (`index.writer`).

Every event is someone's (`citewise.app.access.Gate`): the user who logged in (Gradio's login form, a user
name and API token, beyond loopback), a trusted proxy's user header, or the local user on loopback. The
thread list shows the user's own threads; a thread of another user is never opened or continued (a
question there starts a new thread). Questions and uploads go to the audit log.

Everything runs on the page's own server: no fonts, scripts or analytics from elsewhere.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import secrets
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd
import psycopg
from langchain_core.messages import AIMessageChunk

from citewise.app.access import Gate
from citewise.app.chat import STREAMED_NODES, result_payload, stage_lines
from citewise.app.memory import claim_thread, open_checkpointer, shown_setting, thread_owner, thread_summaries
from citewise.app.terminal import ROUTES, AnswerMode
from citewise.app.web import library as library_tab
from citewise.app.web import outline, render, source
from citewise.app.web.uploads import UploadProgress
from citewise.context import Context
from citewise.core.evidence import is_abstention, threshold_text
from citewise.core.indexes import open_index
from citewise.core.resources import resources_of
from citewise.core.text import message_text
from citewise.index import IndexOpenError
from citewise.index.loaders import SUPPORTED_SUFFIXES
from citewise.index.reading import SearchIndex

logger = logging.getLogger(__name__)


def page_thread_id() -> str:
    """A new thread's id on the page: 128 random bits (no one types it, unlike the terminal's short ids)."""
    return uuid.uuid4().hex


CITE_JS = """
window.citewiseCite = (fragment) => {
  window.citewiseWanted = fragment;
  window.citewiseAsked = {[fragment]: 1};
  trigger('click', {cite: fragment});
  // a click dropped while another is pending shows no new panel: looked at again after a while
  clearTimeout(window.citewiseTimer);
  window.citewiseTimer = setTimeout(window.citewiseRecheck, 1500);
};
window.citewiseRecheck = () => {
  const wanted = window.citewiseWanted;
  const shown = document.querySelector('#cw-passage .cw-passage[data-cite]');
  if (!wanted || (shown && shown.dataset.cite === wanted)) return;
  const asked = window.citewiseAsked[wanted] || 0;
  if (asked >= 3) return;
  window.citewiseAsked[wanted] = asked + 1;
  trigger('click', {cite: wanted});
  window.citewiseTimer = setTimeout(window.citewiseRecheck, 1500);
};
if (!window.citewiseCiteListener) {
  window.citewiseCiteListener = true;
  // the last marker clicked wins: a panel that answers an earlier click (clicks in quick succession can be
  // answered out of order, or the later one dropped while the earlier is pending) asks again, at most twice.
  // Only a panel newly shown counts: the pending click's own loading marks change the panel's box too, and
  // asking again then sent every click two or three times (each rendering a PDF page)
  new MutationObserver(() => {
    const wanted = window.citewiseWanted;
    const shown = document.querySelector('#cw-passage .cw-passage[data-cite]');
    if (!shown || shown === window.citewiseShown) return;
    window.citewiseShown = shown;
    if (!wanted || shown.dataset.cite === wanted) return;
    const asked = window.citewiseAsked[wanted] || 0;
    if (asked >= 3) return;
    window.citewiseAsked[wanted] = asked + 1;
    trigger('click', {cite: wanted});
  }).observe(document.getElementById('cw-passage') || document.body, {childList: true, subtree: true});
  document.addEventListener('click', (event) => {
    const target = event.target instanceof Element ? event.target : null;
    const link = target ? target.closest('a.cw-cite, a[href^="#cite-"]') : null;
    if (!link) return;
    event.preventDefault();
    event.stopPropagation();
    document.querySelectorAll('a.cw-active').forEach((a) => a.classList.remove('cw-active'));
    link.classList.add('cw-active');
    window.citewiseCite(link.getAttribute('href').slice(1));
  }, true);
}
"""
"""One click handler for every marker link of the chat (present and future): it sends `cite-T-N` to Python,
and the panel is checked against the link clicked last."""

DOCUMENT_JS = """
// the page frame scrolls to the first marked line of each page shown (the page keeps its proportions
// before its image is decoded, so the mark's place is known at once)
new MutationObserver(() => {
  const frame = element.querySelector('.cw-page-frame');
  const mark = frame ? frame.querySelector('.cw-mark') : null;
  if (!mark) return;
  const shown = frame.closest('.cw-source').dataset.cite + ' ' + mark.dataset.box;
  if (frame.dataset.shown === shown) return;
  frame.dataset.shown = shown;
  frame.scrollTop = Math.max(0, mark.offsetTop - frame.clientHeight / 3);
}).observe(element, {childList: true, subtree: true});
// a click on the page doubles it in its frame (the marks are in percent: they follow), a second one undoes
// it; the previous / next / cited page buttons send the page they name with the view's marker (turn_page)
element.addEventListener('click', (event) => {
  const turn = event.target instanceof Element ? event.target.closest('.cw-page-nav button') : null;
  if (turn) {
    const view = turn.closest('.cw-source');
    if (!turn.disabled && view) trigger('click', {cite: view.dataset.cite, page: Number(turn.dataset.page)});
    return;
  }
  const frame = event.target instanceof Element ? event.target.closest('.cw-page-frame') : null;
  if (!frame) return;
  const mark = frame.querySelector('.cw-mark');
  frame.classList.toggle('cw-zoom');
  if (mark) {
    frame.scrollTop = Math.max(0, mark.offsetTop - frame.clientHeight / 3);
    frame.scrollLeft = Math.max(0, mark.offsetLeft - 20);
  }
});
"""
"""The document view's script: the cited lines in sight within the page's frame; a click zooms the page; the
page buttons turn it."""

OUTLINE_WAITS = "The planned outline is below: edit it, then Run."
"""The chat's line under a report's question whose outline waits for approval."""

PAGES_KEPT = 200
"""Rendered pages kept for the document view (each a PNG of about 100-400 KB)."""

EXPORTS = (("md", "Markdown"), ("docx", "Word"), ("bib", "BibTeX"), ("ris", "RIS"))
"""The download buttons: each export format (`citewise.app.export`) and its button's label."""

CSS = """
.cw-cite { font-weight: 600; text-decoration: none; padding: 0 1px; border-radius: 3px; cursor: pointer; }
.cw-cite:hover, .cw-cite.cw-active { background: #fde68a; }
.cw-passage { padding: 10px 12px; border: 1px solid #e5e7eb; border-radius: 8px; background: #fafafa; }
.cw-passage-head { margin-bottom: 6px; }
.cw-section { color: #555; }
.cw-passage-text { line-height: 1.5; margin: 0 0 6px 0; }
mark.cw-support { background: #fde68a; padding: 0 2px; }
.cw-table { border-collapse: collapse; margin: 0 0 6px 0; font-size: 0.92em; }
.cw-table caption { text-align: left; margin-bottom: 4px; }
.cw-table th, .cw-table td { border: 1px solid #e5e7eb; padding: 2px 6px; }
.cw-table tr.cw-support td { background: #fde68a; }
.cw-passage-meta, .cw-note, .cw-file { color: #666; font-size: 0.85em; }
.cw-empty { color: #777; font-style: italic; padding: 8px; }
.cw-refs h4 { margin: 6px 0 4px 0; }
.cw-refs ol, .cw-refs ul { margin: 0 0 6px 18px; padding: 0; }
.cw-secondary li { font-size: 0.9em; }
.cw-chart { border: 1px solid #e5e7eb; border-radius: 8px; padding: 4px; background: white;
  max-width: 760px; }
#cw-table th, #cw-table th *, #cw-table td:not(:last-child), #cw-table td:not(:last-child) * {
  white-space: nowrap; word-break: keep-all; overflow-wrap: normal; }
#cw-table td:last-child, #cw-table td:last-child * { white-space: normal; min-width: 24em; }
#cw-threads input { padding-right: 2.2em; text-overflow: ellipsis; }
.cw-open-doc { font-size: 0.85em; }
.cw-source { border: 1px solid #e5e7eb; border-radius: 8px; background: #fafafa; padding: 8px 10px; }
.cw-source-head { color: #555; font-size: 0.85em; margin-bottom: 6px; }
.cw-source-note { color: #8a4b00; font-size: 0.9em; }
.cw-page-frame { max-height: 720px; overflow: auto; border: 1px solid #e5e7eb; background: white; }
.cw-page { position: relative; line-height: 0; cursor: zoom-in; }
.cw-page-frame.cw-zoom .cw-page { width: 200%; cursor: zoom-out; }
.cw-page-image { width: 100%; height: auto; display: block; }
.cw-mark { position: absolute; background: rgba(250, 204, 21, 0.38); mix-blend-mode: multiply;
  outline: 1px solid rgba(202, 138, 4, 0.55); border-radius: 2px; pointer-events: none; }
.cw-section-text p { margin: 0 0 6px 0; line-height: 1.45; }
.cw-page-nav { display: flex; gap: 6px; margin: 0 0 6px 0; }
.cw-page-nav button { font-size: 0.85em; padding: 2px 8px; border: 1px solid #d1d5db; border-radius: 6px;
  background: white; cursor: pointer; }
.cw-page-nav button:disabled { color: #aaa; cursor: default; }
.cw-section-text p:not(.cw-cited-paragraph) { color: #666; }
"""

THEME_FONTS = {
    "font": ["ui-sans-serif", "system-ui", "Segoe UI", "Roboto", "sans-serif"],
    "font_mono": ["ui-monospace", "SFMono-Regular", "Menlo", "monospace"],
}
"""System fonts: gradio's default theme would fetch its fonts from Google."""

MODES = [mode.value for mode in AnswerMode] + [outline.APPROVE_MODE]
MODE_HINTS = {
    "auto": "auto: a direct answer or a report, decided per question",
    "answer": "answer: a short cited answer",
    "report": "report: a cited report in sections, planned from your documents",
    outline.APPROVE_MODE: outline.APPROVE_HINT,
}
"""The hint under "Answer as", for the choice made."""
PROGRESS_EVERY = 0.25
"""Seconds between looks at an upload's progress."""


@dataclasses.dataclass
class Turn:
    """One question and what the run gave back, as the page shows it again (also for a restored thread)."""

    question: str
    """The question as it was typed."""
    payload: dict[str, Any]
    """What `ask --json` would print (plus `error`)."""
    passages: dict[int, dict[str, Any]]
    """Per marker, its passage (see render.passages)."""
    stages: list[str]
    """The stage lines shown while it ran."""
    seconds: float = 0.0
    """How long it took (0 when restored)."""


def stage_title(payload: dict[str, Any], seconds: float = 0.0) -> str:
    """The title of a finished turn's stage box: mode, route and time."""
    mode = "local mode" if payload.get("mode") == "local" else "LLM mode"
    route = "report" if payload.get("route") == "report" else "direct answer"
    took = f", {seconds:.1f}s" if seconds else ""
    if payload.get("error"):
        return f"Stages (stopped: {payload['error'].get('kind', 'error')}{took})"
    return f"Stages ({mode}, {route}{took})"


def summary_lines(payload: dict[str, Any]) -> list[str]:
    """Stage lines for a restored turn, from its stored result (its live lines were not kept)."""
    evidence = payload.get("evidence") or []
    kept = sum(1 for r in evidence if r.get("kept"))
    cut = threshold_text(evidence, payload.get("threshold"))
    lines = [f"evidence: {len(evidence)} candidates, {kept} kept ({cut})"]
    if payload.get("route"):
        lines.append(f"route: {payload['route']} ({payload.get('route_reason', '')})")
    return lines


def error_text(payload: dict[str, Any]) -> str:
    """The assistant's reply for a run that could not answer: what happened and what to do."""
    problem = payload["error"]
    text = payload.get("answer") or f"citewise could not answer this: {problem.get('message', '')}"
    if problem.get("hint") and problem["hint"] not in text:
        text += f"\n\n{problem['hint']}"
    if problem.get("kind") == "no index":
        text += "\n\nOn this page: add documents with the upload box on the right, then ask again."
    return text


def turn_messages(turn: Turn, number: int) -> list[dict[str, Any]]:
    """The chat messages of one turn: the question, the stage box, the answer with its marker links."""
    payload = turn.payload
    if payload.get("error"):
        answer = render.escape_markdown(error_text(payload))
    else:
        answer = render.answer_markdown(payload.get("answer", ""), payload.get("citations", []), number)
    return [
        {"role": "user", "content": render.escape_markdown(turn.question)},
        {
            "role": "assistant",
            "content": render.stages_markdown(turn.stages),
            "metadata": {"title": stage_title(payload, turn.seconds), "status": "done"},
        },
        {"role": "assistant", "content": answer},
    ]


def evidence_views(turn: Turn | None) -> tuple[str, pd.DataFrame, str]:
    """The chart, the scores table and the references of a turn (empty ones when there is none)."""
    if turn is None or turn.payload.get("error"):
        empty = pd.DataFrame(columns=render.TABLE_COLUMNS)
        return render.chart_svg([], None), empty, render.references_html({})
    payload = turn.payload
    evidence, citations = payload.get("evidence", []), payload.get("citations", [])
    chart = render.chart_svg(render.chart_rows(evidence, citations), payload.get("threshold"))
    table = pd.DataFrame(
        render.score_table(evidence, citations, payload.get("threshold")), columns=render.TABLE_COLUMNS
    )
    abstained = is_abstention(payload.get("answer") or "")
    return chart, table, render.references_html(payload.get("references") or {}, abstained=abstained)


class ChatPage:
    """The page's server side: the compiled graph with its thread store, and the event handlers."""

    def __init__(
        self,
        context: Context,
        threads: str | None = None,
        uploads: Path | None = None,
        gate: Gate | None = None,
    ) -> None:
        """Serve `context`'s index; keep threads in `threads` (see memory); store uploads in `uploads`.

        `gate` says who each event is (none: the local user, as on loopback).
        """
        self.context = context
        self.gate = gate or Gate(store=None)
        self.threads = threads
        self.uploads = uploads or Path(context.index_dir).expanduser().parent / "uploads"
        self._graph: Any = None
        self._saver: Any = None
        self._stack = AsyncExitStack()
        self._lock: asyncio.Lock | None = None
        # the download buttons' files and the rendered pages the document view shows, removed at close
        self._files = tempfile.TemporaryDirectory(prefix="citewise-page-")
        self.pages_dir = Path(self._files.name) / "pages"
        self.pages_dir.mkdir()

    async def graph(self) -> Any:
        """The query graph compiled with the thread store (opened on the server's event loop, once)."""
        if self._graph is None:
            self._lock = self._lock or asyncio.Lock()
            async with self._lock:
                if self._graph is None:
                    from citewise.graph.query import builder

                    self._saver = await self._stack.enter_async_context(open_checkpointer(self.threads))
                    self._graph = builder.compile(checkpointer=self._saver, name="citewise")
        return self._graph

    async def close(self) -> None:
        """Close the thread store; remove the exported files and rendered pages."""
        await self._stack.aclose()
        self._files.cleanup()

    # who is asking ---------------------------------------------------------------------------------------
    async def user_of(self, request: gr.Request | None) -> str | None:
        """The user of an event (None: nobody may do anything), looked up afresh at every event.

        A revoked token's login ends at its next event.
        """
        if request is None:  # called directly (tests, scripts): the local user, where there is one
            return None if self.gate.login_required else self.gate.local_user
        client = request.client.host if request.client else None
        logged_in = getattr(request, "username", None)
        return await asyncio.to_thread(self.gate.user_of_session, logged_in, client, request.headers)

    def readable_by(self, user: str) -> tuple[str, ...] | None:
        """The collections `user`'s questions may read, read afresh (None: every one, the local user's)."""
        if user == self.gate.local_user:
            return None
        return () if self.gate.store is None else self.gate.store.collections_of(user)

    def upload_collection(self, user: str) -> str | None:
        """Where `user`'s uploads go: the first collection (by name) they may write; None for the local user.

        Raises:
            ValueError: they may write none.
        """
        if user == self.gate.local_user:
            return None
        writable = () if self.gate.store is None else self.gate.store.collections_of(user, "write")
        if not writable:
            raise ValueError(
                f"{user} may not add documents: an administrator grants it with "
                f"`citewise users grant {user} --write COLLECTION`"
            )
        return writable[0]

    def audit(self, action: str, user: str, detail: dict[str, Any]) -> None:
        """Append to the audit log (when the page has one); a failure to write it is logged, not shown."""
        if self.gate.store is None:
            return
        try:
            self.gate.store.record(action, user, detail)
        except (ValueError, OSError, psycopg.Error) as error:
            logger.warning("not written to the audit log: %s", error)

    # threads ----------------------------------------------------------------------------------------------
    async def thread_choices(self, user: str | None = None) -> list[tuple[str, str]]:
        """The user's threads for the picker: (first question, turns, last update) -> id, newest first."""
        await self.graph()
        summaries = await thread_summaries(self._saver, owner=user or self.gate.local_user)
        return [(thread_label(s.title, s.turns, s.updated, s.thread_id), s.thread_id) for s in summaries]

    async def thread_turns(self, thread_id: str) -> list[Turn]:
        """Every answered turn of a stored thread, oldest first (from its checkpoints' history)."""
        graph = await self.graph()
        config = {"configurable": {"thread_id": thread_id}}
        ends = [s async for s in graph.aget_state_history(config) if not s.next and s.values.get("messages")]
        turns, seen = [], set()
        for snapshot in reversed(ends):
            messages = snapshot.values["messages"]
            last = messages[-1]
            if last.type != "ai" or last.id in seen:
                continue
            seen.add(last.id)
            asked = [m for m in messages if m.type == "human"]
            question = message_text(asked[-1]) if asked else snapshot.values.get("question", "")
            payload = result_payload(snapshot.values)
            turns.append(Turn(question, payload, render.passages(snapshot.values), summary_lines(payload)))
        return turns

    # events -----------------------------------------------------------------------------------------------
    async def load(self, remembered: str | None, request: gr.Request | None = None) -> tuple[Any, ...]:
        """On page load: list the threads and reopen the one this browser had open, if it is stored.

        The question box and the Ask button start disabled and are enabled here, last: a question asked while
        a thread was being restored would go to another thread and then be overwritten by the restored one.
        A report of the thread whose outline waits for approval waits again (`_open_thread`).

        Returns (chat, session, thread list, remembered thread, chart, table, references, question box, Ask,
        New thread).
        """
        skip = gr.skip()
        ready = gr.Textbox(interactive=True), gr.Button(interactive=True), skip
        user = await self.user_of(request)
        if user is None:
            message = {"role": "assistant", "content": "citewise: log in to use this page (reload it)."}
            return [message], fresh_session(), gr.Dropdown(choices=[]), *(skip,) * 7
        try:
            choices = await self.thread_choices(user)
        except ValueError as error:  # the thread store cannot be opened: say so in the chat
            message = {"role": "assistant", "content": render.escape_markdown(f"citewise: {error}")}
            session = fresh_session()
            return [message], session, gr.Dropdown(choices=[]), skip, skip, skip, skip, *ready
        thread_id = remembered if remembered in {c[1] for c in choices} else None
        if thread_id is None:  # a new thread: nothing to show
            return skip, skip, gr.Dropdown(choices=choices, value=None), skip, skip, skip, skip, *ready
        history, session, threads, chart, table, references, *controls = await self._open_thread(
            thread_id, choices
        )
        return history, session, threads, thread_id, chart, table, references, *controls

    async def _open_thread(self, thread_id: str, choices: list[tuple[str, str]]) -> tuple[Any, ...]:
        """A stored thread as a load or a pick in the thread list opens it, its waiting outline too.

        Returns (chat, session, thread list, chart, table, references, question box, Ask, New thread). A
        report whose outline waits for approval (the graph's interrupt, kept by the thread store) waits
        again: the session keeps it (`pending`) for the outline editor, and the question box, Ask, New
        thread and the thread list are held until it runs, as after the turn that stopped there.
        """
        turns = await self.thread_turns(thread_id)
        history = [message for n, turn in enumerate(turns) for message in turn_messages(turn, n)]
        session = {"thread": thread_id, "turns": turns, "shown": len(turns) - 1}  # the last turn's evidence
        views = evidence_views(turns[-1] if turns else None)
        pending = await self.waiting_outline(thread_id)
        if pending is None:
            ready = gr.Textbox(interactive=True), gr.Button(interactive=True), gr.Button(interactive=True)
            threads = gr.Dropdown(choices=choices, value=thread_id, interactive=True)
            return history, session, threads, *views, *ready
        # the chat as the turn left it: its question, then the editor's prompt
        session["pending"] = pending | {"at": len(history)}
        history += [
            {"role": "user", "content": render.escape_markdown(pending["question"])},
            {"role": "assistant", "content": OUTLINE_WAITS},
        ]
        held = gr.Textbox(interactive=False), gr.Button(interactive=False), gr.Button(interactive=False)
        threads = gr.Dropdown(choices=choices, value=thread_id, interactive=False)
        return history, session, threads, *views, *held

    async def waiting_outline(self, thread_id: str) -> dict[str, Any] | None:
        """The report outline a stored thread waits at (its interrupt's id, outline, question), else None."""
        graph = await self.graph()
        snapshot = await graph.aget_state({"configurable": {"thread_id": thread_id}})
        pending = outline.waiting(snapshot)
        if pending is None:
            return None
        asked = [m for m in snapshot.values.get("messages", []) if m.type == "human"]
        return pending | {"question": message_text(asked[-1]) if asked else pending["question"]}

    async def switch(
        self, thread_id: str | None, session: dict[str, Any] | None, request: gr.Request | None = None
    ) -> tuple[Any, ...]:
        """Open a stored thread picked in the list: its conversation, last evidence and references.

        As a load opens it (`_open_thread`): a report whose outline waits is in the editor again, and the
        question box, Ask, New thread and the thread list are held until it runs.

        Returns (chat, session, chart, table, references, passage, remembered thread, document view, thread
        list, question box, Ask, New thread).
        """
        if not thread_id or thread_id == (session or {}).get("thread"):  # nothing new to open
            return (gr.skip(),) * 12
        user = await self.user_of(request)
        await self.graph()
        if user is None or await thread_owner(self._saver, thread_id) != user:  # not theirs: as if absent
            return (gr.skip(),) * 12
        choices = await self.thread_choices(user)
        history, session, threads, chart, table, references, *controls = await self._open_thread(
            thread_id, choices
        )
        passage, document = render.passage_html(None), source.empty_html()
        return history, session, chart, table, references, passage, thread_id, document, threads, *controls

    def new(self) -> tuple[Any, ...]:
        """Start a new thread: an empty chat and panels."""
        session = fresh_session()
        chart, table, references = evidence_views(None)
        passage, document = render.passage_html(None), source.empty_html()
        threads = gr.Dropdown(value=None)
        return [], session, chart, table, references, passage, threads, session["thread"], document

    async def show_passage(
        self, session: dict[str, Any] | None, event: gr.EventData, request: gr.Request | None = None
    ) -> tuple[Any, ...]:
        """A marker was clicked: its passage, the passage in its document, the turn's evidence and references.

        The click names a turn and a marker of this session (`cite-T-N`), nothing else: the passage's
        document and paragraph come from the turn's own evidence.
        """
        data = event._data if isinstance(event._data, dict) else {}
        found = render.parse_cite(str(data.get("cite", "")))
        turns: list[Turn] = (session or {}).get("turns", [])
        if found is None or not 0 <= found[0] < len(turns):
            return (gr.skip(),) * 5
        turn = turns[found[0]]
        fragment = render.cite_fragment(*found)
        passage = turn.passages.get(found[1])
        document = await self.source_view(passage, fragment, request)
        if session is not None and session.get("shown") == found[0]:  # that turn's evidence is shown already
            return render.passage_html(passage, fragment), document, gr.skip(), gr.skip(), gr.skip()
        if session is not None:
            session["shown"] = found[0]  # the session's own dict: the next event sees it
        return (render.passage_html(passage, fragment), document, *evidence_views(turn))

    async def turn_page(
        self, session: dict[str, Any] | None, event: gr.EventData, request: gr.Request | None = None
    ) -> Any:
        """A page button of the document view: another page of the passage's document, its cited lines marked.

        As a marker's click, it names a turn and marker of this session (`cite-T-N`) and a page number,
        nothing else: the document is the one that turn's evidence names, read as the user may read it.
        """
        data = event._data if isinstance(event._data, dict) else {}
        found = render.parse_cite(str(data.get("cite", "")))
        page = data.get("page")
        turns: list[Turn] = (session or {}).get("turns", [])
        if found is None or not 0 <= found[0] < len(turns) or isinstance(page, bool):
            return gr.skip()  # not a page button's click (a click on the page zooms it, in the browser)
        if not isinstance(page, int) or page < 0:
            return source.empty_html(f"No such page: {str(page)[:20]!r}.", render.cite_fragment(*found))
        passage = turns[found[0]].passages.get(found[1])
        return await self.source_view(passage, render.cite_fragment(*found), request, page)

    async def source_view(
        self,
        passage: dict[str, Any] | None,
        cite: str,
        request: gr.Request | None = None,
        page: int | None = None,
    ) -> str:
        """The passage in its document (`citewise.app.web.source`), read as the asking user may read it.

        `page`: another page of its PDF (None: the cited one, marked).
        """
        user = await self.user_of(request)
        if passage is None or user is None:
            return source.empty_html(cite=cite)
        collections = await asyncio.to_thread(self.readable_by, user)
        try:
            index = await resources_of(self.context).index(self.context)
        except (IndexOpenError, ValueError, OSError, psycopg.Error) as error:
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            return source.empty_html(f"The index cannot be read: {first}", cite)
        return await asyncio.to_thread(
            source.source_html, index, passage, collections, cite, self.publish_page, page
        )

    def publish_page(self, png: bytes) -> str:
        """Keep a rendered page where the page's server serves it (`serve`'s allowed path); its URL.

        The name is random (not to be guessed by anyone but the asker, whose view names it); the newest
        PAGES_KEPT pages are kept.
        """
        path = self.pages_dir / f"{secrets.token_urlsafe(24)}.png"
        path.write_bytes(png)
        kept = sorted(self.pages_dir.glob("*.png"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in kept[PAGES_KEPT:]:
            old.unlink(missing_ok=True)
        return f"gradio_api/file={path}"  # relative: behind a proxy's path prefix too

    async def exports(
        self, session: dict[str, Any] | None, request: gr.Request | None = None
    ) -> tuple[Any, ...]:
        """The download buttons, for the thread's last answer or report (off before one, or for another's).

        The files are made here from the turn's stored reply (`citewise.app.export`), in a folder of this
        page's, for the user whose thread it is.
        """
        from citewise.app import export  # imports the graph's report module: not before the page is up

        off = tuple(gr.DownloadButton(value=None, interactive=False) for _ in EXPORTS)
        user = await self.user_of(request)
        turns: list[Turn] = (session or {}).get("turns") or []
        last = turns[-1] if turns else None
        if user is None or last is None or last.payload.get("error") or not last.payload.get("answer"):
            return off
        try:
            await self.graph()
            if await thread_owner(self._saver, session["thread"]) != user:  # type: ignore[index]
                return off
        except ValueError:  # the thread store cannot be opened: no thread is anyone's
            return off
        folder = Path(tempfile.mkdtemp(prefix="export-", dir=self._files.name))
        name = f"citewise-{str(session['thread'])[:8]}-{len(turns)}"  # type: ignore[index]
        buttons = []
        for fmt, _ in EXPORTS:
            path = folder / f"{name}.{fmt}"
            path.write_bytes(await asyncio.to_thread(export.render, last.payload, fmt))
            buttons.append(gr.DownloadButton(value=str(path), interactive=True))
        return tuple(buttons)

    TURN_OUTPUTS = 12
    """What `ask` and `turn` yield: (chat, session, question box, chart, table, references, passage, thread
    list, remembered thread, Ask, New thread, document view)."""

    async def ask(
        self,
        question: str,
        mode: str,
        history: list[dict[str, Any]] | None,
        session: dict[str, Any] | None,
        request: gr.Request | None = None,
    ) -> Any:
        """Run one question in the session's thread, streaming the stages and the answer to the chat.

        Yields (chat, session, question box, chart, table, references, passage, thread list, remembered
        thread, Ask, New thread, document view); outputs that do not change are skipped. While the turn
        runs, the question box, Ask, New thread and the thread list are disabled: a second question or
        another thread opened meanwhile would be written over by this turn's stream.
        """
        async for out in self.turn(question, mode, history, session, request):
            yield out

    async def turn(
        self,
        question: str,
        mode: str,
        history: list[dict[str, Any]] | None,
        session: dict[str, Any] | None,
        request: gr.Request | None = None,
        command: Any = None,
    ) -> Any:
        """A turn as `ask` runs it; `command` resumes the thread's waiting outline instead (web.outline).

        A report asked "outline first" ends waiting at its outline: the session keeps what waits
        (`pending`) and the question box, Ask, New thread and the thread list stay disabled until it runs.
        """
        question = (question or "").strip()
        user = await self.user_of(request)
        if not question or user is None:
            yield (gr.skip(),) * 12
            return
        session = dict(session or {})
        if command is None:  # a question, not a resumed outline: no outline waits any more
            session.pop("pending", None)
        session["thread"] = session.get("thread") or page_thread_id()
        try:
            await self.graph()
            if await claim_thread(self._saver, session["thread"], user) != user:  # another's id: a new thread
                session = {"thread": page_thread_id(), "turns": []}
                await claim_thread(self._saver, session["thread"], user)
        except ValueError:
            pass  # the thread store cannot be opened: the turn below says so
        turns: list[Turn] = list(session.get("turns") or [])
        history = list(history or [])
        history.append({"role": "user", "content": render.escape_markdown(question)})
        box: dict[str, Any] = {"role": "assistant", "content": "", "metadata": {"title": "Starting…"}}
        box["metadata"]["status"] = "pending"
        history.append(box)
        skip = gr.skip()
        busy = (
            gr.Dropdown(interactive=False),
            skip,
            gr.Button(interactive=False),
            gr.Button(interactive=False),
        )
        yield history, skip, gr.Textbox(value="", interactive=False), skip, skip, skip, skip, *busy, skip
        lines: list[str] = []
        streamed: dict[str, Any] | None = None
        started = time.perf_counter()
        collections = await asyncio.to_thread(self.readable_by, user)
        mode, approve = outline.answer_mode(mode)
        context = dataclasses.replace(
            self.context,
            route=ROUTES[AnswerMode(mode or "auto")],
            collections=collections,
            approve_outline=approve,
        )
        config = {"configurable": {"thread_id": session["thread"]}}
        try:
            graph = await self.graph()
            async for part in graph.astream(
                command if command is not None else {"messages": [("user", question)]},
                config,
                context=context,
                stream_mode=["updates", "messages"],
                version="v2",
                subgraphs=True,
                durability="sync",  # a thread holds every stage that finished, as in terminal chat
            ):
                changed, streamed = self._follow(part, lines, box, history, streamed)
                if changed:
                    yield (history, *(skip,) * 11)
            snapshot = await graph.aget_state(config)
            waiting = outline.waiting(snapshot)
            if waiting is not None:  # a report's outline waits for approval: the editor shows it
                session["pending"] = waiting | {"question": question, "at": len(history) - 2}
                box["metadata"] |= {"title": "Stages (the outline waits for your approval)", "status": "done"}
                box["content"] = render.stages_markdown(lines)
                history.append({"role": "assistant", "content": OUTLINE_WAITS})
                try:  # the thread listed (held, as the question box is, until the outline runs)
                    choices = await self.thread_choices(user)
                    listed = gr.Dropdown(choices=choices, value=session["thread"], interactive=False)
                except ValueError:
                    listed = skip
                yield (history, session, *(skip,) * 5, listed, session["thread"], *(skip,) * 3)
                return
            values = snapshot.values
            payload = result_payload(values)
            cited = {
                c["doc_id"]: {"doc_id": c["doc_id"], "key": c["key"], "title": c["title"]}
                for c in payload["citations"]
            }
            detail = {"thread_id": session["thread"], "question": payload["question"], "via": "page"}
            await asyncio.to_thread(self.audit, "ask", user, detail | {"cited": list(cited.values())})
        except (ValueError, IndexOpenError, OSError) as error:
            payload = self._failure(question, error, "setting")
            values = {}
        except Exception as error:
            logger.exception("turn failed")
            payload = self._failure(question, error, "unexpected")
            values = {}
        seconds = time.perf_counter() - started
        turn = Turn(question, payload, render.passages(values), lines, seconds)
        turns.append(turn)
        session["turns"] = turns
        session["shown"] = len(turns) - 1  # whose evidence the chart and table show
        draft = streamed["message"] if streamed else None  # the stage box and a streamed draft give way
        history = [m for m in history if m is not box and m is not draft]
        history.extend(turn_messages(turn, len(turns) - 1)[1:])
        chart, table, references = evidence_views(turn)
        try:
            choices = await self.thread_choices(user)
            threads = gr.Dropdown(choices=choices, value=session["thread"], interactive=True)
        except ValueError:
            threads = gr.Dropdown(interactive=True)
        yield (
            history,
            session,
            gr.Textbox(interactive=True),
            chart,
            table,
            references,
            render.passage_html(None),
            threads,
            session["thread"],
            gr.Button(interactive=True),
            gr.Button(interactive=True),
            source.empty_html(),
        )

    def _failure(self, question: str, error: BaseException, kind: str) -> dict[str, Any]:
        """The payload of a turn that raised before the graph could say why itself."""
        if kind == "setting":
            hint = "Check the settings `citewise serve` was started with (index, thread store, model)."
        else:
            hint = "The server's log has the traceback; ask again, or restart `citewise serve`."
        message = f"{type(error).__name__}: {error}"
        return {
            "question": question,
            "answer": f"citewise could not answer this ({kind}): {message}",
            "mode": "llm" if self.context.llm else "local",
            "error": {"stage": "", "kind": kind, "message": message, "hint": hint},
        }

    def _follow(
        self,
        part: dict[str, Any],
        lines: list[str],
        box: dict[str, Any],
        history: list[dict[str, Any]],
        streamed: dict[str, Any] | None,
    ) -> tuple[bool, dict[str, Any] | None]:
        """Apply one stream part to the chat: stage lines in the box, a model's tokens in a draft message."""
        namespace = part.get("ns") or ()
        if part["type"] == "updates":
            for node, update in part["data"].items():
                inner = [n.split(":")[0] for n in namespace]
                box["metadata"]["title"] = f"Working: {' › '.join([*inner, node])}…"
                if not namespace:
                    lines.extend(stage_lines(node, update))
                elif node == "threshold" and isinstance(update, dict) and "section" not in inner:
                    evidence = update.get("evidence") or []
                    kept = sum(1 for r in evidence if r.get("kept"))
                    cut = update.get("threshold")
                    shown = f"{cut:g}" if isinstance(cut, int | float) else "none"
                    lines.append(f"scored {len(evidence)} candidates: threshold {shown}, {kept} kept")
                elif node == "rewrite" and isinstance(update, dict) and update.get("queries"):
                    lines.append("corrective pass: " + " | ".join(update["queries"]))
            box["content"] = render.stages_markdown(lines)
            return True, streamed
        chunk, metadata = part["data"]
        if namespace or not isinstance(chunk, AIMessageChunk):
            return False, streamed
        if metadata.get("langgraph_node") not in STREAMED_NODES:
            return False, streamed
        text = message_text(chunk)
        if not text:
            return False, streamed
        box["metadata"]["title"] = f"Working: {metadata['langgraph_node']}…"  # what is being written
        if streamed is None or streamed.get("id") != chunk.id:  # a new draft (a report's redraft)
            if streamed is not None:
                history.remove(streamed["message"])
            streamed = {"id": chunk.id, "text": "", "message": {"role": "assistant", "content": ""}}
            history.append(streamed["message"])
        streamed["text"] += text
        streamed["message"]["content"] = render.escape_markdown(streamed["text"])
        return True, streamed

    async def ingest(self, files: list[str] | None, request: gr.Request | None = None) -> AsyncIterator[str]:
        """Copy uploaded files beside the index and ingest them; the progress as it goes, then the report.

        The progress is this output's own text ("3 of 40 file(s) done, 12 chunks stored, 480 texts embedded"),
        written while a worker thread ingests: with gr.Progress the page showed only "processing" and a timer
        over the output, for the whole of a two-minute upload. The report lists skipped files with their
        reasons.
        """
        user = await self.user_of(request)
        if not files or user is None:
            yield ""
            return
        try:
            collection = await asyncio.to_thread(self.upload_collection, user)
        except ValueError as error:
            yield render.escape_markdown(f"Nothing was ingested: {error}")
            return
        self.uploads.mkdir(parents=True, exist_ok=True)
        paths = []
        for file in files:
            source = Path(file)
            target = self.uploads / source.name
            shutil.copyfile(source, target)
            paths.append(target)
        state = UploadProgress(paths)  # in all and per file (web.uploads)
        started = time.perf_counter()
        work = asyncio.ensure_future(asyncio.to_thread(self._ingest, paths, state, collection))
        shown = None
        while not work.done():
            text = state.markdown(time.perf_counter() - started)
            if text != shown:
                shown = text
                yield text
            await asyncio.wait({work}, timeout=PROGRESS_EVERY)
        try:
            report, stats = work.result()
        except (IndexOpenError, ValueError, OSError, psycopg.Error) as error:
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            yield render.escape_markdown(f"Nothing was ingested: {first}")
            return
        detail = {
            "paths": [str(path) for path in paths],
            "via": "page",
            "documents_added": report.documents_added,
        }
        if collection is not None:
            detail["collection"] = collection
        await asyncio.to_thread(self.audit, "ingest", user, detail)
        if not self.context.store:  # a shared store's next search sees the commits as it is
            resources_of(self.context).forget_index(self.context)  # the next question opens it afresh
        holder = "shared store" if self.context.store else "index"
        totals = stats if collection is None else None  # a user's upload: not the whole index's counts
        yield render.ingest_summary(report, totals, holder)

    def _ingest(
        self, paths: list[Path], state: UploadProgress, collection: str | None = None
    ) -> tuple[Any, Any]:
        """Ingest `paths` into `collection` (in a worker thread), counting what is done into `state`."""
        # the shared store when the page answers from one (queued there, worked here as one worker of any);
        # the model the questions embed with, loaded once
        with resources_of(self.context).writer(self.context) as index, state.watching():
            report = index.ingest(paths, progress=state.bar, collection=collection)
            return report, index.stats()


def thread_label(title: str, turns: int, updated: str, thread_id: str) -> str:
    """A thread as the picker lists it: last update, first question (cut short), turns.

    The date comes first: a long label is cut at its end in the side column. The start of the thread's id
    comes last, so two threads that began with the same question still look different.
    """
    short = title if len(title) <= 48 else title[:47].rstrip() + "…"
    when = updated[:16].replace("T", " ")
    return f"{when} · {short} · {turns} turn{'s' if turns != 1 else ''} · #{thread_id[:6]}"


def fresh_session() -> dict[str, Any]:
    """A browser session's start: a new thread, no turns."""
    return {"thread": page_thread_id(), "turns": []}


def build_page(
    context: Context, threads: str | None = None, uploads: Path | None = None, gate: Gate | None = None
) -> gr.Blocks:
    """The chat page over the index `context` names, threads kept in `threads` (see citewise.app.memory)."""
    page = ChatPage(context, threads, uploads, gate)
    llm = f"LLM mode: {context.model}" if context.llm else "local mode (no model configured)"
    with gr.Blocks(title="citewise", analytics_enabled=False, fill_width=True) as blocks:
        blocks.citewise = page  # tests and serve reach the handlers through it
        session = gr.State(None)  # set by the first question, a restored thread or New thread
        remembered = gr.BrowserState("", storage_key="citewise-thread")
        where = (
            f"shared store `{render.escape(shown_setting(context.store))}`"
            if context.store
            else (f"index `{render.escape(context.index_dir)}`")
        )
        gr.Markdown(
            f"## citewise\nCited answers from your documents · {render.escape_markdown(llm)} · {where} · "
            f"threads in `{render.escape(shown_setting(threads))}`",
            elem_id="cw-header",
        )
        # two tabs: the chat with its evidence, and the Library (web.library) of what the index holds
        with gr.Tabs(elem_id="cw-tabs", selected="chat"):
            with gr.Tab("Chat", id="chat", elem_id="cw-chat-tab", render_children=True):
                with gr.Row(equal_height=False):
                    with gr.Column(scale=3):
                        chat = gr.Chatbot(
                            label="Conversation",
                            elem_id="cw-chat",
                            height=520,
                            latex_delimiters=[],
                            feedback_options=None,
                            buttons=["copy"],
                            placeholder=(
                                "Ask a question about your documents. Citations like [1] open their passage."
                            ),
                        )
                        with gr.Row():
                            question = gr.Textbox(
                                show_label=False,
                                placeholder="Your question (Enter to ask)",
                                elem_id="cw-question",
                                scale=5,
                                lines=1,
                                max_lines=4,
                                submit_btn=False,
                                interactive=False,  # until `load` has restored this browser's thread
                            )
                            ask = gr.Button(
                                "Ask",
                                variant="primary",
                                elem_id="cw-ask",
                                scale=1,
                                min_width=80,
                                interactive=False,
                            )
                        with gr.Row():
                            mode = gr.Radio(
                                MODES,
                                value="auto",
                                label="Answer as",
                                elem_id="cw-mode",
                                info=MODE_HINTS["auto"],
                            )
                        with gr.Row(elem_id="cw-downloads"):
                            gr.Markdown("**Download**", elem_id="cw-downloads-label")
                            downloads = [
                                gr.DownloadButton(
                                    label,
                                    elem_id=f"cw-download-{fmt}",
                                    size="sm",
                                    interactive=False,
                                    min_width=80,
                                )
                                for fmt, label in EXPORTS
                            ]
                        # a report's outline waiting for approval (web.outline)
                        desk = outline.OutlineDesk(page)
                        desk.build()
                    with gr.Column(scale=2):
                        thread_list = gr.Dropdown(
                            choices=[], label="Threads", elem_id="cw-threads", interactive=True
                        )
                        new = gr.Button("New thread", elem_id="cw-new", size="sm")
                        gr.Markdown("**Cited passage**")
                        passage = gr.HTML(render.passage_html(None), elem_id="cw-passage", js_on_load=CITE_JS)
                        gr.Markdown("**In the document**")
                        document = gr.HTML(source.empty_html(), elem_id="cw-document", js_on_load=DOCUMENT_JS)
                        references = gr.HTML(render.references_html({}), elem_id="cw-references")
                        gr.Markdown("**Add documents** (" + " ".join(SUPPORTED_SUFFIXES) + ")")
                        upload = gr.File(
                            label="Add documents",
                            show_label=False,
                            file_count="multiple",
                            file_types=list(SUPPORTED_SUFFIXES),
                            elem_id="cw-upload",
                            height=120,
                        )
                        ingested = gr.Markdown(elem_id="cw-ingest")
                gr.Markdown("### Evidence: every candidate's final score, the threshold, kept and dropped")
                # the chart above the table, each the page's width: beside the chart, the table's source
                # column (the one to read) was left a few characters
                chart = gr.HTML(render.chart_svg([], None), elem_id="cw-chart")
                table = gr.Dataframe(
                    value=pd.DataFrame(columns=render.TABLE_COLUMNS),
                    elem_id="cw-table",
                    interactive=False,
                    wrap=True,
                    max_height=320,
                    column_widths=[f"{px}px" for px in (40, 60, 80, 64, 100, 104, 80, 72, 96, 600)],
                )

            library = library_tab.build_library(page, blocks, ingested)

        outputs = [
            chat,
            session,
            question,
            chart,
            table,
            references,
            passage,
            thread_list,
            remembered,
            ask,
            new,
            document,
        ]
        mode.change(lambda chosen: gr.Radio(info=MODE_HINTS.get(chosen, "")), mode, mode)
        # the download buttons follow the thread's last turn: after a question, a switch, a load, a new thread
        asked = question.submit(page.ask, [question, mode, chat, session], outputs)
        clicked = ask.click(page.ask, [question, mode, chat, session], outputs)
        for turn in (asked, clicked):
            turn.then(page.exports, session, downloads)
        # every click is sent: Gradio's default trigger mode ('once') drops a click while the last is pending,
        # and 'always_last' replays the pending click's data, not the new one (CITE_JS re-asks if need be)
        passage.click(
            page.show_passage,
            [session],
            [passage, document, chart, table, references],
            trigger_mode="multiple",
        )
        # a page button of the document view (DOCUMENT_JS): every click sent, as the markers' are
        document.click(page.turn_page, [session], [document], trigger_mode="multiple")
        cleared = [chat, session, chart, table, references, passage, thread_list, remembered, document]
        new.click(page.new, None, cleared).then(page.exports, session, downloads)
        shown = [
            chat,
            session,
            chart,
            table,
            references,
            passage,
            remembered,
            document,
            thread_list,
            question,
        ]
        switched = thread_list.input(page.switch, [thread_list, session], [*shown, ask, new])
        switched.then(page.exports, session, downloads)

        upload.upload(page.ingest, [upload], [ingested])
        desk.library = library  # the outline editor pins the Library's documents
        loaded = blocks.load(
            page.load,
            [remembered],
            [chat, session, thread_list, remembered, chart, table, references, question, ask, new],
        )
        loaded.then(page.exports, session, downloads)
        # after a load and a thread picked too: an outline waits there again
        desk.wire(chat, session, outputs, asked, clicked, loaded, switched)
    return blocks


def serve(
    context: Context,
    host: str = "127.0.0.1",
    port: int = 7860,
    threads: str | None = None,
    uploads: Path | None = None,
    gate: Gate | None = None,
) -> None:
    """Serve the chat page on host:port until interrupted (the index is opened first, when there is one).

    With a `gate` that requires a login and trusts no proxy, the page opens with Gradio's login form: a
    user's name and API token (`citewise users add NAME`).

    Once the page answers, the query graph's modules import and the embedding model loads in a thread, so
    that neither keeps the page waiting and both are ready by the first question.
    """
    try:
        index = asyncio.run(open_index(context))
    except IndexOpenError as error:
        logger.warning("%s: upload documents on the page, or run `citewise ingest PATH`", error)
        index = None
    blocks = build_page(context, threads, uploads, gate)
    # set by build_page; Blocks declares no such attribute
    page: ChatPage = getattr(blocks, "citewise")  # noqa: B009
    theme = gr.themes.Default(font=THEME_FONTS["font"], font_mono=THEME_FONTS["font_mono"])
    blocks.queue(default_concurrency_limit=4).launch(
        server_name=host,
        server_port=port,
        theme=theme,
        css=CSS + library_tab.CSS,
        ssr_mode=False,
        footer_links=[],
        show_error=False,
        favicon_path=None,
        prevent_thread_lock=True,
        auth=login_check(gate),
        allowed_paths=[str(page.pages_dir)],  # the document view's rendered pages
        auth_message="Your user name and API token (citewise users add NAME)." if login_check(gate) else None,
    )
    # not a daemon: ONNX Runtime's threads, torn down mid-load at exit, abort the process
    threading.Thread(target=_warm, args=(index,), name="citewise-warm").start()
    blocks.block_thread()


def _warm(index: SearchIndex | None) -> None:
    """Import the query graph and load the index's embedding model: what a first question would wait for."""
    import citewise.graph.query  # noqa: F401

    if index is None:
        return
    try:
        index.embedder.embed(["citewise"])
    except (OSError, RuntimeError, ValueError) as error:  # the first question loads it again, and says why
        logger.warning("the embedding model did not load yet: %s", error)


def login_check(gate: Gate | None) -> Any:
    """The page's login check (user name, API token) when its gate requires a login and trusts no proxy.

    None: no login form (loopback, or single sign-on by a trusted proxy's header).
    """
    if gate is None or not gate.login_required or gate.trusted_proxies:
        return None
    return gate.user_of_login
