"""The chat page's Library tab: the documents the user may read, how each was read, and removing one.

The list is every document of the collections the user may read (the index's `documents`, through the
reading port, so both tiers and the same filter as every search), each with what `citewise show` reports
(`citewise.index.inspect`): title, pages, sections, references, when it was ingested, warnings. A search box
narrows it by title. A row clicked opens the document: its sections tree with paragraph counts, its
reference list, its tables and what its file's layout left out. Removing one asks first, needs write on its
collection, removes that document by its id through the writing port (`IndexWriter.remove_documents`: the
other documents of its file stay) and is written to the audit log.

The pure parts (rows, the document's HTML) are functions; `Library` holds the page's handlers.
"""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gradio as gr
import pandas as pd
import psycopg

from citewise.app.web import render
from citewise.core.resources import resources_of
from citewise.index import IndexOpenError
from citewise.index.inspect import DROPPED_KINDS, Reading, describe_stored
from citewise.index.reading import SearchIndex, readable
from citewise.index.records import DocumentRecord, document_collection

if TYPE_CHECKING:
    from citewise.app.web.desk import Page

COLUMNS = [
    "title",
    "collection",
    "pages",
    "sections",
    "paragraphs",
    "references",
    "ingested",
    "warnings",
    "id",
]
"""The library table's columns (`id`: the start of the document's id, as `citewise show` prints it whole)."""
COLUMN_WIDTHS: list[str | int] = ["26.5%", "9%", "5.5%", "7%", "8.5%", "8.5%", "12.5%", "15%", "7.5%"]
"""The table's column widths, in COLUMNS order: it fits the page's width (no sideways scrolling at 1280 px)
with the title widest, the warnings wrapping and the id short."""
LISTED = 500
"""Rows listed at most (a search narrows a larger library)."""
ID_SHOWN = 8
"""Characters of a document id the table shows (the document view shows it whole)."""

CSS = """
.cw-doc h4 { margin: 8px 0 4px 0; }
.cw-doc ul, .cw-doc ol { margin: 0 0 6px 18px; padding: 0; }
.cw-doc .cw-doc-sections { list-style: none; margin-left: 0; }
.cw-doc-count { color: #666; font-size: 0.85em; }
.cw-doc-warning { color: #92400e; }
#cw-library th, #cw-library th * { overflow-wrap: normal; word-break: keep-all; }
"""


# pure parts ------------------------------------------------------------------------------------------------
def matching(records: list[DocumentRecord], query: str) -> list[DocumentRecord]:
    """The documents whose title holds `query` (any case; every one for an empty query)."""
    wanted = " ".join((query or "").split()).casefold()
    return [r for r in records if wanted in " ".join(r.title.split()).casefold()]


def library_row(record: DocumentRecord, reading: Reading) -> list[Any]:
    """One document's row of the library table (see COLUMNS)."""
    return [
        reading.title,
        document_collection(record.metadata),
        reading.pages if reading.pages is not None else "",
        len(reading.sections),
        reading.paragraphs,
        len(reading.references),
        record.added.replace("T", " ")[:16],
        "; ".join(reading.warnings) or "none",
        record.id[:ID_SHOWN],
    ]


def document_of(row: list[Any] | None, ids: list[str]) -> str | None:
    """The id of the document a table row shows (its `id` column is the start of one of `ids`)."""
    if not row or len(row) < len(COLUMNS):
        return None
    start = str(row[COLUMNS.index("id")])
    found = [doc_id for doc_id in ids if start and doc_id.startswith(start)]
    return found[0] if len(found) == 1 else None


def sections_html(reading: Reading) -> str:
    """The sections tree: each heading indented by its depth, with its paragraph count (as `show` prints)."""
    items = []
    for section in reading.sections:
        parts = section.path.split(" > ") if section.path else ["(no section)"]
        depth = len(parts) - 1
        indent = f"padding-left: {depth * 1.2:.1f}em"
        items.append(
            f'<li class="cw-doc-section" style="{indent}">{render.escape(parts[-1])} '
            f'<span class="cw-doc-count">[{section.paragraphs}]</span></li>'
        )
    return f'<ul class="cw-doc-sections">{"".join(items)}</ul>'


def document_html(record: DocumentRecord, reading: Reading) -> str:
    """An opened document: what it is, its sections, references, tables, what was left out and warnings."""
    pages = f", {reading.pages} page{'s' * (reading.pages != 1)}" if reading.pages else ""
    head = (
        f"<h3>{render.escape(reading.title)}</h3>"
        # the file's name: its folder is the server's business (as the document view names it)
        f'<p class="cw-note">{render.escape(Path(reading.source).name)} '
        f"({render.escape(reading.kind)}{pages}) · "
        f"collection {render.escape(document_collection(record.metadata))} · ingested "
        f"{render.escape(record.added.replace('T', ' ') or 'unknown')} · id {render.escape(record.id)}</p>"
    )
    parts = [head, f"<h4>Sections ({len(reading.sections)}; {reading.paragraphs} paragraphs)</h4>"]
    parts.append(sections_html(reading))
    references = "".join(
        f"<li>[{render.escape(key)}] {render.escape(text)}</li>" for key, text in reading.references
    )
    parts.append(f"<h4>References ({len(reading.references)})</h4>")
    parts.append(f'<ol class="cw-doc-references">{references}</ol>' if references else "<p>none</p>")
    if reading.tables:
        tables = "".join(
            f"<li>{render.escape(t.caption or ' | '.join(t.header))} "
            f"({t.rows} rows x {len(t.header)} columns)</li>"
            for t in reading.tables
        )
        parts.append(f"<h4>Tables ({len(reading.tables)})</h4><ul>{tables}</ul>")
    left_out = []
    for kind, label in DROPPED_KINDS.items():
        count = reading.dropped_counts.get(kind, 0)
        if count:
            lines = "".join(
                f"<li>{render.escape(textwrap.shorten(text, 140, placeholder=' …'))}</li>"
                for text in reading.dropped.get(kind, [])
            )
            left_out.append(f"<li>{render.escape(label)}: {count}<ul>{lines}</ul></li>")
    if reading.ocr_pages:
        left_out.append(f"<li>pages read by OCR: {', '.join(map(str, reading.ocr_pages))}</li>")
    if reading.pages_without_text:
        left_out.append(f"<li>pages with no text: {', '.join(map(str, reading.pages_without_text))}</li>")
    parts.append("<h4>Left out</h4>")
    parts.append(f'<ul class="cw-doc-left-out">{"".join(left_out)}</ul>' if left_out else "<p>nothing</p>")
    warnings = "".join(f'<li class="cw-doc-warning">{render.escape(w)}</li>' for w in reading.warnings)
    parts.append(f"<h4>Warnings</h4><ul>{warnings}</ul>" if warnings else "<h4>Warnings</h4><p>none</p>")
    return f'<div class="cw-doc">{"".join(parts)}</div>'


EMPTY_DOCUMENT = '<div class="cw-doc cw-empty">Click a document in the list to see how it was read.</div>'


# the page's handlers ---------------------------------------------------------------------------------------
class Library:
    """The Library tab's handlers, on the chat page's server (its user, index and audit log)."""

    def __init__(self, page: Page) -> None:
        self.page = page

    async def index_for(self, user: str) -> SearchIndex:
        """The index as `user` may read it (raises IndexOpenError when there is none yet)."""
        collections = await asyncio.to_thread(self.page.readable_by, user)
        index = await resources_of(self.page.context).index(self.page.context)
        return readable(index, collections)

    def may_remove(self, user: str, record: DocumentRecord) -> bool:
        """Whether `user` may remove `record` (write on its collection; the local user may)."""
        if user == self.page.gate.local_user:
            return True
        store = self.page.gate.store
        return store is not None and store.may_write(user, document_collection(record.metadata))

    async def listing(self, query: str | None, request: gr.Request | None = None) -> tuple[Any, ...]:
        """The table of the user's documents whose title holds `query`, their ids, and a count.

        `query` is None at the page's load when the tab was never shown (its box has no value yet).
        """
        query = query or ""
        user = await self.page.user_of(request)
        empty = pd.DataFrame(columns=COLUMNS)
        if user is None:
            return empty, [], "Log in to see the library."
        try:
            index = await self.index_for(user)
            records = await asyncio.to_thread(index.documents)
        except (IndexOpenError, OSError, psycopg.Error) as error:
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            return empty, [], render.escape_markdown(f"No documents yet ({first}).")
        found = matching(records, query)
        shown = found[:LISTED]

        def rows() -> list[list[Any]]:
            return [
                library_row(
                    r, describe_stored(r, index.paragraphs(r.id), index.bibliography(r.id), layout=False)
                )
                for r in shown
            ]

        table = pd.DataFrame(await asyncio.to_thread(rows), columns=COLUMNS)
        count = f"{len(found)} of {len(records)} documents" if query.strip() else f"{len(records)} documents"
        if len(found) > LISTED:
            count += f" (the first {LISTED} listed: search to narrow)"
        return table, [r.id for r in shown], count

    async def after_upload(
        self, report: str, query: str | None, request: gr.Request | None = None
    ) -> tuple[Any, ...]:
        """The list again once an upload's report replaced its progress (not at each progress line)."""
        if "Ingested" not in (report or ""):
            return gr.skip(), gr.skip(), gr.skip()
        return await self.listing(query, request)

    async def choices(self, user: str) -> list[tuple[str, str]]:
        """The documents `user` may read as (title, id), for pinning documents to a report's section."""
        try:
            index = await self.index_for(user)
            records = await asyncio.to_thread(index.documents)
        except (IndexOpenError, OSError, psycopg.Error):
            return []
        return [(f"{r.title} · {r.id[:ID_SHOWN]}", r.id) for r in records[:LISTED]]

    async def open(
        self, ids: list[str], event: gr.SelectData, request: gr.Request | None = None
    ) -> tuple[Any, ...]:
        """A row clicked: the document as read, and the remove button (enabled with write on it)."""
        doc_id = document_of(getattr(event, "row_value", None), ids or [])
        user = await self.page.user_of(request)
        hidden = gr.Column(visible=False)
        if doc_id is None or user is None:
            return gr.skip(), gr.skip(), gr.skip(), hidden
        index = await self.index_for(user)
        record = await asyncio.to_thread(index.document, doc_id)
        if record is None:
            return EMPTY_DOCUMENT, None, gr.Button(interactive=False), hidden

        def read() -> Reading:
            return describe_stored(record, index.paragraphs(doc_id), index.bibliography(doc_id))

        reading = await asyncio.to_thread(read)
        allowed = await asyncio.to_thread(self.may_remove, user, record)
        button = gr.Button(
            "Remove this document…" if allowed else "Remove (needs write on its collection)",
            interactive=allowed,
        )
        return document_html(record, reading), doc_id, button, hidden

    async def confirm(self, doc_id: str | None, request: gr.Request | None = None) -> tuple[Any, ...]:
        """The confirmation step: what a removal takes away, and the buttons to do it or not."""
        user = await self.page.user_of(request)
        if not doc_id or user is None:
            return gr.Column(visible=False), ""
        index = await self.index_for(user)
        record = await asyncio.to_thread(index.document, doc_id)
        if record is None:
            return gr.Column(visible=False), ""
        same = [r for r in await asyncio.to_thread(index.documents) if r.file == record.file]
        others = len(same) - 1
        name = render.escape(Path(record.file).name)
        stay = (
            f"; the {others} other document{'s' * (others != 1)} of its file `{name}` stay" if others else ""
        )
        text = (
            f"**Remove “{render.escape_markdown(record.title)}”?** It leaves the index with its paragraphs, "
            f"references and chunks: questions no longer find it{stay}. This cannot be undone."
        )
        return gr.Column(visible=True), text

    async def remove(
        self, doc_id: str | None, query: str, request: gr.Request | None = None
    ) -> tuple[Any, ...]:
        """Remove the document by its id (write on its collection needed); audited; the list again.

        Its file's other documents stay (`IndexWriter.remove_documents`).
        """
        user = await self.page.user_of(request)
        hidden = gr.Column(visible=False)
        if not doc_id or user is None:
            return (gr.skip(),) * 6 + (hidden,)
        context = self.page.context
        index = await self.index_for(user)
        record = await asyncio.to_thread(index.document, doc_id)
        if record is None or not await asyncio.to_thread(self.may_remove, user, record):
            table, ids, _ = await self.listing(query, request)
            said = "Not removed: you may not remove it (write on its collection is needed), or it is gone."
            return table, ids, said, EMPTY_DOCUMENT, None, gr.Button(interactive=False), hidden

        def work() -> Any:
            with resources_of(context).writer(context) as writer:
                return writer.remove_documents([record.id])

        try:
            report = await asyncio.to_thread(work)
        except (IndexOpenError, ValueError, OSError, psycopg.Error) as error:
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            return (
                (gr.skip(),) * 2
                + (render.escape_markdown(f"Not removed: {first}"),)
                + (gr.skip(),) * 3
                + (hidden,)
            )
        detail = {
            "doc_ids": [record.id],
            "paths": [record.file],
            "via": "page",
            "files": report.files,
            "documents_added": 0,
            "documents_removed": report.documents_removed,
            "collection": document_collection(record.metadata),
            "doc_id": record.id,
            "title": record.title,
        }
        await asyncio.to_thread(self.page.audit, "remove", user, detail)
        if not context.store:  # the local index is opened afresh by the next question and listing
            resources_of(context).forget_index(context)
        table, ids, count = await self.listing(query, request)
        said = (
            f"Removed “{render.escape_markdown(record.title)}”: {report.documents_removed} document(s), "
            f"{report.chunks_removed} chunks. {count} left."
        )
        return (
            table,
            ids,
            said,
            EMPTY_DOCUMENT,
            None,
            gr.Button("Remove this document…", interactive=False),
            hidden,
        )


def build_library(page: Page, blocks: gr.Blocks, ingested: gr.Markdown) -> Library:
    """The Library tab's components and events (a tab of the page's top-level tabs); its handlers."""
    library = Library(page)
    with gr.Tab("Library", id="library", elem_id="cw-library-tab", render_children=True):
        with gr.Row():
            search = gr.Textbox(
                show_label=False, placeholder="Search titles", elem_id="cw-lib-search", scale=5, lines=1
            )
            refresh = gr.Button("Refresh", elem_id="cw-lib-refresh", size="sm", scale=1, min_width=80)
        status = gr.Markdown(elem_id="cw-lib-status")
        ids = gr.State([])
        selected = gr.State(None)
        table = gr.Dataframe(
            value=pd.DataFrame(columns=COLUMNS),
            elem_id="cw-library",
            interactive=False,
            wrap=True,
            max_height=360,
            column_widths=COLUMN_WIDTHS,
        )
        with gr.Row(equal_height=False):
            with gr.Column(scale=3):
                document = gr.HTML(EMPTY_DOCUMENT, elem_id="cw-lib-doc")
            with gr.Column(scale=1):
                remove = gr.Button(
                    "Remove this document…", elem_id="cw-lib-remove", variant="stop", interactive=False
                )
                with gr.Column(visible=False, elem_id="cw-lib-confirm-box") as confirm_box:
                    question = gr.Markdown(elem_id="cw-lib-confirm-text")
                    with gr.Row():
                        yes = gr.Button("Remove", elem_id="cw-lib-confirm", variant="stop")
                        no = gr.Button("Cancel", elem_id="cw-lib-cancel")
    listed = [table, ids, status]
    blocks.load(library.listing, [search], listed)
    search.submit(library.listing, [search], listed)
    search.change(library.listing, [search], listed, trigger_mode="always_last")
    refresh.click(library.listing, [search], listed)
    ingested.change(library.after_upload, [ingested, search], listed, trigger_mode="always_last")
    table.select(library.open, [ids], [document, selected, remove, confirm_box])
    remove.click(library.confirm, [selected], [confirm_box, question])
    no.click(lambda: gr.Column(visible=False), None, confirm_box)
    yes.click(
        library.remove, [selected, search], [table, ids, status, document, selected, remove, confirm_box]
    )
    return library
