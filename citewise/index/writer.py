"""Writing to the index a run names, whichever tier it is on: one interface, `IndexWriter`.

The local tier's `Index` is one as it is; `SharedWriter` is the shared store's (PostgreSQL): an ingest
queues the files in the store and works the queue here as one worker of any (`pgworker.ingest`), a removal
deletes each file's documents in one transaction, and both report in the local tier's `IngestReport`.
`open_writer` opens the one a run's settings name, so the served index graph and the chat page's uploads
write where the query graph reads (the index graph always wrote to the local folder, so on a server whose
environment named a shared store an upload landed where no question looked).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from citewise.index.records import IndexStats, IngestReport, ProgressFactory

if TYPE_CHECKING:
    from citewise.index.embeddings import Embedder


class IndexWriter(Protocol):
    """What writing to an index needs, on either tier."""

    def ingest(
        self,
        paths: Iterable[str | Path],
        *,
        progress: ProgressFactory | None = None,
        tags: Sequence[str] = (),
    ) -> IngestReport:
        """Add files (or folders of files); unchanged ones are skipped, changed ones replaced."""
        ...

    def remove(self, paths: Iterable[str | Path]) -> IngestReport:
        """Delete every document that came from the given files (or files under the given folders)."""
        ...

    def stats(self) -> IndexStats:
        """How much the index holds."""
        ...

    def close(self) -> None:
        """Let go of the index's connections."""
        ...

    def __enter__(self) -> IndexWriter: ...

    def __exit__(self, *exc: object) -> None: ...


class SharedWriter:
    """The shared store (PostgreSQL at `store`) as an `IndexWriter`."""

    def __init__(self, store: str) -> None:
        self.store = store

    def ingest(
        self,
        paths: Iterable[str | Path],
        *,
        progress: ProgressFactory | None = None,
        tags: Sequence[str] = (),
    ) -> IngestReport:
        """Queue the files and work the queue here; `progress` gets a files bar and a chunks bar."""
        from citewise.index.shared.pgworker import ingest, summary

        files_bar = progress(desc="files", unit="file", position=0) if progress else None
        chunks_bar = progress(desc="chunks", unit="chunk", position=1) if progress else None

        def counted(outcome: Any) -> None:
            if outcome.state == "retry":
                return
            if files_bar is not None:
                files_bar.update(1)
            if chunks_bar is not None and outcome.chunks:
                chunks_bar.update(outcome.chunks)

        try:
            _, outcomes = ingest(self.store, [Path(p) for p in paths], report=counted)
        finally:
            for bar in (files_bar, chunks_bar):
                if bar is not None:
                    bar.close()
        report = summary(outcomes)
        report.documents_tagged = tag_files(self.store, [o.path for o in outcomes if o.state == "done"], tags)
        return report

    def remove(self, paths: Iterable[str | Path]) -> IngestReport:
        """Each file's documents go in one transaction."""
        from citewise.index.shared.pgstore import PgStore

        with PgStore(self.store) as shared:
            return shared.remove(list(paths))

    def stats(self) -> IndexStats:
        """The store's counts."""
        from citewise.index.shared.pgstore import PgStore

        with PgStore(self.store) as shared:
            return shared.stats()

    def close(self) -> None:
        """Nothing stays open between calls."""

    def __enter__(self) -> SharedWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def tag_files(store: str, files: Sequence[str], tags: Sequence[str]) -> int:
    """Tag every document of `files` in the shared store; how many documents were tagged."""
    tags = [t for t in tags if t]
    if not tags or not files:
        return 0
    from citewise.index.shared.pgstore import PgStore

    with PgStore(store) as shared:
        return sum(shared.tag_documents(file, tags) for file in files)


def open_writer(
    *,
    index_dir: str | Path,
    store: str | None = None,
    chroma_url: str | None = None,
    embedders: Callable[[str | None], Embedder] | None = None,
) -> IndexWriter:
    """The writer of the index a run names.

    The shared store at `store`, else the local index at `index_dir` (made when it is not there), opened
    with the run's `embedders` (loaded once by the way in; none given: `Index.open`'s own).
    """
    if store:
        return SharedWriter(store)
    from citewise.index import Index

    if embedders is None:
        return Index.open(index_dir, chroma_url=chroma_url)
    return Index.open(index_dir, chroma_url=chroma_url, embedders=embedders)
