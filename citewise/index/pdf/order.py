"""Reading order.

Per page, bands between lines that span both columns, each band's left column before its right; tables
split over two pages joined; in one-column text, a tag and its description (a man page's options, a
Texinfo table) made one line, or the tag marked where its description hangs under it.
"""

from __future__ import annotations

import dataclasses
import math
import re
import statistics
from collections import Counter

from citewise.index.pdf.lines import EQUATION_NUMBER, Line, line_text

OVERHANG = 5.0
"""Points a line's end must stand beyond every other line's to be passed over as overhanging."""


def reading_order(lines: list[Line]) -> list[Line]:
    """Bands between full-width lines; in each band the left column, then the right one.

    A page with three columns or more somewhere (a newsletter's) is read band by band, each band's columns
    left to right (`_many_columns`).
    """
    body = [line for line in lines if line.kind != "furniture"]
    if not body:
        return lines
    left_edge = -_shared_extreme([-line.left for line in body])
    right_edge = _shared_extreme([line.right for line in body])
    bands = _many_columns(body, right_edge - left_edge)
    if bands is not None:
        read = [line for band in bands for column in band for line in column]
        _set_edges(read, {line.column for line in read}, False, (left_edge, right_edge))
        return [*read, *(line for line in lines if line.kind == "furniture")]
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
    _set_edges(ordered, {"left", "right", "full"}, two_columns, (left_edge, right_edge))
    return ordered


def _set_edges(ordered: list[Line], columns: set[str], two_columns: bool, block: tuple[float, float]) -> None:
    """Each line's column edges: where its column's long lines start and where its justified lines end."""
    left_edge, right_edge = block
    for column in columns:
        lines_of_column = [line for line in ordered if line.column == column and line.kind != "furniture"]
        # the column's left edge: where its long lines start, the leftmost x shared by two of them
        widest = max((line.right - line.left for line in lines_of_column), default=0.0)
        # (by whole points or within a quarter point: 97.34 and 97.50 are one edge, econ-bst's example)
        starts = [line.left for line in lines_of_column if line.right - line.left > 0.7 * widest]
        shared = [
            x for x in starts if sum(round(y) == round(x) or abs(y - x) <= SAME_EDGE for y in starts) >= 2
        ]
        edge = min((line.left for line in lines_of_column), default=0.0)
        if shared:
            edge = float(round(min(shared)))
        # its right edge: where its lines end, margin notes aside (lines standing wholly right of where most
        # long lines end, justified: lecturer's notes in the right margin made every full line look short)
        ends = Counter(round(line.right) for line in lines_of_column if line.right - line.left > 0.7 * widest)
        least = max(SHARED_ENDS, 0.4 * ends.total())  # most of them: ragged lines share an x by chance
        justified = max((x for x, count in ends.items() if count >= least), default=None)
        kept = lines_of_column
        if justified is not None:
            kept = [line for line in lines_of_column if line.left < justified] or kept
        # an overfull line of code (a verbatim display running into the margin) is no edge of the text's
        prose = [line.right for line in kept if not line.code]
        far_edge = max(prose or [line.right for line in kept], default=0.0)
        if two_columns and column == "full":  # a line across both columns stands in the whole text block
            edge, far_edge = left_edge, right_edge
        for line in ordered:
            if line.column == column:
                line.edge, line.far_edge = edge, far_edge or line.right


SAME_EDGE = 0.25
"""Points two long lines' left ends may stand apart and still share the column's edge (a glyph's side bearing:
enough for 97.34 and 97.50, not for two labels set flush right that end 0.4 apart, refman's layout)."""
MANY_COLUMNS = 3
"""Columns side by side a band of a page has at least to be read by `_many_columns`."""
COLUMN_LINES = 5
"""Lines of prose each of those columns holds at least."""
GUTTER = 0.6
"""Ems of clear space at least between two columns."""


def _many_columns(body: list[Line], width: float) -> list[list[list[Line]]] | None:
    """A page's bands, each as its columns of lines, when a band holds three columns of prose or more.

    A band ends at a line across a gutter (a news item's heading over its columns) and at a rule across
    the page. None where no band has three columns (two columns are `reading_order`'s own): a page of
    newsletter columns was read as two, its middle column's lines "across both" and joined to the lines
    beside them. Columns are told by gutters: strips no line of the band crosses, GUTTER ems wide or more.
    """
    size = statistics.median(line.size for line in body)
    bands: list[list[list[Line]]] = []
    pending = [piece for _, group in _by_band(body) for piece in _stretches(group, size, width)]
    found = False
    while pending:
        lines = pending.pop(0)
        gutters = _gutters(lines, size)
        crossing = [i for i, line in enumerate(lines) if any(_crosses(line, g, size) for g in gutters)]
        if crossing:  # split where a line crosses, and look again
            pieces, start = [], 0
            for i in crossing:
                pieces += [lines[start:i], [lines[i]]]
                start = i + 1
            pending[:0] = [piece for piece in [*pieces, lines[start:]] if piece]
            continue
        columns = (_columns(lines, gutters, size, width) if gutters else None) or [lines]
        found = found or len(columns) >= MANY_COLUMNS
        bands.append(columns)  # (a band in two columns on such a page: read as two columns)
    if not found:
        return None
    # stretches in one column read as a page in one column: a tag joins its description
    single = {id(line) for columns in bands if len(columns) == 1 for line in columns[0]}
    joined, grown = _tag_joins([line for line in body if id(line) in single])  # in the page's own order
    for columns in bands:
        if len(columns) == 1:
            columns[0] = [grown.get(id(x), x) for x in columns[0] if id(x) not in joined or id(x) in grown]
    for number, columns in enumerate(bands):
        for n, column in enumerate(columns):
            for line in column:
                line.column = f"{number}.{n}" if len(columns) > 1 else "full"
    return bands


def _stretches(lines: list[Line], size: float, width: float) -> list[list[Line]]:
    """Lines top to bottom in stretches, cut where nothing is read across the cut.

    A line across most of the page stands alone; a stretch ends where clear space of two lines or more
    runs across it (a kicker under a news item's columns).
    """
    stretches: list[list[Line]] = [[]]
    bottom = math.inf
    for line in sorted(lines, key=lambda line: (-line.top, line.left)):
        if line.right - line.left >= WIDE * width:
            stretches += [[line], []]
        elif stretches[-1] and bottom - line.top >= 2 * size:
            stretches.append([line])
        else:
            stretches[-1].append(line)
        bottom = min(bottom, line.bottom) if stretches[-1] else math.inf
    return [stretch for stretch in stretches if stretch]


WIDE = 0.6
"""Share of the page's text block a line spans at least to stand across its columns."""


def _by_band(lines: list[Line]) -> list[tuple[int, list[Line]]]:
    """Lines grouped by the rules across the page above them (`Line.band`), top band first."""
    groups: dict[int, list[Line]] = {}
    for line in lines:
        groups.setdefault(line.band, []).append(line)
    return sorted(groups.items())


def _gutters(lines: list[Line], size: float) -> list[tuple[float, float]]:
    """Strips of clear space between lines side by side, GUTTER ems wide or more.

    A strip may be crossed by a line or two of CROSSINGS (a heading over the columns, "over three
    columns." wrapping under a full line): those are where the band is cut (`_many_columns`).
    """
    if len(lines) < 2 * COLUMN_LINES:
        return []
    start, end = math.floor(min(x.left for x in lines)), math.ceil(max(x.right for x in lines))
    cover = [0] * (end - start + 1)
    for line in lines:
        for x in range(math.ceil(line.left) - start, math.floor(line.right) - start + 1):
            cover[x] += 1
    allowed = max(CROSSINGS, 0.05 * len(lines))
    gutters: list[tuple[float, float]] = []
    run: int | None = None
    for x, count in enumerate(cover):
        if count <= allowed and run is None:
            run = x
        elif count > allowed and run is not None:
            if x - run >= GUTTER * size and run > 0:
                gutters.append((start + run, start + x))
            run = None
    return gutters


CROSSINGS = 2
"""Lines that may cross a gutter (and cut the band there) before it is no gutter."""


def _crosses(line: Line, gutter: tuple[float, float], size: float) -> bool:
    """Whether a line runs across a gutter, an em or more into the columns on both sides."""
    return line.left < gutter[0] - size and line.right > gutter[1] + size


def _columns(
    lines: list[Line], gutters: list[tuple[float, float]], size: float, width: float
) -> list[list[Line]] | None:
    """The band's lines in its columns, left to right; None unless each is a column of prose.

    Each holds COLUMN_LINES lines or more, most of them long (prose, not a table's cells or a list of
    names), and no column is much narrower than the widest (a margin's notes beside a page's text).
    """
    bounds = [-math.inf, *(sum(g) / 2 for g in gutters), math.inf]
    columns: list[list[Line]] = [[] for _ in range(len(gutters) + 1)]
    for line in lines:
        middle = (line.left + line.right) / 2
        columns[next(n for n in range(len(columns)) if bounds[n] <= middle < bounds[n + 1])].append(line)
    spans = [(min(x.left for x in c), max(x.right for x in c)) for c in columns if c]
    if len(spans) < len(columns):
        return None
    widest = max(right - left for left, right in spans)
    for column, (left, right) in zip(columns, spans, strict=True):
        long = sum(1 for x in column if x.right - x.left >= 0.8 * (right - left) and len(x.text) >= 20)
        if (
            long < COLUMN_LINES
            or long < 0.5 * len(column)
            or right - left < 0.6 * widest
            or right - left < 0.15 * width
        ):
            return None
    return columns


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
    joined, grown = _tag_joins(lines)
    return [grown.get(id(line), line) for line in lines if id(line) not in joined or id(line) in grown]


def _tag_joins(lines: list[Line]) -> tuple[set[int], dict[int, Line]]:
    """The lines (by id) `_join_tags` joins, and each description's line (by id) with its tag before it."""
    text = [line for line in lines if line.kind == "text" and not line.table]
    indents = Counter(round(line.left) for line in text)
    joined: set[int] = set()
    grown: dict[int, Line] = {}  # a description's line -> the line with its tag before it
    shared = [
        x for x, n in Counter(round(line.left) for line in text if len(line.text) >= 40).items() if n >= 3
    ]
    body_left = min(shared, default=0)
    flush = _flush_right_notes(text, body_left)
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
        if (
            len(near) == 1
            and _margin_note(tag, near[0], body_left, id(tag) in flush)
            and (beside or tag.code)
        ):
            # a macro's name in typewriter, beside any line: show2e's "\showcs" beside a paragraph's
            # indented first line (a label beside a table's row, "C3", is no note)
            tag.kind = "furniture"
        elif len(beside) == 1 and not EQUATION_NUMBER.match(beside[0].text):
            description = beside[0]
            grown[id(description)] = dataclasses.replace(
                description, pieces=[*tag.pieces, *description.pieces], hang=description.left
            )
            joined.update((id(tag), id(description)))
    return joined, grown


FLUSH_SLACK = 2.0
"""Points apart two margin notes set flush right may end (mismath's end between x 140.8 and 142.7)."""


def _flush_right_notes(text: list[Line], body_left: float) -> set[int]:
    """Short lines (by id) wholly left of the text's edge that end at one x and start at others: notes.

    doc's DescribeMacro and mismath set a macro's name in the margin flush right against the text, in the
    text's size ("enumber", "e", "pinumber[<command>]", each after a backslash, end at x 141-143 before
    text at 154). Most of them must be a command's name (a backslash first): a CV sets its dates flush
    right left of its entries.
    """
    notes = [
        line
        for line in text
        if len(line.text) <= TAG_CHARS and line.right < body_left - 0.5 * line.size and line.text.strip()
    ]
    flush: set[int] = set()
    for note in notes:  # (within a couple of points: a glyph's side bearing)
        peers = [other for other in notes if abs(other.right - note.right) <= FLUSH_SLACK]
        named = sum(x.text.lstrip().startswith("\\") for x in peers)  # commands: a CV's dates are no notes
        spread = max(x.left for x in peers) - min(x.left for x in peers)
        if len(peers) >= 2 and spread >= note.size and 2 * named >= len(peers):
            flush.add(id(note))
    return flush


def _margin_note(tag: Line, beside: Line, body_left: float, flush: bool = False) -> bool:
    """A note in the margin beside a line (a macro's name a documentation sets there), not its tag.

    It stands wholly left of where the page's long lines start, most of an em or more from it, in smaller
    type than the line or one of notes set flush right against the text (`_flush_right_notes`); a man
    page's or a definition list's tag stands at the text's edge in the text's size.
    """
    return (
        tag.right < body_left - 0.5 * tag.size
        and (tag.size < 0.95 * beside.size or flush)
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
    for before, line, description, after in zip(
        [None, *text], text, text[1:], [*text[2:], None], strict=False
    ):
        if (
            line.hang
            or _goes_on_sentence(before, line)
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


def _goes_on_sentence(before: Line | None, line: Line) -> bool:
    """Whether `line` goes on the sentence of the full line right above it, in lower case: no tag.

    breakurl's "The default behavior ... after any sequence of" over "these characters:", a table of them
    set in under it.
    """
    return (
        before is not None
        and line.text[:1].islower()
        and before.page == line.page
        and 0 < before.bottom - line.bottom < 2 * line.size
        and before.right >= before.far_edge - line.size
        and not before.text.rstrip().endswith((".", ":", ";", "!", "?"))
    )


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
