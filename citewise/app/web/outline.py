"""Outline approval on the chat page: a report asked "outline first" stops with its plan, edited here.

The query graph's `approve` step (`citewise.nodes.approve`) interrupts a report run with its planned
outline when `approve_outline` is on. The page then shows the outline as an editable list: each section's
title and goal, the documents pinned to it (chosen among the Library's documents the user may read), moved
up or down, dropped, and sections added. **Run** resumes that interrupt with the edited outline (a list of
{"id", "title", "goal", "documents"}, the shape approve.py documents), **Run as planned** with null. The
edit is checked first with the CLI's own check (`approve.edited_outline`): a bad one (a section without a
title) is said under the list and nothing runs. Moving, dropping and adding go through the CLI editor's
own commands (`outline_editor.apply_edit`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import gradio as gr

from citewise.app.outline_editor import apply_edit
from citewise.app.web import render

if TYPE_CHECKING:
    from langgraph.types import Command

    from citewise.app.web.desk import Page
    from citewise.app.web.library import Library

APPROVE_MODE = "outline first"
"""The "Answer as" choice of a report whose outline is approved on the page before it is written."""
APPROVE_HINT = "outline first: a report whose planned outline you edit and approve before it is written"
SLOTS = 12
"""Sections the editor can hold (a plan has at most `max_sections`; the rest are for added ones)."""
NEW_SECTION = "New section"


# pure parts ------------------------------------------------------------------------------------------------
def answer_mode(mode: str | None) -> tuple[str, bool]:
    """The answer mode a choice of "Answer as" runs, and whether the outline waits for approval."""
    if mode == APPROVE_MODE:
        return "report", True
    return mode or "auto", False


def waiting(snapshot: Any) -> dict[str, Any] | None:
    """The approve step's pending interrupt of a thread's state (its id and outline), else None."""
    for pending in getattr(snapshot, "interrupts", ()) or ():
        value = pending.value
        if isinstance(value, dict) and isinstance(value.get("outline"), list):
            return {
                "interrupt": pending.id,
                "outline": value["outline"],
                "question": value.get("question", ""),
            }
    return None


def edited(
    sections: list[dict[str, Any]], rows: list[tuple[str, str, list[str] | None]]
) -> list[dict[str, Any]]:
    """The sections as the editor shows them: each slot's title, goal and pinned documents on its section."""
    out = []
    for section, (title, goal, documents) in zip(sections, rows, strict=False):
        out.append({**section, "title": title or "", "goal": goal or "", "documents": list(documents or [])})
    return out


def resume_value(sections: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The resume value of an edited outline: a planned section keeps its id; the list order is the order."""
    value = []
    for section in sections:
        item: dict[str, Any] = {"title": section.get("title", ""), "goal": section.get("goal", "")}
        if section.get("id"):
            item["id"] = section["id"]
        item["documents"] = list(section.get("documents") or [])
        value.append(item)
    return value


# the page's handlers ----------------------------------------------------------------------------------------
class OutlineDesk:
    """The outline editor's components and handlers (built in the chat column, wired after the page's)."""

    def __init__(self, page: Page, library: Library | None = None) -> None:
        self.page = page
        self.library = library
        self.rows: list[gr.Row] = []
        self.titles: list[gr.Textbox] = []
        self.goals: list[gr.Textbox] = []
        self.documents: list[gr.Dropdown] = []

    def build(self) -> None:
        """The editor, hidden until a report's outline waits (inside the current layout)."""
        with gr.Column(visible=False, elem_id="cw-outline") as self.box:
            gr.Markdown(
                "**Planned outline**: edit, reorder, add or drop sections and pin documents, then Run."
            )
            self.sections = gr.State([])
            ups, downs, drops = [], [], []
            for n in range(1, SLOTS + 1):
                with gr.Row(visible=False, elem_id=f"cw-outline-row-{n}", equal_height=True) as row:
                    self.rows.append(row)
                    self.titles.append(
                        gr.Textbox(label=f"Section {n}", elem_id=f"cw-outline-title-{n}", scale=3, lines=1)
                    )
                    self.goals.append(
                        gr.Textbox(label="Goal", elem_id=f"cw-outline-goal-{n}", scale=4, lines=1)
                    )
                    self.documents.append(
                        gr.Dropdown(
                            choices=[],
                            multiselect=True,
                            label="Pinned documents",
                            elem_id=f"cw-outline-docs-{n}",
                            scale=3,
                        )
                    )
                    with gr.Column(scale=0, min_width=60):
                        ups.append(gr.Button("↑", elem_id=f"cw-outline-up-{n}", size="sm", min_width=40))
                        downs.append(gr.Button("↓", elem_id=f"cw-outline-down-{n}", size="sm", min_width=40))
                        drops.append(gr.Button("✕", elem_id=f"cw-outline-drop-{n}", size="sm", min_width=40))
            with gr.Row():
                add = gr.Button("Add section", elem_id="cw-outline-add", size="sm")
                self.run_button = gr.Button("Run", elem_id="cw-outline-run", variant="primary")
                self.planned_button = gr.Button("Run as planned", elem_id="cw-outline-planned")
            self.error = gr.Markdown(elem_id="cw-outline-error")
        self.slots = [self.sections, *[c for n in range(SLOTS) for c in self._slot(n)]]
        inputs: set[gr.blocks.Block] = {self.sections, *self.titles, *self.goals, *self.documents}
        for n in range(1, SLOTS + 1):
            ups[n - 1].click(self._editing(f"move {n} {n - 1}"), inputs, [*self.slots, self.error])
            downs[n - 1].click(self._editing(f"move {n} {n + 1}"), inputs, [*self.slots, self.error])
            drops[n - 1].click(self._editing(f"drop {n}"), inputs, [*self.slots, self.error])
        add.click(self._editing(f"add {NEW_SECTION}"), inputs, [*self.slots, self.error])

    def _slot(self, n: int) -> list[Any]:
        return [self.rows[n], self.titles[n], self.goals[n], self.documents[n]]

    def _shown(self, sections: list[dict[str, Any]], choices: list[tuple[str, str]] | None) -> list[Any]:
        """The editor's slots showing `sections` (choices: the documents to pin; None: as they are)."""
        out: list[Any] = [sections]
        for n in range(SLOTS):
            if n < len(sections):
                section = sections[n]
                pinned = list(section.get("documents") or [])
                out += [
                    gr.Row(visible=True),
                    gr.Textbox(value=section.get("title", "")),
                    gr.Textbox(value=section.get("goal", "")),
                    gr.Dropdown(value=pinned)
                    if choices is None
                    else gr.Dropdown(value=pinned, choices=choices),
                ]
            else:
                out += [
                    gr.Row(visible=False),
                    gr.Textbox(value=""),
                    gr.Textbox(value=""),
                    gr.Dropdown(value=[]),
                ]
        return out

    def _current(self, data: dict[Any, Any]) -> list[dict[str, Any]]:
        rows = [
            (data[t], data[g], data[d])
            for t, g, d in zip(self.titles, self.goals, self.documents, strict=True)
        ]
        return edited(list(data[self.sections] or []), rows)

    def _editing(self, command: str) -> Any:
        def edit(data: dict[Any, Any]) -> list[Any]:
            sections = self._current(data)
            try:
                changed = apply_edit(sections, command)
            except (ValueError, IndexError) as error:
                return [*self._shown(sections, None), render.escape_markdown(f"Not changed: {error}")]
            if len(changed) > SLOTS:
                return [*self._shown(sections, None), f"At most {SLOTS} sections."]
            return [*self._shown(changed, None), ""]

        return edit

    async def show(self, session: dict[str, Any] | None, request: gr.Request | None = None) -> list[Any]:
        """After a turn: the editor with the outline that waits, or hidden when none does."""
        pending = (session or {}).get("pending")
        user = await self.page.user_of(request)
        if not pending or user is None:
            return [gr.Column(visible=False), *self._shown([], None), ""]
        choices = await self.library.choices(user) if self.library is not None else []
        return [gr.Column(visible=True), *self._shown(list(pending["outline"]), choices), ""]

    def wire(self, chat: Any, session: Any, outputs: list[Any], *turns: Any) -> None:
        """Show the editor after each turn and load (`turns`: the page's events); Run and Run as planned."""
        shown = [self.box, *self.slots, self.error]
        for turn in turns:
            turn.then(self.show, [session], shown)
        inputs = {chat, session, self.sections, *self.titles, *self.goals, *self.documents}
        self._chat, self._session = chat, session
        self.run_button.click(self.run, inputs, [*outputs, self.box, self.error])
        self.planned_button.click(self.run_as_planned, inputs, [*outputs, self.box, self.error])

    async def run(
        self, data: dict[Any, Any], request: gr.Request | None = None
    ) -> AsyncIterator[tuple[Any, ...]]:
        """Resume the waiting report with the edited outline (checked first: an error is said, none runs)."""
        session = dict(data[self._session] or {})
        pending = session.get("pending")
        user = await self.page.user_of(request)
        if not pending or user is None:
            yield (*(gr.skip(),) * self.page_outputs, gr.Column(visible=False), "")
            return
        value = resume_value(self._current(data))
        # the graph's modules, once a report waits (the page starts without LangGraph: tests/unit/test_web.py)
        from citewise.nodes.approve import OutlineEditError, edited_outline

        try:
            if self.library is None:
                raise OutlineEditError("the page has no library to check pinned documents against")
            index = await self.library.index_for(user)
            await asyncio.to_thread(edited_outline, value, pending["outline"], index, pending["question"])
        except OutlineEditError as error:
            yield (*(gr.skip(),) * self.page_outputs, gr.skip(), render.escape_markdown(f"Not run: {error}"))
            return
        async for out in self._resume(data, session, value, request):
            yield out

    async def run_as_planned(
        self, data: dict[Any, Any], request: gr.Request | None = None
    ) -> AsyncIterator[tuple[Any, ...]]:
        """Resume the waiting report with null: the outline as planned."""
        session = dict(data[self._session] or {})
        if not session.get("pending"):
            yield (*(gr.skip(),) * self.page_outputs, gr.Column(visible=False), "")
            return
        async for out in self._resume(data, session, None, request):
            yield out

    async def _resume(
        self, data: dict[Any, Any], session: dict[str, Any], value: Any, request: gr.Request | None
    ) -> AsyncIterator[tuple[Any, ...]]:
        pending = session.pop("pending")
        history = list(data[self._chat] or [])[: pending["at"]]
        from langgraph.types import Command

        command: Command[Any] = Command(resume={pending["interrupt"]: value})
        first = True
        async for out in self.page.turn(
            pending["question"], APPROVE_MODE, history, session, request, command
        ):
            yield (*out, gr.Column(visible=False) if first else gr.skip(), "" if first else gr.skip())
            first = False

    @property
    def page_outputs(self) -> int:
        """How many outputs a page turn yields."""
        return self.page.TURN_OUTPUTS
