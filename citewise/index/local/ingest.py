"""Writing an index: ingest files (skipping unchanged ones by hash), replace changed ones, remove files.

`Writing` is the half of `citewise.index.local.store.Index` that writes: every write holds the index's write
lock, commits a document and its chunks to SQLite in one transaction, mirrors them to Chroma after the
commit, and rebuilds BM25 once at the end (also after an interrupt), so that what was committed is searchable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from citewise.index.chunking import ChunkingConfig, chunk_documents
from citewise.index.document import Document
from citewise.index.embeddings import Embedder, embedded
from citewise.index.loaders import SUPPORTED_SUFFIXES, iter_files, unsupported_files
from citewise.index.local.docstore import DocStore
from citewise.index.policy import NOTHING_WITHIN_LIMIT, decide
from citewise.index.records import DEFAULT_COLLECTION, IngestReport, ProgressFactory, check_collection

if TYPE_CHECKING:
    from citewise.index.local.vectors import VectorIndex


def chunk_metadata(doc_id: str, paragraph_id: str, title: str, collection: str) -> dict[str, str]:
    """What Chroma keeps with a chunk's vector: its document, paragraph, title and collection."""
    return {"doc_id": doc_id, "paragraph_id": paragraph_id, "title": title[:500], "collection": collection}


class Writing:
    """Ingest and removal, for `Index` (which holds the stores, the write lock and the repairs they use)."""

    docstore: DocStore
    embedder: Embedder
    chunking: ChunkingConfig
    _chroma_key: str

    @property
    def vectors(self) -> VectorIndex:
        """The vector store (Chroma) the ingested chunks' vectors go to."""
        raise NotImplementedError

    def _writing(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _chroma(self) -> VectorIndex:
        raise NotImplementedError

    def _rebuild_bm25(self, generation: int) -> None:
        raise NotImplementedError

    def ingest(
        self,
        paths: Iterable[str | Path],
        *,
        batch_documents: int = 64,
        progress: ProgressFactory | None = None,
        stop: Callable[[], bool] | None = None,
        tags: Sequence[str] = (),
        collection: str | None = None,
    ) -> IngestReport:
        """Add files (or folders of files) to the index.

        Unchanged files are skipped by content hash; a changed file's documents replace its old ones; an
        unreadable, empty or unsupported file is skipped with the reason in the report. `progress`, when
        given, is a tqdm-like factory used for a files bar and a chunks bar. `stop`, when given, is asked
        between batches: once it says True the ingest ends with KeyboardInterrupt, what was committed kept
        (so an interrupt a library swallowed still stops it at the next batch). `tags` are added to every
        document of every file ingested or found unchanged (tags already there are kept). `collection` is
        where the files' documents go (and the ones stored before move to); None: new documents go to the
        default collection and stored ones stay where they are.
        """
        if collection is not None:
            check_collection(collection)
        started = time.perf_counter()
        report = IngestReport()
        moved = False
        files, missing = _expand(paths)
        report.skipped.extend(missing)
        report.files = len(files) + len(missing)
        bars = _Bars(progress, len(files))
        # a ContextVar, not an argument: the model's batch loop is below chunk_documents and the Embedder
        # protocol, which would all change for this one count (citewise.index.embeddings says more)
        counting = embedded.set(bars.texts_done)
        try:
            with self._writing():
                try:
                    for file in files:
                        into = collection or DEFAULT_COLLECTION
                        if self._ingest_file(file, report, batch_documents, bars, stop, into):
                            if tags:
                                name = str(file.resolve())
                                report.documents_tagged += self.docstore.tag_documents(name, tags)
                            if collection is not None:
                                moved = self._move(str(file.resolve()), collection) or moved
                        bars.file_done()
                finally:  # also after an interrupt: BM25 holds what was committed
                    if report.changed or moved:
                        self._rebuild_bm25(self.docstore.generation)
        finally:
            embedded.reset(counting)
            bars.close()
            report.seconds = time.perf_counter() - started
        return report

    def _move(self, file: str, collection: str) -> bool:
        """Put a file's stored documents in `collection` (Chroma's metadata too); whether any moved."""
        with self._mirroring():
            chunks = self.docstore.move_documents(file, collection)
            if chunks:
                self.vectors.set_collection(chunks, collection)
        return bool(chunks)

    def _ingest_file(
        self,
        file: Path,
        report: IngestReport,
        batch: int,
        bars: _Bars,
        stop: Callable[[], bool] | None,
        collection: str = DEFAULT_COLLECTION,
    ) -> bool:
        """Ingest one file as `citewise.index.policy` decides; whether its documents are stored."""
        decision = decide(file, self.docstore)
        report.skipped.extend(decision.skipped)
        if decision.action == "unchanged":
            report.unchanged_files += 1
            return True
        if decision.action == "skip":
            if decision.reason != NOTHING_WITHIN_LIMIT or not decision.skipped:  # else said per document
                report.skipped.append((str(file), decision.reason))
            return False
        for i in range(0, len(decision.fresh), batch):
            if stop is not None and stop():
                raise KeyboardInterrupt
            self._add(decision.fresh[i : i + batch], decision.name, report, bars, collection)
        stale = self.docstore.document_ids(decision.name) - set(decision.documents)
        if stale:
            with self._mirroring():
                removed = self.docstore.delete_documents(stale)
                self.vectors.delete(removed)
            report.documents_removed += len(stale)
            report.chunks_removed += len(removed)
        with self._mirroring():
            self.docstore.mark_file(decision.name, decision.sha, decision.size)
        report.ingested_files += 1
        return True

    def _add(
        self, documents: list[Document], file: str, report: IngestReport, bars: _Bars, collection: str
    ) -> None:
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
                    chunk_metadata(doc.id, f"{doc.id}:p{chunk.paragraph}", doc.title, collection)
                )
                vectors.append(vector)
        with self._mirroring():
            self.docstore.add(chunked, file, collection)
            self.vectors.upsert(ids, np.asarray(vectors), texts, metadatas)
        report.documents_added += len(chunked)
        report.chunks_added += len(ids)
        bars.chunks_done(len(ids))

    @contextmanager
    def _mirroring(self) -> Iterator[None]:
        """Around a document-store write and its Chroma mirror: if Chroma was in step, it stays recorded so.

        If the block fails between the two, the recorded generation lags and the next open reconciles.
        """
        self._chroma()  # opened (and brought in step) before the document store moves on
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

    def remove_documents(self, doc_ids: Iterable[str]) -> IngestReport:
        """Delete the given documents (by id), each with its paragraphs, references and chunks.

        The other documents of a document's file stay; the file's record goes with its last document (so an
        ingest of the file reads it again), and stays while others remain (an unchanged file is skipped, so
        the removed document does not come back; a changed one is read again whole). An id the index does
        not hold is listed as skipped.
        """
        started = time.perf_counter()
        report = IngestReport()
        with self._writing():
            for doc_id in dict.fromkeys(doc_ids):
                file = self.docstore.document_files([doc_id]).get(doc_id)
                if file is None:
                    report.skipped.append((doc_id, "no such document in the index"))
                    continue
                last = self.docstore.document_ids(file) == {doc_id}
                with self._mirroring():
                    removed = self.docstore.delete_documents([doc_id], forget_file=file if last else None)
                    self.vectors.delete(removed)
                report.files += int(last)
                report.documents_removed += 1
                report.chunks_removed += len(removed)
            if report.changed:
                self._rebuild_bm25(self.docstore.generation)
        report.seconds = time.perf_counter() - started
        return report


def _expand(paths: Iterable[str | Path]) -> tuple[list[Path], list[tuple[str, str]]]:
    """Files under the given paths, and (path, reason) for paths that do not exist."""
    existing, missing = [], []
    for path in paths:
        candidate = Path(path).expanduser()
        if candidate.exists():
            existing.append(candidate)
        else:
            missing.append((str(path), "no such file or directory"))
    supported = ", ".join(SUPPORTED_SUFFIXES)
    missing += [
        (str(path), f"unsupported type {path.suffix or '(no suffix)'} (supported: {supported})")
        for path in unsupported_files(existing)
    ]
    return iter_files(existing), missing


class _Bars:
    """Optional progress bars: files done, chunks stored, and texts embedded (moving while a file embeds)."""

    def __init__(self, factory: ProgressFactory | None, files: int) -> None:
        self.files = factory(total=files, desc="files", unit="file", position=0) if factory else None
        self.chunks = factory(desc="chunks", unit="chunk", position=1) if factory else None
        self.texts = factory(desc="embedded", unit="text", position=2) if factory else None

    def file_done(self) -> None:
        if self.files is not None:
            self.files.update(1)

    def chunks_done(self, count: int) -> None:
        if self.chunks is not None:
            self.chunks.update(count)

    def texts_done(self, count: int) -> None:
        if self.texts is not None:
            self.texts.update(count)

    def close(self) -> None:
        for bar in (self.files, self.chunks, self.texts):
            if bar is not None:
                bar.close()
