"""A report's markdown: cited sentences and their labels, headings, style exemplars, and the checks it passes.

Pure functions, shared by the customize step and the tests: parsing cited sentences out of a section, putting
a report together, counting its words, and validating it (every citation resolves, every planned section is
present and non-empty, headings match the outline, no paragraph repeats, length within budget).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from citewise.core.evidence import (
    CLOSEST,
    NO_ANSWER,
    NO_SECTION_EVIDENCE,
    NOTHING_MATCHED,
    PART_UNANSWERED,
    SECTION_FAILED,
)
from citewise.core.questions import read, stems
from citewise.core.text import content_words
from citewise.state import EvidenceRecord, OutlineSection

LABEL = re.compile(r"\[((?:S\d+)?E\d+)\]")
"""An evidence label as writers cite it: [E3] in a direct answer, [S2E3] in a report."""
FAILED_NOTE = re.compile(re.escape(SECTION_FAILED) + r" \([^()]*\)\.")
"""The note `citewise.core.evidence.failed_note` writes in place of a failed section, and nothing else."""
CITED = re.compile(r"(.+?)((?:\s*\[(?:S\d+)?E\d+\])+)([.!?]?)(?=\s|$)", re.S)
"""A sentence and its run of labels, before or after its closing punctuation."""
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FRAME = {"introduction", "conclusion", "conclusions", "summary"}
"""Headings a report may add around the outline's sections."""
DEFAULT_EXEMPLARS = Path(__file__).parent.parent / "data" / "style_exemplars.md"
EXEMPLAR_BREAK = re.compile(r"^-{3,}\s*$", re.M)


def in_focus(question: str, records: Sequence[EvidenceRecord]) -> list[EvidenceRecord]:
    """The records of the documents a report on `question` is about: those naming one of its identifiers.

    A report asked about something named ("a report on the Ormholm tower", "COVID vaccines") is about the
    documents that name it. Evidence kept from look-alike documents (the Kalmvik tower's, or vaccines in
    general) scores just as high on everything else, and a local plan built from it writes sections about
    them. So when some but not all of the kept documents name an identifier of the question (a capitalised
    word or a word with digits, compared by stem, title and text), only those documents stay; otherwise,
    and for questions that name nothing, every record does.
    """
    keys = read(question).key_terms
    if not keys:
        return list(records)
    named = {
        r.get("doc_id", "") for r in records if keys & stems(f"{r.get('title', '')} {r.get('text', '')}")
    }
    documents = {r.get("doc_id", "") for r in records}
    if not named or named == documents:
        return list(records)
    return [r for r in records if r.get("doc_id", "") in named]


def cited_sentences(text: str) -> list[tuple[str, list[str]]]:
    """(sentence, its labels) for each cited sentence of a text; uncited text after the last label too."""
    found: list[tuple[str, list[str]]] = []
    end = 0
    for match in CITED.finditer(text):
        sentence = (match.group(1).strip() + match.group(3)).strip()
        if sentence:
            found.append((sentence, LABEL.findall(match.group(2))))
        end = match.end()
    rest = text[end:].strip()
    if rest:
        found.append((rest, []))
    return found


def render_sentences(items: Iterable[tuple[str, list[str]]]) -> str:
    """Sentences with their labels, as `cited_sentences` read them."""
    return " ".join(f"{s} {''.join(f'[{label}]' for label in labels)}".strip() for s, labels in items)


def words(text: str) -> int:
    """Words of the text, labels and markdown heading marks not counted."""
    return sum(1 for token in LABEL.sub(" ", text).split() if any(c.isalnum() for c in token))


def headings(text: str) -> list[str]:
    """The text of every markdown heading, in order."""
    return [m.group(2) for line in text.splitlines() if (m := HEADING.match(line.strip()))]


def section_bodies(text: str) -> dict[str, str]:
    """Heading -> the text under it up to the next heading ("" key: the text before the first heading)."""
    bodies: dict[str, list[str]] = {"": []}
    current = ""
    for line in text.splitlines():
        match = HEADING.match(line.strip())
        if match:
            current = match.group(2)
            bodies.setdefault(current, [])
        else:
            bodies[current].append(line)
    return {key: "\n".join(lines).strip() for key, lines in bodies.items()}


def _normal(paragraph: str) -> str:
    return " ".join(LABEL.sub("", paragraph).lower().split())


def validate(text: str, outline: Sequence[OutlineSection], labels: dict[str, str], budget: int) -> list[str]:
    """What is wrong with a report draft (empty when it passes every check)."""
    problems: list[str] = []
    unresolved = sorted({label for label in LABEL.findall(text) if label not in labels})
    if unresolved:
        problems.append(f"citations that name no evidence: {', '.join(f'[{u}]' for u in unresolved)}")
    expected = [s["title"] for s in outline]
    found = [h for h in headings(text) if h.lower() not in FRAME]
    bodies = section_bodies(text)
    for title in expected:
        if title not in bodies:
            problems.append(f"section missing: ## {title}")
        elif not bodies[title]:
            problems.append(f"section empty: ## {title}")
    if found != expected and all(t in bodies for t in expected):
        problems.append(f"headings do not match the outline: expected {expected}, got {found}")
    blocks = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    paragraphs = [_normal(p) for p in blocks if not HEADING.match(p) and not is_own_text(p)]
    repeated = [p for p, n in Counter(paragraphs).items() if n > 1 and p]
    problems += [f"paragraph repeated: {p[:80]!r}" for p in repeated]
    count = words(text)
    if count > budget:
        problems.append(f"{count} words, over the budget of {budget}")
    return problems


def assemble(intro: str, sections: Sequence[tuple[str, str]], conclusion: str) -> str:
    """The markdown: introduction, a `## title` per section, and a `## Conclusion` when there is one."""
    parts = [intro.strip()] if intro.strip() else []
    parts += [f"## {title}\n\n{body.strip()}" for title, body in sections]
    if conclusion.strip():
        parts.append(f"## Conclusion\n\n{conclusion.strip()}")
    return "\n\n".join(parts)


def is_own_text(sentence: str, question: str | None = None) -> bool:
    """Whether a sentence is citewise's own statement about missing evidence (it stands uncited).

    A writer (or text quoted from a document) must not be able to pass a claim off as one, so the fixed
    sentences must be whole, a failed section's note is the one `collect` writes, and a "part unanswered"
    sentence may only name words of the `question` (when given) after its phrase.
    """
    text = LABEL.sub("", sentence).strip().replace(" .", ".")
    if text in (NO_ANSWER, NO_SECTION_EVIDENCE, NOTHING_MATCHED, CLOSEST):
        return True
    if text.startswith(SECTION_FAILED):
        return FAILED_NOTE.fullmatch(text) is not None
    if text.startswith(PART_UNANSWERED):
        if question is None:
            return True
        named = set(content_words(text[len(PART_UNANSWERED) :]))
        return bool(named) and named <= set(content_words(question))
    return False


def load_exemplars(path: str | None) -> list[str]:
    """Exemplar answers whose style reports follow: a markdown file, exemplars separated by `---` lines."""
    file = Path(path) if path else DEFAULT_EXEMPLARS
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(f"style exemplars {file}: cannot read ({error.strerror or error})") from error
    exemplars = [part.strip() for part in EXEMPLAR_BREAK.split(text) if part.strip()]
    if not exemplars:
        raise ValueError(f"style exemplars {file}: no exemplar found (separate exemplars with --- lines)")
    return exemplars
