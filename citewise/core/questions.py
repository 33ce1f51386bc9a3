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
from typing import Literal

from citewise.core.text import STOPWORDS, content_words, sentences

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
NUMERAL = re.compile(r"\b\d[\d,.]*\b")
"""A number in digits: "the 8.2 meter Subaru telescope", "version 3" name one; "three different instruments"
counts them and names none."""
NUMBER = re.compile(
    NUMERAL.pattern + r"|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
    r"forty|fifty|hundred|thousand|million|billion|dozen|once|twice|thrice)\b|\b\w+-time\b",
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
    r"|;\s*|\?\s+(?=[^\s(])",
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
    (
        "named",
        re.compile(
            r"^\s*(which|what)\s+(?!(is|are|was|were|do|does|did|has|have|had|can|will|happens?|happened)\b)\w",
            re.I,
        ),
    ),
    ("yesno", re.compile(r"^\s*(is|are|was|were|did|does|do|can|could|has|have|had)\b", re.I)),
]
"""Answer kinds by question form, first match wins; anything else is "description"."""


@dataclass(frozen=True)
class Question:
    """One question (or one part of it) as local mode reads it."""

    text: str
    kind: str
    """date, number, person, place, finding, choice, named, yesno or description."""
    terms: frozenset[str]
    """Its content words, by stem."""
    names: frozenset[str]
    """The capitalised names it mentions (an answer adds a name it does not mention)."""
    key_terms: frozenset[str] = frozenset()
    """The stems of its identifiers: capitalised words and words with digits (GJ 1132b, Baikal, 1999)."""
    asked: str = ""
    """A "which X" / "what X" question's X, by stem ("Which telescopes were used" -> "telesc"): an answer
    names one ("the 8.2 meter Subaru telescope"), a sentence about X in general does not. A "how many X" /
    "how large is the X" question's X (`COUNTED`): an answer gives a number next to it."""
    superlative: bool = False
    """It asks for the most or least of something ("the hardest to detect"): answered by a sentence that
    says which is most or least, in whatever words ("the most inaccurate", "the weakest")."""

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


def noun_stem(word: str) -> str:
    """A noun's stem without its plural -s ("epochs" and "epoch" alike; six letters keep "epochs")."""
    word = word.lower().strip(".,;:")
    return stem(word[:-1] if word.endswith("s") and not word.endswith("ss") else word)


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


ASKED = re.compile(
    r"^\s*(?:which|what)\s+(?:(?:kind|kinds|type|types|sort) of\s+)?((?:[\w\-]+\s+){0,3}?)"
    r"(?=(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should|of|in|for|to)\b)",
    re.I,
)
"""The noun phrase a "which" / "what" question asks for, up to its verb: "which mutation operators were"."""
SUBJECT_ASKED = re.compile(r"^\s*(?i:which|what)\s+([a-z][\w\-]*\s+)(?=[a-z]+(?:ed|s)\b)")
"""A question whose asked thing is its subject, its verb right after it: "Which instruments observed ..."."""
COUNTED = re.compile(
    r"\bhow\s+(?:many|much)\s+((?:[\w\-]+\s+){0,3}?)"
    r"(?=(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|of|in|for|to|per|on|at)\b)"
    r"|\bhow\s+(?:large|long|far|big|wide|deep|high|tall|heavy|fast|strong)\s+"
    r"(?:(?:an?\s+)((?:[\w\-]+\s+){0,2}?)(?=(?:did|does|do|was|were|is|are|will|would)\b)"
    r"|(?:is|are|was|were)\s+(?:the|its|their|his|her)\s+((?:[\w\-+]+\s+){0,2}[\w\-+]+))",
    re.I,
)
"""What a "how many" / "how large" question measures: "How many companies did ...", "How large are the
Zeeman splittings ...", "How long an observation did ...": an answer gives the number with it ("3,343
companies", "Zeeman splittings of up to 120 MHz"), not another number of the passage."""
MEASURED_NEAR = 4
"""Words between a number and the thing measured for the number to be its value."""
SUPERLATIVE = re.compile(
    r"\b(most|least|best|worst|\w{2,}iest|(?:high|low|larg|small|great|hard|weak|strong|fast|slow|long|short"
    r"|old|young|new|clos|near|far|tall|deep|wid|bigg|cheap|rich|poor|dens|hott|cold|bright|faint|dark|light"
    r"|heavi|thinn|thick|earl|lat|few|tough|simpl|safe|smart|quick)est)\b",
    re.I,
)
"""Words that pick the most or least of something (a short list of -est words: 'interest' is none)."""
OUTDOING = re.compile(
    r"\b(?:outperform\w*|surpass\w*|(?:better|higher|more) than (?:all|any|every|each|the other)"
    r"|underperform\w*|(?:worse|lower) than (?:all|any|every|each|the other))\b",
    re.I,
)
"""Saying which is best or worst without a superlative ("Chemformer outperforms the other models")."""
UPWARD = frozenset({"best", "highest", "largest", "greatest", "biggest", "strongest", "outperform",
                    "surpass", "better", "higher", "more"})  # fmt: skip
DOWNWARD = frozenset({"worst", "lowest", "smallest", "weakest", "fewest", "underperform", "worse", "lower"})
"""The two directions a question's "best" / "lowest" can take; other superlatives ("hardest", "most
inaccurate") have no direction read here."""


def says_most(sentence: str, question: str) -> bool:
    """Whether a sentence says which is most or least, in the direction the question asks when it has one.

    "Which had the best top-1 accuracy?" is answered by "Chemformer outperforms the other models", not by
    "Chemformer delivers the lowest accuracy in the top-50" (a superlative, the other way).
    """
    said = [m.group(0).lower() for m in (*SUPERLATIVE.finditer(sentence), *OUTDOING.finditer(sentence))]
    if not said:
        return False
    asked = {_direction(m.group(0)) for m in SUPERLATIVE.finditer(question)} - {""}
    return len(asked) != 1 or any(_direction(word) in asked | {""} for word in said)


ROOTS = ("outperform", "underperform", "surpass")


def _direction(words: str) -> str:
    first = words.split()[0]
    first = next((root for root in ROOTS if first.startswith(root)), first)
    return "up" if first in UPWARD else "down" if first in DOWNWARD else ""


def read(question: str) -> Question:
    """The question's answer kind, terms and names."""
    kind = next((name for name, pattern in KINDS if pattern.search(question)), "description")
    terms = frozenset(stems(question))
    first = question.split()[0] if question.split() else ""
    keys = {stem(w) for w in IDENTIFIER.findall(question) if w != first} & terms
    phrase = (ASKED.match(question) or SUBJECT_ASKED.match(question)) if kind == "named" else None
    head = [w for w in phrase.group(1).split() if w.lower() not in STOPWORDS] if phrase else []
    asked = stem(head[-1]) if head and not head[-1][0].isupper() else ""
    counted = COUNTED.search(question) if kind == "number" else None
    if counted:  # the thing measured, by stem (not a name: "How many transits of GJ 486b")
        many, *others = counted.groups()
        measured = many or next((g for g in others if g), "")
        words = [w for w in measured.split() if w.lower() not in STOPWORDS]
        words = [w for w in words if not w[0].isupper()]  # "How many SYSREM iterations": the iterations
        plural = [w for w in words if w.endswith("s") and not w.endswith("ss")]  # "people live": people
        mass = many and not plural and re.search(r"\bhow\s+much\b", question, re.I)  # "compute time": time
        head = ((plural or words)[:1] if many and not mass else words[-1:]) or [""]  # "the orbital period"
        asked = noun_stem(head[0]) if head[0] else ""
    return Question(
        question,
        kind if asked or kind != "named" else "description",
        terms,
        frozenset(names(question)),
        frozenset(keys),
        asked,
        SUPERLATIVE.search(question) is not None,
    )


def parts(question: str) -> list[Question]:
    """The question's separately answerable parts (one part when it has no second wh-question)."""
    pieces = [p.strip(" ,;?") for p in PART_BREAK.split(question) if p and p.strip(" ,;?")]
    if len(pieces) < 2:
        return [read(question)]
    return [read(p) for p in pieces]


REQUEST = re.compile(
    r"^\s*(?:please\s+)?(?:"
    r"(?:give|write|provide|prepare|make|draft|produce)(?:\s+me)?\s+(?:an?\s+|the\s+)?(?:short\s+|brief\s+)?"
    r"(?:overview|report|summary|account|review|survey|comparison)\s+(?:of|on|about)\s+"
    r"|(?:explain|describe|summari[sz]e|outline|discuss|compare|contrast)\s+)",
    re.IGNORECASE,
)
"""How a request for a report opens ("Give an overview of", "Compare"): no part of what is asked."""
COMPARED = re.compile(
    r"\b(?:the\s+)?(?P<a>[\w.+\-]+)\s+(?:and|with|versus|vs\.?)\s+(?:the\s+)?(?P<b>[\w.+\-]+)"
    r"\s+(?P<noun>[a-z]{2,}[^s\W]s)\b"
)
"""Two named things of one kind a comparison sets side by side: "the MNRAS and AIAA guides"."""
COMPARES = re.compile(r"\s*(?:please\s+)?(?:compare|contrast)\b", re.IGNORECASE)
WH = re.compile(r"(?:how|what|why|when|where|which|who)\b", re.IGNORECASE)


@dataclass(frozen=True)
class ReportPart:
    """A part of a report's question that a section of its own answers."""

    heading: str
    """The section's heading, a phrase a person would write: "How GJ 486b was observed", "The AIAA guide"."""
    asked: str
    """What the section searches for and answers: the part with the subject it leaves to the other parts."""
    name: str = ""
    """The one thing of a comparison the part is about ("AIAA", "elsarticle"); "" for a part of a question."""


def report_parts(question: str) -> list[ReportPart]:
    """The parts of a report's question, each for a section of its own ([] when it has fewer than two).

    "Give an overview of how GJ 486b was observed and what was found" has two: "How GJ 486b was observed" and
    "What was found" (asked of GJ 486b); "Compare how the MNRAS and AIAA guides tell authors to submit their
    papers" has one for each guide. A question of one part is planned from its evidence instead.
    """
    body = REQUEST.sub("", question.strip()).strip(" ?.!")
    compares = COMPARES.match(question) is not None
    pair = COMPARED.search(body) if compares else None
    if pair and pair.group("a") != pair.group("b"):
        noun = pair.group("noun")  # "guides" -> "guide", "classes" -> "class"
        one = noun[:-2] if re.search(r"(?:ss|ch|sh|x)es$", noun) else noun[:-1]
        found = []
        for name in (pair.group("a"), pair.group("b")):
            asked = f"{body[: pair.start()]}the {name} {one}{body[pair.end() :]}".strip()
            found.append(ReportPart(f"The {name} {one}", asked, name))
        return found
    sides = re.split(r"\s+(?:and|with|versus|vs\.?|against)\s+", body) if compares else []
    if len(sides) == 2 and all(sides) and not any(WH.match(side) for side in sides):  # "Compare X and Y"
        left, right = sides
        named = entities(right)
        shared = (
            re.match(rf"{re.escape(named[0])}\s+((?:on|in|for|at|by|over|across)\b.*)$", right)
            if named
            else None
        )
        if shared:  # what both are compared on belongs to both
            right, tail = named[0], shared.group(1)
            return [ReportPart(side[0].upper() + side[1:], f"{side} {tail}", side) for side in (left, right)]
        return [ReportPart(side[0].upper() + side[1:], side, side) for side in (left, right)]
    pieces = [p.strip(" ,;?") for p in PART_BREAK.split(body) if p and p.strip(" ,;?")]
    if len(pieces) < 2:
        return []
    subject = next((e for p in pieces for e in entities(p)), "")
    found = []
    for piece in pieces:
        asked = piece if not subject or entities(piece) else f"{piece} ({subject})"
        found.append(ReportPart(piece[0].upper() + piece[1:], asked))
    return found


FOLLOW_UP = re.compile(
    r"\b(it|its|it's|they|them|their|theirs|this|that|these|those|he|she|his|her|there|such|same|former|latter)\b"
    r"|^\s*(and|but|also|what about|how about|why|so)\b",
    re.IGNORECASE,
)
"""A question that leans on the one before it: a pronoun, or a leading "and" / "what about"."""


_NAMED_WORD = r"(?:[A-Z][\w\-'*+]*|[\w\-'*+]*\d[\w\-'*+]*|[a-z][\w\-'*+]*[A-Z][\w\-'*+]*)"
ENTITY = re.compile(
    rf"{_NAMED_WORD}(?:\s+{_NAMED_WORD})*"
    r"(?:(?<=\d)\s[a-z]\b(?!['\u2019]))?"
)
"""A run of capitalised words, words with digits or inner capitals: GJ 486b, LHS 3844 b, petitRADTRANS."""
DEMONSTRATIVE = re.compile(
    r"\b(?:[Tt]his|[Tt]hat|[Tt]hese|[Tt]hose)\s+(?!(?:the|a|an|it|its|they|we|our|there|is|was|are|were)\b)[a-z]"
)
"""'that program', 'those lines': a thing said before ('shows that the model ...' is no such thing)."""
DEMONSTRATIVE_OPENING = re.compile(r"^\s*(?:these|this|those|that|such)\s+[a-z]", re.I)
"""A sentence opening with "These models", "This method": it leans on what the sentence before says."""
PRONOUN = re.compile(r"\b(its|it|their|they|them|he|she|his|her)\b", re.I)


def entities(text: str) -> list[str]:
    """The named things a text mentions, in order: GJ 486b, RoBERTa (question and stop words left out).

    A plain capitalised word opening the text is its first word, not a name (Compare, Write).
    """
    found: list[str] = []
    for match in ENTITY.finditer(text):
        words = [w.removesuffix("'s").removesuffix("\u2019s") for w in match.group(0).split()]
        opens = not text[: match.start()].strip()
        while words and words[0].lower() in STOPWORDS:
            words.pop(0)
            opens = False
        if opens and re.fullmatch(r"[A-Z][a-z]+", words[0]):  # its first word, not a name: Compare, Write
            words.pop(0)
        if not words or (len(words) == 1 and len(words[0]) < 2):  # "the J band", "type A"
            continue
        if " ".join(words) not in found:
            found.append(" ".join(words))
    return found


@dataclass(frozen=True)
class Turn:
    """One question of a conversation read with the turns before it (no model)."""

    asked: str
    """The question as the user wrote it."""
    question: str
    """The standalone question: a follow-up with its references resolved ("What is GJ 486b's radius?"), what
    is shown, scored against and given to a model; never the question before glued to it."""
    earlier: str
    """What a follow-up was read with (the question before it, and the thread's subject); "" if it stands
    alone."""
    topic: str
    """The thread's topic after this turn: the last question that stood alone, naming the thread's subject, or
    the thing an answer named when a follow-up took it up (`answered_thing`), as "(Chemformer)"."""
    search: str = ""
    """A follow-up read with the question before it, as written (and the subject it lost): one more search
    query, since the passages that answered the question before are often the ones this one needs."""


PICKS_ONE = re.compile(r"^\s*(?:who|which one|which of them|which of these|which of those)\b", re.I)
"""A question that asks to pick one thing ("Which one had the best top-1 accuracy?" -> Chemformer, "Who
...?"): a pronoun after its answer means the thing picked. After "What dataset ...?" or "What framework does
it depend on?", "it" still most often means the thread's subject (reading it as the answer's first name
lost three turns of the sample's conversations)."""


def answered_thing(asked: str, reply: str) -> str:
    """The named thing a reply gave, when its question asked for one and named none itself ("" otherwise).

    "And its top-50 accuracy?" after "Which one had the best top-1 accuracy?" means the model the answer
    named (Chemformer); after "Which telescopes observed GJ 486b?" the same "its" means GJ 486b, which the
    question named: then the reply names nothing here. An honest no-answer names nothing either.
    """
    known = entities(asked)
    if not reply or not PICKS_ONE.match(asked) or any(_named(e) for e in known):
        return ""
    said = sentences(reply)
    return next((e for e in entities(said[0]) if _named(e) and e not in known), "") if said else ""


def _named(entity: str) -> bool:
    """A name (GJ 486b, petitRADTRANS), not an identifier of a measure ("top-1", "1998")."""
    return any(c.isupper() for c in entity)


def carry(question: str, before: Turn | None, reply: str = "") -> Turn:
    """This turn's standalone question: a follow-up read with the question before it and the thread's subject.

    A pronoun most often means what the turn before was about ("that one" after "And the home network?"), so
    a follow-up (a pronoun, "that program", a leading "and") is read with the question before it, as
    written; and the thread's subject (what the topic, the last question that stood alone, names) is added
    when that question lost it: "And its radius?" after "When was it built?" after a question on GJ 486b is
    "When was it built? (GJ 486b) And its radius?" (it got GJ 1132b's radius). A follow-up that only names
    another thing ("And GJ 1132b?", "What about SPIRou?") asks the question before it again about that
    thing, which becomes the subject. `reply` (the answer to the question before) gives the subject instead
    when that question asked for a thing and the answer named it (`answered_thing`).
    """
    if before is None or not FOLLOW_UP.search(question):
        return Turn(question, question, "", question, question)
    own, subject = entities(question), entities(before.topic)
    refers = PRONOUN.search(question) or DEMONSTRATIVE.search(question)
    if own and not refers:
        if SWITCH.match(question) and subject:  # the last question again, about another thing
            topic = before.topic.replace(subject[0], own[0], 1)
            switched = before.question.replace(subject[0], own[0])
            if switched == before.question:  # the question before does not name it: its words, for this
                return Turn(question, resolved(question, [], before.question), before.asked, topic,
                            f"{before.question} {question}")  # fmt: skip
            return Turn(question, switched, before.asked, topic, before.search.replace(subject[0], own[0]))
        if not SWITCH.match(question):
            return Turn(question, question, "", question, question)  # names its own subject: stands alone
    if own and not subject and refers_back_to(question, own[0]):
        return Turn(question, question, "", question, question)  # a new subject its own pronoun refers to
    earlier = before.asked
    missing = [name for name in subject if name not in earlier and name not in question]
    answered = answered_thing(before.asked, reply) if refers else ""
    if answered and answered not in question:  # the thing the answer named goes first
        missing = [answered, *[name for name in missing if name != answered]]
    else:
        answered = ""
    if missing:
        earlier = f"{earlier} ({', '.join(missing)})"
    topic = f"({answered})" if answered else before.topic  # as questions carry it
    names = [answered] if answered else [name for name in subject if name not in question]
    names = names or [name for name in entities(before.question) if name not in question]
    return Turn(question, resolved(question, names, before.question), earlier, topic, f"{earlier} {question}")


def refers_back_to(question: str, name: str) -> bool:
    """Whether the question's pronouns are all possessives after the name it gives (no demonstrative).

    "What does the transmission spectrum of GJ 486b reveal about its atmosphere?" means GJ 486b's atmosphere.
    Read so only when the thread names no subject the pronoun could mean instead (after a question on
    tungsten's boiling point); "What did Hubble transit data suggest about its atmosphere?" after one on
    GJ 1132b is a follow-up, and so is "For which Killing vectors does it apply?".
    """
    first = question.find(name)
    pronouns = [(match.start(), match.group().lower()) for match in PRONOUN.finditer(question)]
    return (
        first >= 0
        and bool(pronouns)
        and all(at > first and word in POSSESSIVE_WORDS for at, word in pronouns)
        and not DEMONSTRATIVE.search(question)
    )


REFERENCE_WORDS = (
    re.compile(r"\b(its|it)\b", re.I),
    re.compile(r"\b(their|they|them)\b", re.I),
    re.compile(r"\b(his|her|he|she)\b", re.I),
)
"""A thing's pronouns before a group's (most often the authors: "Which molecules did they search for in its
atmosphere?") before a person's."""
POSSESSIVE_WORDS = frozenset({"its", "their", "his", "her"})
PLURAL_WORDS = frozenset({"their", "they", "them"})


def names_group(names: Sequence[str]) -> bool:
    """Whether the first name given is a group's (a plural: "the authors", "Chemformer and LocalRetro")."""
    return bool(names) and (" and " in names[0] or bool(re.search(r"[a-z]s$", names[0])))


def resolved(question: str, names: Sequence[str], before: str) -> str:
    """A follow-up made to stand alone, never the question before glued to it.

    Its pronoun is made the subject's name ("its" -> "GJ 486b's"), or an elliptic one ("And the radius?")
    gets the name in brackets; with no name to give, or a thing the question before spoke of ("that
    instrument"), the question before's content words, in brackets, say what it is about ("What did that
    instrument measure? (telescopes observed GJ 486b)").
    """
    found = next((m for m in (p.search(question) for p in REFERENCE_WORDS) if m), None)
    if found is not None and found.group(1).lower() in PLURAL_WORDS and not names_group(names):
        # "Which of them was the hardest to detect?" after "Which mutation operators were used to train the
        # RoBERTa detector?": a group the question before spoke of, not the one thing it named ("Which of
        # RoBERTa ...", "how far apart are Ca+?"): the question before's words say what it is about
        names = []
        found = None
    if names and found:
        name, rest = names[0], [n for n in names[1:] if n not in question]
        said = f"{name}'s" if found.group(1).lower() in POSSESSIVE_WORDS else name
        question = question[: found.start()] + said + question[found.end() :]
        return f"{question} ({', '.join(rest)})" if rest else question
    if names and not DEMONSTRATIVE.search(question):  # "And the radius?": about the subject
        return f"{question} ({', '.join(names)})"
    own, earlier = set(content_words(question)), set(content_words(before))
    words = [w for w in dict.fromkeys(re.findall(r"[\w\-']+", before)) if w.lower() in earlier - own][:6]
    return f"{question} ({' '.join(words)})" if words else question


SWITCH = re.compile(r"^\s*(?:and|but|also|what about|how about)\b(?:\W+\w+){1,5}\W*$", re.I)
"""A short follow-up that names another thing: "And GJ 1132b?", "What about SPIRou?"."""


def read_turn(questions: Sequence[str], replies: Sequence[str] = ()) -> Turn:
    """The last of the user's questions read with the ones before it (and the replies they got)."""
    before = None
    for n, question in enumerate(questions):
        before = carry(question, before, replies[n - 1] if 0 < n <= len(replies) else "")
    if before is None:
        raise ValueError("no question to read")
    return before


def local_follow_up_turn(asked: Sequence[str], question: str, replies: Sequence[str] = ()) -> Turn | None:
    """The last turn when `question` is it read as a follow-up without a model, else None.

    None: the question stands alone, or a model condensed it into another question.
    """
    if len(asked) < 2:
        return None
    turn = read_turn(asked, replies)
    return turn if turn.earlier and turn.question == question else None


def own_search(turn: Turn) -> str:
    """A follow-up's own words with the thread's subject ("" for a question that stands alone).

    Its standalone question is read with the question before it, which pulls a search back to the earlier
    answer's passages; searched as well in its own words ("Which hash function does it use? DYST"), the
    passage about what is new in it is found.
    """
    if not turn.earlier or not turn.search.endswith(turn.asked):  # stands alone, or a switch asked anew
        return ""
    subject = [name for name in entities(turn.topic) if name not in turn.asked]
    return " ".join([turn.asked, *subject[:2]])


def standalone(history: Sequence[str], question: str) -> str:
    """Without a model: a follow-up read with the questions before it (what search and scoring read)."""
    return read_turn([*history, question]).question


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


_DURATION = (
    r"\b\d[\d.,]*\s*(?:-\s*)?(?:ms|s|sec|secs|seconds?|min|mins|minutes?|h|hr|hrs|hours?|days?|weeks?|months?|"
    r"years?|yr|Gyr|Myr|nights?|orbits?)\b|\b(?:long|duration|lasted|lasts)\b|\b\d{4}\s*[-\u2013]\s*\d{2,4}\b"
)
SPAN = re.compile(
    r"\b(\d[\d.,]*)\s*(?:ms|sec|secs|seconds?|min|mins|minutes?|hrs?|hours?|days?|weeks?|months?|years?)\b",
    re.I,
)
"""A span of time in digits ("600 hours", "18737 sec"): the value of a question on how much time."""
FOCUS = (
    (re.compile(r"^\W*(?:and\s+)?how\s+old\b", re.I),
     re.compile(r"\b(?:ages?|aged|old|older|young|younger|years?|yr|Gyr|Myr|billion|million|born|birth)\b",
                re.I)),
    (re.compile(r"^\W*(?:and\s+)?how\s+long\s+(?:did|does|do|will|would|has|have|had)\b", re.I),
     re.compile(_DURATION, re.I)),
    (re.compile(r"^\W*(?:and\s+)?how\s+often\b", re.I),
     re.compile(r"\b(?:every|daily|weekly|monthly|yearly|annually|hourly|times|per|frequency|frequently|"
                r"regularly|continuously|once|twice|rarely|seldom|often|never|always|usually|sometimes|"
                r"half|most|majority|fraction|share|proportion|rate)\b|\d\s*%|\bper\s?cent\b|"
                r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|\d+)\s+(?:\w+\s+)?(?:in|of|out of)\s+"
                r"(?:every\s+)?(?:two|three|four|five|six|seven|eight|nine|ten|\d+)\b", re.I)),  # 1 in 5
    (re.compile(r"^\W*(?:and\s+)?how\s+much\b.*\b(?:cost|costs|price|pay|paid|charge)\b", re.I),
     re.compile(r"[$\u20ac\u00a3\u00a5]|\b(?:usd|eur|gbp|dollars?|euros?|pounds|costs?|price[sd]?|paid|free|"
                r"charge[sd]?|fees?)\b", re.I)),
)  # fmt: skip
"""Questions whose answer is a kind of thing a sentence must say to answer them (an age, a duration, a
frequency, a price), with what says it: "How old is the host star?" is not answered by a sentence on the
host star that gives no age."""


def last_part(question: str) -> str:
    """The last part of a question, without the subject a follow-up was read with ("(GJ 486b)")."""
    question = re.sub(r"\s*\([^)]*\)\s*$", "", question.strip())  # "How long did that training take? (...)"
    last = re.split(r"(?<=\?)\s+", question)[-1]
    return re.sub(r"^\([^)]*\)\s*", "", last)


def focus(question: str) -> re.Pattern[str] | None:
    """What a sentence must say to answer the question's last part (`FOCUS`), or None for any question."""
    last = last_part(question)
    return next((says for asks, says in FOCUS if asks.search(last)), None)


def has_kind(sentence: str, question: Question) -> bool:
    """Whether a sentence holds the kind of thing the question asks for (a date, a number, a new name)."""
    if question.kind == "date":
        return bool(YEAR.search(sentence) or MONTH.search(sentence))
    if question.kind == "number":
        return (
            measures(sentence, question.asked, question.text)
            if question.asked
            else bool(NUMBER.search(sentence))
        )
    if question.kind in ("person", "place", "choice"):
        return bool(names(sentence) - question.names)
    if question.kind == "finding":
        return FINDING.search(sentence) is not None
    if question.kind == "named":  # names one: the asked noun with a name or numeral the question lacks
        return question.asked in stems(sentence) and bool(
            names(sentence) - question.names or NUMERAL.search(sentence) or _identifiers(sentence, question)
        )
    return True


POINTER = re.compile(
    r"\[[\d,\s\u2013-]+\]|\(ref\. [\d,\s\u2013-]+\)|\b(?:fig(?:ure)?s?\.?|tables?|sections?|sect?\.|eqs?\.?"
    r"|equations?|refs?\.?|chapters?|appendix)\s*\(?[\dA-Z][\w.]*\)?",
    re.I,
)
"""A pointer to another part of the text ("[70]", "figure 3", "Section 2.1"): its number is no value."""


def new_numbers(sentence: str, question: str) -> bool:
    """Whether a sentence states a number the question does not hold (pointers to figures and sources aside).

    A value the question asks for ("16 km/s", "5.14 hours", "about 91%") is new; a sentence that restates the
    question's own "90 mT" only sets the scene.
    """
    asked = {m.group(0).lower() for m in NUMBER.finditer(POINTER.sub(" ", question))}
    return any(m.group(0).lower() not in asked for m in NUMBER.finditer(POINTER.sub(" ", sentence)))


def measures(sentence: str, measured: str, question: str = "") -> bool:
    """Whether a sentence gives a number within MEASURED_NEAR words of the thing measured (by stem).

    A number the question itself holds is no value of it: "How many Class 0 protostars ...?" is not answered
    by "... the dust emission of Class 0 protostars".
    """
    given = {m.group(0).lower() for m in NUMBER.finditer(POINTER.sub(" ", question))}
    if measured == "time" and any(m.group(1) not in given for m in SPAN.finditer(sentence)):
        return True  # "How much compute time ...?": "approximately 600 hours"
    words = re.findall(r"[\w\-.,%]+", POINTER.sub(" ", sentence))
    at = [n for n, w in enumerate(words) if noun_stem(w) == measured]
    numbers = [
        n
        for n, w in enumerate(words)
        if NUMBER.fullmatch(w.strip(".,")) and w.strip(".,").lower() not in given
    ]
    return any(abs(a - n) <= MEASURED_NEAR for a in at for n in numbers)


def _identifiers(sentence: str, question: Question) -> bool:
    """Whether a sentence holds an identifier (IRD, M3.5, RoBERTa) the question does not."""
    words = IDENTIFIER.findall(sentence)[1:]  # its first word is capitalised anyway
    return any(stem(w) not in question.terms for w in words if len(w) > 1)


def refers_back(sentence: str) -> bool:
    """Whether a sentence opens with a pronoun or a reference that needs the sentence before it."""
    return REFERENCE.match(sentence.strip()) is not None


@dataclass(frozen=True)
class Form:
    """A question form that names what it asks for, and what that means for the route and the outline.

    Attributes:
        kind: the outline type it names (citewise.core.outlines' library), "" for none.
        described: how a route's reason names it ("a comparison").
        pattern: what the question's words look like.
        report: "always" (a report whatever the evidence), "spread" (a report when the kept evidence spans
            documents: an explanation), or "never" (a direct answer, unless the caller asks for a report).
    """

    kind: str
    described: str
    pattern: re.Pattern[str]
    report: Literal["always", "spread", "never"]


FORMS: list[Form] = [
    Form(
        "",
        "a request for a report",
        re.compile(r"\b(write|give|make|prepare|draft)\b.{0,30}\b(report|review|survey)\b|^report\b", re.I),
        "always",
    ),
    Form(
        "comparison",
        "a comparison",
        re.compile(
            r"\b(compare|comparison|versus|vs\.?|differences? between|differ"
            r"|contrast(s|ing)? (\w+ ){1,6}(with|and))\b",
            re.I,
        ),
        "always",
    ),
    Form(
        "pros_and_cons",
        "a pros-and-cons question",
        re.compile(
            r"\b(pros and cons|advantages and disadvantages|strengths and weaknesses|trade-?offs?)\b", re.I
        ),
        "always",
    ),
    Form(
        "timeline",
        "a history or timeline question",
        # "the development of breast cancer" or "T cell development" is a topic, not a request for a history
        re.compile(
            r"\b(histor(y|ies) of|timeline|over the years|chronolog\w*|(recent|key|major|latest) developments"
            r"|developments in"
            r"|how (has|have|did) .{1,60}\b(evolve|evolved|develop|developed|change|changed)"
            r"|evolution of .{1,60}\b(over|since|from))\b",
            re.I,
        ),
        "always",
    ),
    Form(
        "how_to",
        "a how-to question",
        re.compile(r"^\s*(how (do|can|should|would) (i|you|we|one)\b|how to\b|steps to\b)", re.I),
        "never",
    ),
    Form(
        "overview",
        "a request for an overview",
        re.compile(r"\b(overview|survey|summari[sz]e|state of the art|landscape|review of)\b", re.I),
        "always",
    ),
    Form(
        "explanation",
        "an explanation",
        re.compile(r"^\s*(explain|describe|discuss|why\b|how (does|do|did|can|could)\b.*\bwork)", re.I),
        "spread",
    ),
    Form(
        "definition",
        "a definition",
        re.compile(r"^\s*(what (is|are)( an?| the)? [\w\- ]{1,40}\??$|define\b)", re.I),
        "never",
    ),
]
"""The question forms, in the order they are tried: the route reads `report`, the outline `kind`."""


def report_form(question: str) -> str | None:
    """How a report form the question takes is named ("a comparison", ...), or None for a direct question."""
    return next((f.described for f in FORMS if f.report == "always" and f.pattern.search(question)), None)


def explains(question: str) -> bool:
    """Whether the question asks for an explanation (a report when its evidence spans documents)."""
    return any(f.report == "spread" and f.pattern.search(question) for f in FORMS)
