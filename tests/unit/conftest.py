"""Fixtures of the unit tests: scripted models handed to the nodes in the run's resources."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from support.fakes import ScriptedChatModel, scripted_llm

from citewise.context import Context
from citewise.core.resources import Resources
from citewise.models import LLM


@pytest.fixture
def install() -> Callable[..., tuple[LLM | None, LLM | None]]:
    """Give the context resources whose models are LLMs wrapping scripted chat models (and a fake index)."""

    def install(
        context: Context,
        judge: ScriptedChatModel | None = None,
        writer: ScriptedChatModel | None = None,
        *,
        index: Any = None,
    ) -> tuple[LLM | None, LLM | None]:
        pair = (
            scripted_llm(judge, context) if judge is not None else None,
            scripted_llm(writer, context) if writer is not None else None,
        )
        context.resources = Resources(models=pair, index=index)
        return pair

    return install
