"""The page's Library tab: the index lists its documents by collection, and the rows and document it shows."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from citewise.app.web.library import (
    COLUMNS,
    document_html,
    document_of,
    library_row,
    matching,
    sections_html,
)
from citewise.index import Index
from citewise.index.embeddings import Embedder
from citewise.index.inspect import Reading, Section
from citewise.index.reading import Readable
from citewise.index.records import DocumentRecord


def record(title: str, doc_id: str = "abcdef0123456789", collection: str = "default") -> DocumentRecord:
    return DocumentRecord(
        doc_id, f"/data/{doc_id}.pdf", "", title, {"collection": collection}, "2026-11-29T10:00:00"
    )


def test_the_index_lists_the_documents_of_the_collections_asked_with_when_they_were_ingested(
    tmp_path: Path, embedder: Embedder
) -> None:
    open_note, closed_note = tmp_path / "open.md", tmp_path / "closed.md"
    open_note.write_text("# Open harbour\n\nThe open harbour has twelve piers for fishing boats.\n")
    closed_note.write_text("# Closed vault\n\nThe closed vault holds the guild's ledgers.\n")
    with Index.open(tmp_path / "index", embedder=embedder) as index:
        index.ingest([open_note])
        index.ingest([closed_note], collection="vault")
        every = index.documents()
        assert [d.title for d in every] == ["Closed vault", "Open harbour"]  # by title
        assert all(datetime.fromisoformat(d.added).tzinfo is not None for d in every)
        assert [d.title for d in index.documents(("default",))] == ["Open harbour"]
        assert index.documents(()) == []
        assert [d.title for d in Readable(index, ("default",)).documents()] == ["Open harbour"]
        assert Readable(index, ("default",)).documents(("vault",)) == []  # never widened
        assert index.document(every[0].id).added == every[0].added


def test_a_title_search_ignores_case_and_spacing() -> None:
    records = [record("Tidal  heating of planets"), record("Black holes", "b" * 16)]
    assert [r.title for r in matching(records, "tidal heating")] == ["Tidal  heating of planets"]
    assert matching(records, "") == records
    assert matching(records, "comets") == []


def test_a_row_says_what_show_says_and_names_its_document() -> None:
    reading = Reading(
        title="Tidal heating",
        source="/data/t.pdf",
        kind="pdf",
        sections=[Section("1 Intro", 3), Section("1 Intro > 1.1 Models", 2)],
        references=[("1", "Smith 2020")],
        pages=4,
        warnings=["no reference list was found"],
    )
    row = library_row(record("Tidal heating"), reading)
    assert dict(zip(COLUMNS, row, strict=True)) == {
        "title": "Tidal heating",
        "collection": "default",
        "pages": 4,
        "sections": 2,
        "paragraphs": 5,
        "references": 1,
        "ingested": "2026-11-29 10:00",
        "warnings": "no reference list was found",
        "id": "abcdef01",
    }
    ids = ["abcdef0123456789", "ffff000011112222"]
    assert document_of(row, ids) == "abcdef0123456789"
    assert document_of(row, ["abcdef0123456789", "abcdef0123450000"]) is None  # ambiguous: none
    assert document_of(None, ids) is None


def test_the_sections_tree_is_indented_by_depth_with_paragraph_counts() -> None:
    reading = Reading("T", "/t.md", "md", [Section("", 1), Section("A", 2), Section("A > B", 4)], [])
    items = re.findall(
        r'padding-left: ([\d.]+)em">([^<]*) <span class="cw-doc-count">\[(\d+)\]', sections_html(reading)
    )
    assert items == [("0.0", "(no section)", "1"), ("0.0", "A", "2"), ("1.2", "B", "4")]


def test_an_opened_document_escapes_what_the_document_wrote() -> None:
    reading = Reading(
        title="<script>alert(1)</script>",
        source="/data/x.pdf",
        kind="pdf",
        sections=[Section("<b>Intro</b>", 1)],
        references=[("1", "<img src=http://elsewhere/x.png>")],
        dropped={"furniture": ["<i>running head</i>"]},
        dropped_counts={"furniture": 1},
    )
    shown = document_html(record("x"), reading)
    assert "<script>" not in shown and "<img" not in shown and "<b>Intro" not in shown and "<i>" not in shown
    assert "&lt;script&gt;" in shown and "References (1)" in shown and "page furniture" in shown
