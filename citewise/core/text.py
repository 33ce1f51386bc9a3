"""Text helpers shared by the steps: messages, sentences, content words and their overlap."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from langchain_core.messages import AnyMessage, HumanMessage

from citewise.index.chunking import split_sentences
from citewise.index.tables import is_markdown_table, read_markdown


def last_human(messages: Sequence[AnyMessage]) -> str:
    """The text of the last human message ("" when there is none)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage) or getattr(message, "type", "") == "human":
            return message_text(message)
    return ""


def message_text(message: AnyMessage) -> str:
    """A message's text, whatever the content shape."""
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") for part in content if isinstance(part, dict))


def user_turns(messages: Sequence[AnyMessage]) -> tuple[list[str], list[str]]:
    """The user's questions in order, and the reply each got ("" for one not answered yet)."""
    asked: list[str] = []
    replies: list[str] = []
    for message in messages:
        if isinstance(message, HumanMessage) or message.type == "human":
            asked.append(message_text(message).strip())
            replies.append("")
        elif message.type == "ai" and asked:
            replies[-1] = f"{replies[-1]} {message_text(message)}".strip()
    return asked, replies


def sentences(text: str) -> list[str]:
    """The sentences of a text (blingfire, as the chunker splits them).

    A table's (`citewise.index.tables`) are its caption and its rows, each row said with its header:
    "Variety: Copper Crown; Protein (%): 13.1", so that a row quoted alone still says what its numbers are.
    """
    if "\n|" in text and is_markdown_table(text):
        return table_sentences(text)
    flat = " ".join(text.split())
    return [flat[s:e] for s, e in split_sentences(flat, max_chars=10_000)]


def table_sentences(text: str) -> list[str]:
    """A Markdown table's caption and rows as sentences (see `sentences`)."""
    caption, rows = read_markdown(text)
    said = [row_sentence(rows[0], row) for row in rows[1:]]
    return [*([caption] if caption else []), *(row for row in said if row)]


def row_sentence(header: list[str], row: list[str]) -> str:
    """A table row said with its header: "Variety: Copper Crown; Protein (%): 13.1." ("" for an empty row)."""
    parts = [f"{name}: {cell}" if name else cell for name, cell in zip(header, row, strict=False) if cell]
    return "; ".join(parts) + "." if parts else ""


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-']+")
STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it "
    "its "
    "me my not of on or our she so than that the their them then there these they this those to was we were "
    "what when where which who whom why will with would you your about also any more most other some such "
    "only own same very just should now after before between during over under again further once here all "
    "both each few many much no nor too out up down off above below tell show give explain describe".split()
)


def content_words(text: str) -> list[str]:
    """Lower-cased words of a text without stopwords (order kept, repeats kept)."""
    return [
        w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in STOPWORDS and len(w) > 1
    ]


def overlap(claim: str, source: str) -> float:
    """Share of the claim's distinct content words found in the source (0..1)."""
    claim_words = set(content_words(claim))
    if not claim_words:
        return 1.0
    return len(claim_words & set(content_words(source))) / len(claim_words)


_FIGURE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")


def figures(text: str) -> set[str]:
    """The numbers a text states in digits, thousands' commas left out ("18,737 s" -> {"18737"}; "5.8")."""
    found = set()
    for match in _FIGURE.finditer(text):
        number = match.group(0).rstrip(".,")
        found.add(re.sub(r",(?=\d{3}\b)", "", number))
    return found


def states_figures_of(claim: str, source: str) -> bool:
    """Whether every number the claim states in digits stands in the source as it is ("5" is not "5.8")."""
    return figures(claim) <= figures(source)


QUOTED = re.compile(r"[\"\u201c\u00ab]\s*([^\"\u201c\u201d\u00ab\u00bb]{3,}?)\s*[\"\u201d\u00bb]")
"""A phrase in quotation marks: words a sentence says the source uses as they stand."""


def quotes_of(claim: str, source: str) -> bool:
    """Whether every phrase of two words or more the claim puts in quotation marks stands in the source.

    SmolLM2 wrote 'They are also robust to fluctuating high energy charged particles, which they refer to as
    "stream of light"': most of its words are the line's, the quoted ones nowhere in the paper.
    """
    said = " ".join(re.findall(r"\w+", source.lower()))
    for phrase in QUOTED.findall(claim):
        words = re.findall(r"\w+", phrase.lower())
        if len(words) >= 2 and f" {' '.join(words)} " not in f" {said} ":
            return False
    return True


NEGATION = re.compile(
    r"\b(?:not|no|never|none|nor|neither|nothing|cannot|without|forbids?|forbidden|\w+n[\'\u2019]t)\b", re.I
)
"""Words that deny what follows them: "no", "never", "without", "forbid", "isn't"."""
CLAUSE_END = re.compile(r"[,;:.!?()]|\b(?:but|while|whereas|although|though|which|that)\b", re.I)
"""Where a denial's reach ends."""


def denied(text: str) -> set[str]:
    """The content words a denial reaches: from each denying word to the end of its clause."""
    words: set[str] = set()
    for match in NEGATION.finditer(text):
        rest = text[match.end() :]
        stop = CLAUSE_END.search(rest)
        words.update(content_words(rest[: stop.start()] if stop else rest))
    return words


def keeps_polarity(claim: str, source: str) -> bool:
    """Whether the claim denies what the source denies of the words they share, and only that.

    SmolLM2 wrote "all physical states except for massless scalars exist" from "the Virasoro constraints
    forbid any excited physical states except for massless scalars": most of its words are the line's, its
    meaning the opposite. A claim that drops the source's denial of their shared words, or denies what the
    source asserts, is not supported by it; a denial elsewhere in the line ("... without causing the disease")
    does not count.
    """
    shared = set(content_words(claim)) & set(content_words(source))
    return bool(denied(claim) & shared) == bool(denied(source) & shared)


ENDLESS = frozenset("a an the of to for and or in on with from by at as is are was were".split())
"""Words no sentence ends in."""


def opens_mid(text: str) -> bool:
    """Whether a sentence opens with a lower-case word that joins it to words before ("and the ...")."""
    words = text.split()
    return bool(words) and words[0] in STOPWORDS


def stops_mid(text: str) -> bool:
    """Whether a sentence stops at a comma or a word no sentence ends in ("... width is,", "... by")."""
    words = text.rstrip().rstrip(".").split()
    return bool(words) and (words[-1].endswith(",") or words[-1].lower() in ENDLESS)


def ordered_unique(items: Iterable[str]) -> list[str]:
    """Items without repeats, first occurrence kept."""
    return list(dict.fromkeys(items))
