"""Asking the judge about a batch of evidence: the one pattern every judging stage uses.

Score, reflect, critique, expand and accuracy each show the judge a batch of labelled passages and read one
item per label back. `ask` sends the request and sorts its outcome three ways: valid samples; a fallback
(a transient provider fault after the retries, or output still malformed after the repairs), returned as
`failure` so the stage runs its own fallback and records it in `degraded` with `fell_back`; or an error
that ends the run (a refused key, a rejected request, a bug), which propagates. `by_label` maps the items of
a sample to the chunks (or documents) behind their labels, the first item of a label counting.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from citewise.models import degradation, fault_reason, is_transient, provider_errors
from citewise.prompts.common import as_messages
from citewise.state import Degraded

logger = logging.getLogger(__name__)

S = TypeVar("S")
Item = TypeVar("Item")

MALFORMED = "model output malformed after repairs"
"""The failure of a request whose every sample stayed malformed."""
UNRELIABLE = "judge unreliable on this question"
"""How scoring flags the passages of a question on which the judge was not reading them (verification reads
the flag: such a judge may not vouch for a paraphrase either)."""


@dataclass(frozen=True)
class Verdicts(Generic[S]):
    """What came back from the judge: the valid samples, or why there are none (`failure`)."""

    samples: list[S]
    failure: str = ""
    error: str = ""
    """The provider error's type when a fault ended the request ("" otherwise)."""

    @property
    def first(self) -> S | None:
        """The first valid sample (None when the request failed)."""
        return self.samples[0] if self.samples else None


async def ask(judge: Any, schema: type[S], prompt: str, *, stage: str, n: int = 1) -> Verdicts[S]:
    """One structured request about a batch; a transient fault or malformed output becomes `failure`.

    Raises:
        Every error that is not transient (a refused key, a rejected request, a bug): it ends the run.
    """
    try:
        samples = await judge.structured(schema, as_messages(prompt), stage=stage, n=n)
    except provider_errors() as error:
        if not is_transient(error):
            raise
        logger.warning("%s failed: %s", stage, error)
        return Verdicts([], fault_reason(error), type(error).__name__)
    valid = [sample for sample in samples if sample is not None]
    return Verdicts(valid) if valid else Verdicts([], MALFORMED)


def by_label(
    items: Iterable[Item], labels: Mapping[str, str], label: Callable[[Item], str]
) -> dict[str, Item]:
    """Each item under the id its label names (made-up labels are skipped; a label's first item counts)."""
    found: dict[str, Item] = {}
    for item in items:
        target = labels.get(label(item).strip())
        if target is not None and target not in found:
            found[target] = item
    return found


def fell_back(stage: str, failure: str, fallback: str, ids: Sequence[str]) -> list[Degraded]:
    """The `degraded` entry of a stage that ran its fallback for `ids`: why, then what it did instead."""
    return [degradation(stage, f"{failure}: {fallback}", list(ids))]
