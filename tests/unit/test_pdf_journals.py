"""Reader rules from journal classes nobody here typeset: AASTeX's emulateapj sample (publishers' doc).

Each test builds the lines a page of that kind gives (boxes in PDF points, y up) and checks one rule.
"""

from __future__ import annotations

from citewise.index.citations import split_references
from citewise.index.loaders import _layout_paragraphs
from citewise.index.pdf.headings import mark_headings, mark_title
from citewise.index.pdf.lines import Line, Piece, line_text

BODY = 10.0


def line(text: str, left: float, bottom: float, right: float, font: str = "CMR10", **kw) -> Line:
    """One line of one piece at 10 points unless told otherwise, on a page whose text runs 51-561."""
    size = kw.pop("size", BODY)
    piece = Piece(left, bottom, right, bottom + size, text, size, font, False)
    return Line(
        [piece], page=kw.pop("page", 0), edge=kw.pop("edge", 51), far_edge=kw.pop("far_edge", 561), **kw
    )


def test_a_title_in_body_type_runs_on_past_a_line_ending_in_a_comma() -> None:
    title = [
        line("COLLAPSED CORES IN GLOBULAR CLUSTERS,", 190, 731, 423),
        line("GAUGE-BOSON COUPLINGS, AND AASTEX EXAMPLES", 172, 718, 441),
        line("S. Djorgovski and Ivan R. King", 226, 703, 383, "CMCSC10", size=9.0),
        line("ABSTRACT", 279, 588, 334),
        line(
            "This is a preliminary report on surface photometry of the major fraction of known", 96, 575, 525
        ),
    ]
    mark_title(title, BODY)
    assert [x.kind for x in title[:2]] == ["title", "title"]


def test_an_and_between_authors_read_in_a_column_is_an_author_line() -> None:
    # the short "and" stands right of the left column's edge: centred on the page, not in its column
    title = Piece(190, 731, 423, 743, "COLLAPSED CORES IN GLOBULAR CLUSTERS", 12.0, "CMBX12", True)
    lines = [
        Line([title], page=0, edge=51, far_edge=561),
        line("C. D. Biemesderfer", 258, 665, 346, "CMCSC10", size=9.0),
        line("National Optical Astronomy Observatories, Tucson, AZ 85719", 191, 656, 421, size=8.0),
        line("and", 298, 642, 314, "CMCSC10", size=9.0, column="left", far_edge=295),
        line("R. J. Hanisch", 275, 629, 334, "CMCSC10", size=9.0),
        line("Space Telescope Science Institute, Baltimore, MD 21218", 202, 619, 410, size=8.0),
        line("ABSTRACT", 279, 588, 334),
    ]
    mark_title(lines, BODY)
    assert [x.kind for x in lines[1:6]] == ["furniture"] * 5
    assert lines[6].kind == "text"


def test_numbering_ranks_headings_where_their_type_says_otherwise() -> None:
    # sections in 9 pt capitals, a subsection in 10 pt italic: "3.1" still sits under "3" and beside "4"
    def numbered(number: str, title: str, font: str, size: float, bottom: float) -> Line:
        pieces = [
            Piece(320, bottom, 334, bottom + 9, number, 9.0, "CMR9", False),
            Piece(336, bottom, 460, bottom + size, title, size, font, False),
        ]
        return Line(pieces, page=0, edge=318, far_edge=561, starts=True)

    def body(bottom: float) -> Line:
        return line(
            "It has been realized that helicity amplitudes provide a means for", 318, bottom, 561, starts=True
        )

    lines = [
        numbered("3. ", "HELICITY AMPLITUDES", "CMR8", 8.0, 392),
        body(377),
        numbered("3.1. ", "Formalism", "CMTI10", 10.0, 286),
        body(271),
        numbered("4. ", "FLOATING MATERIAL AND SO FORTH", "CMR8", 8.0, 200),
        body(185),
    ]
    mark_headings(lines, BODY)
    three, sub, four = lines[0], lines[2], lines[4]
    assert [x.kind for x in (three, sub, four)] == ["heading"] * 3
    assert three.level == four.level < sub.level


def test_a_small_centred_references_heading_in_capitals_heads_the_list() -> None:
    lines = [
        line("For completeness, here is one last equation.", 60, 284, 248, starts=True),
        line("REFERENCES", 278, 247, 335, size=8.0),
        line("Auri`ere, M. 1982, A&A, 109, 301", 51, 233, 173, size=8.0, column="left", far_edge=295),
    ]
    mark_headings(lines, BODY)
    assert lines[1].kind == "heading"
    assert lines[2].text.startswith("Aurière")  # TeX's grave accent read as a backquote, joined to its letter


def test_figures_and_tables_set_after_the_reference_list_are_not_entries() -> None:
    def entry(text: str, bottom: float, page: int = 0) -> Line:
        return line(text, 51, bottom, 290, size=8.0, column="left", far_edge=295, page=page)

    heading = line("REFERENCES", 278, 247, 335, size=8.0, kind="heading", level=1)
    caption = line(
        "Fig. A1.\u2014 Derived spectra for 3C138 (see Heiles & Troland 2003). Plots for all sources",
        58,
        767,
        562,
        size=8.0,
        page=1,
        starts=True,
    )
    lines = [
        line("APPENDIX MATERIAL", 248, 466, 368, kind="heading", level=1),
        line("For completeness, here is one last equation.", 60, 284, 248, starts=True),
        heading,
        entry("Peterson, C. J. 1976, AJ, 81, 617", 233),
        entry("Rudnick, G. et al., 2003, ApJ, 599, 847", 224),
        entry("Treu, T. et al., 2003, ApJ, 591, 53", 215),
        caption,
    ]
    paragraphs = _layout_paragraphs(lines, BODY)
    body, bibliography = split_references(paragraphs)
    assert len(bibliography) == 3
    assert all(
        not entry.text.startswith(("Fig.", "Treu, T. et al., 2003, ApJ, 591, 53 Fig"))
        for entry in bibliography.values()
    )
    assert [p.section for p in body if p.text.startswith("Fig. A1")] == ["APPENDIX MATERIAL"]
    assert line_text(caption.pieces).startswith("Fig. A1")
