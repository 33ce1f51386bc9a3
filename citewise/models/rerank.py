"""Cohere rerank behind the same retry policy as the LLMs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from citewise.models.faults import BACKOFF_INITIAL, BACKOFF_MAX, UnreadableResponse, retrying, scrub
from citewise.models.records import StageUsage
from citewise.models.settings import ModelSettings
from citewise.models.specs import env_setting
from citewise.models.usage import UsageMeter, scoped_meter

if TYPE_CHECKING:
    from langchain_cohere import CohereRerank

logger = logging.getLogger(__name__)


# reranking ---------------------------------------------------------------------------------------------


def _cohere_client(api_key: str, timeout: float, base_url: str | None) -> Any:
    """A cohere.ClientV2 whose own retries are off (tenacity retries) and that always has a timeout."""
    import cohere
    from cohere.core.request_options import RequestOptions

    class NoRetryClientV2(cohere.ClientV2):
        def rerank(self, **kwargs: Any) -> Any:
            options = RequestOptions(**(kwargs.pop("request_options", None) or {}))
            options.setdefault("max_retries", 0)
            return super().rerank(request_options=options, **kwargs)

    if base_url:  # else left out, not None: the client's default is CO_API_URL
        return NoRetryClientV2(api_key=api_key, timeout=timeout, base_url=base_url)
    return NoRetryClientV2(api_key=api_key, timeout=timeout)


class Reranker:
    """Cohere rerank behind the same retry policy as the LLMs; counts its calls under the "rerank" stage."""

    def __init__(
        self,
        compressor: CohereRerank,
        context: ModelSettings,
        *,
        backoff: tuple[float, float] = (BACKOFF_INITIAL, BACKOFF_MAX),
    ) -> None:
        """Wrap a langchain_cohere.CohereRerank."""
        self.compressor = compressor
        self.context = context
        self.backoff = backoff
        self.meter = UsageMeter()

    async def rerank(
        self, query: str, texts: Sequence[str], top_n: int, *, stage: str = "rerank"
    ) -> list[tuple[int, float]]:
        """(index into texts, relevance) of the `top_n` most relevant texts, best first."""
        if not texts or top_n <= 0:
            return []
        documents, top = list(texts), min(top_n, len(texts))
        async for attempt in retrying(self.context.max_retries, self.backoff):
            with attempt:
                try:
                    ranked = await asyncio.to_thread(self._ask, documents, query, top)
                except Exception as error:
                    scrub(error)  # before the retry log or any caller sees its message
                    raise
                finally:
                    self.meter.add(stage, calls=1)
        return sorted(ranked, key=lambda pair: -pair[1])

    def _ask(self, documents: list[str], query: str, top: int) -> list[tuple[int, float]]:
        """One rerank request; a reply without one result per document asked for is unreadable.

        A reply with no results would otherwise drop every passage without a word.
        """
        from cohere.core.api_error import ApiError

        try:
            response = self.compressor.client.rerank(
                model=self.compressor.model, query=query, documents=documents, top_n=top
            )
        except ApiError as error:
            status = error.status_code
            if status is not None and 200 <= int(status) < 300:  # a 200 whose body could not be parsed
                raise UnreadableResponse("the rerank reply could not be read") from error
            raise
        results = getattr(response, "results", None)
        if not isinstance(results, list):
            raise UnreadableResponse("the rerank reply has no results")
        ranked = [(int(r.index), float(r.relevance_score)) for r in results]
        indexes = {index for index, _ in ranked}
        if len(ranked) != top or len(indexes) != top or not all(0 <= i < len(documents) for i in indexes):
            raise UnreadableResponse(f"the rerank reply ranks {len(ranked)} of the {top} documents asked for")
        return ranked

    def usage(self) -> dict[str, StageUsage]:
        """Rerank calls so far."""
        return self.meter.usage()

    def take_usage(self, stage: str | None = None) -> dict[str, StageUsage]:
        """Rerank calls since the last take."""
        return (scoped_meter() or self.meter).take(stage)


def reranker(context: ModelSettings) -> Reranker | None:
    """Cohere rerank (context.rerank_model) when COHERE_API_KEY is set, else None (keep the fused order)."""
    key = env_setting("COHERE_API_KEY")
    if not key:
        return None
    from langchain_cohere import CohereRerank

    client = _cohere_client(key, context.timeout_seconds, env_setting("COHERE_BASE_URL"))
    return Reranker(CohereRerank(client=client, model=context.rerank_model), context)
