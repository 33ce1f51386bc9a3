"""The shared tier's reading side: search and read a `PgStore` in PostgreSQL as `Index` does its directory.

`SharedIndex` answers `search` with the same hits the local tier gives for the same documents: it asks the
store for the candidates (BM25 top of chunks and of paragraphs, HNSW top of chunks and of paragraphs) and
ranks them with `citewise.index.scoring.score_hits`, the function `Index.search` ends in, so the two tiers
differ only where their stores do:

- Dense search is HNSW in pgvector (the local tier searches its up to 50,000 chunks exactly) and vectors are
  stored as halfvec (a cosine within 1e-4 of float32's, `citewise.index.shared.pgvectors`): near-ties may
  swap.
- A chunk's lexical score mixes its BM25 with its paragraph's, each divided by the query's best
  (`blend_lexical`). The local tier scores every chunk; here the best `depth` are found by Fagin's
  threshold algorithm over the two BM25 rankings: the top n chunks and top n paragraphs are read, every
  chunk of those paragraphs is scored too, and the list is final once its last score is at least what a
  chunk outside both tops can reach (``(1 - w) * chunk_n + w * paragraph_n``); otherwise n grows fourfold.
  Equal scores are ordered by chunk id (the local tier: by position in its BM25 index).

Every search reads one snapshot (a read-only REPEATABLE READ transaction), so a worker committing meanwhile
cannot make its candidates and their records disagree; the next search sees the commit (no reopen, no
refresh: `refresh` does nothing). Connections come from a `psycopg_pool.ConnectionPool`, one a call, so
threads search at once; each pooled connection keeps its `PgStore` (the vector types' adapters are
registered once per connection). A search also takes a side connection from a second pool, which imports
the snapshot (`pg_export_snapshot`, `SET TRANSACTION SNAPSHOT`; a hot standby exports too) and runs the
paragraphs' BM25 and HNSW tops while the first runs the chunks': the server works on both at once (at 1M
chunks the two BM25 tops were two thirds of a search; docs/benchmarks.md).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from functools import partial
from operator import methodcaller
from typing import Any, TypeVar

import numpy as np
import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from citewise.index.embeddings import Embedder, RememberedEmbeddings, load_embedder
from citewise.index.records import (
    ChunkRecord,
    Collections,
    DocumentRecord,
    Hit,
    IndexOpenError,
    IndexStats,
    ParagraphRecord,
)
from citewise.index.scoring import (
    PARAGRAPH_DENSE_WEIGHT,
    PARAGRAPH_WEIGHT,
    Candidates,
    Fusion,
    SearchMode,
    blend_lexical,
    check_search,
    score_hits,
)
from citewise.index.shared.pgstore import PgStore
from citewise.index.shared.schema import DEFAULT_PREFIX

CONNECTIONS = 8
"""Connections a `SharedIndex` opens at most (searches beyond that many at once wait for one)."""
GROWTH = 4
"""How much the threshold algorithm widens the BM25 tops when they do not settle the lexical list."""


class _Lexical:
    """One search's lexical scores, read from the store as needed and remembered (see the module).

    Scores are divided by the query's best chunk and best paragraph BM25, as the local tier's are.
    """

    def __init__(
        self,
        store: PgStore,
        query: str,
        weight: float,
        lanes: _Lanes | None = None,
        collections: Collections = None,
    ) -> None:
        self.store, self.query, self.weight, self.lanes = store, query, weight, lanes
        self.collections = collections  # the BM25 tops (and so the best scores) are of these only
        self.own: dict[str, float] = {}  # chunk -> its BM25 / the best (0 when it shares no term)
        self.paragraph: dict[str, float] = {}  # paragraph -> its BM25 / the best
        self.parent: dict[str, str] = {}  # chunk -> its paragraph
        self._best: tuple[float, float] | None = None

    def best(self) -> tuple[float, float]:
        """The query's best chunk BM25 and best paragraph BM25 (0 when nothing shares a term)."""
        if self._best is None:
            if self.weight > 0 and self.lanes is not None:
                chunk, paragraph = self.lanes.together(
                    partial(self.store.bm25, self.query, 1, self.collections),
                    methodcaller("bm25_paragraphs", self.query, 1, self.collections),
                )
            else:
                chunk = self.store.bm25(self.query, 1, self.collections)
                paragraph = (
                    self.store.bm25_paragraphs(self.query, 1, self.collections) if self.weight > 0 else []
                )
            self._best = (chunk[0][1] if chunk else 0.0, paragraph[0][1] if paragraph else 0.0)
        return self._best

    def top(self, depth: int) -> list[tuple[str, float]]:
        """The `depth` best chunks by lexical score (above 0), best first, ties by chunk id."""
        size = depth
        while True:
            if self.weight > 0 and self.lanes is not None:  # the paragraphs' top on the side connection
                chunks, paragraphs = self.lanes.together(
                    partial(self.store.bm25, self.query, size, self.collections),
                    methodcaller("bm25_paragraphs", self.query, size, self.collections),
                )
            else:
                chunks = self.store.bm25(self.query, size, self.collections)
                wanted = self.weight > 0 and chunks
                paragraphs = self.store.bm25_paragraphs(self.query, size, self.collections) if wanted else []
            if not chunks:
                return []
            best_chunk, best_paragraph = chunks[0][1], 0.0
            self.own.update((i, score / best_chunk) for i, score in chunks)
            floor = (
                chunks[-1][1] / best_chunk if len(chunks) == size else 0.0
            )  # the best a chunk left out has
            pool = [i for i, _ in chunks]
            if self.weight > 0:
                best_paragraph = paragraphs[0][1] if paragraphs else 0.0
                self.paragraph.update((p, score / best_paragraph) for p, score in paragraphs)
                members = self.store.paragraph_chunks([p for p, _ in paragraphs])
                for p, chunk_ids in members.items():
                    self.parent.update((c, p) for c in chunk_ids)
                    pool.extend(chunk_ids)
                paragraph_floor = paragraphs[-1][1] / best_paragraph if len(paragraphs) == size else 0.0
                floor = float(blend_lexical(np.asarray(floor), np.asarray(paragraph_floor), self.weight))
            self._best = (best_chunk, best_paragraph)
            pool = list(dict.fromkeys(pool))
            ranked = sorted(
                ((i, s) for i, s in zip(pool, self.scores(pool), strict=True) if s > 0),
                key=lambda pair: (-pair[1], pair[0]),
            )[:depth]
            if floor <= 0 or (len(ranked) == depth and ranked[-1][1] >= floor):
                return ranked
            size *= GROWTH

    def scores(self, ids: Sequence[str]) -> list[float]:
        """Each chunk's lexical score (0 when neither it nor its paragraph shares a term with the query)."""
        best_chunk, best_paragraph = self.best()
        unknown = [i for i in ids if i not in self.own]
        if unknown and best_chunk > 0:
            found = self.store.bm25_scores(self.query, unknown)
            self.own.update((i, found.get(i, 0.0) / best_chunk) for i in unknown)
        own = np.array([self.own.get(i, 0.0) for i in ids], dtype=np.float64)
        if self.weight <= 0:
            return own.tolist()
        orphans = [i for i in ids if i not in self.parent]
        if orphans:
            self.parent.update(self.store.chunk_paragraphs(orphans))
        unscored = list(dict.fromkeys(self.parent[i] for i in ids if i in self.parent))
        unscored = [p for p in unscored if p not in self.paragraph]
        if unscored and best_paragraph > 0:
            found = self.store.bm25_paragraph_scores(self.query, unscored)
            self.paragraph.update((p, found.get(p, 0.0) / best_paragraph) for p in unscored)
        paragraph = np.array([self.paragraph.get(self.parent.get(i, ""), 0.0) for i in ids], dtype=np.float64)
        return blend_lexical(own, paragraph, self.weight).tolist()


T = TypeVar("T")
S = TypeVar("S")


class _Lanes:
    """A search's second connection, reading the same snapshot, and the thread that queries it meanwhile.

    The slowest parts of a search at scale are pairs of independent queries (the BM25 tops of chunks and of
    paragraphs, the HNSW tops of chunks and of paragraphs); the server runs the two of a pair at once.
    """

    def __init__(self, side: PgStore, threads: ThreadPoolExecutor) -> None:
        self.side, self.threads = side, threads

    def together(self, here: Callable[[], T], there: Callable[[PgStore], S]) -> tuple[T, S]:
        """`here()` on this thread while `there(side store)` runs on the side connection; both results."""
        future = self.threads.submit(there, self.side)
        try:
            mine = here()
        finally:
            wait([future])  # the side connection is never left mid-query, even when `here` failed
        return mine, future.result()


class _Pool:
    """What `score_hits` reads of one shared search's pool, from the search's snapshot."""

    def __init__(self, store: PgStore, query_vector: np.ndarray, lexical: _Lexical) -> None:
        self.store, self.query_vector, self.lexical = store, query_vector, lexical

    def stored_vectors(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """The stored ids (of the search's collections: the pool's gate) and their vectors (as float32)."""
        return self.store.stored_vectors(ids, self.lexical.collections)

    def lexical_scores(self, ids: Sequence[str]) -> list[float]:
        """Each chunk's lexical score."""
        return self.lexical.scores(ids)

    def paragraph_similarities(self, ids: Sequence[str]) -> np.ndarray:
        """The similarity to the query of each chunk's paragraph (0 where it has no vector)."""
        orphans = [i for i in ids if i not in self.lexical.parent]
        if orphans:
            self.lexical.parent.update(self.store.chunk_paragraphs(orphans))
        parents = [self.lexical.parent.get(i, "") for i in ids]
        found = self.store.paragraph_similarities(self.query_vector, list(set(parents) - {""}))
        return np.array([found.get(p, 0.0) for p in parents], dtype=np.float32)

    def chunks(self, ids: Sequence[str]) -> dict[str, ChunkRecord]:
        """The stored chunks' records."""
        return self.store.chunks(ids, self.lexical.collections)


class SharedIndex(RememberedEmbeddings):
    """A read and search handle on a shared store (`PgStore`): `Index`'s reading API, over PostgreSQL.

    Args:
        dsn: The store's database (``postgresql://user@host:port/database``).
        prefix: The store's table prefix.
        embedder: The store's embedding model (loaded by the name the store records when None).
        connections: Connections opened at most (`CONNECTIONS`), and as many side connections.
        parallel: Run a search's independent queries two at a time, on its connection and a side one reading
            the same snapshot (exported by the first, `pg_export_snapshot`); False: one after the other.

    Raises:
        IndexOpenError: there is no store with this prefix, `embedder` is another model than its, or the
            Chroma server that holds its vectors (if it is one's) does not answer.
    """

    def __init__(
        self,
        dsn: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        embedder: Embedder | None = None,
        connections: int = CONNECTIONS,
        parallel: bool = True,
    ) -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            opened = PgStore(dsn, prefix=prefix, conn=conn)
            settings = opened.settings()
            opened.open_vectors()  # an unreachable Chroma server is said now, not at the first search
        if embedder is None:
            try:
                embedder = load_embedder(settings.model)
            except ValueError as error:
                raise IndexOpenError(str(error)) from error
        if embedder.name != settings.model:
            raise IndexOpenError(
                f"the shared store {prefix!r} was made with embedding model {settings.model!r}, not "
                f"{embedder.name!r}: its questions must be embedded with its model"
            )
        self.dsn, self.prefix, self.embedder, self.settings = dsn, prefix, embedder, settings
        self._stores: weakref.WeakKeyDictionary[psycopg.Connection, PgStore] = weakref.WeakKeyDictionary()
        self._pool = ConnectionPool(
            dsn, min_size=1, max_size=max(connections, 1), kwargs={"autocommit": True}, open=True
        )
        self._parallel, self._connections = parallel, max(connections, 1)
        self._side_pool: ConnectionPool | None = None  # opened by the first search (see _snapshot)
        self._side_lock = threading.Lock()
        self._threads = ThreadPoolExecutor(self._connections, thread_name_prefix="citewise-shared")
        self.remember(embedder)

    @staticmethod
    def model_of(dsn: str, prefix: str = DEFAULT_PREFIX) -> str:
        """The embedding model the store at `dsn` was made with.

        Raises:
            IndexOpenError: the server does not answer, or holds no store of that prefix.
        """
        try:
            with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
                return PgStore(dsn, prefix=prefix, conn=conn).settings().model
        except psycopg.OperationalError as error:
            raise IndexOpenError(f"cannot reach the shared store: {error}".strip()) from error
        except psycopg.Error as error:  # a database without pgvector, or without the store's tables
            raise IndexOpenError(
                f"no shared store {prefix!r} in that database ({error.__class__.__name__}: "
                f"{str(error).splitlines()[0]}): make one with `citewise ingest PATH --store URL`"
            ) from error

    @classmethod
    def open(cls, dsn: str, **options: Any) -> SharedIndex:
        """Open the store at `dsn` (`SharedIndex`'s arguments)."""
        return cls(dsn, **options)

    def close(self) -> None:
        """Close every connection (only once no run uses this index any more)."""
        self._threads.shutdown()
        with self._side_lock:
            if self._side_pool is not None:
                self._side_pool.close()
        self._pool.close()

    def __enter__(self) -> SharedIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _store_of(self, conn: psycopg.Connection) -> PgStore:
        """The connection's `PgStore` (made once: its vector adapters are registered per connection)."""
        store = self._stores.get(conn)
        if store is None:
            store = self._stores[conn] = PgStore(
                self.dsn, prefix=self.prefix, dim=self.settings.dim, conn=conn
            )
        return store

    @contextmanager
    def _store(self, snapshot: bool = False) -> Iterator[PgStore]:
        """A pooled connection's store; with `snapshot`, inside one read-only repeatable-read transaction."""
        with self._pool.connection() as conn:
            store = self._store_of(conn)
            if not snapshot:
                yield store
                return
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield store

    def _side(self) -> ConnectionPool:
        """The side connections' pool, opened at the first search that needs it.

        A pool of its own: a search holds one connection of each pool, so searches waiting for a side
        connection cannot starve the searches that hold one.
        """
        with self._side_lock:
            if self._side_pool is None:
                self._side_pool = ConnectionPool(
                    self.dsn, min_size=1, max_size=self._connections, kwargs={"autocommit": True}, open=True
                )
            return self._side_pool

    @contextmanager
    def _snapshot(self) -> Iterator[tuple[PgStore, _Lanes | None]]:
        """A search's store in its snapshot, and a side lane in the same snapshot (None: one at a time)."""
        with self._store(snapshot=True) as store:
            if not self._parallel:
                yield store, None
                return
            row = store.conn.execute("SELECT pg_export_snapshot()").fetchone()
            assert row is not None
            with self._side().connection() as conn, conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(row[0])))
                yield store, _Lanes(self._store_of(conn), self._threads)

    # reading --------------------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        k: int = 10,
        mode: SearchMode = "hybrid",
        *,
        alpha: float = 0.5,
        fusion: Fusion = "minmax",
        candidates: int = 100,
        redundancy: float = 0.9,
        paragraph_weight: float = PARAGRAPH_WEIGHT,
        paragraph_dense_weight: float = PARAGRAPH_DENSE_WEIGHT,
        collections: Collections = None,
    ) -> list[Hit]:
        """Return the top-k chunks for `query`; the arguments are `Index.search`'s, and mean the same.

        `collections`: every candidate query (the BM25 tops of chunks and paragraphs, the HNSW tops) holds
        the collections' filter in its SQL, so the scores are normalised and fused over readable candidates.
        """
        check_search(k, mode, fusion)
        if not query.strip() or (collections is not None and not collections):
            return []
        collections = None if collections is None else tuple(collections)
        depth = max(candidates, k)
        query_vector = self._query_vector(query)
        with self._snapshot() as (store, lanes):
            lexical = _Lexical(store, query, paragraph_weight, lanes, collections)
            top = lexical.top(depth) if mode != "dense" else []
            semantic: list[tuple[str, float]] = []
            nearest: list[str] = []
            if mode != "bm25" and paragraph_dense_weight > 0 and lanes is not None:
                semantic, found = lanes.together(
                    partial(store.dense, query_vector, depth, collections),
                    methodcaller("dense_paragraphs", query_vector, depth, collections),
                )
                nearest = [p for p, _ in found]
            elif mode != "bm25":
                semantic = store.dense(query_vector, depth, collections)
                if paragraph_dense_weight > 0:
                    nearest = [p for p, _ in store.dense_paragraphs(query_vector, depth, collections)]
            widened: list[str] = []
            if nearest:
                members = store.paragraph_chunks(nearest)
                for p in nearest:
                    widened.extend(members.get(p, [])[: depth - len(widened)])
                    lexical.parent.update((c, p) for c in members.get(p, []))
                    if len(widened) >= depth:
                        break
            return score_hits(
                query_vector,
                Candidates(top, semantic, widened),
                _Pool(store, query_vector, lexical),
                k=k,
                depth=depth,
                mode=mode,
                fusion=fusion,
                alpha=alpha,
                redundancy=redundancy,
                paragraph_dense_weight=paragraph_dense_weight,
            )

    def refresh(self) -> None:
        """Nothing to do: every search reads what is committed when it starts."""

    def chunk_vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The stored vectors of chunks, one row per id in order (zeros for one deleted meanwhile)."""
        with self._store() as store:
            kept, matrix = store.stored_vectors(ids)
        rows = dict(zip(kept, matrix, strict=True))
        zeros = np.zeros(self.settings.dim, dtype=np.float32)
        if not ids:
            return np.zeros((0, self.settings.dim), dtype=np.float32)
        return np.stack([rows.get(key, zeros) for key in ids])

    def tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's terms as the index's BM25 reads them (stemmed, stopwords out)."""
        with self._store() as store:
            return store.paragraph_lexical.tokenize(texts)

    def idf(self, terms: Sequence[str]) -> list[float]:
        """Each term's inverse document frequency over the index's paragraphs, log((N + 1) / (df + 0.5))."""
        with self._store() as store:
            return store.paragraph_lexical.idf(terms)

    def stats(self) -> IndexStats:
        """Rows in the store's tables; chunks, vectors and BM25 rows agree once each write committed."""
        with self._store() as store:
            return store.stats()

    def empty(self) -> bool:
        """Whether the store holds no chunk."""
        return self.stats().chunks == 0

    def document(self, doc_id: str, collections: Collections = None) -> DocumentRecord | None:
        """A stored document's title, file and metadata (None outside `collections`)."""
        with self._store() as store:
            return store.document(doc_id, collections)

    def documents(self, collections: Collections = None) -> list[DocumentRecord]:
        """Every stored document of `collections` (with when it was ingested), by title."""
        with self._store() as store:
            return store.documents(collections)

    def paragraphs(self, doc_id: str, collections: Collections = None) -> list[ParagraphRecord]:
        """A stored document's paragraphs in order (none outside `collections`)."""
        with self._store() as store:
            return store.paragraphs(doc_id, collections)

    def paragraph(self, paragraph_id: str, collections: Collections = None) -> ParagraphRecord | None:
        """One stored paragraph (None outside `collections`)."""
        with self._store() as store:
            return store.paragraph(paragraph_id, collections)

    def bibliography(self, doc_id: str, collections: Collections = None) -> dict[str, str]:
        """A stored document's reference list (empty outside `collections`)."""
        with self._store() as store:
            return store.bibliography(doc_id, collections)

    def chunks(self, ids: Sequence[str], collections: Collections = None) -> dict[str, ChunkRecord]:
        """Stored chunks by id (those of `collections`)."""
        with self._store() as store:
            return store.chunks(ids, collections)

    def as_retriever(self, **search_kwargs: Any) -> Any:
        """A LangChain retriever over this index's hybrid search."""
        from citewise.index.retriever import IndexRetriever

        return IndexRetriever(index=self, search_kwargs=search_kwargs)
