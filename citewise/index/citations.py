"""In-text citation markers, a document's reference list, and the links between them.

Loaders of unstructured formats (txt, md, html, pdf, docx) call these three steps:

1. `split_references` takes the trailing "References" section off the body and parses its entries:
   numbered entries ("[1] ...", "1. ...", "1) ...") get the number as key; author-year entries get
   surname + year ("lee2021"), and a repeated key gets a letter ("lee2021b", "lee2021c", ...).
2. `find_markers` finds numeric ("[3]", "[2-5]", "[1, 3-4]") and author-year ("(Lee et al., 2021)",
   "Lee and Kim (2020)") markers in a paragraph.
3. `link_citations` sets each paragraph's `citations` to the bibliography keys its markers resolve to.
"""

from __future__ import annotations

import itertools
import logging
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from citewise.index.document import BibEntry, Paragraph

logger = logging.getLogger(__name__)

MAX_RANGE = 50
"""A numeric range such as "[2-5]" expands to at most this many keys."""

MAX_CITATION_NUMBER = 999
"""Bracketed numbers above this (years such as "[2021]") are not citations."""

_DASHES = "-\u2010\u2011\u2012\u2013\u2014"
_NUMERIC = re.compile(rf"\[(\s*\d+(?:\s*[{_DASHES}]\s*\d+)?(?:\s*[,;]\s*\d+(?:\s*[{_DASHES}]\s*\d+)?)*\s*)\]")
_RANGE = re.compile(rf"(\d+)\s*[{_DASHES}]\s*(\d+)")

# A surname: a capitalised word, optionally after particles ("van der Berg") and with hyphens or apostrophes.
_SURNAME = r"(?:(?:van|von|der|den|de|da|del|di|du|la|le)\s+)*[A-Z\u00c0-\u00de][\w'\u2019\-]*"
_YEAR = r"(?:19|20)\d{2}[a-z]?"
_AND = r"\s+(?:and|&)\s+"
# The first author's surname (group 1), then "et al.", "and X", or "X, Y, and Z".
_AUTHORS = rf"({_SURNAME})(?:\s+et\s+al\.?|{_AND}{_SURNAME}|(?:,\s*{_SURNAME})*,?{_AND}{_SURNAME})?"
_LEAD_IN = r"(?:(?:e\.g\.|i\.e\.|see(?:\s+also)?|cf\.)\s*,?\s*)?"
_CITE_PART = re.compile(rf"^{_LEAD_IN}{_AUTHORS},?\s+({_YEAR}(?:\s*,\s*{_YEAR})*)$")
_BRACKETED = re.compile(r"[(\[]([^()\[\]]{4,300})[)\]]")
_NARRATIVE = re.compile(rf"\b{_AUTHORS}\s+\(({_YEAR}(?:\s*[,;]\s*{_YEAR})*)\)")
_LONE_SURNAME = re.compile(_SURNAME)
_YEAR_IN_TEXT = re.compile(rf"\b({_YEAR})\b")
_ENTRY_YEAR = re.compile(rf"(?<!\d[:/])\b({_YEAR})\b")
"""An entry's year: not a standard's edition ("ABNT NBR 14724:2011", "ISO 9001:2015") before its own."""
_NOT_SURNAMES = frozenset(
    "january february march april may june july august september october november december "
    "in on at by for from since until during table figure fig section eq equation chapter appendix "
    "see also the this that".split()
)

_REF_HEADING = re.compile(
    r"^(?:(?:\d+(?:\.\d+)*|[IVXLC]+|[A-Z])[.)]?\s+)?"
    r"(?:references?(?:\s+cited)?|bibliography|works\s+cited|literature(?:\s+cited)?|reference\s+list"
    r"|literatur(?:verzeichnis)?|bibliographie|r[ée]f[ée]rences(?:\s+bibliographiques)?|bibliograf[íi]a"
    r"|refer[êe]ncias(?:\s+bibliogr[áa]ficas)?|referencias(?:\s+bibliogr[áa]ficas)?"
    r"|riferimenti(?:\s+bibliografici)?)\s*:?$",
    re.IGNORECASE,
)
_NUMBERED_START = re.compile(r"(?<!\S)(?:\[(\d{1,3})\]|(\d{1,3})[.)])(?=\s)")
_AUTHOR_ENTRY_START = re.compile(rf"^\s*(?:{_SURNAME}\s*,\s*(?:[A-Z]|{_SURNAME})|(?:[A-Z]\.\s*)+{_SURNAME})")
_INITIALLED_ENTRY = re.compile(
    rf"{_SURNAME}(?:,\s*Jr\.)?,\s*(?:(?:[A-Z][a-z]+\s+)?[A-Z]\.|[A-Z][a-z]+,|[A-Z][a-z]+\.\s)"
)
"""An author-year entry's first line, surname first: "Berman, Jr., G. P.", "Knuth, Donald E.", "Tom, Ann,",
a single author in Chicago's bibliography style "Braun, Caroline. Reply to ..."."""
_ENTRY_SURNAME = re.compile(rf"^\s*(?:[A-Z]\.(?:\s*-?\s*[A-Z]\.)*\s*)?({_SURNAME})")


@dataclass(frozen=True)
class Marker:
    """One in-text citation marker.

    Attributes:
        start: offset of the marker's first character in the text.
        end: offset just past its last character.
        text: the marker as written ("[2-4]", "(Lee et al., 2021)").
        kind: "numeric" for bracketed numbers, "author_year" for name-and-year citations.
        keys: the bibliography keys it names, in order ("2", "3", "4" or "lee2021").
    """

    start: int
    end: int
    text: str
    kind: Literal["numeric", "author_year"]
    keys: tuple[str, ...]


_EMPTY_FIELDS = re.compile(r",(?:\s*,)+")
_EMPTY_BRACKETS = re.compile(r"\s*(?:\(\s*\)|\[\s*\])")


def readable_entry(text: str) -> str:
    """A bibliography entry as shown: without the empty fields a dropped LaTeX macro leaves.

    unarXive writes "Chiavassa, A., & Brogi, M. 2019, , 631, A100" where the source had a macro (the
    journal's name): the fields are kept as stored, and shown as "..., 2019, 631, A100".
    """
    cleaned = _EMPTY_BRACKETS.sub("", _EMPTY_FIELDS.sub(",", text))
    return " ".join(cleaned.split()).strip(" ,")


def find_markers(text: str) -> list[Marker]:
    """Return the citation markers in `text`, in order of appearance, without overlaps.

    Numeric markers are bracketed numbers, lists and ranges ("[3]", "[3, 9]", "[2-5]", "[1,3-4]"); a
    bracket right after an identifier ("x[0]", "item_2[1]"; a word of prose may carry one: "pathology[1]")
    or holding a number above `MAX_CITATION_NUMBER` ("[2021]") is not a citation. Author-year markers are
    parenthetical ("(Lee et al., 2021)", "(Lee & Kim 2020; Park, 2019a)") or narrative ("Lee et al.
    (2021)"); their keys are the lower-cased first surname, without accents or punctuation, and the year.
    """
    found = [*_numeric_markers(text), *_bracketed_author_year(text), *_narrative_markers(text)]
    found.sort(key=lambda marker: (marker.start, -marker.end))
    markers: list[Marker] = []
    for marker in found:
        if not markers or marker.start >= markers[-1].end:
            markers.append(marker)
    return markers


def soften_source_markers(text: str) -> str:
    """Rewrite a source's own numeric markers ("[43]") as "(ref. 43)" so they never pass for our citations."""
    for marker in reversed([m for m in find_markers(text) if m.kind == "numeric"]):
        text = f"{text[: marker.start]}(ref. {marker.text.strip('[]')}){text[marker.end :]}"
    return text


_TRAILING_SOURCE_MARKERS = re.compile(
    r"\s*\(ref\. [^)]{1,40}\)(?:\s*,?\s*\(ref\. [^)]{1,40}\))*"
    r"(?=\s*(?:\[(?:S\d+)?E\d+\]|[.;:!?]|,(?!\s*\(ref\.)|$))"
)


_CLAUSE_END = re.compile(r"\s*(?:\[(?:S\d+)?E\d+\]|[.;:!?]|,|$)")


def without_trailing_source_markers(text: str) -> str:
    """A sentence without the source's own markers where they close a clause ("... 1.5 days (ref. 74).").

    Beside citewise's marker they carry nothing; one that is a sentence's subject ("(ref. 70) inferred")
    stays. Parenthetical author-year markers closing a clause ("... it had used (Brown et al., 2021).") go
    the same way; narrative ones ("Gao et al. (2023) argue") are words of the sentence and stay. Apply after
    `soften_source_markers`.
    """
    text = _TRAILING_SOURCE_MARKERS.sub("", text)
    for marker in reversed(_bracketed_author_year_markers(text)):
        if _CLAUSE_END.match(text, marker.end):
            start = len(text[: marker.start].rstrip())
            text = text[:start] + text[marker.end :]
    return text


def _bracketed_author_year_markers(text: str) -> list[Marker]:
    return [m for m in find_markers(text) if m.kind == "author_year" and m.text[:1] in "(["]


def author_year_key(surname: str, year: str) -> str:
    """Key for a surname and a year: ("Lee", "2021a") -> "lee2021a", ("van Dam", "") -> "vandam"."""
    return _fold(surname) + year.lower()


def split_references(paragraphs: Sequence[Paragraph]) -> tuple[list[Paragraph], dict[str, BibEntry]]:
    """Take the reference list off a document body and parse its entries.

    The reference list is the last section headed References, Bibliography, Works Cited or Literature, or
    their German, French, Portuguese, Spanish or Italian words (any case, optionally numbered, e.g. "7
    References", "Referências"); a paragraph whose whole text is such a heading also
    starts one, running to the end of its section. Sections after it (appendices) stay in the body.
    Numbered entries ("[1] ...", "1. ...", "1) ...") are keyed by their number and may arrive as one blob
    of text, as PDFs give them; otherwise each paragraph or line that starts like "Surname, I." or
    "I. Surname" starts an author-year entry keyed surname + year (see `author_year_key`); a key already
    taken gets the next letter ("lee2021b"). When nothing parses as an entry the paragraphs are returned
    unchanged with an empty bibliography.

    Args:
        paragraphs: the document's paragraphs in reading order.

    Returns:
        The body paragraphs (everything but the reference list) and the bibliography by key.
    """
    spans = list(_reference_spans(paragraphs))
    if not spans:
        return _unheaded(paragraphs)
    chosen: tuple[int, int, dict[str, BibEntry]] | None = None
    undated: tuple[int, int, dict[str, BibEntry]] | None = None
    for start, end, skip_first in spans:
        bibliography = _parse_entries([p.text for p in paragraphs[start + skip_first : end]])
        if len(bibliography) >= 2 and not _dated(bibliography):
            # few of its "entries" give a year: the authors' biographies the OUP template sets under its
            # list, which a run-in heading files under "References"; a list further up is the list
            undated = undated or (start, end, bibliography)
            continue
        if len(bibliography) >= 2 or bibliography and chosen is None:
            chosen = (start, end, bibliography)
        if len(bibliography) >= 2:  # a list, not an appendix's "References" section of advice
            break
    if undated is not None and (chosen is None or len(chosen[2]) < 2):
        chosen = undated
    # a numbered list with no heading that holds more entries than a section so headed is the list (APS's
    # sample: its "[1]" ... "[44]" under no heading, a short section of notes headed like references earlier)
    unheaded = _unheaded(paragraphs)
    if len(unheaded[1]) > max(len(chosen[2]) if chosen else 0, 2):
        return unheaded
    if chosen is None:
        logger.debug("a references section was found but no entry in it could be parsed")
        return list(paragraphs), {}
    start, end, bibliography = chosen
    return [*paragraphs[:start], *paragraphs[end:]], bibliography


def _dated(bibliography: dict[str, BibEntry]) -> bool:
    """Whether half of a list's entries at least give a year, as references do."""
    dated = sum(bool(_YEAR_IN_TEXT.search(entry.text)) for entry in bibliography.values())
    return 2 * dated >= len(bibliography)


def link_citations(paragraphs: Iterable[Paragraph], bibliography: dict[str, BibEntry]) -> list[Paragraph]:
    """Return the paragraphs with `citations` set to the bibliography keys their markers resolve to.

    A key resolves when it is in the bibliography. An author-year key that is not ("lee2021" against
    numbered entries) also resolves to the first entry whose text starts with the surname and contains the
    year. Keys that resolve to nothing are dropped; each key appears once, in order of first mention.
    """
    resolver = _Resolver(bibliography)
    linked = []
    for paragraph in paragraphs:
        keys: dict[str, None] = {}
        for marker in find_markers(paragraph.text):
            for key in marker.keys:
                resolved = resolver.resolve(key, marker.kind)
                if resolved is not None:
                    keys.setdefault(resolved)
        linked.append(replace(paragraph, citations=tuple(keys)))
    return linked


def is_reference_heading(text: str) -> bool:
    """Whether `text` is a reference-list heading ("References", "7. Bibliography", "WORKS CITED")."""
    return bool(_REF_HEADING.match(text.strip()))


def opens_author_entry(text: str) -> bool:
    """Whether a line opens an author-year reference entry, surname first ("Agarwal, A. G.")."""
    return _INITIALLED_ENTRY.match(text.strip()) is not None


# --- markers -------------------------------------------------------------------------------------------


def _numeric_markers(text: str) -> Iterable[Marker]:
    for match in _NUMERIC.finditer(text):
        if (
            match.start() > 0
            and _is_identifier_char(text[match.start() - 1])
            and not _after_word(text, match.start())
        ):
            continue
        keys = _expand_numbers(match.group(1))
        if keys:
            yield Marker(match.start(), match.end(), match.group(0), "numeric", keys)


def _after_word(text: str, start: int) -> bool:
    """Whether a bracket is glued to a word of prose ("pathology[1]", "Lee's[8]"), not to code ("x[0]")."""
    word = re.search(r"[\w']+$", text[:start])
    return word is not None and bool(re.fullmatch(r"[A-Za-z][a-z']{2,}", word.group(0)))


def _expand_numbers(body: str) -> tuple[str, ...]:
    keys: list[str] = []
    for part in re.split(r"[,;]", body):
        part = part.strip()
        ranged = _RANGE.fullmatch(part)
        first, last = (int(ranged.group(1)), int(ranged.group(2))) if ranged else (int(part), int(part))
        if not 1 <= first <= MAX_CITATION_NUMBER or not 1 <= last <= MAX_CITATION_NUMBER:
            return ()
        numbers = range(first, min(last, first + MAX_RANGE - 1) + 1) if last >= first else (first, last)
        keys.extend(str(number) for number in numbers)
    return tuple(dict.fromkeys(keys))


def _bracketed_author_year(text: str) -> Iterable[Marker]:
    for match in _BRACKETED.finditer(text):
        keys: list[str] = []
        first: str | None = None  # ABNT parts authors by semicolons: "(WILSON; MADSEN, 2010)" is Wilson's
        for part in (part.strip() for part in match.group(1).split(";")):
            cited = _CITE_PART.match(part)
            if cited and _plausible_surname(cited.group(1)):
                years = re.split(r"\s*,\s*", cited.group(2))
                keys.extend(author_year_key(first or cited.group(1), year) for year in years)
            if cited is None and _LONE_SURNAME.fullmatch(part) and _plausible_surname(part):
                first = first or part
            else:
                first = None
        if keys:
            unique = tuple(dict.fromkeys(keys))
            yield Marker(match.start(), match.end(), match.group(0), "author_year", unique)


def _narrative_markers(text: str) -> Iterable[Marker]:
    for match in _NARRATIVE.finditer(text):
        if not _plausible_surname(match.group(1)):
            continue
        years = re.split(r"\s*[,;]\s*", match.group(2))
        keys = tuple(dict.fromkeys(author_year_key(match.group(1), year) for year in years))
        yield Marker(match.start(), match.end(), match.group(0), "author_year", keys)


def _plausible_surname(surname: str) -> bool:
    return surname.lower() not in _NOT_SURNAMES and len(_fold(surname)) > 1


def _is_identifier_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _fold(text: str) -> str:
    """Lower-case ASCII letters only: "Müller-Lüdenscheidt" -> "mullerludenscheidt"."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z]", "", ascii_text.lower())


def _first_author_words(entry: str) -> set[str]:
    """The folded words of an entry's first author: the text before its first comma, "and" or year."""
    head = re.split(rf",|\s(?:and|&)\s|{_YEAR}", entry, maxsplit=1)[0]
    return {_fold(word) for word in head.split()[:5] if len(_fold(word)) > 1}


# --- reference list ------------------------------------------------------------------------------------


_FIRST_ENTRY = re.compile(r"(?:^|(?<=[.)\]]\s))\[1\]\s+(?=\S)")
"""Where a numbered list's first entry starts: a paragraph's start, or after a sentence it runs on from."""
_ENTRY_START = re.compile(r"(?:^|(?<=[.)\]\d]\s))\[(\d{1,3})\]\s+(?=\S)")
"""An entry's label where an entry may start: a paragraph's start, or after the end of the entry before
(a stop, a bracket, or a number: physics entries end on their DOI, "doi:10.1103/PhysRevD.32.189")."""
UNHEADED_ENTRIES = 3
"""Entries a numbered list with no heading must have, in order, to be taken for the reference list."""
ENTRY_CHARS = 400
"""Characters an entry runs to at most: a longer unlabelled paragraph after one is body text again."""


def _unheaded_references(paragraphs: Sequence[Paragraph]) -> tuple[list[Paragraph], dict[str, BibEntry]]:
    """A numbered reference list with no heading (APS journals), taken out of the body wherever it runs.

    It starts at the last "[1]" that starts a paragraph, or ends a sentence's run into it ("... (2020). [1]
    A. Author"); the paragraph it runs on from keeps the words before it. From there, paragraphs that start
    with the next number, and the short ones that go on from an entry, are the list; body text met on the
    way (a column set after the list's first entries) stays body, and the list goes on where the next
    number starts a paragraph again. It counts when it has UNHEADED_ENTRIES entries at least.
    """
    for index in range(len(paragraphs) - 1, -1, -1):
        found = list(_FIRST_ENTRY.finditer(paragraphs[index].text))
        if found:
            break
    else:
        return list(paragraphs), {}
    at = found[-1].start()
    before = paragraphs[index].text[:at].strip()
    texts: list[str] = [paragraphs[index].text[at:]]
    body = [*paragraphs[:index], *([replace(paragraphs[index], text=before)] if before else [])]
    expected, since = 2, len(texts[0])
    for label in _ENTRY_START.finditer(texts[0]):
        if int(label.group(1)) == expected:
            expected, since = expected + 1, len(texts[0]) - label.start()
    for paragraph in paragraphs[index + 1 :]:
        last = None  # where the last entry this paragraph starts begins (its labels run in order)
        for label in _ENTRY_START.finditer(paragraph.text):
            if int(label.group(1)) == expected:
                expected, last = expected + 1, label.start()
        if last is not None:
            texts.append(paragraph.text)
            since = len(paragraph.text) - last
        elif since + len(paragraph.text) <= ENTRY_CHARS:
            texts.append(paragraph.text)
            since += len(paragraph.text)
        else:
            body.append(paragraph)
            since = ENTRY_CHARS  # body met: only the next number goes on with the list
    bibliography = _numbered_entries("\n".join(texts))
    if len(bibliography) < UNHEADED_ENTRIES or "1" not in bibliography:
        return list(paragraphs), {}
    return body, bibliography


def _unheaded(paragraphs: Sequence[Paragraph]) -> tuple[list[Paragraph], dict[str, BibEntry]]:
    """A reference list with no heading: numbered (APS), else author-year closing the document (AIP)."""
    body, bibliography = _unheaded_references(paragraphs)
    return (body, bibliography) if bibliography else _unheaded_author_year(paragraphs)


UNHEADED_AUTHOR_ENTRIES = 5
"""Entries an author-year list with no heading must have to be taken for the reference list."""


def _unheaded_author_year(paragraphs: Sequence[Paragraph]) -> tuple[list[Paragraph], dict[str, BibEntry]]:
    """An author-year reference list with no heading closing the document (REVTeX's AIP style).

    The run of paragraphs at the end, each opening "Surname, I." or going on from the one before (a short
    paragraph not opening so: an entry's line cut off it), with UNHEADED_AUTHOR_ENTRIES entries at least,
    most of them dated and their surnames in alphabetical order, as such lists are.
    """
    start = len(paragraphs)
    while start > 0:
        text = paragraphs[start - 1].text
        cut_off = start < len(paragraphs) and opens_author_entry(paragraphs[start].text)
        if not opens_author_entry(text) and not (len(text) <= ENTRY_CHARS // 4 and cut_off):
            break
        start -= 1
    while start < len(paragraphs) and not opens_author_entry(paragraphs[start].text):
        start += 1  # the run opens with an entry, not a line cut off one
    entries: list[str] = []
    for paragraph in paragraphs[start:]:
        if opens_author_entry(paragraph.text) or not entries:
            entries.append(paragraph.text)
        else:
            entries[-1] = f"{entries[-1]} {paragraph.text}"
    if len(entries) < UNHEADED_AUTHOR_ENTRIES:
        return list(paragraphs), {}
    surnames = [_fold(entry.split(",")[0]) for entry in entries]
    ordered = sum(a <= b for a, b in itertools.pairwise(surnames))
    dated = sum(bool(_YEAR_IN_TEXT.search(entry)) for entry in entries)
    if 5 * ordered < 4 * (len(entries) - 1) or 5 * dated < 4 * len(entries):
        return list(paragraphs), {}
    return list(paragraphs[:start]), _keyed(entries)


def _reference_spans(paragraphs: Sequence[Paragraph]) -> Iterator[tuple[int, int, int]]:
    """(start, end, 1 if the first paragraph is the heading itself else 0) of each reference list, last first.

    The last that holds two entries or more is the document's: JACoW's template has an annex section
    "References" of advice on how to write them after its own list.
    """
    index = len(paragraphs) - 1
    while index >= 0:
        paragraph = paragraphs[index]
        if is_reference_heading(paragraph.text):
            yield index, _section_end(paragraphs, index), 1
        elif _is_reference_section(paragraph.section):
            start = index
            while start > 0 and paragraphs[start - 1].section == paragraph.section:
                start -= 1
            yield start, _section_end(paragraphs, start), 0
            index = start
        index -= 1


def _is_reference_section(section: str) -> bool:
    return bool(section) and any(is_reference_heading(part) for part in section.split(" > "))


def _section_end(paragraphs: Sequence[Paragraph], start: int) -> int:
    end = start + 1
    while end < len(paragraphs) and paragraphs[end].section == paragraphs[start].section:
        end += 1
    return end


def _parse_entries(texts: list[str]) -> dict[str, BibEntry]:
    texts = [text.strip() for text in texts if text.strip()]
    if not texts:
        return {}
    if _NUMBERED_START.match(texts[0]):
        return _numbered_entries("\n".join(texts))
    return _author_year_entries(texts)


def _numbered_entries(blob: str) -> dict[str, BibEntry]:
    """Split a numbered reference list into entries keyed by their number.

    Entries start a line, with numbers that go up. When a list is run together on lines (as PDFs often give
    it), an entry may also start mid-line if it has the next number and follows the end of the previous
    entry ("... 2020. 2. Jones" or "... 2020. [2] Jones"); that reading is used only when it finds more
    entries, so "vol. 2." inside an entry of a one-entry-per-line list does not split it.
    """
    starts = _numbered_starts(blob, mid_line=False)
    run_together = _numbered_starts(blob, mid_line=True)
    if len(run_together) > len(starts):
        starts = run_together
    bibliography: dict[str, BibEntry] = {}
    for index, (_, text_start, key) in enumerate(starts):
        text_end = starts[index + 1][0] if index + 1 < len(starts) else len(blob)
        text = " ".join(blob[text_start:text_end].split())
        if text and key not in bibliography:
            bibliography[key] = BibEntry(key=key, text=text)
    return _unlabelled_entries(bibliography)


_INITIALS = r"(?:[A-Z]{1,2}\.\s*-?\s*)+[A-Z][a-z][\w'\u2019-]*"
_UNLABELLED_ENTRY = re.compile(
    rf"(?:(?<=[a-z0-9)\]]\.)|(?<=\d{{4}}[a-z]:\d{{5}}\))|(?<=MR \d{{6}})|(?<=MR \d{{7}}))"
    rf"\s+(?:\S{{1,3}}\s+)??"
    rf"(?=(?:{_SURNAME}[a-z]\w*\s*,\s*(?:[A-Z]\.|[A-Z][a-z]+\s+[A-Z]{{1,2}}\b)|{_INITIALS}\s*(?:,|and\b|&|et\s+al)"
    rf"|,\s+[A-Z][a-z])[^\n]{{0,300}}?\b{_YEAR}\b|{_INITIALS}\.\s*\(?{_YEAR}\b)"
)
"""Where an entry whose label was lost goes on inside the entry before it: a finished sentence (not an
initial's stop) or an AMS-style entry's review numbers ("MR 2802469 (2012h:53097)"), what is left of its
label (OCR's "Ss" for "[9]"), then an author list and a year ("Dixon, Mike J., et al. (2018)", "Kelly,
J.L.", "R. S. Sutton and ... (2018)", "R. Agrawal. (1995)", OCR's "PT. Chrusciel", or a repeated author's
dash that OCR dropped: ", On the analyticity ... (1958)"; not a journal's "J. Chem. Phys." nor a
publisher's "Springer, Berlin")."""

RUN_ON = 3.0
"""Times the list's median entry a last entry's length is, at least, for its author lists to be entries."""


def _unlabelled_entries(bibliography: dict[str, BibEntry]) -> dict[str, BibEntry]:
    """Entries split off an entry whose followers' labels were lost (OCR).

    Tesseract drops most of IEEE's "[2]" ... "[10]" set in their own column: entry 1 then runs on over nine
    entries. Where an entry holds as many author-list openings (`_UNLABELLED_ENTRY`) as numbers are missing
    after it, each opening starts the next number's entry; any other count leaves the entry whole. The
    last entry has no next number to count by: it is split where it is RUN_ON times the median entry of
    the list so mended.
    """
    keys = list(bibliography)
    mended: dict[str, BibEntry] = {}
    for key, after in itertools.zip_longest(keys, keys[1:]):
        missing = int(after) - int(key) - 1 if after is not None else 0
        mended |= _split_entry(bibliography[key], missing)
    lengths = sorted(len(entry.text) for entry in mended.values())
    last = mended[keys[-1]] if keys else None
    if last is not None and len(lengths) >= 3 and len(last.text) >= RUN_ON * lengths[len(lengths) // 2]:
        mended |= _split_entry(last, None)
    return mended


def _split_entry(entry: BibEntry, missing: int | None) -> dict[str, BibEntry]:
    """An entry split at its author-list openings when it holds `missing` of them (None: any number)."""
    cuts = [(m.start(), m.end()) for m in _UNLABELLED_ENTRY.finditer(entry.text)]
    if not cuts or missing is not None and len(cuts) != missing:
        return {entry.key: entry}
    bounds = [(0, 0), *cuts, (len(entry.text), len(entry.text))]
    numbers = [str(int(entry.key) + offset) for offset in range(len(bounds) - 1)]
    return {
        number: BibEntry(key=number, text=entry.text[start:end].strip())
        for number, ((_, start), (end, _)) in zip(numbers, itertools.pairwise(bounds), strict=True)
    }


def _numbered_starts(blob: str, *, mid_line: bool) -> list[tuple[int, int, str]]:
    """(marker start, text start, key) of each entry start.

    Numbers only ever go up, and labels keep the first one's form: after "[19]", a line opening "29. Curran
    Associates" is that entry's volume, not entry 29.
    """
    starts: list[tuple[int, int, str]] = []
    bracketed = True
    for match in _NUMBERED_START.finditer(blob):
        number = int(match.group(1) or match.group(2))
        if not starts:
            if match.start() == 0:
                starts.append((match.start(), match.end(), str(number)))
                bracketed = match.group(1) is not None
            continue
        if (match.group(1) is not None) != bracketed:
            continue
        last = int(starts[-1][2])
        at_line_start = blob[match.start() - 1] == "\n"
        after_entry = match.group(1) is not None or blob[: match.start()].rstrip()[-1:] in ".)]"
        # run together, a bracketed label may follow one OCR misread ("[8]" for "[2]"): entry 3 still starts
        # after entry 1, and the entry before it is split at its author lists (`_unlabelled_entries`)
        step = number - last in (1, 2) if match.group(1) is not None else number == last + 1
        if (at_line_start and number > last) or (mid_line and step and after_entry):
            starts.append((match.start(), match.end(), str(number)))
    return starts


def _author_year_entries(texts: list[str]) -> dict[str, BibEntry]:
    """One entry per paragraph or line that starts like an author list; other lines continue the entry."""
    entries: list[str] = []
    for text in texts:
        for position, line in enumerate(text.splitlines()):
            line = line.strip()
            if not line:
                continue
            # a paragraph starts an entry unless it plainly continues one (a PDF line cut mid-entry)
            starts_entry = bool(_AUTHOR_ENTRY_START.match(line)) or (position == 0 and not line[0].islower())
            if starts_entry or not entries:
                entries.append(line)
            else:
                entries[-1] = f"{entries[-1]} {line}"
    return _keyed(entries)


def _keyed(entries: list[str]) -> dict[str, BibEntry]:
    """Author-year entries by key: surname + year (`author_year_key`), their place where none is read."""
    bibliography: dict[str, BibEntry] = {}
    for index, entry in enumerate(entries, start=1):
        key = _unique_key(_entry_key(entry) or str(index), bibliography)
        bibliography[key] = BibEntry(key=key, text=" ".join(entry.split()))
    return bibliography


def _entry_key(entry: str) -> str:
    surname = _ENTRY_SURNAME.match(entry)
    year = _ENTRY_YEAR.search(entry)
    if surname is None or not _fold(surname.group(1)):
        return ""
    return author_year_key(surname.group(1), year.group(1) if year else "")


def _unique_key(key: str, taken: dict[str, BibEntry]) -> str:
    if key not in taken:
        return key
    for letter in "bcdefghijklmnopqrstuvwxyz":
        if f"{key}{letter}" not in taken:
            return f"{key}{letter}"
    return f"{key}-{len(taken)}"


class _Resolver:
    """Resolves marker keys against a bibliography (exact key, or surname + year in the entry text)."""

    def __init__(self, bibliography: dict[str, BibEntry]) -> None:
        self.bibliography = bibliography
        self.folded = [(key, _fold(entry.text[:80]), entry.text) for key, entry in bibliography.items()]
        # the surnames of each entry's first author ("Elad Amrani, Rami Ben-Ari, ..." -> amrani; "Smith, J."
        # -> smith): entries that give first names first start with a first name
        self.first_author = {key: _first_author_words(entry.text) for key, entry in bibliography.items()}

    def resolve(self, key: str, kind: str) -> str | None:
        if key in self.bibliography:
            return key
        if kind != "author_year":
            return None
        match = re.fullmatch(r"([a-z]+)((?:19|20)\d{2})([a-z]?)", key)
        if match is None:
            return None
        surname, year, letter = match.groups()
        candidates = [k for k, folded, text in self.folded if folded.startswith(surname) and year in text]
        if not candidates:
            candidates = [k for k, _, text in self.folded if surname in self.first_author[k] and year in text]
        exact = [k for k in candidates if f"{year}{letter}" in self.bibliography[k].text] if letter else []
        if letter and not exact and len(candidates) > 1:
            # the list prints the year without its letter (ABNT's "ARAUJO, L. C. ... 2015."): "2015c" is the
            # third of the author's entries of that year, in the list's order
            exact = candidates[ord(letter) - ord("a") : ord(letter) - ord("a") + 1]
        chosen = exact or candidates
        return chosen[0] if chosen else None
