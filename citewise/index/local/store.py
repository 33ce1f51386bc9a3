"""The index: three stores under one directory, kept in agreement, and hybrid search over them.

This module opens an index, keeps its stores in agreement and searches it; writing (ingest, removal) is
`citewise.index.local.ingest`, and what it hands out (hits, reports, counts) is `citewise.index.records`.

Layout of an index directory::

    docs.sqlite3   documents, paragraphs, bibliography, chunks and vectors (the source of truth)
    chroma/        the embedded Chroma database (absent when a Chroma server URL is configured)
    bm25.json      pointer to the current bm25s folder of chunks (bm25-<generation>-<pid>-<token>/)
    bm25p.json     the same for paragraphs (bm25p-<generation>-<pid>-<token>/)
    .lock          the write lock: one process at a time ingests, removes or repairs

Crash safety: a document and its chunks commit to SQLite in one transaction; Chroma is written after that
commit and BM25 is rebuilt at the end of an ingest, all under the write lock. Both record the SQLite
generation they mirror, and `Index.open` brings a lagging one up to date (Chroma by id from the stored
vectors, BM25 by a rebuild) when it can take the lock, so after any interruption the three stores agree again
and nothing is embedded twice. While another process holds the lock, that process brings them up to date.

Chroma is opened on first use, not at open: by a write, a repair or `stats`, and by the first search of an
index past `EXACT_LIMIT` chunks (opened at open then: its searches read it). Below the limit, dense search is
exact over the vectors the paragraph vectors hold (see `citewise.index.local.paragraphs`). Its other checks
run when it opens: a collection of another model's dimension is refused, and one that holds another count of
chunks than the document store (a server that lost its data, a deleted folder) is reconciled like a lagging
one.

Freshness: an open index sees writes made meanwhile by other processes. Before each search it compares the
document store's generation with the one its BM25 indexes were loaded for and loads the ones the writer
switched in (repairing them as at open when they lag and no process is writing); the paragraph vectors reload
by generation themselves. Chunks deleted meanwhile, which BM25 still being rebuilt may return, or the
embedded Chroma (its in-process graph does not see other processes' writes; a Chroma server has no such
lag), are skipped; chunks added meanwhile reach the dense side through their paragraphs' vectors.
"""

from __future__ import annotations

import fcntl
import json
import logging
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from citewise.index.chunking import ChunkingConfig, chunk_input
from citewise.index.embeddings import MODEL_NAMES, Embedder, RememberedEmbeddings, load_embedder
from citewise.index.local.docstore import DocStore
from citewise.index.local.ingest import Writing, chunk_metadata
from citewise.index.local.lexical import LexicalIndex
from citewise.index.local.paragraphs import Paragraphs, ParagraphVectors
from citewise.index.records import (
    DEFAULT_COLLECTION,
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

if TYPE_CHECKING:
    from citewise.index.local.vectors import VectorIndex

logger = logging.getLogger(__name__)


OLD_COLLECTION = "citewise_chunks"
"""The Chroma collection of indexes made before each index got its own name (kept for them)."""


def _known_model(stored: str | None) -> str | None:
    """The stored model's name when citewise has that model, else None (the open then says they differ)."""
    return stored if stored in MODEL_NAMES.values() else None


class _Lexical:
    """The chunk and paragraph BM25 indexes that searches read: replaced whole, never changed, on a reload.

    Each keeps the masks of the collections searches asked for (`masks`): one weight a text, 1 for a text of
    a document in one of them; a search of some collections scores only their texts (bm25s's `weight_mask`).
    """

    MASKS_KEPT = 32
    """Masks kept (one per set of collections asked for: a user's, a group's)."""

    def __init__(self, chunks: LexicalIndex, paragraphs: LexicalIndex) -> None:
        self.chunks = chunks
        self.paragraphs = paragraphs
        self._parents: np.ndarray | None = None
        self._masks: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = {}
        self._masks_lock = threading.Lock()

    def masks(
        self, collections: Collections, of_document: Callable[[], dict[str, str]]
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The chunk and paragraph masks of `collections` (None, None: every collection).

        `of_document` reads each document's collection (the document store's, as of now).
        """
        if collections is None:
            return None, None
        key = tuple(sorted(set(collections)))
        with self._masks_lock:
            found = self._masks.get(key)
        if found is None:
            documents = of_document()
            wanted = set(key)

            def mask(ids: Sequence[str]) -> np.ndarray:
                return np.array([documents.get(_document_of(i), "") in wanted for i in ids], dtype=np.float32)

            found = (mask(self.chunks.parents), mask(self.paragraphs.ids))
            with self._masks_lock:
                if len(self._masks) >= self.MASKS_KEPT:
                    self._masks.pop(next(iter(self._masks)))
                self._masks[key] = found
        return found

    @property
    def generation(self) -> int:
        """The document store generation both mirror (-1 when they mirror different ones)."""
        return self.chunks.generation if self.chunks.generation == self.paragraphs.generation else -1

    def parents(self) -> np.ndarray:
        """For each chunk, the position of its paragraph in the paragraph index (past its end when absent)."""
        if self._parents is None:
            position, absent = self.paragraphs.position, len(self.paragraphs)
            self._parents = np.array([position.get(p, absent) for p in self.chunks.parents], dtype=np.int64)
        return self._parents

    def scores(
        self,
        query: str,
        paragraph_weight: float,
        masks: tuple[np.ndarray | None, np.ndarray | None] = (None, None),
    ) -> np.ndarray:
        """Per chunk (in BM25 order): (1 - w) * its BM25 / max + w * its paragraph's BM25 / max, in [0, 1].

        With `masks` (see `masks`), the texts they zero score 0 and the maxima are the readable texts'.
        """
        chunk_mask, paragraph_mask = masks
        if chunk_mask is not None and len(chunk_mask) != len(self.chunks):
            chunk_mask = None  # an index built before chunks kept their paragraph: masked below instead
        own = self.chunks.score_all(query, chunk_mask)
        if masks[0] is not None and chunk_mask is None:
            own = np.zeros_like(own)  # (rebuilt on open; until then its chunks cannot be told apart)
        if own.size and own.max() > 0:
            own = own / own.max()
        if paragraph_weight <= 0 or not len(self.paragraphs) or len(self.chunks.parents) != len(own):
            return own  # (the last: an index built before chunks kept their paragraph; rebuilt on open)
        paragraphs = self.paragraphs.score_all(query, paragraph_mask)
        if paragraphs.size and paragraphs.max() > 0:
            paragraphs = paragraphs / paragraphs.max()
        paragraphs = np.append(paragraphs, np.float32(0.0))  # the score of an absent paragraph
        return blend_lexical(own, paragraphs[self.parents()], paragraph_weight)


class _Pool:
    """What `score_hits` reads of one local search's pool: the document store, and the scores computed."""

    def __init__(
        self,
        index: Index,
        view: _Lexical,
        query: str,
        paragraph_weight: float,
        lexical: np.ndarray | None,
        paragraphs: Paragraphs | None,
        paragraph_similarity: np.ndarray | None,
        collections: Collections,
        masks: tuple[np.ndarray | None, np.ndarray | None],
    ) -> None:
        self.index, self.view, self.query, self.paragraph_weight = index, view, query, paragraph_weight
        self.lexical, self.paragraphs, self.paragraph_similarity = lexical, paragraphs, paragraph_similarity
        self.collections, self.masks = collections, masks

    def stored_vectors(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """The ids the document store holds in the search's collections, and their vectors (float32).

        The pool's gate: a candidate of another collection (none reaches here) would drop out before scoring.
        """
        return self.index.docstore.stored_vectors(ids, self.index.embedder.dim, self.collections)

    def lexical_scores(self, ids: Sequence[str]) -> list[float]:
        """Each chunk's blended BM25 score, from the search's BM25 indexes (0 for one they do not hold)."""
        if self.lexical is None:  # a dense search: scored now, for the hits' lexical score
            self.lexical = self.view.scores(self.query, self.paragraph_weight, self.masks)
        scores, position = self.lexical, self.view.chunks.position
        return [float(scores[position[i]]) if i in position and scores.size else 0.0 for i in ids]

    def paragraph_similarities(self, ids: Sequence[str]) -> np.ndarray:
        """The similarity to the query of each chunk's paragraph, from the paragraph vectors."""
        if self.paragraphs is None or self.paragraph_similarity is None:
            return np.zeros(len(ids), dtype=np.float32)
        return self.paragraphs.of_chunks(ids, self.paragraph_similarity)

    def chunks(self, ids: Sequence[str]) -> dict[str, ChunkRecord]:
        """The stored chunks' records."""
        return self.index.docstore.chunks(ids, self.collections)


def _document_of(text_id: str) -> str:
    """The document id of a paragraph id (`paragraph_id`: document id, ":p", position)."""
    return text_id.rsplit(":p", 1)[0]


class Index(Writing, RememberedEmbeddings):
    """A citewise index directory: ingest files, remove them, search, and report what is stored."""

    def __init__(
        self,
        root: Path,
        docstore: DocStore,
        lexical: LexicalIndex,
        embedder: Embedder,
        chunking: ChunkingConfig,
        chroma_url: str | None,
        collection: str,
    ) -> None:
        self.root = root
        self.docstore = docstore
        self.chroma_url = chroma_url
        self.collection = collection
        self._vectors: VectorIndex | None = None
        self._vectors_lock = threading.Lock()
        self._holding = threading.local()  # whether this thread holds the write lock
        self._lexical = _Lexical(lexical, LexicalIndex(root, "bm25p"))
        self._lexical_lock = threading.RLock()
        self.paragraph_vectors = ParagraphVectors(docstore, embedder.dim)
        self.embedder = embedder
        self.chunking = chunking
        self._chroma_key = f"chroma_generation:{chroma_url or 'embedded'}"
        self.remember(embedder)

    @property
    def vectors(self) -> VectorIndex:
        """The Chroma collection, opened (and checked) on first use; see the module.

        Raises:
            IndexOpenError: the collection holds another embedding model's vectors (another dimension).
        """
        return self._chroma()

    def _chroma(self) -> VectorIndex:
        if self._vectors is not None:
            return self._vectors
        with self._vectors_lock:
            if self._vectors is not None:
                return self._vectors
            self._vectors = self._open_chroma()
        if self._vectors.count() != self.docstore.counts()["chunks"]:  # e.g. a server lost its data
            self._bring_chroma_in_step()
        key = f"{self._chroma_key}:collections"
        if self.docstore.get_meta(key) is None:  # chunks mirrored before they carried their collection
            for rows in self.docstore.iter_chunks():
                self._mirror(rows)
            self.docstore.set_meta(key, "1")
        return self._vectors

    def _open_chroma(self) -> VectorIndex:
        from citewise.index.local.vectors import (  # Chroma costs half a second to import
            VectorIndex,
            make_client,
        )

        vectors = VectorIndex(make_client(self.root, self.chroma_url), self.embedder, self.collection)
        foreign = vectors.foreign()
        if foreign is not None:  # every dense search would fail on the vectors' dimension
            where = (
                f"the folder {self.root / 'chroma'}"
                if self.chroma_url is None
                else f"it on the server {self.chroma_url}"
            )
            raise IndexOpenError(
                f"the Chroma collection {self.collection!r} of index {self.root} {foreign}, not the "
                f"{self.embedder.dim} of {self.embedder.name!r}: another embedding model built it. Delete "
                f"{where} to rebuild it from the document store, or use a new --index directory"
            )
        return vectors

    def _bring_chroma_in_step(self) -> None:
        """Reconcile Chroma with the document store now, under the write lock (held already, or taken)."""
        with nullcontext(True) if getattr(self._holding, "lock", False) else self._locked() as held:
            if held:
                self._reconcile_chroma()

    @property
    def lexical(self) -> LexicalIndex:
        """The BM25 index of chunks searches read now."""
        return self._lexical.chunks

    @property
    def paragraph_lexical(self) -> LexicalIndex:
        """The BM25 index of paragraphs searches read now."""
        return self._lexical.paragraphs

    # opening --------------------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        chroma_url: str | None = None,
        chunking: ChunkingConfig | None = None,
        embedder: Embedder | None = None,
        embedders: Callable[[str | None], Embedder] = load_embedder,
        create: bool = True,
    ) -> Index:
        """Open (or create) the index at `path` and bring its derived stores up to date.

        The index embeds with `embedder` when it is the index's model; otherwise (none given, or another
        MiniLM precision than the index was built with) with `embedders(model name)`: a new one by default,
        the one the way in keeps when it passes its own (citewise.core.resources.Resources.embedder).

        Raises:
            IndexOpenError: `path` is a file, does not exist and `create` is False, or the index was built
                with another embedding model or other chunking settings than the ones asked for.
        """
        if chroma_url is not None:
            from citewise.index.local.vectors import server_address

            server_address(chroma_url)  # a malformed URL is refused now, not at the first write
        root = Path(path).expanduser()
        if root.exists() and not root.is_dir():
            raise IndexOpenError(f"index path {root} is a file, not a directory")
        if not root.exists():
            if not create:
                raise IndexOpenError(f"no index at {root} (run `citewise ingest PATH --index {root}` first)")
            root.mkdir(parents=True)
        if _lost_document_store(root):  # a new, empty one would orphan them and read as "no documents"
            raise IndexOpenError(
                f"the document store {root / 'docs.sqlite3'} is missing or empty, but {root} still holds "
                "the search indexes built from it (it was deleted or truncated; they cannot rebuild it): "
                "restore docs.sqlite3 from a backup, or ingest the documents again into a new --index "
                "directory"
            )
        try:
            docstore = DocStore(root / "docs.sqlite3")
        except (ValueError, sqlite3.OperationalError) as error:  # a newer schema; locked, read-only, ...
            raise IndexOpenError(f"cannot open the document store of {root}: {error}") from error
        except sqlite3.DatabaseError as error:
            # corrupt (truncated, overwritten): left as it is, for a backup
            raise IndexOpenError(
                f"cannot open the document store of {root}: {error} (docs.sqlite3 is damaged): restore it "
                "from a backup, or ingest the documents again into a new --index directory"
            ) from error
        chunking = _settle(docstore, "chunking", chunking, ChunkingConfig)
        stored = _known_model(docstore.get_meta("embedding_model"))
        if embedder is None or (
            stored is not None and embedder.name in MODEL_NAMES.values() and embedder.name != stored
        ):
            # an index keeps the model it was built with (MiniLM in float32 or int8, whichever the caller's
            # is); a new one takes the configured precision
            try:
                embedder = embedders(stored)
            except ValueError as error:
                docstore.close()
                raise IndexOpenError(str(error)) from error
        stored_model = docstore.add_meta("embedding_model", embedder.name)
        if stored_model != embedder.name:
            docstore.close()
            raise IndexOpenError(
                f"index {root} was built with embedding model {stored_model!r}, not {embedder.name!r}, the "
                "one this citewise embeds questions with: ingest the documents again into a new --index "
                "directory"
            )
        collection = docstore.get_meta("collection")
        if collection is None:  # one collection per index, so that indexes can share a Chroma server
            made_before = docstore.counts()["chunks"] > 0
            collection = OLD_COLLECTION if made_before else f"citewise_{uuid.uuid4().hex[:16]}"
            collection = docstore.add_meta("collection", collection)  # a process opening it too may be first
        index = cls(root, docstore, LexicalIndex(root), embedder, chunking, chroma_url, collection)
        try:
            index.sync()
            if docstore.counts()["chunks"] > index.paragraph_vectors.exact_limit:
                index._chroma()  # searches will read it: opened, and checked, now
        except IndexOpenError:
            docstore.close()
            raise
        return index

    def close(self) -> None:
        """Close the document store (only once no run uses this index any more)."""
        self.docstore.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # keeping the stores in agreement --------------------------------------------------------------------
    def sync(self) -> None:
        """Bring Chroma and BM25 up to the document store's generation (after an interrupted write).

        Only under the write lock: while another process writes, the stores are left to it and the BM25
        indexes it last switched in are what this index reads.
        """
        if self._chroma_lags() or self._lexical_lags():
            with self._locked() as held:
                if held:
                    self._repair()

    def refresh(self) -> None:
        """See the index as it is now: load the BM25 indexes another process switched in since the last look.

        A no-op while they mirror the document store's generation (one small SQLite read); called before
        every search. When they lag and no process holds the write lock (a writer was interrupted), they are
        rebuilt here; while one does, what it switched in last is read and the next search looks again.
        """
        if not self._lexical_lags():
            return
        with self._lexical_lock:
            self._reload_lexical()
            if self._lexical_lags():
                with self._locked() as held:
                    if held:
                        self._catch_up_lexical()

    def _chroma_lags(self) -> bool:
        """Whether Chroma's recorded generation lags the document store's (its count: checked on opening)."""
        return self.docstore.get_meta(self._chroma_key) != str(self.docstore.generation)

    def _lexical_lags(self) -> bool:
        """Whether the BM25 indexes read now were built for an earlier document store generation."""
        return self._lexical.generation != self.docstore.generation

    def _repair(self) -> None:
        """Under the write lock: reconcile a lagging Chroma and rebuild lagging BM25 indexes."""
        if self._chroma_lags():
            self._chroma()  # opening it reconciles it when its count differs
            if self._chroma_lags():
                self._reconcile_chroma()
        self._catch_up_lexical()

    def _catch_up_lexical(self) -> None:
        """Under the write lock: load what a writer last switched in, and rebuild BM25 if it still lags.

        (The writer may have finished just before the lock was free: then loading is all there is to do.)
        """
        with self._lexical_lock:
            self._reload_lexical()
            if self._lexical_lags():
                self._rebuild_bm25(self.docstore.generation)

    def _reload_lexical(self) -> None:
        """Load the BM25 folders the pointer files name now, where they differ from the ones loaded."""
        with self._lexical_lock:
            current = self._lexical
            chunks, paragraphs = (self._newer(index) for index in (current.chunks, current.paragraphs))
            if chunks is not current.chunks or paragraphs is not current.paragraphs:
                self._lexical = _Lexical(chunks, paragraphs)
                logger.debug("bm25 reloaded: generations %d / %d", chunks.generation, paragraphs.generation)

    def _newer(self, loaded: LexicalIndex) -> LexicalIndex:
        """The index its pointer file names now, or `loaded` when that is the one (or cannot be loaded)."""
        pointed = loaded.pointed()
        if pointed is None or pointed[0] == loaded.folder:
            return loaded
        fresh = LexicalIndex(self.root, loaded.name)
        return fresh if fresh.folder is not None else loaded

    def _reconcile_chroma(self) -> None:
        """Under the write lock: Chroma made to hold exactly the stored chunks, its generation recorded."""
        stored = set(self.docstore.chunk_ids())
        mirrored = self.vectors.ids()
        extra = sorted(mirrored - stored)
        if extra:
            logger.info("chroma: deleting %d chunks the document store no longer has", len(extra))
            self.vectors.delete(extra)
        missing = stored - mirrored
        if missing and not mirrored:  # deleted (or a server that lost its data): say so, it is not a lag
            logger.warning(
                "chroma: the collection holds none of the document store's %d chunks; rebuilding it from the "
                "document store",
                len(missing),
            )
        elif missing:
            logger.info("chroma: adding %d chunks from the document store", len(missing))
        if missing:
            for rows in self.docstore.iter_chunks():
                rows = [r for r in rows if r[0] in missing]
                if rows:
                    self._mirror(rows)
        self.docstore.set_meta(self._chroma_key, str(self.docstore.generation))

    def _mirror(self, rows: Sequence[tuple[str, str, str, str, str, bytes]]) -> None:
        ids = [r[0] for r in rows]
        vectors = np.stack([np.frombuffer(r[5], dtype=np.float32) for r in rows])
        of_document = self.docstore.collections()
        metadatas = [
            chunk_metadata(r[1], r[2], r[3], of_document.get(r[1], DEFAULT_COLLECTION)) for r in rows
        ]
        self.vectors.upsert(ids, vectors, [r[4] for r in rows], metadatas)

    def _rebuild_bm25(self, generation: int) -> None:
        """Under the write lock: build both BM25 indexes from the document store; searches switch to them."""
        ids: list[str] = []
        texts: list[str] = []
        parents: list[str] = []
        for rows in self.docstore.iter_chunks():
            for chunk_id, _, paragraph_id, title, text, _ in rows:
                ids.append(chunk_id)
                texts.append(chunk_input(title, text, self.chunking))
                parents.append(paragraph_id)
        chunks = LexicalIndex(self.root, self.lexical.name, load=False)
        chunks.build(ids, texts, generation, parents)
        paragraph_ids, paragraph_texts = [], []
        for paragraph_id, title, text in self.docstore.iter_paragraphs():
            paragraph_ids.append(paragraph_id)
            paragraph_texts.append(chunk_input(title, text, self.chunking))
        paragraphs = LexicalIndex(self.root, self.paragraph_lexical.name, load=False)
        paragraphs.build(paragraph_ids, paragraph_texts, generation)
        with self._lexical_lock:
            self._lexical = _Lexical(chunks, paragraphs)

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold the index's write lock (one writer at a time), or refuse when another process holds it."""
        with self._locked() as held:
            if not held:
                raise IndexOpenError(f"index {self.root} is being written by another process")
            yield

    @contextmanager
    def _locked(self) -> Iterator[bool]:
        """Take the write lock (an fcntl lock on `.lock`) if no one holds it; yield whether it was taken."""
        with open(self.root / ".lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            self._holding.lock = True
            try:
                yield True
            finally:
                self._holding.lock = False
                fcntl.flock(lock, fcntl.LOCK_UN)

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
        """Return the top-k chunks for `query` among the documents of `collections` (None: every one).

        Args:
            query: the search text.
            k: how many hits to return.
            mode: "hybrid" (BM25 + dense, fused), "bm25" or "dense".
            alpha: weight of the dense score in min-max fusion (1 - alpha goes to BM25).
            fusion: "minmax" (weighted, normalised per query) or "rrf" (reciprocal-rank fusion).
            candidates: how many hits each retriever contributes before fusion (at least k).
            redundancy: drop a hit whose cosine similarity to a better hit exceeds this (1.0 keeps all).
            paragraph_weight: share of a chunk's lexical score that comes from its whole paragraph's BM25
                (terms of a claim are often spread over a paragraph's sentences; 0 = the chunk's own BM25).
            paragraph_dense_weight: the same for the dense side: share of a chunk's dense score that comes
                from its paragraph's vector; the chunks of the `candidates` paragraphs nearest the query join
                the dense candidates (0 = the chunk's own vector only).
            collections: search only these collections' documents: every store leaves the others out
                before it ranks (bm25s's weight mask, the paragraph vectors' mask, Chroma's `where`), so the
                scores are normalised and fused over readable candidates only; () finds nothing.
        """
        check_search(k, mode, fusion)
        if not query.strip() or (collections is not None and not collections):
            return []
        collections = None if collections is None else tuple(collections)
        depth = max(candidates, k)
        self.refresh()
        view = self._lexical  # this search reads one pair of BM25 indexes, whatever a reload swaps in
        masks = view.masks(collections, self.docstore.collections)
        query_vector = self._query_vector(query)
        lexical_all = view.scores(query, paragraph_weight, masks) if mode != "dense" else None
        lexical: list[tuple[str, float]] = []
        if lexical_all is not None and lexical_all.size:
            top = np.argsort(-lexical_all, kind="stable")[:depth]
            lexical = [(view.chunks.ids[i], float(lexical_all[i])) for i in top if lexical_all[i] > 0]
        widened: list[str] = []
        semantic: list[tuple[str, float]] = []
        paragraphs = None
        paragraph_similarity = None
        if mode != "bm25" or paragraph_dense_weight > 0:
            paragraphs = self.paragraph_vectors.current()
        if mode != "bm25" and paragraphs is not None:
            if paragraphs.exact:
                semantic = paragraphs.nearest_chunks(query_vector, depth, collections)
            else:
                semantic = self.vectors.search(query_vector, depth, collections)
        if paragraphs is not None and paragraph_dense_weight > 0:
            paragraph_similarity = paragraphs.similarities(query_vector, collections)
            if mode != "bm25":
                widened = paragraphs.top_chunks(paragraph_similarity, depth)
        reader = _Pool(
            self,
            view,
            query,
            paragraph_weight,
            lexical_all,
            paragraphs,
            paragraph_similarity,
            collections,
            masks,
        )
        return score_hits(
            query_vector,
            Candidates(lexical, semantic, widened),
            reader,
            k=k,
            depth=depth,
            mode=mode,
            fusion=fusion,
            alpha=alpha,
            redundancy=redundancy,
            paragraph_dense_weight=paragraph_dense_weight,
        )

    def chunk_vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The stored vectors of chunks, one row per id in order (zeros for one deleted meanwhile)."""
        return self.docstore.vectors(ids, self.embedder.dim)

    def tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's terms as the index's BM25 reads them (stemmed, stopwords out)."""
        return self.paragraph_lexical.tokenize(texts)

    def idf(self, terms: Sequence[str]) -> list[float]:
        """Each term's inverse document frequency over the index's paragraphs, log((N + 1) / (df + 0.5))."""
        return self.paragraph_lexical.idf(terms)

    def stats(self) -> IndexStats:
        """Counts in each store; SQLite, Chroma and BM25 chunk counts agree after any completed open."""
        self.refresh()
        lexical = self._lexical
        counts = self.docstore.counts()
        return IndexStats(
            files=counts["files"],
            documents=counts["documents"],
            paragraphs=counts["paragraphs"],
            bibliography=counts["bibliography"],
            chunks=counts["chunks"],
            chunk_vectors=self.vectors.count(),
            chunks_lexical=len(lexical.chunks),
            paragraphs_lexical=len(lexical.paragraphs),
            generation=self.docstore.generation,
        )

    def empty(self) -> bool:
        """Whether the index holds no chunk (the document store's count: Chroma is not opened for it)."""
        return self.docstore.counts()["chunks"] == 0

    def document(self, doc_id: str, collections: Collections = None) -> DocumentRecord | None:
        """A stored document's title, file and metadata (None outside `collections`)."""
        return self.docstore.document(doc_id, collections)

    def documents(self, collections: Collections = None) -> list[DocumentRecord]:
        """Every stored document of `collections` (with when it was ingested), by title."""
        return self.docstore.documents(collections)

    def paragraphs(self, doc_id: str, collections: Collections = None) -> list[ParagraphRecord]:
        """A stored document's paragraphs in order (none outside `collections`)."""
        return self.docstore.paragraphs(doc_id, collections)

    def paragraph(self, paragraph_id: str, collections: Collections = None) -> ParagraphRecord | None:
        """One stored paragraph (None outside `collections`)."""
        return self.docstore.paragraph(paragraph_id, collections)

    def bibliography(self, doc_id: str, collections: Collections = None) -> dict[str, str]:
        """A stored document's reference list (empty outside `collections`)."""
        return self.docstore.bibliography(doc_id, collections)

    def chunks(self, ids: Sequence[str], collections: Collections = None) -> dict[str, ChunkRecord]:
        """Stored chunks by id (those of `collections`)."""
        return self.docstore.chunks(ids, collections)

    def as_retriever(self, **search_kwargs: Any) -> Any:
        """A LangChain retriever over this index's hybrid search."""
        from citewise.index.retriever import IndexRetriever

        return IndexRetriever(index=self, search_kwargs=search_kwargs)


def _settle(docstore: DocStore, key: str, asked: Any, kind: type) -> Any:
    """Use the settings stored with the index; refuse different ones for an index that has documents."""
    stored = docstore.get_meta(key)
    if stored is None:
        settled = asked or kind()
        ours = json.dumps(settled.as_dict(), sort_keys=True)
        stored = docstore.add_meta(key, ours)  # another process opening the new index may have been first
        if stored == ours:
            return settled
    existing = kind(**json.loads(stored))
    if asked is not None and asked != existing:
        if docstore.counts()["chunks"]:
            raise IndexOpenError(
                f"index {docstore.path.parent} was built with {key} {existing.as_dict()}, not "
                f"{asked.as_dict()}; use a new --index directory"
            )
        docstore.set_meta(key, json.dumps(asked.as_dict(), sort_keys=True))
        return asked
    return existing


def _lost_document_store(root: Path) -> bool:
    """Whether docs.sqlite3 is missing or empty while stores built from it remain (Chroma, a BM25 pointer).

    A new document store has its first page written before Chroma or BM25 are made, so such a folder lost its
    document store afterwards.
    """
    if any(
        (root / name).exists() and (root / name).stat().st_size
        for name in ("docs.sqlite3", "docs.sqlite3-wal")
    ):
        return False
    return (root / "chroma").is_dir() or any((root / name).exists() for name in ("bm25.json", "bm25p.json"))
