"""`citewise outlines`: show the outline library in use, or learn one from rated example answers (SynthRAG).

Registered on the main CLI as `app.add_typer(outlines_app, name="outlines")`.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from citewise.core.outlines import OutlineType
    from citewise.models import LLM

DEFAULT_LIBRARY = Path(__file__).parent.parent / "data" / "outlines.json"
"""The shipped library (citewise.core.outlines.DEFAULT_LIBRARY; named here so --help loads no model code)."""

LIBRARY_ENV = "CITEWISE_OUTLINE_LIBRARY"
"""The environment variable naming the library to use instead of the shipped one."""
DEFAULT_OUT = Path(".citewise/outlines.json")
"""Where `outlines learn` writes the learned library unless told otherwise."""

outlines_app = typer.Typer(
    help="Outline instructions per question type (SynthRAG).", no_args_is_help=True, rich_markup_mode=None
)


def _fail(message: str, code: int = 2) -> typer.Exit:
    """Print `error: message` in red on stderr; the caller raises the returned Exit."""
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    return typer.Exit(code)


def library_in_use(library: Path | None = None) -> Path:
    """The library file: the one given, else $CITEWISE_OUTLINE_LIBRARY, else the shipped one."""
    if library is not None:
        return library
    configured = os.environ.get(LIBRARY_ENV)
    return Path(configured) if configured else DEFAULT_LIBRARY


@outlines_app.command("list")
def list_types(
    library: Annotated[
        Path | None,
        typer.Option("--library", help=f"Library file (default: ${LIBRARY_ENV}, else the shipped one)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the library as JSON.")] = False,
) -> None:
    """Show the question types of the outline library in use and their outline instructions."""
    from citewise.core import outlines
    from citewise.core.outlines import OutlineLibraryError

    path = library_in_use(library)
    try:
        types = outlines.load_library(path)
    except OutlineLibraryError as error:
        raise _fail(str(error)) from error
    if as_json:
        typer.echo(json.dumps(outlines.as_library(types), indent=2, ensure_ascii=False))
        return
    typer.secho(f"Outline library {path} ({len(types)} types):", bold=True)
    typer.echo()
    typer.echo(outlines.describe(types))


@outlines_app.command("learn")
def learn_types(
    examples: Annotated[
        Path, typer.Option("--examples", help="Rated example answers: JSONL of question, answer, rating.")
    ],
    out: Annotated[Path, typer.Option("--out", help="Where to write the learned library.")] = DEFAULT_OUT,
    k: Annotated[
        int | None, typer.Option("--k", min=1, help="Question types to learn (default: about sqrt(n/2)).")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            envvar="CITEWISE_MODEL",
            help="Writer as provider/model; none: instructions from the answers' structure alone.",
        ),
    ] = None,
) -> None:
    """Learn an outline library from rated example answers (SynthRAG) and write it."""
    from citewise.core import outlines
    from citewise.index.embeddings import load_embedder

    try:
        rated = outlines.read_examples(examples)
        types = asyncio.run(outlines.learn(rated, load_embedder(), llm=_writer(model), k=k))
        saved = outlines.save_library(types, out)
    except (ValueError, OSError) as error:  # OutlineLibraryError and ModelSetupError are ValueErrors
        raise _fail(str(error)) from error
    _show_learned(types, saved, model)


def _writer(model: str | None) -> LLM | None:
    """The writing LLM for `model`, or None without one (citewise.models loads only when needed)."""
    if not model:
        return None
    from citewise.context import Context
    from citewise.models import models_for

    _judge, writer = models_for(Context(model=model))
    return writer


def _show_learned(types: list[OutlineType], saved: Path, model: str | None) -> None:
    """Print the learned types, where they were written, and how to use them."""
    how = f"with {model}" if model else "from the answers' structure (no model)"
    typer.secho(f"Learned {len(types)} question types {how}:", bold=True)
    from citewise.core import outlines

    typer.echo()
    typer.echo(outlines.describe(types))
    typer.echo()
    typer.secho(f"Wrote {saved}", fg=typer.colors.GREEN)
    typer.echo(f"Use it with Context(outline_library={str(saved)!r}) or {LIBRARY_ENV}={saved}.")
