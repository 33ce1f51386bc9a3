"""accuracy: order the shown evidence by topicality and by agreement with the trusted sources.

Off unless `Context.trusted` names trusted sources (paths, globs, document ids, or `tag:NAME` for the
documents ingested with `--tag NAME`). The kept evidence from
trusted documents yields a GenText of about 64 words, citing them (health-IR RAG, arXiv 2502.04666): the
writer writes it from that evidence only, or in local mode it is the trusted evidence's sentences most
similar to the question. Each other document shown to the writer gets an accuracy in [0, 1]: the judge's
stance towards the GenText (supports 1, neutral 0.5, contradicts 0) blended half and half with the cosine
similarity of its kept text to the GenText; trusted documents get 1. Local mode has no stance model, so
accuracy is the similarity alone and every scored record says so. The shown evidence is then reordered by
RSV = beta x topicality + (1 - beta) x accuracy, topicality being the final relevance score / 100; which
chunks are shown (rerank's cut at max_evidence) does not change. A document that contradicts the GenText is
flagged, and the references step notes it in the answer.
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core import llms
from citewise.core.evidence import CONTRADICTS, edges_first, kept_records
from citewise.core.indexes import in_thread, open_index
from citewise.core.judge import ask as judge_ask
from citewise.core.judge import by_label, fell_back
from citewise.core.text import sentences
from citewise.index.embeddings import Embedder
from citewise.index.reading import SearchIndex
from citewise.index.records import document_tags
from citewise.prompts.common import DATA_RULE, as_messages, quote, render
from citewise.state import Degraded, EvidenceRecord, Stances, State

logger = logging.getLogger(__name__)

GENTEXT_WORDS = 64
"""Length of the GenText in words (the paper's 64)."""
STANCE_VALUE = {"supports": 1.0, "neutral": 0.5, "contradicts": 0.0}
"""Accuracy a stance stands for."""
STANCE_WEIGHT = 0.5
"""Share of accuracy taken from the stance; the rest is the similarity to the GenText."""
SIMILARITY_ONLY = "accuracy: similarity only (no stance model in local mode)"
STANCE_MISSING = "accuracy: similarity only (the stance judgment was malformed or failed)"
SIMILARITY_STANDS = "the documents' similarity to the GenText alone ranks them"
"""What a batch the stance judge failed keeps (recorded in `degraded`)."""
NO_TRUSTED = "accuracy not scored: no trusted evidence was kept for this question"
_LABEL = re.compile(r"\[(T\d+)\]")


TAG = "tag:"
"""Prefix of a trusted pattern that matches the documents' ingest tags instead of their files."""


def is_trusted(patterns: Sequence[str], file: str, doc_id: str, tags: Sequence[str] = ()) -> bool:
    """Whether a document matches a trusted pattern: its file (or a folder of it), name, id or an ingest tag.

    A pattern `tag:NAME` (NAME may be a glob) matches only the tags; any other pattern only the rest.
    """
    name = Path(file).name if file else ""
    for pattern in patterns:
        if pattern.startswith(TAG):
            if any(fnmatch.fnmatchcase(tag, pattern[len(TAG) :]) for tag in tags):
                return True
            continue
        absolute = str(Path(pattern).expanduser().absolute())
        if doc_id and fnmatch.fnmatchcase(doc_id, pattern):
            return True
        if file and (
            fnmatch.fnmatchcase(file, pattern)
            or fnmatch.fnmatchcase(file, absolute)
            or file.startswith(absolute.rstrip("/") + "/")
            or fnmatch.fnmatchcase(name, pattern)
        ):
            return True
    return False


def document_sources(index: SearchIndex, doc_ids: set[str]) -> dict[str, tuple[str, list[str]]]:
    """The source file and ingest tags of each document (("", []) when it is no longer stored)."""
    sources: dict[str, tuple[str, list[str]]] = {}
    for doc_id in sorted(doc_ids):
        record = index.document(doc_id)
        sources[doc_id] = (record.file, document_tags(record.metadata)) if record else ("", [])
    return sources


def topicality(record: EvidenceRecord) -> float:
    """The record's final relevance score on 0..1."""
    return min(1.0, max(0.0, float(record.get("final", 0.0)) / 100.0))


def rsv(beta: float, topical: float, accuracy: float) -> float:
    """The retrieval status value: beta x topicality + (1 - beta) x accuracy."""
    return round(beta * topical + (1.0 - beta) * accuracy, 4)


def blend(stance: str, similarity: float) -> float:
    """Accuracy from a stance and the similarity to the GenText (similarity alone for an unknown stance)."""
    if stance not in STANCE_VALUE:
        return similarity
    return STANCE_WEIGHT * STANCE_VALUE[stance] + (1.0 - STANCE_WEIGHT) * similarity


def similarities(embedder: Embedder, gentext: str, texts: dict[str, str]) -> dict[str, float]:
    """Cosine similarity of each text to the GenText, clipped to 0..1 (vectors are L2-normalised)."""
    keys = list(texts)
    if not keys or not gentext.strip():
        return dict.fromkeys(keys, 0.0)
    vectors = embedder.embed([gentext, *(texts[k] for k in keys)])
    cosines = vectors[1:] @ vectors[0]
    return {k: float(np.clip(c, 0.0, 1.0)) for k, c in zip(keys, cosines.tolist(), strict=True)}


def labelled_trusted(records: Sequence[EvidenceRecord]) -> dict[str, EvidenceRecord]:
    """The trusted records under the labels T1..Tn."""
    return {f"T{n}": r for n, r in enumerate(records, start=1)}


def cite_titles(text: str, labels: dict[str, EvidenceRecord]) -> str:
    """Markers like [T2] as the trusted document's title; markers of labels not shown are dropped."""

    def title(match: re.Match[str]) -> str:
        record = labels.get(match.group(1))
        return f"[{record.get('title') or record['doc_id']}]" if record else ""

    return re.sub(r" +([.,;])", r"\1", _LABEL.sub(title, text)).strip()


def local_gentext(embedder: Embedder, question: str, records: Sequence[EvidenceRecord]) -> str:
    """The trusted evidence's sentences most similar to the question, best first, until about 64 words."""
    labels = labelled_trusted(records)
    candidates = [
        (label, s) for label, r in labels.items() for s in sentences(r.get("text", "")) if s.strip()
    ]
    if not candidates:
        return ""
    vectors = embedder.embed([question, *(s for _, s in candidates)])
    order = np.argsort(-(vectors[1:] @ vectors[0]), kind="stable").tolist()
    chosen: list[tuple[str, str]] = []
    words = 0
    for i in order:
        if words >= GENTEXT_WORDS:
            break
        chosen.append(candidates[i])
        words += len(candidates[i][1].split())
    return cite_titles(" ".join(f"{text} [{label}]" for label, text in chosen), labels)


async def write_gentext(writer, context: Context, question: str, records: Sequence[EvidenceRecord]) -> str:
    """The writer's GenText from the trusted evidence only, citing it."""
    labels = labelled_trusted(records)
    evidence = "\n".join(
        quote("evidence", r.get("text", ""), id=label, title=r.get("title", ""))
        for label, r in labels.items()
    )
    prompt = render(
        context.gentext_prompt,
        words=str(GENTEXT_WORDS),
        data_rule=DATA_RULE,
        question=quote("question", question),
        evidence=evidence,
    )
    reply = await writer.text(as_messages(prompt), stage="accuracy")
    return cite_titles(reply.strip(), labels)


async def _stance_batch(
    judge,
    batch: list[tuple[str, str, str]],
    question: str,
    gentext: str,
    context: Context,
) -> tuple[dict[str, tuple[str, str]], list[Degraded]]:
    labels = {f"E{n}": doc_id for n, (doc_id, _, _) in enumerate(batch, start=1)}
    evidence = "\n".join(
        quote("evidence", text, id=label, title=title)
        for label, (_, title, text) in zip(labels, batch, strict=True)
    )
    prompt = render(
        context.stance_prompt,
        data_rule=DATA_RULE,
        question=quote("question", question),
        draft=quote("draft", gentext),
        evidence=evidence,
    )
    verdicts = await judge_ask(judge, Stances, prompt, stage="accuracy")
    if verdicts.first is None:  # the documents' stances stay unknown (flagged), similarity alone stands
        return {}, fell_back("accuracy", verdicts.failure, SIMILARITY_STANDS, list(labels.values()))
    found = by_label(verdicts.first.items, labels, lambda item: item.id)
    stances: dict[str, tuple[str, str]] = {
        doc_id: (item.stance, item.reason.strip()) for doc_id, item in found.items()
    }
    return stances, []


async def judge_stances(
    judge,
    context: Context,
    question: str,
    gentext: str,
    documents: dict[str, tuple[str, str]],
) -> tuple[dict[str, tuple[str, str]], list[Degraded]]:
    """Each document's (stance, reason) towards the GenText, and the failed batches as `degraded` entries.

    A document the judge missed is absent (its stance is unknown, and flagged).
    """
    items = [(doc_id, title, text) for doc_id, (title, text) in documents.items()]
    groups = [items[i : i + context.score_batch_size] for i in range(0, len(items), context.score_batch_size)]
    results = await asyncio.gather(*(_stance_batch(judge, g, question, gentext, context) for g in groups))
    stances = {k: v for found, _ in results for k, v in found.items()}
    return stances, [entry for _, entries in results for entry in entries]


def _flagged(record: EvidenceRecord, *flags: str) -> list[str]:
    existing = list(record.get("flags", []))
    return existing + [f for f in flags if f not in existing]


async def accuracy(state: State, runtime: Runtime[Context]) -> dict:
    """Decide each shown document's agreement with the trusted sources, and order the evidence by RSV."""
    context = runtime.context
    if not context.trusted:
        return {}
    shown = kept_records(state)
    if not shown:
        return {"gentext": ""}
    index = await open_index(context)
    sources = await in_thread(document_sources, index, {r["doc_id"] for r in shown})
    trusted_docs = {d for d, (f, tags) in sources.items() if is_trusted(context.trusted, f, d, tags)}
    trusted = [r for r in shown if r["doc_id"] in trusted_docs]
    if not trusted:
        flagged = {r["chunk_id"]: {"flags": _flagged(r, NO_TRUSTED)} for r in shown}
        evidence = [{**r, **flagged.get(r["chunk_id"], {})} for r in state.get("evidence", [])]
        return {"gentext": "", "evidence": evidence}
    question = state["question"]
    others: dict[str, tuple[str, str]] = {}
    for record in shown:
        if record["doc_id"] not in trusted_docs:
            title, text = others.get(record["doc_id"], (record.get("title", ""), ""))
            others[record["doc_id"]] = (title, f"{text} {record.get('text', '')}".strip())
    judge, writer = llms.models(context, "accuracy")
    if writer is None:
        gentext = await in_thread(local_gentext, index.embedder, question, trusted)
        stances: dict[str, tuple[str, str]] = {}
        degraded: list[Degraded] = []
    else:
        gentext = await write_gentext(writer, context, question, trusted)
        stances, degraded = (
            await judge_stances(judge or writer, context, question, gentext, others) if others else ({}, [])
        )
    texts = {doc_id: text for doc_id, (_, text) in others.items()}
    similarity = await in_thread(similarities, index.embedder, gentext, texts)
    updates: dict[str, EvidenceRecord] = {}
    for record in shown:
        doc_id = record["doc_id"]
        if doc_id in trusted_docs:
            update: EvidenceRecord = {"trusted": True, "stance": "trusted", "accuracy": 1.0}
        else:
            stance, _reason = stances.get(doc_id, ("unknown", ""))
            score = round(blend(stance, similarity[doc_id]), 4)
            update = {"trusted": False, "stance": stance, "accuracy": score}  # type: ignore[typeddict-item]
            if writer is None:
                update["flags"] = _flagged(record, SIMILARITY_ONLY)
            elif stance == "contradicts":
                update["flags"] = _flagged(record, CONTRADICTS)
            elif stance == "unknown":
                update["flags"] = _flagged(record, STANCE_MISSING)
        update["rsv"] = rsv(context.beta, topicality(record), update["accuracy"])
        updates[record["chunk_id"]] = update
    ranked = sorted(
        shown, key=lambda r: (-updates[r["chunk_id"]]["rsv"], -r.get("final", 0.0), r["chunk_id"])
    )
    ordered = edges_first(ranked)
    for n, record in enumerate(ordered, start=1):
        updates[record["chunk_id"]]["rank"] = n
    evidence = [{**r, **updates.get(r["chunk_id"], {})} for r in state.get("evidence", [])]
    result = {"gentext": gentext, "kept": [r["chunk_id"] for r in ordered], "evidence": evidence}
    for entry in degraded:  # the stance batches name documents: list their shown chunks
        entry["chunks"] = [r["chunk_id"] for r in shown if r["doc_id"] in set(entry["chunks"])]
    return {**result, "degraded": degraded} if degraded else result
