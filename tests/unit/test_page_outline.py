"""Outline approval on the page: the mode it runs, the interrupt it finds, the resume value it sends."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from citewise.app.web.outline import APPROVE_MODE, answer_mode, edited, resume_value, waiting
from citewise.nodes.approve import OutlineEditError, edited_outline

PLANNED: list[dict[str, Any]] = [
    {"id": "s1", "title": "Vaccines", "goal": "how they train", "queries": ["vaccines"], "documents": []},
    {"id": "s2", "title": "Antibodies", "goal": "what they do", "queries": ["antibodies"], "documents": []},
    {"id": "s3", "title": "Herd immunity", "goal": "who it protects", "queries": ["herd"], "documents": []},
]


class Documents:
    """An index that holds the documents named."""

    def __init__(self, *ids: str) -> None:
        self.ids = set(ids)

    def document(self, doc_id: str) -> object | None:
        return object() if doc_id in self.ids else None


def test_outline_first_is_a_report_that_waits_for_approval() -> None:
    assert answer_mode(APPROVE_MODE) == ("report", True)
    assert answer_mode("report") == ("report", False)
    assert answer_mode("answer") == ("answer", False)
    assert answer_mode(None) == ("auto", False)


def test_the_waiting_outline_is_found_in_the_threads_interrupts() -> None:
    pending = SimpleNamespace(id="i-1", value={"question": "q?", "outline": PLANNED, "how_to_resume": "..."})
    assert waiting(SimpleNamespace(interrupts=(pending,))) == {
        "interrupt": "i-1",
        "outline": PLANNED,
        "question": "q?",
    }
    assert waiting(SimpleNamespace(interrupts=())) is None
    assert waiting(SimpleNamespace(interrupts=(SimpleNamespace(id="x", value="something else"),))) is None


def test_the_edited_slots_become_the_resume_value_approve_accepts() -> None:
    rows = [("Antibodies", "what they do", None), ("How vaccines train", "how they train", ["doc-a"])]
    sections = edited([PLANNED[1], PLANNED[0]], rows)  # reordered, the third dropped, the first renamed
    value = resume_value([*sections, {"title": "Open questions", "goal": "", "documents": []}])
    assert value == [
        {"title": "Antibodies", "goal": "what they do", "id": "s2", "documents": []},
        {"title": "How vaccines train", "goal": "how they train", "id": "s1", "documents": ["doc-a"]},
        {"title": "Open questions", "goal": "", "documents": []},
    ]
    outline = edited_outline(value, PLANNED, Documents("doc-a"), "How do vaccines work?")  # type: ignore[arg-type]
    assert [(s["id"], s["title"]) for s in outline] == [
        ("s2", "Antibodies"),
        ("s1", "How vaccines train"),
        ("s4", "Open questions"),  # a new section gets an id no planned section had
    ]
    assert outline[1]["documents"] == ["doc-a"] and outline[1]["queries"][0].startswith("How vaccines train")


def test_a_bad_edit_is_refused_by_the_clis_own_check() -> None:
    value = resume_value(edited(PLANNED[:1], [("  ", "goal", None)]))
    with pytest.raises(OutlineEditError, match="no title"):
        edited_outline(value, PLANNED, Documents(), "q")  # type: ignore[arg-type]
    pinned = resume_value(edited(PLANNED[:1], [("Vaccines", "", ["gone"])]))
    with pytest.raises(OutlineEditError, match="gone"):
        edited_outline(pinned, PLANNED, Documents(), "q")  # type: ignore[arg-type]
