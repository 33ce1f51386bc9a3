"""The local bridge rule of a two-hop question: keep the passage the best kept passage names by its title.

A two-hop question's words are spread over two passages, the first naming the entity the second is about;
in local mode the second is kept when the first names it (BRIDGE_FLAG), whatever its own score.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from citewise.context import Context

if TYPE_CHECKING:  # annotations only: the state's module loads LangGraph (0.5 s)
    from citewise.state import EvidenceRecord

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
    ranked_docs: list[str | None] = []  # kept documents, best first
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
