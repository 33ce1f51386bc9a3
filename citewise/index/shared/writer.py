"""The shared store as the writing port (`SharedWriter`), with the operations only that tier has.

`SharedWriter` writes the store at a PostgreSQL URL as `citewise.index.writer.IndexWriter` says: an ingest
queues the files in the store and works the queue here as one worker of any (`pgworker.ingest`), a removal
deletes each file's documents in one transaction, and both report in `IngestReport`. Its other methods are
the tier's own, for the commands that name a store: queueing with each claim's outcome (`--vectors`,
`--queue-only`, `citewise requeue`), tagging what was ingested, making the store (`citewise serve --store`)
and where its vectors are. Nothing stays open between calls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from citewise.index.chunking import ChunkingConfig
from citewise.index.records import (
    IndexOpenError,
    IndexStats,
    IngestReport,
    ProgressFactory,
    check_collection,
)
from citewise.index.shared.chromavectors import vector_choice
from citewise.index.shared.index import SharedIndex
from citewise.index.shared.pgstore import PgStore
from citewise.index.shared.pgworker import ensure_store, ingest, summary
from citewise.index.shared.queue import Outcome

logger = logging.getLogger(__name__)


class SharedWriter:
    """The shared store at `store` (a postgresql:// URL) as an `IndexWriter`."""

    def __init__(self, store: str) -> None:
        self.store = store

    def ingest(
        self,
        paths: Iterable[str | Path],
        *,
        progress: ProgressFactory | None = None,
        stop: Callable[[], bool] | None = None,
        tags: Sequence[str] = (),
        collection: str | None = None,
    ) -> IngestReport:
        """Queue the files (into `collection`) and work the queue here; `progress` gets two bars."""
        files_bar = progress(desc="files", unit="file", position=0) if progress else None
        chunks_bar = progress(desc="chunks", unit="chunk", position=1) if progress else None

        def counted(outcome: Outcome) -> None:
            if outcome.state == "retry":
                return
            if files_bar is not None:
                files_bar.update(1)
            if chunks_bar is not None and outcome.chunks:
                chunks_bar.update(outcome.chunks)

        try:
            _, outcomes = self.queue(paths, report=counted, stop=stop, collection=collection)
        finally:
            for bar in (files_bar, chunks_bar):
                if bar is not None:
                    bar.close()
        report = summary(outcomes)
        report.documents_tagged = self.tag([o.path for o in outcomes if o.state == "done"], tags)
        return report

    def remove(self, paths: Iterable[str | Path]) -> IngestReport:
        """Each file's documents go in one transaction."""
        with PgStore(self.store) as shared:
            return shared.remove(list(paths))

    def remove_documents(self, doc_ids: Iterable[str]) -> IngestReport:
        """Each document goes in one transaction; its file's others stay."""
        with PgStore(self.store) as shared:
            return shared.remove_documents(list(doc_ids))

    def stats(self) -> IndexStats:
        """The store's counts."""
        with PgStore(self.store) as shared:
            return shared.stats()

    def close(self) -> None:
        """Nothing stays open between calls."""

    def __enter__(self) -> SharedWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # what only the shared tier does -------------------------------------------------------------------
    def model(self) -> str:
        """The store's embedding model; a clear error for an unreachable database or no store there.

        Raises:
            IndexOpenError: the database does not answer ("cannot reach ..."), or holds no store.
        """
        return SharedIndex.model_of(self.store)

    def current(self) -> bool:
        """Whether the store's tables have this citewise's form (False: `make` brings them up to date)."""
        with PgStore(self.store) as shared:
            return shared.current()

    def make(self) -> None:
        """Make the store if it is not there (`pgworker.ensure_store`: safe run by many at once)."""
        ensure_store(self.store)

    def up_to_date(self) -> None:
        """Bring a store an older citewise made up to this one's tables (collections) before it is read.

        Its documents keep their rows: `make` only adds what is missing (documents without a collection are
        in "default"), under the store's lock, so replicas started together upgrade it once. A database that
        cannot be reached, or holds no store, is left for opening it to say so.

        A store one form behind that a reader may search as it is (`schema.SEARCHABLE`) is left as it is on a
        database that cannot be written, with a warning.

        Raises:
            IndexOpenError: the store is older and the database cannot be written (a hot standby): how to
                upgrade the primary, rather than a failure at every search.
            psycopg.Error: the database refused the upgrade otherwise.
        """
        import psycopg

        try:
            if self.current():
                return
            self.model()
        except (IndexOpenError, psycopg.Error):
            return
        try:
            self.make()
        except psycopg.errors.ReadOnlySqlTransaction as error:
            with PgStore(self.store) as shared:
                if shared.searchable():  # a hot standby of a store one form behind: it answers as it is
                    logger.warning(
                        "the shared store was made by an older citewise and this server cannot upgrade it: "
                        "searches of a few collections are slower until `citewise ingest --store URL` runs "
                        "once against the primary"
                    )
                    return
            raise IndexOpenError(
                "the shared store was made by an older citewise and this server cannot write to upgrade it: "
                "run `citewise ingest --store URL` once against the primary (its documents are kept)"
            ) from error

    def queue(
        self,
        paths: Iterable[str | Path] = (),
        *,
        chunking: ChunkingConfig | None = None,
        vectors: str | None = None,
        requeue: bool = False,
        work: bool = True,
        report: Callable[[Outcome], None] | None = None,
        stop: Callable[[], bool] | None = None,
        collection: str | None = None,
    ) -> tuple[int, list[Outcome]]:
        """Queue files (or failed ones again, `requeue`) and, with `work`, work the queue here until empty.

        A store not there is made with `chunking` and `vectors` (the `--vectors` option as given:
        ``pgvector`` or a Chroma server's address). `collection`: where the files' documents go (and the
        ones stored before move to; None: new ones to the default collection). `pgworker.ingest` says the
        rest.

        Returns:
            How many files were queued, and the outcome of each claim made here.

        Raises:
            ValueError: `vectors` names no vector store.
            IndexOpenError: no store to requeue in, or one made with another model, chunking or vectors.
            psycopg.Error: the database cannot be reached, or refuses (a hot standby refuses every write).
        """
        return ingest(
            self.store,
            [Path(p) for p in paths],
            requeue=requeue,
            chunking=chunking,
            vectors=vector_choice(vectors),
            work=work,
            report=report,
            stop=stop,
            collection=check_collection(collection) if collection is not None else None,
        )

    def tag(self, files: Sequence[str], tags: Sequence[str]) -> int:
        """Tag every document of `files`; how many documents were tagged."""
        tags = [t for t in tags if t]
        if not tags or not files:
            return 0
        with PgStore(self.store) as shared:
            return sum(shared.tag_documents(file, tags) for file in files)

    def vectors(self) -> str:
        """Where the store keeps its vectors, as a summary says it: "chroma" or "pgvector"."""
        with PgStore(self.store) as shared:
            return "chroma" if shared.vectors_in_chroma else "pgvector"
