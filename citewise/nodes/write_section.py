"""write_section: one report section from its own kept evidence, citing labels unique across sections.

The section writer sees only the evidence its own searches kept (never another section's), under labels
E1..En; its text is then relabelled S<position>E<n> so that every label of the whole report names exactly one
chunk. With a model the section is synthesised iteratively within the context budget; in local mode it is
the kept evidence's sentences closest to the section's focus (the part of the question it answers), each
cited. A model's section that says nothing, cites none of its evidence, repeats itself, or none of whose
sentences shares enough of its words with the evidence it cites (verify would withhold it whole) is replaced
by local mode's section from the same evidence, and the run's `degraded` says so. A section whose searches
kept nothing says so in its place instead of inventing content.
"""

from __future__ import annotations

import logging
import re

from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core import llms
from citewise.core.evidence import NO_SECTION_EVIDENCE, evidence_blocks, kept_records
from citewise.core.indexes import in_thread, open_index
from citewise.core.text import content_words, overlap, sentences
from citewise.core.writing import candidate_sentences, cite, prompt_pair, select_sentences, synthesize
from citewise.models import degradation
from citewise.prompts.common import quote
from citewise.state import EvidenceRecord, SectionResult, SectionState

logger = logging.getLogger(__name__)

WRITER_LABEL = re.compile(r"\[(E\d+)\]")


def relabel(text: str, prefix: str, known: set[str]) -> str:
    """[E2] -> [S3E2] for labels the writer was given; labels it invented are removed."""
    return WRITER_LABEL.sub(lambda m: f"[{prefix}{m.group(1)}]" if m.group(1) in known else "", text)


async def write_section(state: SectionState, runtime: Runtime[Context]) -> dict:
    """Decide the section's text from its own kept evidence."""
    context = runtime.context
    section = state["section"]
    prefix = f"S{state.get('position', 1)}"
    kept = kept_records(state)
    evidence: list[EvidenceRecord] = [
        {**r, "report_section": section["id"]} for r in state.get("evidence", [])
    ]
    result: SectionResult = {
        "id": section["id"],
        "title": section["title"],
        "threshold": state.get("threshold", 0.0),
        "evidence": evidence,
        "kept": [r["chunk_id"] for r in kept],
        "error": "",
    }
    if not kept:
        result |= {"status": "no_evidence", "text": NO_SECTION_EVIDENCE, "labels": {}}
        return {"sections": {section["id"]: result}}
    labels = {f"E{n}": r["chunk_id"] for n, r in enumerate(kept, start=1)}
    _, writer = llms.models(context)
    asked = section.get("asks") or state["question"]  # a part of the question, when it has several
    degraded = []
    if writer is None:
        text = await _extractive(context, asked, labels, kept)
    else:
        first, refine = prompt_pair(
            context.section_prompt,
            context.section_refine_prompt,
            title=section["title"],
            goal=section.get("goal", "") or section["title"],
            titles="; ".join(state.get("outline_titles", [])),
            question=quote("question", state.get("report_question", state["question"])),
        )
        blocks = evidence_blocks(kept, state.get("summaries", {}))
        text = await synthesize(writer, blocks, context.context_tokens, first, refine, stage="write_section")
        sources = {label: r.get("text", "") for label, r in zip(labels, kept, strict=True)}
        problem = malformed(relabel(text, "", set(labels))) or unsupported(
            text, sources, context.local_support
        )
        if problem:  # never worse than no model: local mode's section from the same evidence
            text = await _extractive(context, asked, labels, kept)
            reason = f"the model's section {section['title']!r} {problem}: local mode's section is shown"
            logger.warning("write_section: %s", reason)
            degraded = [degradation("write_section", reason, [r["chunk_id"] for r in kept])]
    text = relabel(text, prefix, set(labels)).strip()
    result |= {
        "status": "written" if text else "no_evidence",
        "text": text or NO_SECTION_EVIDENCE,
        "labels": {f"{prefix}{label}": chunk_id for label, chunk_id in labels.items()},
    }
    return {"sections": {section["id"]: result}, **({"degraded": degraded} if degraded else {})}


async def _extractive(
    context: Context, asked: str, labels: dict[str, str], kept: list[EvidenceRecord]
) -> str:
    """Local mode's section: the kept evidence's sentences closest to what the section answers, cited."""
    index = await open_index(context)
    pairs = [(label, r.get("text", "")) for label, r in zip(labels, kept, strict=True)]
    candidates = candidate_sentences(pairs)
    chosen, _ = await in_thread(select_sentences, index, asked, candidates)
    return cite(chosen)


def unsupported(text: str, sources: dict[str, str], minimum: float) -> str:
    """What is wrong when no sentence of a model's section says what its cited evidence says ("" otherwise).

    Says: shares `minimum` of its content words with a passage it cites. A section with no such sentence
    would be withheld whole by verify; local mode's section from the same evidence says something checked.
    """
    for sentence in sentences(text):
        cited = [sources[label] for label in WRITER_LABEL.findall(sentence) if label in sources]
        claim = WRITER_LABEL.sub("", sentence)
        if cited and content_words(claim) and max(overlap(claim, source) for source in cited) >= minimum:
            return ""
    return "says nothing its evidence says"


def malformed(text: str) -> str:
    """What makes a model's section unusable ("" when nothing does), its labels checked already.

    No sentence citing the section's evidence; no sentence that says anything; or one sentence said over and
    over (a small model's loop). Wording is not judged here: verify checks every sentence against its lines.
    """
    parts = [p for p in sentences(text) if content_words(WRITER_LABEL.sub("", p))]
    if not parts:
        return "says nothing"
    if not any(WRITER_LABEL.search(p) for p in parts):
        return "cites none of its evidence"
    said = [" ".join(content_words(WRITER_LABEL.sub("", p))) for p in parts]
    if len(said) >= 3 and len(set(said)) <= len(said) / 2:
        return "repeats itself"
    return ""
