"""The index: three stores under one directory, kept in agreement, and hybrid search over them.

Layout of an index directory::

    docs.sqlite3   documents, paragraphs, bibliography, chunks and vectors (the source of truth)
    chroma/        the embedded Chroma database (absent when a Chroma server URL is configured)
    bm25.json      pointer to the current bm25s folder (bm25-<generation>-<pid>/)

Crash safety: a document and its chunks commit to SQLite in one transaction; Chroma is written after that
commit and BM25 is rebuilt at the end of an ingest. Both record the SQLite generation they mirror, and
`Index.open` brings a lagging one up to date (Chroma by id from the stored vectors, BM25 by a rebuild), so
after any interruption the three stores agree again and nothing is embedded twice.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from citewise.index.chunking import ChunkingConfig, chunk_documents, chunk_input
from citewise.index.docstore import ChunkRecord, DocStore, DocumentRecord, ParagraphRecord
from citewise.index.document import Document, LoadError
from citewise.index.embeddings import Embedder, default_embedder
from citewise.index.fusion import drop_redundant, rank, reciprocal_rank_fusion, weighted_fusion
from citewise.index.lexical import LexicalIndex
from citewise.index.loaders import iter_files, load_path
from citewise.index.paragraphs import ParagraphVectors
from citewise.index.vectors import COLLECTION, VectorIndex, make_client

logger = logging.getLogger(__name__)

SearchMode = Literal["hybrid", "bm25", "dense"]
Fusion = Literal["minmax", "rrf"]
QUERY_CACHE = 512
PARAGRAPH_WEIGHT = 0.7
PARAGRAPH_DENSE_WEIGHT = 0.5


class IndexOpenError(Exception):
    """The index cannot be opened or written as asked; the message says why."""


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk with everything needed to show, score and cite it.

    Attributes:
        chunk_id: content-hash id of the chunk (stable across re-ingests of the same text).
        doc_id: content-hash id of its document.
        paragraph_id: id of its paragraph (document id + position).
        title: the document title.
        section: the section heading of its paragraph ("" when none).
        text: the chunk text.
        bm25: its lexical score in [0, 1]: BM25 of the chunk and of its paragraph, each divided by the
            query's best, mixed by `paragraph_weight` (0 when it shares no term with the query).
        dense: its dense score: its cosine similarity to the query, mixed with its paragraph's by
            `paragraph_dense_weight`.
        score: the fused score the hits are ranked by (the single score in bm25 / dense mode).
        rank: its 1-based position in the result.
    """

    chunk_id: str
    doc_id: str
    paragraph_id: str
    title: str
    section: str
    text: str
    bm25: float
    dense: float
    score: float
    rank: int

    def as_dict(self) -> dict[str, Any]:
        """Plain data (for JSON output)."""
        return asdict(self)


@dataclass
class IngestReport:
    """What an ingest did."""

    files: int = 0
    ingested_files: int = 0
    unchanged_files: int = 0
    documents_added: int = 0
    documents_removed: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        """Whether anything was added or removed."""
        return bool(self.documents_added or self.documents_removed)


@dataclass(frozen=True)
class IndexStats:
    """How much each store holds; `consistent` says whether the three agree."""

    files: int
    documents: int
    paragraphs: int
    bibliography: int
    chunks_sqlite: int
    chunks_chroma: int
    chunks_bm25: int
    paragraphs_bm25: int
    generation: int

    @property
    def consistent(self) -> bool:
        """True when Chroma and BM25 hold exactly the chunks (and paragraphs) SQLite holds."""
        return (
            self.chunks_sqlite == self.chunks_chroma == self.chunks_bm25
            and self.paragraphs == self.paragraphs_bm25
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain data (for JSON output)."""
        return {**asdict(self), "consistent": self.consistent}


ProgressFactory = Callable[..., Any]


class Index:
    """A citewise index directory: ingest files, remove them, search, and report what is stored."""

    def __init__(
        self,
        root: Path,
        docstore: DocStore,
        vectors: VectorIndex,
        lexical: LexicalIndex,
        embedder: Embedder,
        chunking: ChunkingConfig,
        chroma_target: str,
    ) -> None:
        self.root = root
        self.docstore = docstore
        self.vectors = vectors
        self.lexical = lexical
        self.paragraph_lexical = LexicalIndex(root, "bm25p")
        self.paragraph_vectors = ParagraphVectors(docstore, embedder.dim)
        self._parent_position: np.ndarray | None = None
        self.embedder = embedder
        self.chunking = chunking
        self._chroma_key = f"chroma_generation:{chroma_target}"
        self._query_cache: dict[str, np.ndarray] = {}
        self._query_cache_size = QUERY_CACHE

    # opening --------------------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        chroma_url: str | None = None,
        chunking: ChunkingConfig | None = None,
        embedder: Embedder | None = None,
        create: bool = True,
    ) -> Index:
        """Open (or create) the index at `path` and bring its derived stores up to date.

        Raises:
            IndexOpenError: `path` is a file, does not exist and `create` is False, or the index was built
                with another embedding model or other chunking settings than the ones asked for.
        """
        root = Path(path).expanduser()
        if root.exists() and not root.is_dir():
            raise IndexOpenError(f"index path {root} is a file, not a directory")
        if not root.exists():
            if not create:
                raise IndexOpenError(f"no index at {root} (run `citewise ingest PATH --index {root}` first)")
            root.mkdir(parents=True)
        embedder = embedder or default_embedder()
        try:
            docstore = DocStore(root / "docs.sqlite3")
        except (ValueError, sqlite3.DatabaseError) as error:
            raise IndexOpenError(f"cannot open the document store of {root}: {error}") from error
        chunking = _settle(docstore, "chunking", chunking, ChunkingConfig)
        stored_model = docstore.get_meta("embedding_model")
        if stored_model is None:
            docstore.set_meta("embedding_model", embedder.name)
        elif stored_model != embedder.name:
            raise IndexOpenError(
                f"index {root} was built with embedding model {stored_model!r}, not {embedder.name!r}"
            )
        client = make_client(root, chroma_url)
        collection = docstore.get_meta("collection")
        if collection is None:  # one collection per index, so that indexes can share a Chroma server
            made_before = docstore.counts()["chunks"] > 0
            collection = COLLECTION if made_before else f"citewise_{uuid.uuid4().hex[:16]}"
            docstore.set_meta("collection", collection)
        index = cls(
            root,
            docstore,
            VectorIndex(client, embedder, collection),
            LexicalIndex(root),
            embedder,
            chunking,
            chroma_url or "embedded",
        )
        index.sync()
        return index

    def close(self) -> None:
        """Close the document store."""
        self.docstore.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # keeping the stores in agreement --------------------------------------------------------------------
    def sync(self) -> None:
        """Bring Chroma and BM25 up to the document store's generation (after an interrupted write)."""
        generation = self.docstore.generation
        behind = self.docstore.get_meta(self._chroma_key) != str(generation)
        if behind or self.vectors.count() != self.docstore.counts()["chunks"]:  # e.g. a server lost its data
            self._reconcile_chroma()
            self.docstore.set_meta(self._chroma_key, str(generation))
        if self.lexical.generation != generation or self.paragraph_lexical.generation != generation:
            self._rebuild_bm25(generation)

    def _reconcile_chroma(self) -> None:
        stored = set(self.docstore.chunk_ids())
        mirrored = self.vectors.ids()
        extra = sorted(mirrored - stored)
        if extra:
            logger.info("chroma: deleting %d chunks the document store no longer has", len(extra))
            self.vectors.delete(extra)
        missing = stored - mirrored
        if missing:
            logger.info("chroma: adding %d chunks from the document store", len(missing))
            for rows in self.docstore.iter_chunks():
                rows = [r for r in rows if r[0] in missing]
                if rows:
                    self._mirror(rows)

    def _mirror(self, rows: Sequence[tuple[str, str, str, str, str, bytes]]) -> None:
        ids = [r[0] for r in rows]
        vectors = np.stack([np.frombuffer(r[5], dtype=np.float32) for r in rows])
        metadatas = [{"doc_id": r[1], "paragraph_id": r[2], "title": r[3][:500]} for r in rows]
        self.vectors.upsert(ids, vectors, [r[4] for r in rows], metadatas)

    def _rebuild_bm25(self, generation: int) -> None:
        ids: list[str] = []
        texts: list[str] = []
        parents: list[str] = []
        for rows in self.docstore.iter_chunks():
            for chunk_id, _, paragraph_id, title, text, _ in rows:
                ids.append(chunk_id)
                texts.append(chunk_input(title, text, self.chunking))
                parents.append(paragraph_id)
        self.lexical.build(ids, texts, generation, parents)
        paragraph_ids, paragraph_texts = [], []
        for paragraph_id, title, text in self.docstore.iter_paragraphs():
            paragraph_ids.append(paragraph_id)
            paragraph_texts.append(chunk_input(title, text, self.chunking))
        self.paragraph_lexical.build(paragraph_ids, paragraph_texts, generation)
        self._parent_position = None

    def _lexical_scores(self, query: str, paragraph_weight: float) -> np.ndarray:
        """Per chunk (in BM25 order): (1 - w) * its BM25 / max + w * its paragraph's BM25 / max, in [0, 1]."""
        own = self.lexical.score_all(query)
        if own.size and own.max() > 0:
            own = own / own.max()
        if paragraph_weight <= 0 or not len(self.paragraph_lexical):
            return own
        paragraphs = self.paragraph_lexical.score_all(query)
        if paragraphs.size and paragraphs.max() > 0:
            paragraphs = paragraphs / paragraphs.max()
        return (1 - paragraph_weight) * own + paragraph_weight * paragraphs[self._parents()]

    def _parents(self) -> np.ndarray:
        """For each chunk of the BM25 index, the position of its paragraph in the paragraph BM25 index."""
        if self._parent_position is None:
            position = self.paragraph_lexical.position
            self._parent_position = np.array([position[p] for p in self.lexical.parents], dtype=np.int64)
        return self._parent_position

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold the index's write lock (one writer at a time)."""
        with open(self.root / ".lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as error:
                raise IndexOpenError(f"index {self.root} is being written by another process") from error
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    # writing --------------------------------------------------------------------------------------------
    def ingest(
        self,
        paths: Iterable[str | Path],
        *,
        batch_documents: int = 64,
        progress: ProgressFactory | None = None,
    ) -> IngestReport:
        """Add files (or folders of files) to the index.

        Unchanged files are skipped by content hash; a changed file's documents replace its old ones; an
        unreadable, empty or unsupported file is skipped with the reason in the report. `progress`, when
        given, is a tqdm-like factory used for a files bar and a chunks bar.
        """
        started = time.perf_counter()
        report = IngestReport()
        files, missing = _expand(paths)
        report.skipped.extend(missing)
        report.files = len(files) + len(missing)
        bars = _Bars(progress, len(files))
        try:
            with self._writing():
                for file in files:
                    self._ingest_file(file, report, batch_documents, bars)
                    bars.file_done()
        finally:
            bars.close()
            if report.changed:
                self._rebuild_bm25(self.docstore.generation)
            report.seconds = time.perf_counter() - started
        return report

    def _ingest_file(self, file: Path, report: IngestReport, batch: int, bars: _Bars) -> None:
        name = str(file.resolve())
        try:
            data = file.read_bytes()
        except OSError as error:
            report.skipped.append((str(file), f"unreadable: {error.strerror or error}"))
            return
        sha = hashlib.sha256(data).hexdigest()
        if self.docstore.file_sha(name) == sha:
            report.unchanged_files += 1
            return
        try:
            documents = load_path(file)
        except LoadError as error:
            report.skipped.append((str(file), str(error)))
            return
        unique: dict[str, Document] = {}
        for document in documents:
            unique.setdefault(document.id, document)
        owners = self.docstore.document_files(unique)
        fresh = []
        for doc_id, document in unique.items():
            owner = owners.get(doc_id)
            if owner is None:
                fresh.append(document)
            elif owner != name:
                report.skipped.append((f"{file}#{document.key or document.title}", f"duplicate of {owner}"))
        for i in range(0, len(fresh), batch):
            self._add(fresh[i : i + batch], name, report, bars)
        stale = self.docstore.document_ids(name) - set(unique)
        if stale:
            with self._mirroring():
                removed = self.docstore.delete_documents(stale)
                self.vectors.delete(removed)
            report.documents_removed += len(stale)
            report.chunks_removed += len(removed)
        with self._mirroring():
            self.docstore.mark_file(name, sha, len(data))
        report.ingested_files += 1

    def _add(self, documents: list[Document], file: str, report: IngestReport, bars: _Bars) -> None:
        chunked = []
        for item in chunk_documents(documents, self.embedder, self.chunking):
            if item.chunks:
                chunked.append(item)
            else:
                report.skipped.append((f"{file}#{item.document.key or item.document.title}", "no text"))
        if not chunked:
            return
        ids, texts, metadatas, vectors = [], [], [], []
        for item in chunked:
            doc = item.document
            for chunk, vector in zip(item.chunks, item.vectors, strict=True):
                ids.append(chunk.id)
                texts.append(chunk.text)
                metadatas.append(
                    {
                        "doc_id": doc.id,
                        "paragraph_id": f"{doc.id}:p{chunk.paragraph}",
                        "title": doc.title[:500],
                    }
                )
                vectors.append(vector)
        with self._mirroring():
            self.docstore.add(chunked, file)
            self.vectors.upsert(ids, np.asarray(vectors), texts, metadatas)
        report.documents_added += len(chunked)
        report.chunks_added += len(ids)
        bars.chunks_done(len(ids))

    @contextmanager
    def _mirroring(self) -> Iterator[None]:
        """Around a document-store write and its Chroma mirror: if Chroma was in step, it stays recorded so.

        If the block fails between the two, the recorded generation lags and the next open reconciles.
        """
        in_step = self.docstore.get_meta(self._chroma_key) == str(self.docstore.generation)
        yield
        if in_step:
            self.docstore.set_meta(self._chroma_key, str(self.docstore.generation))

    def remove(self, paths: Iterable[str | Path]) -> IngestReport:
        """Delete every document that came from the given files (or files under the given folders)."""
        started = time.perf_counter()
        report = IngestReport()
        known = self.docstore.files()
        with self._writing():
            for path in paths:
                target = str(Path(path).expanduser().resolve())
                matches = [f for f in known if f == target or f.startswith(target.rstrip("/") + "/")]
                if not matches:
                    report.skipped.append((str(path), "not in the index"))
                for file in matches:
                    documents = len(self.docstore.document_ids(file))
                    with self._mirroring():
                        removed = self.docstore.forget_file(file)
                        self.vectors.delete(removed)
                    report.files += 1
                    report.documents_removed += documents
                    report.chunks_removed += len(removed)
            if report.changed:
                self._rebuild_bm25(self.docstore.generation)
        report.seconds = time.perf_counter() - started
        return report

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
    ) -> list[Hit]:
        """Return the top-k chunks for `query`.

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
        """
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        if mode not in ("hybrid", "bm25", "dense"):
            raise ValueError(f"mode must be hybrid, bm25 or dense, got {mode!r}")
        if fusion not in ("minmax", "rrf"):
            raise ValueError(f"fusion must be minmax or rrf, got {fusion!r}")
        if not query.strip():
            return []
        depth = max(candidates, k)
        query_vector = self._query_vector(query)
        lexical_all = self._lexical_scores(query, paragraph_weight) if mode != "dense" else None
        lexical: list[tuple[str, float]] = []
        if lexical_all is not None and lexical_all.size:
            top = np.argsort(-lexical_all, kind="stable")[:depth]
            lexical = [(self.lexical.ids[i], float(lexical_all[i])) for i in top if lexical_all[i] > 0]
        semantic = self.vectors.search(query_vector, depth) if mode != "bm25" else []
        widened: list[str] = []
        paragraph_similarity = None
        if paragraph_dense_weight > 0:
            paragraphs = self.paragraph_vectors.current()
            paragraph_similarity = paragraphs.similarities(query_vector)
            if mode != "bm25":
                widened = paragraphs.top_chunks(paragraph_similarity, depth)
        pool = list(dict.fromkeys([i for i, _ in lexical] + [i for i, _ in semantic] + widened))
        if not pool:
            return []
        vectors = self.docstore.vectors(pool, self.embedder.dim)
        own_dense = vectors @ query_vector
        if paragraph_similarity is not None:
            own_dense = (1 - paragraph_dense_weight) * own_dense + paragraph_dense_weight * (
                self.paragraph_vectors.of_chunks(pool, paragraph_similarity)
            )
        dense = dict(zip(pool, own_dense.tolist(), strict=True))
        if lexical_all is None:
            lexical_all = self._lexical_scores(query, paragraph_weight)
        position = self.lexical.position
        bm25 = {
            i: float(lexical_all[position[i]]) if i in position and lexical_all.size else 0.0 for i in pool
        }
        if mode == "bm25":
            fused = dict(lexical)
        elif mode == "dense":
            fused = {i: dense[i] for i in dict.fromkeys([i for i, _ in semantic] + widened)}
        elif fusion == "rrf":
            semantic_order = rank({i: dense[i] for i in dict.fromkeys([i for i, _ in semantic] + widened)})
            fused = reciprocal_rank_fusion([[i for i, _ in lexical], semantic_order[:depth]])
        else:
            fused = weighted_fusion(bm25, dense, alpha)
        order = rank(fused)
        in_pool = {chunk_id: i for i, chunk_id in enumerate(pool)}
        order = drop_redundant(order, vectors[[in_pool[i] for i in order]], redundancy)[:k]
        records = self.docstore.chunks(order)
        return [
            _hit(records[chunk_id], bm25[chunk_id], dense[chunk_id], fused[chunk_id], n)
            for n, chunk_id in enumerate(order, start=1)
            if chunk_id in records
        ]

    def prepare_queries(self, queries: Sequence[str]) -> None:
        """Embed many queries in one batch ahead of searching them (evaluation), keeping them all cached."""
        fresh = [q for q in dict.fromkeys(queries) if q not in self._query_cache]
        self._query_cache_size = max(self._query_cache_size, len(self._query_cache) + len(fresh))
        for query, vector in zip(fresh, self.embedder.embed(fresh), strict=True):
            self._query_cache[query] = vector

    def forget_queries(self) -> None:
        """Drop remembered query embeddings (so a timing includes the model pass)."""
        self._query_cache.clear()
        self._query_cache_size = QUERY_CACHE

    def _query_vector(self, query: str) -> np.ndarray:
        """The query's embedding, remembered for recent queries (sub-queries and retries repeat)."""
        vector = self._query_cache.get(query)
        if vector is None:
            vector = self.embedder.embed([query])[0]
            self._query_cache[query] = vector
            while len(self._query_cache) > self._query_cache_size:
                self._query_cache.pop(next(iter(self._query_cache)))
        return vector

    def stats(self) -> IndexStats:
        """Counts in each store; SQLite, Chroma and BM25 chunk counts agree after any completed open."""
        counts = self.docstore.counts()
        return IndexStats(
            files=counts["files"],
            documents=counts["documents"],
            paragraphs=counts["paragraphs"],
            bibliography=counts["bibliography"],
            chunks_sqlite=counts["chunks"],
            chunks_chroma=self.vectors.count(),
            chunks_bm25=len(self.lexical),
            paragraphs_bm25=len(self.paragraph_lexical),
            generation=self.docstore.generation,
        )

    def document(self, doc_id: str) -> DocumentRecord | None:
        """A stored document's title, file and metadata."""
        return self.docstore.document(doc_id)

    def paragraphs(self, doc_id: str) -> list[ParagraphRecord]:
        """A stored document's paragraphs in order."""
        return self.docstore.paragraphs(doc_id)

    def paragraph(self, paragraph_id: str) -> ParagraphRecord | None:
        """One stored paragraph."""
        return self.docstore.paragraph(paragraph_id)

    def bibliography(self, doc_id: str) -> dict[str, str]:
        """A stored document's reference list."""
        return self.docstore.bibliography(doc_id)

    def chunks(self, ids: Sequence[str]) -> dict[str, ChunkRecord]:
        """Stored chunks by id."""
        return self.docstore.chunks(ids)

    def as_retriever(self, **search_kwargs: Any) -> Any:
        """A LangChain retriever over this index's hybrid search."""
        from citewise.index.retriever import IndexRetriever

        return IndexRetriever(index=self, search_kwargs=search_kwargs)


def _hit(record: ChunkRecord, bm25: float, dense: float, score: float, n: int) -> Hit:
    return Hit(
        chunk_id=record.id,
        doc_id=record.doc_id,
        paragraph_id=record.paragraph_id,
        title=record.title,
        section=record.section,
        text=record.text,
        bm25=bm25,
        dense=dense,
        score=score,
        rank=n,
    )


def _settle(docstore: DocStore, key: str, asked: Any, kind: type) -> Any:
    """Use the settings stored with the index; refuse different ones for an index that has documents."""
    stored = docstore.get_meta(key)
    if stored is None:
        settled = asked or kind()
        docstore.set_meta(key, json.dumps(settled.as_dict(), sort_keys=True))
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


def _expand(paths: Iterable[str | Path]) -> tuple[list[Path], list[tuple[str, str]]]:
    """Files under the given paths, and (path, reason) for paths that do not exist."""
    existing, missing = [], []
    for path in paths:
        candidate = Path(path).expanduser()
        if candidate.exists():
            existing.append(candidate)
        else:
            missing.append((str(path), "no such file or directory"))
    return iter_files(existing), missing


class _Bars:
    """Optional progress bars for files and chunks."""

    def __init__(self, factory: ProgressFactory | None, files: int) -> None:
        self.files = factory(total=files, desc="files", unit="file", position=0) if factory else None
        self.chunks = factory(desc="chunks", unit="chunk", position=1) if factory else None

    def file_done(self) -> None:
        if self.files is not None:
            self.files.update(1)

    def chunks_done(self, count: int) -> None:
        if self.chunks is not None:
            self.chunks.update(count)

    def close(self) -> None:
        for bar in (self.files, self.chunks):
            if bar is not None:
                bar.close()
