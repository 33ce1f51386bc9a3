"""The commands' shared-store side (`--store URL`): opening, ingesting, removing, searching and counting.

Each turns the store's errors into one line and an exit code, as the local tier's commands do.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from citewise.app.console import fail, print_summary
from citewise.core.resources import Resources, shared_store

if TYPE_CHECKING:
    from citewise.index.reading import SearchIndex
    from citewise.index.records import IndexStats


def open_shared(store: str, resources: Resources, *, empty_ok: bool = False) -> SearchIndex:
    """Open the shared store through the run's resources; an empty store is an error."""
    import psycopg

    from citewise.index import IndexOpenError

    try:
        opened = resources.open_store(store)
        if not empty_ok and opened.stats().chunks == 0:
            raise fail("the shared store is empty: add documents with `citewise ingest PATH --store URL`", 1)
    except (IndexOpenError, ValueError, psycopg.Error) as error:
        raise fail(first_line(error)) from error
    return opened


def open_served(store: str, resources: Resources) -> SearchIndex:
    """The shared store a server answers from, made first if it is not there; an empty store is no error.

    Replicas may start before any document is ingested, and together with the ingests on a fresh database
    (making one is safe run by many at once); they answer "not in your documents" until
    documents arrive. A store there already is only read (a replica of a hot standby writes nothing).
    """
    import psycopg

    from citewise.index import IndexOpenError

    writer = shared_store(store)
    try:
        writer.model()
    except IndexOpenError as error:
        if str(error).startswith("cannot reach"):
            raise fail(first_line(error)) from error
        try:
            writer.make()
        except (IndexOpenError, psycopg.Error) as made:
            raise store_failed(made) from made
    return open_shared(store, resources, empty_ok=True)


def first_line(error: BaseException) -> str:
    """An error's first line (a database error's message goes on with its context)."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def store_failed(error: BaseException) -> typer.Exit:
    """A shared store's error in one line (exit 2): a read-only database (a hot standby) said as such."""
    import psycopg

    if isinstance(error, psycopg.errors.ReadOnlySqlTransaction):
        return fail(
            "the shared store's database is read-only (a hot standby?): this command writes, so give it "
            "the primary's URL"
        )
    line = first_line(error)
    return fail(line if line.startswith(("cannot reach", "no shared store")) else f"shared store: {line}")


def shown(url: str | None) -> str:
    """A URL as messages show it (its password hidden)."""
    from citewise.app.memory import shown_setting

    return shown_setting(url)


def threads_of(threads: str | None, store: str | None) -> str | None:
    """The thread store: the one given (--threads, CITEWISE_THREADS), else the shared store's database."""
    from citewise.app.memory import POSTGRES

    return threads or (store if store and store.startswith(POSTGRES) else None)


def ingest_shared(
    store: str,
    paths: list[Path],
    chunking: Any,
    quiet: bool,
    *,
    vectors: str | None = None,
    requeue: bool = False,
    verb: str = "ingest",
    tags: list[str] | None = None,
    queue_only: bool = False,
    collection: str | None = None,
) -> None:
    """Queue the files in the shared store (or queue failed ones again) and ingest here, as one worker of any.

    The store is made at its first ingest, with the embedding model, chunking and vector store given; others
    (`python -m citewise.index.shared.pgworker --store URL`) may take files from the same queue meanwhile.
    `queue_only`: queue them and leave them to those workers. `collection`: where their documents go.
    """
    import psycopg

    from citewise.index import IndexOpenError

    writer = shared_store(store)
    try:
        queued, outcomes = writer.queue(
            paths,
            requeue=requeue,
            chunking=chunking,
            vectors=vectors,
            work=not queue_only,
            collection=collection,
        )
    except (IndexOpenError, ValueError, psycopg.Error) as error:
        raise store_failed(error) from error
    if queue_only:
        if not quiet:
            typer.echo(
                f"{verb} (shared store): {queued} files queued for the store's workers "
                f"(python -m citewise.index.shared.pgworker --store URL)",
                err=True,
            )
        return
    final = [o for o in outcomes if o.state != "retry"]
    failed = [o for o in final if o.state == "failed"]
    try:
        tagged = writer.tag([o.path for o in final if o.state == "done"], tags or [])
    except psycopg.Error as error:
        raise store_failed(error) from error
    for outcome in failed:
        typer.secho(f"skipped {outcome.path}: {outcome.error}", err=True, fg=typer.colors.YELLOW)
    if not quiet:
        documents, chunks = sum(o.documents for o in final), sum(o.chunks for o in final)
        left = len(outcomes) - len(final)
        retried = f", {left} claims left queued after an error" if left else ""
        typer.echo(
            f"{verb} (shared store): {queued} files queued, {len(final)} taken here "
            f"({len(failed)} failed{retried}); documents +{documents}; chunks +{chunks}",
            err=True,
        )
        if tagged:
            typer.echo(f"documents tagged: {tagged}", err=True)
    if final and len(failed) == len(final):
        raise fail("nothing was ingested", code=1)


def remove_shared(store: str, paths: list[Path], doc_ids: list[str] | None = None) -> None:
    """`remove` on the shared store: each file's (or document's) rows go in a transaction; the same report."""
    import psycopg

    from citewise.index import IndexOpenError

    writer = shared_store(store)
    try:
        writer.model()  # a clear error for an unreachable database or a missing store
        report = writer.remove_documents(doc_ids) if doc_ids else writer.remove(paths)
        stats, vectors = writer.stats(), writer.vectors()
    except (IndexOpenError, psycopg.Error) as error:
        raise store_failed(error) from error
    print_summary(report, stats, f"store {shown(store)}", vectors, "remove")
    if not report.documents_removed and not report.files:
        raise fail("nothing matched in the store", code=1)


def search_shared(store: str, query: str, **options: Any) -> list:
    """`search` on the shared store (a hot standby's URL will do: a search only reads)."""
    import psycopg

    opened = open_shared(store, Resources())
    try:
        return opened.search(query, **options)
    except psycopg.Error as error:
        raise store_failed(error) from error
    finally:
        opened.close()


def reachable(store: str) -> None:
    """Fail in one line when the shared store's database does not answer (a store not made yet is fine)."""
    import psycopg

    try:
        with psycopg.connect(store, autocommit=True, connect_timeout=10):
            pass
    except psycopg.Error as error:
        raise fail(f"cannot reach the shared store: {first_line(error)}") from error


def stats_shared(store: str) -> IndexStats:
    """What the shared store holds (no model loaded); an unreachable or missing store is an error."""
    import psycopg

    from citewise.index import IndexOpenError

    writer = shared_store(store)
    try:
        writer.model()  # a clear error for an unreachable database or a missing store
        return writer.stats()
    except (IndexOpenError, psycopg.Error) as error:
        raise store_failed(error) from error
