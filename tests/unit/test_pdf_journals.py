"""Reader rules from journal classes nobody here typeset: AASTeX's emulateapj sample, classicthesis.

Each test builds the lines a page of that kind gives (boxes in PDF points, y up) and checks one rule.
"""

from __future__ import annotations

import dataclasses

import pytest

from citewise.index.citations import split_references
from citewise.index.document import Paragraph
from citewise.index.loaders import _layout_paragraphs
from citewise.index.pdf.furniture import mark_furniture
from citewise.index.pdf.headings import (
    join_wrapped_headings,
    mark_headings,
    mark_title,
    split_run_in_headings,
)
from citewise.index.pdf.lines import Line, Piece, line_text
from citewise.index.pdf.order import reading_order
from citewise.index.pdf.pages import LETTERSPACED, _mark_ruled_notes, _unspaced
from citewise.index.pdf.starts import mark_starts
from citewise.index.tables import Rule

BODY = 10.0


def line(text: str, left: float, bottom: float, right: float, font: str = "CMR10", **kw) -> Line:
    """One line of one piece at 10 points unless told otherwise, on a page whose text runs 51-561."""
    size = kw.pop("size", BODY)
    piece = Piece(left, bottom, right, bottom + size, text, size, font, False)
    return Line(
        [piece], page=kw.pop("page", 0), edge=kw.pop("edge", 51), far_edge=kw.pop("far_edge", 561), **kw
    )


GREEK = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho tau".split()


def body_text(page: int, n: int, left: float = 72, top: float = 600, right: float = 540) -> Line:
    """Line `n` of a page's body text, in words of its own: no line of another page says the same."""
    said = " ".join(GREEK[(page * 5 + n + k) % len(GREEK)] for k in range(8))
    return line(f"Body {said}.", left, top - 14 * n, right, page=page)


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


def test_an_abstract_heading_in_the_small_capitals_of_amsart_heads_the_abstract() -> None:
    lines = [
        line("ABSTRACT", 194, 225, 226, font="CMR6", size=6.0),  # 6 pt capitals over 8 pt text, 10 pt body
        line(
            "This is a test file for ijmart class based on the testmath.tex file from the",
            79,
            212,
            520,
            size=8.0,
        ),
        line("amsmath distribution.", 79, 201, 160, size=8.0),
    ]
    mark_headings(lines, BODY)
    assert [x.kind for x in lines] == ["heading", "text", "text"]


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


def test_letterspaced_capitals_are_read_as_their_words() -> None:
    # classicthesis's spaced capitals: PDFium puts a space between every letter; the glyphs' gaps say
    # which are word spaces (tracking 2.5 points, a word space 5 more)
    glyphs, x = [], 150.0
    for word in ("THE", "ARSCLASSICA", "PACKAGE"):
        for char in word:
            glyphs.append((char, x, x + 9.0))
            x += 11.5
        x += 5.0
    text = " ".join("THE ARSCLASSICA PACKAGE".replace(" ", ""))
    assert LETTERSPACED.fullmatch(text)
    assert _unspaced(text, glyphs, 17.2) == "THE ARSCLASSICA PACKAGE"
    # groff breaks its objects anywhere: "d as a l" ends "invoked" and starts "login", solid type
    solid = [
        ("d", 100.0, 105.0),
        ("a", 108.0, 113.0),
        ("s", 113.0, 117.0),
        ("a", 120.0, 125.0),
        ("l", 128.0, 131.0),
    ]
    assert LETTERSPACED.fullmatch("d as a l") and _unspaced("d as a l", solid, 10.0) == "d as a l"
    assert not LETTERSPACED.fullmatch("A B 1 2")


def test_a_chapters_heading_its_running_heads_repeat_stays_a_heading() -> None:
    # "FUNDAMENTALS" opens chapter 1 in 14.3 points; the chapter's pages repeat "1 fundamentals" in 10.9
    def page(number: int, first: Line) -> list[Line]:
        rest = [
            line(f"Body text of page {number}, line {n}.", 86, 650 - 14 * n, 510, page=number)
            for n in range(6)
        ]
        return [first, *rest]

    heading = line("FUNDAMENTALS", 145, 720, 285, "Iwona-Regular", size=14.3, page=1)
    pages = [page(0, line("The ArsClassica package", 150, 760, 440, page=0)), page(1, heading)]
    pages += [
        page(n, line(f"{n - 1} fundamentals", 86, 770, 177, "TeXPalladioL-SC", page=n)) for n in (2, 3, 4)
    ]
    mark_furniture(pages)
    assert heading.kind == "text"
    assert [p[0].kind for p in pages[2:]] == ["furniture"] * 3


def test_a_foot_in_three_parts_on_one_baseline_is_furniture() -> None:
    # Philosophers' Imprint: the journal's name, "- 2 -" and its volume on the foot's baseline
    def page(number: int) -> list[Line]:
        rest = [body_text(number, n, 86, 650, 510) for n in range(6)]
        foot_at = 63.0 - 1.5 * number  # a point and a half lower on the next page: no place repeats
        foot = [
            line("philosophers\u2019 imprint", 72, foot_at, 187, page=number, size=11.0),
            line(f"- {number + 1} -", 385, foot_at, 403, page=number, size=11.0),
            line("vol. 100, no. 20 (january 2000)", 555, foot_at, 717, page=number, size=11.0),
        ]
        return [*rest, *foot]

    pages = [page(1), page(2)]
    mark_furniture(pages)
    assert [x.kind for p in pages for x in p[-3:]] == ["furniture"] * 6
    assert {x.kind for p in pages for x in p[:-3]} == {"text"}


def test_a_code_block_opening_many_pages_alike_is_no_running_head() -> None:
    # clrscode3e: seven pages open with "\\begin{codebox}" at one height; taken for a running head, it
    # made every page's first line of text a head too, and those lines were lost
    def page(number: int) -> list[Line]:
        first = line("\\begin{codebox}", 72, 707, 160, "Courier", page=number)
        rest = [body_text(number, n, top=690) for n in range(6)]
        return [first, *rest]

    pages = [page(n) for n in range(8)]
    mark_furniture(pages)
    assert {p[0].kind for p in pages} == {"text"}
    # a running head set in typewriter, apart from the text under it (alterqcm is in Consolas throughout)
    pages = [[line("alterqcm manual", 72, 740, 160, "Consolas", page=n), *page(n)[1:]] for n in range(8)]
    mark_furniture(pages)
    assert {p[0].kind for p in pages} == {"furniture"}


def test_words_read_one_by_one_on_a_page_s_last_line_are_no_running_heads() -> None:
    # a bitmap font's text, a piece per word, over the page number: "of" on every page's last line is no foot
    def page(number: int) -> list[Line]:
        body = [body_text(number, n) for n in range(6)]
        said = ["sheets", "of", "paper", "to", ["alpha", "beta", "gamma", "delta"][number]]
        at = (
            7 * number
        )  # the words stand elsewhere on each page (the same words in the same place are a foot)
        words = [
            line(w, 72 + 40 * k + at, 500 - at, 100 + 40 * k + at, page=number) for k, w in enumerate(said)
        ]
        return [*body, *words, line(str(number + 1), 300, 460, 306, page=number)]

    pages = [page(n) for n in range(4)]
    mark_furniture(pages)
    assert {x.kind for p in pages for x in p[:-1]} == {"text"}


def test_numbered_and_lettered_italic_run_in_heads_are_split_off() -> None:
    # aomart: "9.19. " roman, the title in italic, ". Here ..." roman; REVTeX: "a. Note (...)" italic, no stop
    amsart = Line(
        [
            Piece(141, 663, 168, 674, "9.19. ", 10.9, "CMR10", False),
            Piece(169, 663, 252, 674, "Big-g-g delimiters", 10.9, "CMTI10", False),
            Piece(253, 663, 430, 674, ". Here are some big delimiters, first in ", 10.9, "CMR10", False),
        ],
        page=0,
        starts=True,
    )
    revtex = Line(
        [
            Piece(328, 263, 500, 273, "a. Note (Fourth-level head is run in) ", 10, "CMTI10", False),
            Piece(501, 263, 561, 273, "The width-", 10, "CMR10", False),
        ],
        page=0,
        starts=True,
    )
    head, body, lettered, rest = split_run_in_headings([amsart, revtex])
    assert (head.kind, head.text, body.text) == (
        "heading",
        "9.19. Big-g-g delimiters.",
        "Here are some big delimiters, first in",
    )
    assert (lettered.kind, lettered.text) == ("heading", "a. Note (Fourth-level head is run in)")
    assert rest.kind == "text" and rest.starts and rest.text == "The width-"


def test_a_margin_line_number_read_into_its_line_is_taken_off_it() -> None:
    numbers = [line(str(n), 102.5, 690 - 14 * (n - 15), 110.2, size=8.0) for n in range(15, 20)]
    text = [line(f"Body line {n} of the page set in its own type.", 119, 690 - 14 * n, 495) for n in range(5)]
    glued = Line(
        [
            Piece(102.5, 620, 110.2, 628, "20", 8.0, "CMR8", False),
            Piece(
                119.3, 620, 430.5, 631, "and NIH. They acknowledge the generous help", 10.9, "CMR10", False
            ),
        ],
        page=0,
    )
    after = [
        line(f"Body line {n} of the page set in its own type.", 119, 606 - 14 * n, 495) for n in range(3)
    ]
    page = [*numbers, *text, glued, *after]
    mark_furniture([page])
    read = [x for x in page if x.kind == "text"]
    assert any(x.text == "and NIH. They acknowledge the generous help" for x in read)
    assert all(not x.text.startswith("20") for x in read)


def test_a_title_under_a_journals_masthead_and_its_dates_under_the_abstract() -> None:
    # EJP/ECP: a citation line, a DOI, an ISSN and the journal's three-line name over the title; "Submitted
    # to ECP on ..." in small type under the abstract
    small = [
        line("Electron. Commun. Probab. 0 (2020), article no. 0, 1\u201315.", 100, 701, 327, size=8.1),
        line("ELECTRONIC", 403, 698, 464, "BeraSerif-Bold", size=8.1),
        line("https://doi.org/10.1214/YY-TN", 100, 689, 240, size=8.1),
        line("COMMUNICATIONS", 403, 686, 494, "BeraSerif-Bold", size=8.1),
        line("ISSN: 1083-589X", 100, 678, 169, size=8.1),
        line("in PROBABILITY", 403, 675, 479, "BeraSerif-Bold", size=8.1),
    ]
    title = line("Introduction to the ejpecp Class Version 1.11.1", 144, 623, 451, size=12.9)
    dates = line(
        "Submitted to ECP on January 2, 2013, final version accepted on December 13, 2014.",
        125,
        469,
        432,
        size=7.2,
    )
    body = line(
        "The class ejpecp is designed for typesetting of articles for the Electronic Journal",
        114,
        443,
        496,
        size=9.0,
    )
    authors = line("Krzysztof Burdzy Djalil Chafa\u00ef", 199, 596, 397, size=10.8)
    abstract = line(
        "The class ejpecp is designed for typesetting of articles to be published", 124, 529, 471, size=8.1
    )
    lines = [
        *small,
        title,
        authors,
        line("Abstract", 278, 549, 317, "BeraSerif-Bold", size=8.1),
        abstract,
        dates,
        body,
    ]
    mark_title(lines, 9.0)
    assert title.kind == "title"
    assert {x.kind for x in small} == {"furniture"} and dates.kind == "furniture" and body.kind == "text"


def test_an_abstracts_last_line_under_its_indented_first_stays_across_the_columns() -> None:
    abstract = [
        line(
            "An article usually includes an abstract, a concise summary of the work covered at length in the",
            118.3,
            513.5,
            506.7,
            size=9.0,
        ),
        line("main body of the article.", 109.1, 503.1, 208.3, size=9.0),
    ]
    columns = [line(f"Left column line {n} of the body text.", 54, 400 - 12 * n, 299) for n in range(4)]
    columns += [line(f"Right column line {n} of the body text.", 317, 400 - 12 * n, 561) for n in range(4)]
    ordered = reading_order([*abstract, *columns])
    assert [x.column for x in abstract] == ["full", "full"]
    assert ordered[:2] == abstract


def test_a_heading_whose_line_ends_in_a_colon_goes_on_in_its_type_though_not_in_capitals() -> None:
    def bold(text: str, left: float, bottom: float, right: float, level: int) -> Line:
        piece = Piece(left, bottom, right, bottom + 9, text, 9.0, "CMBX9", True)
        return Line([piece], page=0, kind="heading", level=level, edge=51, far_edge=561)

    first = bold("I. FIRST-LEVEL HEADING:", 104, 434, 249, 1)
    second = bold("THE LINE BREAK WAS FORCED via \\\\", 76, 424, 276, 2)
    (joined,) = join_wrapped_headings([first, second])
    assert joined.text == "I. FIRST-LEVEL HEADING: THE LINE BREAK WAS FORCED via \\\\"


def test_a_theorems_bold_label_opens_a_paragraph_and_heads_no_section() -> None:
    theorem = Line(
        [
            Piece(54, 500, 98, 510, "Theorem 1. ", 10, "CMBX10", True),
            Piece(99, 500, 290, 510, "Every bounded sequence has a convergent", 10, "CMTI10", False),
        ],
        page=0,
        starts=True,
    )
    (same,) = split_run_in_headings([theorem])
    assert same.kind == "text" and same.text.startswith("Theorem 1. Every bounded")


def test_an_abstract_in_smaller_type_ends_where_the_papers_text_begins_without_a_heading() -> None:
    lines = [
        line("Abstract", 278, 549, 317, "BeraSerif-Bold", size=8.1, kind="heading", level=1),
        line(
            "The class ejpecp is designed for typesetting of articles.", 124, 529, 471, size=8.1, starts=True
        ),
        line(
            "The class ejpecp is designed for the Electronic Journal of Probability.",
            114,
            443,
            496,
            size=9.0,
            starts=True,
        ),
        line(
            "An easy way to prepare an article is to edit the source file.",
            114,
            383,
            496,
            size=9.0,
            starts=True,
        ),
    ]
    paragraphs = _layout_paragraphs(lines, 9.0)
    assert [p.section for p in paragraphs] == ["Abstract", "", ""]


# round 9 (stop 55): XeTeX's notes, sublabel, GFS Baskerville


def test_a_glyph_kerned_under_the_one_before_starts_no_word() -> None:
    # the XeTeX logo glyph by glyph: PDFium reads "X " before the mirrored E it overlaps
    pieces = [
        Piece(159.2, 649, 166.55, 659, "X ", 9.9, "HoeflerText-Regular", False),
        Piece(165.44, 647, 171.5, 657, "E", 9.9, "HoeflerText-Regular", False),
        Piece(170.13, 649, 177.19, 659, "T", 9.9, "HoeflerText-Regular", False),
    ]
    assert line_text(pieces) == "XET"


def test_a_command_with_an_italic_placeholder_is_code_and_the_text_after_it_starts_afresh() -> None:
    command = Line(
        [
            Piece(148.7, 688, 192, 699, "\\usepackage[", 10.9, "CMTT10", False),
            Piece(192, 688, 232, 699, "options", 10.9, "CMTI10", False),
            Piece(232, 688, 314, 699, "]{sublabel}", 10.9, "CMTT10", False),
        ],
        page=0,
        starts=True,
        edge=121,
        far_edge=474,
    )
    assert command.code
    where = line("where the possible options are:", 121, 669, 268, "CMR10", size=10.9, edge=121, far_edge=474)

    def option(name: str, text: str, bottom: float, right: float) -> Line:
        pieces = [
            Piece(121.5, bottom, 160, bottom + 10.9, f"{name} ", 10.9, "CMTT10", False),
            Piece(161, bottom, right, bottom + 10.9, text, 10.9, "CMR10", False),
        ]
        return Line(pieces, page=0, edge=121, far_edge=474)

    lines = [
        line(
            "The macros in this package are included in the main document with",
            121,
            715,
            474,
            size=10.9,
            starts=True,
            edge=121,
            far_edge=474,
        ),
        command,
        where,
        option("italic", "to have subnumbers as italic lowercase letters (default);", 651, 425),
        option("roman", "to have the subnumbers as Roman lowercase letters, as 4a.", 630, 434),
        line(
            "Alternatively, the name of the package is added as an option to the",
            138,
            611,
            474,
            size=10.9,
            edge=121,
            far_edge=474,
        ),
    ]
    mark_starts(lines, 10.9, "CMR10")
    assert [x.starts for x in lines[2:]] == [True, True, True, True]


def test_a_syntax_line_with_angle_bracketed_placeholders_is_code() -> None:
    # nwejm: "freekey=<value>", the angle brackets from the maths fonts round an italic typewriter word
    pieces = [
        Piece(91, 600, 126, 610, "freekey", 10, "LMMono10-Regular", False),
        Piece(126, 600, 131, 610, "=", 10, "LMMono10-Regular", False),
        Piece(131, 600, 135, 610, "\u27e8", 10, "KpMath-Regular", False),
        Piece(135, 600, 160, 610, "value", 10, "LMMono10-Italic", False),
        Piece(160, 600, 164, 610, "\u27e9", 10, "KpMath-Regular", False),
    ]
    assert Line(pieces, page=0).code
    prose = [Piece(91, 600, 200, 610, "then it is documented as ", 10, "KpRoman-Regular", False), *pieces[2:]]
    assert not Line(prose, page=0).code


def test_bold_terms_of_a_list_one_to_a_line_each_start_an_item() -> None:
    def term(word: str, text: str, bottom: float) -> Line:
        pieces = [
            Piece(65, bottom, 65 + 6 * len(word), bottom + 10, f"{word} ", 10, "KpRoman-Bold", True),
            Piece(66 + 6 * len(word), bottom, 520, bottom + 10, text, 10, "KpRoman-Regular", False),
        ]
        return Line(pieces, page=0, edge=65, far_edge=520)

    lines = [
        line(
            "The default and initial values of a key indicate the value of the key:",
            65,
            400,
            520,
            starts=True,
        ),
        term("by default", "i.e. when the key is used alone i.e. without any explicit value imputed;", 386),
        term("initially", "i.e. when the key is not used, whatever the document says elsewhere of it.", 372),
    ]
    for x in lines:
        x.edge, x.far_edge = 65, 520
    mark_starts(lines, BODY, "KpRoman-Regular")
    assert lines[2].starts  # after a full line that opened with a bold term and ended with ";"


def test_a_short_line_on_a_later_pages_number_baseline_is_its_running_head() -> None:
    greek = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho tau"
    words = greek.split()

    def body(page: int, n: int) -> Line:
        said = " ".join(words[(page * 6 + n + k) % len(words)] for k in range(8))
        return line(f"Body {said}.", 121, 700 - 14 * n, 474, page=page)

    pages = [
        [
            line("A Package to Subnumber LaTeX Counters", 122, 730, 473, size=17.2),
            *[body(0, n) for n in range(6)],
        ],
        [
            line("2", 121, 737, 126, page=1),
            line("P. W. Daly", 421, 737, 475, "CMSL10", page=1),
            *[body(1, n) for n in range(6)],
        ],
        [
            line("SUBNUMBERING FIGURES, TABLES, EQUATIONS", 121, 737, 330, page=2),
            line("3", 470, 737, 475, page=2),
            *[body(2, n) for n in range(6)],
        ],
    ]
    mark_furniture(pages)
    assert [pages[1][1].kind, pages[2][0].kind] == ["furniture", "furniture"]
    assert all(x.kind == "text" for page in pages for x in page if x.text.startswith("Body"))


def test_notes_under_a_footnote_rule_in_the_page_s_own_type_are_notes_by_their_marks() -> None:
    # ijmart's title page: everything small, the notes in the contents' 9 pt, each after its symbol mark
    lines = [
        line(
            "This is a test file for ijmart class based on the testmath.tex file from the",
            79,
            220,
            520,
            size=8.0,
        ),
        line("1. Introduction . . . . . . . . . . . . . . . . . . . . 2", 84, 143, 520, size=9.0),
        line("\u2217 Version 2.0, 1999/11/15", 53, 128, 180, size=9.0),
        line("\u2217\u2217 Even e-mail addresses can have footnotes!", 49, 115, 260, size=9.0),
        line("\u2020 This is the copyright owner of the style", 53, 103, 250, size=9.0),
        line("Received on MONTH, YEAR", 60, 64, 200, size=9.0),
    ]
    for x in lines:
        x.kind = "text"
    rule = Rule(left=42.6, bottom=139.4, right=187.4, top=140.2)
    _mark_ruled_notes(lines, [rule])
    assert [x.kind for x in lines] == ["text", "text", "note", "note", "note", "note"]
    numbered = [
        line(f"{n}. An item of a numbered list under a short rule", 53, 140 - 12 * n, 300, size=9.0)
        for n in range(1, 4)
    ]
    for x in numbered:
        x.kind = "text"
    _mark_ruled_notes(lines[:2] + numbered, [rule])
    assert {x.kind for x in numbered} == {"text"}  # a number is no mark of its own: a list is not notes


# stop 58: REVTeX 4.1's AIP sample, an author-year list in small type with no heading


def test_an_unheaded_author_year_list_in_small_type_closing_a_column_is_the_reference_list() -> None:
    from citewise.index.pdf.furniture import mark_notes_and_equations

    right = {"column": "right", "edge": 317, "far_edge": 562}
    entries = [  # (first line, its right end, the lines hung under it), 8 pt, surnames in order
        (
            "Agarwal, A. G., \u201cProceedings of the Fifth Low Temperature Con-",
            561,
            ["ference, Madison, WI, 1999,\u201d Semiconductors 66, 1238 (2001)."],
        ),  # noqa: E501
        (
            "Berman, Jr., G. P. and Izrailev, Jr., F. M., \u201cStability of nonlinear",
            561,
            ["modes,\u201d Physica D 88, 445 (1983)."],
        ),  # noqa: E501
        (
            "Birell, N. D. and Davies, P. C. W., Quantum Fields in Curved",
            562,
            ["Space (Cambridge University Press, 1982)."],
        ),  # noqa: E501
        (
            "Burstyn, Y., \u201cProceedings of the 5th International Molecular",
            561,
            ["Epitaxy Conference, Santa Fe, NM,\u201d (2004), (unpublished)."],
        ),  # noqa: E501
        ("Feynman, R. P., Phys. Rev. 94, 262 (1954).", 478, []),
        ("Fields, W. K., ECE Report No. AL944 (2005) required institution", 561, ["missing."]),
        (
            "T\u00e9rrific, Tom, \u201cAn O(n log n/log log n) sorting algorithm,\u201d Wish-",
            561,
            ["ful Research Result 7 (Fanstord University, 1988)."],
        ),  # noqa: E501
    ]
    lines = [
        line("Note the equation numbers in this appendix, produced with the", 317, 260, 561, **right),
        line("They turn out to be Eqs. (B2a), (B2b), and (B2c).", 317, 248, 538, **right),
    ]
    y = 232.0
    for first, end, hung in entries:
        lines.append(line(first, 317.4, y, end, size=8.0, **right))
        for text in hung:
            y -= 9.5
            lines.append(line(text, 327.3, y, 520, size=8.0, **right))
        y -= 9.5
    mark_notes_and_equations(lines, BODY)
    assert {x.kind for x in lines} == {"text"}  # no footnotes: entries, each dated, surname first
    mark_starts(lines, BODY, "CMR10")
    body, bibliography = split_references(_layout_paragraphs(lines, BODY))
    assert [p.text for p in body] == [
        "Note the equation numbers in this appendix, produced with the They turn out to be Eqs. (B2a), "
        "(B2b), and (B2c)."
    ]
    assert list(bibliography) == [
        "agarwal1999", "berman1983", "birell1982", "burstyn2004", "feynman1954", "fields2005", "terrific1988",
    ]  # fmt: skip
    assert bibliography["feynman1954"].text == "Feynman, R. P., Phys. Rev. 94, 262 (1954)."
    assert bibliography["fields2005"].text.endswith("required institution missing.")


def test_author_lines_out_of_order_at_a_documents_end_are_no_reference_list() -> None:
    # five paragraphs opening "Surname, I." with years, but not alphabetical: a list of people, not entries
    names = ["Smith, J., 2001, chair.", "Brown, A., 2002, treasurer.", "Young, K., 2003, editor."]
    paragraphs = [
        Paragraph("The society thanks its officers of the last three years.", "Thanks"),
        *(Paragraph(text, "Thanks") for text in [*names, "Adams, B., 2004, secretary.", "Lee, C., 1999."]),
    ]
    body, bibliography = split_references(paragraphs)
    assert bibliography == {}
    assert body == paragraphs


def test_a_theorems_label_on_a_line_of_its_own_heads_no_section() -> None:
    # quantumarticle's template: "Theorem 2 (One citation per bibitem)" in bold over its statement, in a
    # section whose later paragraphs it had taken under it
    lines = [
        line("2.1 References and footnotes", 308, 600, 480, "LMSans10-Bold", kind="heading", level=2),
        line("Citations to other works should appear in the references.", 319, 580, 538),
        line("Theorem 2 (One citation per bibitem)", 308, 560, 515, "LMRoman10-Bold"),
        line("Important: If you are formatting your bibliography manually, please", 308, 546, 538),
        line("3 Plots", 308, 500, 360, "LMSans10-Bold", size=14.0),
    ]
    for x in lines:
        x.pieces[0].bold = x.pieces[0].font.endswith("Bold")
    mark_headings(lines, BODY)
    assert [x.kind for x in lines] == ["heading", "text", "text", "text", "heading"]


def test_a_bold_line_filling_its_column_that_opens_with_a_capital_letter_goes_on_with_its_sentence() -> None:
    # OCR's measured weight made bold "E or Mode O, corresponding to ..." in a paragraph: a letter and a
    # word in lower case is no appendix's "E Proofs", and a line running its column's width is text
    above = line("players. Its internal structure is a periodic cam with Mode", 312, 609, 562, edge=312)
    going_on = Line(
        [Piece(312, 597, 562, 607, "E or Mode O, corresponding to the Arm x3 and Arm 24", BODY, "OCR", True)],
        page=0,
        edge=312,
        far_edge=562,
    )
    below = line("and essentially both follows multi-points distribution shown in", 312, 585, 562, edge=312)
    appendix = Line(
        [Piece(312, 540, 420, 550, "E Proofs of the lemmas", BODY, "CMBX10", True)], page=0, edge=312
    )
    lines = [above, going_on, below, appendix, line("The proofs run as follows.", 312, 525, 562, edge=312)]
    mark_headings(lines, BODY)
    assert [x.kind for x in lines] == ["text", "text", "text", "heading", "text"]


def test_a_numbered_line_read_by_ocr_centred_in_its_column_is_a_subsection() -> None:
    # AASTeX's italic "1.1. Contrastive representation learning": OCR reads no italic; centred and numbered,
    # it is no line of the paragraph; a numbered line of text flush with the edge stays text
    lines = [
        line("1. INTRODUCTION", 260, 450, 353, "OCR"),
        line(
            "Contrastive learning has become a popular approach for representation learning in",
            60,
            430,
            561,
            "OCR",
        ),
        line("1.1. Contrastive representation learning", 220, 400, 394, "OCR"),
        line(
            "The InfoNCE loss is widely used across modalities and tasks of many kinds and sizes.",
            60,
            380,
            561,
            "OCR",
        ),
        line("2. the second item of a list set flush with the text", 60, 366, 400, "OCR"),
    ]
    lines[0].pieces[0].bold = True
    mark_headings(lines, BODY)
    assert [x.kind for x in lines] == ["heading", "text", "heading", "text", "text"]
    assert lines[0].level < lines[2].level
    # a reference's lines in a column 306-548: one hanging an em in, one near the middle but of numbers
    entries = [
        line("Jun Li and Gang Tian, Virtual moduli cycles and Gromov-Witten", 306, 386, 548, "OCR", edge=306),
        line("17 (2019), no. 3, 703-752. MR 4022212", 319, 376, 480, "OCR", edge=306, far_edge=548),
        line(
            "J. Algebraic Geom. 8 (1999), no. 3, 529-541. MR 1689355",
            319,
            366,
            532,
            "OCR",
            edge=306,
            far_edge=548,
        ),
    ]
    mark_headings(entries, BODY)
    assert [x.kind for x in entries] == ["text"] * 3


def test_a_heading_word_read_by_ocr_inside_a_run_of_its_face_heads_what_follows() -> None:
    # elsarticle's bold "Abstract" read by OCR in the face of the authors above it and the abstract under it
    texts = [
        ("Hriday Bavle, Jose Luis Sanchez-Lopez, Muhammad Shaheer, Javier Civera", 112, 499),
        ("and Holger Voos", 263, 347),
        ("Abstract", 111, 162),
        ("In this paper, we present an evolved version of the Situational Graphs, which", 111, 499),
        ("jointly models in a single optimizable factor graph, a SLAM graph, as a set.", 111, 499),
    ]
    tops = [598, 583, 517, 494, 479]  # as the page sets them: room over and under the heading word
    lines = [
        line(t, left, y, right, "OCR", edge=111, far_edge=499)
        for (t, left, right), y in zip(texts, tops, strict=True)
    ]
    mark_headings(lines, BODY)
    assert [x.kind for x in lines] == ["text", "text", "heading", "text", "text"]


def test_an_abstract_run_in_read_by_ocr_heads_the_abstract_and_an_unstopped_one_does_not() -> None:
    # llncs's bold "Abstract." opening the abstract's first line: OCR's words have no weight to tell it by
    def opening(*words: str) -> Line:
        pieces = [
            Piece(163 + 60 * k, 599, 220 + 60 * k, 608, w, 9.0, "OCR", False) for k, w in enumerate(words)
        ]
        return Line(pieces, page=0, starts=True)

    head, body, plain = split_run_in_headings(
        [opening("Abstract.", "Inter-modal", "interaction"), opening("Abstract", "art", "is", "old.")]
    )
    assert (head.kind, head.text, body.kind, body.text) == (
        "heading",
        "Abstract.",
        "text",
        "Inter-modal interaction",
    )
    assert plain.kind == "text" and plain.text.startswith("Abstract art")


def test_ieee_s_abstract_glued_to_its_text_and_a_long_lettered_subsection_read_by_ocr_are_headings() -> None:
    def ocr_line(words: str, left: float, bottom: float, right: float) -> Line:
        return line(words, left, bottom, right, "OCR", edge=48, far_edge=300)

    (head, body) = split_run_in_headings(
        [
            dataclasses.replace(
                ocr_line("Abstract—The open N=2 string theory is defined on the four-", 58, 642, 300),
                starts=True,
            )
        ]
    )
    assert (head.kind, head.text, body.text) == (
        "heading",
        "Abstract—",
        "The open N=2 string theory is defined on the four-",
    )
    # IEEE's italic "A. Darboux Transformation for the Yang Equation", most of its column wide, with room
    # over it and an indented paragraph under it
    lines = [
        ocr_line("Yang equation which are constructed by applying the Darboux", 49, 491, 300),
        ocr_line("transformation [14, 15].", 49, 479, 146),
        ocr_line("A. Darboux Transformation for the Yang Equation", 48, 451, 257),
        ocr_line("Let us assume that x, in this subsection. The Yang equation", 59, 436, 300),
        ocr_line("can be rewritten as the following differential equation, and", 49, 424, 299),
        ocr_line("B. Bianchi identities and the field equations of the model.", 48, 412, 280),
        ocr_line("so on for the remaining cases of the equation in the text.", 59, 400, 299),
    ]
    mark_headings(lines, BODY)
    assert [x.kind for x in lines] == ["text", "text", "heading", "text", "text", "text", "text"]


def test_a_display_of_big_operators_in_the_tx_fonts_is_no_heading() -> None:
    # elstest-5p sets its integrals and sums in txex and txsy, which PDFium reads as bold: "X∞ Z" headed seven
    # paragraphs of section 2
    display = Line(
        [Piece(309, 133, 320, 147, "X", BODY, "ABCDEF+txex", True),
         Piece(321, 133, 330, 140, "∞", 7.0, "txsy", True),
         Piece(335, 133, 347, 147, "Z", BODY, "txex", True)],
        page=0,
        edge=307,
        far_edge=566,
    )  # fmt: skip
    lines = [
        line(
            "where the coupling is summed over all the modes of the field",
            307,
            160,
            566,
            edge=307,
            far_edge=566,
        ),
        display,
        line(
            "and the sum runs over the guided modes only, as shown before.",
            307,
            110,
            566,
            edge=307,
            far_edge=566,
        ),
    ]
    mark_headings(lines, BODY)
    assert [x.kind for x in lines] == ["text", "text", "text"]
    assert (
        all(p.math for p in display.pieces)
        and not Piece(0, 0, 1, 1, "a", BODY, "NimbusRomNo9L-Medi", True).math
    )


def test_a_display_read_by_ocr_with_its_number_at_its_end_is_an_equation() -> None:
    # no maths font tells a scanned display; its number ends it, a bracket read after it: "(1)]"
    from citewise.index.pdf.furniture import mark_notes_and_equations

    lines = [
        line("f(a)=Sousoe+/ g(t)ddt (1)]", 246, 630, 367, "OCR"),
        line("The main contributions of the present paper are:", 60, 607, 561, "OCR"),
        line("where we set x = 2 as in (3).", 60, 595, 300, "OCR"),
    ]
    mark_notes_and_equations(lines, BODY)
    assert [x.kind for x in lines] == ["equation", "text", "text"]


def test_a_numbered_title_in_a_sans_serif_face_over_a_serif_body_is_a_heading() -> None:
    # expex's "1.2. LaTex/Tex cooperation" and "1.2.1 Note to LaTex users" in NimbusSanL at the body's size
    # and weight, one under the other over serif text; a numbered list item in the serif body stays text
    def serif(text: str, bottom: float) -> Line:
        return line(text, 72, bottom, 540, "NimbusRomNo9L-Regu", size=12.0)

    lines = [
        serif("6. Center alignment is now an option for glosses, which can be centered.", 700),
        serif("7. ExPex example numbering is now compatible with the LaTex mechanism.", 686),
        line("1.2. LaTex/Tex cooperation", 72, 660, 230, "NimbusSanL-Regu", size=12.0),
        line("1.2.1 Note to LaTex users", 72, 640, 220, "NimbusSanL-Regu", size=12.0),
        serif("ExPex is designed to be used by either Plain Tex or LaTex users, who will find", 620),
        serif("that it works the same way in both of them, with a few exceptions noted here.", 606),
        serif("Three macros are used in the examples in this documentation which are defined.", 592),
    ]
    mark_headings(lines, 12.0)
    assert [x.kind for x in lines] == ["text", "text", "heading", "heading", "text", "text", "text"]


def test_a_quotation_s_source_in_small_capitals_flush_right_is_no_heading() -> None:
    # epigraph's manual: "Letters on a Regicide Peace" in italic and "Edmund Burke" in small capitals, set
    # flush right under the quotation; a small-capitals heading at the left edge still heads its section
    lines = [
        line("Example is the school of mankind, and they will learn at no other.", 300, 640, 507, "CMTI9",
             size=9.0, edge=154, far_edge=507),
        line("Letters on a Regicide Peace", 396, 628, 507, "CMTI9", size=9.0, edge=154, far_edge=507),
        line("Edmund Burke", 440, 617, 507, "CMCSC10", size=9.0, edge=154, far_edge=507),
        line("The commands described in this section apply to both the epigraph commands.", 154, 590, 507,
             edge=154, far_edge=507),
        line("Examples of use", 154, 560, 240, "CMCSC10", edge=154, far_edge=507),
        line("The epigraph at the start of this section can be specified as shown here.", 154, 545, 507,
             edge=154, far_edge=507),
    ]  # fmt: skip
    mark_headings(lines, BODY)
    assert [x.kind for x in lines] == ["text", "text", "text", "text", "heading", "text"]


@pytest.mark.parametrize("word", ["Zusammenfassung", "Resumo", "Sommario"])
def test_an_abstract_in_another_language_under_the_title_block_is_its_heading_and_text_not_author_lines(
    word: str,
) -> None:
    # labbook's manual: title, author and date centred, then "Zusammenfassung" in 9 pt bold over the
    # abstract in 9 pt, indented on both sides (so centred too): the author block ends at the heading word
    # (abntex2's Portuguese sample: "Resumo")
    def at(
        text: str, left: float, bottom: float, right: float, size: float, font: str = "LMRoman9-Regular"
    ) -> Line:
        return line(text, left, bottom, right, font, size=size, edge=125, far_edge=468)

    lines = [
        at("labbook.cls, eine LATEX-Klasse zum Führen von", 134, 700, 459, 17.2, "LMRoman17-Regular"),
        at("Frank Küster", 263, 660, 330, 12.0, "LMRoman12-Regular"),
        at("2003-05-20", 270, 640, 324, 12.0, "LMRoman12-Regular"),
        Line([Piece(255, 610, 339, 619, word, 9.0, "LMRoman9-Bold", True)], page=0, edge=125,
             far_edge=468),
        at("Diese Klasse soll es ermöglichen, Laborbücher mit chronologischen", 164, 596, 443, 9.0),
        at("Aufzeichnungen über Experimente mit LATEX zu führen. Die neuen Sei-", 150, 585, 443, 9.0),
        at("Dokumentation, wird daher sehr empfohlen.", 150, 574, 327, 9.0),
        at("Die Führung von Laborbüchern ist teilweise gesetzlich geregelt, oft stellen In-", 125, 540, 468,
           10.0, "LMRoman10-Regular"),
    ]  # fmt: skip
    mark_title(lines, BODY)
    mark_headings(lines, BODY)
    assert [x.kind for x in lines] == [
        "title",
        "furniture",
        "furniture",
        "heading",
        "text",
        "text",
        "text",
        "text",
    ]


def test_a_heading_broken_mid_word_over_two_lines_is_one_heading_whatever_its_lines_weights_read() -> None:
    # labbook: "3.1 \experiment und \subexperiment: Einfache Verwen-" (its commands in typewriter, so its
    # letters are not mostly bold) over "dung" in bold
    first = Line(
        [Piece(125, 600, 150, 612, "3.1", 12.0, "LMRoman12-Bold", True),
         Piece(155, 600, 250, 612, "\\experiment und \\subexperiment:", 12.0, "LMMono12-Regular", False),
         Piece(255, 600, 468, 612, "Einfache Verwen-", 12.0, "LMRoman12-Bold", True)],
        page=0, kind="heading", level=2, edge=125, far_edge=468,
    )  # fmt: skip
    second = Line([Piece(156, 586, 184, 598, "dung", 12.0, "LMRoman12-Bold", True)], page=0, kind="heading",
                  level=2, edge=125, far_edge=468)  # fmt: skip
    (joined,) = join_wrapped_headings([first, second])
    assert joined.text == "3.1 \\experiment und \\subexperiment: Einfache Verwendung"


def test_a_title_s_smaller_line_under_it_opening_with_a_joining_word_is_part_of_it() -> None:
    # expex's title page: "ExPex" in 97 points over "for linguists" in 36, the same font; the author's name
    # under them in that font stays out
    lines = [
        line("ExPex", 150, 600, 450, "NimbusRomNo9L-Regu", size=97.0, edge=72, far_edge=540),
        line("for linguists", 200, 540, 400, "NimbusRomNo9L-Regu", size=35.9, edge=72, far_edge=540),
        line("John Frampton", 250, 480, 350, "NimbusRomNo9L-Regu", size=15.9, edge=72, far_edge=540),
    ]
    mark_title(lines, BODY)
    assert [x.kind for x in lines] == ["title", "title", "furniture"]


def test_a_subtitle_in_a_smaller_display_size_under_a_title_is_part_of_it_but_not_the_authors() -> None:
    # textopo's title page: the title in 20.7 points, its subtitle over two lines in 14.3, then (further
    # down) the author and the version in that size too
    def display(text: str, left: float, bottom: float, right: float, size: float = 14.3) -> Line:
        return line(text, left, bottom, right, "CMR12", size=size, edge=72, far_edge=540)

    lines = [
        display("The TEXtopo package", 209, 643, 390, size=20.7),
        display("for shaded membrane protein", 210, 623, 390),
        display("topology plots", 256, 605, 348),
        display("Eric Beitz", 269, 569, 334),
        display("v1.5; 2011/06/02", 248, 540, 351),
        line("Body text of the manual opens here with a sentence.", 72, 462, 540, size=12.0),
    ]
    mark_title(lines, 12.0)
    assert [x.kind for x in lines[:5]] == ["title", "title", "title", "furniture", "furniture"]
    # a paper's author list under its title, in a display size, stays out; so does a heading with its text
    paper = [
        line("A Study of Things", 200, 700, 400, size=17.3, edge=72, far_edge=540),
        line("Jane Doe and John Smith", 220, 680, 380, size=12.0, edge=72, far_edge=540),
        line("University of Somewhere", 220, 666, 380, size=12.0, edge=72, far_edge=540),
    ]
    mark_title(paper, BODY)
    assert [x.kind for x in paper] == ["title", "furniture", "furniture"]
    heading = [
        line("A Manual", 250, 700, 350, size=20.7, edge=72, far_edge=540),
        line("getting started with it", 220, 680, 380, size=14.3, edge=72, far_edge=540),
        line("This manual explains how to install and use the package on any system at all.", 72, 660, 540),
    ]
    mark_title(heading, BODY)
    assert heading[1].kind != "title"  # nothing of a title block under it: not a subtitle


def test_lines_numbered_one_under_another_in_larger_type_are_a_list_not_headings() -> None:
    # biblatex-chicago's legal sample: a numbered list in 12 pt over footnotes in 10 pt that hold more text
    # (so they are the body); each item was a heading, and the items were joined into one
    def item(text: str, bottom: float, right: float, left: float = 88) -> Line:
        return line(text, left, bottom, right, "GentiumPlus", size=12.0, edge=72, far_edge=526)

    lines = [
        line("Long note forms", 72, 773, 173, "GentiumPlus-Bold", size=14.3, edge=72, far_edge=526),
        item("1. Federal case, with a Supreme Court case in running text", 751, 526),
        item("2. Database case", 735, 169),
        item("3. Lower federal-court case (with Supreme Court action)", 720, 364),
        item("4. State case with 2 reporters", 704, 232),
        line("Short note forms", 73, 670, 178, "GentiumPlus-Bold", size=14.3, edge=72, far_edge=526),
        item("1. Introduction", 640, 170),
    ]
    mark_headings(lines, BODY)
    assert [x.kind for x in lines] == ["heading", "text", "text", "text", "text", "heading", "heading"]
