"""Reading order.

Per page, bands between lines that span both columns, each band's left column before its right; tables
split over two pages joined; in one-column text, a tag and its description (a man page's options, a
Texinfo table) made one line, or the tag marked where its description hangs under it.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter

from citewise.index.pdf.lines import EQUATION_NUMBER, Line, line_text

OVERHANG = 5.0
"""Points a line's end must stand beyond every other line's to be passed over as overhanging."""


def reading_order(lines: list[Line]) -> list[Line]:
    """Bands between full-width lines; in each band the left column, then the right one."""
    body = [line for line in lines if line.kind != "furniture"]
    if not body:
        return lines
    left_edge = -_shared_extreme([-line.left for line in body])
    right_edge = _shared_extreme([line.right for line in body])
    middle, slack = (left_edge + right_edge) / 2, 0.02 * (right_edge - left_edge)
    for line in body:
        if line.right < middle + slack:
            line.column = "left"
        elif line.left > middle - slack:
            line.column = "right"
    # the short last line of a paragraph set across both columns (an abstract) goes on across them
    previous = None
    for line in sorted(body, key=lambda line: -line.top):
        if (
            previous is not None
            and previous.column == "full"
            and line.column != "full"
            # at its edge, or under a first line indented by an em or two (REVTeX's one-paragraph abstract)
            and -2 * line.size <= line.left - previous.left < 1
            and 0 <= previous.bottom - line.top < 0.6 * line.size
            # shorter than a column's line, or set in from the text block's edge as the block above it is
            # (REVTeX's AIP abstract ends in a line as long as a column's, at the abstract's indent)
            and (line.right - line.left < 0.4 * (right_edge - left_edge) or line.left - left_edge > line.size)
        ):
            line.column = "full"
        previous = line
    # two columns when most lines of some length sit in one half or the other (display fragments and the
    # short last lines of paragraphs do not make a column)
    long = [line for line in body if line.right - line.left >= 0.35 * (right_edge - left_edge)]
    sides = Counter(line.column for line in long)
    # a right column of long lines beside a left one of short lines: a cover or a sidebar set centred in
    # display type (Philosophers' Imprint's landscape first page); one column of text has no long line
    # wholly right of its middle
    beside = sides["right"] >= 5 and sum(line.column == "left" for line in body) >= 3
    sided = sides["left"] + sides["right"] > 0.5 * len(long)
    two_columns = (min(sides["left"], sides["right"]) >= 3 or beside) and sided
    if not two_columns:
        for line in lines:
            line.column = "full"
        lines = _join_tags(lines)
    ordered: list[Line] = []
    band: list[Line] = []
    for line in sorted(lines, key=lambda line: (line.band, -line.top)):
        if two_columns and line.column == "full" and line.kind != "furniture":
            ordered.extend(_band(band))
            band = []
            ordered.append(line)
        else:
            if band and line.band != band[-1].band and line.kind != "furniture":
                ordered.extend(_band(band) if two_columns else band)
                band = []
            band.append(line)
    ordered.extend(_band(band) if two_columns else band)
    for column in ("left", "right", "full"):
        lines_of_column = [line for line in ordered if line.column == column and line.kind != "furniture"]
        rights = [line.right for line in lines_of_column]
        # the column's left edge: where its long lines start, the leftmost x shared by two of them
        widest = max((line.right - line.left for line in lines_of_column), default=0.0)
        starts = Counter(
            round(line.left) for line in lines_of_column if line.right - line.left > 0.7 * widest
        )
        shared = [x for x, count in starts.items() if count >= 2]
        edge = float(min(shared)) if shared else min((line.left for line in lines_of_column), default=0.0)
        # its right edge: where its lines end, margin notes aside (lines standing wholly right of where most
        # long lines end, justified: lecturer's notes in the right margin made every full line look short)
        ends = Counter(round(line.right) for line in lines_of_column if line.right - line.left > 0.7 * widest)
        least = max(SHARED_ENDS, 0.4 * ends.total())  # most of them: ragged lines share an x by chance
        justified = max((x for x, count in ends.items() if count >= least), default=None)
        if justified is not None:
            rights = [line.right for line in lines_of_column if line.left < justified] or rights
        far_edge = max(rights, default=0.0)
        if two_columns and column == "full":  # a line across both columns stands in the whole text block
            edge, far_edge = left_edge, right_edge
        for line in ordered:
            if line.column == column:
                line.edge, line.far_edge = edge, far_edge or line.right
    return ordered


SHARED_ENDS = 3
"""Long lines ending at one x (to the point), and 0.4 of them, that make it where a justified column ends."""


TAG_CHARS = 32
"""Characters a hanging tag holds at most ("--dump-po-strings", "[-+]O [shopt_option]")."""
TAG_INDENT = 2.5
"""Ems at least a description hangs right of a tag on a line of its own (a paragraph indents less)."""
TAG_REACH = 12.0
"""Ems at most between a tag and its description on the same baseline."""


def _join_tags(lines: list[Line]) -> list[Line]:
    """A tag and its description on one baseline of a one-column page made one line ("-i  If the -i ...").

    Man pages, Texinfo tables and definition lists set a short tag at the margin and its description at an
    indent the description's other lines share: read apart, the tag closed the paragraph before.
    """
    text = [line for line in lines if line.kind == "text" and not line.table]
    indents = Counter(round(line.left) for line in text)
    joined: set[int] = set()
    grown: dict[int, Line] = {}  # a description's line -> the line with its tag before it
    shared = [
        x for x, n in Counter(round(line.left) for line in text if len(line.text) >= 40).items() if n >= 3
    ]
    body_left = min(shared, default=0)
    for tag in text:
        if len(tag.text) > TAG_CHARS or id(tag) in joined:
            continue
        near = [
            x
            for x in text
            if x is not tag
            and id(x) not in joined
            and 0 < x.left - tag.right < TAG_REACH * tag.size
            and min(x.top, tag.top) - max(x.bottom, tag.bottom)
            >= 0.5 * min(x.top - x.bottom, tag.top - tag.bottom)
        ]
        beside = [x for x in near if _descriptions_start(indents, x.left)]
        if len(near) == 1 and _margin_note(tag, near[0], body_left) and (beside or tag.code):
            # a macro's name in typewriter, beside any line: show2e's "\showcs" beside a paragraph's
            # indented first line (a label beside a table's row, "C3", is no note)
            tag.kind = "furniture"
        elif len(beside) == 1 and not EQUATION_NUMBER.match(beside[0].text):
            description = beside[0]
            grown[id(description)] = dataclasses.replace(
                description, pieces=[*tag.pieces, *description.pieces], hang=description.left
            )
            joined.update((id(tag), id(description)))
    return [grown.get(id(line), line) for line in lines if id(line) not in joined or id(line) in grown]


def _margin_note(tag: Line, beside: Line, body_left: float) -> bool:
    """A note in the margin beside a line (a macro's name a documentation sets there), not its tag.

    It stands wholly left of where the page's long lines start, in smaller type than the line, most of an
    em or more from it; a man page's or a definition list's tag stands at the text's edge in the text's size.
    """
    return (
        tag.right < body_left - 0.5 * tag.size
        and tag.size < 0.95 * beside.size
        and beside.left - tag.right >= 0.8 * beside.size  # sublabel's "\\sublabon" 0.95 em from its line
        and not re.fullmatch(r"[\d.]+", tag.text.strip())
    )


def _descriptions_start(indents: Counter[int], x: float) -> bool:
    """Whether three text lines or more start at `x` (a point either way): where descriptions start."""
    return sum(indents[round(x) + d] for d in (-1, 0, 1)) >= 3


def mark_tags(lines: list[Line]) -> None:
    """A tag whose description hangs under it: alone ("--debugger", then "Arrange for ...") or before it.

    Lines in reading order, of the whole document (a tag at a page's foot describes the next page's top);
    one-column text only.

    A tag on a line of its own, or set a little apart before the description's first words ("--norc  Do
    not read ..."): the next line starts TAG_INDENT ems or more right of the tag, where descriptions start
    (three lines or more), and the line after goes on there or comes back to the tag's edge or left of it.
    """
    text = [line for line in lines if line.kind == "text" and not line.table and line.column == "full"]
    indents = Counter(round(line.left) for line in text)
    for line, description, after in zip(text, text[1:], [*text[2:], None], strict=False):
        if (
            line.hang
            or line.caps  # a heading in capitals over its section's indented text
            or line.text.rstrip().endswith((",", ";"))  # a clause going on: "\\usepackage command of LaTeX,"
            or line.size > description.size
            or not TAG_INDENT * line.size <= description.left - line.left <= 8 * line.size
            # right under it, or opening the next page (a tag at a page's foot)
            or not (description.page == line.page + 1 or 0 < line.bottom - description.top < line.size)
            or not _descriptions_start(indents, description.left)
            # the line after goes on with the description, or is the next tag, or a heading left of them
            or after is not None
            and abs(after.left - description.left) >= 1
            and after.left > line.left + 1
        ):
            continue
        hang = description.left
        tag = [p for p in line.pieces if p.left < hang - 1]  # pieces stand left to right
        if not 0 < len(tag) < len(line.pieces) or abs(line.pieces[len(tag)].left - hang) >= 1:
            tag = line.pieces  # no piece where the description starts: the tag stands alone
        if len(line_text(tag)) <= TAG_CHARS:
            line.hang = hang


def join_split_tables(lines: list[Line]) -> list[Line]:
    """A table's rows carried over to the next page (no caption, as many columns) joined to the table.

    Word and LibreOffice move the rows that do not fit to the next page; the part there, read alone, had no
    caption and no header. A header repeated over the carried rows is dropped.
    """
    out: list[Line] = []
    last: Line | None = None  # the last line that is not page furniture
    for line in lines:
        table, before = line.table, last.table if last is not None else None
        if (
            last is not None
            and table is not None
            and before is not None
            and not table.caption
            and line.page == last.page + 1
            and len(table.rows[0]) == len(before.rows[0])
        ):
            before.rows.extend(table.rows[1:] if table.rows[0] == before.rows[0] else table.rows)
            last.text = before.markdown()
            continue
        out.append(line)
        if line.kind != "furniture":
            last = line
    return out


def _shared_extreme(values: list[float]) -> float:
    """The largest value, passing over one or two that stand OVERHANG points or more beyond the rest.

    Where the text block ends, not a URL that overhangs its column's edge: it moved the page's middle past
    the right column's reference labels, which were then read as lines across both columns. Ragged lines end
    close to one another and are all kept.
    """
    ordered = sorted(values, reverse=True)
    at = 0
    while at < min(2, len(ordered) - 1) and ordered[at] - ordered[at + 1] >= OVERHANG:
        at += 1
    return ordered[at]


def _band(lines: list[Line]) -> list[Line]:
    furniture = [line for line in lines if line.kind == "furniture"]
    left = [line for line in lines if line.column != "right" and line.kind != "furniture"]
    right = [line for line in lines if line.column == "right" and line.kind != "furniture"]
    return [*left, *right, *furniture]
