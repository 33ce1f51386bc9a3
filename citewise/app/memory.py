"""Conversation memory: where threads are kept, so a conversation survives a restart, and whose they are.

One setting chooses the store: a file path (or nothing: `.citewise/threads.sqlite`) keeps threads in an
embedded SQLite checkpointer; a `postgresql://` URL keeps them in PostgreSQL, the scale path. The commands
that take `--store postgresql://...` default it to the store's database (`citewise.app.cli`). Chat and the
web page compile the query graph with the saver this opens and run each turn under its thread id.

A thread's owner is a row beside its checkpoints (`citewise_thread_owners`, in the same database), written
at the thread's first turn (`claim_thread`) and checked at every later one: a client that names another
user's thread id gets no access to it. Threads from before owners existed belong to the local user.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

DEFAULT_THREADS = ".citewise/threads.sqlite"
"""Where threads are kept when nothing is set (beside the default index)."""

POSTGRES = ("postgresql://", "postgres://")

LOCAL_OWNER = "local"
"""The owner of a thread from before owners were recorded (the local user of citewise.app.access)."""


def threads_setting(explicit: str | None = None) -> str:
    """The thread store to use: the explicit setting, else `CITEWISE_THREADS`, else the default file."""
    return explicit or os.environ.get("CITEWISE_THREADS") or DEFAULT_THREADS


@asynccontextmanager
async def open_checkpointer(setting: str | None = None) -> AsyncIterator[BaseCheckpointSaver]:
    """The checkpointer the setting names, open for the block (its tables created on first use).

    Raises:
        ValueError: the setting is neither a writable file path nor a PostgreSQL URL that answers.
    """
    target = threads_setting(setting)
    if target.startswith(POSTGRES):
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg import Error, OperationalError
        from psycopg.errors import ReadOnlySqlTransaction

        async with AsyncExitStack() as stack:
            read_only = (
                f"the thread store at {_safe(target)} is read-only (a hot standby?): threads are written, so "
                "give --threads (or CITEWISE_THREADS) the primary's URL"
            )
            try:
                saver = await stack.enter_async_context(AsyncPostgresSaver.from_conn_string(target))
                await _set_up_alone(saver, target)
                async with saver._cursor() as cursor:  # the saver's own connection
                    await cursor.execute("SHOW transaction_read_only")
                    row = await cursor.fetchone()
                if row and row["transaction_read_only"] == "on":
                    raise ValueError(read_only)
            except ReadOnlySqlTransaction as error:
                raise ValueError(read_only) from error
            except OperationalError as error:
                raise ValueError(f"cannot open the thread store at {_safe(target)}: {error}") from error
            except Error as error:
                first = (str(error).strip().splitlines() or [type(error).__name__])[0]
                raise ValueError(f"cannot open the thread store at {_safe(target)}: {first}") from error
            yield saver
        return
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = Path(target)
    if path.exists() and path.is_dir():
        raise ValueError(f"the thread store {path} is a directory; give a file such as {DEFAULT_THREADS}")
    path.parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(path)) as sqlite_saver:
        await sqlite_saver.setup()
        await _owners_set_up(sqlite_saver)
        yield sqlite_saver


SETUP_LOCK = "citewise.threads.setup"
"""The advisory lock the thread store's set-up holds (one process at a time sets it up)."""
SETUP_POLL = 0.1
SETUP_TRIES = 1200
"""How often, and how many times, a process tries to take the set-up lock (two minutes in all)."""


async def _set_up_alone(saver: Any, target: str) -> None:
    """The saver's set-up (its tables and migrations), one process at a time.

    Replicas started together on a fresh database each ran it at once: one crashed on a duplicate key in the
    migrations table, or on a deadlock between two CREATE INDEX CONCURRENTLY (5 of 6 in the test). A
    session-level advisory lock, taken on a connection of its own, serialises it; on a standby whose tables
    are there already the set-up only reads, and advisory locks work there too.
    """
    from psycopg import AsyncConnection

    async with await AsyncConnection.connect(target, autocommit=True) as lock:
        # tried, not waited for: a statement waiting on the lock keeps a snapshot open, and the holder's
        # CREATE INDEX CONCURRENTLY waits for every open snapshot (each would wait for the other)
        for _ in range(SETUP_TRIES):
            row = await (
                await lock.execute("SELECT pg_try_advisory_lock(hashtext(%s))", [SETUP_LOCK])
            ).fetchone()
            if row and row[0]:
                break
            await asyncio.sleep(SETUP_POLL)
        else:
            waited = SETUP_TRIES * SETUP_POLL  # a ValueError, as open_checkpointer says: one line
            raise ValueError(f"another process held the thread store's set-up for {waited:g} s; try again")
        try:
            await saver.setup()
            await _owners_set_up(saver)
        finally:
            await lock.execute("SELECT pg_advisory_unlock(hashtext(%s))", [SETUP_LOCK])


def shown_setting(setting: str | None = None) -> str:
    """The thread store a setting names, as messages may show it (a URL's password hidden)."""
    return _safe(threads_setting(setting))


def _safe(url: str) -> str:
    """A URL with its password hidden, for messages."""
    if "@" not in url:
        return url
    head, tail = url.split("@", 1)
    scheme, _, credentials = head.partition("://")
    if ":" not in credentials:
        return url  # no password in it
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}:***@{tail}"


@dataclass(frozen=True)
class ThreadSummary:
    """One stored conversation, as a list of threads shows it."""

    thread_id: str
    title: str
    """The first question asked in it."""
    turns: int
    """Questions asked so far."""
    updated: str
    """When its last checkpoint was written (ISO 8601)."""


LATEST_PER_THREAD = (
    "SELECT thread_id, MAX(checkpoint_id) AS latest FROM checkpoints "
    "WHERE checkpoint_ns = '' GROUP BY thread_id"
)
"""Each thread's newest checkpoint id, in the SQLite and PostgreSQL savers' own table (ids grow with time)."""


OWNED_LATEST_PER_THREAD = (
    "SELECT c.thread_id, MAX(c.checkpoint_id) AS latest FROM checkpoints c "
    "LEFT JOIN citewise_thread_owners o ON o.thread_id = c.thread_id "
    f"WHERE c.checkpoint_ns = '' AND COALESCE(o.owner, '{LOCAL_OWNER}') = %s GROUP BY c.thread_id"
)
"""The same for the threads of one owner (a thread without an owner row is the local user's)."""


async def _newest_threads(
    saver: BaseCheckpointSaver, limit: int, owner: str | None = None
) -> list[str] | None:
    """The `limit` most recently updated thread ids (of `owner`), asked of the store's table.

    None for savers that keep no table (in memory).
    """
    try:
        if owner is None:
            rows = await _query(saver, LATEST_PER_THREAD, [])
        else:
            rows = await _query(saver, OWNED_LATEST_PER_THREAD, [owner])
    except TypeError:
        return None
    rows.sort(key=lambda row: row[1], reverse=True)
    return [thread_id for thread_id, _ in rows[:limit]]


async def thread_summaries(
    saver: BaseCheckpointSaver, limit: int = 50, owner: str | None = None
) -> list[ThreadSummary]:
    """The stored threads (`owner`'s only, when given), most recently updated first (at most `limit`).

    The SQLite and PostgreSQL stores are asked for each thread's newest checkpoint id, and only the `limit`
    newest threads' checkpoints are read; other savers (in memory, which keep no owners) are read whole.
    """
    latest: dict[str, Any] = {}
    newest = await _newest_threads(saver, limit, owner)
    if newest is not None:
        for thread_id in newest:
            item = await saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
            if item is not None:
                latest[thread_id] = item
    elif owner is None or owner == LOCAL_OWNER:  # a saver in memory keeps no owners: its threads are local
        async for item in saver.alist(None):
            thread_id = item.config["configurable"]["thread_id"]
            namespace = item.config["configurable"].get("checkpoint_ns", "")
            if namespace or thread_id in latest:
                continue  # subgraph checkpoints and older checkpoints of a thread already seen
            latest[thread_id] = item
    summaries = []
    for thread_id, item in latest.items():
        messages = item.checkpoint.get("channel_values", {}).get("messages", [])
        questions = [m for m in messages if getattr(m, "type", None) == "human"]
        title = str(questions[0].content) if questions else "(no question yet)"
        summaries.append(
            ThreadSummary(
                thread_id=thread_id,
                title=title if len(title) <= 80 else title[:77] + "...",
                turns=len(questions),
                updated=str(item.checkpoint.get("ts", "")),
            )
        )
    summaries.sort(key=lambda s: s.updated, reverse=True)
    return summaries[:limit]


OWNERS_TABLE = (
    "CREATE TABLE IF NOT EXISTS citewise_thread_owners (thread_id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
    "created TEXT NOT NULL)"
)
"""Who each thread belongs to, beside the checkpoints (a thread without a row is the local user's)."""


async def _owners_set_up(saver: Any) -> None:
    """Make the owners table in the saver's database (on PostgreSQL: inside the set-up's advisory lock).

    On PostgreSQL it is made only when missing, so a hot standby that has it writes nothing.
    """
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    if isinstance(saver, AsyncSqliteSaver):
        async with saver.lock:
            await saver.conn.execute(OWNERS_TABLE)
            await saver.conn.commit()
        return
    async with saver._cursor() as cursor:
        await cursor.execute("SELECT to_regclass('citewise_thread_owners') IS NOT NULL AS made")
        row = await cursor.fetchone()
        if not (row and row["made"]):
            await cursor.execute(OWNERS_TABLE)


async def _query(saver: BaseCheckpointSaver, statement: str, values: list[Any]) -> list[tuple[Any, ...]]:
    """Run `statement` (written with %s) on the thread store's own connection; its rows as tuples.

    Raises:
        TypeError: the saver keeps no database (one in memory keeps no owners).
    """
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    if isinstance(saver, AsyncSqliteSaver):
        async with saver.lock, saver.conn.execute(statement.replace("%s", "?"), values) as cursor:
            rows = [tuple(row) for row in await cursor.fetchall()]
            await saver.conn.commit()
            return rows
    if type(saver).__name__ == "AsyncPostgresSaver" and hasattr(saver, "_cursor"):
        async with saver._cursor() as cursor:
            await cursor.execute(statement, values)
            if cursor.description is None:
                return []
            return [tuple(row.values()) for row in await cursor.fetchall()]
    raise TypeError(
        f"threads have owners only in a SQLite or PostgreSQL thread store, not {type(saver).__name__}"
    )


async def _has_checkpoints(saver: BaseCheckpointSaver, thread_id: str) -> bool:
    return await saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}) is not None


async def thread_owner(saver: BaseCheckpointSaver, thread_id: str) -> str | None:
    """Who a thread belongs to; None when there is no such thread (no owner row and no checkpoint)."""
    rows = await _query(saver, "SELECT owner FROM citewise_thread_owners WHERE thread_id = %s", [thread_id])
    if rows:
        return str(rows[0][0])
    return LOCAL_OWNER if await _has_checkpoints(saver, thread_id) else None


async def claim_thread(saver: BaseCheckpointSaver, thread_id: str, user: str) -> str:
    """The thread's owner, made `user` if the thread is new: the first turn's asker owns it, once and for all.

    Two users claiming the same new id at once: one row is written, and both get its owner.
    """
    select = "SELECT owner FROM citewise_thread_owners WHERE thread_id = %s"
    rows = await _query(saver, select, [thread_id])
    if not rows:
        from datetime import UTC, datetime

        first = LOCAL_OWNER if await _has_checkpoints(saver, thread_id) else user  # from before owners
        await _query(
            saver,
            "INSERT INTO citewise_thread_owners (thread_id, owner, created) VALUES (%s, %s, %s) "
            "ON CONFLICT (thread_id) DO NOTHING",
            [thread_id, first, datetime.now(UTC).isoformat()],
        )
        rows = await _query(saver, select, [thread_id])
    return str(rows[0][0])


async def delete_thread(saver: BaseCheckpointSaver, thread_id: str) -> None:
    """Delete a thread: its checkpoints and its owner row."""
    await saver.adelete_thread(thread_id)
    await _query(saver, "DELETE FROM citewise_thread_owners WHERE thread_id = %s", [thread_id])
