"""The structure of an answer (headings, lists, length, how it opens and closes), for learning outlines."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass


logger = logging.getLogger(__name__)

# the structure of an answer ---------------------------------------------------------------------------------

_ATX_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_BOLD_HEADING = re.compile(r"^\s{0,3}(\*\*|__)(.+?)\1\s*:?\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+\S")
_FENCE = re.compile(r"^\s*(```|~~~)")
_WORD = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*")
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")
_FILLER_OPENING = re.compile(
    r"^(so|well|okay|ok|hmm|honestly|basically|great question|good question|interesting|it depends|"
    r"this is (a|an) (great|good|interesting|complex|difficult|tricky|big)|there are (many|lots|a lot)|"
    r"let me|let's|i think|i believe|i guess|in this (answer|post|article)|first of all|before (we|i)|"
    r"as (we|you) (all )?know)\b",
    re.IGNORECASE,
)
_ANSWER_HEADING = re.compile(r"\b(short answer|answer|tl;?dr|in short|in brief|bottom line)\b", re.IGNORECASE)
_CLOSING_HEADING = re.compile(
    r"\b(summary|summing up|conclusions?|in short|bottom line|take-?aways?|tl;?dr|verdict|"
    r"recommendations?)\b",
    re.IGNORECASE,
)
_CLOSING_PARAGRAPH = re.compile(
    r"^(in (summary|short|conclusion|sum|brief)|overall|to (sum up|summari[sz]e|conclude)|all in all|"
    r"the bottom line|taken together)\b",
    re.IGNORECASE,
)
DIRECT_OPENING_WORDS = 40
"""The longest first sentence still counted as a direct answer."""


def answer_structure(answer: str) -> dict[str, Any]:
    """Describe a markdown answer's structure (headings, paragraphs, list items, words, opening, closing).

    Headings are `#`-style lines and lines that are bold text alone (e.g. `**Background:**`), in order and
    without their markup. `direct_answer`: the first prose (the answer's start, or right under a "Short
    answer" heading) is a sentence of at most 40 words that does not open with filler ("So", "Well", "It
    depends", "There are many ..."). `conclusion`: the last heading is a summary or conclusion, or the answer
    ends with a paragraph opening "In summary", "Overall", "To conclude" and the like.
    """
    blocks = _blocks(answer)
    headings = [text for kind, text in blocks if kind == "heading"]
    return {
        "headings": headings,
        "paragraphs": sum(1 for kind, _ in blocks if kind == "paragraph"),
        "list_items": sum(1 for kind, _ in blocks if kind == "item"),
        "words": word_count(answer),
        "direct_answer": _opens_directly(blocks),
        "conclusion": _closes_with_summary(blocks),
    }


def _blocks(answer: str) -> list[tuple[str, str]]:
    """The answer as (kind, text) blocks in order: heading, paragraph, item, other (tables, code)."""
    blocks: list[tuple[str, str]] = []
    in_code = False
    prose: list[str] = []

    def close_paragraph() -> None:
        if prose:
            blocks.append(("paragraph", " ".join(prose)))
            prose.clear()

    for line in answer.splitlines():
        if _FENCE.match(line):
            close_paragraph()
            in_code = not in_code
            blocks.append(("other", line))
            continue
        kind = "other" if in_code else _line_kind(line)
        if kind == "paragraph":
            prose.append(line.strip())
            continue
        close_paragraph()
        if kind == "heading":
            blocks.append((kind, _heading_text(line)))
        elif kind in ("item", "other"):
            blocks.append((kind, line.strip()))
    close_paragraph()
    return blocks


def _line_kind(line: str) -> str:
    """heading, item, other (tables, rules), blank or paragraph."""
    stripped = line.strip()
    if not stripped:
        return "blank"
    if _ATX_HEADING.match(line) or (
        _BOLD_HEADING.match(line) and len(_WORD.findall(stripped)) <= 10 and not stripped.endswith(".**")
    ):
        return "heading"
    if _LIST_ITEM.match(line):
        return "item"
    if stripped.startswith("|") or set(stripped) <= set("-*_= "):
        return "other"
    return "paragraph"


def _heading_text(line: str) -> str:
    """A heading line without its markup, trailing colon or numbering."""
    found = _ATX_HEADING.match(line) or _BOLD_HEADING.match(line)
    text = found.group(found.lastindex or 1) if found else line
    text = re.sub(r"[*_`]+", "", text).strip().rstrip(":").strip()
    return re.sub(r"^(\d+(\.\d+)*[.)]?|[IVX]+\.)\s+", "", text)


def _plain(answer: str) -> str:
    """Markdown without the markup characters that are not words."""
    return re.sub(r"[#*_`|>]+", " ", answer)


def word_count(text: str) -> int:
    """Words of a markdown text (markup characters are not words)."""
    return len(_WORD.findall(_plain(text)))


def _first_sentence(text: str) -> str:
    """Text up to its first sentence end."""
    end = _SENTENCE_END.search(text)
    return text[: end.end()] if end else text


def _opens_directly(blocks: list[tuple[str, str]]) -> bool:
    """True when the first prose (before any list, or right under an "answer" heading) is a short answer."""
    for position, (kind, text) in enumerate(blocks):
        if kind == "paragraph":
            sentence = _first_sentence(text)
            words = word_count(sentence)
            return 0 < words <= DIRECT_OPENING_WORDS and not _FILLER_OPENING.match(sentence.strip())
        if kind == "heading" and (position > 0 or not _ANSWER_HEADING.search(text)):
            return False
        if kind == "item":
            return False
    return False


def _closes_with_summary(blocks: list[tuple[str, str]]) -> bool:
    """True when the last section is a summary-like heading or the last paragraph opens like a summary."""
    headings = [text for kind, text in blocks if kind == "heading"]
    if headings and _CLOSING_HEADING.search(headings[-1]):
        return True
    paragraphs = [text for kind, text in blocks if kind == "paragraph"]
    last_content = next((kind for kind, _ in reversed(blocks) if kind != "other"), None)
    return last_content == "paragraph" and bool(_CLOSING_PARAGRAPH.match(paragraphs[-1]))
