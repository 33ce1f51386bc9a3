"""Pages in three columns or more (a newsletter's): read band by band, each band's columns left to right.

Lines are built as a page gives them (boxes in PDF points, y up); the layout is papertex's example newsletter:
a news item's heading across the page, its text in three columns, then another item in four.
"""

from __future__ import annotations

from citewise.index.pdf.lines import Line, Piece
from citewise.index.pdf.order import reading_order

WORDS = (
    "lorem ipsum dolor sit amet consectetuer adipiscing elit aliquam eget dolor vestibulum convallis".split()
)


def line(text: str, left: float, bottom: float, right: float, size: float = 10.0) -> Line:
    return Line([Piece(left, bottom, right, bottom + size, text, size, "CMR10", False)], page=1)


def columns(lefts: list[float], width: float, top: float, rows: int) -> list[list[Line]]:
    """Justified columns of prose side by side, `rows` lines each, on the same baselines."""
    return [
        [
            line(
                f"col{c} line{n} " + " ".join(WORDS[(n + c) % 5 : (n + c) % 5 + 5]),
                x,
                top - 12 * n,
                x + width,
            )
            for n in range(rows)
        ]
        for c, x in enumerate(lefts)
    ]


def test_three_columns_under_a_heading_across_them_are_read_one_after_another() -> None:
    heading = line("This is the heading of a piece of news expanded", 43, 741, 516, size=24.8)
    wrapped = line("over three columns.", 43, 718, 234, size=24.8)  # crosses the first gutter only
    three = columns([43, 216, 390], 163, 678, 12)
    kicker = line("SECTION A", 43, 313, 97, size=8)  # under the columns, after a gap: read after them
    second = line("This is the heading of a piece of news expanded", 43, 283, 516, size=24.8)
    four = columns([43, 173, 303, 433], 117, 205, 12)
    page = [heading, wrapped, *(x for column in three for x in column), kicker, second]
    page += [x for column in four for x in column]
    read = reading_order(page[::-1])  # whatever order the page gave them in
    expected = [heading, wrapped, *three[0], *three[1], *three[2], kicker, second, *four[0], *four[1]]
    assert [x.text for x in read] == [x.text for x in [*expected, *four[2], *four[3]]]
    # each column its own, with its own edges: no line of one is taken for a tag of the next
    assert len({x.column for x in three[1]}) == 1 and three[1][0].column != three[0][0].column
    assert (three[1][0].edge, three[1][0].far_edge) == (216, 379)
    assert all(len(x.pieces) == 1 for x in read)


def test_two_columns_and_three_columns_of_short_cells_are_read_as_before() -> None:
    # three columns of short entries (a table's cells set as text, a list of names): not columns of prose
    cells = [
        line(f"{name} {n}", x, 600 - 12 * n, x + 40)
        for n in range(12)
        for name, x in (("alpha", 60), ("beta", 230), ("gamma", 400))
    ]
    read = reading_order(list(cells))
    assert [x.text for x in read[:3]] == ["alpha 0", "beta 0", "gamma 0"]  # row by row, as a table reads
    # two columns of prose: the left one, then the right one, as `reading_order` always read them
    left, right = columns([60, 310], 220, 700, 12)
    read = reading_order([*right, *left])
    assert [x.column for x in read] == ["left"] * 12 + ["right"] * 12


def test_a_band_in_two_columns_on_a_page_with_three_is_read_column_by_column() -> None:
    heading = line("A heading across the page over the item in three columns", 43, 741, 516, size=14)
    three = columns([43, 216, 390], 163, 700, 8)
    second = line("A heading across the page over the item in two columns", 43, 580, 516, size=14)
    two = columns([43, 300], 250, 550, 8)
    read = reading_order([heading, *(x for c in three for x in c), second, *(x for c in two for x in c)])
    assert read[-16:] == [*two[0], *two[1]]  # not line by line across both
