"""Writing cited text from evidence: iterative synthesis with a model, extractive selection without one.

With a model (LLM-Ref's iterative synthesis), evidence is packed into groups that fit the context budget; the
first group gets the writing prompt, each later group refines the draft. Without one, the text is the
evidence's own sentences closest to what is asked, each cited with its label, near-duplicates dropped.
The direct answer, every report section and the report's introduction and conclusion are written this way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import numpy as np

from citewise.core import answerable, questions
from citewise.core.evidence import (
    BRIDGE_FLAG,
    CLOSEST,
    MARKER,
    NO_ANSWER,
    NOTHING_MATCHED,
    PART_UNANSWERED,
    Block,
    is_abstention,
    names_title,
    pack,
    paragraph_texts,
)
from citewise.core.text import opens_mid, sentences, stops_mid, user_turns
from citewise.index.citations import soften_source_markers
from citewise.index.fusion import drop_redundant
from citewise.index.reading import SearchIndex
from citewise.prompts.common import DATA_RULE, as_messages, quote, render
from citewise.state import EvidenceRecord, State

MAX_LOCAL_SENTENCES = 4
"""Sentences a local answer (or section) may take at most."""
LOCAL_RELATIVE_FLOOR = 0.75
"""A local sentence must reach this share of the best sentence's similarity to what is asked."""
DUPLICATE = 0.9
"""Cosine similarity above which two sentences say the same thing."""

Sentence = tuple[str, str]
"""(evidence label, sentence text)."""


REFITS = 2
"""Times a writing request refused for length (or found too long) is packed again with less evidence."""


async def synthesize(
    writer,
    blocks: list[Block],
    configured: int,
    first: Callable[[str], str],
    refine: Callable[[str, str], str],
    *,
    stage: str,
    stream: bool = False,
    max_groups: int | None = None,
) -> str:
    """Write over the evidence in groups that fit: `first(evidence)`, then `refine(draft, evidence)`.

    Each group holds what the writer's context window leaves after its own prompt (the draft included) and
    the reply, at most `configured` estimated tokens. A group the window still refuses (a server that does
    not say its window teaches it by refusing) is packed again, smaller, up to REFITS times; then
    PromptTooLong propagates and the stage runs locally. `max_groups` keeps only the first groups (the best
    evidence comes first): one request under the lean profile.

    Raises:
        PromptTooLong: the evidence could not be fitted to the window after the refits.
    """
    from citewise.models import PromptTooLong  # not at module level: local mode never loads the clients

    draft = ""
    left = list(blocks)
    written = refits = 0
    while left and (max_groups is None or written < max_groups):
        frame = first("") if not written else refine(quote("draft", draft), "")
        budget = writer.evidence_tokens(configured, stage, writer.prompt_tokens(frame))
        group = pack(left, budget)[0]
        evidence = "\n".join(block for _, _, block in group)
        prompt = first(evidence) if not written else refine(quote("draft", draft), evidence)
        last = len(group) == len(left) or written + 1 == max_groups
        try:
            reply = await writer.text(as_messages(prompt), stage=stage, stream=stream and last)
        except PromptTooLong:
            refits += 1
            if refits > REFITS:
                raise
            continue
        draft = reply.strip() or draft
        left = left[len(group) :]
        written += 1
    return draft


def prompt_pair(
    first: str, refine: str, **values: str
) -> tuple[Callable[[str], str], Callable[[str, str], str]]:
    """The first-group and refine prompts of `synthesize`, filled with the data rule and `values`."""

    def fill_first(evidence: str) -> str:
        return render(first, data_rule=DATA_RULE, evidence=evidence, **values)

    def fill_refine(draft: str, evidence: str) -> str:
        return render(refine, data_rule=DATA_RULE, draft=draft, evidence=evidence, **values)

    return fill_first, fill_refine


def candidate_sentences(labelled_texts: Sequence[tuple[str, str]], minimum: int = 20) -> list[Sentence]:
    """(label, sentence) for every sentence of every labelled text longer than `minimum` characters."""
    return [(label, s) for label, text in labelled_texts for s in sentences(text) if len(s) > minimum]


def select_sentences(
    index: SearchIndex,
    asked: str,
    candidates: list[Sentence],
    limit: int = MAX_LOCAL_SENTENCES,
    avoid: np.ndarray | None = None,
) -> tuple[list[Sentence], np.ndarray]:
    """The candidates closest to `asked` (within the relative floor), near-duplicates and `avoid` dropped.

    Returns the chosen sentences best first and their vectors (so callers can avoid them later).
    """
    if not candidates:
        return [], np.zeros((0, index.embedder.dim), dtype=np.float32)
    vectors = index.embed([asked, *(s for _, s in candidates)])
    similarity = vectors[1:] @ vectors[0]
    order = sorted(range(len(candidates)), key=lambda i: (-similarity[i], i))
    best = float(similarity[order[0]])
    order = [i for i in order if similarity[i] >= LOCAL_RELATIVE_FLOOR * best]
    if avoid is not None and len(avoid):
        order = [i for i in order if float(np.max(avoid @ vectors[1 + i])) <= DUPLICATE]
    if not order:
        return [], np.zeros((0, vectors.shape[1]), dtype=vectors.dtype)
    keys = [str(i) for i in order]
    chosen = [int(i) for i in drop_redundant(keys, vectors[1:][order], DUPLICATE, limit=limit)]
    return [candidates[i] for i in chosen], vectors[[1 + i for i in chosen]]


def cite(chosen: list[Sentence], prefix: str = "") -> str:
    """Sentences joined, each followed by its label as a marker, e.g. "... [S2E1]"."""
    return " ".join(f"{text} [{prefix}{label}]" for label, text in chosen)


def extractive_summary(index: SearchIndex, asked: str, text: str, count: int) -> str:
    """The `count` sentences of `text` most similar to `asked`, in reading order."""
    parts = sentences(text)
    if len(parts) <= count:
        return " ".join(parts)
    vectors = index.embed([asked, *parts])
    similarity = vectors[1:] @ vectors[0]
    best = sorted(np.argsort(-similarity)[:count].tolist())
    return " ".join(parts[i] for i in best)


def no_answer(state: State) -> tuple[str, dict[str, str]]:
    """The honest reply when nothing passed the threshold, with the closest evidence cited."""
    closest = sorted(state.get("evidence", []), key=lambda r: -r.get("final", 0.0))[:3]
    if not closest:
        return f"{NO_ANSWER} {NOTHING_MATCHED}", {}
    labels = {f"E{n}": r["chunk_id"] for n, r in enumerate(closest, start=1)}
    lines = [f"{NO_ANSWER} {CLOSEST}"]
    for label, record in zip(labels, closest, strict=True):
        lines.append(f'- {record.get("title", "")}: "{_clip(record.get("text", ""))}" [{label}]')
    return "\n".join(lines), labels


def _clip(text: str, size: int = 200) -> str:
    return text if len(text) <= size else text[:size].rsplit(" ", 1)[0] + "…"


# answering the question, not the topic (local mode) -------------------------------------------------------

COVERAGE_WEIGHT = 0.3
"""How much a sentence's share of the question's terms adds to its similarity."""
KIND_WEIGHT = 0.3
"""How much holding the kind of thing asked for (a date for "when", a number for "how many") adds."""
SUPERLATIVE_WEIGHT = 0.15
"""What saying which is most or least adds, when the question asks it ("the hardest" ~ "the weakest")."""
NEW_NUMBER_WEIGHT = 0.1
"""What stating a number the question does not hold adds (the value asked for, not the question's own)."""
FOLLOW_UP_OWN = 0.6
"""A follow-up's share of the similarity from its own words; the rest from it read with the earlier question.
Read only with the earlier question, "What does its top layer represent?" scored the sentences of the earlier
answer's topic (four layers) above the one about the top layer (fitted on the sample's conversations: the
answering sentence ranked first 0.58 -> 0.61, among the first three 0.73 -> 0.84; the untuned ones 0.47 ->
0.58 and 0.69 -> 0.84, with NEW_NUMBER_WEIGHT)."""
VALUE_KINDS = ("number", "date", "named")
"""Question kinds a stated value can answer ("what accuracy", "how long"): a year in a sentence is no answer
to "To which country ...?" (it pulled "Strandloper is a novel ..., published in 1996" above the sentence
that leads to the country)."""
LEANING_COST = 0.05
"""What opening with "These models" / "This method" costs: it leans on what the sentence before says, which
comes first ("These models assumed ... 700 K" came after an unrelated sentence, where "GJ 486b is ... with an
equilibrium temperature of about 700 K" says it alone). "He" / "It" lean on the paragraph's subject, named
in a sentence that is usually worth saying (Wikipedia's "He was ..."), and cost nothing (costing them lost
three HotpotQA questions of 50)."""
MAX_ANSWER_SENTENCES = 3
"""Sentences a local answer picks at most (antecedents they need come on top, within MAX_LOCAL_SENTENCES)."""
MIN_SENTENCE = 12
"""Shorter fragments are no answer ("It was closed in 2013." is 22 characters and must stay)."""


PLACEHOLDER_EDGES = re.compile(r"^(?:\[(?:table|figure|formula)\]\s*)+|(?:\s*\[(?:table|figure|formula)\])+$")
"""Where a table, figure or display formula stood, at a sentence's edge ("[table] In total, ..."): the
splitter joins it to the sentence after; quoted, it says nothing."""


@dataclass
class Candidate:
    """One sentence of a kept chunk's paragraph, with what it needs and what it covers."""

    label: str
    text: str
    previous: str
    """The sentence it leans on when it opens with a reference (`antecedent`; "" for the first)."""
    refers: bool
    """It opens with a pronoun or reference, so it needs `previous`."""
    owned: bool = False
    """Its label's chunk holds the sentence itself (not only its paragraph)."""
    score: float = 0.0
    terms: frozenset[str] = frozenset()
    """Its content stems, with its antecedent's when it needs one (what a reader of the pair learns)."""
    own_terms: frozenset[str] = frozenset()
    """Its own content stems: what choosing it adds beyond an antecedent that could be chosen alone."""


def paragraph_candidates(sources: Sequence[tuple[str, str, str]]) -> list[Candidate]:
    """Every sentence of every (label, chunk text, paragraph text), once, under the chunk that holds it."""
    found: dict[str, Candidate] = {}
    for label, chunk, paragraph in sources:
        lines = sentences(paragraph) or sentences(chunk)
        for n, line in enumerate(lines):
            line = PLACEHOLDER_EDGES.sub("", line)
            # (nor a piece a display broke off its sentence: "and the magnetic transition width is,")
            if len(line) < MIN_SENTENCE or opens_mid(line) and stops_mid(line):
                continue
            key = " ".join(line.lower().split())
            owned = line in chunk
            if key in found and (found[key].owned or not owned):  # first seen, unless this chunk holds it
                continue
            found[key] = Candidate(
                label, line, antecedent(lines, n), questions.refers_back(line), owned=owned
            )
    return list(found.values())


def antecedent(lines: Sequence[str], n: int) -> str:
    """What sentence `n` of a paragraph leans on: the nearest earlier sentence that names its subject.

    "He was Leader of the Opposition" after "He was a member of the House" needs "William Copley was a
    politician", not the other "He" sentence ("" for the first sentence).
    """
    for back in range(n - 1, -1, -1):
        if not questions.refers_back(lines[back]):
            return lines[back]
    return lines[n - 1] if n else ""


def score_candidates(
    index: SearchIndex, question: questions.Question, candidates: list[Candidate], follow_up: str = ""
) -> np.ndarray:
    """Each candidate's score: similarity (with its antecedent when it needs one) + coverage + kind + values.

    `follow_up` (a follow-up's own words, when `question` is it read with the earlier question) takes
    FOLLOW_UP_OWN of the similarity: what is new in a follow-up is what it asks.
    """
    asked = [question.text, follow_up] if follow_up else [question.text]
    texts = asked + [c.text for c in candidates]
    texts += [f"{c.previous} {c.text}" for c in candidates if c.refers and c.previous]
    vectors = index.embed(texts)
    start = len(asked)
    own = vectors[start : start + len(candidates)] @ vectors[:start].T
    extra = iter((vectors[start + len(candidates) :] @ vectors[:start].T).tolist())
    share = np.array([1 - FOLLOW_UP_OWN, FOLLOW_UP_OWN]) if follow_up else np.ones(1)
    for n, candidate in enumerate(candidates):
        similarity = own[n]
        context = candidate.previous if candidate.refers else ""
        if context:
            similarity = np.maximum(similarity, next(extra))
        similarity = float(similarity @ share)
        candidate.own_terms = frozenset(questions.stems(candidate.text))
        candidate.terms = candidate.own_terms | questions.stems(context)
        coverage = question.coverage(candidate.terms)
        kind = question.kind != "description" and questions.has_kind(candidate.text, question)
        most = question.superlative and questions.says_most(candidate.text, question.text)
        value = question.kind in VALUE_KINDS and questions.new_numbers(candidate.text, question.text)
        candidate.score = (
            similarity
            + COVERAGE_WEIGHT * coverage
            + KIND_WEIGHT * kind
            + SUPERLATIVE_WEIGHT * most
            + NEW_NUMBER_WEIGHT * value
            - LEANING_COST * bool(context and questions.DEMONSTRATIVE_OPENING.match(candidate.text))
        )
    return vectors[start : start + len(candidates)]


def pick(
    question: questions.Question,
    candidates: list[Candidate],
    vectors: np.ndarray,
    documents: Mapping[str, str] | None = None,
) -> list[int]:
    """The best sentence, then sentences that cover what is still open.

    Open are the question's terms not yet covered, the names the answer so far brought in (the bridge of a
    two-hop question), and the kind of thing asked for until a chosen sentence has it. A further sentence
    must bring a bridge name, the kind asked for, or an open identifier of the question (a name, a number);
    an open common word counts only in a document already chosen from, since another document sharing a
    word of the question ("character", "coach") is more often a look-alike than the answer. A sentence
    that opens with a pronoun is credited with its own words only: its antecedent's are the antecedent's,
    which may be chosen alone; and at equal gain a sentence that needs no antecedent added goes first.
    `documents` (label -> document) tells chunks of one document apart.
    """
    documents = documents or {}
    order = sorted(range(len(candidates)), key=lambda i: (-candidates[i].score, i))
    if not order:
        return []
    best = order[0]
    chosen = [best]
    covered = set(candidates[best].terms & question.terms)
    bridges = questions.names(candidates[best].text) - question.names
    floor = LOCAL_RELATIVE_FLOOR * candidates[best].score
    wanted = question.kind != "description" and not questions.has_kind(candidates[best].text, question)
    while len(chosen) < MAX_ANSWER_SENTENCES:
        open_terms = question.terms - covered
        chosen_from = {documents.get(candidates[j].label, candidates[j].label) for j in chosen}
        said = {candidates[j].text for j in chosen}
        gains = []
        for i in order:
            candidate = candidates[i]
            if i in chosen or candidate.score < floor:
                continue
            if float(np.max(vectors[chosen] @ vectors[i])) > DUPLICATE:
                continue
            found = candidate.own_terms & open_terms
            identifier = bool(found & question.key_terms)
            known = documents.get(candidate.label, candidate.label) in chosen_from
            bridge = bool(open_terms) and any(b in candidate.text.lower() for b in bridges)
            kind = wanted and questions.has_kind(candidate.text, question)
            if bridge or kind or identifier or (found and known):
                alone = not candidate.refers or candidate.previous in said  # no antecedent to add
                gains.append((len(found) + bridge + kind, alone, candidate.score, -i))
        if not gains:
            break
        *_, negative = max(gains)
        chosen.append(-negative)
        covered |= candidates[-negative].terms & question.terms
        wanted = wanted and not questions.has_kind(candidates[-negative].text, question)
    return chosen


def answering_sentences(
    index: SearchIndex,
    question: str,
    sources: Sequence[tuple[str, str, str]],
    bridged: Collection[str] = (),
    titles: Mapping[str, str] | None = None,
    earlier: tuple[str, str] | None = None,
) -> tuple[list[Sentence], list[str]]:
    """The sentences that answer the question, best first, with their antecedents; and the unanswered parts.

    `sources` are (label, chunk text, paragraph text) of the kept evidence, in the writer's order. `bridged`
    labels are bridge passages (about an entity the best passage names): the answer ends with the best
    sentence of one when none of its sentences was chosen, since a two-hop answer needs both hops. `titles`
    (label -> document title) lets a chosen sentence that names another kept document by its title bring in
    that document's best sentence, right after it: the entity a two-hop question goes through.

    `earlier` (the question before and its answer) makes `question` a follow-up read with it
    (questions.follow_up): sentences the earlier answer said are not said again, only sentences with a word
    the follow-up adds to the earlier question are candidates (none: nothing is chosen, rather than the
    earlier answer's topic again), and the follow-up is the part that must be answered.
    """
    every = paragraph_candidates(sources)
    said_before = _said(MARKER.sub("", earlier[1])) if earlier else ""
    candidates = thread_documents(every, said_before, question, titles or {}) if earlier else every
    whole = questions.follow_up(earlier[0], question) if earlier else questions.read(question)
    new = questions.read(question).terms - questions.read(earlier[0]).terms if earlier else set()
    if new:  # a follow-up is answered by what is new in it, not by the earlier question's topic again
        candidates = [c for c in candidates if _found(_words(c, said_before), new)]
        if not candidates:
            # what it asks may be in what the earlier answer said ("And the filter?" after "... mounted on a
            # refracting telescope behind a bandpass filter ..."): said again, rather than no answer
            candidates = [c for c in every if _said_in(c.text, said_before) and _found(_words(c, ""), new)]
    if not candidates:
        return [], []
    vectors = score_candidates(index, whole, candidates, question if earlier else "")
    chosen = pick(whole, candidates, vectors, titles)
    hop = [i for i in range(len(candidates)) if candidates[i].label in bridged]
    if hop and not any(candidates[i].label in bridged for i in chosen):
        chosen.append(max(hop, key=lambda i: (candidates[i].score, -i)))
    if titles:
        chosen = with_named_documents(candidates, chosen, titles)
    pieces = questions.parts(question)
    missing: list[str] = []
    if len(pieces) > 1 or earlier:
        first = list(chosen)
        subject = " ".join(questions.entities(earlier[0])) if earlier else ""
        scores = part_scores(index, pieces, [candidates[i] for i in first], subject)
        for piece, row in zip(pieces, scores, strict=True):
            if any(_answers(candidates[i], piece, score) for i, score in zip(first, row, strict=True)):
                continue
            if any(_answers(candidates[i], piece) for i in chosen[len(first) :]):  # added for another part
                continue
            best = max(range(len(candidates)), key=lambda i: (_fit(candidates[i], piece), -i))
            if _answers(candidates[best], piece) and len(chosen) < MAX_ANSWER_SENTENCES + 1:
                chosen.append(best)
            else:
                missing.append(piece.text.rstrip(" ?.!"))
    return spoken([candidates[i] for i in chosen])[:MAX_LOCAL_SENTENCES], missing


def part_scores(
    index: SearchIndex, pieces: Sequence[questions.Question], chosen: Sequence[Candidate], subject: str = ""
) -> list[list[float]]:
    """Each part's answering score (`citewise.core.answerable`) against each chosen sentence.

    A follow-up's part is read with the thread's `subject` (the names the question before it holds): "How
    often is it updated?" is asked of the thing named before.
    """
    if not chosen:
        return [[] for _ in pieces]
    weights = [answerable.term_weights(index, piece.text) for piece in pieces]
    said = [f"{c.previous} {c.text}" if c.refers and c.previous else c.text for c in chosen]
    vectors = index.embed([*(f"{p.text} {subject}".strip() for p in pieces), *said])
    cosines = vectors[: len(pieces)] @ vectors[len(pieces) :].T
    tokens = [set(t) for t in index.tokens(said)]
    return [
        [
            answerable.mix(float(cosines[n, k]), answerable.coverage(weights[n], tokens[k]))
            for k in range(len(chosen))
        ]
        for n in range(len(pieces))
    ]


def thread_documents(
    candidates: list[Candidate], said_before: str, question: str, documents: Mapping[str, str]
) -> list[Candidate]:
    """A follow-up's candidates: none the earlier answer said, and from its documents when it names nothing.

    "And how far apart are they?" in a thread about an ion trap's magnets is about that paper's magnets: a
    sentence of another paper that has "far" is no answer to it. A follow-up that names a thing ("And GJ
    1132b?") may go to another document; so may one whose earlier answer said nothing kept now.
    """
    fresh: list[Candidate] = []
    said: list[Candidate] = []
    for candidate in candidates:
        (said if _said_in(candidate.text, said_before) else fresh).append(candidate)
    if questions.entities(question) or not said:
        return fresh
    threads = {documents.get(c.label, c.label) for c in said}
    return [c for c in fresh if documents.get(c.label, c.label) in threads]


def spoken(chosen: Sequence[Candidate]) -> list[Sentence]:
    """The chosen sentences as said: each once, and one that opens with "It" right after its antecedent."""
    result: list[Sentence] = []
    said: list[str] = []  # a sentence two chunks (or two copies of a document) hold is said once
    for candidate in chosen:
        key = _said(candidate.text)
        if key in said:
            continue
        antecedent = _said(candidate.previous) if candidate.refers and candidate.previous else ""
        if antecedent and antecedent in said:  # "It ..." goes right after what "It" is, said earlier
            at = said.index(antecedent) + 1
            said.insert(at, key)
            result.insert(at, (candidate.label, candidate.text))
            continue
        if antecedent:
            said.append(antecedent)
            result.append((candidate.label, candidate.previous))
        said.append(key)
        result.append((candidate.label, candidate.text))
    return result


def _said_in(sentence: str, said: str) -> bool:
    """Whether an answer (`said`: _said of it, its [n] markers removed) holds the sentence.

    The sentence's own numeric markers are compared as an answer writes them ("[43]" -> "(ref. 43)").
    """
    return _said(soften_source_markers(sentence)).rstrip(".!?;:") in said


def _said(text: str) -> str:
    return " ".join(text.lower().split())


def with_named_documents(
    candidates: list[Candidate], chosen: list[int], titles: Mapping[str, str]
) -> list[int]:
    """`chosen` with the best sentence of a kept document a chosen sentence names, right after that sentence.

    Only a document nothing chosen comes from, and one an answer ("... a song written by Yoko Ono" -> Yoko
    Ono's best sentence): the entity a two-hop question goes through.
    """
    present = {titles.get(candidates[i].label, "") for i in chosen}
    for position, i in enumerate(chosen):
        said = (
            f"{candidates[i].previous} {candidates[i].text}" if candidates[i].refers else candidates[i].text
        )
        named = [
            n
            for n, other in enumerate(candidates)
            if (title := titles.get(other.label, "")) not in present and names_title(said, title)
        ]
        if named:
            best = max(named, key=lambda n: (candidates[n].score, -n))
            return [*chosen[: position + 1], best, *chosen[position + 1 :]]
    return chosen


def _words(candidate: Candidate, said_before: str) -> set[str]:
    """The stems a reader of the sentence meets anew, hyphenated words also in their parts.

    A sentence that leans on an antecedent is read with it, unless the earlier answer said the antecedent
    (then what the pair adds is the sentence's own words).
    """
    text = candidate.text
    if candidate.refers and candidate.previous and not _said_in(candidate.previous, said_before):
        text = f"{candidate.previous} {text}"
    return questions.stems(text) | questions.stems(text.replace("-", " "))


def _found(words: AbstractSet[str], terms: AbstractSet[str]) -> set[str]:
    """The terms a sentence's words hold; a short one also as a longer word's start (old: oldest)."""
    return {t for t in terms if t in words or (len(t) >= 3 and any(w.startswith(t) for w in words))}


def _fit(candidate: Candidate, piece: questions.Question) -> float:
    return len(candidate.terms & piece.terms) / max(1, len(piece.terms)) + 0.5 * questions.has_kind(
        candidate.text, piece
    )


PART_ANSWERED = 0.44
"""A chosen sentence whose answering score against a part (`citewise.core.answerable`, the part's own words)
reaches this answers it, whatever its words: local mode's cut for "the documents answer" (Context's
local_answerable default). "FieldView is licensed under the GNU General Public License" answers "Under which
license is it released?" without "released"."""


def _answers(candidate: Candidate, piece: questions.Question, score: float = 0.0) -> bool:
    """Whether a sentence answers one part: the kind of thing it asks for, and its words or its score.

    Its words: most of the part's terms; a part of one or two terms needs them all ("how much did it cost"
    is not answered without "cost"). Its score: an answering score of PART_ANSWERED against the part.
    """
    found = _found(candidate.terms, piece.terms)
    enough = found == piece.terms if len(piece.terms) <= 2 else len(found) >= 0.5 * len(piece.terms)
    return (enough or score >= PART_ANSWERED) and questions.has_kind(candidate.text, piece)


def extractive_answer(
    index: SearchIndex, question: str, records: list[EvidenceRecord], earlier: tuple[str, str] | None = None
) -> tuple[str, dict[str, str]]:
    """The kept evidence's sentences that answer the question (citewise.core.writing), cited; gaps named.

    `earlier` (the question before and its answer) reads `question` as a follow-up to it.
    """
    labels = {f"E{n}": r["chunk_id"] for n, r in enumerate(records, start=1)}
    paragraphs = paragraph_texts(index, records)
    sources = [
        (label, r.get("text", ""), paragraphs[r["chunk_id"]])
        for label, r in zip(labels, records, strict=True)
    ]
    bridged = {label for label, r in zip(labels, records, strict=True) if BRIDGE_FLAG in r.get("flags", [])}
    titles = {label: r.get("title", "") for label, r in zip(labels, records, strict=True)}
    chosen, missing = answering_sentences(index, question, sources, bridged, titles, earlier)
    if not chosen or answers_nothing(question, chosen, missing):
        return NO_ANSWER, {}
    text = cite(chosen)
    if missing:
        text += " " + " ".join(f"{PART_UNANSWERED} {part}." for part in missing)
    return text, labels


def answers_nothing(question: str, chosen: Sequence[Sentence], missing: Sequence[str]) -> bool:
    """Whether no part is answered and no chosen sentence even holds the kind of thing a part asks for.

    "How many nodes does that cluster have?" got "... on the UMass Dartmouth Carnie Cluster employing Intel
    Xeon Silver 4116 CPUs ..." and a note that the part was not answered: background, not an answer.
    """
    pieces = questions.parts(question)
    if len(missing) < len(pieces):
        return False
    return not any(questions.has_kind(text, piece) for piece in pieces for _, text in chosen)


def local_follow_up(state: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(the follow-up, what it was read with, the answer before it) when local condense read a follow-up.

    The standalone question then holds both (search needs the question before it and the thread's subject),
    but only the follow-up is asked now: the answer should not say the earlier answer again.
    """
    asked, replies = user_turns(state.get("messages", []))
    turn = questions.local_follow_up_turn(asked, state.get("question", ""), replies)
    if turn is None:  # not a follow-up, or a model condensed it
        return None
    before = replies[-2]  # the reply to the question before (this one has none yet)
    return turn.asked, turn.earlier, "" if is_abstention(before) else before  # listed passages: not said
