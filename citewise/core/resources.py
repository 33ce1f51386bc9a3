"""What a run's steps use and a way in builds once: the index, the chat models, the embedder, the reranker.

The CLI, the terminal chat, the chat page and the served graphs each build one `Resources` and hand it to
the graph in the run's Context (`Context.resources`, which LangGraph gives every node as
`runtime.context`); the steps reach it through `open_index` and `llms.models`. Nothing here is a module
cache: what is opened or loaded lives as long as the object that holds it, and a test builds one with
fakes (`Resources(index=..., models=..., reranker=...)`) instead of patching a module.

What it keeps, each made at its first use:
- one open `Index` per (index directory, Chroma URL), opened off the event loop;
- one embedder per model name (the MiniLM weights load once), which the indexes it opens embed with;
- one (judge, writer) pair per event loop and model settings: the async provider clients belong to the loop
  they were first used on, so a new loop (another `asyncio.run`, as the terminal chat does each turn) gets
  its own pair, and pairs of closed loops are dropped;
- what runs learnt about each model server (`citewise.models.Servers`) and the open SQLite response caches;
- the outline library's type centroids per library (the examples are embedded once).

A Context without one (a script's `Context()`, a test's) gets its own at its first use (`resources_of`), so
the Python API works as it is; the ways in pass theirs, so that every run of a process shares it.

This is the one module that names the index tiers' classes: a run's settings name a local index folder or a
shared store's postgresql:// URL, and what is handed back is the reading port (`SearchIndex`: `index`,
`open_index`, `open_store`) or the writing port (`IndexWriter`: `Resources.writer`, `open_writer`;
`open_folder` gives a local index as both; `stored_documents` reads its records alone, for `citewise show`).
What only the shared tier does (queueing with each claim's outcome, requeueing, tags, making a store) is its
writer's own, reached through `shared_store`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citewise.deployment import check_settings

if TYPE_CHECKING:
    import numpy as np

    from citewise.context import Context
    from citewise.core.outlines import OutlineType
    from citewise.index.chunking import ChunkingConfig
    from citewise.index.embeddings import Embedder
    from citewise.index.reading import SearchIndex
    from citewise.index.records import DocumentRecord, ParagraphRecord
    from citewise.index.shared.writer import SharedWriter
    from citewise.index.writer import IndexWriter, WritableIndex
    from citewise.models import LLM, Reranker, ResponseCaches, Servers

_UNSET: Any = object()
_attach = threading.Lock()

CENTROIDS_KEPT = 16
"""Outline libraries whose centroids one Resources keeps (a run names one; an edited file is another)."""


class Resources:
    """The index, chat models, embedder, reranker and outline centroids that runs share."""

    def __init__(
        self,
        *,
        index: SearchIndex | None = None,
        embedder: Embedder | None = None,
        models: tuple[LLM | None, LLM | None] | None = None,
        reranker: Reranker | None = _UNSET,
    ) -> None:
        """Resources that open, load and build what runs ask for; a given one is used instead (tests, fakes).

        Args:
            index: The index every run searches, whatever its Context names.
            embedder: The embedder of its model (an index built with that model embeds with it).
            models: The (judge, writer) pair of every run that asks a model (not of local stages).
            reranker: The reranker of every run (None: keep the score order); by default Cohere's when
                COHERE_API_KEY is set.
        """
        self._index = index
        self._models = models
        self._reranker = reranker
        self._embedders: dict[str, Embedder] = {embedder.name: embedder} if embedder is not None else {}
        self._indexes: dict[tuple[str, str | None], SearchIndex] = {}
        self._pairs: dict[tuple[Any, ...], tuple[asyncio.AbstractEventLoop | None, tuple[Any, Any]]] = {}
        self._centroids: dict[tuple[str, tuple[OutlineType, ...]], np.ndarray] = {}
        self._lock = threading.Lock()
        self._opening = threading.Lock()
        self._servers: Servers | None = None
        self._caches: ResponseCaches | None = None

    def __repr__(self) -> str:
        return f"Resources(indexes={len(self._indexes)}, embedders={sorted(self._embedders)})"

    @property
    def servers(self) -> Servers:
        """What runs learnt about each model server (methods refused, speed, queueing, context window)."""
        from citewise.models import Servers

        with self._lock:
            if self._servers is None:
                self._servers = Servers()
            return self._servers

    @property
    def caches(self) -> ResponseCaches:
        """The SQLite response caches opened so far (Context.llm_cache)."""
        from citewise.models import ResponseCaches

        with self._lock:
            if self._caches is None:
                self._caches = ResponseCaches()
            return self._caches

    # the embedder ----------------------------------------------------------------------------------------
    def embedder(self, name: str | None = None) -> Embedder:
        """The embedder of model `name` (None: the configured default), loaded once for these resources.

        Raises:
            ValueError: no model of that name, or a bad CITEWISE_EMBEDDING_PRECISION.
        """
        from citewise.index.embeddings import load_embedder

        with self._lock:
            if name is None and len(self._embedders) == 1:
                return next(iter(self._embedders.values()))
            if name in self._embedders:
                return self._embedders[name]
            made = load_embedder(name)
            return self._embedders.setdefault(made.name, made)

    # the index -------------------------------------------------------------------------------------------
    async def index(self, context: Context) -> SearchIndex:
        """The index the context names, opened once, off the event loop (opening syncs the stores).

        Raises:
            DeploymentError: a served run names another index or store than the server's.
        """
        check_settings(context)
        if self._index is not None:
            return self._index
        if context.store:
            return await asyncio.to_thread(self.open_store, context.store)
        return await asyncio.to_thread(self.open_index, context.index_dir, context.chroma_url)

    def open_store(self, url: str) -> SearchIndex:
        """The shared store at `url` (the shared tier, `citewise.index.shared`), opened at the first call.

        A store an older citewise made is brought up to date first (`SharedWriter.up_to_date`), whichever way
        in opens it: the CLI, a replica, the page or the served graph.

        Raises:
            IndexOpenError: no store there, one made with an embedding model citewise lacks, or an older store
                on a database that cannot be written.
            psycopg.Error: the database refused that upgrade otherwise.
        """
        from citewise.index.shared.index import SharedIndex

        key = (url, "store")
        with self._opening:
            if key not in self._indexes:
                # a store an older citewise made: its tables brought up to date before it is read
                shared_store(url).up_to_date()
                self._indexes[key] = SharedIndex(url, embedder=self.embedder(SharedIndex.model_of(url)))
            return self._indexes[key]

    def open_index(self, index_dir: str, chroma_url: str | None = None) -> SearchIndex:
        """The index at `index_dir`, opened at the first call (blocking: syncs the stores)."""
        key = (index_dir, chroma_url)
        with self._opening:  # one opening at a time: two runs starting together share one handle
            if key not in self._indexes:
                self._indexes[key] = open_folder(
                    index_dir, chroma_url=chroma_url, create=False, embedders=self.embedder
                )
            return self._indexes[key]

    def writer(self, context: Context) -> IndexWriter:
        """A writer of the index the context names (the shared store when it names one: where runs read).

        Opened anew at each call, with these resources' embedders; the caller closes it.
        """
        return open_writer(
            index_dir=context.index_dir,
            store=context.store,
            chroma_url=context.chroma_url,
            embedders=self.embedder,
        )

    def forget_index(self, context: Context) -> None:
        """Drop the open index the context names, so that the next run opens it afresh.

        Runs that still hold it keep using it: it is not closed here, and its connections close when the last
        of them lets go of it.
        """
        with self._opening:
            key = (context.store, "store") if context.store else (context.index_dir, context.chroma_url)
            self._indexes.pop(key, None)

    def close(self) -> None:
        """Close the indexes these resources opened (their SQLite, PostgreSQL and Chroma connections).

        An index given at construction is its owner's to close. Models and embedders hold no connection
        that outlives a request. Resources used after closing open their indexes afresh.
        """
        with self._opening:
            opened, self._indexes = list(self._indexes.values()), {}
        for index in opened:
            index.close()

    def __enter__(self) -> Resources:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # the models ------------------------------------------------------------------------------------------
    def models(self, context: Context) -> tuple[Any, Any]:
        """(judge, writer) for the context's model settings on the running event loop, built once."""
        if self._models is not None:
            return self._models
        check_settings(context)
        from citewise.models import models_for

        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        key = (
            id(loop),
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
        servers, caches = self.servers, self.caches
        with self._lock:
            for stale in [
                k for k, (owner, _) in self._pairs.items() if owner is not None and owner.is_closed()
            ]:
                del self._pairs[stale]
            if key not in self._pairs:
                self._pairs[key] = (loop, models_for(context, servers=servers, caches=caches))
            return self._pairs[key][1]

    def reranker(self, context: Context) -> Reranker | None:
        """The reranker of a run: Cohere's (context.rerank_model) with COHERE_API_KEY set, else None."""
        if self._reranker is not _UNSET:
            return self._reranker
        from citewise.models import reranker

        return reranker(context)

    # the outline library ---------------------------------------------------------------------------------
    def outline_centroids(self, embedder: Embedder, library: Sequence[OutlineType]) -> np.ndarray:
        """One normalised mean example vector per type of `library`, computed once per library and model."""
        from citewise.core.outlines import type_centroids

        key = (embedder.name, tuple(library))
        with self._lock:
            kept = self._centroids.get(key)
        if kept is not None:
            return kept
        centroids = type_centroids(embedder, key[1])
        with self._lock:
            if len(self._centroids) >= CENTROIDS_KEPT:
                self._centroids.pop(next(iter(self._centroids)))
            self._centroids[key] = centroids
        return centroids


def resources_of(context: Context) -> Resources:
    """The resources of a run: the ones its Context carries, else new ones it keeps from now on."""
    resources = context.resources
    if resources is None:
        with _attach:
            if context.resources is None:
                context.resources = Resources()
            resources = context.resources
    return resources


def open_folder(
    folder: str | Path,
    *,
    chroma_url: str | None = None,
    chunking: ChunkingConfig | None = None,
    create: bool = True,
    embedders: Callable[[str | None], Embedder] | None = None,
) -> WritableIndex:
    """The local index in `folder`, to search and to write (made there when `create`).

    Opened with `embedders` (the way in's, loaded once); none given: the index loads its own model.

    Raises:
        IndexOpenError: no index there (and not `create`), or one that cannot be opened as asked.
    """
    from citewise.index.local.store import Index

    if embedders is None:
        return Index.open(folder, chroma_url=chroma_url, chunking=chunking, create=create)
    return Index.open(folder, chroma_url=chroma_url, chunking=chunking, create=create, embedders=embedders)


def open_writer(
    *,
    index_dir: str | Path,
    store: str | None = None,
    chroma_url: str | None = None,
    chunking: ChunkingConfig | None = None,
    create: bool = True,
    embedders: Callable[[str | None], Embedder] | None = None,
) -> IndexWriter:
    """The writer of the index a run names: the shared store at `store`, else the local one in `index_dir`.

    A shared store keeps the chunking it was made with; `chunking`, `create` and `embedders` are the local
    index's (`open_folder`).
    """
    if store:
        return shared_store(store)
    return open_folder(
        index_dir, chroma_url=chroma_url, chunking=chunking, create=create, embedders=embedders
    )


def stored_documents(
    folder: str | Path, text: str, collections: tuple[str, ...] | None = None
) -> list[tuple[DocumentRecord, list[ParagraphRecord], dict[str, str]]] | None:
    """The local index's documents whose title or file holds `text`, each with its paragraphs and references.

    Only documents of `collections` (None: every one). Read from the index's records alone (no model loaded,
    no vectors opened); None when `folder` holds no index.
    """
    from citewise.index.local.docstore import DocStore

    database = Path(folder) / "docs.sqlite3"
    if not database.exists():
        return None
    store = DocStore(database)
    try:
        return [
            (record, store.paragraphs(record.id), store.bibliography(record.id))
            for record in store.find_documents(text, collections=collections)
        ]
    finally:
        store.close()


def shared_store(url: str) -> SharedWriter:
    """The shared store at `url` as its writer, with what only that tier does beside the writing port."""
    from citewise.index.shared.writer import SharedWriter

    return SharedWriter(url)
