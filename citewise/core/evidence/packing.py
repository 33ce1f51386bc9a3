"""Packing evidence into the writer's context window: token estimates, blocks, and batches that fit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from citewise.core.evidence.labels import Block
from citewise.core.text import sentences
from citewise.prompts.common import quote

if TYPE_CHECKING:  # annotations only: the state's module loads LangGraph (0.5 s)
    from citewise.state import EvidenceRecord


CONTEXT_NOTE = "context from the same paragraph"
"""What introduces a passage's context in the writer's prompt (a small writer may copy it into its answer)."""


def estimate_tokens(text: str) -> int:
    """A provider-neutral token estimate (about four characters a token in English)."""
    return max(1, len(text) // 4)


def evidence_blocks(records: list[EvidenceRecord], summaries: dict[str, str]) -> list[Block]:
    """(label, chunk id, prompt block) per kept record, in the order given."""
    blocks = []
    for n, record in enumerate(records, start=1):
        label = f"E{n}"
        body = record.get("text", "")
        said = " ".join(body.split())
        summary = sentences(summaries.get(record["chunk_id"], ""))
        around = [s for s in summary if " ".join(s.split()) not in said]
        if around:  # what the paragraph adds, not the chunk's own sentences again
            body = f"{body}\n({CONTEXT_NOTE}: {' '.join(around)})"
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
