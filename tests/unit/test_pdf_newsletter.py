"""Reader rules from LaTeX News' two-column newsletter (ltnews26, round 23 of bench/data/manuals.json).

Each test builds the lines its first page gives (boxes in PDF points, y up, Latin Modern at 10 points) and
checks one rule.
"""

from __future__ import annotations

from citewise.index.pdf.furniture import mark_contents, mark_notes_and_equations
from citewise.index.pdf.headings import mark_headings, mark_title
from citewise.index.pdf.lines import Line, Piece, line_text
from citewise.index.pdf.starts import mark_starts

ROMAN = "LMRoman10-Regular"


def line(text: str, left: float, bottom: float, right: float, **kw) -> Line:
    """One line of one piece in the body's face at 10 points unless told otherwise, in the left column."""
    size, font = kw.pop("size", 10.0), kw.pop("font", ROMAN)
    piece = Piece(left, bottom, right, bottom + size, text, size, font, "Bold" in font)
    column = kw.pop("column", "left")
    edge, far_edge = (309.0, 553.0) if column == "right" else (44.0, 288.0)
    return Line([piece], page=0, column=column, edge=edge, far_edge=far_edge, **kw)


def test_a_heading_may_open_with_a_symbol_from_the_maths_fonts() -> None:
    # "ε-TEX" in the headings' sans oblique, its epsilon from the maths italic: no lower-case word going on
    heading = Line(
        [
            Piece(44, 413, 49, 425, "ε", 12.0, "LMMathItalic12-Regular", False),
            Piece(49, 413, 72, 425, "-TEX", 12.0, "LMSans12-Oblique", False),
        ],
        page=0,
        column="left",
        edge=44,
        far_edge=288,
    )
    lines = [
        heading,
        line("In LATEX News 16 (December 2003) the team announced", 44, 395, 288),
        line("that users will have it available but had not revisited", 44, 383, 288),
    ]
    mark_headings(lines, 10.0)
    assert heading.kind == "heading"
    # a line opening with a lower-case letter in a text font still goes on from what stands above it
    words = [line("ε-tex in lower case set larger", 44, 300, 200, size=12.0, font="LMSans12-Oblique")]
    mark_headings([*lines[1:], *words], 10.0)
    assert words[0].kind == "text"


def test_a_contents_entry_wrapped_over_two_lines_is_kept_out_with_the_others() -> None:
    bold = "LMRoman10-Bold"
    entries = [
        line("Default encodings in XeLaTeX 1", 44, 580, 288, font=bold),
        line("The fixltx2e package 2", 44, 558, 288, font=bold),
        line("The latexbug package 2", 44, 535, 288, font=bold),
        line("An addendum to the release changes in 2015:", 44, 445, 272, font=bold),
        line("page breaks and vertical spacing 2", 59, 433, 288, font=bold),
    ]
    headings = [
        line(text, 309, 600 - 20 * n, 500, kind="heading", column="right")
        for n, text in enumerate(
            [
                "Default encodings in XeLaTeX",
                "The fixltx2e package",
                "The latexbug package",
                "An addendum to the release changes in 2015: page breaks and vertical spacing",
            ]
        )
    ]
    mark_contents([*entries, *headings])
    assert [entry.kind for entry in entries] == ["contents"] * 5
    assert all(heading.kind == "heading" for heading in headings)


def test_the_text_after_a_quotation_starts_a_paragraph_though_its_sentence_goes_on() -> None:
    lines = [
        line("In LATEX News 16 (December 2003) the team announced", 44, 395, 262),
        line("We expect that within the next two years,", 79, 375, 262),
        line("releases of LATEX will change modestly in order", 64, 363, 268),
        line("to run best under an extended TEX engine", 64, 351, 250),
        line("or pdfTEX.", 64, 328 + 12, 111),
        line("and also said", 44, 328, 101),
        line("For many years the team have worked on the basis", 54, 316, 279),
        line("that users will have it available but had not revisited", 44, 304, 288),
        line("the above statements formally. As of the January 2017", 44, 292, 285),
        line("release, it is required to build the format, and", 44, 280, 288),
        line("attempting to build a format without it will fail.", 44, 268, 230),
    ]
    mark_starts(lines, 10.0, ROMAN)
    assert [x.text for x in lines if x.starts] == [
        "In LATEX News 16 (December 2003) the team announced",
        "We expect that within the next two years,",
        "and also said",
        "For many years the team have worked on the basis",
    ]


def test_a_small_line_across_the_page_s_foot_under_two_columns_is_a_note() -> None:
    left = [line(f"left column line {n} of the body text here", 44, 400 - 12 * n, 288) for n in range(6)]
    right = [
        line(f"right column line {n} of the body text", 309, 400 - 12 * n, 553, column="right")
        for n in range(5)
    ]
    copyright = "LATEX News, and the LATEX software, are brought to you by the LATEX Project Team"
    foot = line(copyright, 44, 36, 493, size=8.0, font="LMRoman8-Regular", column="full")
    mark_notes_and_equations([*left, *right, foot], 10.0)
    assert foot.kind == "note"
    assert all(x.kind == "text" for x in [*left, *right])
    # a caption across the page's foot is the figure's, and so is content
    caption = line(
        "Figure 3: Read times per page.", 44, 36, 493, size=8.0, font="LMRoman8-Regular", column="full"
    )
    mark_notes_and_equations([*left, *right, caption], 10.0)
    assert caption.kind == "text"


def test_an_issue_s_date_set_flush_under_the_title_is_no_paragraph() -> None:
    title = line("LATEX News", 45, 713, 163, size=24.8, font="LMRoman17-Regular")
    date = line("Issue 26, January 2017", 44, 683, 143)
    heading = line("Contents", 45, 627, 88, size=12.0, font="LMSans12-Oblique")
    text = line("In LATEX News 16 (December 2003) the team announced", 44, 395, 288)
    mark_title([title, date, heading, text], 10.0)
    assert (title.kind, date.kind, text.kind) == ("title", "furniture", "text")


def test_the_logos_mirrored_e_kerned_under_the_x_joins_its_word() -> None:
    pieces = [
        Piece(319.1, 418.4, 346.5, 428.4, "The X ", 10.0, ROMAN, False),
        Piece(346.0, 416.3, 352.2, 426.2, "E", 10.0, ROMAN, False),
        Piece(351.6, 418.4, 357.0, 428.4, "L", 10.0, ROMAN, False),
        Piece(354.2, 421.2, 359.4, 428.2, "A", 7.0, "LMRoman7-Regular", False),
        Piece(358.6, 418.4, 365.1, 428.4, "T", 10.0, ROMAN, False),
        Piece(364.1, 416.3, 370.3, 426.2, "E", 10.0, ROMAN, False),
        Piece(369.6, 418.4, 422.3, 428.4, "X and LuaL", 10.0, ROMAN, False),
    ]
    assert line_text(pieces) == "The XELATEX and LuaL"
    # a piece's own space before the next word, which stands a space's width right of it, stays
    spaced = [Piece(44, 400, 98, 410, "The journal ", 10.0, ROMAN, False)]
    spaced.append(Piece(98.5, 400, 130, 410, "Monthly", 10.0, "LMRoman10-Italic", False))
    assert line_text(spaced) == "The journal Monthly"
