"""Evidence as the steps share it, one module per concern; every name is importable from here too.

None of this is a step of the graph: the scoring, writing and verifying steps of the query graph and of every
report section use it alike, so no node has to import another.

- `labels`: labels and shown scores in prompts, batches, edges-first order, the abstention wording;
- `threshold`: final scores and the threshold rule with the verdict every chunk records;
- `bridges`: the local bridge rule of two-hop questions;
- `packing`: evidence packed into the writer's context window;
- `notes`: what the steps read of a run's evidence and the notes they write.
"""

from __future__ import annotations

from citewise.core.evidence.bridges import (
    BRIDGE_FLAG,
    BRIDGE_SOURCES,
    bridges,
    may_bridge,
    names_title,
    title_core,
)
from citewise.core.evidence.labels import (
    CLOSEST,
    CLOSEST_HEADING,
    MARKER,
    NO_ANSWER,
    NOTHING_MATCHED,
    Block,
    batches,
    edges_first,
    is_abstention,
    labelled,
    shown_score,
)
from citewise.core.evidence.notes import (
    CONTRADICTS,
    NO_SECTION_EVIDENCE,
    PART_UNANSWERED,
    SECTION_FAILED,
    contradiction_note,
    failed_note,
    kept_records,
    overview,
    paragraph_texts,
)
from citewise.core.evidence.packing import estimate_tokens, evidence_blocks, pack
from citewise.core.evidence.threshold import (
    context_threshold,
    dynamic_threshold,
    final_score,
    judge_all,
    shared_threshold,
    threshold_text,
)

__all__ = [
    "BRIDGE_FLAG",
    "BRIDGE_SOURCES",
    "Block",
    "CLOSEST",
    "CLOSEST_HEADING",
    "CONTRADICTS",
    "MARKER",
    "NOTHING_MATCHED",
    "NO_ANSWER",
    "NO_SECTION_EVIDENCE",
    "PART_UNANSWERED",
    "SECTION_FAILED",
    "batches",
    "bridges",
    "context_threshold",
    "contradiction_note",
    "dynamic_threshold",
    "edges_first",
    "estimate_tokens",
    "evidence_blocks",
    "failed_note",
    "final_score",
    "is_abstention",
    "judge_all",
    "kept_records",
    "labelled",
    "may_bridge",
    "names_title",
    "overview",
    "pack",
    "paragraph_texts",
    "shared_threshold",
    "shown_score",
    "threshold_text",
    "title_core",
]
