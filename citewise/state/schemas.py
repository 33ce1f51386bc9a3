"""Structured outputs the judging and writing models must return (pydantic, strict JSON schema friendly).

Evidence is shown to models under short labels ("E1", "E2", ...) and sentences of evidence under
"E1.2"-style labels, never under stored ids: labels are what models echo back, and the nodes map them to ids.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field


class RewrittenQuery(BaseModel):
    """A search-ready rewrite of the question plus sub-queries for its separate parts."""

    query: str = Field(
        description="The question rewritten for search: specific, self-contained, key terms kept."
    )
    sub_queries: list[str] = Field(
        default_factory=list, description="Up to the requested number of simpler queries for separate parts."
    )


class FollowUpQueries(BaseModel):
    """Searches for the evidence a multi-hop question needs beyond what the first round found."""

    needed: bool = Field(
        description="True when the question needs a fact the passages do not hold but name a way to "
        "(a person, place or work they mention); false when they already answer it or it has one part."
    )
    queries: list[str] = Field(
        default_factory=list,
        description="Up to the requested number of short searches for that missing fact, naming the bridge "
        "entity from the passages.",
    )


def _clamped(value: Any) -> Any:
    """A score outside 0-100 (a small model writes 120 or -5) brought to the nearest end; others as given."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return min(100, max(0, round(value)))
    return value


Score = Annotated[int, BeforeValidator(_clamped)]
"""A 0-100 score, clamped (the schema sent to the model still says 0-100)."""


class RelevanceScore(BaseModel):
    """How relevant one evidence passage is to the question."""

    id: str = Field(description="The evidence label, e.g. E3.")
    score: Score = Field(
        ge=0, le=100, description="0 = unrelated, 100 = directly and fully answers the question."
    )


class RelevanceScores(BaseModel):
    """One score per evidence passage shown."""

    scores: list[RelevanceScore]


class ReflectionItem(BaseModel):
    """A revisited relevance score with its one-line justification."""

    id: str = Field(description="The evidence label, e.g. E3.")
    score: Score = Field(ge=0, le=100, description="The revised score, 0-100.")
    justification: str = Field(description="One line: why this score.")


class Reflections(BaseModel):
    """One revisited score per evidence passage shown."""

    items: list[ReflectionItem]


class CriticVerdict(BaseModel):
    """The critic's independent judgement of a borderline passage."""

    id: str = Field(description="The evidence label, e.g. E3.")
    score: Score = Field(ge=0, le=100, description="The critic's score, 0-100.")
    reason: str = Field(description="One line: what makes it useful or not for answering.")


class CriticVerdicts(BaseModel):
    """One verdict per borderline passage shown."""

    items: list[CriticVerdict]


class SentenceSupport(BaseModel):
    """Which evidence lines support one answer sentence."""

    sentence: int = Field(description="The 1-based number of the answer sentence.")
    sources: list[str] = Field(
        default_factory=list, description="Evidence line labels like E2.1 that support it."
    )
    supported: bool = Field(description="True only if the listed lines state what the sentence claims.")


class SupportMap(BaseModel):
    """Support for every answer sentence."""

    sentences: list[SentenceSupport]


class Summary(BaseModel):
    """The graded summary of one source."""

    id: str = Field(description="The evidence label, e.g. E3.")
    summary: str = Field(description="The summary, no longer than the length asked for this source.")


class Summaries(BaseModel):
    """One summary per source shown."""

    items: list[Summary]


class RouteDecision(BaseModel):
    """Whether the question wants a short direct answer or a structured report."""

    route: Literal["direct", "report"] = Field(
        description="direct: a fact, a definition, a yes/no or a short explanation; report: a comparison, "
        "an overview, a survey, a multi-part explanation or an explicit request for a report."
    )
    reason: str = Field(description="One line: what in the question decides it.")


class PlannedSection(BaseModel):
    """One section of a report outline."""

    title: str = Field(description="A short heading (a few words).")
    goal: str = Field(description="One sentence: what this section must establish for the question.")
    queries: list[str] = Field(
        default_factory=list, description="One to three search queries that find this section's evidence."
    )


class PlannedOutline(BaseModel):
    """The outline of a report: its sections in reading order."""

    sections: list[PlannedSection]


class LearnedOutline(BaseModel):
    """An outline instruction learned for one question type from rated example answers (SynthRAG)."""

    name: str = Field(description="A short snake_case name for the question type, e.g. comparison.")
    description: str = Field(description="One line: which questions belong to this type.")
    instruction: str = Field(
        description="The outline instruction: which sections, in which order, what each must cover, and "
        "what the low-rated answers did that must be avoided."
    )


class StanceItem(BaseModel):
    """One evidence document's stance towards the trusted sources' GenText."""

    id: str = Field(description="The evidence label, e.g. E3.")
    stance: Literal["supports", "contradicts", "neutral"] = Field(
        description="supports: agrees with the draft; contradicts: conflicts with it; neutral: neither."
    )
    reason: str = Field(description="One line: what agrees or conflicts.")


class Stances(BaseModel):
    """One stance per evidence document shown."""

    items: list[StanceItem]
