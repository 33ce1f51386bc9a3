"""The outline library: the file (read, checked, written), the question types, and the nearest type."""

from __future__ import annotations

import json
import logging
import os
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from citewise.index.embeddings import Embedder


logger = logging.getLogger(__name__)

DATA_DIR = Path(__file__).parents[2] / "data"
DEFAULT_LIBRARY = DATA_DIR / "outlines.json"
"""The shipped, editable outline library."""
EXAMPLE_ANSWERS = DATA_DIR / "example_answers.jsonl"
"""A small shipped set of rated example answers to demonstrate `learn`."""
LIBRARY_VERSION = 1
"""The library format this module reads and writes."""


class OutlineLibraryError(ValueError):
    """An outline library or example file that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class OutlineType:
    """One question type: what it covers, typical phrasings, and how to outline a report for it."""

    name: str
    description: str
    examples: tuple[str, ...]
    instruction: str

    def as_dict(self) -> dict[str, Any]:
        """The type as stored in the library file."""
        return {
            "name": self.name,
            "description": self.description,
            "examples": list(self.examples),
            "instruction": self.instruction,
        }


# the library file -----------------------------------------------------------------------------------------


def load_library(path: str | Path | None = None) -> list[OutlineType]:
    """The outline types of a library file (None: the shipped one).

    Raises:
        OutlineLibraryError: The file is missing or not valid JSON, holds no types, a type lacks its name,
            instruction or examples, or two types share a name.
    """
    source = Path(path) if path is not None else DEFAULT_LIBRARY
    data = _read_json(source)
    if not isinstance(data, dict) or not isinstance(data.get("types"), list) or not data["types"]:
        raise OutlineLibraryError(
            f'outline library {source} has no types: expected {{"version": 1, "types": [...]}} '
            "with at least one type"
        )
    version = data.get("version", LIBRARY_VERSION)
    if version != LIBRARY_VERSION:
        raise OutlineLibraryError(
            f"outline library {source} has version {version!r}; citewise reads version {LIBRARY_VERSION}"
        )
    types = [_parse_type(source, number, raw) for number, raw in enumerate(data["types"], 1)]
    _check_unique(source, types)
    return types


def save_library(types: Sequence[OutlineType], path: str | Path) -> Path:
    """Write `types` in the library format, atomically (a temporary file, then os.replace); returns the path.

    Raises:
        OutlineLibraryError: No types, or two types share a name (the file could not be loaded back).
    """
    target = Path(path)
    if not types:
        raise OutlineLibraryError(f"refusing to write outline library {target} without types")
    _check_unique(target, list(types))
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(as_library(types), indent=2, ensure_ascii=False) + "\n"
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def as_library(types: Sequence[OutlineType]) -> dict[str, Any]:
    """The JSON object of a library file holding `types`."""
    return {"version": LIBRARY_VERSION, "types": [one.as_dict() for one in types]}


def _read_json(source: Path) -> Any:
    """The parsed JSON of a library file, or an error naming the file and the problem."""
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError as error:
        raise OutlineLibraryError(f"outline library {source} does not exist") from error
    except (OSError, UnicodeDecodeError) as error:
        raise OutlineLibraryError(f"cannot read outline library {source}: {error}") from error
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise OutlineLibraryError(
            f"outline library {source} is not valid JSON: {error.msg} "
            f"(line {error.lineno}, column {error.colno})"
        ) from error


def _parse_type(source: Path, number: int, raw: Any) -> OutlineType:
    """One library entry as an OutlineType, or an error naming the entry and what it lacks."""
    where = f"outline library {source}: type {number}"
    if not isinstance(raw, dict):
        raise OutlineLibraryError(f"{where} is not a JSON object")
    name = text_of(raw.get("name"))
    if not name:
        raise OutlineLibraryError(f"{where} has no name")
    where = f"{where} ({name})"
    if not text_of(raw.get("instruction")):
        raise OutlineLibraryError(f"{where} has no instruction")
    examples = raw.get("examples")
    if not isinstance(examples, list) or not examples:
        raise OutlineLibraryError(f"{where} has no examples (a list of typical questions)")
    if not all(text_of(example) for example in examples):
        raise OutlineLibraryError(f"{where} has an example that is not a non-empty string")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise OutlineLibraryError(f"{where} has a description that is not a string")
    return OutlineType(
        name=name,
        description=description.strip(),
        examples=tuple(example.strip() for example in examples),
        instruction=raw["instruction"].strip(),
    )


def text_of(value: Any) -> str:
    """The stripped string, or "" for anything that is not a string."""
    return value.strip() if isinstance(value, str) else ""


def _check_unique(source: Path, types: list[OutlineType]) -> None:
    """Raise when two types share a name."""
    first: dict[str, int] = {}
    for number, one in enumerate(types, 1):
        if one.name in first:
            raise OutlineLibraryError(
                f"outline library {source}: duplicate type name {one.name!r} "
                f"(types {first[one.name]} and {number})"
            )
        first[one.name] = number


# choosing a type --------------------------------------------------------------------------------------------


def nearest_type(
    embedder: Embedder, question: str, library: list[OutlineType], centroids: np.ndarray | None = None
) -> tuple[OutlineType, float]:
    """The type whose example questions are closest to `question`, and its cosine similarity.

    `centroids` are the library's `type_centroids` when the caller keeps them (citewise.core.resources);
    without them they are computed here.

    Raises:
        OutlineLibraryError: The library is empty.
    """
    if not library:
        raise OutlineLibraryError("the outline library has no types to choose from")
    if centroids is None:
        centroids = type_centroids(embedder, library)
    similarities = centroids @ embedder.embed([question])[0]
    best = int(np.argmax(similarities))
    return library[best], float(similarities[best])


def type_centroids(embedder: Embedder, library: Sequence[OutlineType]) -> np.ndarray:
    """One normalised mean example vector per type (every example embedded once)."""
    return _centroids(embedder, library)


def _centroids(embedder: Embedder, library: Sequence[OutlineType]) -> np.ndarray:
    """Embed every example once and average each type's rows into a unit vector."""
    vectors = embedder.embed([example for one in library for example in one.examples])
    bounds = np.cumsum([0, *(len(one.examples) for one in library)])
    means = np.stack(
        [vectors[start:end].mean(axis=0) for start, end in zip(bounds, bounds[1:], strict=False)]
    )
    return _normalise(means)


def _normalise(rows: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms == 0, 1.0, norms)).astype(np.float32)


# showing a library ------------------------------------------------------------------------------------------


def describe(types: Sequence[OutlineType], width: int = 100) -> str:
    """A readable listing: each type's name, example count, description and wrapped instruction."""
    entries = []
    for one in types:
        header = f"{one.name} ({count_of(len(one.examples), 'example')}): {one.description}"
        header = textwrap.fill(header, width, subsequent_indent="    ")
        body = textwrap.fill(one.instruction, width, initial_indent="    ", subsequent_indent="    ")
        entries.append(f"{header}\n{body}")
    return "\n\n".join(entries)


def count_of(number: int, noun: str) -> str:
    """A count with its noun, plural unless one: 1 example, 3 examples."""
    return f"{number} {noun}{'' if number == 1 else 's'}"
