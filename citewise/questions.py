"""What a question asks: the kind of answer it wants, its terms, and its parts. Deterministic, no model.

Local mode has no model to read a question, so it reads the form: a "when" wants a date, a "how many" or
"how deep" a number, a "who" a name. A sentence that has what is asked and the question's terms answers it;
one that only shares its topic does not. A question with parts ("when did it open, and what did it cost?")
is split so each part can be checked on its own.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from citewise.text import content_words

MAX_QUESTION_CHARS = 10_000
"""A longer text is a document to ingest, not a question (it would also crowd every prompt)."""


class BadQuestion(ValueError):
    """A question citewise cannot take: empty, too long, or not text."""


def check_question(text: str) -> str:
    """The question without surrounding whitespace.

    Raises:
        BadQuestion: it is empty, holds bytes that are not UTF-8 characters (a terminal in another
            encoding), control characters, or more than MAX_QUESTION_CHARS characters; the message says which.
    """
    question = text.strip()
    if not question:
        raise BadQuestion("the question is empty")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in question):  # what Python makes of bytes that are not UTF-8
        raise BadQuestion(
            "the question is not valid UTF-8 text (it holds bytes that are not characters): retype it, or "
            "check the terminal's encoding"
        )
    controls = sorted(
        {f"U+{ord(c):04X}" for c in question if unicodedata.category(c) == "Cc" and c not in "\t\n\r"}
    )
    if controls:
        raise BadQuestion(f"the question holds control characters ({', '.join(controls)}): remove them")
    if len(question) > MAX_QUESTION_CHARS:
        raise BadQuestion(
            f"the question is {len(question):,} characters long, at most {MAX_QUESTION_CHARS:,} are taken: "
            "ask about one thing, or put the text in a document and ingest it"
        )
    return question


YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})s?\b")
MONTH = re.compile(
    r"\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(tember)?|oct(ober)?|"
    r"nov(ember)?|dec(ember)?|century|decade)\b",
    re.I,
)
NUMBER = re.compile(
    r"\b\d[\d,.]*\b|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|"
    r"fifty|hundred|thousand|million|billion|dozen|once|twice|thrice)\b|\b\w+-time\b",
    re.I,
)
NAME = re.compile(r"\b[A-Z][a-z\u00c0-\u024f'\-]+(?:\s+(?:[A-Z][a-z\u00c0-\u024f'\-]+|of|de|von|van|the))*")
FINDING = re.compile(
    r"\b(results? (indicate|show|suggest|imply)|we (find|found|conclude|show|rule out)|our (results|findings|"
    r"observations|data)|in summary|indicat(e|es|ing) that|suggest(s|ing)? that|reveal(s|ed)?|rules? out|"
    r"ruled out|consistent with|demonstrat(e|es|ed) that|no evidence (of|for)|(is|are) (likely|unlikely))\b",
    re.I,
)
"""A sentence that states a finding, not a method ("our results indicate", "we rule out")."""
REFERENCE = re.compile(
    r"^(it|its|it's|this|these|that|those|they|their|them|he|his|him|she|her|hers|such|there|both|"
    r"the latter|the former)\b",
    re.I,
)
PART_BREAK = re.compile(
    r"(?:,\s*|\s+)(?:and|but)\s+(?=(?:what|when|where|who|whom|which|why|how|is|are|was|were|did|does|do)\b)"
    r"|;\s*|\?\s+(?=\S)",
    re.I,
)

KINDS: list[tuple[str, re.Pattern[str]]] = [
    (
        "date",
        re.compile(r"^\s*(when|since when)\b|\b(what|which) (year|date|month|day|century|decade)\b", re.I),
    ),
    (
        "number",
        re.compile(
            r"\b(how (many|much|deep|long|tall|high|old|far|large|big|wide|heavy|fast|often|hot|cold)"
            r"|what (is|was|are|were) the ([\w\-]+ ){0,2}(number|population|size|depth|height|length|age"
            r"|area|distance|mass|temperature|amount|cost|price))\b",
            re.I,
        ),
    ),
    ("person", re.compile(r"^\s*(who|whom|whose)\b", re.I)),
    ("place", re.compile(r"^\s*(where|in (what|which) (country|city|state|town|place|region))\b", re.I)),
    (
        "finding",
        re.compile(
            r"^\s*what (do|does|did) .{0,100}\b(reveal|show|find|indicate|suggest|tell us|conclude"
            r"|demonstrate)"
            r"|^\s*what (are|were|is|was) the (main )?(results?|findings?|conclusions?)\b",
            re.I,
        ),
    ),
    ("choice", re.compile(r"\b(which|what)\b.*\b(or)\b", re.I)),
    ("yesno", re.compile(r"^\s*(is|are|was|were|did|does|do|can|could|has|have|had)\b", re.I)),
]
"""Answer kinds by question form, first match wins; anything else is "description"."""


@dataclass(frozen=True)
class Question:
    """One question (or one part of it) as local mode reads it."""

    text: str
    kind: str
    """date, number, person, place, finding, choice, yesno or description."""
    terms: frozenset[str]
    """Its content words, by stem."""
    names: frozenset[str]
    """The capitalised names it mentions (an answer adds a name it does not mention)."""
    key_terms: frozenset[str] = frozenset()
    """The stems of its identifiers: capitalised words and words with digits (GJ 1132b, Baikal, 1999)."""

    def coverage(self, terms: frozenset[str] | set[str]) -> float:
        """Share of the question's terms among `terms`, identifiers counting KEY_WEIGHT times."""
        total = len(self.terms) + (KEY_WEIGHT - 1) * len(self.key_terms)
        found = len(terms & self.terms) + (KEY_WEIGHT - 1) * len(terms & self.key_terms)
        return found / total if total else 0.0


KEY_WEIGHT = 3
"""An identifier of the question (a name, a number, GJ 1132b) counts this many times its other words."""
IDENTIFIER = re.compile(r"\b(?:[A-Z][\w\-']*|\w*\d\w*)\b")


def stem(word: str) -> str:
    """A crude stem: the first six letters (atmosphere / atmospheric, closed / closing)."""
    return word.lower()[:6]


def stems(text: str) -> set[str]:
    """The stems of a text's content words."""
    return {stem(w) for w in content_words(text)}


def names(text: str) -> set[str]:
    """Capitalised names in a text, a sentence's first word only when a name follows it."""
    found = set()
    for match in NAME.finditer(text):
        name = match.group(0)
        if match.start() == 0 and " " not in name:
            continue
        found.add(name.lower())
    return found


def read(question: str) -> Question:
    """The question's answer kind, terms and names."""
    kind = next((name for name, pattern in KINDS if pattern.search(question)), "description")
    terms = frozenset(stems(question))
    first = question.split()[0] if question.split() else ""
    keys = {stem(w) for w in IDENTIFIER.findall(question) if w != first} & terms
    return Question(question, kind, terms, frozenset(names(question)), frozenset(keys))


def parts(question: str) -> list[Question]:
    """The question's separately answerable parts (one part when it has no second wh-question)."""
    pieces = [p.strip(" ,;?") for p in PART_BREAK.split(question) if p and p.strip(" ,;?")]
    if len(pieces) < 2:
        return [read(question)]
    return [read(p) for p in pieces]


FOLLOW_UP = re.compile(
    r"\b(it|its|it's|they|them|their|theirs|this|that|these|those|he|she|his|her|there|such|same|former|latter)\b"
    r"|^\s*(and|but|also|what about|how about|why|so)\b",
    re.IGNORECASE,
)
"""A question that leans on the one before it: a pronoun, or a leading "and" / "what about"."""


def standalone(history: Sequence[str], question: str) -> str:
    """Without a model: a follow-up joins the question before it (what search and scoring read)."""
    if history and FOLLOW_UP.search(question):
        return f"{history[-1]} {question}"
    return question


def follow_up(earlier: str, question: str) -> Question:
    """A follow-up as its answer is chosen: the earlier question's words for context, its own for the point.

    Its own words count as identifiers (a sentence that has them is what was asked; one with only the
    earlier question's words repeats the earlier answer's topic), and its kind is its own, or the earlier
    question's when it has none ("And GJ 1132b?" after "What does ... reveal about ...?" wants a finding).
    """
    own, before = read(question), read(earlier)
    return Question(
        f"{earlier} {question}",
        own.kind if own.kind != "description" else before.kind,
        own.terms | before.terms,
        own.names | before.names,
        own.terms | own.key_terms,
    )


def has_kind(sentence: str, question: Question) -> bool:
    """Whether a sentence holds the kind of thing the question asks for (a date, a number, a new name)."""
    if question.kind == "date":
        return bool(YEAR.search(sentence) or MONTH.search(sentence))
    if question.kind == "number":
        return bool(NUMBER.search(sentence))
    if question.kind in ("person", "place", "choice"):
        return bool(names(sentence) - question.names)
    if question.kind == "finding":
        return FINDING.search(sentence) is not None
    return True


def refers_back(sentence: str) -> bool:
    """Whether a sentence opens with a pronoun or a reference that needs the sentence before it."""
    return REFERENCE.match(sentence.strip()) is not None


REPORT_FORMS: list[tuple[str, re.Pattern[str]]] = [
    (
        "a request for a report",
        re.compile(r"\b(write|give|make|prepare|draft)\b.{0,30}\b(report|review|survey)\b|^report\b", re.I),
    ),
    (
        "a comparison",
        re.compile(
            r"\b(compare|comparison|versus|vs\.?|differences? between|differ"
            r"|contrast(s|ing)? (\w+ ){1,6}(with|and))\b",
            re.I,
        ),
    ),
    (
        "a request for an overview",
        re.compile(r"\b(overview|survey|summari[sz]e|state of the art|landscape|review of)\b", re.I),
    ),
    (
        "a pros-and-cons question",
        re.compile(
            r"\b(pros and cons|advantages and disadvantages|strengths and weaknesses|trade-?offs?)\b", re.I
        ),
    ),
    (
        "a history or timeline question",
        # "the development of breast cancer" or "T cell development" is a topic, not a request for a history
        re.compile(
            r"\b(histor(y|ies) of|timeline|over the years|(recent|key|major|latest) developments"
            r"|developments in"
            r"|how (has|have|did) .{1,60}\b(evolve|evolved|develop|developed|change|changed)"
            r"|evolution of .{1,60}\b(over|since|from))\b",
            re.I,
        ),
    ),
]
"""Question forms that ask for a report (a synthesis across documents), each with its name."""


def report_form(question: str) -> str | None:
    """The name of the report form the question takes ("a comparison", ...), or None for a direct question."""
    return next((name for name, pattern in REPORT_FORMS if pattern.search(question)), None)
