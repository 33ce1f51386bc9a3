"""What the model layer reads of a run's settings: a protocol, so that models/ imports nothing above it.

`citewise.context.Context` has every one of these; a test or a script may pass any object that does.
"""

from __future__ import annotations

from typing import Protocol


class ModelSettings(Protocol):
    """The settings the LLMs and the reranker are built and run with (`Context` documents each)."""

    @property
    def model(self) -> str | None:
        """The writer model, as provider/model (None: local mode)."""
        ...

    @property
    def judge(self) -> str | None:
        """The judging model (the writer's when none is set)."""
        ...

    @property
    def llm(self) -> bool:
        """Whether a model is configured at all."""
        ...

    @property
    def lean(self) -> bool:
        """Whether the lean profile applies (fewer requests, no repair requests)."""
        ...

    @property
    def judge_temperature(self) -> float:
        """Temperature of the judge."""
        ...

    @property
    def writer_temperature(self) -> float:
        """Temperature of the writer."""
        ...

    @property
    def timeout_seconds(self) -> float:
        """Per-request timeout."""
        ...

    @property
    def max_retries(self) -> int:
        """Retries of a transient provider fault."""
        ...

    @property
    def max_concurrency(self) -> int:
        """Requests in flight at once."""
        ...

    @property
    def structured_output(self) -> str:
        """How structured output is asked for (json_schema, function_calling, ...)."""
        ...

    @property
    def context_window(self) -> int | None:
        """The model's context window in tokens, when its server does not say."""
        ...

    @property
    def llm_cache(self) -> str | None:
        """Path of the SQLite response cache (None: no cache)."""
        ...

    @property
    def rerank_model(self) -> str:
        """Cohere's rerank model."""
        ...
