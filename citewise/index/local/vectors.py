"""The vector store: a Chroma collection, embedded (PersistentClient) or on a server (HttpClient).

Chroma mirrors the document store: chunk ids, vectors, texts and a little metadata. It is written after the
document store commits, and reconciled by id when it lags (an interrupted ingest): what the document store
has and Chroma lacks is added from the stored vectors (no re-embedding), what it no longer has is deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import chromadb
import numpy as np
from chromadb.api.types import Documents, Embedding, EmbeddingFunction, Embeddings, Metadata
from chromadb.config import Settings

from citewise.index.embeddings import Embedder, load_embedder

logger = logging.getLogger(__name__)


class ChromaEmbedding(EmbeddingFunction[Documents]):
    """Chroma embedding function over our embedder, so Chroma never falls back to its downloading default."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def __call__(self, input: Documents) -> Embeddings:
        """Embed documents for Chroma."""
        return list(self.embedder.embed(list(input)))

    @staticmethod
    def name() -> str:
        """The name Chroma records in the collection configuration."""
        return "citewise"

    def get_config(self) -> dict[str, Any]:
        """Chroma persists this with the collection."""
        return {"model": self.embedder.name}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ChromaEmbedding:
        """Rebuild from a persisted configuration (only the local model can be rebuilt offline)."""
        return ChromaEmbedding(load_embedder(str(config.get("model") or "") or None))


def server_address(url: str) -> tuple[str, int, bool]:
    """The (host, port, https) of a Chroma server URL.

    Raises:
        ValueError: the URL names no host.
    """
    parsed = urlparse(url if "://" in url else f"http://{url}")
    if not parsed.hostname:
        raise ValueError(f"not a Chroma server URL: {url!r} (expected e.g. http://127.0.0.1:8000)")
    https = parsed.scheme == "https"
    return parsed.hostname, parsed.port or (443 if https else 8000), https


def make_client(root: Path, url: str | None) -> chromadb.ClientAPI:
    """An embedded client under `root`, or an HTTP client to the Chroma server at `url`."""
    settings = Settings(anonymized_telemetry=False)
    if not url:
        return chromadb.PersistentClient(path=str(root / "chroma"), settings=settings)
    host, port, ssl = server_address(url)
    return chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=settings)


class VectorIndex:
    """Chunk vectors in Chroma with cosine distance (HNSW)."""

    def __init__(self, client: chromadb.ClientAPI, embedder: Embedder, collection: str) -> None:
        self.client = client
        self.collection = client.get_or_create_collection(
            collection,
            embedding_function=ChromaEmbedding(embedder),  # type: ignore[arg-type]
            configuration={"hnsw": {"space": "cosine", "ef_construction": 200, "ef_search": 200}},
            metadata={"embedding_model": embedder.name},
        )
        self.embedder = embedder
        self.batch = max(1, min(5000, client.get_max_batch_size()))

    def foreign(self) -> str | None:
        """How the collection shows that another embedding model made it (another dimension), or None."""
        first = self.collection.get(limit=1, include=["embeddings"])["embeddings"]
        if first is not None and len(first) and len(first[0]) != self.embedder.dim:
            model = (self.collection.metadata or {}).get("embedding_model")
            made_by = f" (made by {model!r})" if model and model != self.embedder.name else ""
            return f"holds {len(first[0])}-dimensional vectors{made_by}"
        return None

    def ids(self) -> set[str]:
        """Every chunk id in the collection."""
        found: set[str] = set()
        offset = 0
        while True:
            page = self.collection.get(include=[], limit=10000, offset=offset)
            found.update(page["ids"])
            if len(page["ids"]) < 10000:
                return found
            offset += 10000

    def upsert(
        self,
        ids: Sequence[str],
        vectors: np.ndarray,
        texts: Sequence[str],
        metadatas: Sequence[Metadata],
    ) -> None:
        """Add or replace chunks, in batches Chroma accepts."""
        for i in range(0, len(ids), self.batch):
            j = i + self.batch
            self.collection.upsert(
                ids=list(ids[i:j]),
                embeddings=vectors[i:j],
                documents=list(texts[i:j]),
                metadatas=list(metadatas[i:j]),
            )

    def delete(self, ids: Sequence[str]) -> None:
        """Delete chunks by id (missing ids are ignored)."""
        for i in range(0, len(ids), self.batch):
            self.collection.delete(ids=list(ids[i : i + self.batch]))

    def set_collection(self, ids: Sequence[str], collection: str) -> None:
        """Record that the given chunks are in `collection` now (their metadata's `collection`)."""
        for i in range(0, len(ids), self.batch):
            batch = list(ids[i : i + self.batch])
            self.collection.update(ids=batch, metadatas=[{"collection": collection}] * len(batch))

    def search(
        self, vector: np.ndarray, k: int, collections: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """The k nearest chunks (of `collections`, None: all) as (id, cosine), best first (fewer when fewer).

        `collections` is Chroma's `where` filter on the chunks' metadata: applied inside its search, so k
        are found when the collections hold k. No count() first: Chroma answers a query for more than it
        holds with what it has, and counting cost as much as the query itself (3-5 ms a search on SciFact).
        """
        query: Embedding = vector.astype(np.float32)
        where: Any = None if collections is None else {"collection": {"$in": list(collections)}}
        result = self.collection.query(
            query_embeddings=[query], n_results=k, include=["distances"], where=where
        )
        if not result["ids"]:
            return []
        distances = result["distances"][0] if result["distances"] else []
        return [(chunk_id, 1.0 - float(d)) for chunk_id, d in zip(result["ids"][0], distances, strict=True)]

    def count(self) -> int:
        """How many chunks the collection holds."""
        return self.collection.count()
