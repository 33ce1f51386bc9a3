"""A LangChain retriever over the index's hybrid search, so LangChain chains and the graph can plug it in."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from citewise.index.store import Hit, Index


def hit_to_document(hit: Hit) -> LCDocument:
    """A LangChain document whose metadata carries every field of the hit except its text."""
    metadata = hit.as_dict()
    text = metadata.pop("text")
    return LCDocument(page_content=text, metadata=metadata, id=hit.chunk_id)


class IndexRetriever(BaseRetriever):
    """Hybrid (or BM25 / dense) search over a citewise `Index` as a LangChain `BaseRetriever`.

    `search_kwargs` are passed to `Index.search` (k, mode, alpha, fusion, candidates, redundancy).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Index
    search_kwargs: dict[str, Any] = Field(default_factory=dict)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[LCDocument]:
        return [hit_to_document(hit) for hit in self.index.search(query, **self.search_kwargs)]
