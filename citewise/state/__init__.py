"""Graph state: the narrow input, the full internal state, the narrow output, and their reducers.

TypedDicts from typing_extensions (not typing) so LangGraph's server derives non-empty schemas on 3.11.
"""

from citewise.state.schemas import (
    CriticVerdict,
    CriticVerdicts,
    ReflectionItem,
    Reflections,
    RelevanceScore,
    RelevanceScores,
    RewrittenQuery,
    SentenceSupport,
    Summaries,
    Summary,
    SupportMap,
)
from citewise.state.types import (
    Citation,
    EvidenceRecord,
    InputState,
    OutputState,
    References,
    StageUsage,
    State,
    merge_evidence,
    merge_usage,
)

__all__ = [
    "Citation",
    "CriticVerdict",
    "CriticVerdicts",
    "EvidenceRecord",
    "InputState",
    "OutputState",
    "References",
    "ReflectionItem",
    "Reflections",
    "RelevanceScore",
    "RelevanceScores",
    "RewrittenQuery",
    "SentenceSupport",
    "StageUsage",
    "State",
    "Summaries",
    "Summary",
    "SupportMap",
    "merge_evidence",
    "merge_usage",
]
