"""Learning a library from rated example answers (SynthRAG 3.2.1): cluster, score, sample, instruct."""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING, Any

import numpy as np

from citewise.core.jsonl import json_objects
from citewise.core.outlines.library import OutlineLibraryError, OutlineType, count_of, text_of
from citewise.core.outlines.structure import answer_structure, word_count
from citewise.prompts.common import DATA_RULE, as_messages, quote, render
from citewise.prompts.outline_learn import LEARN_PROMPT
from citewise.state.schemas import LearnedOutline

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from citewise.index.embeddings import Embedder
    from citewise.models import LLM


logger = logging.getLogger(__name__)


WEIGHTS = (0.3, 0.1, 0.6)
"""SynthRAG's effectiveness weights: coherence (question-answer cosine), length, rating."""
SAMPLE_SHARE = 0.05
"""The share of a cluster taken as high-rated samples, and as low-rated ones (at least one each)."""
MAX_EXAMPLES = 8
"""Example questions kept per learned type."""
MIN_EXAMPLES = 2
"""Rated examples a learning file must hold."""
EVIDENCE_RULE = (
    "Plan only sections the retrieved evidence can support: no section without evidence, and drop a "
    "planned section rather than fill it with general knowledge."
)
"""The closing sentence of every instruction written without an LLM."""


@dataclass
class Example:
    """A question with an answer someone rated (the higher the better)."""

    question: str
    answer: str
    rating: float


# rated examples -------------------------------------------------------------------------------------------


def read_examples(path: str | Path) -> list[Example]:
    """Rated examples from JSONL (question, answer, rating per line; blank lines skipped).

    Raises:
        OutlineLibraryError: The file is missing, a line is not a valid example (the message gives its
            number and the problem), or it holds fewer than two examples.
    """
    source = Path(path)
    rows = json_objects(source, OutlineLibraryError, f"example file {source}")
    examples = [_parse_example(f"example file {source}:{number}", raw) for number, raw in rows]
    if len(examples) < MIN_EXAMPLES:
        raise OutlineLibraryError(
            f"example file {source} has {len(examples)} example(s); learning needs at least {MIN_EXAMPLES}"
        )
    return examples


def _parse_example(where: str, raw: dict) -> Example:
    """One JSONL object as an Example, or an error naming its line and what is wrong."""
    for key in ("question", "answer"):
        if not text_of(raw.get(key)):
            raise OutlineLibraryError(f"{where}: {key} is missing or empty")
    rating = raw.get("rating")
    if rating is None:
        raise OutlineLibraryError(f"{where}: rating is missing")
    if isinstance(rating, bool) or not isinstance(rating, int | float) or not math.isfinite(rating):
        raise OutlineLibraryError(f"{where}: rating must be a number, not {rating!r}")
    return Example(question=raw["question"].strip(), answer=raw["answer"].strip(), rating=float(rating))


# learning a library from rated examples ---------------------------------------------------------------------


def default_k(count: int, distinct: int) -> int:
    """About sqrt(n / 2) clusters for n examples, at least 1 and at most the distinct questions."""
    return max(1, min(distinct, round(math.sqrt(count / 2))))


def effectiveness(
    question_vectors: np.ndarray, answer_vectors: np.ndarray, examples: Sequence[Example]
) -> np.ndarray:
    """SynthRAG's E per example: 0.3 cos(q, a) + 0.1 length + 0.6 rating (both min-max over the whole set)."""
    coherence = np.sum(question_vectors * answer_vectors, axis=1)
    lengths = _min_max([word_count(example.answer) for example in examples])
    ratings = _min_max([example.rating for example in examples])
    alpha, beta, gamma = WEIGHTS
    return alpha * coherence + beta * lengths + gamma * ratings


def _min_max(values: Sequence[float]) -> np.ndarray:
    """Values scaled to 0..1 over the set (all 0 when they are all equal)."""
    array = np.asarray(values, dtype=np.float64)
    spread = float(array.max() - array.min()) if len(array) else 0.0
    return (array - array.min()) / spread if spread > 0 else np.zeros_like(array)


def split_samples(ranked: Sequence[int]) -> tuple[list[int], list[int]]:
    """The top and bottom 5% of a cluster ranked best first (at least one each; one example: only high)."""
    size = max(1, int(len(ranked) * SAMPLE_SHARE))
    return list(ranked[:size]), list(ranked[max(size, len(ranked) - size) :])


def cluster_questions(vectors: np.ndarray, k: int) -> list[list[int]]:
    """Example indices per k-means cluster, clusters ordered by their first example."""
    from sklearn.cluster import KMeans

    labels = (
        KMeans(n_clusters=k, random_state=0, n_init=10).fit_predict(vectors) if k > 1 else [0] * len(vectors)
    )
    clusters: dict[int, list[int]] = {}
    for index, label in enumerate(labels):
        clusters.setdefault(int(label), []).append(index)
    return list(clusters.values())


@dataclass
class _Cluster:
    """One question cluster: its examples ranked best first and its high and low samples."""

    ranked: list[Example]
    high: list[Example]
    low: list[Example]
    others: list[str]
    """The questions of every other cluster (to find this cluster's distinctive words)."""

    @property
    def questions(self) -> list[str]:
        """At most MAX_EXAMPLES distinct questions, highest rated first."""
        by_rating = sorted(self.ranked, key=lambda example: -example.rating)  # stable: E breaks ties
        return list(dict.fromkeys(example.question for example in by_rating))[:MAX_EXAMPLES]


async def learn(
    examples: list[Example],
    embedder: Embedder,
    llm: LLM | None = None,
    k: int | None = None,
    prompt: str = LEARN_PROMPT,
) -> list[OutlineType]:
    """Learn one outline type per question cluster from rated examples (SynthRAG's learning step).

    Raises:
        OutlineLibraryError: No examples, or `k` below 1 or above the number of distinct questions.
    """
    clusters = _clusters(examples, embedder, k)
    if llm is None:
        learned: list[LearnedOutline | None] = [None] * len(clusters)
    else:
        learned = await asyncio.gather(*(_ask(llm, cluster, prompt) for cluster in clusters))
    drafts = [_combine(_draft(cluster), reply) for cluster, reply in zip(clusters, learned, strict=True)]
    names = _unique_names([draft.name for draft in drafts])
    return [
        OutlineType(name, draft.description, tuple(cluster.questions), draft.instruction)
        for name, draft, cluster in zip(names, drafts, clusters, strict=True)
    ]


def _clusters(examples: list[Example], embedder: Embedder, k: int | None) -> list[_Cluster]:
    """Cluster the questions, rank each cluster by effectiveness, and pick its high and low samples."""
    if not examples:
        raise OutlineLibraryError("no examples to learn from")
    distinct = len({example.question for example in examples})
    k = default_k(len(examples), distinct) if k is None else k
    if not 1 <= k <= distinct:
        raise OutlineLibraryError(f"k must be between 1 and {distinct} (the distinct questions), not {k}")
    question_vectors = embedder.embed([example.question for example in examples])
    scores = effectiveness(question_vectors, embedder.embed([e.answer for e in examples]), examples)
    clusters = []
    groups = cluster_questions(question_vectors, k)
    for group in groups:
        ranked = sorted(group, key=lambda index: (-scores[index], -examples[index].rating, index))
        high, low = split_samples(ranked)
        others = [examples[i].question for other in groups if other is not group for i in other]
        clusters.append(
            _Cluster(
                ranked=[examples[i] for i in ranked],
                high=[examples[i] for i in high],
                low=[examples[i] for i in low],
                others=others,
            )
        )
    return clusters


async def _ask(llm: LLM, cluster: _Cluster, prompt: str) -> LearnedOutline | None:
    """The LLM's outline for one cluster; None when its reply is malformed or has no instruction."""
    messages = learn_messages(cluster.questions, cluster.high, cluster.low, prompt)
    replies = await llm.structured(LearnedOutline, messages, stage="outline_learn")
    reply = replies[0] if replies else None
    if reply is None or not reply.instruction.strip():
        logger.warning(
            "malformed outline for %r; writing it from the answers' structure", cluster.questions[0]
        )
        return None
    return reply


def learn_messages(
    questions: Sequence[str], high: Sequence[Example], low: Sequence[Example], prompt: str = LEARN_PROMPT
) -> list[BaseMessage]:
    """The learning prompt for one cluster: its questions and its high and low samples, tagged and escaped."""
    samples = [_sample(example, "high") for example in high] + [_sample(example, "low") for example in low]
    rendered = render(
        prompt,
        count=str(len(questions)),
        data_rule=DATA_RULE,
        questions=quote("questions", "\n".join(questions)),
        samples="\n\n".join(samples),
    )
    return as_messages(rendered)


def _sample(example: Example, quality: str) -> str:
    """One rated example inside <example> tags, its structure in the attributes."""
    structure = answer_structure(example.answer)
    return quote(
        "example",
        f"Question: {example.question}\n\nAnswer:\n{example.answer}",
        quality=quality,
        rating=f"{example.rating:g}",
        headings=" | ".join(structure["headings"]) or "none",
        paragraphs=str(structure["paragraphs"]),
        list_items=str(structure["list_items"]),
        words=str(structure["words"]),
        direct_answer="yes" if structure["direct_answer"] else "no",
        summary_at_end="yes" if structure["conclusion"] else "no",
    )


def _combine(draft: LearnedOutline, reply: LearnedOutline | None) -> LearnedOutline:
    """The LLM's outline where it gave one, the deterministic draft for whatever it left out."""
    if reply is None:
        return draft
    return LearnedOutline(
        name=_slug(reply.name) or draft.name,
        description=reply.description.strip() or draft.description,
        instruction=reply.instruction.strip(),
    )


def _slug(text: str) -> str:
    """A snake_case name: lower-case letters, digits and underscores."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:40].strip("_")


def _unique_names(names: list[str]) -> list[str]:
    """Names made unique by suffixes _2, _3, ... in order."""
    used: set[str] = set()
    unique = []
    for name in names:
        candidate, number = name, 2
        while candidate in used:
            candidate, number = f"{name}_{number}", number + 1
        used.add(candidate)
        unique.append(candidate)
    return unique


# the deterministic draft ----------------------------------------------------------------------------------

_STOPWORDS = frozenset(
    "a an the of and or to in on for with by at from as into about this that these those it its their "
    "there my our your".split()
)
"""Words never used in a learned type's name (question words, pronouns and auxiliaries are kept: "how do
I", "why does" and "what are the differences" are what set question types apart)."""
_QUESTION_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def _draft(cluster: _Cluster) -> LearnedOutline:
    """The cluster's outline written from its answers' structure, named after its distinctive words."""
    words = distinctive_words([e.question for e in cluster.ranked], cluster.others)
    example, learned_from = cluster.questions[0], count_of(len(cluster.ranked), "rated answer")
    return LearnedOutline(
        name=_slug("_".join(words)) or "questions",
        description=f'Questions like "{example}" (learned from {learned_from}).',
        instruction=draft_instruction(
            [answer_structure(e.answer) for e in cluster.high],
            [answer_structure(e.answer) for e in cluster.low],
        ),
    )


def distinctive_words(questions: Sequence[str], others: Sequence[str], count: int = 3) -> list[str]:
    """The words most typical of `questions` against `others` (in a third of them or more), in usual order."""
    inside, outside = _document_frequency(questions), _document_frequency(others)
    common = [word for word, share in inside.items() if share >= 1 / 3 and share > outside.get(word, 0.0)]
    common.sort(key=lambda word: (-(inside[word] - outside.get(word, 0.0)), -inside[word], word))
    chosen = common[:count] or sorted(inside, key=lambda word: (-inside[word], word))[:count]
    return sorted(chosen, key=lambda word: _mean_position(word, questions))


def _question_words(question: str) -> list[str]:
    """The lower-case words of a question, without stopwords."""
    return [word for word in _QUESTION_WORD.findall(question.lower()) if word not in _STOPWORDS]


def _document_frequency(questions: Sequence[str]) -> dict[str, float]:
    """The share of questions each word appears in."""
    counts = Counter(word for question in questions for word in dict.fromkeys(_question_words(question)))
    return {word: seen / len(questions) for word, seen in counts.items()} if questions else {}


def _mean_position(word: str, questions: Sequence[str]) -> float:
    """The mean relative position of `word` in the questions that contain it."""
    positions = []
    for question in questions:
        words = _question_words(question)
        if word in words:
            positions.append(words.index(word) / len(words))
    return sum(positions) / len(positions) if positions else 1.0


def draft_instruction(high: list[dict[str, Any]], low: list[dict[str, Any]]) -> str:
    """An outline instruction from the structures of high- and low-rated answers (no LLM)."""
    sentences = [_plan_sentence(high), *_habits(high), _avoid_sentence(high, low), EVIDENCE_RULE]
    return " ".join(sentence for sentence in sentences if sentence)


def shared_headings(structures: list[dict[str, Any]]) -> list[str]:
    """The headings at least half of the answers share, in their usual order (mean relative position)."""
    positions: dict[str, list[float]] = {}
    spellings: dict[str, Counter[str]] = {}
    for structure in structures:
        headings = structure["headings"]
        firsts: dict[str, float] = {}
        for position, heading in enumerate(headings):
            key = re.sub(r"[^a-z0-9]+", " ", heading.lower()).strip()
            if key and key not in firsts:
                firsts[key] = position / max(1, len(headings) - 1)
                spellings.setdefault(key, Counter())[heading] += 1
        for key, relative in firsts.items():
            positions.setdefault(key, []).append(relative)
    needed = math.ceil(len(structures) / 2)
    shared = [key for key, found in positions.items() if len(found) >= needed]
    shared.sort(key=lambda key: sum(positions[key]) / len(positions[key]))
    return [spellings[key].most_common(1)[0][0] for key in shared]


def _plan_sentence(high: list[dict[str, Any]]) -> str:
    """Which sections to plan, in which order."""
    headings = shared_headings(high)
    if len(headings) >= 2 and len(high) > 1:
        return f"Plan these sections in this order, as the best-rated answers do: {'; '.join(headings)}."
    if len(headings) >= 2:
        return (
            f"The best-rated answer is organised as: {'; '.join(headings)}. Plan sections that play the same "
            "roles for the question at hand, in the same order."
        )
    return (
        "The best-rated answers use few or no headings: plan a short outline of two or three focused "
        "sections, each a single idea."
    )


def _habits(high: list[dict[str, Any]]) -> list[str]:
    """What most high-rated answers do: open with a direct answer, use lists, end with a summary."""
    habits = []
    if _most(high, "direct_answer"):
        habits.append(
            "Open with a direct answer to the question in one or two sentences, before any background."
        )
    if median(structure["list_items"] for structure in high) >= 2:
        habits.append("Use numbered or bulleted lists for steps and parallel points.")
    if _most(high, "conclusion"):
        habits.append("End with a short summary that restates the answer.")
    return habits


def _avoid_sentence(high: list[dict[str, Any]], low: list[dict[str, Any]]) -> str:
    """What the low-rated answers lack or overdo compared with the high-rated ones."""
    if not low:
        return ""
    faults = []
    if _most(high, "direct_answer") and not _most(low, "direct_answer"):
        faults.append("opening without a direct answer")
    high_words, low_words = median(s["words"] for s in high), median(s["words"] for s in low)
    if median(len(s["headings"]) for s in high) >= 2 and median(len(s["headings"]) for s in low) < 1:
        faults.append("running on without sections" if low_words >= 80 else "no sections")
    if any(s["paragraphs"] == 1 and not s["headings"] and s["words"] > 80 for s in low):
        faults.append("one unbroken block of text")
    if low_words > 1.5 * high_words:
        faults.append(f"rambling at length (about {_round_words(low_words)} words)")
    elif low_words < 0.5 * high_words:
        faults.append(f"answers too short to cover the question (about {_round_words(low_words)} words)")
    if _most(high, "conclusion") and not _most(low, "conclusion"):
        faults.append("ending without a summary")
    return f"Avoid what the low-rated answers did: {', '.join(faults)}." if faults else ""


def _most(structures: list[dict[str, Any]], key: str) -> bool:
    """True when more than half of the structures have `key` set."""
    return sum(bool(structure[key]) for structure in structures) * 2 > len(structures)


def _round_words(words: float) -> int:
    """A word count rounded to a friendly number (tens)."""
    return max(10, int(round(words, -1)))
