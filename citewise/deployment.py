"""Deployment settings: what the server's operator decides and no client's run may change.

A served graph (`langgraph dev` / `langgraph up` with this repository's langgraph.json, which sets
`CITEWISE_SERVED=1`) takes the index directory, the Chroma URL, the shared store and the LLM cache path from
its own environment only: a run whose Context names others is refused, so that no client can point the
server at a path or a store of its choosing. The index graph reads files only under `CITEWISE_DATA_ROOT` when
one is set (and always when served), symlinks that lead out of it included. In-process use (the CLI, Python)
is not served: its Context is the caller's own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DEFAULT_INDEX_DIR = ".citewise/index"
"""Where the index lives when neither an option, CITEWISE_INDEX nor the Context says otherwise."""

SETTINGS: dict[str, tuple[str, str | None]] = {
    "index_dir": ("CITEWISE_INDEX", DEFAULT_INDEX_DIR),
    "chroma_url": ("CITEWISE_CHROMA_URL", None),
    "store": ("CITEWISE_STORE", None),
    "llm_cache": ("CITEWISE_LLM_CACHE", None),
}
"""Context fields that are deployment settings: the environment variable each comes from, and its default."""


class DeploymentError(ValueError):
    """A run asked for something only the server's operator may decide."""


def served() -> bool:
    """True inside a LangGraph server started from this repository's langgraph.json."""
    return os.environ.get("CITEWISE_SERVED", "").strip().lower() in {"1", "true", "yes"}


def check_settings(context: Any) -> None:
    """Refuse a served run whose Context sets a deployment setting other than the server's own.

    Raises:
        DeploymentError: naming the setting and the environment variable the operator sets instead.
    """
    if not served():
        return
    for name, (variable, default) in SETTINGS.items():
        configured = os.environ.get(variable) or default
        if getattr(context, name) != configured:
            raise DeploymentError(
                f"{name} is a server setting, not a per-run one: this server takes it from {variable}; "
                f"leave {name} out of the run's context"
            )


def data_root() -> Path | None:
    """The folder the index graph may read from (`CITEWISE_DATA_ROOT`), resolved; None when unset."""
    value = os.environ.get("CITEWISE_DATA_ROOT")
    return Path(value).expanduser().resolve() if value else None


def allowed_paths(paths: list[str]) -> list[Path]:
    """The paths the index graph may read, relative ones taken from the data root.

    Without a data root, outside a server, every path is allowed as given.

    Raises:
        DeploymentError: the server has no data root, or a path (after following symlinks) leaves it.
    """
    root = data_root()
    if root is None:
        if served():
            raise DeploymentError(
                "this server reads no files: its operator sets CITEWISE_DATA_ROOT to the folder clients may "
                "ingest from"
            )
        return [Path(p) for p in paths]
    resolved = [(p, (root / p).resolve()) for p in paths]  # an absolute p replaces the root
    outside = [p for p, real in resolved if not real.is_relative_to(root)]
    if outside:
        raise DeploymentError(
            f"outside the data root {root} (CITEWISE_DATA_ROOT), nothing was read: " + ", ".join(outside)
        )
    return [real for _, real in resolved]


def escapes_root(path: Path) -> bool:
    """True when a file found inside an allowed folder leads out of the data root (a symlink)."""
    root = data_root()
    return root is not None and not path.resolve().is_relative_to(root)
