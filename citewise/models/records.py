"""What a model's use leaves in a run's state: the requests and tokens per stage, and the fallbacks taken.

The model layer makes these records; the graph state (`citewise.state`) carries them, merged by the reducers
below, so the state imports them from here and the model layer imports nothing of the graph.
"""

from __future__ import annotations

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
