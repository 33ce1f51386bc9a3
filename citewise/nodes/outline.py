"""outline: SynthRAG's adaptive outline, the question type's instruction adapted to the question and evidence.

The question type is the one its form names (compare, pros and cons, history, how to, overview, why,
what is), else the library entry nearest to the question by embedding (citewise.core.outlines). With a
model, the writer adapts that type's instruction, given an overview of the kept evidence, into this
question's sections (title, goal, sub-queries). In local mode a question of several parts ("how X was
observed and what was found", "compare how the A and B guides ...") gets a section for each part, headed by
it and searching and choosing its sentences by it (`citewise.core.questions.report_parts`), and so does the
lean profile's (SmolLM2's own outlines lost the question's parts: covered 0.5 -> 0.0 on the sample's
"what was found and how" report); otherwise the outline comes from the evidence itself:
the kept chunks are clustered by their own vectors (k-means), each cluster becomes a section titled by the
terms that set it apart from the other clusters, sections are ordered by their best score, and the number of
clusters is chosen so every section starts with evidence of its own. When the question names what it is
about (an identifier some kept documents carry and others do not), only those documents are planned from
and searched by the sections (`citewise.core.report.in_focus`).
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from typing import Any

import numpy as np
from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core import llms
from citewise.core.evidence import overview
from citewise.core.indexes import in_thread, open_index
from citewise.core.outlines import OutlineType, load_library, nearest_type
from citewise.core.questions import FORMS, ReportPart, report_parts
from citewise.core.report import in_focus
from citewise.core.resources import Resources, resources_of
from citewise.core.text import STOPWORDS, content_words, ordered_unique
from citewise.index.reading import SearchIndex
from citewise.models import degradation
from citewise.prompts.common import DATA_RULE, as_messages, quote, render
from citewise.state import EvidenceRecord, OutlineSection, PlannedOutline, State

logger = logging.getLogger(__name__)

CHUNKS_PER_SECTION = 3
"""Local mode plans about one section per this many kept chunks."""
TITLE_TERMS = 2
"""Distinctive terms (words or two-word phrases) in a local section title."""
STEM = 6
"""Words that share this many first letters with a question word count as the question's (atmosphere/ic)."""


def question_type(
    embedder, question: str, library: list[OutlineType], resources: Resources | None = None
) -> OutlineType:
    """The library type the question's form names (questions.FORMS), else the nearest one by embedding."""
    by_name = {kind.name: kind for kind in library}
    for form in FORMS:
        if form.kind in by_name and form.pattern.search(question):
            return by_name[form.kind]
    centroids = resources.outline_centroids(embedder, library) if resources is not None else None
    return nearest_type(embedder, question, library, centroids)[0]


def passed(state: State) -> list[EvidenceRecord]:
    """Every chunk that passed the threshold, best first (not only those the direct writer would see)."""
    return [r for r in state.get("evidence", []) if r.get("kept")]


GENERIC = frozenset(
    "section sections figure figures table tables equation formula appendix paper papers study studies work "
    "result results using used based show shows shown found however therefore thus another also well first "
    "second third data value values model models method methods case cases number total given respectively "
    "here present presented suggest suggests assume assumed within without between among each whether while "
    "since these those which where when because could would should might".split()
)
"""Words that say where text is in a paper or how it argues, not what it is about: never a section title."""


TOKEN = re.compile(r"[A-Za-z][A-Za-z\-]*|[^\sA-Za-z]+")
NOT_A_HEAD = frozenset(
    "around about across along against clear future several different various possible likely previous "
    "recent new high low large small early late higher lower larger smaller further other such same main "
    "major minor full single multiple several specific general overall able available similar relative "
    "significant important possible potential typical total average initial final current".split()
)
"""Words a title term may not end with: titles are noun phrases ("Hubble Space Telescope", not "around")."""
MAX_PHRASE = 3
"""Words in a title phrase at most ("Hubble Space Telescope")."""


VERBS = frozenset(
    "outperform perform achieve improve provide propose introduce require allow enable yield reach obtain "
    "compare consider include contain produce generate detect observe measure describe explore investigate "
    "demonstrate indicate reveal report remain become appear seem tend lead apply affect increase decrease "
    "reduce exceed predict estimate train test evaluate identify make take give find show need".split()
)
"""Verbs papers use (also with -s): never the head of a title phrase ("Mostly outperform")."""
NOUNS_LIKE_ADJECTIVES = frozenset(
    "signal interval material proposal journal metal crystal terminal trial arrival topic metric logic "
    "graphic objective alternative narrative perspective initiative variable table cable vehicle principle "
    "article particle molecule schedule module example sample people style title".split()
)
"""Nouns whose ending looks like an adjective's (-al, -ic, -ive, -able, -le)."""
ADJECTIVE_ENDINGS = ("al", "ic", "ive", "ous", "ful", "less", "able", "ible", "ed", "ly", "ing", "ent", "ant")
ADVERBS = frozenset("quite very rather mostly also still even often always never only just much".split())


def _heads(word: str) -> bool:
    """Whether a word can end a noun phrase: not an adjective, adverb, participle or verb ("chemical")."""
    if word in NOUNS_LIKE_ADJECTIVES:
        return True
    if word in NOT_A_HEAD or word in ADVERBS or word in VERBS or word.removesuffix("s") in VERBS:
        return False
    return not word.endswith(ADJECTIVE_ENDINGS)


def phrases(text: str, exclude: set[str], forms: dict[str, Counter] | None = None) -> set[str]:
    """The words and phrases of up to MAX_PHRASE words a title could use, lower-cased.

    Phrases are runs of topical words, broken at anything else, and must end in a word that can end a noun
    phrase. `forms` collects each phrase's written forms ("JWST", "Hubble Space Telescope") for the title.
    """
    found: set[str] = set()
    run: list[str] = []
    for token in [*TOKEN.findall(text), "."]:
        word = token.lower()
        topical = (
            len(word) > 3 and word.isalpha() and word not in STOPWORDS and word not in GENERIC
        ) and word[:STEM] not in exclude
        if not topical:
            run = []
            continue
        run.append(token)
        for size in range(1, min(MAX_PHRASE, len(run)) + 1):
            words = run[-size:]
            lowered = [w.lower() for w in words]
            if not _heads(lowered[-1]) or any(
                w in ADVERBS or w.endswith("ly") or w in VERBS for w in lowered
            ):
                continue
            if lowered[0] in NOT_A_HEAD and size == 1:
                continue
            key = " ".join(w.lower() for w in words)
            found.add(key)
            if forms is not None:
                forms.setdefault(key, Counter())[" ".join(words)] += 1
    return found


def distinctive_terms(
    groups: list[list[str]],
    exclude: set[str],
    count: int = TITLE_TERMS,
    forms: dict[str, Counter] | None = None,
) -> list[list[str]]:
    """Per group of texts, the words and phrases most of its texts use and other groups' do not (c-TF-IDF).

    A term counts once per text (so one long chunk cannot name its group); words of the question (by their
    first STEM letters, given in `exclude`), numbers and generic paper words are left out; a phrase of n
    words weighs 1 + (n - 1) / 2 times a word (a name whole outweighs its parts), and a term sharing a word
    with a chosen one is not chosen again.
    """
    presence = [Counter(t for text in texts for t in phrases(text, exclude, forms)) for texts in groups]
    spread = Counter(t for counter in presence for t in counter)
    terms = []
    for texts, counter in zip(groups, presence, strict=True):
        weight = {
            t: n / len(texts) * math.log(1 + len(groups) / spread[t]) * (1 + (t.count(" ")) / 2)
            for t, n in counter.items()
        }
        chosen: list[str] = []
        for term, _ in sorted(weight.items(), key=lambda item: (-item[1], item[0])):
            if not any(set(term.split()) & set(other.split()) for other in chosen):
                chosen.append(term)
            if len(chosen) == count:
                break
        terms.append(chosen)
    return terms


def title_from(terms: list[str], forms: dict[str, Counter] | None = None) -> str:
    """'Clouds', 'Clouds and transit depth', 'JWST and the Hubble Space Telescope' from the section's terms.

    Each term is written as the documents most often write it (its case kept: JWST, Hubble); a lower-case
    term gets its first letter raised only at the title's start.
    """
    if not terms:
        return ""
    written = [(forms or {}).get(t, Counter({t: 1})).most_common(1)[0][0] for t in terms]
    text = written[0] if len(written) == 1 else f"{', '.join(written[:-1])} and {written[-1]}"
    return text[0].upper() + text[1:]


SECTION_NUMBER = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?|[IVX]+\.|[A-Z]\.)\s+")
PLAIN_HEADINGS = frozenset(
    [
        *"abstract introduction conclusion conclusions discussion summary results methods method".split(),
        *"background acknowledgements acknowledgments appendix references evaluation experiments".split(),
        "related work",
        "results and discussion",
    ]
)
"""Headings that say where a paper is, not what it is about: never a report section's title."""


def heading(group: list[EvidenceRecord]) -> str:
    """The heading the authors gave most of a group's passages ("Implications for JWST"), unnumbered.

    "" when they gave none, or only headings like "Introduction" that say where, not what.
    """
    written = Counter(  # the heading itself, not its path ("How to Generate Index Entries > 2.2 The Basics")
        SECTION_NUMBER.sub("", str(r.get("section", "")).split(" > ")[-1]).strip(" .:")
        for r in group
        if r.get("section")
    )
    for text, _ in written.most_common():
        if text and text.lower() not in PLAIN_HEADINGS and len(text) <= 60:
            return text[0].upper() + text[1:]
    return ""


def cluster_count(chunks: int, context: Context) -> int:
    """Sections for `chunks` kept chunks: about one per CHUNKS_PER_SECTION, within the context's bounds."""
    wanted = max(context.min_sections, round(chunks / CHUNKS_PER_SECTION))
    return max(1, min(chunks, context.max_sections, wanted))


def local_outline(
    index: SearchIndex, question: str, records: list[EvidenceRecord], context: Context
) -> list[dict]:
    """Sections from clusters of the kept evidence (see the module docstring)."""
    if not records:
        return []
    from sklearn.cluster import KMeans  # here, not at import: scikit-learn costs a direct answer ~2 s

    vectors = index.embedder.embed([r.get("text", "") for r in records])
    k = cluster_count(len(records), context)
    labels = (
        KMeans(n_clusters=k, random_state=0, n_init=10).fit_predict(vectors)
        if k > 1
        else np.zeros(len(records))
    )
    members = [[r for r, label in zip(records, labels, strict=True) if label == c] for c in range(k)]
    members = [group for group in members if group]
    asked = {w[:STEM] for w in content_words(question)}
    forms: dict[str, Counter] = {}
    terms = distinctive_terms([[r.get("text", "") for r in group] for group in members], asked, forms=forms)
    keywords = " ".join(ordered_unique(content_words(question)))
    sections: list[dict[str, Any]] = []
    headings = [heading(group) for group in members]
    for group, words, written in zip(members, terms, headings, strict=True):
        best = max(group, key=lambda r: r.get("final", 0.0))
        words = words or content_words(best.get("text", ""))[:TITLE_TERMS]
        unique = written and headings.count(written) == 1
        title = (written if unique else "") or title_from(words, forms) or best.get("title", "Evidence")
        sections.append(
            {
                "title": title,
                "goal": f"What the documents say about {', '.join(words)} for the question.",
                "queries": ordered_unique(
                    [f"{' '.join(words)} {keywords}".strip(), best.get("text", "")[:200]]
                ),
                "documents": [],
                "_score": max(r.get("final", 0.0) for r in group),
            }
        )
    sections.sort(key=lambda s: -s.pop("_score"))
    return sections


def part_section(part: ReportPart, question: str, evidence: list[EvidenceRecord]) -> dict:
    """The section that answers one part of the question: headed by it, searching and choosing by it.

    A part naming what some of the question's candidate documents are about (one guide of two compared) is
    searched in those documents only.
    """
    keywords = " ".join(ordered_unique(content_words(part.asked)))
    if part.name:  # one side of a comparison: the documents naming it, in their title or the passage
        named = re.compile(rf"(?<!\w){re.escape(part.name)}(?!\w)", re.IGNORECASE)
        focus = [r for r in evidence if named.search(f"{r.get('title', '')} {r.get('text', '')}")]
    else:
        focus = in_focus(part.asked, evidence)
    ids = list(dict.fromkeys(r.get("doc_id", "") for r in focus))
    documents = ids if focus and len(ids) < len({r.get("doc_id", "") for r in evidence}) else []
    return {
        "title": part.heading,
        "goal": f"Answer this part of the question: {part.asked}.",
        # its own words, and the whole question's (whose evidence the part's is often among)
        "queries": ordered_unique([part.asked, keywords, question]),
        "documents": documents,
        "asks": part.asked,
    }


def numbered(sections: list[dict], question: str) -> list[OutlineSection]:
    """Sections with ids s1, s2, ... in order, unique titles, and at least one query each."""
    seen: Counter[str] = Counter()
    result: list[OutlineSection] = []
    for n, section in enumerate(sections, start=1):
        title = " ".join(str(section.get("title", "")).split()) or f"Part {n}"
        seen[title.lower()] += 1
        if seen[title.lower()] > 1:
            title = f"{title} ({seen[title.lower()]})"
        queries = [q.strip() for q in section.get("queries", []) if str(q).strip()] or [f"{title} {question}"]
        result.append(
            {
                "id": f"s{n}",
                "title": title,
                "goal": str(section.get("goal", "")).strip(),
                "queries": queries[:3],
                "documents": list(section.get("documents", [])),
                "asks": str(section.get("asks", "")),
            }
        )
    return result


async def _llm_outline(
    writer, state: State, instruction: str, kind: str, context: Context, problem: str = ""
) -> list[dict] | None:
    prompt = render(
        context.outline_prompt,
        outline_type=kind,
        min_sections=str(context.min_sections),
        max_sections=str(context.max_sections),
        instruction=instruction,
        data_rule=DATA_RULE,
        question=quote("question", state["question"]),
        overview=overview(state),
    )
    if problem:
        bounds = f"{context.min_sections} to {context.max_sections}"
        prompt += f"\n\nYour previous outline {problem}. Plan it again with {bounds} sections."
    samples = await writer.structured(PlannedOutline, as_messages(prompt), stage="outline")
    planned = samples[0] if samples else None
    if planned is None or not planned.sections:
        return None
    return [s.model_dump() for s in planned.sections[: context.max_sections]]


async def outline(state: State, runtime: Runtime[Context]) -> dict:
    """Decide the report's sections: the nearest question type's outline, adapted to the question."""
    context = runtime.context
    index = await open_index(context)
    library = await in_thread(load_library, context.outline_library)
    kind = await in_thread(question_type, index.embedder, state["question"], library, resources_of(context))
    _, writer = llms.models(context)
    planned = None
    result: dict = {}
    if context.lean and report_parts(state["question"]):  # a small model plans no better than the question
        writer = None  # names its parts: a section for each, as local mode plans it (one request fewer)
    if writer is not None:
        planned = await _llm_outline(writer, state, kind.instruction, kind.name, context)
        if planned is not None and len(planned) < context.min_sections:  # held to the bounds: asked once more
            problem = f"had {len(planned)} section(s), fewer than the {context.min_sections} the report needs"
            logger.warning("the model's outline %s: asking once more", problem)
            again = await _llm_outline(writer, state, kind.instruction, kind.name, context, problem)
            planned = again if again is not None and len(again) >= len(planned) else planned
        if planned is None:
            logger.warning("the outline was unusable; planning it from the evidence instead")
            reason = "no usable outline (malformed after repairs, or no sections): planned from the evidence"
            result["degraded"] = [degradation("outline", reason, [])]
    if planned is None or len(planned) < context.min_sections:
        given = planned or []
        evidence = passed(state)
        focus = in_focus(state["question"], evidence)
        asked = report_parts(state["question"])
        if asked and not given:  # a question of several parts: a section answers each
            candidates = state.get("evidence", [])  # kept or not: a part may name a document none kept
            local = [part_section(p, state["question"], candidates) for p in asked[: context.max_sections]]
        else:
            local = await in_thread(local_outline, index, state["question"], focus, context)
        if len(focus) < len(evidence):  # the question names what the report is about: so do its sections
            documents = list(dict.fromkeys(r.get("doc_id", "") for r in focus))
            local = [{**section, "documents": section["documents"] or documents} for section in local]
        if given:  # the model's sections first, filled up from the local clustering
            titles = {str(section.get("title", "")).strip().lower() for section in given}
            extra = [section for section in local if section["title"].strip().lower() not in titles]
            planned = [*given, *extra][: max(context.min_sections, len(given))]
            reason = (
                f"the model's outline had {len(given)} section(s) after a second request, fewer than "
                f"{context.min_sections}: filled from the evidence"
            )
            result["degraded"] = [degradation("outline", reason, [])]
        else:
            planned = local
    return {"outline": numbered(planned, state["question"]), "outline_type": kind.name, **result}
