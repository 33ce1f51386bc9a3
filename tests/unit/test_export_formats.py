"""Exports of an answer or report (Markdown, DOCX, BibTeX, RIS): hostile document text cannot break them."""

from __future__ import annotations

import io
import re
from pathlib import Path

import docx
import pytest
from support.exports import bib_unescape, markdown_markers, read_bibtex, read_ris

from citewise.app.export import ExportError, export_format, render, split_authors, to_markdown

HOSTILE = (
    "Evil} {title \\ with\nER  - \n# Heading\r\nTY  - JOUR\n@misc{x, [9](http://x) _a_ *b* 50% & $1 #2 ~^"
)
"""A title a document could carry: braces, a backslash, line breaks, RIS tags and Markdown at line starts."""


def hostile_payload() -> dict:
    """A report whose every document-given string is hostile; markers [1] and [2], one secondary work."""
    return {
        "question": "# What\n## is it?",
        "route": "report",
        "answer": (
            "# A document's heading [1].\n\n## Findings\n\n> quoted\n1. listed [2] and [7] unresolved.\n\n"
            "## Not a section\n\n- item [1]"
        ),
        "sections": [{"id": "s1", "title": "Findings"}],
        "citations": [
            {
                "marker": 1,
                "chunk_id": "c1",
                "doc_id": "d1",
                "key": "2212.11816",
                "title": HOSTILE,
                "text": "Quoted [43] text\nER  - ",
            },
            {"marker": 2, "chunk_id": "c2", "doc_id": "d2", "key": "", "title": "Plain", "text": "t"},
        ],  # fmt: skip
        "references": {
            "primary": [
                {
                    "doc_id": "d1",
                    "title": HOSTILE,
                    "file": "/p/{a}.pdf",
                    "key": "2212.11816",
                    "authors": "Ann Lee, Bo Kim and Cy Park",
                    "markers": [1],
                },
                {"doc_id": "d2", "title": "Plain", "file": "/p/b.txt", "key": "", "markers": [2]},
            ],  # fmt: skip
            "secondary": [
                {
                    "doc_id": "d1",
                    "cited_in": HOSTILE,
                    "key": "b0",
                    "fine": True,
                    "text": "Lee, A. 2020, J}\nER  - , doi: 10.1000/x_y. https://e.org/a",
                },
            ],  # fmt: skip
        },
    }


@pytest.mark.parametrize(
    ("name", "kind"), [("a.md", "md"), ("A.DOCX", "docx"), ("x/y.bib", "bib"), ("r.ris", "ris")]
)
def test_the_suffix_names_the_format(name: str, kind: str) -> None:
    assert export_format(Path(name)) == kind


@pytest.mark.parametrize("name", ["a.pdf", "a", "a.md.txt"])
def test_an_unknown_suffix_is_refused_with_the_known_ones(name: str) -> None:
    with pytest.raises(ExportError, match=r"\.md, \.docx, \.bib, \.ris"):
        export_format(name)


def test_hostile_text_makes_no_markdown_structure_and_every_marker_resolves() -> None:
    text = to_markdown(hostile_payload())
    headings = [line for line in text.splitlines() if re.match(r"#{1,6} ", line)]
    assert headings == [
        "# \\# What \\#\\# is it?",
        "## Findings",
        "## References",
        "## Works cited by these sources",
    ]
    lines = text.splitlines()
    assert not [line for line in lines if re.match(r"(>|\d+[.)] |[+*] )", line)]
    items = [line for line in lines if line.startswith("- ")]  # the one secondary work, marked fine
    assert len(items) == 1 and items[0].startswith("- \\* Lee, A. 2020")
    assert "\\> quoted" in text and "\\## Not a section" in text and "\\- item [1]" in text
    assert "\\[9\\](http://x)" in text and "\\_a\\_ \\*b\\*" in text  # no link, no emphasis
    used, listed = markdown_markers(text)
    assert used == [1, 2, 1] and listed == {1, 2}  # [7] names no citation: escaped, not a marker
    assert "\\[7\\]" in text
    assert "(ref. 43)" in text  # the source's own marker never passes for one of ours


def test_bibtex_has_one_entry_per_cited_work_and_reads_back_the_hostile_title() -> None:
    entries = read_bibtex(render(hostile_payload(), "bib").decode())
    assert [key for _, key, _ in entries] == ["2212.11816", "doc-d2", "2212.11816-b0"]
    first, second, cited = (fields for _, _, fields in entries)
    assert bib_unescape(first["title"]) == " ".join(HOSTILE.split())
    assert first["author"] == "Ann Lee and Bo Kim and Cy Park"
    assert first["eprint"] == "2212.11816" and first["url"] == "https://arxiv.org/abs/2212.11816"
    assert "file" not in first and "file: /p/{a}.pdf" in bib_unescape(first["note"])  # not verbatim-safe
    assert second == {"title": "Plain", "file": "/p/b.txt", "note": "cited in the answer as [2]"}
    assert cited["doi"] == "10.1000/x_y" and cited["url"] == "https://e.org/a"
    assert "title" not in cited and "author" not in cited and "year" not in cited  # none invented
    assert bib_unescape(cited["note"]).startswith("Lee, A. 2020, J} ER - , doi")


def test_ris_has_one_record_per_work_and_no_value_starts_a_line() -> None:
    records = read_ris(render(hostile_payload(), "ris").decode())
    assert len(records) == 3
    first = dict(records[0])
    assert first["TY"] == "GEN" and first["ID"] == "2212.11816"
    assert first["TI"] == " ".join(HOSTILE.split())
    assert [value for tag, value in records[0] if tag == "AU"] == ["Ann Lee", "Bo Kim", "Cy Park"]
    assert dict(records[2])["DO"] == "10.1000/x_y" and "TI" not in dict(records[2])


def test_docx_reads_back_with_headings_paragraphs_markers_and_references() -> None:
    document = docx.Document(io.BytesIO(render(hostile_payload(), "docx")))
    shown = [(p.style.name if p.style else "", p.text) for p in document.paragraphs]
    headings = [text for style, text in shown if style.startswith("Heading")]
    assert headings == ["# What ## is it?", "Findings", "References", "Works cited by these sources"]
    texts = [text for _, text in shown]
    assert "# A document's heading [1]." in texts  # a paragraph, not a heading
    assert any(text.startswith("[1] " + " ".join(HOSTILE.split())[:20]) for text in texts)
    assert any(text.startswith("[2] Plain") for text in texts)
    assert document.core_properties.title == "# What ## is it?"


def test_author_lists_split_on_commas_and_and_unless_they_carry_affiliations() -> None:
    assert split_authors("A B, C D and E F") == ("A B", "C D", "E F")
    assert split_authors("A B (1), C D (2) ((1) Uni)") == ("A B (1), C D (2) ((1) Uni)",)
    assert split_authors("") == ()
