"""Evidence in prompts and views: labels, shown scores, batches, edges-first order, abstention wording.

The wording a direct answer and its views share when the documents do not answer (`NO_ANSWER`, ...), and
the `Block`s the writer packs, live here too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

from citewise.prompts.common import quote

if TYPE_CHECKING:  # annotations only: the state's module loads LangGraph (0.5 s)
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
CLOSEST = "The closest passages are below; none was found to answer it."
"""What follows NO_ANSWER before the closest passages, quoted and cited, are listed: found by the scores and
the threshold, which can miss a passage ("... the distance between the two bar magnets was taken as 3.6 mm"
listed for "And how far apart are they?"), so it says what was found, not what the passages hold."""
MARKER = re.compile(r"\[(\d+)\]")
"""A citation marker of an answer as shown: [n]."""
CLOSEST_HEADING = "Closest passages (none was found to answer the question)"
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
