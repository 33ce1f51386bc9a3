"""`citewise show DOC`: how a document was read (a file read afresh, or a stored document by title)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Annotated

import typer

from citewise.app.console import fail
from citewise.app.options import DEFAULT_INDEX, AsOption, IndexOption, JsonOption
from citewise.index.inspect import DROPPED_KINDS, Reading

SHOWN_REFERENCES = 8
"""Reference entries printed in full (their count is always given; --json has them all)."""


def show(
    document: Annotated[
        str, typer.Argument(help="A file to read (as ingest would), or part of an indexed document's title.")
    ],
    index: IndexOption = DEFAULT_INDEX,
    as_json: JsonOption = False,
    as_user: AsOption = None,
) -> None:
    """Show how a document was read: title, sections, references, and what was left out and why.

    A path is read afresh, with nothing stored; anything else is looked up among the indexed documents'
    titles and files. Check a PDF this way before trusting answers from it (docs/usage.md).
    """
    from citewise.index.document import LoadError
    from citewise.index.inspect import describe_file

    path = Path(document)
    if path.exists():
        try:
            readings = describe_file(path)
        except LoadError as error:
            raise fail(f"{path}: {error}") from error
    else:
        from citewise.app.users_cli import collections_as

        readings = _stored(document, index, collections_as(as_user, index, None))
    if as_json:
        typer.echo(json.dumps([r.as_dict() for r in readings], indent=2, ensure_ascii=False))
        return
    for n, reading in enumerate(readings):
        if n:
            typer.echo("")
        _print(reading)


def _stored(text: str, index: Path, collections: tuple[str, ...] | None = None) -> list[Reading]:
    """The indexed documents (of `collections`, None: any) whose title or file holds `text`, as stored."""
    from citewise.core.resources import stored_documents
    from citewise.index.inspect import describe_stored

    found = stored_documents(index, text, collections)
    if found is None:
        raise fail(f"{text!r} is no file, and there is no index at {index} to look it up in")
    if not found:
        raise fail(f"no file {text!r}, and no indexed document's title or file contains it", code=1)
    return [describe_stored(record, paragraphs, bibliography) for record, paragraphs, bibliography in found]


def _print(reading: Reading) -> None:
    pages = f", {reading.pages} page{'s' * (reading.pages != 1)}" if reading.pages else ""
    typer.echo(f"{reading.title}")
    doc_id = f"  id {reading.doc_id}" if reading.doc_id else ""
    typer.echo(f"  {reading.source} ({reading.kind}{pages}){doc_id}")
    typer.echo(f"sections ({len(reading.sections)}; {reading.paragraphs} paragraphs):")
    shown: list[str] = []
    for section in reading.sections:
        parts = section.path.split(" > ") if section.path else ["(no section)"]
        same = next((n for n, (a, b) in enumerate(zip(shown, parts, strict=False)) if a != b), len(shown))
        for depth in range(min(same, len(parts) - 1), len(parts) - 1):  # a heading with no text of its own
            typer.echo("  " * (depth + 1) + parts[depth])
        typer.echo(f"{'  ' * len(parts)}{parts[-1]}  [{section.paragraphs}]")
        shown = parts
    typer.echo(f"references ({len(reading.references)}):")
    for key, text in reading.references[:SHOWN_REFERENCES]:
        typer.echo("  " + textwrap.shorten(f"[{key}] {text}", 106, placeholder=" ..."))
    if len(reading.references) > SHOWN_REFERENCES:
        typer.echo(f"  ... {len(reading.references) - SHOWN_REFERENCES} more (--json lists them all)")
    if reading.tables:
        typer.echo(f"tables ({len(reading.tables)}):")
        for table in reading.tables:
            shape = f"{table.rows} rows x {len(table.header)} columns"
            name = table.caption or " | ".join(table.header)
            typer.echo("  " + textwrap.shorten(f"{name} ({shape})", 104, placeholder=" ..."))
    for kind, label in DROPPED_KINDS.items():
        count = reading.dropped_counts.get(kind, 0)
        if not count:
            continue
        typer.echo(f"left out as {label}: {count}")
        for text in reading.dropped.get(kind, []):
            typer.echo("  - " + textwrap.shorten(text, 104, placeholder=" ..."))
    if reading.ocr_pages:
        typer.echo(f"pages read by OCR (no text layer): {', '.join(map(str, reading.ocr_pages))}")
    if reading.pages_without_text:
        typer.echo(f"pages with no text: {', '.join(map(str, reading.pages_without_text))}")
    typer.echo("warnings: " + ("none" if not reading.warnings else ""))
    for warning in reading.warnings:
        typer.echo(f"  ! {warning}")
