"""rewrite: ChunkRAG query rewriting plus sub-queries; on a corrective pass, uses what failed."""

from __future__ import annotations

from collections import Counter

from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core import llms
from citewise.core.indexes import in_thread, open_index
from citewise.core.questions import local_follow_up_turn, own_search
from citewise.core.text import content_words, ordered_unique, user_turns
from citewise.models import degradation
from citewise.prompts import rewrite as prompts
from citewise.prompts.common import DATA_RULE, as_messages, quote, render
from citewise.state import EvidenceState, RewrittenQuery, State

PRF_DOCS = 3
PRF_TERMS = 5


def keyword_query(question: str) -> str:
    """The question's content words, repeats dropped."""
    return " ".join(ordered_unique(content_words(question)))


def feedback_terms(texts: list[str], exclude: set[str], count: int = PRF_TERMS) -> list[str]:
    """Pseudo-relevance feedback: the most frequent content words of the top texts not already asked for."""
    counts = Counter(  # distinct words in reading order, so ties rank the same under any PYTHONHASHSEED
        w for text in texts for w in dict.fromkeys(content_words(text)) if w not in exclude and len(w) > 3
    )
    return [word for word, _ in counts.most_common(count)]


async def local_rewrite(question: str, state: State | EvidenceState, context: Context) -> list[str]:
    """Keywords plus pseudo-relevance feedback from the top BM25 hits (correcting: the closest evidence).

    `question` is what search reads (`search_question`: a follow-up with the question before it).
    """
    keywords = keyword_query(question)
    asked = set(content_words(question))
    if state.get("attempt", 0) > 0:
        closest = sorted(state.get("evidence", []), key=lambda r: -r.get("retrieval", 0.0))[:PRF_DOCS]
        texts = [r.get("text", "") for r in closest]
    else:
        index = await open_index(context)
        hits = await in_thread(index.search, keywords or question, PRF_DOCS, "bm25")
        texts = [h.text for h in hits]
    expansion = feedback_terms(texts, asked)
    queries = [question if state.get("attempt", 0) == 0 else keywords]
    messages = state.get("messages", [])  # none in the evidence subgraph's state: no conversation there
    turns, replies = user_turns(messages if isinstance(messages, list) else [])
    turn = local_follow_up_turn(turns, state.get("question", question), replies)
    if state.get("attempt", 0) == 0 and turn is not None:  # searched in its own words too
        queries.append(own_search(turn))
    if expansion:
        queries.append(f"{keywords} {' '.join(expansion)}")
    return ordered_unique(q for q in queries if q.strip())[: 1 + context.max_sub_queries]


async def rewrite(state: State | EvidenceState, runtime: Runtime[Context]) -> dict:
    """Decide the search queries for this pass (rewritten question first, then sub-queries)."""
    context = runtime.context
    question = state["question"]
    attempt = state.get("attempt", 0)
    judge, _ = llms.models(context, "rewrite")
    if judge is None:
        searched = state.get("search_question") or question
        return {"queries": await local_rewrite(searched, state, context), "attempt": attempt + 1}
    feedback = ""
    if attempt > 0:
        closest = sorted(state.get("evidence", []), key=lambda r: -r.get("final", 0.0))[:3]
        feedback = render(
            prompts.FEEDBACK,
            previous=quote("queries", "\n".join(state.get("queries", []))),
            closest=quote("evidence", " | ".join(r.get("text", "")[:200] for r in closest)),
        )
    prompt = render(
        context.rewrite_prompt,
        max_sub_queries=str(context.max_sub_queries),
        feedback=feedback,
        data_rule=DATA_RULE,
        question=quote("question", question),
    )
    samples = await judge.structured(RewrittenQuery, as_messages(prompt), stage="rewrite")
    result = samples[0] if samples else None
    if result is None:  # malformed after retries and repair: fall back to the local rewrite, said so
        queries = await local_rewrite(question, state, context)
        reason = "model output malformed after repairs: the local rewrite was used"
        return {
            "queries": queries,
            "attempt": attempt + 1,
            "degraded": [degradation("rewrite", reason, [])],
        }
    queries = [question if attempt == 0 else result.query, result.query, *result.sub_queries]
    queries = ordered_unique(q.strip() for q in queries if q.strip())[: 2 + context.max_sub_queries]
    return {"queries": queries, "attempt": attempt + 1}
