"""Whether the documents answer the question at all: local mode's calibrated "not in your documents".

A chunk's answering score is the best, over its sentences, of

    weight * cosine(sentence, question) + (1 - weight) * idf-weighted share of the question's terms in it

(terms stemmed as BM25 stems them; idf over the index's paragraphs, so a rare term the question hinges on
weighs most). A chunk that another document's chunk names by its title is also read with each sentence of
that chunk (the better cosine, the coverage of the two together): a two-hop question's words are spread over
the passage that names an entity and the passage about it, and neither alone covers them.

A question is answered from the documents only when some candidate's score reaches Context.local_answerable;
below it local mode keeps nothing and says the documents do not answer, listing
the closest passages as not answering. Neither signal is enough alone (a related abstract reaches a high
cosine; a sentence can repeat a term in another sense); on SciFact train claims the mix separates claims
whose source is in the collection from those whose source is not better than either (bench/abstain.py, which
fits `weight` on the even-numbered claims and reports on the odd ones): weight 0.5 and cut 0.44 abstain on 80%
of the unanswerable and answer 77% of the answerable odd claims (ROC AUC 0.842; the best chunk's cosine alone
0.81). The cut is where questions need it: fitted on claims it was 0.46, which got a turn fewer of the
sample's conversations right and two fewer of the untuned ones (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from citewise.core.evidence import names_title
from citewise.core.questions import focus, has_kind, last_part, parts, read
from citewise.core.text import sentences
from citewise.index.reading import SearchIndex
from citewise.state import EvidenceRecord

WEIGHT = 0.5
"""Share of the cosine in the answering score (the rest is term coverage); fitted by bench/abstain.py."""


def term_weights(index: SearchIndex, question: str) -> dict[str, float]:
    """The question's distinct stemmed terms with their idf over the index's paragraphs."""
    terms = list(dict.fromkeys(index.tokens([question])[0]))
    return dict(zip(terms, index.idf(terms), strict=True))


def coverage(weights: dict[str, float], tokens: set[str]) -> float:
    """The idf-weighted share of the question's terms present among `tokens` (0 when it has none)."""
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in tokens) / total if total > 0 else 0.0


def sentence_signals(
    index: SearchIndex, question: str, records: Sequence[EvidenceRecord]
) -> tuple[dict[str, float], dict[str, list[tuple[float, float]]]]:
    """Per chunk: its own cosine to the question, and (cosine, coverage) of its sentences against each part.

    A question of two parts is answered when either part is (the other is then named as unanswered). A chunk
    that another document's chunk names by its title (`chains`) also counts each of its sentences read with
    each sentence of the naming chunk: the better cosine of the two, the coverage of both together.
    """
    ids = [r["chunk_id"] for r in records]
    if not ids:
        return {}, {}
    pieces = parts(question)
    asked = [question] + ([p.text for p in pieces] if len(pieces) > 1 else [])
    split = [sentences(r.get("text", "")) or [r.get("text", "")] for r in records]
    flat = [s for p in split for s in p]
    vectors = index.embed([*asked, *(r.get("text", "") for r in records), *flat])
    own = vectors[len(asked) : len(asked) + len(ids)] @ vectors[0]
    cosines = vectors[len(asked) + len(ids) :] @ vectors[: len(asked)].T
    weights = [term_weights(index, text) for text in asked]
    tokens = [set(t) for t in index.tokens(flat)]
    spans: list[range] = []
    for sentence_list in split:
        start = spans[-1].stop if spans else 0
        spans.append(range(start, start + len(sentence_list)))
    signals: dict[str, list[tuple[float, float]]] = {}
    for chunk_id, span in zip(ids, spans, strict=True):
        signals[chunk_id] = [
            (float(cosines[i, q]), coverage(weights[q], tokens[i])) for i in span for q in range(len(asked))
        ]
    for naming, named in chains(records):
        signals[ids[named]] += [
            (float(max(cosines[a, q], cosines[b, q])), coverage(weights[q], tokens[a] | tokens[b]))
            for a in spans[naming]
            for b in spans[named]
            for q in range(len(asked))
        ]
    return dict(zip(ids, np.asarray(own).tolist(), strict=True)), signals


def chains(records: Sequence[EvidenceRecord]) -> list[tuple[int, int]]:
    """(naming, named) positions of chunks whose text names another document by its title.

    A two-hop question's words are spread over two passages, the first naming the entity the second is
    about ("... a song written by Yoko Ono" -> Yoko Ono): neither alone covers the question.
    """
    return [
        (a, b)
        for a, first in enumerate(records)
        for b, second in enumerate(records)
        if first.get("doc_id") != second.get("doc_id")
        and names_title(first.get("text", ""), second.get("title", ""))
    ]


def mix(cosine: float, covered: float, weight: float = WEIGHT) -> float:
    """A sentence's answering score from its cosine to the question and its share of the question's terms."""
    return weight * cosine + (1 - weight) * covered


def answering(signals: list[tuple[float, float]], weight: float = WEIGHT) -> float:
    """A chunk's answering score from its sentences' (cosine, coverage)."""
    return round(max(mix(cosine, covered, weight) for cosine, covered in signals), 4)


KIND_FOUND = 1.35
"""What a chunk's answering score is multiplied by when one of its sentences holds the kind of thing the
question asks for (`questions.has_kind`): a number for "How many ...?", a date for "When ...?", a named
model for "Which model ...?", a name the question lacks for "Who ...?" or "Where ...?". A sentence that
gives the value asked often shares few of the question's words ("How many devices were in the network?"
and "... 412 hosts ..."). 1.35 got most turns right on the sample's conversations and the looked-at
unarXive set (1.1-1.5 tried, stop 61); the held-out sets got +1 and 0 turns right and +2 answering passages
cited each; HotpotQA abstained on one question fewer a half, its gold the same; SciFact's abstention is
the same (docs/benchmarks.md). Kept to numbers, dates and "which X" it lost a held-out turn."""

FOCUS_MISSED = 0.5
"""What a chunk's answering score is multiplied by when none of its sentences says the kind of thing the
question asks for (`questions.focus`: an age, a duration, a frequency, a price)."""


def answering_scores(
    index: SearchIndex, question: str, records: Sequence[EvidenceRecord], weight: float = WEIGHT
) -> tuple[dict[str, float], dict[str, float]]:
    """Per chunk: its own text's cosine to the question, and its answering score (see the module).

    A chunk with a sentence holding the kind of thing asked (a number, a date, a name the question lacks)
    scores KIND_FOUND of it. A chunk none of whose sentences says what the question asks for
    (`questions.focus`: "How old ...?" and no age) scores FOCUS_MISSED of it: the sentence on the host star
    that gives no age does not answer.
    """
    own, signals = sentence_signals(index, question, records)
    scores = {chunk_id: answering(values, weight) for chunk_id, values in signals.items()}
    asked = read(last_part(question))
    if asked.kind not in ("description", "yesno"):  # any sentence is a yes or a no
        for record in records:
            chunk_id = record["chunk_id"]
            if chunk_id in scores and any(has_kind(s, asked) for s in sentences(record.get("text", ""))):
                scores[chunk_id] = round(scores[chunk_id] * KIND_FOUND, 4)
    wanted = focus(question)
    if wanted is not None:
        for record in records:
            if record["chunk_id"] in scores and not wanted.search(record.get("text", "")):
                scores[record["chunk_id"]] = round(scores[record["chunk_id"]] * FOCUS_MISSED, 4)
    return own, scores
