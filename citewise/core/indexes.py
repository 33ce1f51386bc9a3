"""The open index of a process, shared by every run's steps, and blocking work kept off the event loop.

The handle stays open for the life of the process and follows the index as other processes change it: each
search first loads what they switched in (see `Index.refresh`), so no run has to reopen it.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from citewise.context import Context
from citewise.deployment import check_settings
from citewise.index import Index

_indexes: dict[tuple[str, str | None], Index] = {}
_lock = threading.Lock()


async def open_index(context: Context) -> Index:
    """The index the context names, opened once per process, off the event loop (opening syncs the stores)."""
    check_settings(context)
    return await asyncio.to_thread(_open_index, context.index_dir, context.chroma_url)


def _open_index(index_dir: str, chroma_url: str | None) -> Index:
    key = (index_dir, chroma_url)
    with _lock:
        if key not in _indexes:
            _indexes[key] = Index.open(index_dir, chroma_url=chroma_url, create=False)
        return _indexes[key]


def forget_index(context: Context) -> None:
    """Drop the cached handle, so that the next run opens the index afresh.

    Runs that still hold it keep using it: it is not closed here, and its connections close when the last of
    them lets go of it.
    """
    with _lock:
        _indexes.pop((context.index_dir, context.chroma_url), None)


async def in_thread(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Run blocking index work (SQLite, Chroma, the embedding model) off the event loop."""
    return await asyncio.to_thread(function, *args, **kwargs)
