"""The index of a run, from the resources its Context carries, and blocking work kept off the event loop.

The handle is the way in's (`citewise.core.resources.Resources`): it stays open for as long as they do and
follows the index as other processes change it: each search first loads what they switched in (see
`Index.refresh`), so no run has to reopen it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from citewise.context import Context
from citewise.core.resources import resources_of
from citewise.index.reading import SearchIndex, readable


async def open_index(context: Context) -> SearchIndex:
    """The index the context names (a shared store when it names one), as the run's asker may read it.

    Opened at their first use, off the event loop, from the run's resources; every search and read by id of
    the run is of the collections the asker may read (`Context.readable`, `citewise.index.reading.Readable`).

    Raises:
        DeploymentError: a served run names another index or store than the server's.
    """
    index = await resources_of(context).index(context)
    return readable(index, await context.readable())


async def in_thread(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Run blocking index work (SQLite, Chroma, the embedding model) off the event loop."""
    return await asyncio.to_thread(function, *args, **kwargs)
