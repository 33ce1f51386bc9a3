"""retrieve: hybrid search for every query, a second hop, union by chunk, near-duplicates dropped, capped.

The second hop (Context.second_hop, `citewise.index.hops`): the first query joined to the paragraph of each
of its best documents is searched too, and what it finds beyond the first round's two best documents joins
the candidates, so a multi-hop question's bridge passage can be judged. bench/retrieval.py measures the
same searches on HotpotQA (the hybrid-0.5-2hop runs; the README quotes its latest figures).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from citewise.context import Context
from citewise.core import llms
from citewise.core.indexes import in_thread, open_index
from citewise.index import Hit
from citewise.index.fusion import RRF_K, drop_redundant
from citewise.index.hops import HOP_KEEP, best_documents, best_paragraphs, follow_up_queries
from citewise.index.reading import SearchIndex
from citewise.models import degradation
from citewise.prompts.common import DATA_RULE, as_messages, quote, render
from citewise.state import EvidenceRecord, EvidenceState, FollowUpQueries

PINNED_DEPTH = 5
"""With pinned documents, search this many times deeper and keep only their chunks."""


Found = list[tuple[str, list[Hit]]]
"""Each search with its hits, the first query's first."""


def search_all(
    index: SearchIndex, queries: list[str], context: Context, documents: Sequence[str] = ()
) -> dict[str, EvidenceRecord]:
    """Union of the hits of every query and the local second hop, each chunk with its best score.

    With `documents` (a report section's pinned documents) only their chunks are candidates.
    """
    found = first_round(index, queries, context, documents)
    if hop_wanted(found, context, documents):
        found += second_round(index, found[0], context)
    return merge(index, found, context, documents)


def first_round(
    index: SearchIndex, queries: list[str], context: Context, documents: Sequence[str] = ()
) -> Found:
    """Every query's hits (pinned documents: searched deeper)."""
    return [(query, _search(index, query, context, set(documents))) for query in queries]


def hop_wanted(found: Found, context: Context, documents: Sequence[str]) -> bool:
    """A second hop runs when it is on, the first query found something, and no documents are pinned."""
    return bool(found and found[0][1] and context.second_hop and not documents)


def second_round(
    index: SearchIndex, first: tuple[str, list[Hit]], context: Context, queries: list[str] | None = None
) -> Found:
    """Hits of the follow-up queries beyond the first round's best documents.

    `queries` are a model's; without them the local rule joins the question to each best document's text.
    """
    question, hits = first
    top_docs = best_documents(hits)
    if queries is None:
        queries = follow_up_queries(index, question, hits, context.second_hop)
        labels = [f"second hop: {q[len(question) + 1 :][:80]}..." for q in queries]
    else:
        labels = [f"second hop: {q}" for q in queries]
    return [
        (label, [hit for hit in _search(index, query, context, set()) if hit.doc_id not in top_docs])
        for label, query in zip(labels, queries, strict=True)
    ]


def merge(
    index: SearchIndex, found: Found, context: Context, documents: Sequence[str] = ()
) -> dict[str, EvidenceRecord]:
    """The union by chunk (its best-scoring query kept), near-duplicates dropped, capped, as records."""
    best: dict[str, tuple[Hit, str]] = {}
    pinned = set(documents)
    for query, hits in found:
        for hit in hits:
            if pinned and hit.doc_id not in pinned:
                continue
            current = best.get(hit.chunk_id)
            if current is None or retrieval_score(hit, context.fusion) > retrieval_score(
                current[0], context.fusion
            ):
                best[hit.chunk_id] = (hit, query)
    order = sorted(best, key=lambda chunk_id: (-retrieval_score(best[chunk_id][0], context.fusion), chunk_id))
    if len(found) > 1 and order:
        vectors = index.chunk_vectors(order)
        order = drop_redundant(order, vectors, context.redundancy, limit=context.max_candidates)
    records: dict[str, EvidenceRecord] = {}
    for chunk_id in order[: context.max_candidates]:
        hit, query = best[chunk_id]
        records[chunk_id] = {
            "chunk_id": hit.chunk_id,
            "doc_id": hit.doc_id,
            "paragraph_id": hit.paragraph_id,
            "title": hit.title,
            "section": hit.section,
            "text": hit.text,
            "query": query,
            "retrieval": retrieval_score(hit, context.fusion),
            "bm25": hit.bm25,
            "dense": hit.dense,
            "flags": [],
        }
    return records


def _search(index: SearchIndex, query: str, context: Context, pinned: set[str]) -> list[Hit]:
    return index.search(
        query,
        k=context.k * PINNED_DEPTH if pinned else context.k,
        alpha=context.alpha,
        fusion=context.fusion,
        redundancy=context.redundancy,
        paragraph_weight=context.paragraph_weight,
        paragraph_dense_weight=context.paragraph_dense_weight,
    )


def retrieval_score(hit: Hit, fusion: str) -> float:
    """The fused score in [0, 1]: min-max fusion already is; RRF is scaled by its largest possible value."""
    if fusion == "rrf":
        return min(1.0, hit.score / (2 / (RRF_K + 1)))
    return hit.score


async def retrieve(state: EvidenceState, runtime: Runtime[Context]) -> dict:
    """Decide the candidate chunks of this pass; with a model, the model writes the second hop's searches."""
    context = runtime.context
    index = await open_index(context)
    documents = state.get("documents") or ()
    found = await in_thread(first_round, index, state["queries"], context, documents)
    judge, _ = llms.models(context, "follow_up")
    updates: dict = {}
    if hop_wanted(found, context, documents):
        queries = None
        if judge is not None:
            queries = await model_follow_ups(judge, index, found[0], context)
            if queries is None:
                reason = "model output malformed after repairs: the local second-hop rule searched"
                updates["degraded"] = [degradation("follow_up", reason, [])]
        found += await in_thread(second_round, index, found[0], context, queries)
    records = await in_thread(merge, index, found, context, documents)
    return {"candidates": Overwrite(records), **updates}


async def model_follow_ups(
    judge: Any, index: SearchIndex, first: tuple[str, list[Hit]], context: Context
) -> list[str] | None:
    """The model's second-hop searches from the best first-round passages ([] when it sees no need).

    A malformed reply falls back to the local rule (None), so a flaky model never costs the second hop.
    """
    question, hits = first
    passages = await in_thread(_best_passages, index, hits)
    prompt = render(
        context.follow_up_prompt,
        count=str(context.second_hop),
        data_rule=DATA_RULE,
        question=quote("question", question),
        passages=quote("passages", "\n\n".join(passages)),
    )
    samples = await judge.structured(FollowUpQueries, as_messages(prompt), stage="follow_up")
    reply = samples[0] if samples else None
    if reply is None:
        return None
    if not reply.needed:
        return []
    return [q.strip() for q in reply.queries if q.strip()][: context.second_hop]


def _best_passages(index: SearchIndex, hits: list[Hit]) -> list[str]:
    """The paragraph text of the first round's best documents, titled."""
    return [f"{hit.title}: {text}" for hit, text in best_paragraphs(index, hits, HOP_KEEP)]
