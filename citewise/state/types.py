"""State of the query graph: what goes in, what each node reads and writes, what comes out."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class StageUsage(TypedDict):
    """LLM spend of one stage."""

    calls: int
    """Requests sent to a model (one request may ask for n samples)."""
    input_tokens: int
    """Prompt tokens, as the provider reported them."""
    output_tokens: int
    """Completion tokens, as the provider reported them."""


def merge_usage(
    left: dict[str, StageUsage] | None, right: dict[str, StageUsage] | None
) -> dict[str, StageUsage]:
    """Add per-stage usage (stages run more than once on a corrective pass accumulate)."""
    merged: dict[str, StageUsage] = {k: dict(v) for k, v in (left or {}).items()}  # type: ignore[misc]
    for stage, usage in (right or {}).items():
        base = merged.setdefault(stage, {"calls": 0, "input_tokens": 0, "output_tokens": 0})
        for key in ("calls", "input_tokens", "output_tokens"):
            base[key] += int(usage.get(key, 0))  # type: ignore[literal-required]
    return merged


class EvidenceRecord(TypedDict, total=False):
    """Everything known about one candidate chunk: where it came from, every score, and the verdict."""

    chunk_id: str
    """Content-hash id of the chunk in the index."""
    doc_id: str
    """Content-hash id of its document."""
    paragraph_id: str
    """Id of its paragraph (for expansion and secondary references)."""
    title: str
    """Document title."""
    section: str
    """Section heading of the paragraph."""
    text: str
    """The chunk text."""
    query: str
    """The (sub-)query that retrieved it best."""
    retrieval: float
    """Fused retrieval score in [0, 1] (best over queries)."""
    bm25: float
    """BM25 score for that query."""
    dense: float
    """Cosine similarity for that query."""
    relevance_mean: float | None
    """Mean of the n relevance samples (0-100); in local mode the retrieval score mapped to 0-100."""
    relevance_spread: float | None
    """Standard deviation of the samples: the judge's uncertainty."""
    relevance_samples: list[float]
    """The raw samples."""
    reflection: float | None
    """Score after self-reflection (None when skipped)."""
    reflection_note: str
    """The one-line justification of the reflected score."""
    critic: float | None
    """The critic's score for a borderline chunk (None when not judged or skipped)."""
    critic_note: str
    """The critic's one-line reason."""
    final: float
    """The score the threshold is applied to."""
    kept: bool
    """Whether the chunk passed the threshold."""
    reason: str
    """Why it was kept or dropped."""
    flags: list[str]
    """Problems met on the way (e.g. 'judge output malformed: used retrieval score')."""
    rank: int
    """Position in the evidence order the answer sees (after rerank), 0 when not kept."""


def merge_evidence(
    left: dict[str, EvidenceRecord] | None, right: dict[str, EvidenceRecord] | None
) -> dict[str, EvidenceRecord]:
    """Merge per-chunk records by chunk id: later fields update earlier ones; idempotent."""
    merged = {k: dict(v) for k, v in (left or {}).items()}
    for chunk_id, record in (right or {}).items():
        merged.setdefault(chunk_id, {}).update(record)
    return merged  # type: ignore[return-value]


class Citation(TypedDict):
    """One numbered citation marker of the answer, resolved to stored evidence."""

    marker: int
    """The number shown in the answer as [n]."""
    chunk_id: str
    """The evidence chunk it points at (always a stored chunk)."""
    doc_id: str
    """Its document."""
    title: str
    """Its document title."""
    text: str
    """The cited text (the chunk, or the supporting sentence when fine-grained)."""


class References(TypedDict):
    """Primary references (source documents) and secondary ones (works cited in the used paragraphs)."""

    primary: list[dict[str, Any]]
    """One entry per source document used: doc id, title, file, markers that cite it."""
    secondary: list[dict[str, Any]]
    """One entry per bibliography entry cited in a used paragraph: doc id, key, text, fine-grained flag."""


class InputState(TypedDict):
    """What a caller sends: a conversation. The last human message is the question."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation so far (add_messages, so every LangGraph chat client works)."""


class OutputState(TypedDict, total=False):
    """What a caller gets back."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation with the cited answer appended."""
    question: str
    """The standalone question that was answered."""
    answer: str
    """The cited answer in markdown, markers like [1]."""
    citations: list[Citation]
    """Every marker of the answer resolved to stored evidence."""
    references: References
    """Primary and secondary references."""
    evidence: list[EvidenceRecord]
    """Every candidate chunk with its scores, verdict and reason, best first."""
    threshold: float
    """The cut applied to the final scores."""
    mode: Literal["llm", "local"]
    """Whether language models or the local (no-LLM) fallbacks produced the result."""
    usage: Annotated[dict[str, StageUsage], merge_usage]
    """LLM calls and tokens per stage."""
    unsupported: list[str]
    """Answer sentences dropped by verification because no evidence supports them."""


class State(OutputState, total=False):
    """Everything the nodes share."""

    queries: list[str]
    """The rewritten query first, then sub-queries."""
    attempt: int
    """How many times `rewrite` has run for this question (the corrective loop's counter)."""
    feedback: str
    """What went wrong on the previous pass (fed to a corrective rewrite)."""
    candidates: Annotated[dict[str, EvidenceRecord], merge_evidence]
    """Per-chunk records of this pass, keyed by chunk id (reset with Overwrite on a new pass)."""
    kept: list[str]
    """Kept chunk ids in the order the answer sees them."""
    summaries: dict[str, str]
    """Graded summary of each kept chunk's paragraph / document, by chunk id."""
    draft: str
    """The answer before verification, citing evidence labels like [E2]."""
    labels: dict[str, str]
    """Evidence label (E1, E2, ...) -> chunk id, as the writer saw them."""
    support: list[dict[str, Any]]
    """Fine-grained support: per answer sentence, its markers and the source lines that support it."""
    route: Literal["direct", "report"]
    """Which path `route` chose."""
