"""The command line: ingest, remove, search, ask, chat, serve, api, eval, stats, show, outlines (`--help`).

Typer (on Click) gives typed options, `--help` and usage errors with exit code 2 for free; tqdm draws the
progress bars on stderr (and stays quiet when stderr is not a terminal).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import logging
import os
import shutil
import signal
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from citewise.app import store_commands as shared
from citewise.app.console import fail, print_report, run_failed
from citewise.app.options import (
    DEFAULT_INDEX,
    AsOption,
    BudgetOption,
    ChromaOption,
    DocsOption,
    FusionKind,
    IndexOption,
    JsonOption,
    JudgeOption,
    KOption,
    LoginOption,
    Mode,
    ModelOption,
    ModeOption,
    ProfileOption,
    StoreOption,
    ThreadsOption,
    TrustedProxyOption,
    UserHeaderOption,
    host_option,
    port_option,
)
from citewise.app.terminal import (
    OUTPUT_KEYS,
    ROUTES,
    AnswerMode,
    report_payload,
    show_answer,
    with_source_keys,
)
from citewise.core.resources import Resources, open_folder

if TYPE_CHECKING:  # the stores and the embedding model load only when a command needs them: --help is fast
    from citewise.app.access import Gate
    from citewise.context import Context
    from citewise.index import ChunkingConfig, IngestReport
    from citewise.index.reading import SearchIndex
    from citewise.index.writer import WritableIndex

app = typer.Typer(
    name="citewise",
    help="Trustworthy, cited answers from your own documents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: Typer's rich panels print "<bool>" beside every flag and --help
)


def _open(
    index: Path,
    chroma_url: str | None,
    chunking: ChunkingConfig | None = None,
    create: bool = True,
    resources: Resources | None = None,
) -> WritableIndex:
    """The local index in `index` (`--index`), to search and write; its errors said in one line."""
    from citewise.index import IndexOpenError

    embedders = resources.embedder if resources is not None else None
    try:
        return open_folder(
            index, chroma_url=chroma_url, chunking=chunking, create=create, embedders=embedders
        )
    except (IndexOpenError, ValueError) as error:
        raise fail(str(error)) from error


def ingest_paths(
    index: WritableIndex,
    where: Path,
    paths: list[Path],
    quiet: bool = False,
    tags: Sequence[str] = (),
    collection: str | None = None,
) -> IngestReport:
    """Ingest with progress bars on stderr and the summary printed; used by `ingest` and `--docs`."""
    from tqdm import tqdm

    from citewise.index import IndexOpenError

    progress = None if quiet else (lambda **kw: tqdm(file=sys.stderr, disable=None, leave=False, **kw))
    interrupted = threading.Event()

    def on_interrupt(signum: int, frame: object) -> None:
        interrupted.set()  # remembered, in case a library catches the KeyboardInterrupt raised here
        raise KeyboardInterrupt

    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_interrupt) if in_main else None
    try:
        report = index.ingest(
            paths, progress=progress, stop=interrupted.is_set, tags=tags, collection=collection
        )
    except KeyboardInterrupt:
        typer.secho(
            "interrupted: documents committed so far are kept; run the same command again to finish",
            err=True,
            fg=typer.colors.YELLOW,
        )
        raise typer.Exit(130) from None
    except (IndexOpenError, ValueError) as error:
        raise fail(str(error)) from error
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if interrupted.is_set():  # the interrupt came after the last batch: say so all the same
        typer.secho("interrupted after the last batch: everything was committed", err=True)
        raise typer.Exit(130)
    if not quiet:
        try:
            print_report(report, index, f"index {where.expanduser()}", "ingest")
        except IndexOpenError as error:  # Chroma, first opened for its count, is another model's
            raise fail(str(error)) from error
    return report


def _first_missing(path: Path) -> Path | None:
    """The outermost folder of `path` that does not exist yet (None: it exists)."""
    missing = None
    while not path.exists():
        missing, path = path, path.parent
    return missing


def _searchable(
    index: Path,
    chroma_url: str | None,
    docs: list[Path] | None,
    quiet: bool,
    resources: Resources | None = None,
) -> WritableIndex:
    """The index, after ingesting `docs` (a no-op for unchanged files); an empty index is an error.

    It embeds with the embedder `resources` keep, when given. An index folder this call made is removed again
    when nothing could be ingested into it.
    """
    made = _first_missing(index.expanduser().absolute()) if docs else None
    if docs and not any(path.expanduser().exists() for path in docs):  # refuse before a folder is made
        for path in docs:
            typer.secho(f"skipped {path}: no such file or directory", err=True, fg=typer.colors.YELLOW)
        raise fail("nothing was ingested", code=1)
    opened = _open(index, chroma_url, create=bool(docs), resources=resources)
    if docs:
        audit_change(index, None, "ingest", docs, ingest_paths(opened, index, docs, quiet=quiet))
    if opened.empty():
        opened.close()
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise fail(f"index {index.expanduser()} is empty: add documents with `citewise ingest PATH`", code=1)
    return opened


def _run_resources(
    index: Path,
    chroma_url: str | None,
    store: str | None,
    docs: list[Path] | None = None,
    quiet: bool = True,
    serving: bool = False,
) -> Resources:
    """A command's Resources with its index open and its embedding model loading meanwhile.

    The index is the shared store's, or the local index checked (and `docs` ingested into it first). A
    server (`serving`) on a shared store makes the store if it is not there and starts on an empty one.
    """
    resources = Resources()
    if store:
        opened = shared.open_served(store, resources) if serving else shared.open_shared(store, resources)
        _load_model_meanwhile(opened)
    else:
        opened = _searchable(index, chroma_url, docs, quiet=quiet, resources=resources)
        _load_model_meanwhile(opened)
        opened.close()
    return resources


def _check_models(model: str | None, judge: str | None) -> None:
    """A wrong model name, key or base URL said now, in a second, before the index and embedding model load.

    The options, else CITEWISE_MODEL and CITEWISE_JUDGE_MODEL, as the run's Context reads them.
    """
    from citewise.models.preflight import check_models

    try:
        check_models(
            [model or os.environ.get("CITEWISE_MODEL"), judge or os.environ.get("CITEWISE_JUDGE_MODEL")]
        )
    except Exception as error:  # said as a run says it (kind, cause, what to do); exit 2 for a setting
        from citewise.nodes.failed import explain

        raise run_failed(explain(error, "start")) from error


def _load_model_meanwhile(index: SearchIndex) -> None:
    """Load the index's embedding model in a thread while the graph's modules import (0.2 s of a cold ask).

    The index was opened with the run's resources, whose embedder it is: the run's index, opened through the
    same resources, finds it loaded.
    """
    # not a daemon: a command that fails meanwhile exits after the load, not in it (ONNX Runtime's threads,
    # torn down mid-load at exit, abort the process: "terminate called without an active exception")
    threading.Thread(target=index.embedder.embed, args=(["citewise"],)).start()


def audit_change(
    index: Path,
    store: str | None,
    action: str,
    paths: Sequence[Path],
    report: IngestReport | None = None,
    collection: str | None = None,
    doc_ids: Sequence[str] = (),
) -> None:
    """Log an ingest or removal from the command line (the local user's) in the index's audit log.

    A log that cannot be written is said on stderr; the change itself stands. On the shared tier the
    outcome is the workers' (`requeue` shows it): the paths are logged.
    """
    from citewise.app.access import LOCAL_USER, AccessError, change_detail, open_access

    if report is not None and not (report.changed or report.documents_tagged):
        return  # nothing changed (unchanged files, or nothing could be read): no index folder is made for it
    detail = change_detail(paths, "cli", None if report is None else report.__dict__, collection)
    if doc_ids:
        detail["doc_ids"] = list(doc_ids)
    try:
        access = open_access(index, store)
        try:
            access.record(action, LOCAL_USER, detail)
        finally:
            access.close()
    except AccessError as error:
        typer.secho(f"warning: not written to the audit log: {error}", err=True, fg=typer.colors.YELLOW)


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (.txt .md .html .pdf .docx .jsonl).")],
    index: IndexOption = DEFAULT_INDEX,
    chroma_url: ChromaOption = None,
    store: StoreOption = None,
    vectors: Annotated[
        str | None,
        typer.Option(
            "--vectors",
            help="With --store, where a new store keeps its vectors: pgvector (the default) or a Chroma "
            "server, chroma://host:port. An existing store keeps its own; naming another is refused.",
        ),
    ] = None,
    threshold: Annotated[
        float | None, typer.Option(help="Semantic chunking: cosine drop that starts a chunk (default: 0.8).")
    ] = None,
    max_chars: Annotated[
        int | None, typer.Option(help="Semantic chunking: largest chunk in characters (default: 500).")
    ] = None,
    min_chars: Annotated[
        int | None, typer.Option(help="Semantic chunking: a chunk grows at least to this (default: 0).")
    ] = None,
    reembed: Annotated[
        bool | None, typer.Option(help="Embed chunk texts instead of pooling sentence vectors.")
    ] = None,
    whole_paragraphs: Annotated[
        bool | None,
        typer.Option(
            help="Embed each paragraph whole for paragraph-level dense search (default: on); off pools its "
            "chunks' vectors (ingest ~1.4x faster, HotpotQA hybrid R@5 0.800 instead of 0.810)."
        ),
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option(
            "--tag",
            metavar="NAME",
            help="Tag every document of these files (repeatable; also tags unchanged files). "
            "`--trusted tag:NAME` trusts the documents carrying the tag.",
        ),
    ] = None,
    collection: Annotated[
        str | None,
        typer.Option(
            "--collection",
            metavar="NAME",
            help="Put these files' documents in collection NAME (documents stored before move there); "
            "users read the collections they are granted (`citewise users grant`). Default: new documents "
            "go to 'default', stored ones stay where they are.",
        ),
    ] = None,
    queue_only: Annotated[
        bool,
        typer.Option(
            "--queue-only",
            help="With --store: queue the files for the store's workers "
            "(python -m citewise.index.shared.pgworker) and return, ingesting none here.",
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars or summary.")] = False,
) -> None:
    """Add documents to the index (unchanged files are skipped; changed ones replace their old chunks).

    Chunking options apply to a new index; an existing one keeps the settings it was built with, and
    asking for different ones is refused.
    """
    given: dict[str, Any] = {"threshold": threshold, "max_chars": max_chars, "min_chars": min_chars}
    given |= {"vectors": None if reembed is None else ("embed" if reembed else "pooled")}
    given |= {
        "paragraph_vectors": None if whole_paragraphs is None else ("whole" if whole_paragraphs else "pooled")
    }
    given = {key: value for key, value in given.items() if value is not None}  # ChunkingConfig checks them
    if collection is not None:
        from citewise.index.records import check_collection

        try:
            check_collection(collection)
        except ValueError as error:
            raise fail(str(error)) from error
    chunking = None
    if given:
        stored = None
        if (index / "docs.sqlite3").exists():
            with _open(index, chroma_url, create=False) as existing:
                stored = existing.chunking
        from citewise.index import ChunkingConfig

        try:
            chunking = dataclasses.replace(stored or ChunkingConfig(), **given)
        except ValueError as error:
            raise fail(str(error)) from error
    if not any(path.expanduser().exists() for path in paths):  # refuse before an index folder is made
        for path in paths:
            typer.secho(f"skipped {path}: no such file or directory", err=True, fg=typer.colors.YELLOW)
        raise fail("nothing was ingested", code=1)
    if queue_only and not store:
        raise fail(
            "--queue-only queues files in a shared store's queue: give --store URL (or CITEWISE_STORE)"
        )
    if store:
        tags = [t.strip() for t in tag or [] if t.strip()]
        if queue_only and tags:
            raise fail("--tag needs the documents ingested: tag them after the workers have (ingest --tag)")
        try:
            shared.ingest_shared(
                store,
                paths,
                chunking,
                quiet,
                vectors=vectors,
                tags=tags,
                queue_only=queue_only,
                collection=collection,
            )
        finally:
            audit_change(
                index, store, "ingest.queue" if queue_only else "ingest", paths, collection=collection
            )
        return
    if vectors:
        raise fail("--vectors is for a shared store (--store); a local index takes --chroma-url")
    with _open(index, chroma_url, chunking) as opened:
        tags = [t.strip() for t in tag or [] if t.strip()]
        report = ingest_paths(opened, index, paths, quiet, tags=tags, collection=collection)
    audit_change(index, None, "ingest", paths, report, collection=collection)
    nothing_done = not report.documents_added and not report.unchanged_files and not report.documents_removed
    if report.skipped and nothing_done:
        raise fail("nothing was ingested", code=1)


@app.command()
def requeue(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Only files at or under these paths (default: every file).")
    ] = None,
    store: StoreOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary.")] = False,
) -> None:
    """Shared store: queue failed files again (and reset stuck ones' claims), then ingest them here.

    A file is recorded failed when its loader refused it, or after 3 claims that ended without an outcome
    (a worker killed in it, or an error each time); fix the file or the worker, then requeue it.
    """
    if not store:
        raise fail("requeue works on the shared store's queue: give --store URL (or CITEWISE_STORE)")
    shared.ingest_shared(store, list(paths or []), None, quiet, requeue=True, verb="requeue")


@app.command()
def remove(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Files or folders to delete from the index.")
    ] = None,
    doc: Annotated[
        list[str] | None,
        typer.Option(
            "--doc",
            help="Delete this document only (its id, as `citewise show` prints it); repeat for more. "
            "The other documents of its file stay.",
            show_default=False,
        ),
    ] = None,
    index: IndexOption = DEFAULT_INDEX,
    chroma_url: ChromaOption = None,
    store: StoreOption = None,
) -> None:
    """Delete every document that came from the given files, or the documents given by id (--doc)."""
    from citewise.index import IndexOpenError

    paths, ids = list(paths or []), list(doc or [])
    if bool(paths) == bool(ids):
        raise fail("give files or folders to remove, or --doc ID (not both)")
    if store:
        try:
            shared.remove_shared(store, paths, ids)
        finally:
            audit_change(index, store, "remove", paths, doc_ids=ids)
        return
    with _open(index, chroma_url, create=False) as opened:
        try:
            report = opened.remove_documents(ids) if ids else opened.remove(paths)
        except IndexOpenError as error:
            raise fail(str(error)) from error
        print_report(report, opened, f"index {index.expanduser()}", "remove")
    audit_change(index, None, "remove", paths, report, doc_ids=ids)
    if not report.documents_removed and not report.files:
        raise fail("nothing matched in the index", code=1)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    index: IndexOption = DEFAULT_INDEX,
    docs: DocsOption = None,
    mode: Annotated[Mode, typer.Option(help="hybrid, bm25 or dense.")] = Mode.hybrid,
    k: Annotated[int, typer.Option("--k", "-k", min=1, max=1000, help="How many hits.")] = 10,
    alpha: Annotated[float, typer.Option(min=0.0, max=1.0, help="Dense weight in hybrid fusion.")] = 0.5,
    fusion: Annotated[FusionKind, typer.Option(help="minmax (weighted) or rrf.")] = FusionKind.minmax,
    as_json: JsonOption = False,
    chroma_url: ChromaOption = None,
    store: StoreOption = None,
    as_user: AsOption = None,
) -> None:
    """Hybrid search: print the best chunks with their BM25, dense and fused scores."""
    from citewise.app.users_cli import collections_as

    if store and docs:
        raise fail("--docs ingests into a local index; with --store: `citewise ingest PATH --store URL`")
    readable = collections_as(as_user, index, store)
    options: dict[str, Any] = {"k": k, "mode": mode.value, "alpha": alpha, "fusion": fusion.value}
    if store:
        hits = shared.search_shared(store, query, collections=readable, **options)
    else:
        with _searchable(index, chroma_url, docs, quiet=as_json) as opened:
            hits = opened.search(query, collections=readable, **options)
    if as_json:
        typer.echo(
            json.dumps({"query": query, "mode": mode.value, "hits": [h.as_dict() for h in hits]}, indent=2)
        )
        return
    if not hits:
        typer.echo("no hits")
        return
    for hit in hits:
        where = hit.title + (f" > {hit.section}" if hit.section else "")
        typer.secho(
            f"{hit.rank:>3}. {hit.score:.3f}  bm25 {hit.bm25:6.2f}  dense {hit.dense:.3f}  {where[:90]}",
            bold=True,
        )
        typer.echo(textwrap.indent(textwrap.fill(hit.text, 100), "     "))


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question to answer from your documents.")],
    index: IndexOption = DEFAULT_INDEX,
    docs: DocsOption = None,
    mode: ModeOption = AnswerMode.auto,
    approve: Annotated[
        bool, typer.Option("--approve", help="Show a report's outline and take edits before writing it.")
    ] = False,
    model: ModelOption = None,
    judge_model: JudgeOption = None,
    k: KOption = 10,
    trusted: Annotated[
        list[str] | None,
        typer.Option(
            "--trusted",
            metavar="PATH_OR_GLOB",
            help="Trusted sources (a file, folder, glob, document id, or tag:NAME for documents ingested "
            "with --tag NAME; repeatable): evidence is also ranked "
            "by its agreement with what they say, and documents that contradict them are flagged.",
        ),
    ] = None,
    beta: Annotated[
        float,
        typer.Option(min=0.0, max=1.0, help="With --trusted: weight of topicality against accuracy."),
    ] = 0.5,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    export: Annotated[
        Path | None,
        typer.Option(
            "--export",
            metavar="FILE",
            help="Also write the answer to FILE: .md (numbered references), .docx, or the cited works as "
            ".bib or .ris.",
        ),
    ] = None,
    chroma_url: ChromaOption = None,
    store: StoreOption = None,
    as_user: AsOption = None,
    profile: ProfileOption = "auto",
    budget_seconds: BudgetOption = None,
) -> None:
    """Answer a question with citations, references and the evidence table, or write a cited report."""
    from citewise.app.export import ExportError, export_format, write_export
    from citewise.core.questions import BadQuestion, check_question

    try:
        question = check_question(question)
        if export is not None:
            export_format(export)  # a file name of no known format is refused before the question runs
    except (BadQuestion, ExportError) as error:
        raise fail(str(error)) from error
    if store and docs:
        raise fail("--docs ingests into a local index; with --store: `citewise ingest PATH --store URL`")
    _check_models(model, judge_model)
    from citewise.app.users_cli import collections_as

    resources = _run_resources(index, chroma_url, store, docs, quiet=as_json)
    try:
        context = run_context(
            index, chroma_url, model, judge_model, k, mode, approve_outline=approve,
            trusted=list(trusted or []), beta=beta, profile=profile,
            budget_seconds=budget_seconds, resources=resources, store=store,
            collections=collections_as(as_user, index, store),
        )  # fmt: skip
        with _quiet("citewise.nodes.failed"):  # the failure is reported below, once
            result = run_question(question, context)
    except ValueError as error:
        raise fail(str(error)) from error
    if result.get("error"):
        raise run_failed(result["error"])
    payload = {key: result.get(key, default) for key, default in OUTPUT_KEYS.items()}
    if result.get("route") == "report":
        payload |= report_payload(result)
    with_source_keys(payload)
    if as_json:
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        show_answer(payload)
    if export is not None:  # after the answer is shown: a file that cannot be written loses nothing
        try:
            write_export(payload, export.expanduser())
        except OSError as error:
            raise fail(f"cannot write {export}: {error}") from error
        typer.echo(f"wrote {export}", err=True)


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    """The logger `name` says nothing inside the block (and is as it was after it)."""
    logger = logging.getLogger(name)
    was = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was


def run_context(
    index: Path,
    chroma_url: str | None,
    model: str | None,
    judge: str | None,
    k: int,
    mode: AnswerMode,
    **settings: Any,
) -> Context:
    """The Context of a run from the options ask, chat and eval share (Context checks `settings`)."""
    from citewise.context import Context

    return Context(
        index_dir=str(index), chroma_url=chroma_url, model=model, judge_model=judge, k=k, route=ROUTES[mode],
        **settings,
    )  # fmt: skip


def run_question(question: str, context: Context) -> dict[str, Any]:
    """Run the query graph once; with outline approval, pause at the outline and resume with the edits."""
    import asyncio

    from langchain_core.messages import HumanMessage
    from langchain_core.runnables import RunnableConfig

    from citewise.graph.query import builder, graph

    if not context.approve_outline:
        return asyncio.run(graph.ainvoke({"messages": [HumanMessage(question)]}, context=context))
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    from citewise.app.outline_editor import edit_outline

    paused = builder.compile(checkpointer=InMemorySaver())
    config = RunnableConfig(configurable={"thread_id": "ask"})

    async def run() -> dict[str, Any]:
        result = await paused.ainvoke({"messages": [HumanMessage(question)]}, config, context=context)
        while result.get("__interrupt__"):
            request = result["__interrupt__"][0].value
            edited = edit_outline(request["outline"])
            result = await paused.ainvoke(Command(resume=edited), config, context=context)
        return result

    return asyncio.run(run())


@app.command()
def chat(
    index: IndexOption = DEFAULT_INDEX,
    thread: Annotated[
        str | None, typer.Option("--thread", help="Resume this stored thread (an unknown id starts one).")
    ] = None,
    threads: ThreadsOption = None,
    mode: ModeOption = AnswerMode.auto,
    model: ModelOption = None,
    judge_model: JudgeOption = None,
    k: KOption = 10,
    chroma_url: ChromaOption = None,
    store: StoreOption = None,
    profile: ProfileOption = "auto",
    budget_seconds: BudgetOption = None,
) -> None:
    """Chat with your documents: cited answers, follow-ups that use the conversation, threads kept on disk."""
    from citewise.app.chat import run_chat

    _check_models(model, judge_model)
    resources = _run_resources(index, chroma_url, store)  # every turn's index, models and embedder
    try:
        context = run_context(
            index, chroma_url, model, judge_model, k, mode, profile=profile,
            budget_seconds=budget_seconds, resources=resources, store=store,
        )  # fmt: skip
        code = run_chat(context, threads=shared.threads_of(threads, store), thread_id=thread)
    except ValueError as error:
        raise fail(str(error)) from error
    raise typer.Exit(code)


@app.command("eval")
def evaluate_questions(
    questions: Annotated[
        Path, typer.Option("--questions", help='JSON lines: {"id" or "_id", "question" or "text"} per line.')
    ],
    qrels: Annotated[
        Path | None,
        typer.Option("--qrels", help="Relevance judgments, BEIR TSV or TREC: adds nDCG@10 and Recall@10."),
    ] = None,
    index: IndexOption = DEFAULT_INDEX,
    out: Annotated[Path | None, typer.Option("--out", help="Write the report as JSON here.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N questions.")] = None,
    mode: ModeOption = AnswerMode.auto,
    model: ModelOption = None,
    judge_model: JudgeOption = None,
    citation_judge: Annotated[
        str,
        typer.Option(
            help="Who decides citation support: auto (the judge model if any, else word overlap), llm, "
            "or word-overlap (shared words, not entailment)."
        ),
    ] = "auto",
    k: KOption = 10,
    chroma_url: ChromaOption = None,
    store: StoreOption = None,
    as_user: AsOption = None,
    profile: ProfileOption = "auto",
    budget_seconds: BudgetOption = None,
) -> None:
    """Run a question set through the pipeline: retrieval, abstention, citation and verification figures."""
    import asyncio

    from tqdm import tqdm

    from citewise.app import evaluate

    if citation_judge not in ("auto", "llm", "word-overlap"):
        raise fail(f"--citation-judge must be auto, llm or word-overlap, not {citation_judge!r}")
    try:
        asked = evaluate.read_questions(questions)[:limit]
        judgments = evaluate.read_qrels(qrels) if qrels is not None else None
    except evaluate.EvalInputError as error:
        raise fail(str(error)) from error
    _check_models(model, judge_model)
    from citewise.app.users_cli import collections_as

    resources = _run_resources(index, chroma_url, store)  # every question's index, models and embedder
    try:
        context = run_context(
            index, chroma_url, model, judge_model, k, mode, profile=profile,
            budget_seconds=budget_seconds, resources=resources, store=store,
            collections=collections_as(as_user, index, store),
        )  # fmt: skip
        with tqdm(total=len(asked), desc="eval", unit="question", file=sys.stderr, disable=None) as bar:
            run = evaluate.run_eval(asked, context, judgments, citation_judge, progress=bar.update)
            report = asyncio.run(run)
    except evaluate.EvalRunError as error:
        raise run_failed(error.problem) from error
    except ValueError as error:
        raise fail(str(error)) from error
    report["settings"] |= {"questions": str(questions), "qrels": qrels and str(qrels), "limit": limit}
    typer.echo(evaluate.format_report(report))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        typer.echo(f"wrote {out}")


@app.command()
def stats(
    index: IndexOption = DEFAULT_INDEX,
    chroma_url: ChromaOption = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show what each store holds: documents, paragraphs, chunks, their vectors and lexical entries.

    The same counts on both tiers (`--json`: chunks, chunk_vectors, chunks_lexical, paragraphs_lexical):
    the local index's SQLite, Chroma and bm25s, or the shared store's tables, pgvector and term tables.
    """
    from citewise.index import IndexOpenError

    if store:
        data = shared.stats_shared(store).as_dict()
    else:
        with _open(index, chroma_url, create=False) as opened:
            try:
                data = opened.stats().as_dict()
            except IndexOpenError as error:  # Chroma, first opened for its count, is another model's
                raise fail(str(error)) from error
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        for key, value in data.items():
            typer.echo(f"{key:>14}: {value}")


def server_gate(
    host: str,
    what: str,
    index: Path,
    store: str | None,
    trusted_proxy: list[str] | None,
    user_header: str | None,
    login: bool = False,
) -> Gate:
    """Who a server's requests are (`citewise.app.access.require_login`); refused in one line, exit 2.

    Checked first, before the index and the embedding model load: a server that may not start says so at
    once.
    """
    from citewise.app.access import AccessError, open_access, require_login

    try:
        access = open_access(index, store)
        return require_login(host, what, access, trusted_proxy or [], user_header, login)
    except AccessError as error:
        raise fail(str(error)) from error


@app.command()
def serve(
    index: IndexOption = DEFAULT_INDEX,
    host: Annotated[str, host_option("the page")] = "127.0.0.1",
    port: Annotated[int, port_option("the page")] = 7860,
    threads: ThreadsOption = None,
    model: ModelOption = None,
    judge_model: JudgeOption = None,
    chroma_url: ChromaOption = None,
    store: StoreOption = None,
    trusted_proxy: TrustedProxyOption = None,
    user_header: UserHeaderOption = None,
    login: LoginOption = False,
) -> None:
    """Serve the chat web page: streamed cited answers, clickable citations, the evidence chart, threads.

    With --store, questions are answered from the shared store and uploads are queued in it and ingested by
    the page's process, as `ingest --store` does. Beyond loopback the page asks for a login (a user's name
    and API token) unless a trusted proxy names the user; without a way in set up, it refuses to start.
    """
    from citewise.context import Context

    gate = server_gate(host, "the page", index, store, trusted_proxy, user_header, login)
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # before gradio is imported: no telemetry
    _check_models(model, judge_model)
    resources = Resources()  # every visitor's index, models and embedder
    if store:
        shared.reachable(store)
    try:
        context = Context(
            index_dir=str(index), chroma_url=chroma_url, model=model, judge_model=judge_model, store=store,
            resources=resources,
        )  # fmt: skip
    except ValueError as error:
        raise fail(str(error)) from error
    from citewise.app.web import serve as serve_page

    what = f"the shared store {shared.shown(store)}" if store else str(index)
    typer.echo(f"citewise: serving {what} on http://{host}:{port} (Ctrl-C stops)", err=True)
    try:
        serve_page(context, host=host, port=port, threads=shared.threads_of(threads, store), gate=gate)
    except OSError as error:
        raise fail(f"cannot serve on {host}:{port}: {error}") from error


@app.command()
def api(
    index: IndexOption = DEFAULT_INDEX,
    host: Annotated[str, host_option("the API")] = "127.0.0.1",
    port: Annotated[int, port_option("the API")] = 8123,
    threads: ThreadsOption = None,
    model: ModelOption = None,
    judge_model: JudgeOption = None,
    k: KOption = 10,
    chroma_url: ChromaOption = None,
    store: StoreOption = None,
    trusted_proxy: TrustedProxyOption = None,
    user_header: UserHeaderOption = None,
    login: LoginOption = False,
) -> None:
    """Serve the JSON API of one replica: replicas sharing --threads continue each other's threads.

    Beyond loopback every request needs a user (a bearer token from `citewise users add`, or a trusted
    proxy's user header); without a way in set up, it refuses to start.
    """
    import asyncio

    import uvicorn

    from citewise.app.api import build_app
    from citewise.app.memory import open_checkpointer

    async def reachable() -> None:  # a bad thread store is said here, not as a failed startup's traceback
        async with open_checkpointer(threads):
            pass

    gate = server_gate(host, "the API", index, store, trusted_proxy, user_header, login)
    threads = shared.threads_of(threads, store)
    _check_models(model, judge_model)
    resources = _run_resources(index, chroma_url, store, serving=True)  # every request's index and models
    try:
        context = run_context(
            index, chroma_url, model, judge_model, k, AnswerMode.auto, resources=resources, store=store
        )
        asyncio.run(reachable())
    except ValueError as error:
        raise fail(str(error)) from error
    what = f"the shared store {shared.shown(store)}" if store else str(index)
    typer.echo(f"citewise: API on http://{host}:{port} for {what} (Ctrl-C stops)", err=True)
    try:
        served = build_app(context, threads, gate=gate, audit=gate.store)
        uvicorn.run(served, host=host, port=port, log_level="warning", proxy_headers=False)
    except OSError as error:
        raise fail(f"cannot serve on {host}:{port}: {error}") from error


def _register_outlines() -> None:
    from citewise.app.outlines_cli import outlines_app
    from citewise.app.show import show
    from citewise.app.users_cli import audit, groups_app, users_app

    app.add_typer(outlines_app, name="outlines")
    app.command()(show)
    app.add_typer(users_app, name="users")
    app.add_typer(groups_app, name="groups")
    app.command()(audit)


_register_outlines()


GC_THRESHOLDS = (100_000, 50, 100)
"""CPython's cyclic collector thresholds for the command (its default is (700, 10, 10)).

Start-up allocates the objects of several hundred modules, which live as long as the process: collecting
every 700 allocations walked them over and over (0.13 s of a cold `ask`), and the collection at exit took
0.2 s more. Collections still run, less often, and what is alive at exit is frozen out of the last one.
"""


def main() -> None:
    """Entry point with logging set up."""
    logging.basicConfig(
        level=os.environ.get("CITEWISE_LOG", "WARNING"), format="%(levelname)s %(name)s: %(message)s"
    )
    if "CITEWISE_LOG" not in os.environ:  # the one-time model export says what the first run waits for
        logging.getLogger("citewise.index.embeddings").setLevel(logging.INFO)
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        app()
    finally:
        gc.freeze()


if __name__ == "__main__":
    main()
