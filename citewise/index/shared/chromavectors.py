"""The shared tier's vectors in a Chroma server instead of pgvector (#28): the choice, and `ChromaVectors`.

A shared store (`citewise.index.shared.pgstore`) keeps its chunk and paragraph vectors in one of two places,
chosen when it is made and recorded in its ``<p>_meta`` table (key ``vectors``), so that every worker and
reader uses the same one whatever it is told later (`vector_choice` parses the option; another one is
refused):

``pgvector`` (the default)
    `citewise.index.shared.pgvectors`: tables in the same database, written in the same transactions as every
    other row of a file.
``chroma://host:port`` (``chroma+https://`` for TLS; ``http://`` and ``https://`` URLs are read alike)
    Two collections on a Chroma server (``chroma run``): ``<name>-chunks`` and ``<name>-paragraphs``, where
    ``<name>`` is recorded with the store (``vector_collection``: the prefix and a random tag, so stores of
    one prefix in two databases can share a server). Cosine HNSW at the local tier's settings
    (``ef_construction`` and ``ef_search`` 200); vectors in float32.

A Chroma server cannot join a PostgreSQL transaction, so PostgreSQL decides what exists and Chroma only ever
holds more than that, never less:

- A worker upserts a file's vectors (keyed by chunk and paragraph id) into Chroma inside its write
  transaction, after its document rows are written, before it commits. Killed before the commit, it leaves
  vectors of ids PostgreSQL never holds (orphans); a retry rewrites the same ids (a chunk id is the hash of
  its document, place and text, a paragraph id of its document and place).
- A search keeps only the vector hits whose chunk ids PostgreSQL holds in the search's snapshot
  (`PgStore.stored_vectors`, which every candidate passes through), so orphans are never seen.
- Removal deletes from PostgreSQL first, then, after the commit, from Chroma the removed ids PostgreSQL
  does not hold again by then. A per-document advisory lock orders that against a worker storing the same
  document meanwhile (it holds the lock from its upsert to its commit): the delete waits for that commit
  and then leaves its ids alone. A worker killed between its commit and the delete leaves orphans too;
  `PgStore.sweep` deletes every orphan the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar
from urllib.parse import urlparse

import numpy as np

from citewise.index.records import IndexOpenError

if TYPE_CHECKING:
    import chromadb
    from chromadb.api.collection_configuration import CreateHNSWConfiguration
    from chromadb.api.types import Embedding, Metadata

PGVECTOR = "pgvector"
PAGE = 10_000
"""Ids listed per request when the sweep reads a collection whole."""
HNSW: CreateHNSWConfiguration = {"space": "cosine", "ef_construction": 200, "ef_search": 200}
"""The collections' HNSW settings: the local tier's Chroma and `PgVectors` use the same."""

T = TypeVar("T")
P = ParamSpec("P")


class VectorTable(Protocol):
    """What a shared store does with one kind of vectors (chunks' or paragraphs'), wherever they are kept."""

    def create(self) -> None:
        """Make the table or collection if it does not exist."""
        ...

    def upsert(
        self,
        ids: Sequence[str],
        vectors: np.ndarray,
        texts: Sequence[str] | None = None,
        metadatas: Sequence[dict[str, str | int]] | None = None,
    ) -> None:
        """Add or replace vectors by id."""
        ...

    def delete(self, ids: Sequence[str]) -> int | None:
        """Delete vectors by id (missing ids are ignored)."""
        ...

    def search(
        self, vector: np.ndarray, k: int, collections: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """The k nearest (of documents in `collections`, None: any) as (id, cosine), best first."""
        ...

    def set_collection(self, ids: Sequence[str], collection: str) -> None:
        """Record that the given vectors' documents are in `collection` now."""
        ...

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vector of each given id that is stored."""
        ...

    def similarities(self, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """The cosine similarity to a query vector of each given id that is stored."""
        ...

    def count(self) -> int:
        """How many vectors are stored."""
        ...


def vector_choice(option: str | None) -> str | None:
    """The canonical form of a ``--vectors`` option: ``pgvector``, ``chroma://host:port`` or None (not given).

    Raises:
        ValueError: neither pgvector nor a Chroma server's address.
    """
    if option is None or not option.strip():
        return None
    option = option.strip()
    if option.lower() == PGVECTOR:
        return PGVECTOR
    parsed = urlparse(option)
    schemes = {"chroma": "chroma", "http": "chroma", "chroma+https": "chroma+https", "https": "chroma+https"}
    if parsed.scheme not in schemes or not parsed.hostname or parsed.path not in ("", "/"):
        raise ValueError(
            f"--vectors must be pgvector or a Chroma server's address (chroma://host:port), not {option!r}"
        )
    try:
        port = parsed.port or (443 if schemes[parsed.scheme] == "chroma+https" else 8000)
    except ValueError as error:
        raise ValueError(f"--vectors: a bad port in {option!r}") from error
    host = f"[{parsed.hostname}]" if ":" in parsed.hostname else parsed.hostname
    return f"{schemes[parsed.scheme]}://{host}:{port}"


def chroma_client(choice: str) -> chromadb.ClientAPI:
    """An HTTP client to the Chroma server a store's `vector_choice` names.

    Raises:
        IndexOpenError: the server does not answer (one line: where, and what to do).
    """
    import chromadb  # half a second to import: only stores whose vectors are in Chroma pay it
    from chromadb.config import Settings

    parsed = urlparse(choice)
    assert parsed.hostname and parsed.port, choice
    with _reaching(choice):
        try:
            return chromadb.HttpClient(
                host=parsed.hostname,
                port=parsed.port,
                ssl=parsed.scheme == "chroma+https",
                settings=Settings(anonymized_telemetry=False),
            )
        except ValueError as error:  # chromadb's "Could not connect to a Chroma server"
            raise _unreachable(choice, error) from error


def _unreachable(choice: str, error: BaseException) -> IndexOpenError:
    reason = (str(error).splitlines() or [type(error).__name__])[0]
    return IndexOpenError(
        f"cannot reach the Chroma server at {choice} that holds the shared store's vectors ({reason}): "
        "start it, or check its address"
    )


@contextmanager
def _reaching(choice: str) -> Iterator[None]:
    """Turn the HTTP client's failures to connect into a one-line `IndexOpenError`."""
    import httpx

    try:
        yield
    except httpx.TransportError as error:
        raise _unreachable(choice, error) from error


class ChromaVectors:
    """One kind of a shared store's vectors in a Chroma server collection (`VectorTable`; see the module).

    Args:
        client: A client of the server (`chroma_client`).
        choice: The server's address as the store records it (for messages).
        name: The collection's name.
        dim: The vectors' dimension.
    """

    def __init__(self, client: chromadb.ClientAPI, choice: str, name: str, dim: int) -> None:
        self.client, self.choice, self.name, self.dim = client, choice, name, dim
        self._collection: chromadb.Collection | None = None
        self._batch: int | None = None

    def _call(self, action: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        with _reaching(self.choice):
            return action(*args, **kwargs)

    def create(self) -> None:
        """Make the collection if it does not exist (cosine HNSW; the store gives every vector)."""
        self._collection = self._call(
            self.client.get_or_create_collection,
            self.name,
            embedding_function=None,
            configuration={"hnsw": HNSW},
            metadata={"dim": self.dim},
        )

    @property
    def collection(self) -> chromadb.Collection:
        """The collection, opened at the first use (`open`)."""
        return self._collection or self.open()

    def open(self) -> chromadb.Collection:
        """Find the collection on the server.

        Raises:
            IndexOpenError: the server does not answer, or has no such collection (it lost the store's
                vectors).
        """
        if self._collection is None:
            from chromadb.errors import NotFoundError

            try:
                self._collection = self._call(lambda: self.client.get_collection(self.name))
            except NotFoundError as error:
                raise IndexOpenError(
                    f"the Chroma server at {self.choice} has no collection {self.name!r}: it lost the shared "
                    "store's vectors (ingest the files again into a new store)"
                ) from error
        return self._collection

    def _batches(self, size: int) -> Iterator[slice]:
        if self._batch is None:
            self._batch = max(1, min(5000, self._call(self.client.get_max_batch_size)))
        for start in range(0, size, self._batch):
            yield slice(start, start + self._batch)

    def upsert(
        self,
        ids: Sequence[str],
        vectors: np.ndarray,
        texts: Sequence[str] | None = None,
        metadatas: Sequence[dict[str, str | int]] | None = None,
    ) -> None:
        """Add or replace vectors (an id given twice keeps its last); `texts` are not kept (PostgreSQL's)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(ids) or (len(ids) and vectors.shape[1] != self.dim):
            raise ValueError(f"expected {len(ids)} vectors of {self.dim} dimensions, got {vectors.shape}")
        last = {key: n for n, key in enumerate(ids)}
        keys, rows = list(last), list(last.values())
        for part in self._batches(len(keys)):
            chosen = rows[part]
            metas: list[Metadata] | None = (
                [dict(metadatas[n]) for n in chosen] if metadatas is not None else None
            )
            self._call(self.collection.upsert, ids=keys[part], embeddings=vectors[chosen], metadatas=metas)

    def delete(self, ids: Sequence[str]) -> None:
        """Delete vectors by id (missing ids are ignored)."""
        ids = list(ids)
        for part in self._batches(len(ids)):
            self._call(self.collection.delete, ids=ids[part])

    def search(
        self, vector: np.ndarray, k: int, collections: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """The k nearest as (id, cosine similarity), best first (orphans included: see the module).

        `collections` is Chroma's `where` on the vectors' metadata, applied inside its search.
        """
        if k < 1:
            return []
        query: Embedding = np.asarray(vector, dtype=np.float32)
        where: Any = None if collections is None else {"collection": {"$in": list(collections)}}
        result = self._call(
            lambda: self.collection.query(
                query_embeddings=[query], n_results=k, include=["distances"], where=where
            )
        )
        if not result["ids"] or not result["distances"]:
            return []
        pairs = zip(result["ids"][0], result["distances"][0], strict=True)
        return [(key, 1.0 - float(distance)) for key, distance in pairs]

    def set_collection(self, ids: Sequence[str], collection: str) -> None:
        """Record that the given vectors' documents are in `collection` now (their metadata)."""
        ids = list(ids)
        for part in self._batches(len(ids)):
            chosen = ids[part]
            metas: list[Metadata] = [{"collection": collection} for _ in chosen]
            self._call(self.collection.update, ids=chosen, metadatas=metas)

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vector of each given id the collection holds, as float32."""
        if not ids:
            return {}
        found = self._call(lambda: self.collection.get(ids=list(ids), include=["embeddings"]))
        embeddings = found["embeddings"]
        if embeddings is None:
            return {}
        pairs = zip(found["ids"], embeddings, strict=True)
        return {key: np.asarray(row, dtype=np.float32) for key, row in pairs}

    def similarities(self, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """The cosine similarity to a query vector of each given id the collection holds."""
        found = self.vectors(ids)
        if not found:
            return {}
        keys = list(found)
        matrix = np.stack([found[key] for key in keys])
        query = np.asarray(vector, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(query)) or 1.0)
        cosines = (matrix @ query) / np.where(norms > 0, norms, 1.0)
        return dict(zip(keys, cosines.tolist(), strict=True))

    def documents(self) -> dict[str, str]:
        """Every id the collection holds, with its document's id (read a page at a time)."""
        held: dict[str, str] = {}
        offset = 0
        while True:
            page = self._call(self.collection.get, include=["metadatas"], limit=PAGE, offset=offset)
            metadatas = page["metadatas"] or [{}] * len(page["ids"])
            for key, meta in zip(page["ids"], metadatas, strict=True):
                held[key] = str((meta or {}).get("doc_id", ""))
            if len(page["ids"]) < PAGE:
                return held
            offset += PAGE

    def count(self) -> int:
        """How many vectors the collection holds (orphans included until a sweep)."""
        return self._call(self.collection.count)
