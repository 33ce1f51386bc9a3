"""write_section: one report section from its own kept evidence, citing labels unique across sections.

The section writer sees only the evidence its own searches kept (never another section's), under labels
E1..En; its text is then relabelled S<position>E<n> so that every label of the whole report names exactly one
chunk. With a model the section is synthesised iteratively within the context budget; in local mode it is
the kept evidence's sentences closest to the section's focus, each cited. A section whose searches kept
nothing says so in its place instead of inventing content.
"""

from __future__ import annotations

import re

from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core import llms
from citewise.core.evidence import NO_SECTION_EVIDENCE, evidence_blocks, kept_records
from citewise.core.indexes import in_thread, open_index
from citewise.core.writing import candidate_sentences, cite, prompt_pair, select_sentences, synthesize
from citewise.prompts.common import quote
from citewise.state import SectionResult, SectionState

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
    evidence = [{**r, "report_section": section["id"]} for r in state.get("evidence", [])]
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
    if writer is None:
        index = await open_index(context)
        candidates = candidate_sentences(
            [(label, r.get("text", "")) for label, r in zip(labels, kept, strict=True)]
        )
        asked = section.get("asks") or state["question"]  # a part of the question, when it has several
        chosen, _ = await in_thread(select_sentences, index, asked, candidates)
        text = cite(chosen)
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
    text = relabel(text, prefix, set(labels)).strip()
    status = "written" if text else "no_evidence"
    result |= {
        "status": status,
        "text": text or NO_SECTION_EVIDENCE,
        "labels": {f"{prefix}{label}": chunk_id for label, chunk_id in labels.items()},
    }
    return {"sections": {section["id"]: result}}
