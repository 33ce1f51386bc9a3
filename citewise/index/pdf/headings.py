"""The title and the headings.

The title from the first page's typography, a heading by any difference of
type from the body (size, bold, italic, small capitals, numbering, space around it), never a line that
continues a sentence; headings wrapped over two lines joined, run-in heads split from their paragraph.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections import Counter

from citewise.index.pdf.lines import (
    JOINING_WORDS,
    MONO_FONT,
    NUMBERED,
    NUMBERED_EQUATION,
    OCR_FONT,
    SMALL_CAPS_FONT,
    Line,
    Piece,
    bold_label,
    bold_lead,
    line_pitch,
    line_text,
    same_column,
    word_fits,
)
from citewise.index.pdf.starts import BULLET, ITEM_LABEL, label_form

CAPS_HEADING_WORD = re.compile(
    r"(?:abstract|references|bibliography|acknowledge?ments?|appendix|introduction|conclusions?|summary"
    r"|discussion|results|methods?"
    r"|zusammenfassung|einleitung|literatur(?:verzeichnis)?|danksagung|anhang"
    r"|r[ée]sum[ée]|bibliographie|r[ée]f[ée]rences|remerciements|annexe"
    r"|resumo|resumen|riassunto|sommario|introdu(?:[çc][ãa]o|cci[óo]n|zione)"
    r"|conclus(?:[ãa]o|[õo]es|i[óo]n|iones|ion[ei])|refer[êe]ncias|referencias|riferimenti(?: bibliografici)?"
    r"|bibliograf[íi]a|agradecimentos|agradecimientos|ringraziamenti|ap[êé]ndices?|appendice|anexos?)\.?$",
    re.IGNORECASE,
)
"""Headings an unnumbered line in capitals may be (and their German, French, Portuguese, Spanish and Italian
words)."""


ADMONITION = re.compile(
    r"(?:Note|N\.\s?B|Warning|Caution|Tip|Hint|Important|Attention)s?\s?[.:]$", re.IGNORECASE
)
"""A label a note opens with in bold ("Note:", "Warning:"): the note's first words, no run-in heading."""


THEOREM = re.compile(
    r"(?:Theorem|Lemma|Corollary|Proposition|Definition|Remark|Example|Proof|Conjecture|Claim|Assumption"
    r"|Exercise|Problem|Solution)\b(?:\s+[\dA-Z][\d.]*)?\.?(?:\s*\([^)]*\))?\.?$"
)
"""A theorem's or a proof's run-in label ("Theorem 1.", "Proof.", "Lemma 3.3 (Zorn)."): a paragraph's."""
CAPTION_LABEL = re.compile(
    r"(?:Figure|Fig\.|Table|Tab\.|Listing|Algorithm|Code|Scheme|Chart|Exhibit|Plate)\s+[\dA-Z][\w.-]*\s*[.:]?$",
    re.IGNORECASE,
)
"""A caption's label in bold ("Listing 1.3:", "FIGURE 2."): the caption's first words, no run-in heading."""
STOPS = ".:\u2014\u2013"
"""What ends a run-in heading word."""
RUN_IN_WORD = re.compile(r"(abstract|index terms|keywords)[.:\u2014\u2013]?$", re.IGNORECASE)
"""A heading word a paragraph may open with in its own face ("Abstract—", IEEE)."""


MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
DATE = re.compile(rf"(?:\d{{1,2}}\s+{MONTH}|{MONTH}\s+\d{{1,2}},?)\s+\d{{4}}")
"""A date alone on its line ("14 February 2003", "March 29, 2006"): under a title, never a heading."""


HEADING_WORD = re.compile(
    rf"(?:abstract|summary|contents|zusammenfassung|inhaltsverzeichnis|r[ée]sum[ée]|sommaire|resumo|resumen|riassunto|sommario"
    rf"|(?:\d{{1,2}}|[IVX]{{1,4}})\.?\s+(?!{MONTH}\s+\d{{4}})[A-Z])",
    re.IGNORECASE,
)
"""A line a title never is: a heading word (English, German, French, Portuguese, Spanish, Italian), or a
numbered line not a date ("2 Methods", not "14 May 2003")."""


SUBSECTION = re.compile(r"\d{1,2}(?:\.\d{1,2})+\.?\s")
"""A subsection's number ("2.2."): a line it opens is a title even when it ends in a stop (Elsevier's
"2.3. Renormalisation.")."""


SENTENCE_END = re.compile(r"(?:[a-z]{2}|[\])])[.!?](?:\s|$)")
"""A sentence's end: a word's (not a numeral's: "II. METHOD") or a citation's ("[3]."), stop."""


def mark_title(lines: list[Line], body: float) -> None:
    """The largest type at the top of the first page, before any body text; what else stands there."""
    first = [line for line in lines if line.page == lines[0].page and line.kind == "text"] if lines else []
    head: list[Line] = []
    above = 0  # small lines over the title (a journal's name, an arXiv stamp): passed over, then furniture
    # lines in body type over a title in display type ("This version of the paper is only draft!") are
    # passed over too, and kept as text
    lead = next((n for n, x in enumerate(first[:4]) if x.size >= 1.2 * body and _centred(x, body)), 0)
    for n, line in enumerate(first):
        small = line.size < 0.95 * body or n < lead and line.size <= 1.05 * body
        # (a journal's masthead beside its citation line: "ELECTRONIC / COMMUNICATIONS / in PROBABILITY")
        if not head and above < 6 and small and not HEADING_WORD.match(line.text):
            above += 1
            continue
        if not head and above < 6 and PAPER_NUMBER.fullmatch(line.text.strip()):
            line.kind = "furniture"  # a conference's paper number in large type ("AIECE2021-0002"), no title
            above += 1
            continue
        if line.size <= 1.05 * body or HEADING_WORD.match(line.text):
            break
        if head and _centred(head[0], body) and not _centred(line, body):
            # a heading flush at its column's edge under a centred title block ("Introduction"), not the
            # title's next line centred as wide as the text block
            centre, above_centre = (line.left + line.right) / 2, (head[-1].left + head[-1].right) / 2
            larger = line.size > max(x.size for x in head)  # no heading outsizes the title: "No to" / "CMYK"
            # a title line ending in "of" runs on into the next, centred under it in its size, in italic
            # too ("Documentation of the LaTeX class of" / "North-Western European Journal of Mathematics")
            runs_on = _runs_on(head[-1]) and line.size == head[-1].size
            if not larger and not (runs_on and abs(centre - above_centre) <= 2):
                if _face(line) != _face(head[-1]) or abs(centre - above_centre) > 2:
                    break
        head.append(line)
    if not head:  # a title in body-size type (AASTeX): bold or capitals, centred, over the abstract
        for line in first[above:]:
            # a wrapped title's lines run wide; after a short one, a line in its type is a subtitle or a
            # version ("TrIO: Transparent file I/O" over "Version of 2022-04-30")
            short = bool(head) and head[-1].right - head[-1].left < 0.6 * (head[-1].far_edge - head[-1].edge)
            short = short and not _runs_on(head[-1])  # "COLLAPSED CORES IN GLOBULAR CLUSTERS," goes on
            if head and (_face(line) != _face(head[-1]) or len(head) == 3 or short):
                break
            if not head and not (
                (line.bold or line.caps) and (_centred(line, body) or _unnumbered(line, first))
            ):
                return
            head.append(line)
        if not head or HEADING_WORD.match(head[0].text) or CAPS_HEADING_WORD.match(head[0].text):
            return
    # the paper's dates under its abstract ("Submitted to ECP on January 2, 2013, final version accepted ...")
    for line in first:
        if line.size < 0.95 * body and HISTORY.match(line.text):
            line.kind = "furniture"
    at = first.index(head[0]) + 1 if head[0].text == "NAME" else len(first)
    if len(head) == 1 and at < len(first):
        # a manual page: its title is the line its NAME section holds ("bash - GNU Bourne-Again SHell")
        head[0].kind, head[0].level = "heading", 1
        first[at].kind = "title"
        return
    for line in first[:above]:
        if line.size < 0.95 * body:  # a journal's name, a stamp; lines in body type over the title stay text
            line.kind = "furniture"
    largest = max(line.size for line in head)
    top = next(line for line in head if line.size == largest)
    for line in head:  # authors, dates, a subtitle in another weight under the title: not the body
        line.kind = "title" if line.size == largest and line.bold == top.bold else "furniture"
    # a title's lead-in words over it in the same font, smaller ("No to" over "CMYK"); a line under the title
    # in its font and a smaller size is a subtitle or a heading ("Smart Font Features")
    n = head.index(top) - 1
    while n >= 0 and head[n].kind == "furniture" and _display_part(head[n], top):
        head[n].kind = "title"
        n -= 1
    # and a line under it in its font that opens with such a word goes on with it ("ExPex" / "for linguists")
    n = head.index(top) + 1
    while n < len(head) and head[n].kind == "furniture" and _display_tail(head[n], top):
        head[n].kind = "title"
        n += 1
    for line in _subtitle(head[n - 1 :], top, body):
        line.kind = "title"
    # short lines under the title, centred or in italic, before the first heading or paragraph: authors,
    # affiliations (a short "and" between authors may be taken for a column's line: centred on the page)
    block = (min(x.edge for x in first), max(x.far_edge for x in first))
    for line in first[above + len(head) :]:
        if HEADING_WORD.match(line.text) or len(line.text.split()) > 14:
            break
        middle = abs(line.left + line.right - sum(block)) / 2 <= body  # on the page's middle
        centred = _centred(line, body) or middle and _centred_between(line, *block, body)
        # (or an issue's date set flush under it: "Issue 26, January 2017")
        dated = bool(DATE.search(line.text) or MONTH_YEAR.search(line.text)) and len(line.text.split()) <= 8
        if not (centred or (line.italic or dated) and not line.text.endswith(".")):
            break
        line.kind = "furniture"
    # a title page of its own (a slide deck's first slide): set flush under the title, nothing but a few
    # short lines, none a sentence or a heading's word: a subtitle, the authors, their institutes, a date;
    # not a form's or a table's row of cells beside each other (an attendance sheet's dates)
    rest = [line for line in first[above + len(head) :] if line.kind == "text"]
    rows = {round(line.bottom) for line in rest}
    if (
        0 < len(rest) <= TITLE_PAGE_LINES
        and lines[-1].page > head[0].page
        and len(rows) == len(rest)
        and all(map(_title_page, rest))
    ):
        for line in rest:
            line.kind = "furniture"


SUBTITLE_GAP = 1.5
"""A subtitle's first line stands at most this many of the title's sizes under the title's last line."""
NAMES = re.compile(r"(?:(?:[A-Z][\w'\u2019.\-]*|and|&|,|von|van|de|der)\s*)+\W*")
"""A line of capitalised words only (an author list: "Eric Beitz", "A. Smith and J. Doe")."""
MONTH_YEAR = re.compile(rf"{MONTH}\s+\d{{4}}\b")


def _subtitle(tail: list[Line], top: Line, body: float) -> list[Line]:
    """The subtitle under a title: the lines after its last line (`tail[0]`) that go on with it.

    A LaTeX title's second part in a smaller display size ("The includex LaTeX package" / "extra ways to
    include files", "The TeXtopo package" / "for shaded membrane protein" / "topology plots"): larger than
    the body, close under the title, one size, no author's names, address or date; and more of the title
    block (authors, a date) under it, so a heading followed by its text is never one.
    """
    last, first_gap = tail[0], 0.0
    block: list[Line] = []
    for line in tail[1:]:
        gap = last.bottom - line.bottom
        if block:  # the subtitle's next line: its size, as close as its first line
            apart = line.size != block[0].size or gap > 1.25 * first_gap
        else:
            apart, first_gap = gap > SUBTITLE_GAP * top.size, gap
        names = not any(c.isdigit() for c in line.text) and NAMES.fullmatch(line.text.strip())
        said = "@" in line.text or DATE.search(line.text) or MONTH_YEAR.search(line.text) or names
        if apart or said or line.kind != "furniture" or not body * 1.1 < line.size < top.size:
            break
        block.append(line)
        last = line
    return block if block and tail.index(block[-1]) + 1 < len(tail) else []


TITLE_PAGE_LINES = 8
"""Lines under its title a title page of its own holds at most (see `_title_page`)."""
TITLE_PAGE_WORDS = 8
"""Words each of those lines holds at most."""


def _title_page(line: Line) -> bool:
    """Whether a line under a title may be a title page's: short, no sentence, no heading's word or number."""
    return (
        len(line.text.split()) <= TITLE_PAGE_WORDS
        and not line.text.rstrip().endswith((".", ":", ";", "?", "!"))
        and not HEADING_WORD.match(line.text)
        and not CAPS_HEADING_WORD.match(line.text)
    )


PAPER_NUMBER = re.compile(r"[A-Z]{2,}[\w-]*\d[\w-]*")
"""A paper's number, one word of capitals and digits, set large in a corner of its first page."""
HISTORY = re.compile(r"(?:Submitted|Received|Accepted|Revised|Published)\b.{0,80}\b(?:1[89]|20)\d\d\b", re.I)
"""A paper's dates as a journal prints them under the abstract, in small type."""


def _runs_on(line: Line) -> bool:
    """Whether a title's line goes on over the next: it ends in a joining word ("of") or a comma."""
    words = line.text.split()
    return bool(words) and (words[-1].lower() in JOINING_WORDS or words[-1].endswith(","))


def _display_part(line: Line, top: Line) -> bool:
    """Whether a line over a title's largest line leads into it: same font, half its size at least."""
    last = line.text.split()[-1].lower() if line.text.split() else ""
    # it runs on into the title: it ends in a word no title ends in ("No to" / "CMYK"), where an author's
    # name or "Chapter 1" over a chapter's title stands alone
    return last in JOINING_WORDS and _fonts(line) == _fonts(top) and line.size >= 0.45 * top.size


def _display_tail(line: Line, top: Line) -> bool:
    """Whether a line under a title's largest line goes on with it: same font, a third of its size at least.

    It opens with a word no title's line ends in: "ExPex" in 97 points over "for linguists" in 36.
    """
    first = line.text.split()[0] if line.text.split() else ""
    return first in JOINING_WORDS and _fonts(line) == _fonts(top) and line.size >= 0.33 * top.size


def _fonts(line: Line) -> set[str]:
    """The fonts a line's text is set in."""
    return {p.font for p in line.pieces if p.text.strip()}


FLOAT_CAPTION = re.compile(
    r"(?:(?:Figure|Fig\.|Table|Tab\.|Listing|Algorithm|Scheme|Chart)\s+[\dA-Z][\w.-]*\s*[.:]\s+\S"
    r"|\([a-z]\)\s+\S)"
)
"""A float's caption with its words ("Algorithm 2: Moore's Shortest Path"), or a sub-figure's ("(a) Image"):
no heading, whatever its type."""


def _labels_beside_text(lines: list[Line], body: float) -> set[int]:
    """Lines ending in a colon with text beside them on their baseline: a run-in label ("Editor:  name")."""
    rows: dict[tuple[int, int], list[Line]] = {}
    for line in lines:
        if line.kind == "text":
            rows.setdefault((line.page, round(line.bottom)), []).append(line)
    labels = set()
    for line in lines:
        if line.kind != "text" or not line.text.rstrip().endswith(":"):
            continue
        near = [
            x for key in ((line.page, round(line.bottom) + d) for d in (-1, 0, 1)) for x in rows.get(key, [])
        ]
        if any(0 <= x.left - line.right <= 3 * body for x in near if x is not line):
            labels.add(id(line))
    return labels


def _unnumbered(line: Line, first: list[Line]) -> bool:
    """Whether a bold line opening the first page is unnumbered where the headings after it are numbered.

    A title set flush left in body-size bold (a TUGboat draft), not a section heading.
    """
    later = [x for x in first if x is not line and x.bold and x.size == line.size]
    return (
        line is first[0]
        and not NUMBERED.match(line.text)
        and len(line.text.split()) <= 14
        and any(NUMBERED.match(x.text) for x in later[:3])
    )


def _centred(line: Line, body: float) -> bool:
    """Whether a line stands clear of both edges of its column (by an em and a twentieth of the width)."""
    return _centred_between(line, line.edge, line.far_edge, body)


def _centred_between(line: Line, edge: float, far_edge: float, body: float) -> bool:
    """Whether a line stands clear of both edges (by an em and a twentieth of the width between them)."""
    width = far_edge - edge
    margin = min(line.left - edge, far_edge - line.right)
    return width > 0 and margin > max(body, 0.05 * width)


def mark_headings(lines: list[Line], body: float) -> None:
    """Headings: short lines set apart from body text that read like a title; levels by their type.

    Set apart: bold or larger type; or numbered ("2.1", "IV.", "B.") in italic or capitals (IEEE's small
    capitals, Elsevier's italic subsections, AASTeX's capitals); or a heading word in capitals
    ("REFERENCES"). Levels follow the type: larger first, then capitals, bold, italic.
    """
    # where the body's own face reads as bold (GFS Didot's weight), bold sets no line apart
    body_text = [line for line in lines if line.kind == "text" and abs(line.size - body) < 0.5]
    bold_body = sum(len(x.text) for x in body_text if x.bold) > 0.5 * sum(len(x.text) for x in body_text)
    sans_body = sum(len(x.text) for x in body_text if _sans(x)) > 0.5 * sum(len(x.text) for x in body_text)
    # lines a face set apart that the face's measures (size, weight, slant) do not tell: they part runs
    apart = {id(line) for line in lines if _ocr_apart(line, body) or not sans_body and _sans_number(line)}
    running = _running_text(lines, apart) | _numbered_list(lines, body)
    candidates = [
        line
        for line in lines
        if line.kind == "text"
        and id(line) not in running
        and not line.hang  # a tag, its description hanging under it
        and not BULLET.match(line.text)  # a list's item
        and (
            line.bold
            and not bold_body
            or line.size >= 1.1 * body
            or _set_apart(line)
            or _heading_word(line, body)
            or id(line) in apart  # (its heading words are `_heading_word`'s too)
        )
        # (a bold "Abstract" alone on its line may be set in the abstract's smaller type, a centred
        # "REFERENCES" in the list's: AASTeX)
        and (
            line.heading_size >= 0.85 * body
            or _small_heading_word(line, body)
            # small capitals read by OCR measure small: IEEE's "III. THE SIMULATED PROOF ..." at 8 of 10
            or _unweighed(line)
            and line.caps
            and bool(NUMBERED.match(line.text))
        )
        and (len(line.text.split()) <= 14 or _long_numbered(line, body))
        and re.search(r"[^\W\d_]", line.text)
        and not line.text.endswith((",", ";"))
        and not DATE.fullmatch(line.text.strip())
        and not NUMBERED_EQUATION.search(line.text.strip())
        # a theorem's label on a line of its own ("Theorem 2 (One citation per bibitem)") opens a statement
        # in its section, as run in
        and not (line.size < 1.1 * body and THEOREM.match(line.text.strip()))
        # a bold sentence, or a bold line filling its column, is emphasis in a paragraph; so is a long one
        # leading into a list ("In short, the following applications should be of versions at least as
        # recent as:")
        and not (
            line.size < 1.1 * body
            and (
                line.text.endswith(".")
                and not _subsection_title(line)
                or _fills_column(line)
                or _leads_in(line)
            )
        )
    ]
    spaced = {id(line) for line in _spaced_headings(lines, body)}
    candidates += [
        line for line in lines if id(line) in spaced and id(line) not in {id(c) for c in candidates}
    ]
    beside = _labels_beside_text(lines, body)
    candidates = [line for line in candidates if not (FLOAT_CAPTION.match(line.text) or id(line) in beside)]
    considered, chosen = {id(line) for line in candidates}, set[int]()
    for index, line in enumerate(lines):
        if id(line) not in considered:
            continue
        above = lines[index - 1] if index else None
        # a line starting in lower case only goes on from a heading right above it, in the same type
        goes_on = (
            above is not None and id(above) in chosen and (above.size, above.bold) == (line.size, line.bold)
        )
        # (a symbol from the maths fonts is no lower-case word: the heading "ε-TEX")
        opens_math = line.pieces[0].math and not line.pieces[0].text[:1].isspace()
        if (
            not line.text[:1].islower()
            or opens_math
            or goes_on
            or ITEM_LABEL.match(line.text)
            or _bold_apart(lines, index, chosen)
        ):
            chosen.add(id(line))
    for index, line in enumerate(lines[1:], start=1):  # a heading's second line in its type: "RESULTS"
        above = lines[index - 1]
        if (
            id(above) in chosen
            and id(above) not in spaced  # one set in the body's type heads the body's next line
            and line.kind == "text"
            and id(line) not in chosen
            and _face(line) == _face(above)
            and same_column(line, above)
            and 0 <= above.bottom - line.top < 0.6 * line.heading_size
            and len(above.text.split()) + len(line.text.split()) <= 24
            and not line.text.endswith((",", ";"))
        ):
            chosen.add(id(line))
            candidates.append(line)
    candidates = [line for line in candidates if id(line) in chosen]
    styles = _numbered_order(sorted({_style(line) for line in candidates}), candidates)
    for line in candidates:
        line.kind = "heading"
        line.level = styles.index(_style(line)) + 1


def _leads_in(line: Line) -> bool:
    """An unnumbered line of LEAD_IN words or more ending in a colon: a sentence that a list follows."""
    return line.text.endswith(":") and len(line.text.split()) >= LEAD_IN and not NUMBERED.match(line.text)


LEAD_IN = 8
"""Words an unnumbered line ending in a colon has at least to lead into what follows, not head it."""


def _numbered_order(styles: list[Style], headings: list[Line]) -> list[Style]:
    """Heading styles in rank order, a section's style over its subsection's where the type says otherwise.

    Type ranks headings; numbering wins where a subsection follows its own section ("3.1" right after "3")
    in type of about its size that ranks higher: emulateapj sets its sections in 9 pt capitals
    ("3. HELICITY AMPLITUDES") and their subsections in 10 pt italic ("3.1. Formalism"). A clear difference
    of size stands (a running head "2. Introduction" over "2.4 Notes" in 14 points).
    """
    order = list(styles)
    numbers = [(line, DECIMAL_NUMBER.match(line.text)) for line in headings]
    numbered = [(line, number.group(1)) for line, number in numbers if number]
    pairs = {
        (_style(section), _style(subsection))
        for (section, above), (subsection, number) in itertools.pairwise(numbered)
        if number.rpartition(".")[0] == above and _style(section) != _style(subsection)
    }
    for section, subsection in pairs:
        sizes = sorted((-section[0], -subsection[0]))
        if (subsection, section) in pairs or sizes[1] > 1.15 * sizes[0]:
            continue
        if order.index(section) > order.index(subsection):
            order.remove(section)
            order.insert(order.index(subsection), section)
    return order


def _long_numbered(line: Line, body: float) -> bool:
    """A numbered heading in large bold type, of 24 words at most ("8 The degree 41 polynomial with ...")."""
    return (
        line.bold
        and line.size >= 1.2 * body
        and len(line.text.split()) <= 24
        and bool(NUMBERED.match(line.text))
    )


def _bold_apart(lines: list[Line], index: int, chosen: set[int]) -> bool:
    """A bold line in lower case that starts afresh: under a heading, or a finished sentence after a gap.

    An errata list heads each entry "page 25, line 10" in bold; a bold phrase that wraps within a paragraph
    follows its line without a gap, and one after a gap follows a line that does not end a sentence.
    """
    line = lines[index]
    above = next((x for x in reversed(lines[max(0, index - 8) : index]) if x.kind in ("text", "table")), None)
    if not line.bold or line.code or above is None:  # code: an option's name, set in bold
        return False
    if id(above) in chosen:
        return _face(above) != _face(line)
    apart = above.page != line.page or above.bottom - line.top > 0.6 * line.size
    ends = above.text.rstrip().rstrip("\"'\u201d\u2019").endswith((".", ")", "]", ":", "!", "?"))
    return apart and not above.bold and ends


def _spaced_headings(lines: list[Line], body: float) -> list[Line]:
    """Headings set in the body's type, told by space alone ("a) Meaning of 'transparent'").

    A short line ending no sentence, with more room above it than below, where the text it heads goes on
    close under it.
    """
    # neighbours as read, page furniture (margin line numbers) passed over: a table or a display between
    # the line and the text above it is what made the room
    read = [line for line in lines if line.kind != "furniture"]
    pitch = line_pitch(lines, body)
    found = []
    for above, line, below in zip(read, read[1:], read[2:], strict=False):
        if not above.kind == line.kind == below.kind == "text":
            continue
        words = line.text.split()
        if (
            line.code
            or line.hang  # a tag, its description hanging under it
            or BULLET.match(line.text)  # a list's item, its text under it
            or not 1 <= len(words) <= 8
            or not re.search(r"[^\W\d_]{3}", line.text)
            or line.text.rstrip().endswith((".", ":", ";", ",", "!"))
            or not (same_column(above, line) and same_column(line, below))
            or line.right - line.left > 0.6 * (line.far_edge - line.edge)
            and not _numbered_over(line, below, body)
            or abs(line.size - below.size) > 0.5
            # the text above ended its sentence; a heading opens with a capital or a label ("a) Rules")
            or not above.text.rstrip().endswith((".", "!", "?", ":", ")"))
            or not (line.text[:1].isupper() or line.text[:1].isdigit() or ITEM_LABEL.match(line.text))
            # a list's first item, the next one under it ("1) First", "2) Second")
            or label_form(line.text) is not None
            and label_form(line.text) == label_form(below.text)
        ):
            continue
        if (
            line.cut
            or not word_fits(line, below)
            or any(
                x is not line and same_column(x, line) and abs(x.bottom - line.bottom) < 0.3 * line.size
                for x in read
            )
        ):
            continue  # a piece of a line split at a wide gap or by a table, or ragged text that wrapped
        room_above, room_below = above.bottom - line.bottom, line.bottom - below.bottom
        if (
            room_above >= 1.45 * pitch
            and room_below <= 1.4 * pitch
            and room_above >= room_below + 0.35 * pitch
        ):
            found.append(line)
    return found


def _sans(line: Line) -> bool:
    """Whether a line is set wholly in a sans-serif face (its maths aside)."""
    faces = [p.font for p in line.pieces if p.text.strip() and not p.math]
    return bool(faces) and all(SANS_FONT.search(font) for font in faces)


SANS_FONT = re.compile(r"Sans|SanL|Helvetica|Arial|CMSS|LMSS|Verdana|Futura|GillSans|Myriad|Frutiger|Univers")
"""A sans-serif face's name ("NimbusSanL-Regu", "LMSans10-Regular", "CMSS10")."""


def _sans_number(line: Line) -> bool:
    """A numbered title in a sans-serif face over a serif body, told from the text by its face alone.

    expex's "1.2.1 Note to LaTex users" stands in the body's size and weight.
    """
    title = _numbered_title(line)
    return (
        title[:1].isupper()
        and len(line.text.split()) <= 12
        and not line.text.endswith((".", ",", ";", ":"))
        and _sans(line)
    )


def _centred_number(line: Line, body: float) -> bool:
    """A short numbered line read by OCR centred in its column: AASTeX's italic "1.1. Contrastive learning".

    OCR reads no italic; a line of text is not centred under a number. Centred: as far from either edge of
    its column, within a fifth, and half an em at least (a reference's hanging line "164 (1994), no. 3,
    ..." stands an em in from one edge only, and is no title: a number's title opens with a capital).
    """
    left, right = line.left - line.edge, line.far_edge - line.right
    title = _numbered_title(line)
    return (
        _unweighed(line)
        and title[:1].isupper()
        and len(re.findall(r"\d+", title)) < 2  # "J. Algebraic Geom. 8 (1999), no. 3"
        and len(line.text.split()) <= 10
        and min(left, right) >= 0.5 * body
        and abs(left - right) <= 0.2 * max(left, right)
    )


def _ocr_apart(line: Line, body: float) -> bool:
    """A line read by OCR that a face OCR cannot see sets apart: a centred number, a heading word alone."""
    return (
        _centred_number(line, body)
        or _unweighed(line)
        and bool(CAPS_HEADING_WORD.fullmatch(line.text.strip()))
    )


def _dash_parted(line: Line) -> Line:
    """A line read by OCR with a run-in heading word glued by a dash to its text, parted in two pieces.

    "Abstract—The" is one word to OCR; the box is parted by the letters on either side.
    """
    first, *others = line.pieces
    glued = GLUED_RUN_IN.match(first.text)
    if glued is None:
        return line
    cut = first.left + (first.right - first.left) * glued.end(1) / len(first.text)
    word = dataclasses.replace(first, text=glued.group(1), right=cut)
    text = dataclasses.replace(first, text=first.text[glued.end(1) :], left=cut)
    return dataclasses.replace(line, pieces=[word, text, *others])


GLUED_RUN_IN = re.compile(r"((?:abstract|keywords)[\u2014\u2013])\S", re.IGNORECASE)


def _numbered_over(line: Line, below: Line, body: float) -> bool:
    """A numbered title read by OCR over an indented paragraph, however much of its column it runs.

    IEEE's italic "A. Component Representation of ...": OCR reads no italic; prose has no number before it.
    """
    return _unweighed(line) and _numbered_title(line)[:1].isupper() and below.left > line.left + 0.5 * body


def _numbered_list(lines: list[Line], body: float) -> set[int]:
    """Lines (by id) of a numbered list: LISTED lines or more in a column opening with consecutive numbers.

    "1. Federal case ...", "2. Database case", "3. Lower federal-court case" one under another at one edge
    (an item's wrapped lines hanging between): a list, whatever its type. Headings are never numbered one
    line after another; biblatex-chicago's legal sample sets its list larger than its footnotes, which
    hold more text and so are the body, and each item was a heading.
    """
    found: set[int] = set()
    run: list[tuple[Line, int]] = []
    last: Line | None = None
    for line in [x for x in lines if x.kind == "text"]:
        numbered = LIST_NUMBER.match(line.text)
        if run and last is not None and _item_below(last, line):
            if numbered and abs(run[-1][0].left - line.left) <= 0.6 * body:
                if int(numbered.group(1)) == run[-1][1] + 1:
                    run.append((line, int(numbered.group(1))))
                    last = line
                    continue
            elif not numbered and line.left >= run[-1][0].left + 0.3 * body:
                last = line  # an item's wrapped line, hanging under its text
                continue
        if len(run) >= LISTED:
            found.update(id(x) for x, _ in run)
        run = [(line, int(numbered.group(1)))] if numbered else []
        last = line if run else None
    if len(run) >= LISTED:
        found.update(id(x) for x, _ in run)
    return found


def _item_below(above: Line, line: Line) -> bool:
    """Whether `line` stands under `above` in its column, a line or so apart."""
    return same_column(above, line) and 0 < above.bottom - line.bottom <= 2 * max(line.size, above.size)


LIST_NUMBER = re.compile(r"(\d{1,3})[.)]\s+\S")
"""A list item's number: "1. ", "12) " (not a section's "1.1 ")."""
LISTED = 3
"""Consecutive numbers, one line under another, that make a list, not headings."""


def _running_text(lines: list[Line], apart: set[int]) -> set[int]:
    """Lines (by id) that run on as text: three or more in a face, two filling their column, a sentence ended.

    A letter whose reference list, in smaller type, holds more characters than its body has the body's
    face "larger than the body"; a heading wrapped over three lines of a narrow column ends no sentence.
    A line set `apart` (by id) parts runs: a centred number or a heading word alone read by OCR, whose face
    is the text's as OCR reads it ("Abstract" between the authors and the abstract); a number's title in a
    sans-serif face over a serif body.
    """
    found: set[int] = set()
    run: list[Line] = []
    faces = {id(line): _face(line) for line in lines if line.kind == "text" and id(line) not in apart}
    for line in [*lines, None]:
        if line is not None and run and id(line) in faces and faces[id(line)] == faces[id(run[-1])]:
            # on into the next column or page too, where a paragraph runs on
            if same_column(line, run[-1]) or run[-1].column != "full" != line.column:
                run.append(line)
                continue
        if run and _subsection_title(run[0]) and not _fills_column(run[0]) and not run[0].starts:
            # a numbered subsection title over a paragraph set in its face ("6.3.1 Version Information"
            # over a bold "Not acceptable: ..." warning) heads the run
            run = run[1:]
        elif run and CAPS_HEADING_WORD.fullmatch(run[0].text.strip()):
            run = run[1:]  # and so does a heading word alone ("Abstract" over the abstract, in its type)
        full = sum(1 for x in run if x.right - x.left > 0.9 * (x.far_edge - x.edge))
        if len(run) >= 3 and full >= 2 and SENTENCE_END.search(" ".join(x.text for x in run)):
            found.update(id(x) for x in run)
        run = [line] if line is not None and id(line) in faces else []
    return found


Style = tuple[float, bool, bool, bool]
"""A heading's type as it ranks (`_style`)."""

DECIMAL_NUMBER = re.compile(r"(\d{1,2}(?:\.\d{1,2})*)\.?\s+[^\W\d_]")
"""A heading's decimal number, its depth in its dots ("3.1. Formalism": 2)."""


def _style(line: Line) -> Style:
    """A heading's type as it ranks: larger first, then capitals, then bold, then italic."""
    return (-line.heading_size, not line.caps, not line.bold, line.italic)


def _face(line: Line) -> tuple[float, bool, bool, bool]:
    """What a heading's lines share when it wraps: size, capitals, bold, italic.

    Not the heading size: a second line in small capitals may have no capital letter to give it.
    """
    return (line.size, line.caps, line.bold, line.italic)


def _uncased(line: Line) -> tuple[float, bool, bool]:
    """A heading line's type, capitals or not: size, bold, italic."""
    return (line.size, line.bold, line.italic)


def _heading_word(line: Line, body: float) -> bool:
    """A heading word alone on its line a little larger than the body ("Abstract" at 12 points over 11).

    Or in any size, read by OCR (`_unweighed`): set in bold in the body's size or smaller, it may not read so.
    """
    larger = line.size >= 1.05 * body or _unweighed(line)
    return larger and bool(CAPS_HEADING_WORD.fullmatch(line.text.strip()))


def _small_heading_word(line: Line, body: float) -> bool:
    """A heading word alone on its line in type smaller than the body: bold, or centred capitals.

    Capitals down to 0.6 of the body: amsart's "ABSTRACT" is 6 pt capitals over 8 pt text in a 10 pt paper.
    """
    word = CAPS_HEADING_WORD.fullmatch(line.text.strip())
    return bool(word) and (
        line.bold or _unweighed(line) or line.caps and line.size >= 0.6 * body and _centred(line, body)
    )


def _unweighed(line: Line) -> bool:
    """Whether a line's weight is a guess (read by OCR): a heading word alone on its line heads a section."""
    return all(p.font == OCR_FONT for p in line.pieces)


def _set_apart(line: Line) -> bool:
    """A short line in body-size type that italics or capitals set apart as a heading (see mark_headings)."""
    words = line.text.split()
    stop = line.text.endswith((".", ":")) and not NUMBERED.fullmatch(line.text + " ")
    if len(words) > 10 or stop and not _subsection_title(line):
        return False
    numbered = bool(NUMBERED.match(line.text)) and len(words) >= 2
    if not re.search(r"[^\W\d_]{3}", line.text):  # initials and numbers ("P. M., 2020, 642"): no title
        return False
    small_caps = all(SMALL_CAPS_FONT.search(p.font) for p in line.pieces if not p.math and p.text.strip())
    # a name flush right under a quotation is its source, not a heading (epigraph's "Edmund Burke")
    flush_right = line.far_edge - line.right < line.size and line.left - line.edge > 0.5 * (
        line.far_edge - line.edge
    )
    if line.caps:  # a line wholly in a small-capitals face is set apart by it (text in capitals is not)
        return (
            small_caps
            and not flush_right
            or numbered
            or bool(CAPS_HEADING_WORD.match(re.sub(r"\s+", "", line.text)))
        )
    return line.italic and numbered


def _subsection_title(line: Line) -> bool:
    """Whether a line is a numbered subsection's short title, stop and all ("2.3. Renormalisation.")."""
    return bool(SUBSECTION.match(line.text)) and 2 <= len(line.text.split()) <= 8


def _fills_column(line: Line) -> bool:
    """Whether an unnumbered line runs the width of its column (a heading that wraps is numbered).

    A number's title opens with a capital: "E or Mode O, corresponding to ..." goes on with a sentence.
    """
    width = line.far_edge - line.edge
    title = _numbered_title(line)
    titled = bool(title) and not title[:1].islower()
    return width > 0 and line.right - line.left > 0.9 * width and not titled


def _numbered_title(line: Line) -> str:
    """What follows a line's opening number ("2.1 Options" -> "Options"); "" where no number opens it."""
    number = NUMBERED.match(line.text)
    return line.text[number.end() :].lstrip() if number else ""


def join_wrapped_headings(lines: list[Line]) -> list[Line]:
    """A heading set on two or more lines (same type, right under each other) as one line."""
    out: list[Line] = []
    for line in lines:
        last = out[-1] if out else None
        if (
            last is not None
            and line.kind == last.kind == "heading"
            and same_column(line, last)
            and (_wraps(last, line) or _titles(last, line))
        ):
            broken = last.text.endswith("-") and line.text[:1].islower()
            text = f"{last.text[:-1]}{line.text}" if broken else f"{last.text} {line.text}"
            out[-1] = dataclasses.replace(last, pieces=[*last.pieces, *line.pieces])
            out[-1].text = text
            continue
        out.append(line)
    return out


def _wraps(last: Line, line: Line) -> bool:
    r"""Whether a heading's line goes on the one above: its type, right under it, 24 words at most together.

    A line ending in a colon goes on in its type, a word in lower case aside ("... FORCED via \\"); a word
    broken at the line's end goes on in its size ("... \\subexperiment: Einfache Verwen-" over "dung": the
    commands' typewriter made the first line's weight read other than the second's).
    """
    broken = last.text.endswith("-") and line.text[:1].islower() and abs(line.size - last.size) < 0.5
    return (
        (_face(line) == _face(last) or last.text.endswith(":") and _uncased(line) == _uncased(last) or broken)
        and 0 <= last.bottom - line.top < 0.6 * line.heading_size
        and len(last.text.split()) + len(line.text.split()) <= 24
    )


def _titles(label: Line, line: Line) -> bool:
    """Whether a chapter's label stands over its title, set well apart ("Chapitre 2", "Instruction xlop")."""
    return (
        CHAPTER_LABEL.fullmatch(label.text.strip()) is not None
        and line.size >= 0.8 * label.size
        and 0 <= label.bottom - line.top < 3 * label.size
    )


CHAPTER_LABEL = re.compile(
    r"(?:chapter|chapitre|kapitel|cap[ií]tulo|capitolo|part|partie|teil|parte|appendix|annexe|anhang)"
    r"\s+(?:\d{1,3}|[IVXLC]{1,6}|[A-Z])\.?",
    re.IGNORECASE,
)
"""A chapter's or a part's label alone on its line, its title on the next ("Chapter 2", "Part IV")."""


def _italic_run_in(line: Line) -> tuple[list[Piece], list[Piece]] | None:
    """A numbered run-in heading in italic ("9.19. " roman, "Big-g-g delimiters" italic, ". Here ..." roman).

    Its pieces (the stop given to it) and the paragraph's; None where the line opens otherwise.
    """
    pieces = line.pieces
    first = pieces[0].text.strip()
    if (  # REVTeX's fourth level: "a. Note (Fourth-level head is run in)" in italic, no stop, "The ..."
        len(pieces) >= 2
        and pieces[0].italic
        and LETTERED.match(first)
        and len(first.split()) <= 10
        and not pieces[1].italic
        and pieces[1].text[:1].isupper()
    ):
        return [pieces[0]], pieces[1:]
    if len(pieces) < 3 or not RUN_IN_NUMBER.fullmatch(first) or not pieces[1].italic:
        return None
    n = 1
    while n < len(pieces) and (pieces[n].italic or MONO_FONT.search(pieces[n].font)):
        n += 1  # "The \substack command": a command in typewriter inside the italic title
    if n == len(pieces) or not pieces[n].text.startswith(". ") or not pieces[n - 1].italic:
        return None
    stop = dataclasses.replace(pieces[n], text=".")
    rest = dataclasses.replace(pieces[n], text=pieces[n].text[2:])
    return [*pieces[:n], stop], [rest, *pieces[n + 1 :]]


REPEATED_LABEL = 3
"""Paragraphs a bold label ending in a colon opens at least, to be a label rather than a run-in heading."""
LABELLED_SENTENCE = re.compile(r":\s+[a-z]")
"""A colon inside a bold phrase that a sentence in lower case goes on from: a label and its sentence."""


def _label_word(line: Line) -> str:
    """The bold words a paragraph opens with up to a colon ("not acceptable:"), "" when they hold none."""
    label = bold_label(line)
    return label[: label.index(":") + 1].lower() if ":" in label else ""


LETTERED = re.compile(r"[a-z]\.\s+[A-Z]")
"""A run-in heading's letter and its first word ("a. Note")."""
RUN_IN_NUMBER = re.compile(r"\d{1,2}(?:\.\d{1,2})+\.?")
"""A subsection's number alone ("9.19."), as an italic run-in heading opens."""


FIELD_WORDS = 6
"""Words a field's value holds at most after its bold label and colon, with no stop (see `_field`)."""


def _field(phrase: str, rest: list[Piece]) -> bool:
    """Whether a bold label and what follows it on its line are a field and its value, not a run-in heading.

    A front page's "Editor: Editor's name" or "Keywords: List of keywords": a few words with no stop, where a
    run-in heading's paragraph runs on in sentences.
    """
    value = line_text(rest).strip()
    return phrase.endswith(":") and len(value.split()) <= FIELD_WORDS and not value.endswith((".", "!", "?"))


def split_run_in_headings(lines: list[Line]) -> list[Line]:
    """A paragraph opening with a bold phrase ending in a stop ("Data. We use ...") as heading and paragraph.

    The heading is of the lowest level, under every heading set on a line of its own.
    """
    level = 1 + max((line.level for line in lines if line.kind == "heading"), default=0)
    starts = [line for line in lines if line.kind == "text" and line.starts]
    labelled = [bold_label(line).endswith(":") for line in starts]
    # two paragraphs in a row opening with a bold label and a colon are items of a description list
    # ("asaetr.sty: LaTeX style", "asaetr.bst: BibTeX style"), not run-in headings
    items = {
        id(line)
        for n, line in enumerate(starts)
        if labelled[n] and (n > 0 and labelled[n - 1] or n + 1 < len(starts) and labelled[n + 1])
    }
    # a label that opens paragraph after paragraph heads none of them ("Not acceptable: ..." in IEEEtran's
    # testflow guide, under each test): a heading names its section once
    words = [_label_word(line) for line in starts]
    opening = Counter(word for word in words if word)
    items |= {id(line) for line, word in zip(starts, words, strict=True) if opening[word] >= REPEATED_LABEL}
    out: list[Line] = []
    for line in lines:
        if line.kind != "text" or not line.starts or id(line) in items:
            out.append(line)
            continue
        if _unweighed(line):
            line = _dash_parted(line)
        bold = bold_lead(line)
        rest = line.pieces[len(bold) :]
        phrase = line_text(bold)
        word = RUN_IN_WORD.match(line.pieces[0].text.strip())
        weighed = (
            line.pieces[0].italic
            or line.pieces[0].bold
            or _unweighed(line)
            and word
            and word.group(0)[-1:] in STOPS
        )
        if word and len(line.pieces) > 1 and weighed:
            # IEEE: "Abstract—No matter ..." in one bold paragraph: the word is the heading (and llncs's
            # bold "Abstract." read by OCR, whose weight is a guess)
            first, *others = line.pieces
            lead = dataclasses.replace(others[0], text=others[0].text.lstrip("\u2014\u2013-: "))
            bold, rest, phrase = [first], [lead, *others[1:]], word.group(1) + "."
        italic = None if bold else _italic_run_in(line)
        if italic is not None:  # "9.19. Big-g-g delimiters. Here are ...": amsart's subsections
            bold, rest = italic
            phrase = line_text(bold)
        if (
            bold
            and rest
            and re.search(r"[^\W\d_]{2}", phrase)
            and (phrase.endswith((".", ":")) or italic is not None)  # an italic one needs no stop
            and len(phrase.split()) <= 10
            and not ADMONITION.match(phrase)
            and not LABELLED_SENTENCE.search(phrase)  # "Recommended: dvips version 5.86f or later."
            and not THEOREM.match(phrase)  # "Theorem 1." opens a statement in its section, heads none
            and not CAPTION_LABEL.match(phrase)
            and not _field(phrase, rest)  # "Editor: Editor's name", "Keywords: List of keywords"
            # a description list's term ("free. If such a key ..."), not a lettered head ("a. Note")
            and (not phrase[:1].islower() or italic is not None)
        ):
            heading = Line(
                bold,
                line.page,
                line.column,
                "heading",
                level,
                edge=line.edge,
                far_edge=line.far_edge,
                band=line.band,
            )
            body = Line(
                rest,
                line.page,
                line.column,
                "text",
                starts=True,
                edge=line.edge,
                far_edge=line.far_edge,
                band=line.band,
            )
            out.extend([heading, body])
        else:
            out.append(line)
    return out
