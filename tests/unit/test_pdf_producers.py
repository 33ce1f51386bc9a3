"""Reader rules from more producers: Word with Chinese text, LibreOffice's notes, TeX's run-in heads.

Each test builds the lines a page of that kind gives (boxes in PDF points, y up) and checks one rule.
"""

from __future__ import annotations

import pytest

from citewise.index.loaders import _joined
from citewise.index.pdf import body_face
from citewise.index.pdf.furniture import _mark_headlines, mark_contents, mark_furniture
from citewise.index.pdf.headings import (
    join_wrapped_headings,
    mark_headings,
    mark_title,
    split_run_in_headings,
)
from citewise.index.pdf.lines import BOLD_FONT, OMS_LETTERS, Line, Piece, group_lines, line_text
from citewise.index.pdf.order import reading_order
from citewise.index.pdf.pages import _copyright_signs
from citewise.index.pdf.starts import mark_starts

BODY = "TimesNewRomanPSMT"


def line(text: str, left: float, bottom: float, right: float | None = None, **kw) -> Line:
    """One line of one piece, in the body's face at 11 points unless told otherwise."""
    size, font = kw.pop("size", 11.0), kw.pop("font", BODY)
    right = left + 0.45 * size * len(text) if right is None else right
    piece = Piece(left, bottom, right, bottom + size, text, size, font, bool(BOLD_FONT.search(font)))
    return Line(
        [piece], page=kw.pop("page", 0), edge=kw.pop("edge", 90), far_edge=kw.pop("far_edge", 505), **kw
    )


def test_a_sections_bold_symbol_is_bold_and_the_run_in_head_is_split_off() -> None:
    # "§1. Annotation. Nath is ...": the section sign in Computer Modern's bold symbols, the rest in CMBX
    assert BOLD_FONT.search("LHPGFE+CMBSY10") and BOLD_FONT.search("CMB10")
    pieces = [
        Piece(134, 580, 140, 590, "§", 10, "CMBSY10", True),
        Piece(140, 580, 205, 590, "1. Annotation. ", 10, "CMBX10", True),
        Piece(205, 580, 476, 590, "Nath is a LaTeX style to separate presentation", 10, "CMR10", False),
    ]
    head, body = split_run_in_headings([Line(pieces, page=0, starts=True)])
    assert (head.kind, head.text) == ("heading", "§1. Annotation.")
    assert body.text.startswith("Nath is")


def test_a_note_label_opens_its_paragraph_and_heads_no_section() -> None:
    note = Line(
        [
            Piece(108, 678, 130, 688, "Note: ", 10, "Arial-BoldMT", True),
            Piece(131, 678, 478, 689, "the current version of the editor does not handle", 11, BODY, False),
        ],
        page=0,
        starts=True,
        edge=90,
        far_edge=505,
    )
    (same,) = split_run_in_headings([note])
    assert same.kind == "text" and same.text.startswith("Note: the current")


def test_lines_of_a_block_set_ragged_and_narrower_than_the_column_run_on() -> None:
    # LibreOffice's indented abstract: its first line ends 41 points short of the block's right edge, too
    # little for "converting"; the block's later lines at its own edge, the last one short
    lines = [
        line("TECkit is a toolkit for encoding conversions, primarily intended for", 126, 582, 426),
        line("converting data between 8-bit legacy encodings and Unicode. This document", 126, 570, 467),
        line("presents the mapping description language supported by the TECkit mapping", 126, 558, 467),
        line("table compiler.", 126, 546, 192),
        line("The TECkit package is based on a compiled binary mapping file that contains", 90, 487, 479),
    ]
    mark_starts(lines, 11.0, BODY)
    assert [x.starts for x in lines] == [True, False, False, False, True]


def test_a_note_block_whose_label_stands_out_left_is_one_paragraph() -> None:
    note = Line(
        [
            Piece(108, 678, 130, 688, "Note: ", 10, "Arial-BoldMT", True),
            Piece(
                131,
                678,
                478,
                689,
                "the current version of the TECkit Mapping Editor does not handle",
                11,
                BODY,
                False,
            ),
        ],
        page=0,
        edge=90,
        far_edge=505,
    )
    lines = [
        line("A paragraph before the note ends here with a short line.", 90, 707, 331),
        note,
        line("mapping descriptions written as Unicode text; it is strictly an 8-bit editing", 126, 666, 453),
        line("environment. Unicode mapping source must be edited in a Unicode-capable editor", 126, 654, 490),
        line("and compiled with the command-line compiler.", 126, 642, 335),
        line("Where strings are called for, these may be either single- or double-quoted.", 90, 618, 480),
    ]
    mark_starts(lines, 11.0, BODY)
    assert [x.starts for x in lines] == [True, True, False, False, False, True]


def test_paragraphs_set_flush_and_spaced_apart_end_at_a_page_break_where_the_last_line_ends_short() -> None:
    # paragraphs of two full lines, 12 points apart inside, 17 between (a skip of its own): the page ends on
    # a paragraph's short last line, and the next page's first line is flush left, as every first line is
    lines, y = [], 700.0
    for n in range(6):
        lines.append(
            line(f"Paragraph {n} has a first line that runs on to the far edge of the column.", 90, y, 500)
        )
        lines.append(line("and a last line that ends short.", 90, y - 12, 240))
        y -= 29
    after = line(
        "TECkit mapping source files may be created as either byte-encoded or Unicode.", 90, 760, 500, page=1
    )
    rest = line(
        "compiler recognizes Unicode source files by looking for an initial mark.", 90, 748, 472, page=1
    )
    lines += [after, rest]
    mark_starts(lines, 11.0, BODY)
    assert after.starts and not rest.starts


def test_a_date_under_the_title_is_no_heading() -> None:
    lines = [
        line("A Short Guide to Nath", 226, 678, 385, size=17.2, edge=134, far_edge=477),
        line("M. Marvan", 278, 645, 334, size=12, edge=134, far_edge=477),
        line("14 February 2003", 262, 622, 350, size=12, edge=134, far_edge=477),
        line(
            "Nath is a LaTeX style to separate presentation and content in typography.",
            134,
            587,
            477,
            size=10,
            edge=134,
            far_edge=477,
        ),
    ]
    mark_title(lines, 10.0)
    mark_headings(lines, 10.0)
    assert [x.kind for x in lines] == ["title", "furniture", "furniture", "text"]


def test_a_subtitle_in_another_face_and_italic_authors_under_a_flush_title_are_no_body() -> None:
    lines = [
        line("The TECkit Language", 90, 737, 263, size=17, font="Arial-BoldMT"),
        line("Mapping byte encodings to Unicode", 91, 718, 360, size=17, font="ArialMT"),
        line("Jonathan Kew", 90, 688, 153, font="TimesNewRomanPS-ItalicMT"),
        line("SIL Non-Roman Script Initiative (NRSI)", 90, 676, 266, font="TimesNewRomanPS-ItalicMT"),
        line("Abstract", 126, 599, 170, size=12, font="ArialMT"),
        line("TECkit is a toolkit for encoding conversions, primarily intended for", 126, 582, 426),
    ]
    mark_title(lines, 11.0)
    mark_headings(lines, 11.0)
    assert [x.kind for x in lines] == ["title", "furniture", "furniture", "furniture", "heading", "text"]


def test_display_lines_opening_pages_make_no_running_head_of_every_first_line() -> None:
    # no running heads; three pages open with a display's "$$": the other pages' first lines are body text
    words = "alpha beta gamma delta epsilon zeta eta theta iota".split()
    pages = [
        [line(f"{word} opens this page with words of its own", 134, 714), *body(word)] for word in words[:6]
    ]
    pages += [[line("$$", 134, 714), *body(word)] for word in words[6:]]
    mark_furniture(pages)
    assert all(page[0].kind == "text" for page in pages[:6])


def body(word: str) -> list[Line]:
    """A page's body lines, its own words on each."""
    return [line(f"{word} body line {'i' * (i + 1)} goes on", 134, 600 - 12 * i) for i in range(8)]


def test_a_table_of_contents_over_a_page_break_keeps_the_first_heading_after_it() -> None:
    # its section entries in bold (read as headings), a page number between its two pages
    entries = [
        "1 Definition of CRC 2",
        "2 Related work 3",
        "3 CRC tricks and tips 4",
        "3.1 Incremental CRC 4",
    ]
    lines = [
        line(text, 134, 300 - 12 * n, kind="heading" if text[1] == " " else "text")
        for n, text in enumerate(entries)
    ]
    lines.append(line("1", 304, 96, kind="furniture"))
    lines += [
        line(text, 134, 700 - 12 * n, page=1)
        for n, text in enumerate(["4 Efficient software 7", "4.1 Mapping 7"])
    ]
    for n, text in enumerate(
        [
            "1 Definition of CRC",
            "2 Related work",
            "3 CRC tricks and tips",
            "3.1 Incremental CRC",
            "4 Efficient software",
            "4.1 Mapping",
        ]
    ):
        lines += [
            line(text, 135, 445, page=2 + n, kind="heading"),
            line("Body text of the section.", 134, 420, page=2 + n),
        ]
    mark_contents(lines)
    assert all(x.kind == "contents" for x in lines[:7] if x.text != "1")
    assert [x.kind for x in lines[7::2]] == ["heading"] * 6


def test_a_contents_entry_long_enough_to_leave_room_for_one_leader_dot_is_contents() -> None:
    entries = [
        "9.3 Code that inputs the pfx and ovp files . . . . . . . 15",
        "9.3.1 Saving and providing commands of other packages . 15",  # psfragx: one dot of leader
        "9.3.2 New commands to read and write files . . . . . . 16",
        "9.4 The main command of this package . . . . . . . . . 19",
    ]
    lines = [line(text, 155, 600 - 13 * n) for n, text in enumerate(entries)]
    headings = [
        "9.3 Code that inputs the pfx and ovp files",
        "9.3.1 Saving and providing commands of other packages",
        "9.3.2 New commands to read and write files",
        "9.4 The main command of this package",
    ]
    for n, text in enumerate(headings):
        lines += [
            line(text, 135, 445, page=2 + n, kind="heading"),
            line("Body text of it.", 134, 420, page=2 + n),
        ]
    mark_contents(lines)
    assert [x.kind for x in lines[:4]] == ["contents"] * 4


def test_chinese_lines_and_full_width_marks_take_no_spaces() -> None:
    assert _joined("为了统一写作标", "准，保证论文的规范性", " ") == "为了统一写作标准，保证论文的规范性"
    assert _joined("Unicode and", "converting", " ") == "Unicode and converting"
    pieces = [
        Piece(10 + 20 * n, 0, 20 + 20 * n, 10, text, 10, "SimSun", False)
        for n, text in enumerate(["（", "1", "）", "中文封面；", "在", "WORD", "文档中"])
    ]
    assert line_text(pieces) == "（1）中文封面；在 WORD 文档中"


def test_a_skip_of_1_3_pitches_parts_paragraphs_only_where_no_commoner_gap_stands_further_out() -> None:
    from citewise.index.pdf.starts import paragraph_skip

    def page(gaps: list[float]) -> list[Line]:
        lines, y = [], 700.0
        for gap in gaps:
            lines.append(line("Body text running on from one line to the next one here", 90, y, 500))
            y -= gap
        return lines

    # groff's ms: lines 12 points apart, paragraphs 15.6 (1.3 pitches), nothing in between
    groff = page(([12.0] * 4 + [15.6]) * 12)
    assert paragraph_skip(groff, 12.0, 10.0) < 15.0
    # Asciidoctor: code lines 12 apart, prose lines 15.6, paragraphs 24: 1.3 pitches is prose's own pitch
    asciidoctor = page(([12.0] * 3 + [15.6] * 4 + [24.0] * 5) * 6)
    assert paragraph_skip(asciidoctor, 12.0, 10.0) > 15.6


def test_footnotes_whose_later_lines_went_back_to_body_size_are_notes() -> None:
    from citewise.index.pdf.furniture import mark_notes_and_equations

    # groff's ms through Ghostscript: each note opens in 8 points, a wrapped line of it comes out in 10
    lines = [
        line("available, are in any way inferior to them, as the text says.", 71, 203, 270, size=10),
        line("1. Later versions should, and some earlier versions may, be suitable.", 72, 167, 472, size=8),
        line("information and availability of the latest version.", 91, 157, 246, size=8),
        line("2. Again, other versions may be suitable. See the site for details.", 71, 145, 404, size=8),
        line("3. A commercial offering; see the vendor's site for information.", 71, 133, 384, size=8),
        line("4. A free but comprehensive emulation environment for Windows", 71, 125, 472, size=8),
        line("platforms; see the project's site for information and download.", 91, 113, 397, size=10),
        line("5. Another free, but minimal suite of common tools, available from", 71, 103, 472, size=8),
        line("the project's site; it includes those tools listed above.", 91, 91, 472, size=10),
    ]
    mark_notes_and_equations(lines, 10.0)
    assert lines[0].kind == "text" and all(x.kind == "note" for x in lines[1:])


def test_an_errata_lists_bold_entry_heads_in_lower_case_head_their_entries() -> None:
    # Lamport's errata: "page 33, line 10" in bold after a finished entry; a bold phrase that wraps within a
    # sentence, with no gap, and a bold option name in a typewriter face head nothing
    lines = [
        line("Errors Corrected in the First Printing", 134, 486, 358, size=12, font="CMBX12"),
        line("page 25, example of verse environment", 134, 466, 330, size=10, font="CMBX10"),
        line(
            "Replace {\\em all\\/} by \\emph{all}. [First reported by Rosemary Bailey.]",
            134,
            447,
            477,
            size=10,
        ),
        line("page 33, line 10", 134, 410, 212, size=10, font="CMBX10"),
        line(
            "Not an error, but it would help to add that \u201cthey become arguments.\u201d",
            134,
            391,
            477,
            size=10,
        ),
        line("page 43, table 3.5", 134, 355, 222, size=10, font="CMBX10"),
        line("Add an entry for the symbol and see the commands set in bold, as the", 134, 337, 477, size=10),
        line("rules say in the", 134, 325, 200, size=10, font="CMBX10"),
        line("next chapter about them. The options follow.", 134, 313, 400, size=10),
        line("balance columns", 134, 290, 200, size=10, font="FiraMono-Bold"),
    ]
    mark_headings(lines, 10.0)
    assert [x.text for x in lines if x.kind == "heading"] == [
        "Errors Corrected in the First Printing",
        "page 25, example of verse environment",
        "page 33, line 10",
        "page 43, table 3.5",
    ]


def test_page_n_opening_pages_out_of_step_with_the_pages_is_no_page_number() -> None:
    # an errata list's entries "page 101" and "page 228" open pages 2 and 4; "Page 1" ... "Page 4" at the
    # feet of another document's pages run with them
    def pages(heads: list[str | None], feet: list[str | None]) -> list[list[Line]]:
        made = []
        for n, (head, foot) in enumerate(zip(heads, feet, strict=True)):
            page = [
                line(f"entry body line {'i' * (i + 1)} on page {n}", 134, 690 - 12 * i, page=n)
                for i in range(6)
            ]
            if head:
                page.insert(0, line(head, 134, 714, 177, page=n))
            if foot:
                page.append(line(foot, 290, 140, 320, page=n))
            made.append(page)
        return made

    errata = pages([None, "page 101", None, "page 228"], [None] * 4)
    mark_furniture(errata)
    assert [errata[1][0].kind, errata[3][0].kind] == ["text", "text"]
    numbered = pages([None] * 4, ["Page 1", "Page 2", "Page 3", "Page 4"])
    mark_furniture(numbered)
    assert all(page[-1].kind == "furniture" for page in numbered)


def test_a_titles_lead_in_over_its_larger_last_word_is_part_of_the_title() -> None:
    # a Polish manual's cover: authors, "No to" at 50 pt over "CMYK" at 100 pt in one font, an edition line
    font = "PLSSBX10"
    lines = [
        line("Piotr Pianowski", 131, 505, 282, size=19.9, font=font),
        line("Piotr Strzelczyk", 131, 482, 291, size=19.9, font=font),
        line("No to", 137, 318, 267, size=49.8, font=font),
        line("CMYK", 57, 183, 364, size=99.6, font=font),
        line("Wydanie I", 173, 90, 247, size=15.9, font=font),
        line("The first paragraph of the manual says what the macros are for.", 90, 60, 480, size=10),
    ]
    mark_title(lines, 10.0)
    assert [x.text for x in lines if x.kind == "title"] == ["No to", "CMYK"]


def test_computer_moderns_symbols_read_as_their_codes_are_the_symbols() -> None:
    # a dvips PDF without a ToUnicode map: CMSY10's angle brackets come out as "h" and "i"
    assert "hoptionsi".translate(OMS_LETTERS) != "hoptionsi"
    assert "{h".translate(OMS_LETTERS) + "options" + "i}".translate(OMS_LETTERS) == "{⟨options⟩}"
    assert "x".translate(OMS_LETTERS) == "§" and "A".translate(OMS_LETTERS) == "A"  # capitals: calligraphic


def test_plain_texs_copyright_sign_and_accents_set_as_glyphs_of_their_own() -> None:
    circle = Piece(317, 420, 325, 429, "°", 9, "CMSY9", False)
    letter = Piece(320, 420, 323, 429, "c ", 9, "CMR9", False)
    pieces = [Piece(273, 420, 312, 429, "Copyright ", 9, "CMR9", False), circle, letter]
    _copyright_signs(pieces)
    assert line_text(pieces) == "Copyright ©"
    words = [("Sigitas ", 125, 170), ("Toluˇsis", 175, 210), ("and Schr¨oder", 215, 280)]
    pieces = [Piece(a, 100, b, 110, t, 10, "CMR10", False) for t, a, b in words]
    assert line_text(pieces) == "Sigitas Tolušis and Schröder"


def test_a_macros_name_in_the_margin_is_no_tag_of_the_item_beside_it() -> None:
    # ltxdoc-style documentation: "\\IfSubmit" set small in the left margin beside each bulleted item
    lines = [
        line(f"body text line {i} of the section, running the width of the column", 125, 600 - 12 * i, 468)
        for i in range(4)
    ]
    notes = []
    for n, name in enumerate(("IfSubmit", "IfAccept", "IfPublish")):
        y = 540 - 28 * n
        notes.append(line(f"\\{name}", 72, y, 113, size=9, font="CMTT9"))
        lines += [
            notes[-1],
            line(
                f"\u2022 \\{name}{{\u27e8then\u27e9}} executes \u27e8then\u27e9, if the option was",
                140,
                y,
                468,
            ),
            line("given, otherwise executes \u27e8else\u27e9.", 150, y - 12, 288),
        ]
    read = reading_order(lines)
    assert all(note.kind == "furniture" for note in notes)
    assert [x.text[:11] for x in read if x.text.startswith("\u2022")] == [
        "\u2022 \\IfSubmit",
        "\u2022 \\IfAccept",
        "\u2022 \\IfPublis",
    ]


def test_a_macros_name_in_the_margin_beside_a_paragraph_s_indented_first_line_is_no_line_of_it() -> None:
    # show2e: "\\showcs" in the margin beside the one line starting at the paragraph indent
    lines = [
        line(f"body text line {i} of the section, running the width of the column", 145, 600 - 12 * i, 498)
        for i in range(4)
    ]
    note = line("\\showcs", 101, 553, 133, size=9, font="CMTT9")
    first = line("The \\showcs command does the same thing as \\showcmd, but takes the com-", 160, 552, 499)
    lines += [
        first,
        note,
        line("mand\u2019s name as its argument: \\showcmd\\truc is equivalent.", 145, 540, 500),
    ]
    reading_order(lines)
    assert note.kind == "furniture"
    label = line("C3", 101, 553, 115, size=9, font="CMR9")  # yaletter: an envelope's size beside its row
    first = line(
        "\\yaciiienvelope the command that sets the envelope of this size, with its margins.", 160, 552, 499
    )
    lines = [*lines[:4], first, label]
    reading_order(lines)
    assert label.kind == "text"


def test_names_set_flush_right_in_the_margin_in_the_text_s_size_are_notes_not_tags() -> None:
    # mismath: "\\enumber", "\\inumber", "\\jnumber" end at x 142 beside three lines of one paragraph
    # at 154, in the text's size: each joined its line as a tag, and each line opened a paragraph; a CV's
    # dates set flush right left of its entries are no notes
    def page(labels: list[str]) -> tuple[list[Line], list[Line]]:
        lines = [
            line(
                f"body text line {i} of the section, running the width of the column", 154, 700 - 12 * i, 507
            )
            for i in range(4)
        ]
        notes = []
        for n, label in enumerate(labels):
            y = 640 - 12 * n
            notes.append(line(label, 142 - 5 * len(label), y, 142 - 0.5 * n, size=11.0))
            lines += [
                notes[-1],
                line(f"line {n} of the paragraph beside its note, set full to the end", 154, y, 507),
            ]
        reading_order(lines)
        return lines, notes

    _, notes = page(["\\enumber", "\\inumber", "\\jnumber", "\\e"])
    assert all(note.kind == "furniture" for note in notes)
    read, dates = page(["2003 - 2006", "2000 - 2004", "Juin 1997"])
    assert all(date.kind == "text" for date in dates)
    assert sum(x.text.startswith(("2003", "2000", "Juin")) for x in read) == 3  # each its entry's first words


def test_a_docstrip_guard_in_a_doc_listing_is_code() -> None:
    # stmaryrd's implementation: "1 <*install>", the angle brackets and the star from the maths symbols
    number = Piece(149, 375, 153, 382, "1 ", 7, "LMRoman7-Regular", False)
    guard = [
        Piece(155, 375, 163, 384, "-\u2217", 9, "CMSY9", False),
        Piece(163, 375, 186, 384, "install", 9, "CMSS9", False),
        Piece(186, 375, 189, 384, "\x04", 9, "CMSY9", False),
    ]
    assert Line([number, *guard], page=0).code
    prose = [Piece(155, 375, 400, 384, "where the sum runs over ", 9, "CMR9", False), guard[0], guard[2]]
    assert not Line([number, prose[1], prose[0], prose[2]], page=0).code  # words in prose: no guard


def test_a_cover_column_in_display_type_beside_a_column_of_text_is_a_column() -> None:
    # Philosophers' Imprint's landscape first page: a centred cover at the left, the paper at the right
    cover = [
        line("Imprint Philosophers\u2019", 72, 552, 187, size=33.9),  # the logo
        line("january 2000", 301, 531, 367, size=11.0),
        line("PHILOSOPHERS\u2019", 114, 431, 327, size=29.9),
        line("IMPRINT MISSION", 93, 386, 346, size=29.9),
        line("STATEMENT", 136, 341, 304, size=29.9),
        line("Philosophers\u2019 Imprint Editorial Board", 74, 250, 364, size=18.9),
        line("University of Michigan", 168, 213, 271, size=11.0),
        line("\u00a9 2007, Philosophers\u2019 Imprint", 156, 167, 282, size=9.5),
        line("This work is licensed under a Creative Commons", 126, 153, 313, size=9.5),
    ]
    text = [
        line(
            f"line {n} of the paper's first column of text, set justified to the column's width",
            421,
            531 - 13 * n,
            719,
        )
        for n in range(8)
    ]
    read = reading_order([*cover, *text])
    assert {x.column for x in cover} == {"left"} and {x.column for x in text} == {"right"}
    assert [x.text for x in read] == [
        x.text for x in [*cover, *text]
    ]  # the cover, then the text; no line joined


def test_an_abstract_s_last_line_as_long_as_a_column_s_at_its_indent_goes_on_across_the_columns() -> None:
    # REVTeX's AIP sample: the abstract runs 90-562 over columns 54-299 and 317-562; its last line 90-298
    abstract = [
        line(
            "An article usually includes an abstract, a concise summary of the work covered at length",
            90,
            641,
            562,
        ),
        line(
            "the article. It is used for secondary publications and for information retrieval purposes.",
            90,
            629,
            561,
        ),
        line("may be entered using the \\pacs{#1} command.", 90, 618, 298),
    ]
    left = [
        line(f"left column line {n} of the lead paragraph, to the column's edge", 54, 553 - 12 * n, 299)
        for n in range(6)
    ]
    right = [
        line(f"right column line {n} of the next section's text, to its edge", 317, 553 - 12 * n, 562)
        for n in range(6)
    ]
    read = reading_order([*abstract, *left, *right])
    assert [x.column for x in abstract] == ["full"] * 3
    assert [x.text for x in read[:4]] == [x.text for x in [*abstract, left[0]]]


def test_a_listings_numbered_lines_are_one_block_apart_from_the_prose() -> None:
    prose = line("Here are the customization parameters:", 145, 552, 316, size=10, font="CMR10")
    code = [
        Line(
            [
                Piece(145, 540 - 11 * i, 152, 547 - 11 * i, f"{10 + i} ", 7, "CMR7", False),
                Piece(156, 540 - 11 * i, 300, 549 - 11 * i, f"\\def\\@x{i}{{y}}", 9, "CMTT9", False),
            ],
            page=0,
            edge=145,
            far_edge=498,
        )
        for i in range(3)
    ]
    lines = [prose, *code]
    mark_starts(lines, 10.0, "CMR10")
    assert [x.starts for x in lines] == [True, True, False, False]


def test_a_key_on_a_line_of_its_own_with_a_note_far_right_is_apart_from_its_description() -> None:
    # pgfkeys documentation (drawmatrix): the key in typewriter at the margin, "(style, no default)" set
    # right, the description indented under it; its row read as one line, or as two (the note far right)
    key = Line(
        [
            Piece(154, 654, 263, 664, "/drawmatrix/label pos=", 10, "CMTT10", False),
            Piece(270, 654, 310, 664, "<position>", 10, "CMTI10", False),
            Piece(330, 654, 506, 664, "(style, no default, initially bbox.center)", 10, "CMR10", False),
        ],
        page=0,
        edge=154,
        far_edge=507,
    )
    stacked = [
        line("/drawmatrix/every bbox", 154, 600, 268, font="CMTT10", size=10, edge=154, far_edge=507),
        line("(style, no value)", 438, 600, 506, font="CMR10", size=10, edge=154, far_edge=507),
    ]

    def described(above: list[Line], top: float) -> list[Line]:
        under = [
            line("Define the position of the label within the picture. The", 174, top, 507, **CM),
            line("following nodes are available: bbox and the matrix.", 174, top - 12, 507, **CM),
            line("matrix (matrix itself).", 174, top - 24, 272, **CM),
        ]
        lines = [*above, *under]
        mark_starts(lines, 10.0, "CMR10")
        return under

    assert [x.starts for x in described([key], 640)] == [True, False, False]
    assert [x.starts for x in described(stacked, 586)] == [True, False, False]
    # a hanging paragraph whose first line runs on into its text in the body's face stays one paragraph
    hanging = line("Knuth, D. E. The TeXbook. Addison-Wesley, Reading, Massachusetts,", 154, 654, 506, **CM)
    assert [x.starts for x in described([hanging], 640)] == [False, False, False]


CM = {"font": "CMR10", "size": 10, "edge": 154, "far_edge": 507}


def test_cm_super_typewriter_is_code_and_code_atop_a_page_after_a_closed_sentence_is_a_block() -> None:
    # xcomment's documentation: cm-super's SFTT for code; a paragraph ends a page, its code on the next
    assert line("\\def\\rescan#1{%", 115, 597, font="SFTT1000").code
    prose = line("ments and goes into comment mode by invoking \\xc@begin.", 111, 166, 441, **CM, page=8)
    code = line("\\def\\@xcomment#1#2{%", 115, 690, 219, font="SFTT1000", size=10, page=9, edge=111)
    lines = [line("Otherwise, it processes its arguments and goes into comm-", 111, 181, 499, **CM, page=8)]
    lines += [prose, code]
    mark_starts(lines, 10.0, "CMR10")
    assert code.starts
    # a paragraph running on to the next page in the body's face still runs on
    more = line("on with the same sentence of the paragraph.", 111, 690, 300, **CM, page=9)
    lines = [line("and the paragraph goes", 111, 181, 499, **CM, page=8), more]
    mark_starts(lines, 10.0, "CMR10")
    assert not more.starts


def test_a_contents_entrys_page_number_read_apart_is_the_contents_and_the_abstract_after_it_is_not() -> None:
    # xcomment's contents: bold entries, their page numbers read as lines of their own; "Abstract" heads
    # the next page once
    entries = [
        "1 Usage notes",
        "3",
        "2 The implementation",
        "6",
        "2.1 User commands 7",
        "2.2 Preliminaries 8",
    ]
    lines = [line("Contents", 111, 700, kind="heading")]
    lines += [
        line(
            t,
            111 if len(t) > 2 else 494,
            674 - 13 * (n // 2 if len(t) <= 2 else n),
            kind="heading" if n < 3 else "text",
        )
        for n, t in enumerate(entries)
    ]
    lines.append(line("Abstract", 284, 701, page=1, kind="heading"))
    lines.append(line("The style option verbatim.sty allows one to", 156, 678, page=1))
    for n, text in enumerate(
        ["1 Usage notes", "2 The implementation", "2.1 User commands", "2.2 Preliminaries"]
    ):
        lines += [line(text, 111, 556, page=2 + n, kind="heading"), line("Body text.", 111, 530, page=2 + n)]
    mark_contents(lines)
    assert [x.kind for x in lines[:7]] == ["contents"] * 7
    assert lines[7].kind == "heading"


def test_a_paragraph_under_a_full_line_goes_on_whatever_starts_left_of_it_next() -> None:
    # polexpr's list item: a paragraph set in under a bullet, its second line followed by the next bullet
    lines = [
        line(
            "It means to use decimal notation, with perhaps a trailing denominator if the",
            114,
            346,
            505,
            **TX,
        ),
        line("and will suppress trailing zeros after the decimal mark.", 114.6, 334, 332, **TX),
        line(
            "\u2022 As these are expandable macros, they are usable to redefine it as well:",
            106,
            314,
            453,
            **TX,
        ),
    ]
    mark_starts(lines, 10.0, "TeXGyreTermesX-Regular")
    assert [x.starts for x in lines] == [True, False, True]
    # a paragraph of one full line, indented, then the next paragraph's indented first line over a line at
    # the column's edge: that line starts its paragraph
    lm = {"font": "LMRoman10-Regular", "size": 10, "edge": 57, "far_edge": 292}
    lines = [
        line("Integration of eqs (3) and (4) in x1 and x2 over the disc yields", 66.9, 151, 285.2, **lm),
        line("We can obtain a more compact form of this ex-", 66.8, 138.7, 291.9, **lm),
        line("pression by using the Wigner-Eckart theorem and the", 57, 126.8, 292.1, **lm),
    ]
    mark_starts(lines, 10.0, "LMRoman10-Regular")
    assert [x.starts for x in lines] == [True, True, False]


TX = {"font": "TeXGyreTermesX-Regular", "size": 10, "edge": 89, "far_edge": 510}


def test_a_bold_term_in_lower_case_is_no_run_in_heading_and_opens_its_item() -> None:
    # nwejm's description list: "free. If such a key ...", "by default i.e. when ..." after "the key:"
    term = Line(
        [
            Piece(65, 539, 85, 549, "free. ", 10, "KpRoman-Bold", True),
            Piece(
                91,
                539,
                426,
                549,
                "If such a key is for instance named freekey, then it is",
                10,
                "KpRoman",
                False,
            ),
        ],
        page=0,
        starts=True,
        edge=65,
        far_edge=427,
    )
    (same,) = split_run_in_headings([term])
    assert same.kind == "text" and same.text.startswith("free. If such")
    clause = line(
        "They indicate the value of the key:", 65, 392, 280, font="KpRoman", size=10, edge=65, far_edge=427
    )
    by_default = Line(
        [
            Piece(65, 374, 110, 384, "by default ", 10, "KpRoman-Bold", True),
            Piece(
                112, 374, 426, 384, "i.e. when the key is used alone without any value;", 10, "KpRoman", False
            ),
        ],
        page=0,
        edge=65,
        far_edge=427,
    )
    mark_starts([clause, by_default], 10.0, "KpRoman")
    assert by_default.starts


def test_a_title_line_ending_in_of_runs_on_into_the_next_in_italic() -> None:
    # nwejm: "Documentation of the LaTeX class of" / italic "North-Western European Journal of Mathematics"
    # / "for authors", centred, one size
    lines = [
        line("Documentation of the LaTeX class of", 111.5, 565, 381, size=17.2, edge=65, far_edge=426),
        line(
            "North-Western European Journal of Mathematics",
            70.3,
            547,
            420.8,
            size=17.2,
            font="KpRoman-Italic",
            edge=65,
            far_edge=426,
        ),
        line("for authors", 204.3, 525, 287.1, size=17.2, edge=65, far_edge=426),
        line("Version 1.0.5 as of September 21, 2022", 169, 508, 322, size=9, edge=65, far_edge=426),
        line("This class is used to typeset the articles of the journal and much more text.", 65, 400, 426),
    ]
    mark_title(lines, 10.0)
    assert [x.kind for x in lines[:3]] == ["title"] * 3


def test_a_long_numbered_heading_in_large_bold_type_is_a_heading_with_its_second_line() -> None:
    bold = {"font": "TeXGyreTermesX-Bold", "size": 14.3, "edge": 89, "far_edge": 510}
    lines = [
        line("This may evolve in future versions of the package and of this document.", 89, 290, 489, **TX),
        line(
            "8 The degree 41 polynomial with -2, -1.9, -1.8, ..., 0, 0.1, ..., 1.9, 2 as",
            89.7,
            255,
            505,
            **bold,
        ),
        line("roots", 111.2, 237, 141, **bold),
        line("In the defining expression we could have used i/10 but this gives less.", 89.5, 205, 505, **TX),
    ]
    mark_headings(lines, 10.0)
    assert [x.kind for x in lines] == ["text", "heading", "heading", "text"]


def test_text_set_diagonally_is_a_watermark_and_text_turned_a_quarter_is_read() -> None:
    from citewise.index.pdf.pages import _slanted

    assert _slanted((0.7071, 0.7071, -0.7071, 0.7071, 63, 135))  # "TRAVAIL EN COURS" at 45 degrees
    assert not _slanted((1.0, 0.0, 0.0, 1.0, 90, 700))  # upright
    assert not _slanted((0.0, 1.0, -1.0, 0.0, 20, 300))  # a margin's arXiv stamp, turned a quarter


def test_a_bold_abstract_heading_in_the_abstracts_smaller_type_is_a_heading() -> None:
    # interfaces' first page: "Abstract" in 9 pt bold sans over a 9 pt abstract, the body 10.9 pt
    sans = {"size": 9.0, "edge": 98, "far_edge": 540}
    lines = [
        line("Abstract", 301, 673, 337, font="NimbusSanL-Bold", **sans),
        line(
            "interfaces provides a small number of user friendly macros to access features",
            98.7,
            654,
            539.6,
            **sans,
        ),
    ]
    mark_headings(lines, 10.9)
    assert [x.kind for x in lines] == ["heading", "text"]


# stop 58: round 12 (afthesis' usethesis through Distiller, iodhbwm's listings example)


def test_contents_lines_with_a_reports_page_numbers_are_contents_whatever_they_name() -> None:
    # a thesis's contents: roman and chapter-page numbers ("iii", "1-1", "A-1", "VITA-1"); its appendix's
    # section is read as text, so the entry names no heading
    entries = [
        "Preface . . . . . . . . . . . . . . . . . . . . . . . . iii",
        "I. This is the first chapter title . . . . . . . . . . 1-1",
        "2.1.1 A subsection . . . . . . . . . . . . . . . . . . 2-1",
        "A.1 In an appendix . . . . . . . . . . . . . . . . . . A-1",
        "Vita . . . . . . . . . . . . . . . . . . . . . . . . . VITA-1",
    ]
    lines = [line("Table of Contents", 262, 700, kind="heading")]
    lines += [line(text, 92, 650 - 20 * n) for n, text in enumerate(entries)]
    lines += [
        line("I. This is the first chapter title", 92, 700, page=3, kind="heading"),
        line("2.1.1 A subsection.", 120, 600, page=4, kind="heading"),  # run in: its stop aside
        line("A.1 In an appendix", 92, 700, page=5),
        line("This is appendix section A.1.", 119, 680, page=5),
    ]
    mark_contents(lines)
    assert [x.kind for x in lines[:6]] == ["contents"] * 6
    assert [x.kind for x in lines[6:]] == ["heading", "heading", "text", "text"]


def test_leaders_whose_page_number_is_read_apart_are_contents_and_an_ellipsis_is_not() -> None:
    lines = [line("Listings", 101, 700, kind="title")]
    for n, (entry, page) in enumerate([("1.1 Simple Java method", "2"), ("1.2 Simple C# method", "3")]):
        lines += [
            line(entry + " ." * 27, 118, 650 - 14 * n, right=501),
            line(page, 519, 650 - 14 * n, right=524),
        ]
    lines.append(line("1.3 Caption below code" + " ." * 27, 118, 622, right=501))
    lines.append(line("3", 519, 622, right=524, kind="furniture"))  # its number taken for a page's
    said = [line("Text text text. . .", 100, 500 - 14 * n) for n in range(4)]  # xsim's sample text
    said += [line("Chapter one ....", 100, 400 - 14 * n) for n in range(4)]  # four dots, no page number
    mark_contents(lines + said)
    assert [x.kind for x in lines[1:6]] == ["contents"] * 5
    assert {x.kind for x in said} == {"text"}


def test_a_url_in_typewriter_broken_at_a_lines_end_goes_on_in_its_sentence() -> None:
    # datetime2-polish: "... contact me at http://www.dickimaw-books." over "com/contact.html", a word in
    # typewriter on a line of its own: no code block, and the URL made whole
    mono = "LMMono10-Regular"
    first = Line(
        [
            Piece(90, 600, 400, 611, "volunteer to take over maintenance, contact me at ", 11.0, BODY, False),
            Piece(400, 600, 504, 611, "http://www.dickimaw-books.", 11.0, mono, False),
        ],
        page=0,
        edge=90,
        far_edge=505,
    )
    lines = [
        line("This module is currently unmaintained and may be subject to change. If you", 105, 614, 505),
        first,
        line("com/contact.html", 90, 586, 185, font=mono),
        line("Currently there is only a regionless style, in this line's sentence and font.", 105, 560, 505),
    ]
    mark_starts(lines, 11.0, BODY)
    assert [x.starts for x in lines] == [True, False, False, True]
    joined = _joined(_joined(lines[0].text, first.text, " "), lines[2].text, " ")
    assert joined.endswith("contact me at http://www.dickimaw-books.com/contact.html")
    assert _joined("see http://purl.org/", "nxg/dist/exam-n.", " ").endswith(
        "http://purl.org/nxg/dist/exam-n."
    )
    assert _joined("at http://example.org/.", "Then", " ") == "at http://example.org/. Then"


def test_a_note_set_in_on_both_sides_goes_on_under_its_indented_first_line() -> None:
    # dox: a two-line note in a block narrower than the column, its first line indented further, a line of
    # code back at the column's edge after it; the note's second line goes on with its first
    lines = [
        line("of your document. The package options will be discussed when appropriate.", 145, 640, 475),
        line("Note: we assume that you know about doc's \\DescribeMacro,", 185, 600, 473),
        line("\\DescribeEnv and all other associated commands and environments.", 172, 588, 470),
        line("[<options>]{<name>}{<envname>}{<idxcat>}", 147, 560, 338, font="LMMono10-Regular"),
    ]
    for x in lines:
        x.edge, x.far_edge = 145, 498
    mark_starts(lines, 10.0, BODY)
    assert [x.starts for x in lines] == [True, True, False, True]


def test_a_captions_bold_label_is_no_run_in_heading() -> None:
    # iodhbwm: "Listing 1.3: Caption below code", the label in bold, under its listing
    for label in ("Listing 1.3:", "Figure 2.", "TABLE IV:", "Algorithm 1:"):
        pieces = [
            Piece(103, 500, 162, 512, label + " ", 12, "LMRoman12-Bold", True),
            Piece(168, 500, 263, 512, "Caption below code", 12, "LMRoman12-Regular", False),
        ]
        (read,) = split_run_in_headings([Line(pieces, page=2, starts=True)])
        assert (read.kind, read.text) == ("text", f"{label} Caption below code")


def test_the_pitch_is_the_prose_s_where_smaller_listings_outnumber_it() -> None:
    # ocg-p: 9 pt code lines 9.5 points apart outnumber the 10 pt prose's lines 12 points apart; read at the
    # code's pitch, every line of prose started a paragraph
    from citewise.index.pdf.lines import line_pitch

    prose = [line(f"Prose line {n} of the manual, in the body's face.", 145, 700 - 12 * n, 498, size=10.0)
             for n in range(24)]  # fmt: skip
    code = [line(f"\\begin{{ocg}}{{layer {n}}}", 160, 380 - 9.5 * n, 300, size=9.0, font="CMTT9")
            for n in range(36)]  # fmt: skip
    lines = prose + code
    assert abs(line_pitch(lines, 10.0) - 12.0) < 0.5
    mark_starts(lines, 10.0, BODY)
    assert sum(x.starts for x in prose) == 1


def test_the_pitch_is_the_prose_s_where_listings_in_its_size_are_set_closer() -> None:
    # econ-bst's example: prose 16 points apart, listings in the body's size set solid, 12 apart; read at
    # the code's pitch, every line of its prose started a paragraph
    from citewise.index.pdf.lines import line_pitch

    prose = [line(f"Prose line {n} of the example, in the body's face.", 97, 700 - 16 * n, 515, size=10.0)
             for n in range(41)]  # fmt: skip
    code = [line(f"pdflatex econ-example{n}.tex", 112, 600 - 12 * (n % 6), 243, size=10.0, font="t1xtt",
                 page=1 + n // 6) for n in range(24)]  # fmt: skip
    assert abs(line_pitch(prose + code, 10.0) - 16.0) < 0.5
    mark_starts(prose + code, 10.0, BODY)
    assert sum(x.starts for x in prose) == 1


def test_long_lines_a_fraction_of_a_point_apart_share_their_column_s_edge() -> None:
    # econ-bst's example: the text's edge at 97.34 and 97.50, indented lines and list items at 112 and
    # 113.7; by whole points 97 and 98 were two edges met once each, and 112 was taken for the column's
    # edge, so an indented paragraph's first line read as flush
    lefts = [97.34, 97.5, 112.0, 111.97, 113.74, 113.74, 113.74, 122.08]
    text = [line(f"Line {n} of the page, long enough to count for its column's edge.", x, 600 - 16 * n, 515)
            for n, x in enumerate(lefts)]  # fmt: skip
    ordered = reading_order(text)
    assert {x.edge for x in ordered} == {97.0}


def test_a_gap_just_short_of_the_skip_ends_a_paragraph_whose_last_line_ended_short() -> None:
    # datetime2-polish, siunitx: a one-line paragraph, then the next 1.55 pitches below it; inside a
    # paragraph a full line that far above the next goes on (a line with a tall formula)
    pitch = 12.0
    lines = [line(f"Body line {n} of a paragraph running to the far edge.", 90, 700 - pitch * n, 505)
             for n in range(30)]  # fmt: skip
    short = line("date formats are also required.", 90, 700 - 30 * pitch, 270)
    after = line(
        "The separator between the day and month for the text format.", 90, short.bottom - 1.55 * pitch, 400
    )
    full = line("A full line with a tall fraction in it, its baseline further from the next.", 90, 200, 505)
    going = line(
        "goes on here, in the same paragraph as the line above it, to the far edge.",
        90,
        200 - 1.55 * pitch,
        505,
    )
    lines += [short, after, full, going]
    mark_starts(lines, 11.0, BODY)
    assert (after.starts, going.starts) == (True, False)


def test_notes_in_the_right_margin_do_not_move_a_justified_columns_edge() -> None:
    # lecturer's manual: justified text to 482, notes in the right margin from 490 to 573; with the edge at
    # 573 every full line looked short, and a command name opening the next line started a paragraph
    text = [line(f"Justified line {n} of the manual's text, to the block's edge.", 114, 600 - 12 * n, 482)
            for n in range(8)]  # fmt: skip
    notes = [line(f"note {n} in the margin", 490, 600 - 12 * n, 573 - n) for n in range(5)]
    ordered = reading_order(text + notes)
    assert {x.far_edge for x in ordered if x in text} == {482}


def test_a_skip_between_paragraphs_is_seen_among_more_lines_of_smaller_code() -> None:
    # kdgdocs: 10 pt prose 12 points apart, paragraphs 18 apart; 9 pt listings, 11 apart, outnumber it
    from citewise.index.pdf.lines import line_pitch
    from citewise.index.pdf.starts import paragraph_skip

    lines, y = [], 700.0
    for paragraph in range(8):
        for n in range(4):
            lines.append(
                line(f"Prose {paragraph}.{n} of the manual, in its body's face.", 154, y, 507, size=10.0)
            )
            y -= 12.0
        y -= 6.0  # the skip: 18 points from the last line to the next paragraph's first
    code = [line(f"\\newcommand{{\\macro{n}}}", 160, 700 - 11 * n, 300, size=9.0, font="CMTT9", page=p)
            for p in range(1, 7) for n in range(60)]  # fmt: skip
    lines += code
    pitch = line_pitch(lines, 10.0)
    assert abs(pitch - 12.0) < 0.5
    assert paragraph_skip(lines, pitch, 10.0) < 17.5


def test_a_label_in_several_faces_opens_a_two_line_item_whose_second_line_hangs() -> None:
    # prosper's options: a symbol, the option's name in bold typewriter and a bold stop, then the text;
    # the item's second line hangs under the text, short
    pieces = [
        Piece(135, 472, 141, 482, "I ", 10, "MSAM10", False),
        Piece(145, 472, 203, 482, "slideColor", 10, "Courier-Bold", True),
        Piece(204, 472, 206, 482, ". ", 10, "Times-Bold", True),
        Piece(
            212,
            472,
            477,
            482,
            "Slides will use many colors. To be used with caution when the",
            10,
            BODY,
            False,
        ),
    ]
    item = Line(pieces, page=0, edge=134, far_edge=477)
    lines = [
        line("the preamble (in that case, the same caption as in the draft mode is used).", 159, 492, 450),
        item,
        line("slides are to be printed on a black & white device;", 159, 460, 357, edge=134, far_edge=477),
    ]
    lines[0].edge, lines[0].far_edge = 134, 477
    mark_starts(lines, 10.0, BODY)
    assert [x.starts for x in lines[1:]] == [True, False]


def test_a_bitmap_fonts_type_read_at_a_tenth_of_a_point_takes_the_pages_usual_size() -> None:
    # extract's manual through Ghostscript: dvips' bitmap typewriter (a Type 3 font, no name) read at 0.12
    # points outweighed the 9.2 pt body, and every line of the body was read as small type
    from citewise.index.pdf.pages import _sized

    pieces = [
        Piece(145, 706.15, 187, 706.27, "askinclude ", 0.1, "", False),
        Piece(
            190,
            703.9,
            207,
            713.1,
            "[12], and the rest of the sentence in the body",
            9.2,
            "Utopia-Regular",
            False,
        ),
    ]
    small, body = _sized(pieces)
    assert (small.size, round(small.bottom, 1), round(small.top, 1)) == (9.2, 703.9, 713.1)
    assert body is pieces[1]


def test_a_paragraphs_last_line_over_a_label_out_in_the_margin_goes_on() -> None:
    # lastpage: "e-mail to the lastpage maintainer, thanks!" ends the paragraph over "count1to", a macro's
    # name standing out left of the column's edge; read against it, the line looked indented
    lines = [
        line("If you know the (CTAN) location of a working (!) version, please send an", 179, 469, 507),
        line("e-mail to the lastpage maintainer, thanks!", 179, 457, 359),
        line("count1to", 106, 437, 142, size=9.0, font="CMTT9"),
        line("The count1to package provides the number of the last page and more.", 179, 417, 507),
    ]
    for x in lines:
        x.edge, x.far_edge = 179, 507
    mark_starts(lines, 10.0, BODY)
    assert lines[1].starts is False


def test_a_plus_opens_a_list_item_and_its_next_line_hangs_under_its_text() -> None:
    lines = [
        line("+ At the last page of each page numbering scheme a label", 179, 493, 435),
        line("pagesLTS.<numbering scheme> is placed, where <numbering scheme>", 201, 481, 507),
        line("is e. g. arabic, roman, Roman, alph, or Alph. For fnsymbol please use", 201, 469, 507),
    ]
    for x in lines:
        x.edge, x.far_edge = 179, 507
    mark_starts(lines, 10.0, BODY)
    assert [x.starts for x in lines] == [True, False, False]


def test_a_description_set_in_under_its_term_goes_on_whatever_term_follows_it() -> None:
    # gzt's keys: "affiliation={...}" at the edge, its description set in under it; the description's
    # second line, under a full line that had no room for its first word, is no paragraph's indented first
    # line because the next key stands back at the edge
    lines = [
        line("affiliation={<affiliation(s)>}", 71, 479, 224, font="CMTT10"),
        line(
            "Cette clé permet de spécifier une ou plusieurs affiliations. En cas d'affiliations multiples,",
            91,
            464,
            538,
        ),
        line("peuvent être séparées par la commande \\newline.", 91, 452, 316),
        line("photo=<photo>", 71, 438, 135, font="CMTT10"),
    ]
    for x in lines:
        x.edge, x.far_edge = 71, 538
    mark_starts(lines, 10.0, BODY)
    assert [x.starts for x in lines[1:3]] == [True, False]


def bold_led(label: str, rest: str, bottom: float, **kw) -> Line:
    """A paragraph's first line opening with a bold label (IEEEtran's testflow guide, 10 points)."""
    split = 72 + 5.0 * len(label)
    pieces = [
        Piece(72, bottom, split, bottom + 10, label, 10, "SFBX1000", True),
        Piece(split + 5, bottom, 539, bottom + 10, rest, 10, "SFRM1000", False),
    ]
    return Line(pieces, page=kw.pop("page", 9), starts=True, edge=72, far_edge=539, **kw)


def test_a_bold_label_and_its_sentence_or_a_label_opening_paragraph_after_paragraph_head_nothing() -> None:
    # testflow's guide: "Not acceptable: some of the symbols are missing or wrong." runs in before the
    # paragraph's first words; it was a heading, and "Not acceptable:" alone under 6.4.1 another
    sentence = bold_led("Not acceptable: some of the symbols are missing or wrong.", "Versions of", 650)
    (same,) = split_run_in_headings([sentence])
    assert same.kind == "text" and same.text.startswith("Not acceptable: some")
    labels = [bold_led("Not acceptable:", f"pdfTeX versions prior to {n}.", 600 - 40 * n) for n in range(3)]
    between = [line(f"Other text, paragraph {n}.", 72, 580 - 40 * n, starts=True) for n in range(3)]
    lines = [x for pair in zip(labels, between, strict=True) for x in pair]
    assert [x.kind for x in split_run_in_headings(lines)] == ["text"] * 6
    # a run-in heading whose words go on in capitals stays one ("Step 1: Data collection. We ...")
    head, _ = split_run_in_headings([bold_led("Step 1: Data collection.", "We gathered it.", 400)])
    assert (head.kind, head.text) == ("heading", "Step 1: Data collection.")


def test_a_long_bold_line_leading_into_a_list_is_no_heading_and_a_subsection_over_bold_text_is() -> None:
    lead = "In short, the following applications should be of versions at least as recent as:"
    lines = [
        line("It is assumed that Acrobat Reader is what is used to view the PDF.", 82, 358, 425, size=10),
        line(lead, 82, 346, 471, size=10, font="SFBX1000"),
        line("dvips: 5.86f", 82, 322, 137, size=10),
        line("Ghostscript: 8.15", 82, 310, 200, size=10),
    ]
    for x in lines:
        x.edge, x.far_edge = 72, 539
    mark_headings(lines, 10.0)
    assert [x.kind for x in lines] == ["text"] * 4
    # "6.3.1 Version Information" at a page's head over a warning set in bold that fills two lines: the
    # bold run of three lines was taken for running text, the title with it
    lines = [
        line("6.3.1 Version Information", 72, 707, 207, size=10, font="SFBX1000", page=16),
        line(
            "Not acceptable: Ghostscript versions prior to the 8.x series. Versions",
            72,
            689,
            539,
            size=10,
            font="SFBX1000",
            page=16,
            starts=True,
        ),
        line(
            "prior have known bugs that affect LaTeX users, only a subset of which are.",
            72,
            675,
            539,
            size=10,
            font="SFBX1000",
            page=16,
        ),
        line("Users can identify their Ghostscript version via gs -version.", 82, 665, 345, size=10, page=16),
        *(
            line(
                "Versions 7.04 and later feature an improved security mechanism which can",
                72,
                653 - 12 * n,
                539,
                size=10,
                page=16,
            )
            for n in range(4)
        ),
    ]
    for x in lines:
        x.edge, x.far_edge = 72, 539
    mark_headings(lines, 10.0)
    assert [x.kind for x in lines[:4]] == ["heading", "text", "text", "text"]


def test_a_thesis_chapter_set_double_spaced_after_single_spaced_front_matter_keeps_its_paragraphs() -> None:
    # afthesis: the front matter 13.6 points a line, the chapters 20.3; read by the document's pitch, every
    # line of a chapter started a paragraph
    front = [
        line(
            f"front matter line {n} set single spaced and running the width of the page",
            92,
            700 - 13.6 * n,
            519,
            size=10.9,
            page=0,
        )
        for n in range(12)
    ]
    chapter = [
        line(
            "Note: I highly recommend you create each chapter in a separate file including the",
            119,
            655,
            519,
            size=10.9,
            page=1,
            starts=True,
        ),
        line(
            "command and include the file. Then you can use includeonly to process selected",
            92,
            634.7,
            518,
            size=10.9,
            page=1,
        ),
        line(
            "chapters and you avoid having to latex and preview and print your entire document",
            92,
            614.4,
            518,
            size=10.9,
            page=1,
        ),
        line(
            "every time you change a word in it, which saves a great deal of paper and waiting",
            92,
            594.1,
            518,
            size=10.9,
            page=1,
        ),
        line("time.", 92, 573.8, 115, size=10.9, page=1),
        line(
            "The next paragraph opens indented as the first one did and goes on for a while",
            119,
            553.5,
            519,
            size=10.9,
            page=1,
        ),
    ]
    lines = [*front, *chapter]
    for x in lines:
        x.edge, x.far_edge = 92, 519
    mark_starts(lines, 10.9, BODY)
    assert [x.starts for x in chapter] == [True, False, False, False, False, True]


def test_a_page_numbered_by_chapter_or_appendix_is_furniture_and_an_appendix_section_a_heading() -> None:
    # afthesis numbers its pages "1-1", "2-1", "A-1", "VITA-1" at their feet; its appendix sections "A.1"
    feet = ["1-1", "2-1", "A-1", "VITA-1"]
    pages = [
        [
            *(
                line(f"a line of body text number {i} on this page", 92, 690 - 12 * i, page=n)
                for i in range(6)
            ),
            line(foot, 297, 99, 313, page=n),
        ]
        for n, foot in enumerate(feet)
    ]
    mark_furniture(pages)
    assert [page[-1].kind for page in pages] == ["furniture"] * 4
    lines = [
        line("Appendix A. First appendix title", 221, 731, 390, size=12, font="CMTI12"),
        line("A.1 In an appendix", 92, 706, 191, size=10.9, font="CMTI10"),
        *(
            line(f"This is appendix section A.1 and its text, line {i}.", 119, 680 - 20 * i, 519, size=10.9)
            for i in range(4)
        ),
    ]
    mark_headings(lines, 10.9)
    assert [x.kind for x in lines[:3]] == ["heading", "heading", "text"]


def test_a_slide_decks_headline_in_small_type_over_each_frame_title_is_furniture() -> None:
    # beamerPENNstyle: the sections and subsections in 6 points over each slide's 14-point title, set in
    # pieces that change with the slide ("Package" and "Introduction" apart where one is highlighted)
    titles = ["Color Themes", "Installation", "Usage", "Examples", "Definitions"]

    def slide(n: int, together: bool) -> list[Line]:
        head = (
            [line("Package Introduction", 152, 260, 222, size=6, page=n)]
            if together
            else [
                line("Package", 152, 260, 181, size=6, page=n),
                line("Introduction", 190, 260, 222, size=6, page=n),
            ]
        )
        body = [
            line(
                f"what the {titles[n].lower()} slide says, in words of its own, point {i}",
                29,
                176 - 14 * i,
                250 + 10 * i,
                size=10.9,
                page=n,
            )
            for i in range(2 + n)
        ]
        return [*head, line(titles[n], 14, 229 - n, 94, size=14.3, page=n), *body]

    pages = [slide(n, together=n in (2, 3)) for n in range(5)]
    # and listings in small type opening pages at one height: code, not a headline
    cells = ["1 & 2 & 3", "x & y & z", "@ a1+1 & b2", "\\STcopy{>}{a1}"]
    listings = [
        [
            line(
                f"\\begin{{spreadtab}}{{{{tabular}}{{|c|}}}} % example {n}",
                60,
                750,
                300,
                size=6.4,
                font="CMTT10",
                page=n,
            ),
            line(cells[n], 60, 741, 200, size=6.4, font="CMTT10", page=n),
            line("\\end{spreadtab}", 60, 732, 140, size=6.4, font="CMTT10", page=n),
            *(
                line(
                    f"what page {n} explains of it, in its own words, {i}",
                    60,
                    700 - 12 * i,
                    400,
                    size=10,
                    page=n,
                )
                for i in range(3 + n)
            ),
        ]
        for n in range(4)
    ]
    _mark_headlines(pages, 10.9)  # (on the deck, the running heads' rules found no shape repeated enough)
    _mark_headlines(listings, 10.0)
    assert [x.kind for page in pages for x in page if x.size == 6] == ["furniture"] * 8
    assert all(x.kind == "text" for page in pages for x in page if x.size != 6)
    assert [page[0].kind for page in listings] == ["text"] * 4


def test_a_contents_entry_whose_leaders_were_read_apart_stays_in_the_contents() -> None:
    # datetime2-english: "14.12English (IE) Code (datetime2-en-IE.ldf)" and its ". . . . ." stood apart
    # (the leaders taken for maths); the entry was glued to the abstract's end across the page
    entries = [
        line(
            f"14.{n}English ({code}) Code (datetime2-en-{code}.ldf) . . . . . . . . . . 5{n}",
            170,
            560 - 12 * n,
            483,
            size=10,
        )
        for n, code in enumerate(["GB", "US", "CA", "AU"], start=8)
    ]
    words = line("14.12English (IE) Code (datetime2-en-IE.ldf)", 170, 500, 380, size=10)
    leaders = line(". . . . . . . . . . . . .", 389, 500, 483, size=10, kind="equation")
    after = line("Change History", 154, 478, 232, size=10, kind="heading")
    lines = [*entries, words, leaders, after]
    mark_contents(lines)
    assert [x.kind for x in lines] == ["contents"] * 6 + ["heading"]


@pytest.mark.parametrize(
    ("word", "label", "title", "body"),
    [
        ("Chapitre", 22.8, 22.8, 11.0),  # xlop's manual: both in 22.8 points, 51 points apart
        (
            "Chapter",
            17.2,
            20.7,
            10.0,
        ),  # semantex: the label in 17.2 (1.72 times the body) under a larger title
    ],
)
def test_a_chapters_label_in_display_type_is_no_running_head_and_heads_with_its_title(
    word: str, label: float, title: float, body: float
) -> None:
    # each chapter's label stands at one height on its first page: it was taken for a running head, and
    # the title stood alone
    def chapter(n: int, name: str) -> list[Line]:
        return [
            line(f"{word} {n}", 114, 660, 224, size=label, font="CMBX12", page=n),
            line(name, 114, 609, 287, size=title, font="CMBX12", page=n),
            *(
                line(
                    f"chapter {n} text in words of its own, line {i} of it",
                    114,
                    557 - 14 * i,
                    483,
                    size=body,
                    page=n,
                )  # fmt: skip
                for i in range(3 + n)
            ),
        ]

    names = ["Présentation", "Instruction xlop", "Opérations", "Autres commandes"]
    pages = [chapter(n, name) for n, name in enumerate(names, start=1)]
    mark_furniture(pages)
    assert [page[0].kind for page in pages] == ["text"] * 4
    lines = [x for page in pages for x in page]
    mark_headings(lines, body)
    joined = join_wrapped_headings(lines)
    assert [x.text for x in joined if x.kind == "heading"][1] == f"{word} 2 Instruction xlop"


def test_a_bullet_drawn_as_a_shape_before_an_items_first_words_is_read_as_one() -> None:
    # beamerPENNstyle: each item's ball is a stack of shaded circles 7 points across, 5 points left of its
    # words; read as text, the slide's two items ran together as one paragraph
    from types import SimpleNamespace

    from citewise.index.pdf.pages import _drawn_bullets
    from citewise.index.tables import path_boxes

    def path(left: float, bottom: float, right: float, top: float) -> SimpleNamespace:
        return SimpleNamespace(get_bounds=lambda: (left, bottom, right, top), container=None)

    ball = [path(38.7 + d, 174.9 + d, 45.6 - d, 181.8 - d) for d in (0.0, 0.4, 0.8, 1.2)]  # one mark
    inside = path(120, 160, 124, 164)  # a mark between words of a line: no bullet
    rule = path(30, 100, 330, 100.4)  # a rule: no mark
    page = SimpleNamespace(get_objects=lambda filter: [*ball, inside, rule])
    pieces = [
        Piece(51, 170.3, 258, 181.2, "Move the files beamercolorthemepenn.sty and", 10.9, "CMSS10", False),
        Piece(29, 156.3, 115, 167.2, "the words", 10.9, "CMSS10", False),
        Piece(126, 156.3, 300, 167.2, "go on past a drawn mark", 10.9, "CMSS10", False),
    ]
    (bullet,) = _drawn_bullets(path_boxes(page), pieces)
    assert (bullet.text, bullet.left, bullet.bottom, bullet.size) == ("\u2022", 38.7, 170.3, 10.9)
    (line,) = [x for x in group_lines([*pieces, bullet], 3) if "Move" in x.text]
    assert line.text.startswith("\u2022 Move the files")


def test_an_index_read_in_columns_is_kept_out_under_its_heading_and_its_explanation_stays() -> None:
    # apptools: its index in three columns, read column by column; many entries lack the leaders the
    # contents rule goes by ("\\begin . . 31, 34", "\\defaulthook 35, 36", an entry wrapped over two lines)
    from citewise.index.pdf.furniture import mark_index

    def text(words: str) -> Line:
        return line(words, 154, 300, size=8.6)

    heading = line("Index", 154, 448, 190, size=13.8, kind="heading")
    explanation = text("Most index entries refer to code line numbers; the definition of a command is marked")
    group = line("A", 206, 326, 212, size=8.6, kind="heading")
    entries = [
        text("\\appendix . . . . . . . . 9, 48"),
        text("\\begin . . 31, 34, 43, 50, 55"),
        text("\\defaulthook 35, 36, 37, 39"),
        text("\\Expect . . . . . . 36, 39,"),
        text("40, 44, 45, 51, 52, 57"),
        text("\\apptools@origappendix"),
        text(". . . . . . . . . . . . . . 9"),
    ]
    after = line("Change History", 154, 200, 250, size=13.8, kind="heading")
    history = text("v1.0 General: Initial release, with the hook run at the appendix.")
    lines = [heading, explanation, group, *entries, after, history]
    mark_index(lines)
    assert [x.kind for x in lines] == ["heading", "text", "contents", *["contents"] * 7, "heading", "text"]
    # a section named Index that is prose (a paper on database indexes) is left alone
    prose = [line("Index", 90, 500, 130, kind="heading")] + [
        text(f"A B-tree keeps its keys sorted, so a search reads {n} pages at most.") for n in range(3, 9)
    ]
    mark_index(prose)
    assert all(x.kind == "text" for x in prose[1:])


def test_a_square_bullet_more_than_an_em_before_its_words_opens_the_item_s_line() -> None:
    # powerdot's slides: a Dingbats black square 1.3 em before each item's words
    pieces = [
        Piece(31, 497, 43, 515, "\u25a0 ", 17.9, "Dingbats", False),
        Piece(
            66, 496, 457, 517, "Die Vorlage folgt prinzipiell dem CD der FU", 20.7, "NimbusSanL-Regu", False
        ),
        Piece(31, 470, 43, 488, "\u25a0 ", 17.9, "Dingbats", False),
        Piece(
            66, 469, 482, 490, "Bessere Steuerung von Inhaltsverzeichnissen", 20.7, "NimbusSanL-Regu", False
        ),
    ]
    lines = group_lines(pieces, 0)
    assert [x.text for x in lines] == [
        "\u25a0 Die Vorlage folgt prinzipiell dem CD der FU",
        "\u25a0 Bessere Steuerung von Inhaltsverzeichnissen",
    ]
    for x in lines:
        x.edge, x.far_edge = 31, 760
    mark_starts(lines, 20.7, "NimbusSanL-Regu")
    assert all(x.starts for x in lines)


def test_a_short_contents_under_its_heading_is_contents_whatever_its_language() -> None:
    # a slide deck's "Inhaltsverzeichnis" lists its two sections, no page numbers, each a slide's heading
    def deck(heading: str) -> list[Line]:
        bold = "NimbusSanL-Bold"
        return [
            line(heading, 32, 580, size=32.7, font=bold, kind="heading", level=1),
            line("Eine Einführung", 32, 517, size=20.7, font=bold),
            line("Die Vorlage für powerdot", 62, 490, size=20.7),
            line("Eine Einführung", 272, 372, size=32.7, font=bold, kind="heading", level=1, page=1),
            line("Die Vorlage für powerdot", 32, 580, size=32.7, font=bold, kind="heading", level=1, page=2),
            line("Die Vorlage folgt prinzipiell dem CD der FU", 62, 517, size=20.7, page=2),
        ]

    lines = deck("Inhaltsverzeichnis")
    mark_contents(lines)
    assert [x.kind for x in lines] == ["heading", "contents", "contents", "heading", "heading", "text"]
    # two lines repeating headings under another heading are no contents: too few to tell
    lines = deck("Motivation")
    mark_contents(lines)
    assert [x.kind for x in lines] == ["heading", "text", "text", "heading", "heading", "text"]


def test_a_title_slide_s_short_lines_flush_under_the_title_are_no_body() -> None:
    # powerdot's title slide: the title, an event line in bold, the authors, their institutes and a date
    slide = dict(edge=30, far_edge=760)
    lines = [
        line("Wissenschaftliches Schreiben", 30, 298, size=27.3, font="NimbusSanL-Bold", **slide),
        line(
            "Conference on Fabulous Presentations, 2009", 31, 254, size=20.7, font="NimbusSanL-Bold", **slide
        ),
        line("Dipl. Frank.-Wiss. Jana Voß Dr.-Ing. Herbert Voß", 32, 169, size=20.7, **slide),
        line("BTO ZEDAT", 37, 116, size=11.4, **slide),
        line("25. November 2019", 31, 67, size=18.9, **slide),
        line("Die Vorlage folgt prinzipiell dem CD der FU", 62, 517, size=20.7, page=1, **slide),
    ]
    mark_title(lines, 20.7)
    assert [x.kind for x in lines] == ["title", "furniture", "furniture", "furniture", "furniture", "text"]
    # a first page with a sentence under its title is a paper's: its lines stay
    lines = [
        line("Wissenschaftliches Schreiben", 30, 298, size=27.3, font="NimbusSanL-Bold", **slide),
        line("Jana Voß", 31, 254, size=20.7, **slide),
        line("This template follows the university's corporate design.", 31, 200, size=20.7, **slide),
        line("Die Vorlage folgt prinzipiell dem CD der FU", 62, 517, size=20.7, page=1, **slide),
    ]
    mark_title(lines, 20.7)
    assert [x.kind for x in lines] == ["title", "text", "text", "text"]
    # an attendance sheet under its title: a row of cells side by side on one baseline is no title page's
    lines = [
        line("Introduction to My Very Own Science", 168, 516, size=17.2),
        line("Surname, Prename", 63, 373, font="NimbusRomNo9L-Medi"),
        line("04/01/2019", 259, 373, font="NimbusRomNo9L-Medi"),
        line("04/08/2019", 329, 373, font="NimbusRomNo9L-Medi"),
        line("Student's signature", 468, 392, size=8.0),
        line("Surname, Prename", 63, 373, font="NimbusRomNo9L-Medi", page=1),
    ]
    mark_title(lines, 10.0)
    assert [x.kind for x in lines[1:4]] == ["text", "text", "text"]


def test_a_long_contents_entry_with_room_for_two_leader_dots_stays_in_its_run() -> None:
    dots = " . . . . . . . . . . . ."
    lines = [
        line("List of Figures", 134, 658, size=14.3, font="CMBX12", kind="heading", level=1),
        line(f"5 Labels parameters{dots} 8", 149, 585, 477, font="CMR10"),
        line(f"6 A wrong way to include subject information in the letter{dots[:10]} 14", 149, 573, 477),
        line("7 The EnvLab way to include subject information in the letter . . 15", 149, 561, 477),
        line("List of Tables", 134, 526, size=14.3, font="CMBX12", kind="heading", level=1),
        line(f"1 Differences between envelopes, labels and big labels{dots} 7", 150, 501, 477),
        line(f"2 Standard envelope sizes{dots} 7", 149, 489, 477),
        line(f"3 Standard label sizes{dots} 9", 149, 477, 477),
        line("The standard \\makelabels command in the letter class typesets . . 15 labels", 134, 399, 477),
    ]
    mark_contents(lines)
    assert [x.kind for x in lines[1:4]] == ["contents"] * 3
    assert lines[-1].kind == "text"  # two dots mid-line and words after the number: prose


def test_an_overfull_line_of_code_is_no_edge_of_the_text_and_a_full_line_runs_on() -> None:
    # minibox's page: a verbatim display runs 26 points into the margin; the prose ends at 507
    lines = [
        line("The boxes which are showed in these examples are not displayed by default; use", 154, 301, 507),
        line("the frame option to make them appear:", 154, 288, 326),
        line(
            "\\minibox{\\x} \\minibox[frame]{\\x} \\minibox[frame,rule=1pt,pad=0pt]{\\x}",
            160,
            251,
            533,
            font="LMMono10-Regular",
        ),  # fmt: skip
        line("Negative values can be input for pad. Here the text goes on as long as the", 154, 187, 507),
        line("column is wide and ends a line short at the close of its paragraph.", 154, 175, 420),
    ]
    ordered = reading_order(lines)
    assert {x.far_edge for x in ordered} == {507}
    mark_starts(ordered, 11.0, BODY)
    assert [x.starts for x in ordered][:2] == [True, False]


def test_a_description_s_full_first_line_ending_mid_sentence_runs_on_into_its_next() -> None:
    # msc's keys: the key at the margin ending in an italic placeholder (no code by its faces), its default
    # far right, its description set in under it
    def key(name: str, bottom: float, default: str, at: float) -> list[Line]:
        key, placeholder = name.split("=")
        right = 64.5 + 6.3 * len(key)
        pieces = [
            Piece(64.5, bottom, right, bottom + 12, key + "=", 12.0, "CMTT12", False),
            Piece(right + 2, bottom, right + 40, bottom + 12, placeholder, 12.0, "CMTI12", False),
        ]
        return [
            Line(pieces, 0, edge=64, far_edge=531),
            Line(
                [Piece(at, bottom, 530.3, bottom + 12, default, 12.0, "CMR12", False)],
                0,
                edge=64,
                far_edge=531,
            ),
        ]

    def text(words: str, bottom: float, right: float) -> Line:
        return Line(
            [Piece(87.8, bottom, right, bottom + 12, words, 12.0, "CMR12", False)], 0, edge=64, far_edge=531
        )

    lines = [
        *key("/msc/instance width=<width>", 484.9, "(no default, initially 1.6cm)", 390.7),
        text("Specifies the <width> of the instance head and foot symbols.", 470.5, 392.7),
        *key("/msc/label distance=<distance>", 446.1, "(no default, initially 1ex)", 403.0),
        text(
            "Specifies the <distance> between the instance head symbol and the part of the instance",
            431.6,
            531.2,
        ),
        text("name drawn above the head symbol.", 417.2, 273.5),
        *key("/msc/draw head=<colour>", 392.8, "(no default, initially )", 421.5),
        text(
            "Sets the colour of the instance head. If you do not want to draw an instance head, set",
            378.3,
            530.8,
        ),
    ]
    mark_starts(lines, 12.0, "CMR12")
    assert [x.starts for x in lines] == [True, True, True, True, True, True, False, True, True, True]


def test_a_monograph_s_body_set_a_third_wider_than_its_imprint_page_keeps_its_paragraphs() -> None:
    # unigrazpub's demo: the imprint page 10 points a line (and more lines of it than of the body), the body
    # 13.3; read by the imprint's pitch, every line of the body started a paragraph
    imprint = [
        line(
            f"imprint line {n} with the publisher's terms of use and the licence",
            57,
            600 - 10 * n,
            425,
            size=10.0,
            page=0,
        )  # fmt: skip
        for n in range(14)
    ]
    words = "dies hier ist ein blindtext zum testen von textausgaben wer diesen text liest ist selbst".split()
    body = [
        line(" ".join(words[n % 5 :] + words[: n % 5]), 57, 414 - 13.3 * n, 425, size=10.0, page=1)
        for n in range(9)
    ]
    body[-1] = line("vermitteln.", 57, 414 - 13.3 * 8, 105, size=10.0, page=1)
    lines = imprint + body
    for x in lines:
        x.edge, x.far_edge = 57, 426
    mark_starts(lines, 10.0, BODY)
    assert not any(x.starts for x in body[1:])  # one paragraph, its lines going on in lower case


def test_an_item_opening_with_an_em_dash_hangs_its_next_line() -> None:
    # SMF's guide and French manuals: list items opening with an em dash, their next lines hung under the text
    edges = dict(edge=125, far_edge=482, size=10.9, font="SFRM1095")
    lines = [
        line(
            "\u2014 No space before a closing parentheses or bracket, as well as after an",
            125,
            201,
            482,
            **edges,
        ),
        line("opening parentheses or bracket.", 141, 188, 290, **edges),
        line(
            "\u2014 Do not use any \\linebreak, \\pagebreak, \\newpage, etc. in the text.",
            125,
            175,
            481,
            **edges,
        ),
        line(
            "\u2014 Avoid commands as \\hskip, \\hspace or \\vskip, \\vspace in the text, or the",
            125,
            162,
            482,
            **edges,
        ),  # fmt: skip
        line("author's layout fights the journal's.", 141, 149, 300, **edges),
    ]
    mark_starts(lines, 10.9, "SFRM1095")
    assert [x.starts for x in lines] == [True, False, True, True, False]


def test_a_sub_figure_s_caption_and_an_algorithm_s_caption_head_no_section() -> None:
    # jmlr's sample: "(a) Image" under a sub-figure, "Algorithm 2: Moore's Shortest Path" over an algorithm
    lines = [
        line("5.3 Sub-Figures", 90, 700, size=12.0, font="CMBX12"),
        line("Sub-figures are made with the subfigure command, as these two show here.", 90, 680, 521),
        line("(a) Image", 210, 356, 256, font="CMTI10"),
        line("Algorithm 2: Moore's Shortest Path", 90, 300, 300, font="CMBX10"),
        line("Given a connected graph G, the algorithm finds the shortest path to every node.", 90, 280, 521),
    ]
    mark_headings(lines, 11.0)
    assert [x.kind for x in lines] == ["heading", "text", "text", "text", "text"]


def test_a_bold_label_with_a_short_value_beside_it_is_a_field_not_a_run_in_heading() -> None:
    # jmlr's front page: "Editor: Editor's name"; a run-in heading's paragraph goes on in sentences
    def opening(label: str, value: str) -> Line:
        pieces = [
            Piece(90, 596, 124, 606, label, 10, "CMBX10", True),
            Piece(129, 596, 129 + 4.5 * len(value), 606, value, 10, "CMR10", False),
        ]
        return Line(pieces, page=0, starts=True, edge=90, far_edge=521)

    field = opening("Editor: ", "Editor's name")
    head = opening("Data: ", "We use the sample of twelve papers described in the introduction,")
    assert [x.kind for x in split_run_in_headings([field])] == ["text"]
    assert [(x.kind, x.text) for x in split_run_in_headings([head])][0] == ("heading", "Data:")


def test_a_slide_built_item_by_item_is_read_once_from_its_last_step() -> None:
    # beamer's overlays: the slide printed once per step, each page the one before with one more item
    def slide(page: int, items: int) -> list[Line]:
        lines = [line("Block title", 30, 520, size=14.0, page=page, edge=30, far_edge=560)]
        texts = ["Duis eget orci sit amet", "Orci dignissim rutrum", "Sodales, sollicitudin vel, wisi"]
        lines += [line(f"\u2022 {t}", 40, 480 - 24 * n, page=page, edge=30, far_edge=560) for n, t in
                  enumerate(texts[:items])]  # fmt: skip
        return [*lines, line(f"{page + 1} / 4", 520, 20, size=8.0, page=page, edge=30, far_edge=560)]

    other = [
        line("Another slide", 30, 520, size=14.0, page=3, edge=30, far_edge=560),
        line("Aenean faucibus, morbi dolor nulla, malesuada eu", 40, 480, page=3, edge=30, far_edge=560),
        line("4 / 4", 520, 20, size=8.0, page=3, edge=30, far_edge=560),
    ]
    pages = [slide(0, 1), slide(1, 2), slide(2, 3), other]
    mark_furniture(pages)
    assert all(x.kind == "furniture" for x in pages[0] + pages[1])  # the steps: all on the last one
    assert [x.kind for x in pages[2]] == ["text", "text", "text", "text", "furniture"]
    assert [x.kind for x in pages[3]] == ["text", "text", "furniture"]


def test_a_label_ending_in_a_colon_with_its_value_beside_it_heads_no_section() -> None:
    # a form or a title page's fields: "Keywords:" in bold, its value a line of its own on the same baseline
    lines = [
        line("1 Introduction", 90, 700, size=12.0, font="CMBX12"),
        line("Keywords:", 90, 660, 138, font="CMBX10"),
        line("layout analysis, reading order, page furniture", 146, 660, 380),
        line("Maintainer:", 90, 640, 145, font="CMBX10"),
        line("The package is kept by its author, who answers mail about it.", 152, 640, 480),
        line("The package reads pages in the order a person reads them, column by column.", 90, 610, 505),
    ]
    mark_headings(lines, 11.0)
    assert [x.kind for x in lines] == ["heading", "text", "text", "text", "text", "text"]


def test_the_body_is_the_face_with_the_most_letters_not_an_index_s_page_numbers() -> None:
    # nomentbl: a 9 pt index of page numbers and leaders has more characters than the 10 pt text
    text = "Often it is desirable to include the units of nomenclature in a table."
    prose = [line(text, 154, 513, size=10.0, font="CMR10")]
    index = [
        line(
            f"\\c{n} . . . . . . . . . . . 1{n}, 2{n}, 3{n}, 4{n}, 5{n}",
            426,
            600 - 11 * n,
            size=9.0,
            font="CMR9",
        )
        for n in range(4)
    ]
    assert sum(len(x.text) for x in index) > len(text)
    assert body_face([[*prose, *index]]) == (10.0, "CMR10")
    # typewriter is code, not the body, while the rest holds a fifth of the characters
    code = [
        line(
            "\\newcommand\\zvsetup[1]{\\keys_set:nn{zref-vario/setup}{#1}}", 152, 400, size=9.0, font="CMTT9"
        )
    ]
    assert body_face([[*prose, *index, *code * 3]]) == (10.0, "CMR10")
    assert body_face([[*prose, *code * 10]]) == (9.0, "CMTT9")  # a listing: its code is its body


def test_a_listing_s_numbered_lines_are_never_the_body_whatever_their_share() -> None:
    # ftnxtra's documentation: one paragraph of 10 pt prose over three pages of a numbered 9 pt listing; read
    # as the body, the listing made the paragraph "larger than the body", a heading
    prose = [
        line(
            "This package fixes the issue of footnote inside \\caption{}, tabular",
            154,
            523,
            size=10.0,
            font="CMR10",
        )
    ]
    numbered = [
        Line(
            [
                Piece(158, 428 - 11 * n, 166, 435 - 11 * n, f"{n + 1} ", 7.0, "CMR7", False),
                Piece(
                    168,
                    428 - 11 * n,
                    380,
                    437 - 11 * n,
                    "\\expandafter\\FN@sf@@footnote{#1}%",
                    9.0,
                    "CMTT9",
                    False,
                ),
            ],
            page=0,
        )
        for n in range(30)
    ]
    assert all(x.code for x in numbered)
    assert body_face([[*prose, *numbered]]) == (10.0, "CMR10")


def test_a_page_s_foot_that_opens_as_the_other_feet_do_is_one_whatever_it_ends_with() -> None:
    # ftc-notebook: "Notebook. Page 3." on some pages, "Notebook. August 19-25, Task 1, Page 5." on others,
    # and one page's "Notebook. August, Page 4.": a shape of its own, seen once
    ends = [
        "Page {n}.",
        "Page {n}.",
        "August, Page {n}.",
        "August 19-25, Task 1, Page {n}.",
        "August 19-25, Task 1, Page {n}.",
    ]
    pages = [
        [
            line(f"{word} heads a paragraph of this page, which goes on", 57, 700),
            *body(word),
            line("FTC 9773, Robocracy, Engineering Notebook. " + end.format(n=n + 1), 57, 35, 555),
        ]
        for n, (word, end) in enumerate(zip("alpha beta gamma delta epsilon".split(), ends, strict=True))
    ]
    last = [line("The last page's last line stands where the feet stand.", 57, 35, 555), *body("zeta")]
    mark_furniture([*pages, last])
    assert [page[-1].kind for page in pages] == ["furniture"] * 5
    assert last[0].kind == "text"  # its opening words are not the feet's


def test_a_leader_in_smaller_type_joins_its_entry_and_two_entries_under_a_list_s_heading_are_contents() -> (
    None
):
    # ftc-notebook's list of tables: 12 pt entries, 10.9 pt leaders a full em after them, two entries only
    def pieces(text: str, dots: str, bottom: float, right: float) -> list[Piece]:
        return [
            Piece(73, bottom, right, bottom + 12, text, 12.0, "NimbusRomNo9L-Regu", False),
            Piece(right + 12, bottom - 1, 555, bottom + 10, dots, 10.9, "NimbusRomNo9L-Regu", False),
        ]

    entries = [
        *pieces("2 Design goals for the programming chassis.", ". . . . . . . . . . . . . 6", 703, 302),
        *pieces("3 Conclusion after first build.", ". . . . . . . . . . . . . . . . . 7", 689, 228),
    ]
    read = group_lines(entries, 4)
    assert [x.text for x in read] == [
        "2 Design goals for the programming chassis. . . . . . . . . . . . . . 6",
        "3 Conclusion after first build. . . . . . . . . . . . . . . . . . 7",
    ]
    lines = [line("List of Tables", 57, 737, size=24.8, font="NimbusRomNo9L-Medi", kind="heading"), *read]
    lines += [line("Body text of the section, at last.", 57, 420, page=5)]
    mark_contents(lines)
    assert [x.kind for x in lines] == ["heading", "contents", "contents", "text"]


def test_a_described_name_and_its_colon_are_one_line_and_a_field_under_it_starts_a_paragraph() -> None:
    # arrayjobx's command reference: "\newarray" at the margin, ": Define a new array." 6.4 em right of it,
    # "Syntax:" and "Example:" under the description
    pieces = [
        Piece(49, 324, 95, 334, "\\newarray", 10.0, "CMTT10", False),
        Piece(159, 324, 248, 334, ": Define a new array.", 10.0, "CMR10", False),
        Piece(165, 308, 312, 318, "Syntax: \\newarray\\<ArrayName>", 10.0, "CMR10", False),
        Piece(165, 292, 293, 302, "Example: \\newarray\\Values", 10.0, "CMR10", False),
    ]
    lines = group_lines(pieces, 1)
    assert [x.text for x in lines] == [
        "\\newarray : Define a new array.",
        "Syntax: \\newarray\\<ArrayName>",
        "Example: \\newarray\\Values",
    ]
    for x in lines:
        x.edge, x.far_edge = 49, 561
    lines.insert(
        0, line("Each command is described with its syntax and an example.", 49, 350, 400, size=10.0)
    )
    lines[0].edge, lines[0].far_edge = 49, 561
    mark_starts(lines, 10.0, "CMR10")
    # the example goes on from its syntax, which ends with no stop
    assert [x.starts for x in lines] == [True, True, True, False]


def test_a_running_head_titles_a_document_whose_pages_and_metadata_give_none() -> None:
    # interactiveworkbook's quiz: its question at each page's top, "radio.dvi" in the metadata
    from pathlib import Path

    from citewise.index.loaders import _pdf_documents
    from citewise.index.pdf import Layout

    lines = []
    for page, answer in enumerate(["Choose one of the answers below.", "Yes, correct.", "No, incorrect."]):
        lines += [
            line("Question 4. A multiple radio button question.", 37, 755, page=page, kind="furniture"),
            line(answer, 37, 709, page=page),
        ]
    (document,) = _pdf_documents(Path("radio.pdf"), Layout(lines, 3, "radio.dvi", 11.0))
    assert document.title == "Question 4. A multiple radio button question."
    numbered = [line("12 Authors' Guide, March 2022", 90, 755, kind="furniture"), line("Body text.", 90, 600)]
    (guide,) = _pdf_documents(Path("tubguide.pdf"), Layout(numbered, 1, "", 11.0))
    assert guide.title == "Authors' Guide, March 2022"  # without the page's number
    two = [line("Draft 3", 90, 755, kind="furniture"), line("Body text.", 90, 600)]
    (draft,) = _pdf_documents(Path("notes.pdf"), Layout(two, 1, "", 11.0))
    assert draft.title == "notes"  # a head of one word says no more than the file's name


def test_lines_in_larger_type_than_the_body_s_are_set_further_apart_and_go_on() -> None:
    # a proposal template: instructions (the body, by letters) at 7.2 points 9.5 apart in paragraphs 12.35
    # apart (a skip of 1.1 pitches), its abstract at 8.1 points 11 apart: by the body's skip every line of
    # the abstract was a paragraph
    tops = [760 - 9.5 * n - 2.85 * (n // 2) for n in range(32)]  # paragraphs of two lines
    small = [
        line(f"Explain the concept of your project, line {n} of it, and go on", 52, top, 544)
        for n, top in enumerate(tops)
    ]
    for x in small:
        x.size = 7.2
    abstract = [
        line("Writing grant proposals is a collaborative effort that requires the many", 88, 500, 519),
        line("use of an ASCII-based format like LaTeX allows to coordinate the process", 76, 489, 519),
        line("allowing the proposal writing team to concentrate on the contents rather", 76, 478, 519),
        line("and revisions.", 76, 467, 125),
    ]
    for x in abstract:
        x.size, x.edge, x.far_edge = 8.1, 76, 519
    mark_starts([*small, *abstract], 7.2, BODY)
    assert [x.starts for x in abstract] == [True, False, False, False]


def test_a_dated_entry_s_lines_hanging_most_of_five_ems_under_it_go_on_with_it() -> None:
    # textpos's change log: "1.10, 2020 September 26 • Use the ltshipout package ..." at the margin, its
    # next lines 4.7 em right of it
    edges = {"edge": 154, "far_edge": 507, "size": 10.0}
    lines = [
        line(
            "1.10, 2020 September 26 • Use the ltshipout package to place boxes in absolute",
            154,
            645,
            507,
            **edges,
        ),
        line("mode. Therefore the package should now be compatible with LaTeX3.", 201, 633, 506, **edges),
        line("Many thanks to Ulrike Fischer for guidance on the changes which were", 201, 621, 507, **edges),
        line("required here.", 201, 609, 260, **edges),
        line("1.10b1, 2020 January 26 • Add the TPShowGrid macro to the package.", 154, 589, 414, **edges),
    ]
    mark_starts(lines, 10.0, BODY)
    assert [x.starts for x in lines] == [True, False, False, False, True]


def test_a_chicago_bibliography_entry_s_url_broken_over_its_hanging_line_stays_whole() -> None:
    # biblatex-chicago's sample: "Braun, Caroline. Reply to ... https: //www.q" over "uora. com/...", the
    # entry hanging 2 em, the next entry back at the margin (read as an indented paragraph's first line)
    edges = {"edge": 69, "far_edge": 527, "size": 12.0}
    lines = [
        line(
            "Braun, Caroline. Reply to “How did the ‘cool kids’ from high school turn out?” https: //www.q",
            69,
            653,
            527,
            **edges,
        ),
        line("uora. com/How-did-the-cool-kids-from-high-school-turn-out/.", 93, 639, 405, **edges),
        line(
            "Brown, George C., ed. “A Swedish Traveler in Early Wisconsin: The Observations of Frederika",
            69,
            617,
            527,
            **edges,
        ),
        line(
            "Bremer.” Pts. 1 and 2. Wisconsin Magazine of History 61 (Summer 1978): 300–318.",
            93,
            603,
            500,
            **edges,
        ),
    ]
    mark_starts(lines, 12.0, BODY)
    assert [x.starts for x in lines] == [True, False, True, False]


def test_cells_a_hair_apart_on_one_baseline_set_no_pitch() -> None:
    # zed-csp: a symbol table's cells on one baseline, 0.00006 points apart, read as consecutive lines
    # made the pitch 0.00006 and every line of the document a paragraph
    from citewise.index.pdf.lines import line_pitch

    prose = [
        line(
            f"The language and models of CSP have undergone a gradual evolution {n}",
            69,
            641 - 14.5 * n,
            542,
            size=12.0,
        )
        for n in range(6)
    ]
    cells = []
    for n in range(30):
        cells += [
            line(f"\\Stop{n}", 69, 400 - 14.5 * (n % 10) + 0.00006, 150, size=12.0, page=1),
            line(f"STOP{n}", 200, 400 - 14.5 * (n % 10), 260, size=12.0, page=1),
        ]
    assert abs(line_pitch([*prose, *cells], 12.0) - 14.5) < 0.1
    mark_starts(prose, 12.0, BODY)
    assert [x.starts for x in prose] == [True] + [False] * 5


def test_paragraphs_set_flush_and_close_start_after_a_sentence_that_ended_short() -> None:
    # graphfig's manual, witharrows' French one: no indent, no skip; a paragraph starts where a sentence
    # ended short and the next line opens another, at the column's edge
    pitch, texts = (
        14.4,
        [
            ("This package provides some commands to make the use of graphic files in", 491),
            ("LaTeX simpler.", 175),
            ("It declares the Figure environment (capitalized!) and the two commands", 491),
            ("graphfile and graphfile*. Combining these commands, it is possible", 491),
            ("to include graphic files in a document very simply.", 394),
            ("At now, two options are available: subfigure and AllowH.", 427),
            ("The subfigure option allows the use of sub-figures inside a Figure envi-", 490),
            ("ronment, in order to place multiple pictures in a single figure.", 400),
        ],
    )
    lines = [line(text, 103, 436 - pitch * n, right, size=12.0, edge=103, far_edge=491)
             for n, (text, right) in enumerate(texts)]  # fmt: skip
    mark_starts(lines, 12.0, BODY)
    assert [x.starts for x in lines] == [True, False, True, False, False, True, True, False]


def test_a_sentence_that_ended_short_over_a_small_skip_ends_its_paragraph() -> None:
    # multido's manual: paragraphs flush, a skip of 1.25 pitches; a line under a raised logo stands as far
    # down inside a paragraph, but under a line that ran full
    rows = [
        ("multido.tex/multido.sty contains the multido macro, which is a loop", 609, 499),
        ("facility for Generic TeX. This macro happens to be useful for drawing pic-", 595, 499),
        ("tures, and was originally developed for the PSTricks package, but you can", 580, 499),
        ("use it for other purposes as well.", 566, 276),
        ("A special feature is support of fixed-point addition. For example, PSTricks", 548, 499),
        ("uses the multido to put numbers on axes, much like in the following LaTeX", 531, 499),
        ("example as shown and described in the text before the code below it is.", 517, 499),
        ("The first argument is the interesting one. variables is a comma-separated", 502, 499),
        ("list of variable declarations, each of them of the form shown below.", 488, 440),
    ]
    lines = [
        line(text, 111, bottom, right, size=12.0, edge=111, far_edge=499) for text, bottom, right in rows
    ]
    mark_starts(lines, 12.0, BODY)
    assert [x.starts for x in lines] == [True, False, False, False, True, False, False, False, False]


def test_a_list_items_second_paragraph_a_little_further_down_starts_a_paragraph() -> None:
    # rulerbox's list: an item's lines hang right of its bullet, 13.5 points apart; its second paragraph
    # stands 18 below the first one's short last line (paragraphs in the body are indented, not spaced)
    rows = [
        (118, "Four dimensions are involved in the rulerbox package. They can be redefined", 476, 361),
        (118, "locally by their names in TEX style, or globally by setlength in LaTeX style.", 476, 347),
        (134, "\u2022 \\rulerunit: The least count of rulers, i.e. distance between adjacent", 476, 306),
        (145, "ticks in rulers. Default is 1mm, one millimetre, which produces rulers", 476, 293),
        (145, "other decimal length systems, or draw rulers of relative scales.", 442, 279),
        (145, "For example, if one wants to switch to Chinese length units, he may", 476, 261),
        (145, "define the unit anew, which makes the least count a third of a millimetre.", 469, 247),
        (134, "\u2022 \\rulersep: Distance between box edges and rulers. Default is 3pt.", 467, 204),
    ]
    lines = [line(text, left, bottom, right, size=10.9, edge=118, far_edge=476)
             for left, text, right, bottom in rows]  # fmt: skip
    mark_starts(lines, 10.9, BODY)
    assert [x.starts for x in lines] == [True, False, True, False, False, True, False, True]


def test_a_document_that_indents_its_paragraphs_is_not_read_as_flush() -> None:
    # the same lines where paragraphs open indented: a line at the edge after a short sentence goes on
    pitch, texts = (
        14.4,
        [
            (118, "This package provides some commands to make the use of graphic files in", 491),
            (103, "LaTeX simpler.", 175),
            (118, "It declares the Figure environment (capitalized!) and the two commands", 491),
            (103, "graphfile and graphfile*. Combining these commands, it is possible", 491),
            (103, "to include graphic files in a document very simply.", 394),
            (118, "At now, two options are available: subfigure and AllowH.", 427),
            (103, "The subfigure option allows the use of sub-figures inside a Figure envi-", 490),
            (118, "Another paragraph opens indented, as every one of this document does.", 491),
            (103, "Its second line is at the edge; the line below it is there too.", 420),
            (103, "Set short by a display the line above left out, it goes on the sentence.", 491),
            (103, "A short line at the edge, the sentence ended.", 300),
            (103, "Then a capital at the edge after it, in the same paragraph, to its end.", 491),
        ],
    )
    lines = [line(text, left, 436 - pitch * n, right, size=12.0, edge=103, far_edge=491)
             for n, (left, text, right) in enumerate(texts)]  # fmt: skip
    mark_starts(lines, 12.0, BODY)
    assert [x.starts for x in lines] == [True, False, True, False, False, True, False, True] + [False] * 4


def test_ghostscript_s_renamed_tex_fonts_are_tex_fonts() -> None:
    # Ghostscript 7 renames a re-encoded font "CMR12~15": not taken for a TeX font, its weight (732) made
    # graphfig's whole body bold, and a bold "Abstract" in CMBX10 no heading
    from citewise.index.pdf.lines import TEX_FONT

    assert TEX_FONT.match("CMR12~15") and TEX_FONT.match("CMTT12~18") and TEX_FONT.match("CMR10")
    assert not TEX_FONT.match("CMR12~Bold")


def test_a_line_going_on_the_sentence_above_is_no_tag_over_a_table_set_in_under_it() -> None:
    # breakurl: "The default behavior ... after any sequence of" / "these characters:" over a table of the
    # characters set in at 208 was read as a tag ("these characters:") and its description
    from citewise.index.pdf.order import mark_tags

    def at(text: str, left: float, bottom: float, right: float) -> Line:
        return line(text, left, bottom, right, size=10.0, edge=154, far_edge=508, column="full")

    lines = [
        at("The default behavior of the package is to break the link after any sequence of", 169, 595, 508),
        at("these characters:", 154, 583, 225),
        *[at(f"'{c}' (sign {n}) '/' (slash) '.' (dot)", 208, 566 - 12 * n, 420) for n, c in enumerate(":?_")],
        at("Notice that hyphens are not break characters by default, as the text says here.", 169, 520, 508),
        at(
            "It goes on at the edge, to the end of the column, a full line of the manual's text.",
            154,
            508,
            508,
        ),
    ]
    mark_tags(lines)
    assert lines[1].hang == 0.0
    mark_starts(lines, 10.0, BODY)
    assert not lines[1].starts


def test_an_item_opening_with_a_bold_label_of_the_last_one_s_shape_starts_at_a_page_s_top() -> None:
    # breakurl's change log: "v1.23 \\hypersetup now works anywhere." at a page's foot, "v1.22 Corrected
    # ..." at the next one's top; on one page the skip between items told them apart
    def item(label: str, text: str, bottom: float, page: int) -> Line:
        pieces = [
            Piece(154, bottom, 178, bottom + 10, label + " ", 10.0, "SFBX1000", True),
            Piece(179, bottom, 179 + 4.5 * len(text), bottom + 10, text, 10.0, BODY, False),
        ]
        return Line(pieces, page=page, edge=154, far_edge=507)

    lines = [
        item("v1.30", "Breaks are now allowed before percent sign.", 206, 2),
        item("v1.23", "The command now works anywhere.", 186, 2),
        item("v1.22", "Corrected blank lines appearing inside tables.", 715, 3),
    ]
    mark_starts(lines, 10.0, BODY)
    assert [x.starts for x in lines] == [True, True, True]


def test_a_title_s_footnote_marks_are_left_out_of_it() -> None:
    # graphfig's "Package graphfig∗", econ-bst's "... (ver. 3.1.1)∗": the mark points at a footnote; an
    # asterisk that is part of a name ("Retro* search") and a section sign opening a title stay
    from citewise.index.loaders import NOTE_MARKS

    assert NOTE_MARKS.sub("", "Package graphfig\u2217") == "Package graphfig"
    assert NOTE_MARKS.sub("", "BibTeX style for economics (ver. 3.1.1)\u2217") == (
        "BibTeX style for economics (ver. 3.1.1)"
    )
    assert (
        NOTE_MARKS.sub("", "A specimen title\u2020,\u2021 for a journal") == "A specimen title for a journal"
    )
    assert NOTE_MARKS.sub("", "Retro* search and \u00a71 of it") == "Retro* search and \u00a71 of it"
    # marks whose glyphs map to no character (elstest-5p's "?,??"); a question keeps its "?"
    assert NOTE_MARKS.sub("", "This is a specimen ab title?,??") == "This is a specimen ab title"
    assert NOTE_MARKS.sub("", "Is it a planet? A survey") == "Is it a planet? A survey"


def test_a_numbered_equation_read_as_tall_text_heads_no_section() -> None:
    # a scanned page's display "F(a) = ... (3)": no maths font tells it, its integral signs make it tall
    body = [line(f"Body line {n} of the scanned paper, a full line of its text.", 72, 600 - 12 * n, 524,
                 size=10.0, font="OCR") for n in range(8)]  # fmt: skip
    equation = line("F(a) = ace' + [altar (3)", 200, 490, 400, size=15.0, font="OCR")
    heading = line("2 Results", 72, 470, 140, size=15.0, font="OCR")
    lines = [*body, equation, heading]
    mark_headings(lines, 10.0)
    assert (equation.kind, heading.kind) == ("text", "heading")


def test_a_heading_word_alone_read_by_ocr_heads_its_section_whatever_its_measured_weight() -> None:
    # "Abstract" in 9 pt bold over the abstract: OCR's weight is a guess, and it read as regular
    lines = [line("Abstract", 278, 631, 318, size=9.0, font="OCR")]
    lines += [line(f"Abstract line {n} of the paper, set in 9 points.", 96, 613 - 11 * n, 499, size=9.0,
                   font="OCR") for n in range(10)]  # fmt: skip
    lines += [line(f"Body line {n} in the text's size.", 72, 400 - 12 * n, 524, size=10.0, font="OCR")
              for n in range(30)]  # fmt: skip
    mark_headings(lines, 10.0)
    assert lines[0].kind == "heading"


def test_a_numbered_heading_in_small_capitals_read_by_ocr_is_a_heading_though_it_measures_small() -> None:
    # IEEE's "III. THE SIMULATED PROOF OF THE THEORETICAL" / "RESULTS": small capitals are as tall as
    # lower case, so OCR measures them 8 points in a 10 point paper
    lines = [line(f"Body line {n} of the scanned paper, a full line of its column.", 49, 700 - 12 * n, 300,
                  size=10.0, font="OCR", far_edge=300, edge=49) for n in range(20)]  # fmt: skip
    heading = line("III. THE SIMULATED PROOF OF THE THEORETICAL", 67, 440, 282, size=8.0, font="OCR",
                   far_edge=300, edge=49)  # fmt: skip
    unnumbered = line(
        "SOME WORDS IN CAPITALS HERE", 67, 300, 250, size=8.0, font="OCR", far_edge=300, edge=49
    )
    lines += [heading, unnumbered]
    mark_headings(lines, 10.0)
    assert (heading.kind, unnumbered.kind) == ("heading", "text")


def test_a_list_set_in_under_flush_paragraphs_hides_no_paragraph_start() -> None:
    # HA-prosper sets paragraphs flush (no indent, no skip) and its lists' items 2.5 ems in: the items,
    # counted as indented paragraphs, made the document read as indented, and 0.36 of its paragraphs whole
    texts = [
        ("This manual provides information about working with the package and its", 90, 500),
        ("styles, for the slides you make.", 90, 300),
        ("If you want to start working with it immediately, have a look at the", 90, 500),
        ("examples in the fifth section.", 90, 280),
        ("Note that it uses the xkeyval package, which is available from the", 90, 500),
        ("archive. Do install it.", 90, 230),
        ("These people contributed styles to it, each one named after them.", 90, 490),
        ("Jack Stalnaker: Aggie style.", 115, 300),
        ("Laurent Jacques: Fyma style.", 115, 300),
        ("Mathieu Goutelle: Capsules style.", 115, 320),
        ("Further, this documentation was up to date in 2004, and might be", 90, 500),
        ("outdated by now.", 90, 200),
    ]
    lines = [line(text, left, 700 - 12 * n, right, size=10) for n, (text, left, right) in enumerate(texts)]
    mark_starts(lines, 10.0, BODY)
    assert [x.text[:8] for x in lines if x.starts] == [
        "This man",
        "If you w",
        "Note tha",
        "These pe",
        "Jack Sta",
        "Laurent ",
        "Mathieu ",
        "Further,",
    ]


def test_a_name_in_lower_case_opens_a_sentence_after_a_full_stop() -> None:
    # tabularcalc's French manual: "... L'affichage des nombres se fait sous forme décimale." over
    # "tabularcalc fonctionne sous LaTeX ...", a paragraph of its own; an abbreviation's stop ends nothing
    from citewise.index.pdf.starts import _sentence_after

    short = line("standard tabular. L'affichage des nombres se fait sous forme décimale.", 78, 216, 388)
    assert _sentence_after(
        short, line("tabularcalc fonctionne sous LaTeX et charge les extensions fp,", 78, 202)
    )
    assert not _sentence_after(short, line("and the numbers are printed in decimal form, as", 78, 202))
    for stop in ("such as tables, figures, etc.", "several packages, e.g.", "the value is 3."):
        assert not _sentence_after(line(stop, 78, 216, 200), line("tabularcalc loads them", 78, 202)), stop
    assert not _sentence_after(
        line("as the following shows:", 78, 216, 200), line("tabularcalc loads", 78, 202)
    )


def test_kpfonts_typewriter_is_code_and_its_roman_is_not() -> None:
    # semantex sets its code in kpfonts' "Tt-Kp-Regular": the lines ran on into the prose as its sentences
    from citewise.index.pdf.lines import MONO_FONT

    assert MONO_FONT.search("JXPSHV+Tt-Kp-Regular") and MONO_FONT.search("Tt-Kp-Regular-Slant_167")
    assert not any(
        MONO_FONT.search(name) for name in ("GJMOWR+Kp-Regular", "ABCDEF+Matt-Regular", "Kp--M-Italic")
    )
    lines = [
        line("To get started, load the package with", 114, 600, 300, size=10, font="Kp-Regular"),
        line("\\usepackage{semantex}", 114, 580, 220, size=9, font="JXPSHV+Tt-Kp-Regular"),
        line(
            "The system is object-oriented; all entities are objects.",
            114,
            560,
            400,
            size=10,
            font="Kp-Regular",
        ),
    ]
    assert [x.code for x in lines] == [False, True, False]


def test_a_bitmap_font_s_control_codes_read_in_tex_s_encoding() -> None:
    # pas-cv's CV (dvips' Type 3 fonts, no name, no Unicode map): "Certi\x1ccat", guillemets as \x13 \x14;
    # a page of glyph codes (metre's, 26-53 kinds) is garbled, left to OCR
    from citewise.index.pdf.lines import TEX_OT1, TEX_T1, tex_encoding

    prose = "Enseignant titulaire en Mathématiques, Education Nationale, lycées et collèges de la région " * 3
    cork = tex_encoding([prose, "C2I N2E, Certi\x1ccat Informatique", "Ecritures \x13 Ainsi de suite \x14,"])
    assert cork is TEX_T1
    assert "Certi\x1ccat \x13 Ainsi \x14".translate(cork) == "Certificat \u00ab Ainsi \u00bb"
    old = tex_encoding([prose, "the \x0crst and most e\x0ecient of them", "a \x0bne \x0dag"])
    assert old is TEX_OT1 and "e\x0ecient \x0crst".translate(old) == "efficient first"
    assert tex_encoding([prose, "nor \x13 alone"]) is None
    garbled = "".join(chr(c) for c in range(1, 31) if chr(c) not in "\t\n\r") + "N OQPSR4TVUJPSR^TWKXZY"
    assert tex_encoding([prose, garbled]) is None


def ghostscript_bitmap_pdf(lines: list[str]) -> bytes:
    """A page as dvips + ESP Ghostscript 8.15 wrote TUGboat's octavo article: one Type 3 font in device
    pixels (a glyph unit one pixel at 600 dpi, the size 0.12), its glyphs named by their codes in base 36,
    and a Unicode map that reads "c" (glyph "CR") as a carriage return."""
    digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    name = {c: digits[(ord(c) + 360) // 36] + digits[(ord(c) + 360) % 36] for c in "".join(lines) + "()"}
    em = 83  # pixels in an em of 10 pt type at 600 dpi
    objects: list[bytes] = []

    def add(body: bytes, stream: bytes | None = None) -> int:
        if stream is not None:
            body = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
        objects.append(body)
        return len(objects)

    procs = []
    for c, glyph in sorted(name.items()):
        tall, deep = (
            (0.75, 0.25) if c in "()" else (0.7, 0.0) if c.isupper() or c in "bdfhklt" else (0.45, 0.0)
        )
        box = (
            f"{em // 2} 0 0 {-int(tall * em)} {em // 2} {int(deep * em)} d1 0 {-int(tall * em)} 35 {em} re f"
        )
        procs.append(f"/{glyph} {add(b'', box.encode())} 0 R")
    codes = sorted(ord(c) for c in name)
    cmap = (
        b"begincmap 1 begincodespacerange <00><ff> endcodespacerange 1 beginbfrange <63><63><000d> endbfrange"
    )
    differences = " ".join(f"{ord(c)} /{glyph}" for c, glyph in sorted(name.items()))
    font = add(
        f"<< /Type /Font /Subtype /Type3 /FontBBox [0 0 1000 1000] /FontMatrix [1 0 0 -1 0 0] "
        f"/CharProcs << {' '.join(procs)} >> /ToUnicode {add(b'', cmap + b' endcmap')} 0 R "
        f"/Encoding << /BaseEncoding /WinAnsiEncoding /Differences [{differences}] >> /FirstChar {codes[0]} "
        f"/LastChar {codes[-1]} /Widths [{' '.join([str(em // 2)] * (codes[-1] - codes[0] + 1))}] >>".encode()
    )
    words = []
    for row, text in enumerate(lines):
        x = 72.0
        for word in text.split():
            words.append(f"BT /F1 0.12 Tf 1 0 0 -1 {x:.1f} {700 - 12 * row} Tm <{word.encode().hex()}> Tj ET")
            x += (len(word) + 0.6) * em // 2 * 0.12
    content = add(b"", "\n".join(words).encode())
    page = add(
        f"<< /Type /Page /Parent {len(objects) + 2} 0 R /MediaBox [0 0 612 792] "
        f"/Resources << /Font << /F1 {font} 0 R >> >> /Contents {content} 0 R >>".encode()
    )
    add(f"<< /Type /Pages /Kids [{page} 0 R] /Count 1 >>".encode())
    root = add(f"<< /Type /Catalog /Pages {len(objects)} 0 R >>".encode())
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    table = b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"xref\n0 %d\n0000000000 65535 f \n%s" % (len(objects) + 1, table)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        root,
        len(out),
    )
    return bytes(out)


def test_ghostscript_s_bitmap_fonts_in_pixels_read_at_their_size_and_with_their_c(tmp_path) -> None:
    # tub-octavo and minipage-marginpar read 0 of their paragraphs: every "c" came out as a carriage return
    # ("Pa\rkage", read as OT1's "fl"), and the type measured 0.12 pt, each object a word of its own
    from citewise.index.loaders import load_path
    from citewise.index.pdf import read_layout

    text = [
        "The octavo package can produce classical books (in octavo) of a",
        "classic design, with margins calculated according to late Gothic",
        "precepts. Its pages keep a uniform printing grid, and a page can",
        "carry a caption in a quiet face. Such a package can be loaded once.",
    ]
    path = tmp_path / "octavo.pdf"
    path.write_bytes(ghostscript_bitmap_pdf(text))
    layout = read_layout(path, path.read_bytes())
    assert 9 <= layout.body_size <= 11  # an em's height: 10 pt type
    read = " ".join(paragraph.text for paragraph in load_path(path)[0].paragraphs)
    assert "classic design, with margins calculated according to late Gothic precepts." in read


def test_ghostscript_s_glyph_names_of_control_characters_read_as_their_codes() -> None:
    # minipage-marginpar (dvips + ESP Ghostscript 8.15, T1): glyph "CR" is code 99, "BS" 64; T1's "ß" at 255
    from citewise.index.pdf.lines import tex_encoding

    text = "Innerhalb von Boxen wie einer minipage sind \\marginpar-Befehle ni\rht erlaubt, hei\xfft"
    page = [text, "Dieses Pa\rkage de\x1cniert \\mpgmpar\x08save als \x12Beh\xe4lter\x10 f\xfcr sie."]
    table = tex_encoding(page)
    assert table is not None
    assert (
        " ".join(page)
        .translate(table)
        .endswith("Dieses Package definiert \\mpgmpar@save als „Behälter“ für sie.")
    )
    assert "nicht erlaubt, heißt" in text.translate(table)
    octavo = tex_encoding([text, "[1\u2104 D. Knuth. The TeXbook. The most e\u00c6\rient way to set type."])
    assert octavo is not None and "[1\u2104 ... e\u00c6\rient".translate(octavo) == "[1] ... efficient"
    old = tex_encoding(["a \x0bne \x0dag " + text.replace("\r", "c")])  # OT1's fl beside c's of their own
    assert old is not None and "\x0dag".translate(old) == "flag"


def test_a_table_of_contents_heading_is_no_parent_of_the_sections_after_it() -> None:
    # mi-solns: "Table of Contents" set larger than "1. Introduction", which was filed under it
    from citewise.index.loaders import _SectionPath

    path = _SectionPath()
    path.enter(1, "Table of Contents")
    path.close_contents()
    assert path.enter(2, "1. Introduction") == "1. Introduction"
    path.close_contents()  # a section's heading stays
    assert path.enter(3, "1.1 Scope") == "1. Introduction > 1.1 Scope"
    slides = _SectionPath()
    slides.enter(1, "Overview")  # a real section's heading elsewhere: it stays a parent
    slides.close_contents()
    assert slides.enter(2, "Background") == "Overview > Background"
