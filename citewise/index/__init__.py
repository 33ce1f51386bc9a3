"""Indexing and hybrid retrieval: loaders, semantic chunking, the three stores, and search."""

from citewise.index.chunking import ChunkingConfig
from citewise.index.document import BibEntry, Document, LoadError, Paragraph
from citewise.index.store import Hit, Index, IndexOpenError, IndexStats, IngestReport

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
