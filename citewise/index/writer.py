"""Writing to an index, whichever tier it is on: one interface, `IndexWriter`.

The local tier's `Index` (`citewise.index.local.store`) is one as it is, and searches too (`WritableIndex`:
both ports); the shared tier's is `SharedWriter` (`citewise.index.shared.writer`): an ingest queues the files
in the store and works the queue here as one worker of any, a removal deletes each file's documents in one
transaction, and both report in `IngestReport`. `citewise.core.resources` opens the one a run's settings
name, so the served index graph and the chat page's uploads write where the query graph reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol

from citewise.index.chunking import ChunkingConfig
from citewise.index.reading import SearchIndex
from citewise.index.records import IndexStats, IngestReport, ProgressFactory


class IndexWriter(Protocol):
    """What writing to an index needs, on either tier."""

    def ingest(
        self,
        paths: Iterable[str | Path],
        *,
        progress: ProgressFactory | None = None,
        stop: Callable[[], bool] | None = None,
        tags: Sequence[str] = (),
        collection: str | None = None,
    ) -> IngestReport:
        """Add files (or folders of files); unchanged ones are skipped, changed ones replaced.

        `stop` is asked between files (or batches): True ends the ingest, keeping what was committed.
        `collection`: the files' documents go there, and the ones stored before move there (None: new
        documents go to the default collection, stored ones stay where they are).
        """
        ...

    def remove(self, paths: Iterable[str | Path]) -> IngestReport:
        """Delete every document that came from the given files (or files under the given folders)."""
        ...

    def remove_documents(self, doc_ids: Iterable[str]) -> IngestReport:
        """Delete the given documents (by id); their files' other documents stay.

        A file's record goes with its last document (an ingest of it then reads it again); an id the index
        does not hold is listed in the report's `skipped`.
        """
        ...

    def stats(self) -> IndexStats:
        """How much the index holds."""
        ...

    def close(self) -> None:
        """Let go of the index's connections."""
        ...

    def __enter__(self) -> IndexWriter: ...

    def __exit__(self, *exc: object) -> None: ...


class WritableIndex(SearchIndex, IndexWriter, Protocol):
    """An index one handle both searches and writes (the local tier's `Index`).

    Attributes:
        chunking: how it cuts documents (what a later ingest must keep).
    """

    chunking: ChunkingConfig

    def __enter__(self) -> WritableIndex: ...
