"""What a model's use leaves in a run's state: the requests and tokens per stage, and the fallbacks taken.

The model layer makes these records; the graph state (`citewise.state`) carries them, merged by the reducers
below, so the state imports them from here and the model layer imports nothing of the graph.
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict


class StageUsage(TypedDict):
    """LLM spend of one stage."""

    calls: int
    """Requests sent to a model (one request may ask for n samples)."""
    input_tokens: int
    """Prompt tokens, as the provider reported them."""
    output_tokens: int
    """Completion tokens, as the provider reported them."""


_Count = Literal["calls", "input_tokens", "output_tokens"]
_COUNTS: tuple[_Count, ...] = ("calls", "input_tokens", "output_tokens")
"""The counts of a `StageUsage`."""


def merge_usage(
    left: dict[str, StageUsage] | None, right: dict[str, StageUsage] | None
) -> dict[str, StageUsage]:
    """Add per-stage usage (stages run more than once on a corrective pass accumulate)."""
    merged: dict[str, StageUsage] = {k: v.copy() for k, v in (left or {}).items()}
    for stage, usage in (right or {}).items():
        base = merged.setdefault(stage, {"calls": 0, "input_tokens": 0, "output_tokens": 0})
        for key in _COUNTS:
            base[key] += int(usage.get(key, 0))
    return merged


class Degraded(TypedDict):
    """A stage that fell back to a weaker method because its model failed (the run still answered)."""

    stage: str
    """The stage that fell back (rewrite, follow_up, score, reflect, critique, expand, verify, rerank,
    accuracy, route)."""
    reason: str
    """Why: the transient provider fault after retries, or output still malformed after repairs."""
    chunks: list[str]
    """The chunk ids whose result the fallback decided."""


def merge_degraded(left: list[Degraded] | None, right: list[Degraded] | None) -> list[Degraded]:
    """Append fallbacks, skipping an entry already listed (idempotent: a re-delivered update adds nothing)."""
    merged = list(left or [])
    for entry in right or []:
        if entry not in merged:
            merged.append(entry)
    return merged
