"""A LangChain retriever over the index's hybrid search, so LangChain chains and the graph can plug it in.

It asks of the index only `search` (both tiers have it: `citewise.index.Index` and
`citewise.index.shared.index.SharedIndex`), so this module does not import the stores, which hand out
retrievers with `as_retriever`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field


class SearchHit(Protocol):
    """One search result: its chunk id and every field as a dict (citewise.index.Hit)."""

    @property
    def chunk_id(self) -> str:
        """The chunk's id."""
        ...

    def as_dict(self) -> dict[str, Any]:
        """Every field, the text included."""
        ...


@runtime_checkable
class Searchable(Protocol):
    """What the retriever searches: either tier's index.

    Its `search` is `citewise.index.reading.SearchIndex.search` (the query, k, the mode and the keywords
    `IndexRetriever.search_kwargs` pass on); this module names no store's types, the stores hand it out.
    """

    def search(self, *args: Any, **kwargs: Any) -> Sequence[SearchHit]:
        """The best hits for the query, best first."""
        ...


def hit_to_document(hit: SearchHit) -> LCDocument:
    """A LangChain document whose metadata carries every field of the hit except its text."""
    metadata = hit.as_dict()
    text = metadata.pop("text")
    return LCDocument(page_content=text, metadata=metadata, id=hit.chunk_id)


class IndexRetriever(BaseRetriever):
    """Hybrid (or BM25 / dense) search over a citewise index (either tier) as a LangChain `BaseRetriever`.

    `search_kwargs` are passed to its `search` (k, mode, alpha, fusion, candidates, redundancy).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Searchable
    search_kwargs: dict[str, Any] = Field(default_factory=dict)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[LCDocument]:
        return [hit_to_document(hit) for hit in self.index.search(query, **self.search_kwargs)]
