"""JSON Lines a person hands in (questions to evaluate, rated examples): each line an object, or an error.

The error type is the caller's (what its command reports), and every message names the file and the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def json_objects(
    path: str | Path, error: type[Exception], name: str = ""
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line of a JSON Lines file.

    Args:
        path: The file.
        error: What to raise (the caller's input error).
        name: How messages name the file ("example file x.jsonl"); the path by default. A line is named
            after it as compilers do ("q.jsonl:2: not valid JSON").

    Raises:
        error: the file is missing or unreadable, or a line is not valid JSON or not an object.
    """
    where = name or str(path)
    for number, line in numbered_lines(path, error, where):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as bad:
            raise error(f"{where}:{number}: not valid JSON ({bad.msg})") from bad
        if not isinstance(row, dict):
            raise error(f"{where}:{number}: expected a JSON object, got {type(row).__name__}")
        yield number, row


def numbered_lines(path: str | Path, error: type[Exception], name: str = "") -> list[tuple[int, str]]:
    """(line number, line) of a text file a person handed in; `error` when it is missing or unreadable."""
    where = name or str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as missing:
        raise error(f"{where}: no such file") from missing
    except (OSError, UnicodeDecodeError) as unreadable:
        raise error(f"{where}: cannot be read ({unreadable})") from unreadable
    return list(enumerate(text.splitlines(), start=1))
