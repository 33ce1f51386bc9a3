"""Tables read as tables: from PDFs (pdfTeX and Chromium), from Word, and kept whole through chunking.

The PDFs are tests/data/tables/harvest.tex (booktabs, a boxed grid across both columns, an unruled table under
its caption), harvest.html printed by Chromium (a grid whose header and first column wrap in their cells), and
two DOCX converted by LibreOffice: ledger.py's (a table carried over to the next page) and shelf.py's (a
caption at a page's foot, its unruled table moved whole to the next page).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import docx
import pytest

from citewise.app.web.render import passage_html
from citewise.core.text import sentences
from citewise.index.chunking import normalize_space, split_sentences
from citewise.index.loaders import load_path
from citewise.index.pdf import read_layout
from citewise.index.tables import Rule, Table, find_tables, is_markdown_table

PAPERS = Path(__file__).parent.parent / "data" / "tables"

FIRST_SEASON = [
    ["Variety", "Yield (t/ha)", "Protein (%)", "Days to ripen"],
    ["Amber", "7.42", "11.8", "121"],
    ["Copper Crown", "6.95", "13.1", "117"],
    ["Northern Star", "8.03", "10.9", "126"],
]


def tables_of(name: str) -> list[Table]:
    path = PAPERS / name
    layout = read_layout(path, path.read_bytes())
    return [line.table for line in layout.lines if line.table is not None]


def test_typeset_tables_ruled_boxed_and_unruled_keep_their_rows_and_captions() -> None:
    booktabs, grid, unruled = tables_of("harvest.pdf")
    assert booktabs.caption == "Table 1: Yield of each variety in the first season."
    assert booktabs.rows == FIRST_SEASON
    assert grid.caption == "Table 2: Yield by plot in the second season."
    assert grid.rows[0] == ["Variety", "Plot A", "Plot B", "Plot C", "Plot D"]
    assert grid.rows[3] == ["Northern Star", "6.77", "7.12", "6.50", "6.94"]
    assert unruled.caption == "Table 3: Rainfall in each season."
    assert unruled.rows == [
        ["Season", "Rain (mm)", "Dry days"],
        ["First", "612", "41"],
        ["Second", "388", "73"],
    ]


def test_a_browser_grid_with_cells_wrapped_over_two_lines() -> None:
    (table,) = tables_of("harvest-print.pdf")
    assert table.rows == FIRST_SEASON  # "Days to / ripen", "Northern / Star" each one cell


def test_a_table_carried_over_to_the_next_page_is_one_table() -> None:
    (table,) = tables_of("ledger.pdf")  # LibreOffice carries rows over, the header repeated above them
    assert table.caption == "Table 1: Monthly rainfall at each station."
    assert table.rows[0] == ["Station and month", "Rain (mm)", "Dry days"]
    assert len(table.rows) == 41 and table.rows.count(table.rows[0]) == 1
    assert table.rows[-1] == ["Dundee 5", "43.9", "7"]


def test_a_caption_at_a_pages_foot_finds_its_table_moved_to_the_next_page() -> None:
    (table,) = tables_of("shelf.pdf")
    assert table.caption == "Table 1: Months of storage by grain and store."
    assert table.rows == [
        ["Grain", "Cool store", "Barn"],
        ["Barley", "48", "20"],
        ["Oats", "40", "18"],
        ["Rye", "52", "26"],
        ["Wheat", "60", "30"],
    ]
    (document,) = load_path(PAPERS / "shelf.pdf")  # the caption is the table's, not a line of the text
    assert sum("Months of storage" in p.text for p in document.paragraphs) == 1


def test_a_table_is_one_passage_and_the_text_around_it_runs_on() -> None:
    (document,) = load_path(PAPERS / "harvest.pdf")
    tables = [p for p in document.paragraphs if is_markdown_table(p.text)]
    assert len(tables) == 3
    assert tables[0].text.split("\n")[:4] == [
        "Table 1: Yield of each variety in the first season.",
        "| Variety | Yield (t/ha) | Protein (%) | Days to ripen |",
        "| --- | --- | --- | --- |",
        "| Amber | 7.42 | 11.8 | 121 |",
    ]
    prose = " ".join(p.text for p in document.paragraphs if not is_markdown_table(p.text))
    assert "Copper Crown" in prose and "7.42" not in prose  # cells are nowhere else
    assert any(p.text.startswith("Plot B gave the most grain") for p in document.paragraphs)
    assert not any(p.text.startswith("Table ") and "\n" not in p.text for p in document.paragraphs)


def test_a_long_table_is_cut_between_rows_each_part_under_its_header() -> None:
    rows = [["Plot", "Yield"]] + [[f"Plot {n}", f"{n}.0"] for n in range(60)]
    parts = Table(rows, "Table 9: Every plot.").parts(max_chars=200)
    assert len(parts) > 3
    for part in parts:
        lines = part.split("\n")
        assert lines[:3] == ["Table 9: Every plot.", "| Plot | Yield |", "| --- | --- |"]
        assert len(part) <= 200
    body = [line for part in parts for line in part.split("\n")[3:]]
    assert body == [f"| Plot {n} | {n}.0 |" for n in range(60)]


def test_chunking_keeps_a_tables_rows_on_their_lines() -> None:
    text = "Table 1: Yields.\n|  Variety | Yield |\n| --- | --- |\n| Amber |   7.42 |"
    flat = normalize_space(text)
    assert flat == "Table 1: Yields.\n| Variety | Yield |\n| --- | --- |\n| Amber | 7.42 |"
    assert split_sentences(flat, 500) == [(0, len(flat))]
    spans = split_sentences(flat, 40)
    assert all(end - start <= 40 for start, end in spans)
    assert all(s == 0 or flat[s - 1] == "\n" for s, _ in spans)  # whole rows, never a cut one
    assert all(e == len(flat) or flat[e] == "\n" for _, e in spans)
    assert flat[spans[-1][0] : spans[-1][1]].endswith("| Amber | 7.42 |")
    assert normalize_space("a  b\nc") == "a b c"  # prose as before


def test_word_tables_keep_header_and_caption(tmp_path: Path) -> None:
    word = docx.Document()
    word.add_heading("Trials", level=0)
    word.add_heading("Results", level=1)
    word.add_paragraph("The yields were measured by machine.")
    word.add_paragraph("Table 1: Yield of each variety.")
    grid = word.add_table(rows=3, cols=2)
    for row, cells in zip(
        grid.rows, [["Variety", "Yield"], ["Amber", "7.42"], ["Copper Crown", "6.95"]], strict=True
    ):
        row.cells[0].text, row.cells[1].text = cells
    path = tmp_path / "trials.docx"
    word.save(str(path))
    (document,) = load_path(path)
    assert [p.text for p in document.paragraphs] == [
        "The yields were measured by machine.",
        "Table 1: Yield of each variety.\n| Variety | Yield |\n| --- | --- |\n"
        "| Amber | 7.42 |\n| Copper Crown | 6.95 |",
    ]


@dataclass
class Word:
    left: float
    bottom: float
    right: float
    top: float
    text: str
    size: float = 10.0


@dataclass
class TextLine:
    pieces: list[Word]

    @property
    def text(self) -> str:
        return " ".join(p.text for p in self.pieces)

    left = property(lambda self: min(p.left for p in self.pieces))
    right = property(lambda self: max(p.right for p in self.pieces))
    top = property(lambda self: max(p.top for p in self.pieces))
    bottom = property(lambda self: min(p.bottom for p in self.pieces))
    size = property(lambda self: 10.0)


def prose_line(y: float) -> TextLine:
    x, words = 50.0, []
    for word in "a framed box of prose is not a table at all".split():
        words.append(Word(x, y, x + 6 * len(word), y + 10, word))
        x += 6 * len(word) + 3
    return TextLine(words)


@pytest.mark.parametrize("ruled", [True, False])
def test_a_box_of_prose_between_rules_or_under_a_caption_is_no_table(ruled: bool) -> None:
    lines = [prose_line(300 - 12 * n) for n in range(5)]
    if not ruled:
        lines.insert(0, TextLine([Word(50, 312, 90, 322, "Table"), Word(93, 312, 99, 322, "4:")]))
    rules = [Rule(45, 324, 400, 325), Rule(45, 245, 400, 246)] if ruled else []
    assert find_tables(lines, rules, words_inside(lines)) == []


def words_inside(lines: list[TextLine]):
    words = [w for line in lines for w in line.pieces]

    def inside(left: float, bottom: float, right: float, top: float) -> list[Word]:
        return [
            w for w in words if left <= w.right and w.left <= right and bottom <= w.top and w.bottom <= top
        ]

    return inside


def tight_row(y: float, cells: list[tuple[str, float, float]]) -> TextLine:
    """A row of words at (left, right) x ranges: columns set as tight as llncs sets them."""
    return TextLine([Word(left, y, right, y + 10, text) for text, left, right in cells])


def test_a_tight_table_parts_columns_where_its_words_line_up_not_at_a_space_in_one_cell() -> None:
    # llncs: 1.4 pt between columns, less than a word space in places ("Loss Recall"); the numbers end at
    # one x (right-aligned); the header "Mean (ms)" has a space over a column whose numbers start at one x
    caption = TextLine(
        [Word(100, 330, 125, 340, "Table"), Word(128, 330, 140, 340, "1."), Word(143, 330, 200, 340, "Loss")]
    )
    rows = [
        tight_row(
            310,
            [
                ("Model", 100, 125),
                ("Mean", 150, 170),
                ("(ms)", 173, 190),
                ("Loss", 200, 218),
                ("Recall", 222, 246),
            ],
        ),
        tight_row(298, [("Replies", 100, 129), ("12%", 175, 190), ("79.7%", 196, 218), ("0.231", 225, 246)]),
        tight_row(286, [("Virtual", 100, 129), ("31%", 175, 190), ("48.7%", 196, 218), ("0.629", 225, 246)]),
        tight_row(274, [("Implying", 100, 135), ("7%", 179, 190), ("36.5%", 196, 218), ("0.977", 225, 246)]),
        tight_row(
            262, [("Decoupled", 100, 143), ("64%", 175, 190), ("96.3%", 196, 218), ("0.798", 225, 246)]
        ),
    ]
    lines = [caption, *rows]
    rules = [Rule(98, 322, 248, 323), Rule(98, 306, 248, 307), Rule(98, 258, 248, 259)]
    (table,) = find_tables(lines, rules, words_inside(lines))
    assert table.rows[0] == ["Model", "Mean (ms)", "Loss", "Recall"]
    assert table.rows[4] == ["Decoupled", "64%", "96.3%", "0.798"]


def test_two_columns_of_prose_between_a_boxed_head_and_a_boxed_foot_are_no_table() -> None:
    # a newsletter: the rules of the boxes at the page's top and foot span the page, the text between them
    # stands in two columns with a gutter no line crosses
    left = (
        "the issue has been delayed because my family moved again this time from far away once more".split()
    )
    right = (
        "since renewals have been lower than we hoped the next issue will be the last one we print".split()
    )

    def laid_out(words: list[str], x: float) -> list[tuple[str, float, float]]:
        out = []
        for word in words:
            out.append((word, x, x + 4 * len(word)))
            x += 4 * len(word) + 3
        return out

    lines = [
        tight_row(
            600 - 12 * n, [*laid_out((left * 2)[n : n + 8], 40), *laid_out((right * 2)[n : n + 8], 290)]
        )
        for n in range(8)
    ]
    rules = [
        Rule(45, 640, 520, 641),
        Rule(45, 620, 520, 621),
        Rule(45, 480, 520, 481),
        Rule(45, 420, 520, 421),
    ]
    assert find_tables(lines, rules, words_inside(lines)) == []


def spaced(words: list[str], x: float, to: float | None = None) -> list[tuple[str, float, float]]:
    """Words set from x, 4 points a letter, with a 3-point space or justified to end at `to`."""
    letters = 4 * sum(len(word) for word in words)
    space = (to - x - letters) / max(1, len(words) - 1) if to is not None else 3.0
    out = []
    for word in words:
        out.append((word, x, x + 4 * len(word)))
        x += 4 * len(word) + space
    return out


def test_short_lines_of_two_columns_running_their_sentences_on_are_no_table() -> None:
    # Elsevier's CAS class: a rule under the abstract and one over the foot span the page; the columns' lines
    # hold five or six words (a list, a heading), fewer than a prose cell is taken to hold, and each fills its
    # column (justified) and runs its sentence on into the line below
    left = "the class is based on the standard article class and supports almost all of its features".split()
    right = "the package is available at the author resources page and may be copied to any folder".split()
    lines = [
        tight_row(600 - 12 * n, [*spaced(left[n : n + 5], 40, 240), *spaced(right[n : n + 5], 290, 490)])
        for n in range(8)
    ]
    rules = [Rule(35, 620, 520, 621), Rule(35, 490, 520, 491)]
    assert find_tables(lines, rules, words_inside(lines)) == []


def test_four_justified_columns_of_prose_with_a_line_overhanging_each_are_no_table() -> None:
    # papertex's newsletter: four narrow justified columns between the running head's rule and a boxed
    # title's; a hyphen or a wide word sticks out past each column's edge, and measured by those lines no
    # line filled its column, so the prose's running on was not seen
    text = (
        "amet pretium fermentum arcu massa interdum metus varius justo ante velit class aptent taciti "
        "sociosqu litora torquent conubia nostra inceptos hymenaeos phasellus elit cras ornare blandit "
        "felis praesent"
    ).split()
    lefts = [40, 160, 280, 400]
    lines = []
    for n in range(8):
        cells = []
        for c, x in enumerate(lefts):
            words = text[(4 * n + 7 * c) % 60 : (4 * n + 7 * c) % 60 + 4] or text[:4]
            end = x + 108 + (8 if n == c else 0)  # one line of each column overhangs its edge
            cells += spaced([*words[:-1], words[-1] + ("-" if n % 2 else ",")], x, end)
        lines.append(tight_row(600 - 12 * n, cells))
    rules = [Rule(35, 620, 520, 621), Rule(35, 490, 520, 491)]
    assert find_tables(lines, rules, words_inside(lines)) == []


def test_a_table_of_lower_case_names_and_their_meanings_stays_a_table() -> None:
    # ReportLab's guide: attribute names in lower case beside a few words each, no stop at their ends
    rows = [
        ("name", "the field name"),
        ("value", "its initial value"),
        ("width", "the widget width"),
        ("height", "the widget height"),
        ("tooltip", "text shown on hover"),
        ("borderStyle", "the border style name"),
    ]
    lines = [
        tight_row(600 - 12 * n, [*spaced([name], 40), *spaced(meaning.split(), 200)])
        for n, (name, meaning) in enumerate(rows)
    ]
    rules = [Rule(35, 614, 400, 615), Rule(35, 520, 400, 521)]
    (table,) = find_tables(lines, rules, words_inside(lines))
    assert table.rows[5] == ["borderStyle", "the border style name"]


def test_a_word_a_narrow_cell_broke_without_a_hyphen_is_whole_again() -> None:
    # LibreOffice carries the letters that do not fit a narrow cell to its next line, with no hyphen
    lines = [
        tight_row(310, [("Method", 100, 130), ("Loss", 170, 190)]),
        tight_row(296, [("degenerac", 100, 140), ("0.53", 170, 190)]),
        tight_row(286, [("y", 100, 105)]),
        tight_row(272, [("Speed-", 100, 130), ("0.48", 170, 190)]),
        tight_row(262, [("up", 100, 110)]),
        tight_row(248, [("Type", 100, 120), ("0.61", 170, 190)]),
        tight_row(238, [("a", 100, 105)]),
    ]
    rules = [Rule(98, 322, 192, 323), Rule(98, 306, 192, 307), Rule(98, 234, 192, 235)]
    (table,) = find_tables(lines, rules, words_inside(lines))
    assert [row[0] for row in table.rows] == ["Method", "degeneracy", "Speed-up", "Type a"]


def test_prose_in_a_frame_whose_headings_hang_their_numbers_in_the_margin_is_no_table() -> None:
    # a manual's framed text: "3." a word space before its heading, every line starting at one x after it
    text = [
        "3. Installation",
        "the package is found on every node of the archive",
        "and in the resources page of the publisher where",
        "4. Usage",
        "authors may also read the notes on each release",
        "of the class which say what changed and why so",
        "that nobody has to guess at what the options do",
    ]
    lines = []
    for n, line in enumerate(text):
        number, _, rest = line.partition(". ")
        x, words = 111.0, [(f"{number}.", 100, 106)] if rest else []
        for word in (rest or line).split():
            words.append((word, x, x + 6 * len(word)))
            x += 6 * len(word) + 3
        lines.append(tight_row(300 - 12 * n, words))
    rules = [Rule(95, 314, 420, 315), Rule(95, 200, 420, 201)]
    assert find_tables(lines, rules, words_inside(lines)) == []


def test_an_unruled_table_ends_at_prose_set_close_under_it_and_keeps_a_wrapped_header() -> None:
    # a browser's unruled table: the header's "Error" over "(%)" on two lines, and the next paragraph's
    # short last line as close under the last row as the rows are to each other
    caption = TextLine(
        [Word(100, 352, 125, 362, "Table"), Word(128, 352, 140, 362, "3:"), Word(143, 352, 190, 362, "Rain")]
    )
    lines = [
        caption,
        tight_row(338, [("Station", 100, 135), ("Error", 200, 225), ("Days", 260, 282)]),
        tight_row(326, [("(%)", 206, 222)]),
        tight_row(312, [("Aberdeen", 100, 140), ("0.53", 206, 225), ("12", 270, 282)]),
        tight_row(298, [("Cork", 100, 122), ("0.48", 206, 225), ("9", 276, 282)]),
        tight_row(284, [("Hull", 100, 120), ("0.61", 206, 225), ("15", 270, 282)]),
        tight_row(
            270,
            [
                (word, 100 + 30 * n, 126 + 30 * n)
                for n, word in enumerate("and so the rain fell on all".split())
            ],
        ),
    ]
    (table,) = find_tables(lines, [], words_inside(lines))
    assert table.rows == [
        ["Station", "Error (%)", "Days"],
        ["Aberdeen", "0.53", "12"],
        ["Cork", "0.48", "9"],
        ["Hull", "0.61", "15"],
    ]


def test_html_tables_keep_header_caption_and_rows() -> None:
    (document,) = load_path(PAPERS / "harvest.html")
    (table,) = [p.text for p in document.paragraphs if is_markdown_table(p.text)]
    assert table.split("\n") == [
        "Table 1: Yield of each variety in the first season.",
        "| Variety | Yield (t/ha) | Protein (%) | Days to ripen |",
        "| --- | --- | --- | --- |",
        "| Amber | 7.42 | 11.8 | 121 |",
        "| Copper Crown | 6.95 | 13.1 | 117 |",
        "| Northern Star | 8.03 | 10.9 | 126 |",
    ]
    assert document.paragraphs[-1].text.startswith("Northern Star gave the largest yield")


def test_a_tables_sentences_are_its_caption_and_its_rows_said_with_their_header() -> None:
    text = Table(FIRST_SEASON, "Table 1: Yield of each variety in the first season.").markdown()
    assert sentences(text) == [
        "Table 1: Yield of each variety in the first season.",
        "Variety: Amber; Yield (t/ha): 7.42; Protein (%): 11.8; Days to ripen: 121.",
        "Variety: Copper Crown; Yield (t/ha): 6.95; Protein (%): 13.1; Days to ripen: 117.",
        "Variety: Northern Star; Yield (t/ha): 8.03; Protein (%): 10.9; Days to ripen: 126.",
    ]
    assert sentences("One. Two | three.") == ["One.", "Two | three."]  # prose with a bar is prose


def test_the_passage_panel_shows_a_table_with_the_quoted_row_marked() -> None:
    text = Table(FIRST_SEASON, "Table 1: Yields.").markdown()
    quoted = "Variety: Copper Crown; Yield (t/ha): 6.95; Protein (%): 13.1; Days to ripen: 117."
    html = passage_html({"marker": 2, "title": "Harvest", "text": text, "lines": [quoted]})
    assert "<caption>Table 1: Yields.</caption>" in html and "<th>Protein (%)</th>" in html
    assert '<tr class="cw-support"><td>Copper Crown</td><td>6.95</td>' in html
    assert html.count("cw-support") == 1  # only that row, and no line shown apart as missing
