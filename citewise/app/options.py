"""The command line's shared options: what several commands take is declared once, here.

Typer reads each option's name, help and default from the `Annotated` type a command's parameter carries.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from citewise.app.terminal import AnswerMode
from citewise.deployment import DEFAULT_INDEX_DIR

DEFAULT_INDEX = Path(os.environ.get("CITEWISE_INDEX", DEFAULT_INDEX_DIR))

IndexOption = Annotated[
    Path, typer.Option("--index", help="Index directory (env CITEWISE_INDEX).", show_default=True)
]
ChromaOption = Annotated[
    str | None,
    typer.Option(
        "--chroma-url", envvar="CITEWISE_CHROMA_URL", help="Use a Chroma server, e.g. http://127.0.0.1:8000."
    ),
]


StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        envvar="CITEWISE_STORE",
        help="A postgresql:// URL: the shared store (several servers answer from it) instead of --index.",
    ),
]


class Mode(StrEnum):
    """Retrieval modes."""

    hybrid = "hybrid"
    bm25 = "bm25"
    dense = "dense"


class FusionKind(StrEnum):
    """How hybrid scores are fused."""

    minmax = "minmax"
    rrf = "rrf"


DocsOption = Annotated[
    list[Path] | None,
    typer.Option("--docs", help="Ingest these files first (skipped when unchanged).", metavar="PATH"),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def host_option(what: str) -> typer.models.OptionInfo:
    """The --host option of a server (`serve`, `api`) that serves `what`."""
    return typer.Option(help=f"Address to bind; 127.0.0.1 keeps {what} on this machine.")


def port_option(what: str) -> typer.models.OptionInfo:
    """The --port option of a server that serves `what`."""
    return typer.Option(min=1, max=65535, help=f"Port of {what}.")


ModeOption = Annotated[
    AnswerMode,
    typer.Option(help="answer (a cited answer), report (sections) or auto (decided per question)."),
]
ModelOption = Annotated[
    str | None, typer.Option(envvar="CITEWISE_MODEL", help="Writer as provider/model; none: local mode.")
]
JudgeOption = Annotated[
    str | None,
    typer.Option(envvar="CITEWISE_JUDGE_MODEL", help="Judge as provider/model (default: --model)."),
]
ThreadsOption = Annotated[
    str | None,
    typer.Option(
        "--threads",
        envvar="CITEWISE_THREADS",
        help="Thread store: a SQLite file (default: .citewise/threads.sqlite) or a postgresql:// URL.",
    ),
]
KOption = Annotated[int, typer.Option("--k", "-k", min=1, max=200, help="Chunks retrieved per query.")]
ProfileOption = Annotated[
    str,
    typer.Option(
        envvar="CITEWISE_PROFILE",
        help="How much the model is asked: full, lean (about six requests an answer, for small or slow "
        "local models) or auto (lean for a model served on this machine or network).",
    ),
]
BudgetOption = Annotated[
    float | None,
    typer.Option(
        "--budget-seconds",
        min=1.0,
        help="Time budget of one answer: after it the stages left use their local fallback, and say so.",
    ),
]
TrustedProxyOption = Annotated[
    list[str] | None,
    typer.Option(
        "--trusted-proxy",
        metavar="ADDR",
        help="A reverse proxy's address or network (repeatable): its --user-header is believed (single "
        "sign-on); from any other address the header is ignored.",
    ),
]
LoginOption = Annotated[
    bool,
    typer.Option(
        "--login",
        help="Ask every request for a user (a token, or a trusted proxy's header) on loopback too: a machine "
        "several people use.",
    ),
]
UserHeaderOption = Annotated[
    str | None,
    typer.Option(
        "--user-header",
        metavar="NAME",
        help="The header a trusted proxy names its logged-in user in, e.g. X-Forwarded-User.",
    ),
]

AsOption = Annotated[
    str | None,
    typer.Option(
        "--as",
        metavar="USER",
        help="Read only what USER may read (their grants); by default the command line reads every "
        "collection, as the administrator.",
    ),
]
