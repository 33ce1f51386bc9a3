"""Indexing and hybrid retrieval: loaders, semantic chunking, ranking, and the index in two tiers.

What both tiers share lives here; `local/` is one folder's index (SQLite, Chroma, bm25s), `shared/` one
PostgreSQL database's, and neither imports the other. Both satisfy the ports `reading.SearchIndex` and
`writer.IndexWriter`; `citewise.core.resources` opens the one a run names. The names below load on first
use (PEP 562), so importing a light submodule (`citewise.index.citations`) does not pull in Chroma and the
embedding model; `Index` is the local tier's, for scripts (docs/usage.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from citewise.index.chunking import ChunkingConfig
    from citewise.index.document import BibEntry, Document, LoadError, Paragraph
    from citewise.index.local.store import Index
    from citewise.index.records import Hit, IndexOpenError, IndexStats, IngestReport

_HOMES = {
    "ChunkingConfig": "citewise.index.chunking",
    "BibEntry": "citewise.index.document",
    "Document": "citewise.index.document",
    "LoadError": "citewise.index.document",
    "Paragraph": "citewise.index.document",
    "Hit": "citewise.index.records",
    "Index": "citewise.index.local.store",
    "IndexOpenError": "citewise.index.records",
    "IndexStats": "citewise.index.records",
    "IngestReport": "citewise.index.records",
}

__all__ = [
    "BibEntry",
    "ChunkingConfig",
    "Document",
    "Hit",
    "Index",
    "IndexOpenError",
    "IndexStats",
    "IngestReport",
    "LoadError",
    "Paragraph",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'citewise.index' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value
