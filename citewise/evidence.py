"""Evidence as the steps share it: labels for prompts, batches, packing, final scores and the threshold rule.

None of this is a step of the graph: the scoring, writing and verifying steps of the query graph and of every
report section use it alike, so no node has to import another.

The threshold rule: t = max(floor, min(mean + spread * stdev, top_ratio * best)). The first term adapts to the
query: when a few chunks stand out from many weak ones, the cut lands between the groups. The cap at a
fraction of the best score keeps a uniformly strong set from being cut in half (mean + 0.5 sd of scores that
are all about 80 is above most of them). The floor (20, ScoreRAG) keeps chunks no judge found useful out, so
"nothing relevant" stays possible and triggers the corrective loop.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping, Sequence
from typing import TypeVar

from citewise.context import Context
from citewise.index import Index
from citewise.prompts.common import quote
from citewise.state import EvidenceRecord

T = TypeVar("T")


def edges_first(ranked: Sequence[T]) -> list[T]:
    """Put the best items at the start and the end and the weakest in the middle.

    Models use the beginning and end of a long context best ("lost in the middle"), so rank 1 goes first,
    rank 2 last, rank 3 second, rank 4 second to last, and so on.
    """
    front: list[T] = []
    back: list[T] = []
    for i, item in enumerate(ranked):
        (front if i % 2 == 0 else back).append(item)
    return front + back[::-1]


NO_ANSWER = "Your documents do not answer this question."
"""citewise's own no-answer sentence (verification lets it stand uncited)."""
NOTHING_MATCHED = "Nothing in the index matched it."
"""What follows NO_ANSWER when the searches found nothing at all."""
CLOSEST = "The closest passages are below; they do not answer it."
"""What follows NO_ANSWER before the closest passages, quoted and cited, are listed."""
MARKER = re.compile(r"\[(\d+)\]")
"""A citation marker of an answer as shown: [n]."""
CLOSEST_HEADING = "Closest passages (they do not answer the question)"
"""How a no-answer reply labels the documents it quotes, where an answer would say "Sources"."""


def is_abstention(answer: str) -> bool:
    """Whether the answer is citewise's no-answer reply (nothing kept, or nothing verified)."""
    return answer.strip().startswith(NO_ANSWER)


Block = tuple[str, str, str]
"""(label, chunk id, prompt block) of one piece of evidence."""


def labelled(records: Sequence[EvidenceRecord], score: str | None = None) -> tuple[dict[str, str], str]:
    """Give records the labels E1..En; return label -> chunk id and the evidence block for a prompt.

    With `score`, each tag also shows the score under review (that key, else the relevance mean) as its
    `score` attribute, so the model sees what it is revisiting. It is an attribute of the tag, never a line of
    the text: the text is escaped, so a document cannot forge one.
    """
    labels: dict[str, str] = {}
    blocks = []
    for n, record in enumerate(records, start=1):
        label = f"E{n}"
        labels[label] = record["chunk_id"]
        attributes = {"id": label, "title": record.get("title", "")}
        if score is not None:
            attributes["score"] = shown_score(record, score)
        blocks.append(quote("evidence", record.get("text", ""), **attributes))
    return labels, "\n".join(blocks)


def shown_score(record: EvidenceRecord, key: str) -> str:
    """The score under review as a prompt shows it: `key`'s value, else the relevance mean, else "n/a"."""
    value = record.get(key)
    if value is None:
        value = record.get("relevance_mean")
    return "n/a" if value is None else f"{value:g}"


def batches(records: Sequence[EvidenceRecord], size: int) -> list[list[EvidenceRecord]]:
    """Consecutive groups of at most `size` records."""
    size = max(1, size)
    return [list(records[i : i + size]) for i in range(0, len(records), size)]


def final_score(record: EvidenceRecord) -> float:
    """The critic's score when it judged the chunk, else the reflected score, else the relevance mean."""
    for key in ("critic", "reflection", "relevance_mean"):
        value = record.get(key)
        if value is not None:
            return float(value)
    return 0.0


def dynamic_threshold(scores: Sequence[float], floor: float, spread: float, top_ratio: float) -> float:
    """The cut for one query's final scores (see the module docstring)."""
    if not scores:
        return floor
    mean = statistics.fmean(scores)
    deviation = statistics.pstdev(scores) if len(scores) > 1 else 0.0
    return round(max(floor, min(mean + spread * deviation, top_ratio * max(scores))), 1)


def context_threshold(scores: Sequence[float], context: Context) -> float:
    """`dynamic_threshold` with the run's settings."""
    return dynamic_threshold(
        scores, context.threshold_floor, context.threshold_spread, context.threshold_top_ratio
    )


def shared_threshold(evidence: Sequence[EvidenceRecord], threshold: float | None) -> float | None:
    """The one threshold every row was judged against, or None for rows with cuts of their own.

    `threshold` stands for rows that record none; a report's sections each judge with their own cut.
    """
    if not evidence:
        return threshold
    cuts = {record.get("threshold", threshold) for record in evidence}
    return next(iter(cuts)) if len(cuts) == 1 else None


def threshold_text(evidence: Sequence[EvidenceRecord], threshold: float | None) -> str:
    """How the evidence views name the cut: "threshold 54.2", or one per pass for a report's sections."""
    shared = shared_threshold(evidence, threshold)
    if isinstance(shared, int | float):
        return f"threshold {shared:g}"
    return "no threshold" if not evidence else "each pass its own threshold"


def judge_all(
    records: Sequence[EvidenceRecord], context: Context, paragraphs: Mapping[str, str] | None = None
) -> tuple[float, dict[str, EvidenceRecord]]:
    """Apply the threshold: the cut and, per chunk, final score, verdict and reason.

    In local mode nothing is kept when no candidate's answering score (citewise.answerable) reaches
    Context.local_answerable: the documents are taken not to answer the question. `paragraphs` (chunk id ->
    its paragraph's text) let the local bridge rule read what the best kept passage's paragraph names.
    """
    finals = {r["chunk_id"]: round(final_score(r), 1) for r in records}  # as shown: 0.1 apart
    cut = context_threshold(list(finals.values()), context)
    answering = [r["answering"] for r in records if r.get("answering") is not None]
    unanswered = bool(answering) and max(answering) < context.local_answerable
    if unanswered and finals:  # the cut shown is the one applied: above every passage
        cut = max(cut, math.floor(max(finals.values()) * 10 + 1) / 10)
    updates: dict[str, EvidenceRecord] = {}
    for chunk_id, value in finals.items():
        kept = value >= cut
        if unanswered:
            reason = (
                f"dropped: no passage answers the question (best answering score {max(answering):.2f} < "
                f"{context.local_answerable:g}), so the threshold {cut:g} is above every passage"
            )
        elif kept:
            reason = f"kept: final {value:g} >= threshold {cut:g}"
        elif value < context.threshold_floor:
            reason = f"dropped: final {value:g} below the floor {context.threshold_floor:g}"
        else:
            reason = f"dropped: final {value:g} < threshold {cut:g}"
        updates[chunk_id] = {"final": value, "kept": kept, "reason": reason, "threshold": cut}
    if not context.llm and not unanswered and context.second_hop:
        updates |= bridges(records, updates, context, paragraphs or {}, cut)
    return cut, updates


BRIDGE_SOURCES = 2
"""The best kept documents whose paragraphs may each bring one bridge document (a two-hop question's first
hop is not always the single best passage)."""
BRIDGE_FLAG = "bridge"
"""The flag of a chunk kept because the best kept passage names its document (a multi-hop bridge)."""
_TITLE_CORE = re.compile(r"\s*[,(].*$")


def title_core(title: str) -> str:
    """A title without its qualifier ("Charles Andrews (Maine politician)" -> "Charles Andrews")."""
    return _TITLE_CORE.sub("", title).strip()


def names_title(text: str, title: str) -> bool:
    """Whether `text` names the document `title` verbatim (by its core; cores under 4 characters never)."""
    core = title_core(title)
    return len(core) >= 4 and re.search(rf"(?<!\w){re.escape(core)}(?!\w)", text) is not None


def may_bridge(
    records: Sequence[EvidenceRecord], verdicts: dict[str, EvidenceRecord], context: Context
) -> bool:
    """Whether the local bridge rule could keep anything (only then are the kept paragraphs worth reading).

    Something is kept, and a dropped chunk above the floor comes from a document nothing was kept from.
    """
    if context.llm or not context.second_hop:
        return False
    kept_docs = {r.get("doc_id") for r in records if verdicts[r["chunk_id"]]["kept"]}
    return bool(kept_docs) and any(
        r.get("doc_id") not in kept_docs and verdicts[r["chunk_id"]]["final"] >= context.threshold_floor
        for r in records
    )


def bridges(
    records: Sequence[EvidenceRecord],
    verdicts: dict[str, EvidenceRecord],
    context: Context,
    paragraphs: Mapping[str, str],
    cut: float,
) -> dict[str, EvidenceRecord]:
    """Keep the best chunk of a document the best kept document names by its title, when local scoring cut it.

    A multi-hop question's bridge passage ("the film shot in Leland" -> Maximum Overdrive) is about an entity
    the first passage names, not about the question's words, so similarity scores it low; the first passage
    naming its title is the evidence that it belongs. What the kept chunks' paragraphs name counts (a cast
    list is seldom the sentence kept). One document at most, above the floor. Its final score is raised to
    the cut (a chunk is kept exactly when its final score reaches the threshold); its reason keeps its own.
    """
    kept = [r for r in records if verdicts[r["chunk_id"]]["kept"]]
    ranked_docs: list[str] = []  # kept documents, best first
    for r in sorted(kept, key=lambda r: (-verdicts[r["chunk_id"]]["final"], r["chunk_id"])):
        if r.get("doc_id") not in ranked_docs:
            ranked_docs.append(r.get("doc_id"))
    kept_docs = set(ranked_docs)
    found: dict[str, EvidenceRecord] = {}
    for naming_doc in ranked_docs[:BRIDGE_SOURCES]:
        naming = " ".join(
            dict.fromkeys(
                paragraphs.get(r["chunk_id"]) or r.get("text", "")
                for r in kept
                if r.get("doc_id") == naming_doc
            )
        )
        named = [
            record
            for record in records
            if record.get("doc_id") not in kept_docs
            and verdicts[record["chunk_id"]]["final"] >= context.threshold_floor
            and names_title(naming, record.get("title", ""))
        ]
        if not named:
            continue
        bridge = max(named, key=lambda r: (verdicts[r["chunk_id"]]["final"], r["chunk_id"]))
        kept_docs.add(bridge.get("doc_id"))
        title = next(r.get("title", "") for r in kept if r.get("doc_id") == naming_doc)
        final = verdicts[bridge["chunk_id"]]["final"]
        reason = (
            f"kept: a bridge, {title!r} names {bridge.get('title', '')!r} (its own final {final:g}, raised "
            f"to the threshold {cut:g})"
        )
        flags = [*bridge.get("flags", []), BRIDGE_FLAG]
        found[bridge["chunk_id"]] = {
            **verdicts[bridge["chunk_id"]],
            "final": max(final, cut),
            "kept": True,
            "reason": reason,
            "flags": flags,
        }
    return found


def estimate_tokens(text: str) -> int:
    """A provider-neutral token estimate (about four characters a token in English)."""
    return max(1, len(text) // 4)


def evidence_blocks(records: list[EvidenceRecord], summaries: dict[str, str]) -> list[Block]:
    """(label, chunk id, prompt block) per kept record, in the order given."""
    blocks = []
    for n, record in enumerate(records, start=1):
        label = f"E{n}"
        body = record.get("text", "")
        summary = summaries.get(record["chunk_id"], "")
        if summary and summary != body:
            body = f"{body}\n(context from the same paragraph: {summary})"
        blocks.append(
            (label, record["chunk_id"], quote("evidence", body, id=label, title=record.get("title", "")))
        )
    return blocks


def pack(blocks: list[Block], budget: int) -> list[list[Block]]:
    """Consecutive groups of blocks whose estimated tokens fit the budget (a lone oversized block alone)."""
    groups: list[list[Block]] = []
    used = 0
    for block in blocks:
        size = estimate_tokens(block[2])
        if groups and used + size <= budget:
            groups[-1].append(block)
            used += size
        else:
            groups.append([block])
            used = size
    return groups


def kept_records(state: dict) -> list[EvidenceRecord]:
    """The kept chunks' records in the order `rerank` chose."""
    by_id = {r["chunk_id"]: r for r in state.get("evidence", [])}
    return [by_id[c] for c in state.get("kept", []) if c in by_id]


def paragraph_texts(index: Index, records: Sequence[EvidenceRecord]) -> dict[str, str]:
    """The paragraph text of each record, by chunk id (the chunk text when the paragraph is gone)."""
    texts = {}
    for record in records:
        paragraph = index.paragraph(record.get("paragraph_id", ""))
        texts[record["chunk_id"]] = paragraph.text if paragraph else record.get("text", "")
    return texts


def overview(state: dict) -> str:
    """How much evidence the first search kept and where it comes from (for the router and the outline)."""
    kept = [r for r in state.get("evidence", []) if r.get("kept")]
    titles = list(dict.fromkeys(r.get("title", "") for r in kept))
    lines = [f"{len(kept)} passages kept from {len(titles)} documents:"]
    lines += [f"- {title}" for title in titles[:12]]
    lines += [f"  * {r.get('text', '')[:160]}" for r in kept_records(state)[:8]]
    return quote("evidence", "\n".join(lines), id="overview")


NO_SECTION_EVIDENCE = "Your documents hold no evidence for this section."
"""What a report section says in its place when its searches kept nothing (verification lets it stand)."""
SECTION_FAILED = "This section could not be written"
"""The start of what a failed section says in its place (verification lets it stand)."""


def failed_note(reason: str) -> str:
    """What a failed section says in its place: one sentence, its reason without brackets or full stops."""
    plain = " ".join(re.sub(r"[()\[\].!?]", " ", reason).split())[:200]
    return f"{SECTION_FAILED} ({plain})."


PART_UNANSWERED = "Your documents do not answer this part of the question:"
"""What a local answer says of a part of the question no chosen sentence answers (it stands uncited)."""


CONTRADICTS = "contradicts the trusted sources"
"""The flag of evidence whose document contradicts the trusted sources' GenText (Context.trusted)."""


def contradiction_note(citations: Sequence[dict], records: Sequence[EvidenceRecord]) -> str:
    """A line naming the answer's markers whose evidence contradicts the trusted sources ("" when none)."""
    flagged = {r["chunk_id"] for r in records if CONTRADICTS in r.get("flags", [])}
    markers = sorted({c["marker"] for c in citations if c["chunk_id"] in flagged})
    if not markers:
        return ""
    cited = ", ".join(f"[{m}]" for m in markers)
    verb, pronoun = ("contradicts", "it") if len(markers) == 1 else ("contradict", "them")
    return f"Note: {cited} {verb} the trusted sources; weigh {pronoun} with care."
