"""What is no passage of the text.

Running heads and page numbers found by repetition, margin line numbers,
copyright and conference stamps, footnotes, display equations and their numbers, and contents lines.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import statistics
from collections import Counter

from citewise.index.citations import is_reference_heading, opens_author_entry
from citewise.index.pdf.headings import FLOAT_CAPTION
from citewise.index.pdf.lines import (
    ENTRY_LABEL,
    EQUATION_NUMBER,
    FOOTNOTE_MARK,
    OCR_EQUATION,
    OCR_FONT,
    Line,
    same_column,
)

PAGE_CALLED = re.compile(r"page\s*(\d{1,4})", re.IGNORECASE)
"""A page number said with its word: "Page 3"."""


def mark_furniture(pages: list[list[Line]]) -> None:
    """Running heads (top or bottom lines repeated across pages, digits aside) and lone page numbers.

    A slide's build step (`_overlay_steps`) is left out first, whole: its lines are the next page's, and
    counted as repeats they would make the slide's own text a running head.
    """
    steps = _overlay_steps(pages)
    for number in steps:
        for line in pages[number]:
            line.kind = "furniture"
    pages = [[] if number in steps else lines for number, lines in enumerate(pages)]

    ends: list[list[Line]] = []
    one_page = sum(bool(page) for page in pages) == 1
    # lines of code with a line right under them: a block's, not a head (held, not only their ids: a line
    # `_mark_line_numbers` replaces is freed, and a new line may take its id)
    in_block: dict[int, Line] = {}
    for lines in pages:
        by_height = sorted(lines, key=lambda line: -line.top)
        for above, below in itertools.pairwise(by_height):
            if above.bottom - below.top < 0.8 * above.size and above.code:  # the gap first: it costs nothing
                in_block[id(above)] = above
        end = [*by_height[:2], *by_height[-2:]] if len(by_height) > 4 else by_height
        # and what stands on their baselines: a foot in three parts (a journal's name, "- 2 -", its volume)
        # (at the foot only, two lines more at most, none a number: a page's first line may have a listing's
        # line number beside it, a baseline of many pieces is a line of text read word by word)
        on_foot = [x for x in by_height[2:-2] if abs(x.bottom - by_height[-1].bottom) < 1]
        if len(by_height) > 4 and len(on_foot) <= 2:
            end += [x for x in on_foot if not PAGE_NUMBER.fullmatch(x.text.strip())]
        ends.append(end)
        if one_page and len(by_height) > 4:
            # nothing repeats on one page: a line set apart by a margin's gap, in body type or smaller
            head, foot = by_height[0], by_height[-1]
            size = statistics.median(line.size for line in by_height)
            if head.bottom - by_height[1].top > 2.5 * size and head.size <= 1.05 * size:
                head.kind = "furniture"
            if by_height[-2].bottom - foot.top > 2.5 * size and len(foot.text.split()) <= 8:
                foot.kind = "furniture"
    for lines in pages:
        _mark_stamps(lines)
        _mark_line_numbers(lines)
    counts = Counter(s for end in ends for s in {_shape(line) for line in end})
    repeated = max(2, min(3, round(0.4 * len(pages))))  # a chapter's own head repeats on its pages
    heights: dict[str, list[float]] = {}
    sizes: dict[str, list[float]] = {}
    for end in ends:
        for line in end:
            heights.setdefault(_shape(line), []).append(line.top)
            sizes.setdefault(_shape(line), []).append(line.size)

    entries = _called_out_of_step(ends)
    body = statistics.median(line.size for lines in pages for line in lines) if any(pages) else 0.0

    def repeats(line: Line) -> bool:
        # a running head is short, or stands at one height on every page: a paragraph a manual repeats
        # word for word (its Word and LibreOffice instructions) is no furniture where it starts a page
        if len(pages) < 2 or counts[_shape(line)] < repeated or not re.search(r"[^\W_]", line.text):
            return False  # a head says something: "$$" opening two pages is a display's first line
        if id(line) in entries or id(line) in in_block:  # clrscode3e opens 7 pages with "\\begin{codebox}"
            return False
        if line.size > 1.2 * max(min(sizes[_shape(line)]), body):  # a chapter's heading its heads repeat
            return False
        if line.size >= DISPLAY_HEAD * body:  # "Chapitre 2" over each chapter's title, in display type
            return False
        alike = sum(abs(top - line.top) < 2 for top in heights[_shape(line)])
        return len(line.text.split()) < 12 or alike >= repeated

    first_sizes = [line.size for line in pages[0]] if pages and pages[0] else [0.0]
    display = 1.2 * statistics.median(first_sizes)
    for number, end in enumerate(ends):
        for line in end:
            page_number = PAGE_NUMBER.fullmatch(line.text)
            if number == 0 and line.size > display:  # the title, which later pages repeat as their head
                continue
            if page_number and id(line) not in entries or repeats(line):
                line.kind = "furniture"

    # a sidebar or a footer block: lines standing at the same place with the same words on several pages,
    # wherever on the page (elsarticle's manual repeats a box of links and a four-line footer on every page)
    placed = Counter(key for lines in pages for key in {_place(line) for line in lines})
    for number, lines in enumerate(pages if len(pages) >= 2 else []):
        for line in lines:
            title = number == 0 and line.size > display  # a manual repeats its title in the sidebar
            if (
                placed[_place(line)] >= repeated
                and line.kind == "text"
                and id(line) not in in_block  # a code block's first line ("\\begin{codebox}")
                and not title
                and id(line) not in entries
                and line.size < DISPLAY_HEAD * body  # a chapter's label, where each chapter opens
            ):
                line.kind = "furniture"
    # a line at a page's top, standing where the other pages' running heads stand, in their type, is one
    # too, whatever it says ("Typeset with jpsj2.cls" where later pages say "J. Phys. Soc. Jpn.")
    # (the foot is left alone: a last page's last line may stand where others' feet do)
    # (heads found on half the other pages at least: a page's first line of body text stands at one height
    # on every page, and two pages opening with a display's "$$" made every page's first line a head)
    tops = []
    for lines in (lines for lines in pages if lines):
        highest = max(line.top for line in lines)
        tops.append([line for line in lines if line.top > highest - 1.0])
    heads = [[x for x in top if x.kind == "furniture"] for top in tops]
    least = max(2, repeated - 1, (len(tops) - 1) / 2)
    for number, top in enumerate(tops):
        for line in top:
            alike = sum(any(_stands_as(line, x) for x in head) for n, head in enumerate(heads) if n != number)
            if line.kind == "text" and alike >= least and line.size <= display and id(line) not in entries:
                line.kind = "furniture"
    _mark_feet(pages, least)
    _mark_headlines(pages, body)
    # a short line on the page number's baseline at a later page's top is its running head, repeated or not
    # (a three-page paper: "2 ... P. W. Daly", "SUBNUMBERING FIGURES, TABLES, EQUATIONS ... 3")
    for number, top in enumerate(tops):
        numbered = number > 0 and any(x.kind == "furniture" and PAGE_NUMBER.fullmatch(x.text) for x in top)
        for line in top if numbered else []:
            if line.kind == "text" and len(line.text.split()) <= 12 and line.size <= display:
                line.kind = "furniture"


FOOT_WORDS = 3
"""Words a page's last line must open with, as the running feet of other pages do, to be one itself."""


def _mark_feet(pages: list[list[Line]], least: float) -> None:
    """A page's last line that stands and opens as the other pages' running feet do is one too.

    Whatever its end says: "Notebook. August, Page 4." where the other pages say "Notebook. Page 3." and
    "Notebook. August 19-25, Task 1, Page 5.", its shape seen once. A last page's last line may stand where
    others' feet do, so the opening words must be theirs too.
    """
    feet = [min(lines, key=lambda line: line.top) for lines in pages if lines]
    openings = {id(x): _shape(x).split()[:FOOT_WORDS] for x in feet}  # once each: a manual has 400 feet
    furniture = [x for x in feet if x.kind == "furniture"]
    for line in feet:
        opening = openings[id(line)]
        if line.kind != "text" or len(opening) < FOOT_WORDS:
            continue
        alike = sum(_stands_as(line, x) and openings[id(x)] == opening for x in furniture if x is not line)
        if alike >= least:
            line.kind = "furniture"


def _stands_as(line: Line, furniture: Line) -> bool:
    """Whether a line stands at a running head's or foot's height on its page, in its type."""
    return abs(furniture.top - line.top) < 1.5 and abs(furniture.size - line.size) < 0.15 * furniture.size


def _shape(line: Line) -> str:
    """A line's words as repeats are compared: digits aside, wherever they stand.

    A page number is a word of its own line on some pages only.
    """
    return " ".join(re.sub(r"\d+", " ", line.text.lower()).split())


def _place(line: Line) -> tuple[str, int, int]:
    """A line's words (`_shape`) and where it stands: the same place on another page is a repeat."""
    return _shape(line), round(line.left), round(line.top)


OVERLAY_SHARE = 0.9
"""Share of a page's lines, at least, that the next page holds at the same place for it to be a build step."""


def _overlay_steps(pages: list[list[Line]]) -> set[int]:
    """Pages a slide deck shows again, fuller, on the next page: the steps of a slide built item by item.

    Beamer's and lecturer's overlays print a slide once per step, each page the one before with one more
    item. A page with two lines or more, nearly all of them standing on the next page at the same place with
    the same words (digits aside, `_place`), says nothing the next page does not. Lines on nearly every page
    (a footline and its "3 / 12", a ruler's marks down a test page's margin) are not counted.
    """
    # what stands on (nearly) every page says nothing of steps: a footline, a ruler's marks down the margin
    everywhere = Counter(key for lines in pages for key in {_place(line) for line in lines})
    common = {key for key, n in everywhere.items() if n >= max(3, 0.8 * len(pages))}
    steps = set()
    for number in range(len(pages) - 1):
        here = [key for key in map(_place, pages[number]) if key not in common]
        there = {_place(line) for line in pages[number + 1]}
        if len(here) >= 2 and sum(key in there for key in here) >= OVERLAY_SHARE * len(here):
            steps.add(number)
    return steps


def _mark_headlines(pages: list[list[Line]], body: float) -> None:
    """Lines in small type over each page's first line in larger type, at heights other pages share.

    A slide deck's headline (beamer's sections and subsections in 6 points over a 14-point frame title) is
    set in pieces that change with the slide (the current entry highlighted, "Package Introduction" one
    line on one slide and two on the next): no shape of it repeats often enough to be a running head.
    """
    sizes: Counter[float] = Counter()
    for line in (line for lines in pages for line in lines):
        sizes[line.size] += len(line.text)
    body = sizes.most_common(1)[0][0] if sizes else body  # by characters: a deck's headlines are many lines
    bands: list[list[Line]] = []
    for lines in pages:
        larger = [x.top for x in lines if x.size >= 0.8 * body]  # a frame title repeated as a head too
        first = max(larger, default=math.inf)
        bands.append([x for x in lines if x.bottom >= first and x.size <= HEADLINE * body and not x.code])
    words = {id(x): set(HEADLINE_WORD.findall(x.text.lower())) for band in bands for x in band}
    for number, band in enumerate(bands):
        for line in band:
            # its words at its height on two other pages at least (a listing's first lines, a diagram's
            # labels at a page's top say other things on every page)
            alike = sum(
                any(abs(x.top - line.top) < 2 and words[id(x)] & words[id(line)] for x in other)
                for n, other in enumerate(bands)
                if n != number
            )
            if line.kind == "text" and alike >= 2:
                line.kind = "furniture"


DISPLAY_HEAD = 1.6
"""Times the body's size from which a line repeated at pages' tops is a chapter's label, not a head
(semantex's "Chapter 1" in 17.2 points over 10)."""
HEADLINE = 0.7
"""Times the body's size a headline's type is at most (beamer's 6 points over 10.9)."""
HEADLINE_WORD = re.compile(r"[^\W\d_]{3,}")


PAGE_NUMBER = re.compile(
    r"(?:page\s*)?(?:[\divxlc]{1,5}|(?-i:[A-Z]{1,6}|\d{1,3})[-\u2013]\d{1,4})(?:\s*(?:of|/)\s*\d+)?",
    re.IGNORECASE,
)
"""A page number as a line of its own prints it: "7", "xii", "Page 3", "3 of 9", "3/9"; numbered by chapter
or appendix, as a thesis or a military report numbers its pages: "2-1", "A-1", "VITA-1"."""


def _called_out_of_step(ends: list[list[Line]]) -> set[int]:
    """Lines "page 101" at pages' ends whose numbers do not run with the pages: an errata list's entries.

    Numbers printed as "Page N" run with the pages (the same offset on two pages at least); "page 101"
    opening page 2 and "page 228" opening page 5 are entries' heads, not page numbers nor a running head.
    """
    called = [
        (n, int(m[1]), x) for n, end in enumerate(ends) for x in end if (m := PAGE_CALLED.fullmatch(x.text))
    ]
    offsets = Counter(value - n for n, value, _ in called)
    return {id(x) for n, value, x in called if len(called) > 1 and offsets[value - n] < 2}


def _mark_line_numbers(lines: list[Line]) -> None:
    """Numbers in a page's margin beside its lines (AASTeX's and a draft's line numbers): furniture.

    Five or more lines of digits alone standing wholly left or right of every other line's text.
    """
    numbers = [line for line in lines if re.fullmatch(r"\d{1,4}", line.text)]
    if len(numbers) < 5:
        return
    for n, line in enumerate(list(lines)):  # a number read into the line beside it: "20 and NIH. They ..."
        first, *rest = line.pieces
        if (
            rest
            and re.fullmatch(r"\d{1,4}", first.text.strip())
            and rest[0].left - first.right > first.size
            and any(abs(first.left - x.left) < 1 or abs(first.right - x.right) < 1 for x in numbers)
        ):
            lines[n] = dataclasses.replace(line, pieces=rest)
            number = dataclasses.replace(line, pieces=[first])
            lines.append(number)
            numbers.append(number)
    text = [line for line in lines if line not in numbers]
    if not text:
        return
    left, right = min(line.left for line in text), max(line.right for line in text)
    margin = [line for line in numbers if line.right < left or line.left > right]
    if len(margin) >= 5:
        for line in margin:
            line.kind = "furniture"


STAMP = re.compile(
    r"[a-z][a-z+.-]{1,9}://\S+|\d{1,2}/\d{1,2}/\d{2,4},?(?:\d{1,2}:\d{2}(?:[AP]M)?)?|\d{1,4}/\d{1,4}",
    re.IGNORECASE,
)
"""What a browser or office program stamps in a page's margin, as a whole line (spaces aside): a URL, a
date (and time), a page counter "3/7". A reference entry's "Available at https://..." is no stamp."""


def _mark_stamps(lines: list[Line]) -> None:
    """The topmost and bottommost rows of a page, in small type, that hold a URL, a date or "n/m": furniture.

    Chromium prints the date and the page's title at the top of every page and the file's URL and "1/3" at
    its foot; on a one-page document nothing repeats to give them away.
    """
    text = [line for line in lines if line.kind == "text"]
    if len(text) < 4:
        return
    size = statistics.median(line.size for line in text)
    highest, lowest = max(line.top for line in text), min(line.bottom for line in text)
    for row in (
        [line for line in text if line.top >= highest - 1],
        [line for line in text if line.bottom <= lowest + 1],
    ):
        stamped = any(STAMP.fullmatch(re.sub(r"\s", "", x.text)) for x in row)
        if row and stamped and all(line.size <= 0.9 * size for line in row):
            for line in row:
                line.kind = "furniture"


def mark_notes_and_equations(lines: list[Line], body: float) -> None:
    """Display equations and their numbers, then footnotes."""
    numbers = []
    for line in lines:
        if line.kind != "text":
            continue
        words = re.findall(r"[^\W\d_]{3,}", "".join(p.text for p in line.pieces if not p.math))
        if EQUATION_NUMBER.match(line.text):
            line.kind = "equation"
            numbers.append(line)
        elif line.math_share >= 0.3 and len(words) <= 2 or not re.search(r"\w", line.text):
            line.kind = "equation"
        elif line.size < 0.8 * body and len(line.text) <= 3:
            line.kind = "equation"  # a sub- or superscript of a display standing on its own
        elif all(p.font == OCR_FONT for p in line.pieces) and OCR_EQUATION.search(line.text):
            line.kind = "equation"  # read by OCR, no maths font tells it: "f(a)=Sousoe+/ g(t)ddt (1)]"
    # a numbered display set in text fonts: the lines beside its number, and centred lines stacked on them
    for number in numbers:
        for index, line in enumerate(lines):
            beside = same_column(line, number) and min(line.top, number.top) > max(line.bottom, number.bottom)
            if line.kind == "text" and beside:
                line.kind = "equation"
                _stacked(lines, index, body)
    _mark_notes(lines, body)


def _mark_notes(lines: list[Line], body: float) -> None:
    """Footnotes: the run of smaller-type lines, set off by a gap, that closes a column.

    Not a run under a reference-list heading, nor one whose lines start entries ("[3] ..."): a reference list
    set small at the end of a column.
    """
    above: Line | None = None  # the last text line of the segment before
    for _, column in itertools.groupby(lines, key=lambda line: (line.page, line.column)):
        segment = [line for line in column if line.kind == "text"]
        if segment and _page_foot_note(above, segment, lines, body):
            for line in segment:
                line.kind = "note"
            continue
        above = segment[-1] if segment else above
        run = len(segment)
        while run > 0 and segment[run - 1].size < 0.9 * body:
            run -= 1
        if run == len(segment):
            run = _marked_notes(segment, body)
        if 0 < run < len(segment) and segment[run - 1].bottom - segment[run].top > 0.3 * body:
            entries = sum(bool(ENTRY_LABEL.match(line.text)) for line in segment[run:])
            # an author-year list with no heading, surnames first, closing a paper (REVTeX's AIP sample)
            authors = sum(opens_author_entry(line.text) for line in segment[run:])
            dated = sum(bool(YEAR.search(line.text)) for line in segment[run:])
            if is_reference_heading(segment[run - 1].text) or entries >= 2 or authors >= 2 and dated >= 2:
                continue  # a reference list in small type (IEEE, a browser's print), not footnotes
            for line in segment[run:]:
                line.kind = "note"


def _page_foot_note(above: Line | None, segment: list[Line], lines: list[Line], body: float) -> bool:
    """Whether a segment is a note across the page's foot, under its columns.

    All in small type, set off by a gap, the page's last text, not a caption: "LATEX News, and the LATEX
    software, are brought to you by ... Copyright 2017" under ltnews' two columns.
    """
    first, last = segment[0], segment[-1]
    return (
        above is not None
        and above.page == first.page
        and above.column in ("left", "right")
        and first.column == "full"
        and all(line.size < 0.9 * body for line in segment)
        and above.bottom - first.top > 0.3 * body
        and not FLOAT_CAPTION.match(first.text)
        and not any(x.kind == "text" and x.page == last.page and x.top < last.bottom for x in lines)
    )


YEAR = re.compile(r"\b(?:1[89]|20)\d\d\b")
"""A year, as reference entries give one."""


def _marked_notes(segment: list[Line], body: float) -> int:
    """Where footnotes some of whose lines went back to body size start (groff's ms), else len(segment).

    The block closing the column: after a gap, its first line in small type opening with a footnote's mark,
    most of its lines small, two of them notes' first lines at least (a sample of type sizes, "7 points: ...",
    followed by code is none).
    """
    for start in range(1, len(segment)):  # the highest such line: a gap between two notes is no start
        line, above = segment[start], segment[start - 1]
        if line.size < 0.9 * body and above.bottom - line.top > 0.3 * body and FOOTNOTE_MARK.match(line.text):
            block = segment[start:]
            notes = sum(bool(FOOTNOTE_MARK.match(x.text)) for x in block)
            if 2 * sum(x.size < 0.9 * body for x in block) > len(block) and notes >= 2:
                return start
    return len(segment)


def _stacked(lines: list[Line], index: int, body: float) -> None:
    """Mark centred lines right above and below an equation line (fraction parts) as equation lines."""
    for step in (-1, 1):
        at, near = index + step, lines[index]
        while 0 <= at < len(lines):
            line = lines[at]
            close = line.page == near.page and abs(line.bottom - near.bottom) < 1.6 * body
            centred = line.left - line.edge > 2 * body and line.far_edge - line.right > 2 * body
            if line.kind not in ("text", "equation") or not close or line.kind == "text" and not centred:
                break
            line.kind, near, at = "equation", line, at + step


PAGE_LABEL = r"(?:[A-Za-z]{1,6}-|\d{1,3}-)?\d{1,4}|[ivxlc]{1,7}"
"""A page's number as a contents line gives it: "15", "iii", a chapter's "1-1", an appendix's "A-1"."""


def _entry_text(text: str) -> str:
    """A contents line or a heading as compared: lower case, without dot leaders and a page number."""
    # leaders of one dot too, where a long entry leaves room for no more (". 15"); after leaders, a page's
    # number may be a roman one or a chapter's ("iii", "1-1", "A-1", "VITA-1": a report's front matter)
    text = re.sub(rf"(?:\s*\.){{2,}}\s*(?:{PAGE_LABEL})?\s*$|\s+\.\s*(?:{PAGE_LABEL})\s*$", "", text)
    text = re.sub(r"\s+\d{1,4}\s*$", "", text).rstrip(".:")  # a run-in heading's stop ("2.1.1 A subsection.")
    return " ".join(text.lower().split())


def mark_contents(lines: list[Line]) -> None:
    """A table of contents: four or more lines in a row that each repeat a heading of the document.

    A page number and dot leaders aside; the "Contents" heading over them goes too. Kept out of passages: a
    contents line quoted as an answer names sections and says nothing.
    """
    headings = Counter(_entry_text(line.text) for line in lines if line.kind == "heading")
    run: list[Line] = []
    listed: set[str] = set()  # the entries of the contents so far
    wrapped: Line | None = None  # an entry's second line, taken with its first
    for at, line in enumerate(lines):
        if line.kind in ("furniture", "contents") or line is wrapped:  # a page number or a running head
            continue
        entry = _entry_text(line.text) if line.kind in ("text", "heading") else ""
        below = _wrapped_entry(lines, at) if run and not headings[entry] else None
        joined = _entry_text(f"{line.text} {below.text}") if below is not None else ""
        if below is not None and headings[joined] and joined not in listed:
            run += [line, below]  # "An addendum to the release changes in 2015:" / "page breaks and ... 2"
            listed.add(joined)
            wrapped = below
            continue
        if run and line.kind == "text" and re.fullmatch(r"\d{1,4}|[ivxlc]{1,6}", entry):
            run.append(line)  # an entry's page number, read as a line of its own right of it
            continue
        # a heading line starts a run only when its heading stands twice: a contents line read as a heading;
        # a heading the contents already listed is the document's own, after its contents (and so is one
        # standing once on the page after the run: the abstract's heading after the contents' page)
        after = bool(run) and run[-1].page == line.page
        if headings[entry] and (line.kind == "text" or after or headings[entry] >= 2) and entry not in listed:
            run.append(line)
            listed.add(entry)
            continue
        _drop_contents(lines, run)
        run = []
    _drop_contents(lines, run)
    _mark_leadered(lines)


def _wrapped_entry(lines: list[Line], at: int) -> Line | None:
    """The line under lines[at] in its column when lines[at] could be a contents entry's first line."""
    line = lines[at]
    below = next((x for x in lines[at + 1 :] if x.kind != "furniture"), None)
    if below is None or below.kind != "text" or line.kind != "text" or not same_column(line, below):
        return None
    return below


PAGE_LIST = rf"(?:{PAGE_LABEL})(?:\s*[,\u2013-]\s*(?:{PAGE_LABEL}))*(?:\s*ff?\.)?"
"""An index entry's pages: one, or a list of them ("5, 7, 11, 36", "2\u20137, 9\u201314", "8 f.")."""
LEADERED = re.compile(rf"\S.*?(?:(?:\s*\.){{4,}}\s*(?:{PAGE_LABEL})|(?:\s*\.){{8,}})\s*$")
"""A contents line by its look: an entry, dot leaders and a page's number ("Vita . . . . VITA-1"), or long
leaders whose number was read as a line of its own (three or four dots are an ellipsis: "Text text. . .")."""
SHORT_LEADERED = re.compile(rf"\S.*?(?:\s*\.){{2,3}}\s*(?:{PAGE_LABEL})\s*")
"""An entry whose words leave room for two or three leader dots before its page's number: contents only in a
run of entries with full leaders ("7 The EnvLab way to include subject information in the letter . . 15")."""
LEADERS = re.compile(rf"(?:\.\s*){{4,}}(?:{PAGE_LABEL})?")
"""Dot leaders alone, a page's number after them or not: an entry's, read apart from its words."""
LEADERED_RUN = 3
"""Entries in a row with dot leaders that make a table of contents, a list of figures or an index."""


INDEX_HEADING = re.compile(
    r"(?:general\s+)?index(?:\s+of\s+\w+)?|indice|indici|register|sachregister|stichwortverzeichnis"
    r"|index\s+des\s+\w+",
    re.IGNORECASE,
)
"""An unnumbered heading over an index (a change history set like one is left alone: it says what changed)."""
INDEX_GROUP = re.compile(r"[A-Z]|symbols|numbers|numerals|[A-Z]\s*[-\u2013]\s*[A-Z]", re.IGNORECASE)
"""An index's group heading: a letter, "Symbols", "Numbers"."""
INDEX_ENTRY = re.compile(rf"(?:.*?(?:\s*\.){{2,}}\s*|.*?\s|){PAGE_LIST}\s*,?|.*?(?:\s*\.){{2,}}|\S+")
"""An index's line: an entry and its pages (leaders or not; a list going on after a comma), pages alone, an
entry whose leaders run on to the next line, a lone term."""
INDEX_SHARE = 0.6
"""Share of the lines under an index's heading that read as entries, at least, to keep them all out."""
INDEX_WORDS = 12
"""Words an index's line holds at most, leaders aside (an entry, its subentry's words, its pages)."""


def mark_index(lines: list[Line]) -> None:
    r"""An index under its heading kept out, its group letters too, where most of its lines read as entries.

    Read in columns, an index's entries often lack the leaders `_mark_leadered` goes by ("\begin . . 31,
    34", "\defaulthook 35, 36", an entry wrapped over two lines): as passages, they would be quoted as
    answers. The prose under the heading (how to read the index) stays. Run last, once paragraphs are
    marked: the index's lines still count in the document's pitch and skips as before.
    """
    for at, line in enumerate(lines):
        if line.kind != "heading" or not INDEX_HEADING.fullmatch(_entry_text(line.text)):
            continue
        section: list[Line] = []
        for below in lines[at + 1 :]:
            if below.kind == "heading" and not INDEX_GROUP.fullmatch(below.text.strip()):
                break
            if below.kind in ("text", "heading", "contents"):
                section.append(below)
        body = [x for x in section if x.kind != "heading"]
        entries = {id(x) for x in body if _index_line(x)}
        if len(entries) < LEADERED_RUN or len(entries) < INDEX_SHARE * len(body):
            continue
        for x in section:
            if x.kind == "heading" or id(x) in entries:
                x.kind = "contents"


def _index_line(line: Line) -> bool:
    """Whether a line reads as an index's: short, no sentence in it, ending in pages or going on."""
    text = line.text.strip()
    return (
        line.kind in ("text", "contents")
        and len([word for word in text.split() if word != "."]) <= INDEX_WORDS
        and not re.search(r"[a-z]{2,}[.!?]$", text)  # a sentence's end
        and INDEX_ENTRY.fullmatch(text) is not None
    )


def _mark_leadered(lines: list[Line]) -> None:
    """Contents lines by their dot leaders: LEADERED_RUN entries or more in a row, whatever they name.

    Where the entries name no heading as the document reads it (a report's "1-1" pages, an appendix's
    heading read as text), the leaders and page numbers still say what the lines are; so they do of an
    index's. An entry wrapped over two lines (its first without leaders) and a page's number read apart
    stay in the run; lines already taken for contents by their headings count in it.
    """
    run: list[Line] = []
    entries = 0
    wrapped: Line | None = None  # a line without leaders in a run: an entry's first line if the next has them
    for line in lines:
        if line.kind == "furniture":
            continue
        text = line.text.strip()
        entry = line.kind in ("text", "heading", "contents") and (
            LEADERED.fullmatch(text) is not None or bool(run) and SHORT_LEADERED.fullmatch(text) is not None
        )
        leaders = (
            bool(run) and LEADERS.fullmatch(text) is not None
        )  # an entry's, read apart (taken for maths)
        if entry or leaders:
            run, entries, wrapped = [*run, *([wrapped] if wrapped else []), line], entries + 1, None
        elif run and wrapped is None and line.kind == "text" and re.fullmatch(PAGE_LABEL, text):
            run.append(line)  # an entry's page number, read apart
        elif run and wrapped is None and line.kind == "text":
            wrapped = line
        else:
            if entries >= LEADERED_RUN or _listed(lines, run):
                _drop_contents(lines, run, least=1)
            run, entries, wrapped = [], 0, None
    if entries >= LEADERED_RUN or _listed(lines, run):
        _drop_contents(lines, run, least=1)


LIST_HEADING = re.compile(r"list of (?:figures|tables|illustrations|listings|algorithms|schemes|plates)")
"""A heading over a list of floats: one or two entries with leaders under it are contents lines too."""


def _listed(lines: list[Line], run: list[Line]) -> bool:
    """Whether a run of leadered lines stands right under a contents heading or a list of floats' heading."""
    at = _heading_at(lines, run) if run else None
    above = _entry_text(lines[at].text) if at is not None else ""
    return bool(CONTENTS_HEADING.fullmatch(above) or LIST_HEADING.fullmatch(above))


CONTENTS_HEADING = re.compile(
    r"(?:table of )?contents|table des mati[eè]res|sommaire|inhalt|inhaltsverzeichnis|[ií]ndice|sum[aá]rio"
    r"|spis tre[sś]ci|obsah|inneh[aå]ll|inhoud(?:sopgave)?|outline|overview|agenda|gliederung"
    r"|[сc]одержание|оглавление"
)
"""A heading over a table of contents (slides call theirs an outline, an overview or an agenda)."""


def _drop_contents(lines: list[Line], run: list[Line], least: int = 4) -> None:
    """The run's lines are contents when there are `least` of them, or any right under a contents heading.

    A short document's contents (slides with two sections) lists fewer entries than any run of headings by
    chance; under "Inhaltsverzeichnis" or "Outline" each line repeating a heading is one. An English
    "Contents" heading goes with its entries.
    """
    if not run:
        return
    at = _heading_at(lines, run)
    above = _entry_text(lines[at].text) if at is not None else ""
    if len(run) < least and not (at is not None and CONTENTS_HEADING.fullmatch(above)):
        return
    for entry in run:
        entry.kind = "contents"
    if at is not None and re.fullmatch(r"(?:table of )?contents", above):
        lines[at].kind = "contents"


def _heading_at(lines: list[Line], run: list[Line]) -> int | None:
    """Where the heading right over a run of lines stands (a slide's footline between them aside)."""
    at = lines.index(run[0])
    while at and lines[at - 1].kind == "furniture":
        at -= 1
    return at - 1 if at and lines[at - 1].kind in ("heading", "contents") else None
