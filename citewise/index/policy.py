"""What an ingest does with one file, decided once for both tiers (the local index and the shared store).

The stores only store what `decide` says. A file is read and hashed; bytes recorded under its name before
are unchanged; bytes recorded under another name that still exists are a copy (its documents would be stored
twice); a file no loader reads, or whose loader fails (a bug in it fails that file, never the whole ingest),
is skipped with the reason. Of the documents it holds, one over MAX_DOCUMENT_CHARS is skipped (hours of
embedding), and one another file holds already is a duplicate of that file. What is left is stored;
documents stored from this file before and not in it now are the store's to remove.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from citewise.index.document import Document, LoadError
from citewise.index.loaders import load_path

logger = logging.getLogger(__name__)

MAX_DOCUMENT_CHARS = 5_000_000
"""The most text one document may hold (about 2,500 pages); a longer one is skipped with the reason."""
UNCHANGED = "unchanged since it was ingested"
"""Why a file whose bytes are those ingested before is not read again."""
NOTHING_WITHIN_LIMIT = "no document within the size limit"


class Recorded(Protocol):
    """What a store knows of files and documents, as the policy asks it (both tiers answer it)."""

    def file_sha(self, path: str) -> str | None:
        """The content hash recorded when `path` was last ingested, or None."""
        ...

    def file_with_sha(self, sha256: str, other_than: str) -> str | None:
        """Another file recorded with this content hash, or None."""
        ...

    def document_files(self, ids: Iterable[str]) -> dict[str, str]:
        """The file each of the given stored document ids came from."""
        ...


@dataclass
class Decision:
    """What to do with one file."""

    name: str
    """The file's resolved path, as the store records it."""
    action: Literal["store", "unchanged", "skip"]
    reason: str = ""
    """Why the whole file is skipped (action "skip")."""
    sha: str = ""
    size: int = 0
    documents: dict[str, Document] = field(default_factory=dict)
    """Every document the file holds now, within the size limit, by id (what it keeps in the store)."""
    fresh: list[Document] = field(default_factory=list)
    """Those no other file holds: the ones to store."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """Documents left out, each with where it is and why."""


def decide(file: Path, store: Recorded) -> Decision:
    """Read one file and decide what the store does with it (nothing is written here)."""
    name = str(file.resolve())
    try:
        data = file.read_bytes()
    except OSError as error:
        return Decision(name, "skip", f"unreadable: {error.strerror or error}")
    sha = hashlib.sha256(data).hexdigest()
    if store.file_sha(name) == sha:
        return Decision(name, "unchanged", UNCHANGED, sha, len(data))
    twin = store.file_with_sha(sha, name)
    if twin is not None and Path(twin).exists():
        return Decision(name, "skip", f"the same bytes as {twin}, already in the index", sha, len(data))
    try:
        loaded = load_path(file)
    except LoadError as error:
        return Decision(name, "skip", str(error), sha, len(data))
    except Exception as error:  # noqa: BLE001 - a loader's bug fails its file, not the ingest
        logger.exception("%s: the loader failed", file)
        return Decision(name, "skip", f"the loader failed: {type(error).__name__}: {error}", sha, len(data))
    decision = Decision(name, "store", "", sha, len(data))
    for document in loaded:
        size = sum(len(paragraph.text) for paragraph in document.paragraphs)
        if size > MAX_DOCUMENT_CHARS:
            reason = f"{size:,} characters of text in one document, over {MAX_DOCUMENT_CHARS:,}: split it"
            decision.skipped.append((where(file, document), reason))
            continue
        decision.documents.setdefault(document.id, document)
    if not decision.documents:
        decision.action, decision.reason = "skip", NOTHING_WITHIN_LIMIT
        return decision
    owners = store.document_files(decision.documents)
    for doc_id, document in decision.documents.items():
        owner = owners.get(doc_id)
        if owner is None:
            decision.fresh.append(document)
        elif owner != name:
            decision.skipped.append((where(file, document), f"duplicate of {owner}"))
    return decision


def where(file: Path | str, document: Document) -> str:
    """A document's place for a report: its file, and its key or title within it."""
    return f"{file}#{document.key or document.title}"
