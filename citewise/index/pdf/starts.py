"""Where paragraphs and reference entries begin.

An indent, a gap, a label of the list's own form ("1.",
"(a)", "[3]", a bullet), a hanging entry's flush-left first line.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter

from citewise.index.citations import opens_author_entry
from citewise.index.pdf.lines import (
    BODY_GAPS,
    BULLETS,
    CJK_LETTERS,
    JOINING_WORDS,
    MONO_FONT,
    Line,
    body_gaps,
    bold_label,
    line_pitch,
    same_column,
    text_gaps,
    word_fits,
)

BULLET = re.compile(f"[{BULLETS}]\\s")
"""A bullet: a line starting with one starts a list item, at a page's or column's top too."""


DASHES = "*+\u2013\u2014\u00b7-"
"""Marks a list's items may open with besides bullets: an asterisk, a plus, an en or em dash, a middle dot, a
hyphen."""
ITEM_LABEL = re.compile(f"(?:[{BULLETS}{DASHES}]|\\(?\\d{{1,2}}[.)]|\\(?[a-z][.)]|\\([ivx]{{1,4}}\\))\\s")
"""A list item's label: a bullet (or a dash, an asterisk, a middle dot), "3.", "(2)", "b)"."""


LABEL = re.compile(rf"\[\d{{1,3}}\]\s|{ITEM_LABEL.pattern}")
"""A label a list's items open with: ITEM_LABEL's or a reference entry's "[12]"."""


def mark_starts(lines: list[Line], body: float, face: str) -> None:
    """Which text lines start a paragraph: indented, or after a gap, a heading or a display.

    `face` is the body's font: a description's label is set in another.
    """
    usual_pitch = line_pitch(lines, body)
    usual_skip = paragraph_skip(lines, usual_pitch, body)
    spaced = usual_skip < 1.6 * usual_pitch  # paragraphs set apart by a skip of their own
    paced = _page_pitches(lines, usual_pitch, body)  # pages set wider (a thesis's double-spaced chapters)
    flush = _flush_paragraphs(lines, usual_pitch, body)  # paragraphs neither indented nor spaced apart
    previous: Line | None = None
    after_display = False
    item: float | None = None  # the left edge of the list item the lines go on, by its label
    label: str | None = None  # the form of that item's label ("[0]", "0.", a bullet): the next one's too
    hang: float | None = None  # where the item's later lines hang
    prior: Line | None = None  # the text line before `previous`
    prior_wrapped = False  # whether `previous` went on with a name in typewriter broken at its line's end
    opened: Line | None = None  # the line the paragraph `previous` is in opened with
    for index, line in enumerate(lines):
        if line.kind != "text":
            if line.kind in ("heading", "title"):
                prior, previous, item = None, None, None
            after_display = after_display or line.kind in ("equation", "table")  # a paragraph goes on after
            continue
        stretch = paced.get(line.page, 1.0)
        # lines in larger type than the body's are set further apart: an abstract at 8.1 points in a
        # template whose instructions (the body, by letters) are at 7.2
        if previous is not None and min(previous.size, line.size) > 1.05 * body:
            stretch *= min(previous.size, line.size) / body
        pitch, skip = stretch * usual_pitch, stretch * usual_skip
        # the next lines: margin line numbers and other furniture between lines are passed over
        following, after = _next_lines(lines, index)
        indented = False
        if following is not None and following.kind == "text" and same_column(following, line):
            # the lines after it start left of it (not a block's last line going on in lower case, under a
            # line at its edge that had no room for its first word: a note set in from the margin, the text
            # after it at the margin)
            # (a line that opened its paragraph too, where it ends mid-sentence: a description's first line
            # under its key, set in as far as the rest, msc's "Specifies the <distance> ... of the instance")
            goes_on = (
                previous is not None
                and not after_display
                and (not previous.starts or not previous.text.rstrip().endswith((".", ":", ";", "!", "?")))
                and line.text[:1].islower()
                and same_column(previous, line)
                and abs(previous.left - line.left) < 0.3 * body
                and not word_fits(previous, line, max(previous.right, line.right))
            )
            # (nor under a full line at its own edge: a list item's or an indented block's paragraph goes on
            # whatever starts left of it next, the next item's bullet or the next paragraph's indent; where
            # the next line is back at the column's edge, a line set in is a paragraph's indented first line)
            goes_on = goes_on or (
                previous is not None
                and following.left - line.edge >= 0.6 * body
                and not after_display
                and same_column(previous, line)
                and abs(previous.left - line.left) < 0.3 * body
                and previous.right >= line.far_edge - body
                and not word_fits(previous, line)
            )
            # (nor in a block set in from the edge, a description under its term: `_goes_on_set_in`)
            goes_on = goes_on or (
                previous is not None
                and not after_display
                and _goes_on_set_in(previous, line, following, body)
            )
            # (nor in a block set in on both sides, a note or a quotation, under its first line indented
            # further that had no room for this line's first word, whatever follows the block: dox's "Note:")
            goes_on = goes_on or (
                previous is not None
                and not after_display
                and same_column(previous, line)
                and previous.left - line.left >= 0.6 * body
                and line.left - line.edge >= 0.6 * body
                and previous.right < line.far_edge - body
                and _prose_pair(previous, line)
                and not word_fits(previous, line, max(previous.right, line.right))
            )
            # (nor over a line standing out left of the column's edge: a margin's label, a heading hung out)
            inside = following.left >= line.edge - 0.5 * body
            indented = not goes_on and inside and 0.6 * body <= line.left - following.left <= 8 * body
        from_edge = 0.6 * body <= line.left - line.edge <= 8 * body
        in_column = previous is not None and same_column(previous, line)
        flows = previous is not None and (in_column or abs(line.edge - previous.edge) < 1)
        # a list item's next lines hang under its text, right of its label: they go on with it (an x in
        # another column says nothing)
        hangs = item is not None and flows and line.left > item + 0.3 * body
        # at the item's edge, a label of the item's own form opens the next item ("[12]" after "[11]", whose
        # last line hung)
        sibling = item is not None and flows and abs(line.left - item) <= 0.3 * body
        sibling = sibling and (
            label is not None
            and label_form(line.text) == label
            # the next author-year entry, a line long, back at the hung entry's edge ("Feynman, R. P., ...")
            or label is None
            and opens_author_entry(line.text)
            and word_fits(previous or line, line)
        )
        if previous is not None and in_column and not hangs:
            # right of a line opening with a label in a face of its own ("Note:" standing out left of its
            # paragraph's edge), a line is no indent where the label's line had no room for its first word
            label_hangs = (
                previous.starts and _labelled(previous, face) and not word_fits(previous, line, line.right)
            )
            indented = indented or not label_hangs and 0.6 * body <= line.left - previous.left <= 8 * body
            # after a short line (the end of a paragraph), a line indented from the edge starts one
            # (not where it ends with the lines around it: an abstract or a quotation justified narrower than
            # its column)
            around = [line.right, following.right if following is not None else line.right]
            if prior is not None and same_column(prior, previous):
                around.append(prior.right)
            # (and, in a block set ragged and narrower than its column, an abstract or a note, where the next
            # line's first word, in lower case, would have fit: LibreOffice's indented abstract)
            narrow = max(around) < line.far_edge - body and line.text[:1].islower()
            short = (
                previous.right < line.far_edge - 3 * body
                and all(abs(previous.right - x) > 0.5 * body for x in (max(around[:2]), *around[2:]))
                and (not narrow or word_fits(previous, line, max(around)))
            )
            indented = indented or from_edge and short
        elif not indented:
            indented = from_edge
        # a full line at its column's edge whose next line hangs right of it: an item of a description list
        # ("draft  Set up for a draft copy ...") or a reference entry set with a hanging indent
        # (a hang, not the next paragraph's indent: the item's label is set in a face of its own, or more
        # than one line hangs)
        hung = (
            following is not None
            and following.kind == "text"
            and same_column(following, line)
            and 0.6 * body <= following.left - line.left <= HANG_REACH * body
            and line.left - line.edge < 0.6 * body
            and line.right >= line.far_edge - body
            and (
                _hangs_on(following, after)
                # a labelled item of two lines: the hanging one ends it short or the next item follows,
                # where a paragraph's indented first line (after a line opening with a command in
                # typewriter) runs on into its next line
                or _labelled(line, face)
                and (following.right < following.far_edge - 2 * body or _labelled_text(after, face))
                # an author-year reference entry of two lines: "Agarwal, A. G., ..." over its short end
                or opens_author_entry(line.text)
                and (
                    following.right < following.far_edge - 2 * body
                    or after is None
                    or after.kind == "text"
                    and same_column(after, line)
                    and abs(after.left - line.left) < 0.3 * body
                )
            )
        )
        # a line left of the list item's label, after a line that ends short, ends the list (on the next
        # page too, in one column); after a full line it goes on with the item (MNRAS runs an item's lines
        # back to the margin)
        ended = previous is not None and word_fits(previous, line)
        outdented = item is not None and flows and ended and line.left < item - 0.3 * body
        # a label inside a list starts an item of a list nested in it; a reference entry nests none ("29.
        # Curran Associates" is its volume)
        nested = hangs and ITEM_LABEL.match(line.text) and label != "[0]"
        if line.hang and flows and (item is None or line.left <= item + 0.3 * body):
            line.starts = True  # a tag and its description ("-i  If the -i option ..."), not one nested
        elif previous is None or BULLET.match(line.text) or nested or outdented:
            line.starts = True  # a bullet, a nested item, or a line back left of the list's labels
        elif sibling or ended and (_label_ends(line, face) or LABEL.match(line.text)):
            line.starts = True  # the next item; or a bold label after a line that ended by choice
        elif in_column and line.size <= 0.85 * previous.size and opens_author_entry(line.text):
            line.starts = True  # a reference list in smaller type under the text, with no heading
        elif ended and not line.code and _same_label(opened, line):
            line.starts = True  # the next of items opening with bold labels of one shape ("v1.22", "v1.23")
        elif ended and in_column and bold_label(line) and previous.text.rstrip().endswith((":", ";", ".")):
            line.starts = True  # a bold term opening a line after a clause that ended short ("by default")
        elif (
            in_column
            and bold_label(line)
            and bold_label(previous)
            and abs(previous.left - line.left) < 1
            and previous.text.rstrip().endswith((":", ";", "."))
        ):
            line.starts = True  # the next bold term of a list of them ("by default ... imputed;" "initially")
        elif ended and in_column and previous.left - line.left >= 2 * body and line.text[:1].isupper():
            # back at the edge after a line set well in that ended short (a box's or a display's line), a
            # sentence starts afresh
            line.starts = True
        elif ended and in_column and _after_quotation(prior, previous, line, body):
            line.starts = True  # the text after a quotation, a sentence going on too ("and also said")
        elif ended and in_column and FIELD.match(line.text) and previous.text.rstrip().endswith((".", ":")):
            # a field's label after a sentence that ended short ("Syntax:" under "\\newarray : New array.")
            line.starts = True
        elif hung and not hangs:
            line.starts = True
        elif hangs and in_column:
            # a paragraph's indented first line after an item that ended short stands left of its hang
            back = hang is not None and line.left < hang - 0.3 * body and ended
            gap = previous.bottom - line.bottom
            line.starts = back or gap > skip
            # (a second paragraph of the item: a sentence that ended short over one a little further down,
            # as in a paragraph set flush with a small skip: rulerbox's "For example, if one wants ...")
            anew = gap > SENTENCE_SKIP * pitch and ended and _sentence_after(previous, line)
            line.starts = line.starts or anew
        elif in_column and not after_display:
            gap = previous.bottom - line.bottom
            # a gap a little short of the skip ends a paragraph whose last line ended short by choice (a skip
            # of half a line, a table of examples set close under it); a full line before it went on
            line.starts = indented or gap > skip or gap > SHORT_SKIP * pitch and ended
            # a sentence that ended short over one opening a line a little further down than the pitch: a
            # paragraph set flush with a small skip of its own (multido's, 1.25 pitches; a line with a raised
            # logo or inline maths stands as far down, but under a line that ran full)
            line.starts = line.starts or (
                gap > SENTENCE_SKIP * pitch and ended and _sentence_after(previous, line)
            )
            # where paragraphs are set flush and close, a sentence that ended short ended its paragraph
            line.starts = line.starts or flush and ended and _sentence_after(previous, line)
        else:  # a paragraph goes on after a display and into the next column
            # where paragraphs are set flush and spaced apart, a last line that ended by choice ended it
            closed = not after_display and ended
            line.starts = indented or closed and (spaced or flush and _sentence_after(previous, line))
        if previous is not None and not line.starts and not line.code and _term_above(previous, prior, line):
            line.starts = True  # a key or a command on a line of its own, its description set in under it
        if previous is not None and not line.starts and _code_term(line) and _ends_list_entry(previous):
            line.starts = True  # an option in typewriter, its description after it ("italic to have ...")
        # a URL or a file name in typewriter broken at a line's end goes on on the next line, a word of its
        # own in typewriter (".../contact.html"): the sentence's, no code block (nor is the prose after it)
        wrapped = previous is not None and in_column and _wrapped_name(previous, line)
        if wrapped:
            line.starts = False
        elif (
            previous is not None
            and previous.code != line.code
            and (in_column or line.code and _closed(previous))
            and not (prior_wrapped and not line.code)
        ):
            # code shown on its own lines is a block of its own, and so is the text after it (code at the
            # top of the next page or column after a sentence that ended there too)
            line.starts = True
        elif previous is not None and in_column and line.code and LISTING_LINE.match(line.text):
            # a listing's numbered lines ("5 \\newcommand...", "6 \\futurelet...") are one block, not items
            line.starts = previous.bottom - line.bottom > skip
        if line.starts or not same_column(previous or line, line) or not hangs:
            # an item's lines hang right of its label; a line back at the label's edge ends the list
            item = (
                line.left
                if line.starts and (LABEL.match(line.text) or hung or sibling or line.hang)
                else None
            )
            label = label_form(line.text) if item is not None else None
            hang = line.hang or None
        elif hangs and hang is None:
            hang = line.left
        prior, previous, after_display, prior_wrapped = previous, line, False, wrapped
        opened = line if line.starts else opened


SHORT_SKIP = 1.5
"""Pitches between two lines' baselines past which a line that ended short ended its paragraph."""
SENTENCE_SKIP = 1.2
"""Pitches between baselines past which a line that ended short with a sentence ended its paragraph."""


def _page_pitches(lines: list[Line], pitch: float, body: float) -> dict[int, float]:
    """Pages whose lines stand WIDER_PAGE pitches apart or more inside paragraphs: how many times wider.

    Inside a paragraph for sure: a full line ending mid-sentence over a line going on in lower case. A thesis
    double-spaces its chapters after single-spaced front matter (afthesis): read by the document's pitch,
    every line of a chapter started a paragraph.
    """
    inside: dict[int, list[float]] = {}
    for a, b, gap in text_gaps(lines, body):
        full = a.right >= a.far_edge - body and len(a.text.split()) >= 6 and len(b.text.split()) >= 3
        if full and re.search(r"[a-z,-]$", a.text.rstrip()) and b.text[:1].islower():
            inside.setdefault(a.page, []).append(gap)
    medians = {page: statistics.median(gaps) for page, gaps in inside.items()}
    wider = {
        page: gaps
        for page, gaps in inside.items()
        if medians[page] >= WIDER_PAGE * pitch
        # one pitch on the page: a line here and there set apart by a tall formula is no wider page
        and sum(abs(g - medians[page]) <= 1.0 for g in gaps) >= 0.75 * len(gaps)
    }
    if sum(len(gaps) for gaps in wider.values()) < 3:  # a few lines apart for a raised mark say nothing
        return {}
    return {page: medians[page] / pitch for page in wider}


def _flush_paragraphs(lines: list[Line], pitch: float, body: float) -> bool:
    """Whether the document sets its paragraphs flush left and a line apart: no indent, no skip.

    Told by the lines after a sentence that ended short, a pitch below it in its column: at the column's
    edge (FLUSH_AFTER of them at least) and never set in as an indented paragraph's first line is (under
    FLUSH_INDENTED of them). A document that indents its paragraphs shows indented lines there; one that
    spaces them shows no such line a pitch below.
    """
    at_edge = indented = 0
    pairs = text_gaps(lines, body)
    after = {id(a): b for a, b, _ in pairs}
    for a, b, gap in pairs:
        if gap > 1.2 * pitch or not word_fits(a, b) or not _sentence_after(a, b) or a.code or b.code:
            continue
        if abs(b.left - b.edge) < 0.3 * body and abs(a.left - a.edge) < 0.3 * body:
            at_edge += 1
        elif 0.6 * body <= b.left - b.edge <= 3 * body and _opens_indented(b, after.get(id(b)), body):
            indented += 1
    return at_edge >= FLUSH_AFTER and indented < FLUSH_INDENTED * (at_edge + indented)


def _opens_indented(line: Line, below: Line | None, body: float) -> bool:
    """Whether a set-in line opens an indented paragraph: it runs full, and the line under it is back left.

    Not a list's item or a block set in ("Jack Stalnaker: Aggie style." 2.5 ems in, over the next item or
    under a sentence that ends there): HA-prosper sets its paragraphs flush and its lists in, and its items,
    counted as indented paragraphs, hid the flush paragraphs.
    """
    return below is not None and below.left < line.left - 0.3 * body and not word_fits(line, below)


FLUSH_AFTER = 2
"""Lines at the edge after a sentence that ended short that tell a document with flush paragraphs."""
FLUSH_INDENTED = 0.1
"""Share of those lines, at most, set in as an indented paragraph's first line is."""


def _sentence_after(previous: Line, line: Line) -> bool:
    """Whether `previous` ends a sentence and `line` opens one.

    With a capital or a quotation mark, or after a full stop with a name set in lower case ("tabularcalc
    fonctionne sous LaTeX ...": no joining word, and the stop no short abbreviation's, "etc." or "e.g.").
    """
    ends, opens = previous.text.rstrip(), line.text[:1]
    if not ends.endswith((".", "!", "?", ":")):
        return False
    if opens in QUOTES or opens.isupper():
        return True
    last = ends.split()[-1].rstrip(".!?")  # the word the stop ends: no abbreviation's ("e.g", "etc", "3")
    return (
        opens.islower()
        and ends.endswith((".", "!", "?"))
        and line.text.split()[0].lower() not in JOINING_WORDS
        and len(last) > 3
        and "." not in last
    )


QUOTES = "\u201c\"'\u2018"
"""Quotation marks a sentence may open with."""


WIDER_PAGE = 1.3
"""Times the document's pitch a page's lines stand apart inside paragraphs, at least, to be read by theirs."""


HANG_REACH = 5.0
"""Ems a description's later lines hang right of its first at most (textpos's dated change log: 4.7 em)."""

FIELD = re.compile(r"[A-Z][a-z]{2,}(?: [a-z]{2,})?:\s")
"""A field's label opening a line ("Syntax: ", "Example: ", "Default value: "): a line of its own."""

LISTING_LINE = re.compile(r"\d{1,4}\s")
"""A listing's line, numbered: its number in the text's type, its code in a typewriter face."""


def paragraph_skip(lines: list[Line], pitch: float, body: float) -> float:
    """The distance between baselines beyond which a line starts a paragraph.

    1.6 pitches, or less where the document spaces its paragraphs apart by a distance of its own. A man
    page, a Texinfo manual, ReportLab and office documents set paragraphs flush left with a skip between
    them, 1.3-1.5 pitches: where the gaps between lines cluster there, with few just over one pitch (where
    a line with maths or a raised mark stands), a gap halfway to the cluster ends a paragraph.
    """
    gaps = text_gaps(lines, body)
    # where lines in other sizes outnumber the body's (a manual's listings in smaller type: kdgdocs), the
    # body's own gaps, as for the pitch (`line_pitch`): among the listings' its skip of 1.5 pitches was lost
    in_body = body_gaps(gaps, body)
    own = len(in_body) >= BODY_GAPS and 2 * len(in_body) < len(gaps)
    ratios = Counter(round(gap / pitch, 1) for gap in (in_body if own else [g for *_, g in gaps]))
    peak = max((r for r in ratios if 1.25 <= r < 1.6), key=lambda r: ratios[r], default=None)
    if peak is None:
        return 1.6 * pitch
    # a skip of 1.3 pitches (gropdf, groff's ms through Ghostscript) stands apart only where no gap falls
    # between it and one pitch, its cluster the peak and the step above it, and no commoner gap stands
    # further out (Asciidoctor: code lines one pitch apart, prose 1.3, paragraphs 2: 1.3 is prose's pitch)
    low = peak < 1.35
    cluster = sum(ratios[round(peak + d, 1)] for d in ((0.0, 0.1) if low else (-0.1, 0.0, 0.1)))
    between = sum(n for r, n in ratios.items() if 1.05 <= r < (peak - 0.05 if low else 1.25))
    wider = low and any(n >= cluster for r, n in ratios.items() if r > peak + 0.2)
    if cluster < max(4, 0.03 * sum(ratios.values())) or between >= cluster / 4 or wider:
        return 1.6 * pitch
    return (1 + (peak - 0.1 - 1) / 2) * pitch


def label_form(text: str) -> str | None:
    """The form of the label a line opens with, numbers as 0 and letters as a ("[0]", "(a)"), or None."""
    found = LABEL.match(text)
    return re.sub(r"[a-z]", "a", re.sub(r"\d+", "0", found.group().strip())) if found else None


def _labelled(line: Line, face: str) -> bool:
    """Whether a line opens with a word or two in faces not the body's, the rest in it: a label.

    The label may be set in more than one face: prosper's "I slideColor." is a symbol, a command's name in
    bold typewriter and a bold stop before "Slides will use ...".
    """
    at = next((n for n, piece in enumerate(line.pieces) if piece.font == face), len(line.pieces))
    label = line.pieces[:at]
    words = sum(bool(re.search(r"\w", word)) for piece in label for word in piece.text.split())
    # (a symbol from a maths font may open it, a bullet of its own; a formula may not)
    formula = any(piece.math and len(piece.text.strip()) > 1 for piece in label)
    return 0 < at < len(line.pieces) and words <= 2 and not formula


def _next_lines(lines: list[Line], index: int) -> tuple[Line | None, Line | None]:
    """The two lines after `lines[index]` that are not furniture (None where there are none)."""
    found: list[Line | None] = []
    found += [x for x in lines[index + 1 : index + 7] if x.kind != "furniture"][:2]
    found += [None] * (2 - len(found))
    return found[0], found[1]


def _labelled_text(line: Line | None, face: str) -> bool:
    """Whether a text line opens with a label: the next item of a description list."""
    return line is not None and line.kind == "text" and _labelled(line, face)


def _code_term(line: Line) -> bool:
    """Whether a line opens with one word in a typewriter face and goes on in prose ("italic to have ...")."""
    pieces = [p for p in line.pieces if p.text.strip()]
    if len(pieces) < 2:
        return False
    first, *rest = pieces
    return (
        bool(MONO_FONT.search(first.font))
        and len(first.text.split()) == 1
        and not MONO_FONT.search(rest[0].font)
        and len(" ".join(p.text for p in rest).split()) >= 3
    )


def _ends_list_entry(line: Line) -> bool:
    """Whether a line ends short in a colon, a semicolon or a stop: what an option's entry follows."""
    return line.text.rstrip().endswith((":", ";", ".")) and line.right < line.far_edge - 2 * line.size


def _closed(line: Line) -> bool:
    """Whether a line ends a sentence short of its column's far edge.

    A code line's long first word may not have fit there, where a word of prose would have.
    """
    return line.text.rstrip().endswith((".", ":")) and line.right < line.far_edge - 2 * line.size


def _term_above(previous: Line, prior: Line | None, line: Line) -> bool:
    """Whether `line` is set in under a term on a line of its own: a key or a command in a typewriter face.

    pgfkeys and ltxdoc manuals ("/drawmatrix/label pos=<position>  (style, no default)"), man pages and
    Texinfo definitions put the term at the margin, a note about it set apart at the right, and its
    description indented under it; a hanging paragraph's first line runs on into its text instead. The
    term's row may have been read as two lines (the note far right of it): `prior` on the same baseline.
    """
    row = [previous]
    if prior is not None and abs(prior.bottom - previous.bottom) < 1 and prior.page == previous.page:
        row.insert(0, prior)
    pieces = sorted((p for x in row for p in x.pieces if p.text.strip()), key=lambda p: p.left)
    if not pieces or not MONO_FONT.search(pieces[0].font) or line.left - pieces[0].left < 0.6 * line.size:
        return False
    term = [pieces[0]]
    for piece in pieces[1:]:
        if piece.left - term[-1].right >= line.size:
            break  # the note set apart from the term
        term.append(piece)
    rest = pieces[len(term) :]
    mono = sum(len(p.text.strip()) for p in term if MONO_FONT.search(p.font))
    # the term is mostly typewriter, and what follows it stands well right of where the description starts
    return 2 * mono >= sum(len(p.text.strip()) for p in term) and (
        not rest or rest[0].left > line.left + 4 * line.size
    )


def _goes_on_set_in(previous: Line, line: Line, following: Line, body: float) -> bool:
    """Whether `line` goes on a block set in from its column's edge (a description under its term).

    Under a full line of the block, at its indent, that had no room for this line's first word: what follows
    the block (the next term, back at the edge) says nothing, unless prose goes on from this line back at the
    edge (a one-line paragraph set in, full, then the next one's indented first line).
    """
    # prose: not code, not opening with a capital ("(REF) is ...", "and so" go on a sentence)
    prose_after = following.left < line.left - 0.6 * body and not following.code
    prose_after = prose_after and not following.text[:1].isupper()
    return (
        same_column(previous, line)
        and abs(previous.left - line.left) < 0.3 * body
        and line.left - line.edge >= 0.6 * body
        and previous.right >= line.far_edge - body
        and _prose_pair(previous, line)
        and not prose_after
        and not word_fits(previous, line)
    )


def _after_quotation(prior: Line | None, previous: Line, line: Line, body: float) -> bool:
    """Whether `line`, back at its column's edge, follows a quotation.

    A quotation: a block of lines set in on the left by one measure (two of them at least), its last ending a
    sentence.
    """
    return (
        prior is not None
        and same_column(prior, previous)
        and abs(prior.left - previous.left) < 0.3 * body
        and previous.left - line.left >= 1.5 * body
        and line.left - line.edge < 0.3 * body
        and previous.text.rstrip().endswith((".", "!", "?", ".\u201d", ".'", '."'))
    )


def _prose_pair(previous: Line, line: Line) -> bool:
    """Whether two lines are prose whose words tell whether the first had room for the second's first word.

    Not code, nor a script written without spaces (Chinese, Japanese: a line's first "word" is all of it).
    """
    return not any(x.code or re.search(f"[{CJK_LETTERS}]", x.text) for x in (previous, line))


def _wrapped_name(previous: Line, line: Line) -> bool:
    """Whether `line`, one word in typewriter, is the rest of a name in typewriter that `previous` ends in.

    The name runs to the line's end with no space or stop after it ("http://www.dickimaw-books."), and the
    line holds nothing else: a URL or a path TeX broke where it could.
    """
    last = next((p for p in reversed(previous.pieces) if p.text.strip()), None)
    return (
        last is not None
        and bool(MONO_FONT.search(last.font))
        and not last.text.endswith(" ")
        and not previous.code
        and line.code
        and len(line.text.split()) == 1
        and previous.right >= previous.far_edge - 2 * line.size
        and "/" in last.text + line.text
    )


def _hangs_on(hanging: Line, after: Line | None) -> bool:
    """Whether the text line `after` the `hanging` one stands where it does: two lines hang, no indent.

    The first hanging line runs to the column's far edge: one that ends short ends its item, and a line
    after it at the same indent is the next one-line paragraph.
    """
    return (
        hanging.right >= hanging.far_edge - hanging.size
        and after is not None
        and after.kind == "text"
        and same_column(after, hanging)
        and abs(after.left - hanging.left) < 0.3 * after.size
    )


def _same_label(opened: Line | None, line: Line) -> bool:
    """Whether `line` opens with a bold label of the shape `opened` opened with ("v1.22" as "v1.23")."""
    shape = _label_shape(line)
    return opened is not None and shape != "" and _label_shape(opened) == shape


def _label_shape(line: Line) -> str:
    """The bold label a line opens with, its digits as 0 ("v0.0" for "v1.22"); "" where it has none."""
    return re.sub(r"\d+", "0", bold_label(line).strip())


def _label_ends(line: Line, face: str) -> bool:
    """Whether a line opens with a label in bold or a face of its own, ending in a colon or a stop.

    "asaetr.sty:" before its description, "Keywords." in small capitals under an abstract.
    """
    label = bold_label(line) or (line.pieces[0].text.strip() if _labelled(line, face) else "")
    return label.endswith((":", ".", "]", ")"))  # "[letter] for letter papers": an option's name
