"""Fixtures of the unit tests: scripted models handed to the nodes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from support.fakes import ScriptedChatModel, scripted_llm

from citewise.context import Context
from citewise.core import llms
from citewise.models import LLM


@pytest.fixture
def install(monkeypatch: pytest.MonkeyPatch) -> Callable[..., tuple[LLM | None, LLM | None]]:
    """Make `llms.models` hand the nodes LLMs wrapping scripted chat models."""

    def install(
        context: Context, judge: ScriptedChatModel | None = None, writer: ScriptedChatModel | None = None
    ) -> tuple[LLM | None, LLM | None]:
        pair = (
            scripted_llm(judge, context) if judge is not None else None,
            scripted_llm(writer, context) if writer is not None else None,
        )
        monkeypatch.setattr(llms, "models", lambda _context, _stage=None: pair)
        return pair

    return install
