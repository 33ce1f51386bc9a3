"""The judge and writer models of a run, built once per distinct model settings."""

from __future__ import annotations

import threading
from typing import Any

from citewise.context import Context

_cache: dict[tuple[Any, ...], tuple[Any, Any]] = {}
_lock = threading.Lock()


def models(context: Context) -> tuple[Any, Any]:
    """(judge, writer) LLMs for the context, or (None, None) in local mode."""
    if not context.llm:
        return None, None
    from citewise.models import models_for

    key = (
        context.model,
        context.judge,
        context.judge_temperature,
        context.writer_temperature,
        context.timeout_seconds,
        context.max_retries,
        context.max_concurrency,
        context.structured_output,
        context.llm_cache,
    )
    with _lock:
        if key not in _cache:
            _cache[key] = models_for(context)
        return _cache[key]
