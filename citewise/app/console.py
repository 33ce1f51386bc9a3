"""What the commands print besides answers: their errors (with the exit code) and ingest summaries."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from citewise.index import IngestReport
    from citewise.index.records import IndexStats
    from citewise.index.writer import IndexWriter
    from citewise.state import RunError


def fail(message: str, code: int = 2) -> typer.Exit:
    """Say `message` as the command's error on stderr; the Exit (code 2: bad input) for its caller."""
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    return typer.Exit(code)


def run_failed(problem: RunError) -> typer.Exit:
    """The one-line cause and what to do of a run that could not answer; exit 2 for settings, else 1."""
    code = 1 if problem["kind"] in ("model provider", "unexpected") else 2
    typer.echo(f"citewise: {problem['message']}\n{problem['hint']}", err=True)
    return typer.Exit(code)


SKIPPED_SHOWN = 20
"""Skipped files listed one per line; beyond this, a count (a folder of photos need not fill the screen)."""


def print_report(report: IngestReport, index: IndexWriter, where: str, verb: str) -> None:
    """A local index's ingest or removal report, and what the index (`where`) holds after it."""
    print_summary(report, index.stats(), where, "chroma", verb)


def print_summary(report: IngestReport, stats: IndexStats, where: str, vectors: str, verb: str) -> None:
    """An ingest's or a removal's report and what the index (or store) holds after it."""
    for path, reason in report.skipped[:SKIPPED_SHOWN]:
        typer.secho(f"skipped {path}: {reason}", err=True, fg=typer.colors.YELLOW)
    if len(report.skipped) > SKIPPED_SHOWN:
        more = len(report.skipped) - SKIPPED_SHOWN
        typer.secho(f"... and {more} more skipped files", err=True, fg=typer.colors.YELLOW)
    typer.echo(
        f"{verb}: {report.files} files ({report.ingested_files} ingested, "
        f"{report.unchanged_files} unchanged, "
        f"{len(report.skipped)} skipped); documents +{report.documents_added} -{report.documents_removed}; "
        f"chunks +{report.chunks_added} -{report.chunks_removed}; {report.seconds:.1f}s"
    )
    typer.echo(
        f"{where}: {stats.documents} documents, {stats.paragraphs} paragraphs, "
        f"{stats.chunks} chunks ({vectors} {stats.chunk_vectors}, bm25 {stats.chunks_lexical})"
    )
    if report.documents_tagged:
        typer.echo(f"documents tagged: {report.documents_tagged}")
