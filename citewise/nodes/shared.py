"""What several nodes need: the open index, the run's models, evidence labels and text helpers."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage

from citewise.context import Context
from citewise.index import Index
from citewise.index.chunking import split_sentences
from citewise.prompts.common import quote
from citewise.state import EvidenceRecord

_indexes: dict[tuple[str, str | None], Index] = {}
_lock = threading.Lock()


async def open_index(context: Context) -> Index:
    """The index the context names, opened once per process, off the event loop (opening syncs the stores)."""
    return await asyncio.to_thread(_open_index, context.index_dir, context.chroma_url)


def _open_index(index_dir: str, chroma_url: str | None) -> Index:
    key = (index_dir, chroma_url)
    with _lock:
        if key not in _indexes:
            _indexes[key] = Index.open(index_dir, chroma_url=chroma_url, create=False)
        return _indexes[key]


def forget_index(context: Context) -> None:
    """Drop the cached handle (after the index was rewritten by another process)."""
    with _lock:
        index = _indexes.pop((context.index_dir, context.chroma_url), None)
    if index is not None:
        index.close()


async def in_thread(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Run blocking index work (SQLite, Chroma, the embedding model) off the event loop."""
    return await asyncio.to_thread(function, *args, **kwargs)


def last_human(messages: Sequence[AnyMessage]) -> str:
    """The text of the last human message ("" when there is none)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage) or getattr(message, "type", "") == "human":
            return message_text(message)
    return ""


def message_text(message: AnyMessage) -> str:
    """A message's text, whatever the content shape."""
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") for part in content if isinstance(part, dict))


def labelled(records: Sequence[EvidenceRecord]) -> tuple[dict[str, str], str]:
    """Give records the labels E1..En; return label -> chunk id and the evidence block for a prompt."""
    labels: dict[str, str] = {}
    blocks = []
    for n, record in enumerate(records, start=1):
        label = f"E{n}"
        labels[label] = record["chunk_id"]
        blocks.append(quote("evidence", record.get("text", ""), id=label, title=record.get("title", "")))
    return labels, "\n".join(blocks)


def sentences(text: str) -> list[str]:
    """The sentences of a text (blingfire, as the chunker splits them)."""
    flat = " ".join(text.split())
    return [flat[s:e] for s, e in split_sentences(flat, max_chars=10_000)]


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-']+")
STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it "
    "its "
    "me my not of on or our she so than that the their them then there these they this those to was we were "
    "what when where which who whom why will with would you your about also any more most other some such "
    "only own same very just should now after before between during over under again further once here all "
    "both each few many much no nor too out up down off above below tell show give explain describe".split()
)


def content_words(text: str) -> list[str]:
    """Lower-cased words of a text without stopwords (order kept, repeats kept)."""
    return [
        w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in STOPWORDS and len(w) > 1
    ]


def overlap(claim: str, source: str) -> float:
    """Share of the claim's distinct content words found in the source (0..1)."""
    claim_words = set(content_words(claim))
    if not claim_words:
        return 1.0
    return len(claim_words & set(content_words(source))) / len(claim_words)


def ordered_unique(items: Iterable[str]) -> list[str]:
    """Items without repeats, first occurrence kept."""
    return list(dict.fromkeys(items))
