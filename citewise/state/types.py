"""State of the query graph: what goes in, what each node reads and writes, what comes out."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

# the model layer's records, carried in the state (re-exported)
from citewise.models.records import Degraded as Degraded
from citewise.models.records import StageUsage as StageUsage
from citewise.models.records import merge_degraded as merge_degraded
from citewise.models.records import merge_usage as merge_usage


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
    """Mean of the n relevance samples (0-100); in local mode the chunk's own cosine to the question mapped
    to 0-100 (Context.local_cosine_zero / local_cosine_full)."""
    answering: float
    """Local mode: how well its best sentence answers the question (citewise.core.answerable), in [0, 1]."""
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
    """Whether the chunk passed the threshold: exactly when `final` >= `threshold`."""
    threshold: float
    """The cut of the pass that judged it (a report section's own, for a section's evidence)."""
    reason: str
    """Why it was kept or dropped."""
    flags: list[str]
    """Problems met on the way (e.g. 'judge output malformed: used question similarity')."""
    rank: int
    """Position in the evidence order the writer sees (after rerank), 0 when not shown to it."""
    report_section: str
    """The report section whose retrieval found it ("" for the question's own pass)."""
    trusted: bool
    """Whether its document is one of the trusted sources (Context.trusted)."""
    accuracy: float
    """Agreement with the trusted sources' GenText in [0, 1]: stance blended with similarity (local mode:
    similarity only); 1 for trusted evidence. Set only when Context.trusted is given."""
    stance: Literal["supports", "contradicts", "neutral", "trusted", "unknown"]
    """Its document's stance towards the GenText (unknown in local mode: no stance model)."""
    rsv: float
    """The order it was shown in: beta x topicality (final / 100) + (1 - beta) x accuracy."""


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
    """One entry per source document used: doc id, title, file, key, authors when known, its markers."""
    secondary: list[dict[str, Any]]
    """One entry per bibliography entry cited in a used paragraph: doc id, key, text, fine-grained flag."""


class OutlineSection(TypedDict, total=False):
    """One planned section of a report."""

    id: str
    """Stable id (s1, s2, ...); kept when the outline is edited, so results map back to it."""
    title: str
    """The heading."""
    goal: str
    """What the section must establish for the question."""
    queries: list[str]
    """The searches that find its evidence."""
    documents: list[str]
    """Document ids pinned to the section: its evidence comes only from them (empty: any document)."""
    asks: str
    """The part of the question the section answers, when the question has several ("how GJ 486b was
    observed"): local mode picks the section's sentences by it ("" or absent: by the whole question)."""


class SectionResult(TypedDict, total=False):
    """What one section branch produced."""

    id: str
    """The outline section id."""
    title: str
    """Its heading."""
    text: str
    """The written section, citing labels like [S2E1] (before verification)."""
    status: Literal["written", "no_evidence", "failed"]
    """written; no_evidence (says so in its place); failed (the branch raised; the others stand)."""
    error: str
    """Why the branch failed ("" otherwise)."""
    labels: dict[str, str]
    """Its evidence labels (unique across sections) -> chunk ids."""
    kept: list[str]
    """Kept evidence chunk ids in the order the writer saw them."""
    threshold: float
    """The section's own dynamic threshold."""
    evidence: list[EvidenceRecord]
    """Every candidate of the section with its scores and verdict."""
    markers: list[int]
    """Final citation markers of the section's verified sentences (set by verify)."""


def merge_sections(
    left: dict[str, SectionResult] | None, right: dict[str, SectionResult] | None
) -> dict[str, SectionResult]:
    """Merge section results by section id: later fields update earlier ones; order of first arrival kept.

    Idempotent (a re-delivered branch result changes nothing), so parallel branches and a resumed run can
    write the same section twice.
    """
    merged = {k: dict(v) for k, v in (left or {}).items()}
    for section_id, result in (right or {}).items():
        merged.setdefault(section_id, {}).update(result)
    return merged  # type: ignore[return-value]


class Validation(TypedDict, total=False):
    """The customize step's checks of the report."""

    attempts: int
    """Drafts written so far (at most Context.max_customize_attempts)."""
    problems: list[str]
    """What is wrong with the draft returned (empty when it passed)."""
    passed: bool
    """Every check passed."""
    history: list[list[str]]
    """The problems of every attempt, in order."""


class RunError(TypedDict):
    """Why a run could not answer: where, what kind of problem, the cause and what to do."""

    stage: str
    """The node that failed."""
    kind: str
    """no index, model setup, model provider, model output, server setting, request or unexpected."""
    message: str
    """The cause, as the error said it."""
    hint: str
    """What the person can do about it."""


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
    route: Literal["direct", "report"]
    """The path taken: a direct cited answer or a report."""
    route_reason: str
    """Why (the caller's override, the model's reason, or the local rule that decided)."""
    outline: list[OutlineSection]
    """The report's outline, in reading order (reports only)."""
    outline_type: str
    """The question type whose outline instruction was adapted (reports only)."""
    sections: Annotated[dict[str, SectionResult], merge_sections]
    """Section results by section id, in outline order after the join (reports only)."""
    validation: Validation
    """The customize step's checks: attempts, problems, passed (reports only)."""
    gentext: str
    """A short text (about 64 words) written only from the trusted evidence, citing it; what accuracy is
    judged against ("" when Context.trusted is empty or no trusted evidence was kept)."""
    error: RunError | None
    """Set when the run could not answer (the reply then says why); None otherwise."""
    degraded: Annotated[list[Degraded], merge_degraded]
    """Stages that fell back to a weaker method this turn (provider fault after retries, or output malformed
    after repairs), with the chunks affected; empty when every stage ran as `mode` says."""


class State(OutputState, total=False):
    """Everything the nodes share."""

    search_question: str
    """What search and local scoring read: a follow-up with the question before it as written (its passages
    are often this one's), the question itself otherwise; `question` is the follow-up made to stand alone."""

    queries: list[str]
    """The rewritten query first, then sub-queries."""
    attempt: int
    """How many times `rewrite` has run for this question (the corrective loop's counter)."""
    kept: list[str]
    """Kept chunk ids in the order the answer sees them."""
    summaries: dict[str, str]
    """Graded summary of each kept chunk's paragraph / document, by chunk id."""
    draft: str
    """The answer before verification, citing evidence labels like [E2]."""
    labels: dict[str, str]
    """Evidence label (E1, E2, ...) -> chunk id, as the writer saw them."""
    deadline: float | None
    """When the answer's time budget ends (time.time(); None: no budget); set by condense each turn."""
    support: list[dict[str, Any]]
    """Fine-grained support: per answer sentence, its markers, the source lines that support it, and the
    labels it was re-cited from (`recited_from`: markers whose evidence had no supporting line)."""


class EvidenceInput(TypedDict, total=False):
    """What the evidence subgraph needs: the question it judges against and the searches to run."""

    question: str
    """What relevance is judged against (a report section's focus, for a section)."""
    search_question: str
    """What local scoring reads instead, when set (a follow-up with the question before it)."""
    queries: list[str]
    """The searches of the first pass."""
    attempt: int
    """Passes done so far (the corrective loop's counter: rewrite bumps it)."""
    documents: list[str]
    """Only these documents' chunks count (a section's pinned documents; empty: all)."""
    mode: Literal["llm", "local"]
    """Whether models or the local fallbacks run."""
    deadline: float | None
    """When the answer's time budget ends (None: no budget)."""


class EvidenceOutput(TypedDict, total=False):
    """What the evidence subgraph hands back: every candidate with its verdict, and the cut."""

    queries: list[str]
    """The searches of the last pass."""
    attempt: int
    """Passes done."""
    evidence: list[EvidenceRecord]
    """Every candidate of the last pass with its scores, verdict and reason, best first."""
    threshold: float
    """The cut of the last pass."""
    usage: Annotated[dict[str, StageUsage], merge_usage]
    """LLM spend inside the subgraph (only its own: the input carries none)."""
    degraded: Annotated[list[Degraded], merge_degraded]
    """Stages of the subgraph that fell back (only its own: the input carries none)."""


class EvidenceState(EvidenceInput, EvidenceOutput, total=False):
    """The evidence subgraph's private state."""

    candidates: Annotated[dict[str, EvidenceRecord], merge_evidence]
    """Per-chunk records of this pass, keyed by chunk id (reset with Overwrite on a new pass)."""


class SectionInput(TypedDict, total=False):
    """What a report section branch is sent: its part of the outline and the searches that serve it."""

    section: OutlineSection
    """The planned section."""
    position: int
    """Its 1-based place in the outline (labels S<position>E<n> stay unique across sections)."""
    report_question: str
    """The question the whole report answers."""
    outline_titles: list[str]
    """Every section title, so a section knows what the others cover."""
    question: str
    """The section's focus: what relevance is judged against."""
    queries: list[str]
    """The section's searches."""
    attempt: int
    """1: the corrective loop counts from the outline's own queries."""
    documents: list[str]
    """Pinned document ids (empty: any document)."""
    mode: Literal["llm", "local"]
    """Whether models or the local fallbacks run."""
    evidence_limit: int
    """Kept chunks the section writer may use."""
    deadline: float | None
    """When the report's time budget ends (None: no budget)."""


class SectionOutput(TypedDict, total=False):
    """What a section branch adds to the report: its result (by id) and its LLM spend."""

    sections: Annotated[dict[str, SectionResult], merge_sections]
    """This section's result under its id."""
    usage: Annotated[dict[str, StageUsage], merge_usage]
    """LLM spend of the branch."""
    degraded: Annotated[list[Degraded], merge_degraded]
    """Stages of the branch that fell back."""


class SectionState(SectionInput, SectionOutput, total=False):
    """A section branch's private state: its own evidence, never another section's."""

    evidence: list[EvidenceRecord]
    """The section's candidates with verdicts."""
    threshold: float
    """The section's cut."""
    kept: list[str]
    """Kept chunk ids in writer order."""
    summaries: dict[str, str]
    """Graded paragraph summaries of the kept chunks."""
    gentext: str
    """The section's GenText from its trusted evidence (accuracy; "" without trusted sources)."""
