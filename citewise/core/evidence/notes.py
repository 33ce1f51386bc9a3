"""What the steps read of a run's evidence (kept records, paragraphs, an overview), and notes they write."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from citewise.index.reading import SearchIndex
from citewise.prompts.common import quote

if TYPE_CHECKING:  # annotations only: the state's module loads LangGraph (0.5 s)
    from citewise.state import Citation, EvidenceRecord, SectionState, State


def kept_records(state: State | SectionState) -> list[EvidenceRecord]:
    """The kept chunks' records in the order `rerank` chose."""
    by_id = {r["chunk_id"]: r for r in state.get("evidence", [])}
    return [by_id[c] for c in state.get("kept", []) if c in by_id]


def paragraph_texts(index: SearchIndex, records: Sequence[EvidenceRecord]) -> dict[str, str]:
    """The paragraph text of each record, by chunk id (the chunk text when the paragraph is gone)."""
    texts = {}
    for record in records:
        paragraph = index.paragraph(record.get("paragraph_id", ""))
        texts[record["chunk_id"]] = paragraph.text if paragraph else record.get("text", "")
    return texts


def overview(state: State) -> str:
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


def contradiction_note(citations: Sequence[Citation], records: Sequence[EvidenceRecord]) -> str:
    """A line naming the answer's markers whose evidence contradicts the trusted sources ("" when none)."""
    flagged = {r["chunk_id"] for r in records if CONTRADICTS in r.get("flags", [])}
    markers = sorted({c["marker"] for c in citations if c["chunk_id"] in flagged})
    if not markers:
        return ""
    cited = ", ".join(f"[{m}]" for m in markers)
    verb, pronoun = ("contradicts", "it") if len(markers) == 1 else ("contradict", "them")
    return f"Note: {cited} {verb} the trusted sources; weigh {pronoun} with care."
