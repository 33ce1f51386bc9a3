"""Tables on a PDF page read as tables: rows kept whole, each cell in its column, the caption with them.

A table is found in one of two ways:

- ruled: horizontal rules that share an x range, two at least (booktabs' top, middle and bottom rules; a
  boxed grid's lines, which a browser draws cell by cell and `_merged` joins), with text between them;
- unruled: a caption ("Table 3:", "TABLE III") over rows whose letters leave common empty strips.

Its columns are the strips, at least COLUMN_GAP em wide, that no row's letters cover, or a grid's vertical
rules. Its rows are baselines (`_rows`): in a grid, all between two rules; else consecutive baselines that
fill different columns make one row (a header whose wrapped cells sit above and below its one-line ones),
and a row filling half the columns or fewer (a label wrapped onto a second line) joins the nearest full row
between the same two rules. A table is kept only when FULL_ROWS of its rows fill more than half its
columns: a ruled box of prose (an algorithm, a framed abstract) is no table.

Nothing here reads a PDF's text: `citewise.index.pdf` hands in the page's lines and rules (`page_rules`)
and makes a line of each table.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

CAPTION = re.compile(r"(?:Table|TABLE|Tab\.)\s+(?:\d{1,3}|[IVXL]{1,6}|[A-Z]\.?\d{0,2})\b[.:\u2014\u2013-]?")
COLUMN_GAP = 0.6
"""Ems an empty strip between columns is wide at least (a word space is a third of one)."""
RULE_THICKNESS = 2.5
"""Points a rule is thick at most (thicker paths are boxes or shading)."""
MIN_RULE = 20.0
"""Points a horizontal rule is long at least."""
FULL_ROWS = 0.6
"""The share of a table's rows that must fill more than half its columns (two at least)."""
ALIGNED = 0.6
"""The share of a table's rows whose words must end or start at one x for a narrow strip to part columns."""
CELL_WORDS = 6
"""Words a table's middle cell holds at most: more is prose set in columns, not a table."""
RUN_ON = 0.25
"""The share of a table's vertically adjacent cell pairs that run one sentence on (the upper fills its column
and ends with no stop, the lower starts in lower case) from which cells of CELL_WORDS / 2 words are lines of
prose."""
PROSE_ROWS = 5
"""Rows a table has at least for its run-on cells to make it prose (a short term-and-meaning table is not)."""
RUNS_ON = re.compile(r"(?:[^\W\d_]|[,;-])$")
"""The end of a line whose sentence goes on: a letter, a comma, a semicolon or a hyphen."""
PART_CHARS = 480
"""Characters a table's passage holds at most (a chunk holds 500 by default): longer tables are cut."""


class Box(Protocol):
    """A text piece: its box in PDF points (y up), text and type size."""

    left: float
    bottom: float
    right: float
    top: float
    text: str
    size: float


class TextLine(Protocol):
    """A line of a page as `citewise.index.pdf` reads it."""

    pieces: list[Any]
    text: str

    @property
    def left(self) -> float:  # noqa: D102
        ...

    @property
    def right(self) -> float:  # noqa: D102
        ...

    @property
    def top(self) -> float:  # noqa: D102
        ...

    @property
    def bottom(self) -> float:  # noqa: D102
        ...

    @property
    def size(self) -> float:  # noqa: D102
        ...


@dataclass(frozen=True)
class Rule:
    """A thin path on a page: a table's rule, horizontal or vertical."""

    left: float
    bottom: float
    right: float
    top: float

    @property
    def horizontal(self) -> bool:
        """Whether it runs across the page rather than down it."""
        return self.right - self.left > self.top - self.bottom


@dataclass
class Table:
    """A table read from a page: its rows of cell texts (the first is the header) and its caption."""

    rows: list[list[str]]
    caption: str
    lines: list[Any] = field(default_factory=list)
    """The page lines it was made of, caption lines included (the caller takes them out of the text)."""
    box: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    """Its cells' rectangle (left, bottom, right, top): any piece of a line inside it is the table's."""
    words: list[Any] = field(default_factory=list)
    """The words of its cells."""

    def markdown(self) -> str:
        """The caption, then the rows as Markdown table rows under a header rule."""
        return "\n".join(self._head() + [_markdown_row(row) for row in self.rows[1:]])

    def parts(self, max_chars: int = PART_CHARS) -> list[str]:
        """The table in Markdown cut into parts of whole rows, each under the caption and header again.

        A passage of a table then always says what its numbers are.
        """
        head = self._head()
        room = max_chars - sum(len(line) + 1 for line in head)
        parts: list[list[str]] = [[]]
        used = 0  # characters of the current part's rows, their line breaks included
        for row in (_markdown_row(row) for row in self.rows[1:]):
            if parts[-1] and used + len(row) > room:
                parts.append([])
                used = 0
            parts[-1].append(row)
            used += len(row) + 1
        return ["\n".join(head + part) for part in parts]

    def _head(self) -> list[str]:
        rule = "|" + " --- |" * len(self.rows[0])
        return [*([self.caption] if self.caption else []), _markdown_row(self.rows[0]), rule]


def _markdown_row(row: list[str]) -> str:
    return "| " + " | ".join(" ".join(cell.replace("|", "\\|").split()) for cell in row) + " |"


MARKDOWN_ROW = re.compile(r"^\|.*\|$")


def read_markdown(text: str) -> tuple[str, list[list[str]]]:
    """A passage `Table.parts` wrote, read back: (caption, rows with the header first)."""
    lines = text.strip().split("\n")
    caption = "" if MARKDOWN_ROW.match(lines[0]) else lines.pop(0)
    rows = [
        [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        for line in lines
        if not re.fullmatch(r"\|(?: --- \|)+", line.strip())
    ]
    return caption, rows


def whole_tables(texts: Sequence[str]) -> list[tuple[int, str, list[list[str]]]]:
    """The tables among passages, the parts of a long one (`Table.parts`) joined again.

    Each is (the index of its first passage, its caption, its rows with the header first).
    """
    tables: dict[tuple[str, tuple[str, ...]], tuple[int, str, list[list[str]]]] = {}
    for index, text in enumerate(texts):
        if is_markdown_table(text):
            caption, rows = read_markdown(text)
            tables.setdefault((caption, tuple(rows[0])), (index, caption, [rows[0]]))[2].extend(rows[1:])
    return list(tables.values())


def is_markdown_table(text: str) -> bool:
    """Whether a passage is a table as `Table.parts` writes it: an optional caption line, then rows."""
    lines = text.strip().split("\n")
    rows = lines[1:] if lines and not MARKDOWN_ROW.match(lines[0]) else lines
    return len(rows) >= 2 and all(MARKDOWN_ROW.match(line.strip()) for line in rows)


def in_page(obj: Any, x: float, y: float) -> tuple[float, float]:
    """A point of a pypdfium2 page object in page space.

    PDFium gives an object inside a Form XObject (a figure LaTeX included, a page a tool wrapped) in the
    form's space: each form's matrix, innermost first, takes it to the page.
    """
    form = obj.container
    while form is not None:
        a, b, c, d, e, f = form.get_matrix().get()
        x, y = a * x + c * y + e, b * x + d * y + f
        form = form.container
    return x, y


def page_box(obj: Any) -> tuple[float, float, float, float]:
    """A pypdfium2 page object's bounds (left, bottom, right, top) in page space (see `in_page`)."""
    left, bottom, right, top = obj.get_bounds()
    if obj.container is None:
        return left, bottom, right, top
    corners = [in_page(obj, x, y) for x in (left, right) for y in (bottom, top)]
    xs, ys = [x for x, _ in corners], [y for _, y in corners]
    return min(xs), min(ys), max(xs), max(ys)


Box4 = tuple[float, float, float, float]
"""A box in page space: left, bottom, right, top."""


def path_boxes(page: Any) -> list[Box4]:
    """The boxes of a pypdfium2 page's paths, read once a page: its rules and drawn marks are among them."""
    import pypdfium2.raw as raw

    return [page_box(obj) for obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_PATH])]


def page_rules(paths: list[Box4]) -> list[Rule]:
    """A page's thin paths (`path_boxes`: rules, cell borders), joined where they continue each other."""
    found = []
    for left, bottom, right, top in paths:
        width, height = right - left, top - bottom
        if min(width, height) <= RULE_THICKNESS and max(width, height) >= 4.0:
            found.append(Rule(left, bottom, right, top))
    return _merged([r for r in found if r.horizontal]) + _merged([r for r in found if not r.horizontal])


def _merged(rules: list[Rule]) -> list[Rule]:
    """Collinear rules that touch made one (a grid drawn cell by cell has one segment per cell)."""
    if not rules:
        return []
    horizontal = rules[0].horizontal

    def across(rule: Rule) -> float:  # the position across the rule's length
        return (rule.top + rule.bottom) / 2 if horizontal else (rule.left + rule.right) / 2

    def start(rule: Rule) -> float:
        return rule.left if horizontal else rule.bottom

    def end(rule: Rule) -> float:
        return rule.right if horizontal else rule.top

    out: list[Rule] = []
    for rule in sorted(rules, key=lambda r: (round(across(r)), start(r))):
        last = out[-1] if out else None
        if last and abs(across(last) - across(rule)) <= 1.0 and start(rule) <= end(last) + 2.0:
            out[-1] = Rule(
                min(last.left, rule.left),
                min(last.bottom, rule.bottom),
                max(last.right, rule.right),
                max(last.top, rule.top),
            )
        else:
            out.append(rule)
    return out


Words = Callable[[float, float, float, float], list[Any]]
"""The words (`Box`es, one word each) of a page inside a rectangle: left, bottom, right, top."""


@dataclass
class CarriedCaption:
    """A caption left at the foot of the page before, its table moved whole to this page (LibreOffice).

    Set over this page's first row that stands in columns, it reads the rows under it as `_unruled_table`
    reads those under a caption on their own page.
    """

    text: str
    size: float
    left: float = 0.0
    right: float = 0.0
    top: float = 0.0
    bottom: float = 0.0
    pieces: list[Any] = field(default_factory=list)
    source: set[int] = field(default_factory=set)
    """The ids of the caption's lines on the page before (taken out of its text when the table is found)."""


def find_tables(
    lines: Sequence[TextLine], rules: Sequence[Rule], words: Words, carried: CarriedCaption | None = None
) -> list[Table]:
    """The tables on one page (see the module docstring).

    `lines` say where text stands; cells are made of `words`, since a typesetter may set a whole row of
    a table as one text object. `carried`: a caption the page before ended with, whose table may open
    this page.
    """
    tables: list[Table] = []
    used: set[int] = set()
    verticals = [r for r in rules if not r.horizontal]

    def search(frame: list[Rule]) -> None:
        """The widest run of the frame's rules that holds a table, then the runs above and below it."""
        for width in range(len(frame) - 1, 0, -1):
            for start in range(len(frame) - width):
                table = _ruled_table(lines, frame[start : start + width + 1], verticals, used, words)
                if table:
                    tables.append(table)
                    used.update(id(line) for line in table.lines)
                    search(frame[:start])
                    search(frame[start + width + 1 :])
                    return

    for frame in _frames([r for r in rules if r.horizontal and r.right - r.left >= MIN_RULE]):
        search(frame)  # two tables of one width on a page share a frame; a running head's rule may join it
    for line in lines:
        if id(line) not in used and CAPTION.match(line.text):
            table = _unruled_table(lines, line, used, words)
            if table:
                tables.append(table)
                used.update(id(line) for line in table.lines)
    if carried is not None:  # the first lines of the page, past its running head, standing in columns
        rows = (_cells_of_row(x, lines, words) for x in sorted(lines, key=lambda x: -x.top)[:8])
        row = next((row for row in rows if row), [])
        first = row[0] if row else None
        if first is not None and id(first) not in used:
            carried.left, carried.right = min(x.left for x in row), max(x.right for x in row)
            # far enough above the row that it is read as the table's first row, not the caption's last line
            carried.bottom, carried.top = first.top + 0.8 * carried.size, first.top + 1.8 * carried.size
            table = _unruled_table(lines, carried, used, words)
            if table:
                tables.append(table)
    return tables


def _frames(rules: list[Rule]) -> list[list[Rule]]:
    """Runs of horizontal rules, top to bottom, with the same extent (within 4 points at each end)."""
    frames: list[list[Rule]] = []
    for rule in sorted(rules, key=lambda r: -r.top):
        for frame in frames:
            if abs(frame[0].left - rule.left) <= 4.0 and abs(frame[0].right - rule.right) <= 4.0:
                frame.append(rule)
                break
        else:
            frames.append([rule])
    return [frame for frame in frames if len(frame) >= 2]


def _ruled_table(
    lines: Sequence[TextLine],
    frame: list[Rule],
    verticals: list[Rule],
    used: set[int],
    words: Words,
) -> Table | None:
    """The table between a run of rules' first and last, if the words between them stand in columns."""
    top, bottom = frame[0], frame[-1]
    left, right = min(r.left for r in frame) - 2.0, max(r.right for r in frame) + 2.0
    box = (left, bottom.top, right, top.bottom)
    inside = [w for w in words(*box) if centred_in(w, box)]
    if not inside:
        return None
    height = top.bottom - bottom.top
    splits = [(r.top + r.bottom) / 2 for r in frame[1:-1]]
    walls = [
        (r.left + r.right) / 2
        for r in verticals
        if left < (r.left + r.right) / 2 < right
        and min(r.top, top.top) - max(r.bottom, bottom.bottom) > 0.5 * height
    ]
    rows = _rows(inside, splits, walls)
    if not rows:
        return None
    caption = _caption(lines, top, bottom, left, right, used)
    return Table(rows, text_of_lines(caption), caption, box, inside)


def centred_in(word: Box, box: tuple[float, float, float, float]) -> bool:
    """Whether a word's centre lies in a rectangle (left, bottom, right, top)."""
    x, y = (word.left + word.right) / 2, (word.top + word.bottom) / 2
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def _caption(
    lines: Sequence[TextLine], top: Rule, bottom: Rule, left: float, right: float, used: set[int]
) -> list[TextLine]:
    """The caption lines just over a ruled table (or just under it), if a line there says "Table N"."""
    near = [line for line in lines if id(line) not in used and line.right > left and line.left < right]
    above = sorted((line for line in near if line.bottom >= top.top - 1.0), key=lambda line: line.bottom)
    taken: list[TextLine] = []
    for line in above[:4]:  # nearest first: the caption's last line, up to its first
        if line.bottom - (taken[-1].top if taken else top.top) > 1.5 * line.size:
            break
        taken.append(line)
        if CAPTION.match(line.text):
            return taken[::-1]
    below = sorted((line for line in near if line.top <= bottom.bottom + 1.0), key=lambda line: -line.top)
    if below and bottom.bottom - below[0].top <= 1.5 * below[0].size and CAPTION.match(below[0].text):
        caption = [below[0]]
        for line in below[1:4]:
            if caption[-1].bottom - line.top > 0.6 * line.size or CAPTION.match(line.text):
                break
            caption.append(line)
        return caption
    return []


def text_of_lines(lines: Sequence[TextLine]) -> str:
    """Lines' texts as one, in order."""
    return " ".join(line.text for line in lines)


def _unruled_table(
    lines: Sequence[TextLine], caption: TextLine, used: set[int], words: Words
) -> Table | None:
    """The rows under a "Table N" caption, in its column, while they stand in columns; None if they do not."""
    page_left, page_right = min(line.left for line in lines), max(line.right for line in lines)
    middle = (page_left + page_right) / 2
    halves = sum(line.right < middle for line in lines), sum(line.left > middle for line in lines)
    if min(halves) >= 5 and (caption.right < middle + 5 or caption.left > middle - 5):
        left, right = (page_left, middle) if caption.right < middle + 5 else (middle, page_right)
    else:
        left, right = page_left, page_right
    under = sorted(
        (
            line
            for line in lines
            if id(line) not in used
            and line is not caption
            and line.top < caption.bottom + 1.0
            and left - 1.0 <= line.left
            and line.right <= right + 1.0
        ),
        key=lambda line: -line.top,
    )
    taken, heading = [caption], [caption]
    for line in under:  # the caption's own later lines: close under it and not yet in columns
        if taken[-1].bottom - line.top > 0.6 * line.size or len(heading) >= 4:
            break
        if _spaced(line, words):
            break
        heading.append(line)
        taken.append(line)
    body: list[TextLine] = []
    gaps: list[float] = []  # between one row's bottom and the next row's top
    bottom = heading[-1].bottom
    for line in under[len(heading) - 1 :]:
        size = body[0].size if body else line.size
        if (
            line.size > 1.15 * size
            or line.right - line.left > 0.85 * (right - left)
            and not _spaced(line, words)
        ):
            break  # a heading, or prose across the column: the text after the table
        if line.top < bottom:  # the next row down
            gap = bottom - line.top
            if gap > (2.5 * size if not gaps else 2 * sorted(gaps)[len(gaps) // 2] + 0.3 * size):
                break
            if gaps and not _spaced(line, words) and _crosses_columns(body, line, words, size):
                break  # prose under the table, set close: its words, a word space apart, cross its columns
            gaps.append(gap)
        body.append(line)
        bottom = min(bottom, line.bottom) if line.top >= bottom else line.bottom
    cells = _words_of(body, words)
    rows = _rows(cells, [], []) if len(body) >= 2 else None
    if not rows:
        return None
    box = (
        min(x.left for x in body),
        min(x.bottom for x in body),
        max(x.right for x in body),
        max(x.top for x in body),
    )
    return Table(rows, text_of_lines(heading), [*heading, *body], box, cells)


def _crosses_columns(rows: list[TextLine], line: TextLine, words: Words, size: float) -> bool:
    """Whether a line's words cover every column gap the lines above leave (two rows of them at least)."""
    above = _words_of(rows, words)
    if not above:
        return False
    low, high = min(w.left for w in above), max(w.right for w in above)
    empty = [(low, high)]
    for spans in [cover(_words_of([row], words)) for row in rows]:
        empty = minus(empty, spans)
    gaps = [(a, b) for a, b in empty if b - a >= COLUMN_GAP * size and low < a and b < high]
    left = minus(gaps, cover(_words_of([line], words)))  # a word space leaves a sliver, no column gap
    return bool(gaps) and not any(b - a >= 0.3 * size for a, b in left)


def _cells_of_row(line: TextLine, lines: Sequence[TextLine], words: Words) -> list[TextLine]:
    """The lines that make a table's row with `line`: short cells on its baseline, each near the last.

    [] when it stands alone and has no column gap of its own.
    """
    row = [line]
    for other in sorted(lines, key=lambda x: x.left):
        near = (
            abs(other.bottom - line.bottom) < 0.3 * line.size
            and 0 < other.left - row[-1].right < 20 * line.size
            and len(other.text.split()) <= 5  # a cell, not the next column's text
        )
        if other is not line and near:
            row.append(other)
    return row if len(row) > 1 or _spaced(line, words) else []


def _spaced(line: TextLine, words: Words) -> bool:
    """Whether a line's words stand apart by a column gap somewhere."""
    pieces = sorted(_words_of([line], words), key=lambda p: p.left)
    return any(b.left - a.right >= COLUMN_GAP * line.size for a, b in zip(pieces, pieces[1:], strict=False))


def _words_of(lines: list[TextLine], words: Words) -> list[Any]:
    """The words inside the lines' boxes."""
    if not lines:
        return []
    box = (
        min(x.left for x in lines),
        min(x.bottom for x in lines),
        max(x.right for x in lines),
        max(x.top for x in lines),
    )
    boxes = [(line.left - 1, line.bottom - 1, line.right + 1, line.top + 1) for line in lines]
    return [w for w in words(*box) if any(centred_in(w, line_box) for line_box in boxes)]


def _rows(pieces: list[Any], splits: list[float], walls: list[float]) -> list[list[str]] | None:
    """The cell texts of a table's words, row by row; None when they do not stand in columns.

    Baselines are grouped into rows: in a grid, all between two rules; else consecutive baselines that fill
    different columns (a header whose wrapped cells sit above and below its one-line ones) make one, and a
    group filling half the columns or fewer joins the nearest full one between the same two rules.
    """
    if not pieces:
        return None
    size = sorted(p.size for p in pieces)[len(pieces) // 2]
    baselines: list[list[Any]] = []
    for piece in sorted(pieces, key=lambda p: -(p.top + p.bottom)):
        centre = (piece.top + piece.bottom) / 2
        if baselines and abs((baselines[-1][0].top + baselines[-1][0].bottom) / 2 - centre) <= 0.4 * size:
            baselines[-1].append(piece)
        else:
            baselines.append([piece])
    bounds = _column_bounds(baselines, walls, size)
    if len(bounds) < 2:
        return None
    enough = max(2, len(bounds) // 2 + 1)  # more than half its columns: a full row
    filled = [_cells(row, bounds) for row in baselines]
    centres = [(row[0].top + row[0].bottom) / 2 for row in baselines]
    bands = [sum(split > centre for split in splits) for centre in centres]
    groups: list[list[int]] = []  # baselines by row, top to bottom
    for n in range(len(baselines)):
        last = groups[-1] if groups else []
        taken = {c for m in last for c, cell in enumerate(filled[m]) if cell}
        mine = {c for c, cell in enumerate(filled[n]) if cell}
        together = bool(last) and bands[last[-1]] == bands[n]
        if together and (walls or (not taken & mine and centres[last[-1]] - centres[n] <= 1.6 * size)):
            last.append(n)
        else:
            groups.append([n])

    if (
        len(groups) > 2
        and not filled[groups[1][0]][0]
        and centres[groups[0][-1]] - centres[groups[1][0]] <= 1.6 * size
    ):
        # the header's cells wrapped onto a second line ("Error" over "(%)"), its first cell on one line: a
        # row of data always fills its first column
        groups[0].extend(groups.pop(1))

    def width(group: list[int]) -> int:
        return sum(any(filled[m][c] for m in group) for c in range(len(bounds)))

    if sum(width(group) >= enough for group in groups) < 2:
        return None
    if not walls:  # a group short of half the columns joins the nearest full one between the same rules
        full = [g for g in groups if width(g) >= enough]
        for group in [g for g in groups if width(g) < enough]:
            mates = [g for g in full if bands[g[0]] == bands[group[0]]]
            if mates:
                nearest = min(
                    mates, key=lambda g: min(abs(centres[a] - centres[b]) for a in g for b in group)
                )
                nearest.extend(group)
                groups.remove(group)
    rows: list[list[str]] = []
    filling: list[list[bool]] = []  # whether each cell's last line fills its column
    spans = [
        [(min(p.left for p in row[c]), max(p.right for p in row[c])) for row in filled if row[c]]
        for c in range(len(bounds))
    ]
    widest = [_column_end(column) for column in spans]
    for group in groups:
        parts: list[list[tuple[str, bool]]] = [[] for _ in bounds]
        for m in sorted(group):  # top to bottom: a wrapped cell's lines in order
            for column, cell in enumerate(filled[m]):
                if cell:
                    text = " ".join(p.text for p in sorted(cell, key=lambda p: p.left))
                    parts[column].append((text, max(p.right for p in cell) >= widest[column] - 0.5 * size))
        rows.append([_cell_text(part) for part in parts])
        filling.append([bool(part) and part[-1][1] for part in parts])
    if sum(sum(bool(cell) for cell in row) >= enough for row in rows) < FULL_ROWS * len(rows):
        return None
    return None if _prose(rows, filling) else rows


def _column_end(spans: list[tuple[float, float]]) -> float:
    """Where a column's lines end: where most of them end when it is justified, else its widest line's end.

    A justified column of prose set in columns has a line or two overhanging its edge (papertex's news
    columns): measured by those, no cell filled its column. Justified: JUSTIFIED of its lines, long ones,
    end at one x (a column of one-letter cells, "n" under "n", ends at one x too).
    """
    if not spans:
        return 0.0
    widest = max(right - left for left, right in spans)
    rights = [right for left, right in spans if right - left >= 0.7 * widest]
    most, count = Counter(round(x) for x in rights).most_common(1)[0]
    near = sum(1 for x in rights if abs(x - most) <= 1.0)
    ends = max(right for _, right in spans)
    return float(most) if near >= JUSTIFIED * len(spans) and count >= 3 else ends


JUSTIFIED = 0.4
"""Share of a column's lines ending at one x (to a point) that makes it a justified column."""


def _prose(rows: list[list[str]], full: list[list[bool]]) -> bool:
    """Whether a table's rows are lines of prose set in columns (two columns between a boxed head and foot).

    Its cells hold more than CELL_WORDS words, or, a line a row, half as many and run their sentences on from
    a cell that fills its column to the one below (Elsevier's CAS class: a rule under the abstract and one
    over the foot). `full`: whether each cell's last line fills its column.
    """
    words = sorted(len(cell.split()) for row in rows for cell in row if cell)
    median = words[len(words) // 2] if words else 0
    if median > CELL_WORDS:
        return True
    pairs = [
        (a, b, filled)
        for upper, lower, ends in zip(rows, rows[1:], full, strict=False)
        for a, b, filled in zip(upper, lower, ends, strict=True)
        if a and b
    ]
    runs = sum(bool(filled and RUNS_ON.search(a) and b[0].islower()) for a, b, filled in pairs)
    return len(rows) >= PROSE_ROWS and 2 * median >= CELL_WORDS and runs >= RUN_ON * len(pairs)


def _cell_text(lines: list[tuple[str, bool]]) -> str:
    """A cell's lines (each with whether it fills the column) as one text, broken words whole again.

    "Speed-" "up" is "Speed-up"; a word a narrow cell broke with no hyphen, its first part filling the cell
    ("degenerac" "y": LibreOffice carries the letters that do not fit), is joined too.
    """
    text, full = "", False
    for line, fills in lines:
        broken = full and re.search(r"[^\W\d_]{4}$", text) and re.match(r"[a-z](?:\s|$)", line)
        text = f"{text}{line}" if broken or not text else f"{text} {line}"
        full = fills
    return re.sub(r"(?<=\w-) (?=\w)", "", text)


def _column_bounds(rows: list[list[Any]], walls: list[float], size: float) -> list[tuple[float, float]]:
    """The x ranges of a table's columns: split at strips no row covers and at a grid's vertical rules."""
    covers = [cover(row) for row in rows]
    low, high = min(a for spans in covers for a, _ in spans), max(b for spans in covers for _, b in spans)
    empty = [(low, high)]
    for spans in covers:
        empty = minus(empty, spans)
    cuts = [
        (a + b) / 2
        for a, b in empty
        if low < a
        and b < high
        and (b - a >= COLUMN_GAP * size or len(rows) >= 3 and _aligned_at(rows, (a + b) / 2, size))
    ]
    inner = [wall for wall in walls if low < wall < high]
    if inner:  # a grid: its rules are the columns (a header wrapped in a narrow cell leaves false gaps)
        cuts = inner
    edges = [low, *sorted(cuts), high]
    return list(zip(edges, edges[1:], strict=False))


def _aligned_at(rows: list[list[Any]], x: float, size: float) -> bool:
    """Whether a narrow strip at x that no row covers is a column gap: the words beside it line up.

    A tight table (llncs sets its columns 1.4 pt apart) leaves less than COLUMN_GAP between columns; its
    columns still end (right-aligned numbers) or start (left-aligned labels) at one x in most rows, the
    rows that make the strip narrow among them, and most rows have words on both sides of it. A space inside
    one row's cell ("Memory (GB)" over a column of numbers that start at one x) lines up with nothing; the
    margin beside prose whose headings hang their numbers there has words on one side only.
    """
    ends = [max((p.right for p in row if p.right <= x), default=None) for row in rows]
    starts = [min((p.left for p in row if p.left >= x), default=None) for row in rows]
    flanked = [(a, b) for a, b in zip(ends, starts, strict=True) if a is not None and b is not None]
    if len(flanked) < ALIGNED * len(rows):  # a margin beside prose (hanging section numbers), no column
        return False
    tight = [(a, b) for a, b in flanked if b - a < COLUMN_GAP * size]

    def lined_up(edges: list[float | None], of_tight: list[float]) -> bool:
        found = Counter(round(edge) for edge in edges if edge is not None)
        if not found:
            return False
        at, count = found.most_common(1)[0]
        return count >= max(3, ALIGNED * len(rows)) and all(abs(edge - at) <= 1.0 for edge in of_tight)

    return lined_up(ends, [a for a, _ in tight]) or lined_up(starts, [b for _, b in tight])


def cover(pieces: Sequence[Box]) -> list[tuple[float, float]]:
    """The x ranges pieces' letters cover, merged where they touch within 0.15 em (glyph by glyph words)."""
    spans = sorted((p.left - 0.15 * p.size, p.right + 0.15 * p.size) for p in pieces)
    merged: list[tuple[float, float]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def minus(spans: list[tuple[float, float]], covered: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The parts of `spans` that no range of `covered` overlaps."""
    for a, b in covered:
        spans = [part for x, y in spans for part in ((x, min(y, a)), (max(x, b), y)) if part[1] > part[0]]
    return spans


def _cells(row: list[Any], bounds: list[tuple[float, float]]) -> list[list[Any]]:
    """A baseline's pieces by column (the column holding each piece's centre)."""
    cells: list[list[Any]] = [[] for _ in bounds]
    for piece in row:
        centre = (piece.left + piece.right) / 2
        column = next((n for n, (_, b) in enumerate(bounds) if centre <= b), len(bounds) - 1)
        cells[column].append(piece)
    return cells
