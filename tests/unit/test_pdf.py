"""Typeset papers read as their authors wrote them: columns in order, headings as sections, no running heads,
page numbers, footnotes or display equations in the text, words broken over lines made whole, and a
bibliography linked to the citations. The PDFs are made from the sources beside them (tests/data/pdf,
`make`): by pdflatex, one two-column paper with numbered citations and one single-column with author-year;
by Chromium from HTML, one justified two-column page with the browser's own header and footer; that page
scanned (tests/data/scans: 300 dpi, black and white, no text layer) for OCR; and a manual as people ship
them (a contents list, a three-line footer on every page, lists, an option list, code, margin line numbers,
and more example text in smaller faces than text in its body face); and a letter set by revtex as APS
journals set it (two columns balanced above a rule, the reference list below it in two columns of its own,
with no heading, in smaller type that outweighs the short body); and a conference paper set by IEEEtran
(small-capital section heads, italic subsections, a run-in "Abstract", the references in small type after
the last column's text); and a guide as small projects set theirs (a drop capital, headings in small capitals
and headings told by space alone, a description list, a figure included from another PDF, and an annex
"References" of advice after the reference list).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from support.pdfboxes import garbled, turned

from citewise.index import pdf
from citewise.index.loaders import LoadError, load_path
from citewise.index.ocr import available as ocr_available
from citewise.index.pdf.furniture import _mark_stamps
from citewise.index.pdf.headings import _set_apart
from citewise.index.pdf.lines import BOLD_FONT, Line, Piece

PAPERS = Path(__file__).parent.parent / "data" / "pdf"
SCANS = Path(__file__).parent.parent / "data" / "scans"
FURNITURE = (
    "citewise test papers",
    "Footnote text",
    "Tidal heating of rocky planets",
    "Citations for retrieval",
)


def read(name: str):
    (document,) = load_path(PAPERS / name)
    return document


def test_two_columns_numbered_citations() -> None:
    document = read("tidal.pdf")
    assert document.title == "Tidal heating of rocky exoplanets around small stars"
    assert document.metadata == {"pages": 1}
    sections = [(p.section, p.text.split()[0]) for p in document.paragraphs]
    assert sections == [
        ("Abstract", "We"),
        ("1 Introduction", "Rocky"),
        ("1 Introduction", "Tidal"),
        ("1 Introduction", "The"),
        ("1 Introduction > 1.1 Models and assumptions", "The"),
        ("1 Introduction > 1.1 Models and assumptions", "The"),
        ("2 Results", "For"),
        ("2 Results", "Characteristically,"),
        ("2 Results", "Older"),
        ("3 Conclusions", "Tidal"),
    ]
    text = " ".join(p.text for p in document.paragraphs)
    assert not any(furniture in text for furniture in FURNITURE)
    # the display equation is left out; the sentence after it is its own paragraph
    assert "21" not in text and document.paragraphs[3].text.startswith("The equation above gives")
    # words the typesetter broke over lines are whole again
    assert "eccentricity" in document.paragraphs[2].text and "Characteristically" in text
    assert document.paragraphs[1].text.endswith("dissipates heat in its mantle.")
    assert [p.citations for p in document.paragraphs[1:3]] == [("1", "2"), ("3",)]
    assert {key: entry.text.split(".")[0] for key, entry in document.bibliography.items()} == {
        "1": "J",
        "2": "L",
        "3": "M",
    }
    assert document.bibliography["3"].text == (
        "M. Rossi, P. Dupont, and Q. Lee. Rigidity of hot mantles and the tidal response of rocky planets. "
        "Icarus, 300:100\u2013110, 2019."
    )


def test_a_browser_printed_justified_two_column_page() -> None:
    # Chromium draws each glyph as its own object and spaces justified words further apart than a
    # gutter's 0.8 em: before, every word or two was read as a line of its own and a paragraph
    document = read("spectrum.pdf")
    assert document.title == "Sharing radio spectrum between dense cellular networks"  # not <title>
    sections = [(p.section, p.text.split()[0]) for p in document.paragraphs]
    assert sections == [
        ("Abstract", "Operators"),
        ("1 Introduction", "Cellular"),
        ("1 Introduction", "Licensed"),
        ("1 Introduction", "Sharing"),
        ("2 Three sharing schemes", "Under"),
        ("2 Three sharing schemes", "A"),
        ("2 Three sharing schemes", "A"),
        ("3 Results", "We"),
        ("3 Results", "The"),
        ("4 Conclusions", "Coordination"),
    ]
    source = (PAPERS / "spectrum.html").read_text(encoding="utf-8")
    written = re.findall(r"<p>([^<]+)</p>", source)
    # every word, in order, whole; "small-" at a line's end keeps the hyphen of "small-cell"
    assert [p.text for p in document.paragraphs] == written[:10]
    text = " ".join(p.text for p in document.paragraphs)
    # the browser's header (date, time, page title) and footer (file URL, "1/1") are page furniture
    assert not any(stamp in text for stamp in ("PM", "Spectrum sharing notes", "file:", "1/1", "Ada Writer"))
    # the reference list, set small at the foot of the column, is no footnote
    assert [p.citations for p in document.paragraphs[1:3]] == [("1",), ("2",)]
    assert document.bibliography["3"].text.startswith("M. Rossi and P. Dupont. Real-time spectrum markets")


def test_one_column_author_year_citations() -> None:
    document = read("retrieval.pdf")
    assert document.title == "Citations as evidence in retrieval-augmented question answering"
    assert document.metadata == {"pages": 2}
    assert [p.section for p in document.paragraphs] == [
        "Abstract", "1 Background", "1 Background", "2 Method", "2 Method", "3 Results", "4 Discussion",
    ]  # fmt: skip
    abstract = document.paragraphs[0].text
    assert abstract.startswith("Answers generated") and abstract.endswith("how often those links hold.")
    text = " ".join(p.text for p in document.paragraphs)
    assert not any(furniture in text for furniture in FURNITURE)
    assert "precision =" not in text and "(1)" not in text
    # the paragraph goes on after the page break, without the page number or the footnote at its foot
    assert document.paragraphs[1].text.endswith("the cited passage supports the sentence it follows.")
    assert [p.citations for p in document.paragraphs] == [
        (), ("lewis2020",), ("gao2023",), (), ("lewis2020", "gao2023"), ("brown2021",), (),
    ]  # fmt: skip
    assert list(document.bibliography) == ["brown2021", "gao2023", "lewis2020"]
    assert document.bibliography["gao2023"].text == (
        "T. Gao, H. Yen, J. Yu, and D. Chen. Enabling large language models to generate text with citations. "
        "In Proceedings of EMNLP, 2023."
    )


def test_a_manual_read_into_its_sections_items_and_code() -> None:
    document = read("manual.pdf")
    assert document.title == "The Loomwright Weaving Controller"
    starts = [(p.section, " ".join(p.text.split()[:3])) for p in document.paragraphs]
    # the contents list is no passage, the body's lines are no headings though smaller faces hold more text
    assert starts == [
        ("1 Introduction", "The Loomwright controller"),
        ("1 Introduction", "1. a tension"),
        ("1 Introduction", "2. a memory"),
        ("1 Introduction", "3. a power"),
        ("1 Introduction", "Any dobby loom"),
        ("2 Options", "The controller reads"),
        ("2 Options", "tension The warp"),
        ("2 Options", "picks The number"),
        ("2 Options", "lift The order"),
        ("2 Options", "Options the controller"),
        ("3 Running a pattern", "A pattern is"),
        ("3 Running a pattern", "loom run --pattern"),
        ("3 Running a pattern", "The weaver can"),
        ("3 Running a pattern", "• The bell"),
        ("3 Running a pattern", "• A red"),
        ("4 Tension", "The tension sensor"),
        ("4 Tension", "The brake is"),
        ("5 Sample output", "The display shows"),
        ("5 Sample output", "Pick 25 of"),
        ("5 Sample output", "Pick 25 of"),
    ]
    texts = [p.text for p in document.paragraphs]
    # an item's lines that hang under its label go on with it; a description's item holds its whole text
    assert texts[1].endswith("calibrated against a known weight before the first warp is wound;")
    assert texts[6].endswith("it is checked after every pick and corrected by the brake.")
    assert texts[11] == "loom run --pattern twill.wif --picks 400"
    # margin line numbers and the footer block, at the same place on every page, stay out
    assert texts[15].endswith("a slow drift of the warp is corrected within a few centimetres of cloth.")
    body = " ".join(texts)
    assert not re.search(r"\b(?:1[0-9]|[2-9])\s+(?:The|picks|the)\b", texts[15])
    assert not any(stamp in body for stamp in ("Version: 2.4", "Released: 3 May", "help@widgets.example"))
    assert "1 Introduction 1" not in body and "Contents" not in body


def test_a_reference_list_under_balanced_columns_is_read_after_them() -> None:
    document = read("aps.pdf")
    sections = [(p.section, p.text.split()[0]) for p in document.paragraphs]
    assert sections == [
        ("", "We"),  # the abstract, its short last line across both columns too
        ("I. INTRODUCTION", "Long"),
        ("I. INTRODUCTION", "Earlier"),
        ("II. METHOD", "We"),
        ("II. METHOD", "The"),
        ("III. RESULTS", "After"),
        ("III. RESULTS", "Cooling"),
    ]
    # the right column above the rule comes before the list below it, not after the list's left column
    assert document.paragraphs[3].text.endswith("with a contrast of 0.99 [10].")
    assert sorted(document.bibliography, key=int) == [str(n) for n in range(1, 15)]
    # an entry whose second line opens "29." keeps it: a volume, not entry 29
    assert document.bibliography["9"].text.endswith("vol. 29. Curran Associates (2016).")
    assert document.bibliography["8"].text.startswith("L. Feng")  # the first entry of the list's right column
    assert [p.citations for p in document.paragraphs[5:]] == [("12", "13"), ("14",)]


def test_an_ieee_conference_paper() -> None:
    document = read("ieee.pdf")
    assert document.title == "Scheduling irrigation from soil moisture forecasts"
    sections = [p.section for p in document.paragraphs]
    assert sections[0] == "Abstract" and sections[1] == "I. INTRODUCTION"
    assert "II. FORECASTING SOIL MOISTURE > B. Weather inputs" in sections
    assert sections[-1] == "V. CONCLUSION" and len(document.paragraphs) == 12
    assert sorted(document.bibliography, key=int) == [str(n) for n in range(1, 11)]
    assert document.bibliography["10"].text.startswith("J. Kim, “Low-cost soil sensors,”")
    assert document.paragraphs[-1].citations == ("9", "10")


def test_a_guide_with_a_drop_capital_small_capitals_spaced_headings_and_an_included_figure() -> None:
    document = read("guide.pdf")
    sections = [(p.section, p.text.split()[0]) for p in document.paragraphs]
    assert sections[:9] == [
        ("Introduction", "This"),  # the drop capital "T" before "his", the heading not taken for the title's
        ("Introduction", "The"),
        ("Introduction > Finer points", "A"),  # small capitals
        ("Introduction > Finer points > a) Timing the inlet", "Open"),  # told by the space above it alone
        ("Introduction > Finer points > b) Timing the outlet", "Open"),
        ("Files in the kit", "The"),
        ("Files in the kit", "timing.csv:"),  # items of a description list, not run-in headings
        ("Files in the kit", "flow.csv:"),
        ("Files in the kit", "README.txt:"),  # at the top of the next column
    ]
    # the figure is a Form XObject smaller than the page: its labels are no passage; its caption is
    texts = [p.text for p in document.paragraphs]
    assert not any("outlet 40 mm" in text or "inlet valve" == text for text in texts)
    assert "Figure 1: The valves of a small piston pump." in texts
    # the reference list, not the annex "References" of advice after it
    assert sorted(document.bibliography) == ["1", "2", "3"]
    assert document.paragraphs[-1].section == "Appendix > References"


def test_a_damaged_page_is_skipped_with_a_warning(monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    read_page = pdf.page_lines

    def damaged(document: object, number: int, carried: object = None, gaps: object = None) -> list[Line]:
        if number == 1:
            raise ValueError("broken content stream")
        return read_page(document, number, carried, gaps)

    monkeypatch.setattr(pdf, "page_lines", damaged)
    with caplog.at_level(logging.WARNING):
        document = read("retrieval.pdf")
    assert "page 2 skipped: broken content stream" in caplog.text
    assert document.paragraphs[1].section == "1 Background" and "4 Discussion" not in {
        p.section for p in document.paragraphs
    }


def test_not_a_pdf_and_a_pdf_without_text(tmp_path: Path) -> None:
    fake = tmp_path / "notes.pdf"
    fake.write_text("plain text with a .pdf name")
    with pytest.raises(LoadError, match="corrupt or unreadable PDF"):
        load_path(fake)


def _line(text: str, font: str = "SFRM1000", size: float = 10.0) -> Line:
    return Line([Piece(50, 100, 50 + 5 * len(text), 110, text, size, font, False)], page=0)


@pytest.mark.parametrize(
    ("text", "font", "heading"),
    [
        ("III. THE SIMULATED PROOF", "NimbusRomNo9L-Regu", True),  # IEEE: numbered, in capitals
        ("2.1. Data sets", "SFTI1000", True),  # Elsevier: numbered, in italic
        ("REFERENCES", "SFRM1000", True),  # a heading word in capitals
        ("P. M., 2020, , 642, A223", "SFRM1000", False),  # a reference entry's initials and numbers
        ("NASA AND ESA", "SFRM1000", False),  # capitals, but neither numbered nor a heading word
        ("2. We propose a method.", "SFTI1000", False),  # a sentence
    ],
)
def test_headings_set_apart_by_capitals_or_italics(text: str, font: str, heading: bool) -> None:
    assert _set_apart(_line(text, font)) is heading


def test_bold_is_known_by_the_face_name_where_the_weight_says_nothing() -> None:
    assert BOLD_FONT.search("SFBX1200") and BOLD_FONT.search("NimbusRomNo9L-Medi")
    assert not BOLD_FONT.search("SFRM1000") and not BOLD_FONT.search("NimbusRomNo9L-Regu")


def test_tesseract_words_are_read_in_page_points_with_a_size_per_line() -> None:
    from citewise.index.ocr import tsv_words

    tsv = "\n".join(
        [
            "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext",
            "5\t1\t1\t1\t1\t1\t300\t300\t250\t50\t96\tResults",  # 7 letters 250 px wide: large type
            "5\t1\t2\t1\t1\t1\t300\t500\t150\t40\t95\tTidal",
            "5\t1\t2\t1\t1\t2\t470\t500\t130\t40\t95\theating",
            "5\t1\t2\t1\t1\t3\t620\t500\t0\t0\t-1\t ",  # an empty word: skipped
        ]
    )
    pieces = tsv_words(tsv, height=792.0, points_per_pixel=72 / 300)
    assert [p.text for p in pieces] == ["Results", "Tidal", "heating"]
    heading, body = pieces[0], pieces[1]
    assert heading.size > body.size  # from the words' heights, by the letters they hold
    assert body.left == pytest.approx(72.0) and body.bottom == pytest.approx(792 - 540 * 72 / 300)
    assert pieces[1].bottom == pieces[2].bottom


def _tsv(rows: list[tuple[int, int, int, int, str]]) -> str:
    """Tesseract's TSV of words, each (line, left, top, height, text); widths 22 px a letter."""
    head = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
    return "\n".join(
        [head]
        + [f"5\t1\t1\t1\t{n}\t{k}\t{x}\t{y}\t{22 * len(t)}\t{h}\t95\t{t}" for k, (n, x, y, h, t) in
           enumerate(rows)]
    )  # fmt: skip


def test_ocr_sizes_come_from_heights_by_letters_and_lines_of_one_paragraph_share_one() -> None:
    # a body line of x-height words and one with ascenders and descenders, their boxes 27 and 41 px tall at
    # 300 dpi: one size (10 points); by the letters' widths "summer swim" and "Liberty quickly" differ
    from citewise.index.ocr import tsv_words

    words = ["summer swim across avenue", "Liberty quickly jumped beyond fog", "some more common words here"]
    rows = []
    for n, line in enumerate(words):
        for k, word in enumerate(line.split()):
            deep, tall = any(c in "gjpqy" for c in word), any(c in "bdfhijklt" or c.isupper() for c in word)
            rows.append(
                (n, 300 + 200 * k, 400 + 60 * n, round((0.69 if tall else 0.45) * 41.7 + 8.3 * deep), word)
            )
    pieces = tsv_words(_tsv(rows), height=792.0, points_per_pixel=72 / 300)
    assert {p.size for p in pieces} == {10.0}


def test_an_ocr_line_of_one_bracketed_word_measures_the_body_s_size() -> None:
    # a reference entry's last line "[physics.chem-ph] ." among 10-point lines: Computer Modern's brackets
    # span an em, 43 px at 300 dpi (read as ascender and descender it measured 12 points, a heading's size)
    from citewise.index.ocr import tsv_words

    rows = [(0, 300, 300, 43, "[physics.chem-ph]"), (0, 620, 300, 5, ".")]
    rows += [(1 + n, 300 + 160 * k, 400 + 60 * n, 19, "summer") for n in range(4) for k in range(5)]
    pieces = tsv_words(_tsv(rows), height=792.0, points_per_pixel=72 / 300)
    assert {p.size for p in pieces} == {10.0}
    # beside a word without brackets the bracketed one does not count: "(Smith summer"
    rows = [(0, 300, 300, 60, "(Smith"), (0, 500, 300, 19, "summer")]
    rows += [(1 + n, 300 + 160 * k, 400 + 60 * n, 19, "summer") for n in range(4) for k in range(5)]
    assert {p.size for p in tsv_words(_tsv(rows), height=792.0, points_per_pixel=72 / 300)} == {10.0}


def test_ocr_reads_a_line_bold_where_its_letters_are_wider_for_its_size() -> None:
    # "Abstract" in body-size bold: as tall as the text's words, its letters a third wider
    from citewise.index.ocr import tsv_words

    rows = [(0, 300, 300, 29, "Abstract")]
    rows += [(1 + n, 300 + 160 * k, 400 + 60 * n, 29, "letter") for n in range(4) for k in range(5)]
    tsv = _tsv(rows).replace("\t176\t29\t95\tAbstract", "\t240\t29\t95\tAbstract")
    pieces = tsv_words(tsv, height=792.0, points_per_pixel=72 / 300)
    assert pieces[0].bold and not any(p.bold for p in pieces[1:])


def test_ocr_reads_a_numbered_section_title_bold_at_a_lower_wideness_than_prose() -> None:
    # elsarticle's "1. Introduction" in body-size bold Latin Modern: its letters 1.15-1.2 times as wide;
    # an author's initial opening a reference's line ("V. Kumar") is no section number
    from citewise.index.ocr import tsv_words

    rows = [(0, 300, 300, 29, "1."), (0, 360, 300, 29, "Introduction"), (1, 300, 340, 29, "V."),
            (1, 360, 340, 29, "Kumar")]  # fmt: skip
    rows += [(2 + n, 300 + 160 * k, 400 + 60 * n, 29, "letter") for n in range(4) for k in range(5)]
    tsv = _tsv(rows).replace("\t264\t29\t95\tIntroduction", "\t311\t29\t95\tIntroduction")
    tsv = tsv.replace("\t110\t29\t95\tKumar", "\t130\t29\t95\tKumar")
    pieces = tsv_words(tsv, height=792.0, points_per_pixel=72 / 300)
    assert [p.bold for p in pieces[:4]] == [True, True, False, False]


def test_ocr_weighs_a_title_of_one_hyphenated_word() -> None:
    # elsarticle's "10. Back-End" in bold: its only word of letters holds a hyphen (it had no weight at all)
    from citewise.index.ocr import tsv_words

    rows = [(0, 300, 300, 29, "10."), (0, 380, 300, 29, "Back-End")]
    rows += [(1 + n, 300 + 160 * k, 400 + 60 * n, 29, "letter") for n in range(4) for k in range(5)]
    tsv = _tsv(rows).replace("\t176\t29\t95\tBack-End", "\t211\t29\t95\tBack-End")
    pieces = tsv_words(tsv, height=792.0, points_per_pixel=72 / 300)
    assert [p.bold for p in pieces[:3]] == [True, True, False]


def test_ocr_mends_a_reference_label_read_with_a_parenthesis_but_not_an_equation_number() -> None:
    from citewise.index.ocr import LABEL

    assert LABEL.fullmatch("(6") and LABEL.fullmatch("2|") and LABEL.fullmatch("[15")
    assert LABEL.fullmatch("{1]") and LABEL.fullmatch("[7}")  # a brace for a bracket (IEEE's journal list)
    assert not LABEL.fullmatch("(1)") and not LABEL.fullmatch("1)")


def test_ocr_gives_a_reference_label_and_a_citation_their_brackets_back() -> None:
    from citewise.index.ocr import _unbar
    from citewise.index.pdf.lines import Piece, group_lines
    from citewise.index.pdf.pages import bracket_labels

    def unbarred(*texts: str) -> list[str]:
        words = [["5", "1", "1", "1", "1", str(k), "0", "0", "9", "9", "95", t] for k, t in enumerate(texts)]
        _unbar(words)
        return [w[11] for w in words]

    assert unbarred("Company|8].", "a|b") == ["Company[8].", "a|b"]
    assert unbarred("bandit", "(MAB)|6,", "7],", "a") == ["bandit", "(MAB)[6,", "7],", "a"]  # over two words
    assert unbarred("|x|", "2|", "3") == ["|x|", "2|", "3"]
    entry = [
        Piece(74, 690, 84, 700, "10", 10.0, "OCR", False),
        Piece(88, 690, 96, 700, "P.", 10.0, "OCR", False),
        Piece(98, 690, 500, 700, "Auer, N. Cesa-Bianchi, and P. Fischer. (2002).", 10.0, "OCR", False),
    ]
    prose = [Piece(74, 660, 84, 670, "10", 10.0, "OCR", False),
             Piece(88, 660, 500, 670, "people took part in the study.", 10.0, "OCR", False)]  # fmt: skip
    assert bracket_labels(group_lines([*entry, *prose], 0)) == []
    assert [entry[0].text, prose[0].text] == ["[10]", "10"]
    # the closing bracket read apart as a mark 7 px (1.7 points) wide: "[3" "—" "Hollingshead, ..."
    marked = [
        Piece(118, 600, 126, 612, "[3", 10.0, "OCR", False),
        Piece(126, 600, 127.7, 612, "—", 2.0, "OCR", False),
        Piece(135, 600, 500, 610, "Hollingshead, S. J., Davis, C. G. (2022).", 10.0, "OCR", False),
    ]
    word = Piece(135, 580, 141, 590, "a", 10.0, "OCR", False)  # a word of one letter stays
    listed = [Piece(118, 580, 126, 592, "[4]", 10.0, "OCR", False), word,
              Piece(145, 580, 500, 590, "Kelly, J.L. (1956).", 10.0, "OCR", False)]  # fmt: skip
    assert bracket_labels(group_lines([*marked, *listed], 0)) == [marked[1]]
    assert marked[0].text == "[3]"


def test_an_ocr_heading_style_measured_14_on_one_page_and_15_on_the_next_is_one_size() -> None:
    from citewise.index.pdf.lines import Piece, group_lines
    from citewise.index.pdf.pages import same_sized_ocr

    def page(number: int, heading: float) -> list:
        pieces = [Piece(72, 700, 200, 700 + heading, "10 How is it", heading, "OCR", False)]
        pieces += [Piece(72, 680 - 12 * n, 500, 690 - 12 * n, "body text " * 6, 10.0, "OCR", False)
                   for n in range(20)]  # fmt: skip
        return group_lines(pieces, number)

    pages = [page(0, 15.0), page(1, 15.0), page(2, 14.0)]
    same_sized_ocr(pages, [0, 1, 2])
    assert [pages[n][0].size for n in range(3)] == [15.0, 15.0, 15.0]
    assert {line.size for p in pages for line in p[1:]} == {10.0}


def test_numbered_headings_of_one_depth_read_by_ocr_take_the_type_most_of_them_were_read_in() -> None:
    # llncs: "1 Introduction" read at 13 points, "2 Methodology" at 12; "3.7 Quantitative Analysis" at 11
    # and "3.6 Baselines" at 10 without weight among "3.x" read in 10-point bold, each a level of its own
    from citewise.index.pdf.lines import Piece, group_lines
    from citewise.index.pdf.pages import same_sized_ocr

    heads = [("1 Introduction", 13.0, False), ("2 Methodology", 12.0, False), ("3 Experiments", 12.0, False),
             ("3.5 Evaluation Metrics", 10.0, True), ("3.6 Baselines", 10.0, False),
             ("3.7 Quantitative Analysis", 11.0, False), ("3.8 Comparison with Baselines", 10.0, True),
             ("4 Participants came from two schools", 10.0, False)]  # fmt: skip
    pieces = [Piece(72, 700 - 40 * n, 300, 700 - 40 * n + size, text, size, "OCR", bold)
              for n, (text, size, bold) in enumerate(heads)]  # fmt: skip
    pieces += [
        Piece(72, 380 - 12 * n, 500, 390 - 12 * n, "body text " * 6, 10.0, "OCR", False) for n in range(25)
    ]
    pages = [group_lines(pieces, 0)]
    same_sized_ocr(pages, [0])
    read = {line.text: (line.size, line.bold) for line in pages[0]}
    assert [read[text] for text, _, _ in heads] == [(12.0, False)] * 3 + [(10.0, True)] * 4 + [(10.0, False)]


@pytest.mark.skipif(not ocr_available(), reason="Tesseract is not installed (apt-get install tesseract-ocr)")
def test_a_page_with_no_text_layer_is_read_by_ocr() -> None:
    # the browser-printed page as a 300 dpi bilevel scan: an image and no text objects
    (document,) = load_path(SCANS / "spectrum-scan.pdf")
    assert document.metadata == {"pages": 1, "ocr_pages": [1]}
    assert document.title == "Sharing radio spectrum between dense cellular networks"
    assert [p.section for p in document.paragraphs][:2] == ["Abstract", "1 Introduction"]
    written = re.findall(r"<p>([^<]+)</p>", (PAPERS / "spectrum.html").read_text(encoding="utf-8"))[:10]
    words = [w for text in written for w in re.findall(r"\w+", text)]
    read_words = set(re.findall(r"\w+", " ".join(p.text for p in document.paragraphs)))
    assert sum(w in read_words for w in words) / len(words) >= 0.95
    assert len(document.paragraphs) == 10 and sorted(document.bibliography) == ["1", "2", "3"]


@pytest.mark.skipif(not ocr_available(), reason="Tesseract is not installed (apt-get install tesseract-ocr)")
def test_a_scan_stored_sideways_is_read_by_ocr_as_it_is_shown(tmp_path: Path) -> None:
    # a scanner's page kept on its side and turned by /Rotate: rendered as shown, read as the upright scan
    (upright,) = load_path(SCANS / "spectrum-scan.pdf")
    (sideways,) = load_path(turned(SCANS / "spectrum-scan.pdf", tmp_path / "scan-turned.pdf", 90))
    assert sideways.metadata == {"pages": 1, "ocr_pages": [1]}
    assert [p.text for p in sideways.paragraphs] == [p.text for p in upright.paragraphs]


def test_without_an_ocr_engine_a_scan_is_refused_with_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from citewise.index import ocr

    monkeypatch.setattr(ocr, "available", lambda: False)
    with pytest.raises(LoadError, match="apt-get install tesseract-ocr"):
        load_path(SCANS / "spectrum-scan.pdf")


@pytest.mark.skipif(not ocr_available(), reason="Tesseract is not installed (apt-get install tesseract-ocr)")
def test_a_page_whose_text_layer_maps_its_glyphs_to_no_characters_is_read_by_ocr(tmp_path: Path) -> None:
    # metre's manual (Type 3 bitmap fonts with no character map): its words read as control characters and
    # stray ASCII; here the scan under such a layer is read as the scan alone is
    (scan,) = load_path(SCANS / "spectrum-scan.pdf")
    (document,) = load_path(garbled(SCANS / "spectrum-scan.pdf", tmp_path / "garbled.pdf"))
    assert document.metadata == {"pages": 1, "ocr_pages": [1]}
    assert [p.text for p in document.paragraphs] == [p.text for p in scan.paragraphs]


def test_without_an_ocr_engine_a_garbled_text_layer_is_refused_saying_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from citewise.index import ocr

    monkeypatch.setattr(ocr, "available", lambda: False)
    path = garbled(SCANS / "spectrum-scan.pdf", tmp_path / "garbled.pdf")
    with pytest.raises(LoadError, match="maps its glyphs to no characters.*apt-get install tesseract-ocr"):
        load_path(path)


def test_only_a_document_garbled_throughout_has_its_garbled_pages_read_anew() -> None:
    from citewise.index.pdf.pages import garbled_pages

    def page(text: str, number: int) -> list[Line]:
        return [
            Line([Piece(72, 700 - 14 * n, 540, 710 - 14 * n, text, 10.0, "CMR10", False)], page=number)
            for n in range(3)
        ]

    # a fifth control characters, of ten kinds
    noise = "N\x0fOQPSR4\x02TVUJ\x1cPSR^TWK\x05XZY\x03b+c4\x14dfeZg3\x07hH\x10ik\x11j\x12"
    prose = "The package provides classicists with some of the tools that are needed."
    # a font's documentation: a page of glyph variants among pages of prose
    assert garbled_pages([page(prose, 0), page(noise, 1), page(prose, 2)]) == []
    assert garbled_pages([page(noise, 0), page(noise, 1), page(prose, 2)]) == [0, 1]
    # a list whose bullet maps to one control character (commonunicode: U+0088), a tenth of its characters
    listed = (
        "\x88 U+00A9: \u00a9 \x88 U+00B1: \u00b1 \x88 U+00B5: \u00b5 \x88 U+00D7: \u00d7 \x88 U+0131: \u0131"
    )
    assert garbled_pages([page(listed, 0), page(listed, 1)]) == []


def test_margin_stamps_are_furniture_and_a_reference_with_a_url_is_not() -> None:
    def line(text: str, bottom: float, size: float) -> Line:
        return Line([Piece(50, bottom, 300, bottom + size, text, size, "SFRM1000", False)], page=0)

    body = [line(f"Body line {n} of the page.", 700 - 20 * n, 10.0) for n in range(5)]
    entry = line("[16] A. Author. A paper. Available at https://arxiv.org/abs/2101.00001", 40, 8.0)
    _mark_stamps([*body, entry])
    assert entry.kind == "text"  # the last line of a reference list in small type stays in the list
    stamp = line("file:///home/user/paper.html", 20, 8.0)
    _mark_stamps([*body, stamp])
    assert stamp.kind == "furniture" and all(b.kind == "text" for b in body)


def test_a_manual_page_reads_its_tags_with_their_descriptions() -> None:
    # groff's man macros through Ghostscript (as Debian's bash.pdf): a tag beside its description or on a
    # line of its own above it, flush-left paragraphs set apart by a skip, Times-Roman reported at weight 695
    document = read("tidectl.pdf")
    assert document.title == "tidectl − read and compare tide gauge records"  # the NAME line, not "NAME"
    texts = [p.text for p in document.paragraphs]
    options = [p.text.split()[0] for p in document.paragraphs if p.section == "OPTIONS"]
    assert options == ["−a", "−d", "−q", "−−harmonics", "−−threshold", "−−version"]
    assert any(
        t.startswith("−−harmonics Fit the tidal harmonics") and t.endswith("hourly data.") for t in texts
    )
    assert any(t.startswith("−d Print the daily") and t.endswith("to the centimetre.") for t in texts)
    # two paragraphs apart by a skip alone, neither indented
    assert [p.text[:12] for p in document.paragraphs if p.section == "DESCRIPTION"] == [
        "tidectl read",
        "Records are ",
    ]
    # Ghostscript leaves some word spaces as gaps between glyphs of one object, with no space character
    assert "removes the astronomical tide" in texts[1] and "the station’s own record" in " ".join(texts)
    assert {p.section for p in document.paragraphs} == {
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "FILES",
        "EXIT STATUS",
    }


def _at(text: str, left: float, bottom: float, size: float = 10.0, font: str = "SFRM1000") -> Line:
    width = 0.5 * size * len(text)
    return Line([Piece(left, bottom, left + width, bottom + size, text, size, font, False)], page=0)


def test_a_title_centred_over_two_lines_is_one_title() -> None:
    from citewise.index.pdf.headings import mark_title

    def line(text: str, left: float, right: float, bottom: float, size: float, bold: bool) -> Line:
        piece = Piece(left, bottom, right, bottom + size, text, size, "Times-Bold" if bold else "Times", bold)
        return Line([piece], page=0, edge=121, far_edge=492)

    # the second line is as wide as the text block, centred under the first (XeLaTeX's thesis template)
    lines = [
        line("Insert Thesis Title Here", 191, 422, 690, 24.6, True),
        line("Use Manual Line Breaks If Necessary", 121, 492, 660, 24.6, True),
        line("In Partial Fulfillment of the Requirements", 206, 406, 540, 12, False),
    ]
    mark_title(lines, 12.0)
    assert [x.kind for x in lines[:2]] == ["title", "title"]


def test_a_list_under_a_gap_is_no_heading_and_a_repeated_paragraph_no_furniture() -> None:
    from citewise.index.pdf.furniture import mark_furniture
    from citewise.index.pdf.headings import _spaced_headings

    lines = [
        _at("Here is a numbered list of the steps to take.", 72, 500),
        _at("1) First level item", 86, 470),
        _at("2) First level item", 86, 458),
        _at("After the list the text goes on for a while, as text does.", 72, 446),
    ]
    for line in lines:
        line.edge, line.far_edge = 72, 540
    assert _spaced_headings(lines, 10.0) == []
    # a long paragraph a manual repeats word for word (its Word and its LibreOffice instructions) near the
    # top of two pages, at other heights: no running head
    repeated = (
        "Since the font uses OpenType features to display ligatures and contextual alternates, you must"
    )
    pages = [
        [
            _at(f"Page {n} heading", 55, 735),
            _at(repeated, 55, 716 - 10 * n),
            *[_at(f"body {n} {i}", 55, 600 - 20 * i) for i in range(6)],
        ]
        for n in range(3)
    ]
    mark_furniture(pages)
    assert all(page[1].kind == "text" for page in pages)


def test_a_letterspaced_heading_past_the_page_s_first_characters_is_read_in_its_words() -> None:
    # microtype's \textls: PDFium reads "B i b l i o g r a p h y"; the glyphs' gaps are read for a sample
    # of a page's first 1,500 characters, and the heading stands after them
    document = read("spaced.pdf")
    assert [entry.text[:10] for entry in document.bibliography.values()] == [
        "Peale, S. "
    ]  # its heading known
    assert not any("Peale" in p.text or "B i b l i o" in p.section for p in document.paragraphs)


@pytest.mark.parametrize("turn", [90, 180, 270])
def test_a_page_stored_sideways_and_shown_upright_reads_as_shown(tmp_path: Path, turn: int) -> None:
    # dvips' landscape slides store every line standing on its end and rotate the page when it is shown
    upright = read("tidal.pdf")
    (sideways,) = load_path(turned(PAPERS / "tidal.pdf", tmp_path / "tidal-turned.pdf", turn))
    assert sideways.title == upright.title
    assert [p.text for p in sideways.paragraphs] == [p.text for p in upright.paragraphs]
    assert [p.section for p in sideways.paragraphs] == [p.section for p in upright.paragraphs]
    # the boxes the chat page draws stand where the page shows the lines: where the upright copy has them
    for turned_paragraph, paragraph in zip(sideways.paragraphs, upright.paragraphs, strict=True):
        for moved, box in zip(turned_paragraph.boxes, paragraph.boxes, strict=True):
            assert moved.page == box.page
            corners = zip(
                (moved.left, moved.bottom, moved.right, moved.top),
                (box.left, box.bottom, box.right, box.top),
                strict=True,
            )
            assert max(abs(a - b) for a, b in corners) < 0.5
