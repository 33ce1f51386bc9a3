"""Fitting requests to a model's context window: each stage's reply cap, evidence budgets, prompt sizes.

The window is what the server says or taught by a refusal (`ServerFacts.context_window`), else
Context.context_window; a prompt's size in the model's own tokens is estimated at the characters a token the
server has counted so far (`ServerFacts.prompt_tokens`). A stage packs its evidence to what the window leaves
(`evidence_tokens`, `fits`), and a request's reply cap is cut to fit before it is sent (`fitted_cap`).
"""

from __future__ import annotations

import logging

from citewise.models.faults import PromptTooLong
from citewise.models.server import CHARS_PER_TOKEN, TOKEN_MARGIN, ServerFacts
from citewise.models.settings import ModelSettings

logger = logging.getLogger(__name__)


MAX_TOKENS = {
    "condense": 200,
    "rewrite": 300,
    "follow_up": 300,
    "route": 200,
    "score": 600,
    "judge": 1200,
    "reflect": 1200,
    "critique": 1200,
    "expand": 1600,
    "answer": 1000,
    "verify": 1000,
    "outline": 1000,
    "write_section": 900,
    "customize": 2400,
    "accuracy": 1000,
    "outline_learn": 800,
    "eval judge": 300,
}
"""What a request of each stage may write at most (a batch of ten scores needs a few hundred tokens, not the
context window): a weak model that loops stops there, and its cut reply is repaired or given up."""
DEFAULT_MAX_TOKENS = 1000
"""The cap of a stage not in MAX_TOKENS."""
MIN_REPLY_TOKENS = 128
"""A reply cut shorter to fit the context window keeps at least this many tokens (or a quarter of the stage's
cap, the larger); a prompt that leaves less is not sent (PromptTooLong)."""


def stage_cap(stage: str) -> int:
    """What a reply of `stage` may write at most, before any cut to fit the window."""
    return MAX_TOKENS.get(stage, DEFAULT_MAX_TOKENS)


class Window:
    """One model's context window, and what fits in it (see the module's docstring)."""

    def __init__(self, facts: ServerFacts, settings: ModelSettings) -> None:
        """The window of the server `facts` describe; `settings` give Context.context_window."""
        self.facts = facts
        self.settings = settings

    def size(self) -> int | None:
        """The model's context window in tokens: what the server says, else Context.context_window."""
        return self.facts.context_window or self.settings.context_window

    def evidence_tokens(self, configured: int, stage: str, prompt_tokens: int = 600) -> int:
        """Evidence a writing request of `stage` may carry, in `estimate_tokens` units: `configured`, or less.

        The window must hold the prompt's own words (`prompt_tokens`, in the model's tokens), the evidence and
        the reply's cap; the evidence's share is converted to estimate units (four characters) at the
        characters a token the server has counted so far.
        """
        window = self.size()
        if not window:
            return configured
        room = window - stage_cap(stage) - prompt_tokens
        chars = max(0, room) / TOKEN_MARGIN * (self.facts.chars_per_token or CHARS_PER_TOKEN)
        return max(100, min(configured, int(chars / 4)))

    def prompt_tokens(self, text: str) -> int:
        """The model's tokens for `text` sent as one message (an upper estimate: see ServerFacts)."""
        return self.facts.prompt_tokens(len(text))

    def fits(self, text: str, stage: str) -> bool:
        """Whether a one-message prompt `text` leaves room for the stage's reply in the context window."""
        window = self.size()
        return not window or self.prompt_tokens(text) + stage_cap(stage) <= window

    def fitted_cap(self, stage: str, chars: int, count: int, cap: int) -> int:
        """The reply's cap, cut to what the window leaves after a prompt of `chars` in `count` messages.

        Raises:
            PromptTooLong: the prompt leaves less than MIN_REPLY_TOKENS (or a quarter of `cap`): not sent.
        """
        window = self.size()
        if not window:
            return cap
        prompt = self.facts.prompt_tokens(chars, count)
        room = window - prompt
        if room >= cap:
            return cap
        if room >= min(cap, max(MIN_REPLY_TOKENS, cap // 4)):
            logger.debug("%s: reply cap %d -> %d to fit a %d-token window", stage, cap, room, window)
            return room
        raise PromptTooLong(
            f"{stage}: a prompt of about {prompt} tokens leaves no room for its reply in the model's "
            f"context window of {window} tokens",
            window=window,
            prompt_tokens=prompt,
        )
