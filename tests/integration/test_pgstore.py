"""The shared tier's store and its ingest workers (#28): a real PostgreSQL with pgvector on 127.0.0.1.

Files go through the store's queue; workers are this process (`PgStore.work`, with the session's model) or
real worker processes (`python -m citewise.index.shared.pgworker`, and a small script that stops inside its
write transaction), each loading the local MiniLM model itself.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg import sql

from citewise.index.chunking import ChunkingConfig, chunk_input
from citewise.index.embeddings import Embedder
from citewise.index.loaders import load_path
from citewise.index.local.lexical import LexicalIndex
from citewise.index.records import IndexOpenError
from citewise.index.shared.index import SharedIndex
from citewise.index.shared.pgserver import Server
from citewise.index.shared.pgstore import PgStore
from citewise.index.shared.pgworker import run
from citewise.index.shared.queue import MAX_ATTEMPTS, Outcome

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "citewise" / "samples" / "unarxive_sample.jsonl"
PDFS = ROOT / "tests" / "data" / "pdf"
SECONDS = 300  # the most a worker process may take (loading the model on a busy machine included)

HOLDER = """
import sys
from citewise.index.shared.pgstore import PgStore
from citewise.index.shared.queue import MAX_ATTEMPTS, Outcome
from citewise.index.shared.pgworker import store_embedder

dsn, prefix = sys.argv[1:3]
with PgStore(dsn, prefix=prefix) as store:
    embedder = store_embedder(store)

    def hold(item):
        print("inside", item.id, flush=True)
        sys.stdin.readline()

    outcome = store.work(embedder, worker="holder", before_commit=hold)
    print("committed", outcome.item, flush=True)
"""
"""A worker that claims one file, writes it, and waits inside its write transaction for a line on stdin."""


@pytest.fixture
def store(postgres: Server, embedder: Embedder) -> Iterator[PgStore]:
    """A new store (its own table prefix) in the module's server, made for the session's model."""
    with PgStore(postgres.dsn, prefix=f"t{uuid.uuid4().hex[:8]}") as made:
        made.create(embedder.name)
        yield made


def _files(folder: Path, records: list[dict[str, str]]) -> list[Path]:
    """One BEIR jsonl file per record."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for record in records:
        path = folder / f"{record['_id']}.jsonl"
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def _environment() -> dict[str, str]:
    """The worker processes import this checkout's citewise, offline."""
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "HF_HUB_OFFLINE": "1"}


def _dsn(server: Server, name: str) -> str:
    """The server's DSN with an application name, to find the worker's sessions in pg_stat_activity."""
    return f"{server.dsn}?application_name={name}"


def _line(process: subprocess.Popen[str], seconds: float = SECONDS) -> str:
    """The next line a process prints (failing with its stderr if it ends or stays silent first)."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if selector.select(seconds):
            line = process.stdout.readline()
            if line:
                return line.strip()
    process.kill()
    _, errors = process.communicate()
    raise AssertionError(f"the worker printed nothing more; its stderr:\n{errors}")


def _holder(server: Server, store: PgStore, name: str = "holder") -> subprocess.Popen[str]:
    """Start a worker that stops inside its write transaction; returns once it is there."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, _dsn(server, name), store.prefix],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_environment(),
    )
    assert _line(process).startswith("inside ")
    return process


def _sessions(store: PgStore, name: str) -> int:
    row = store.conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [name])
    found = row.fetchone()
    return int(found[0]) if found else 0


def _lexical_agrees(store: PgStore) -> None:
    """Each BM25 table's df and counts (folded plus pending) are exactly what its rows hold."""
    for lexical in (store.lexical, store.paragraph_lexical):
        tables = ("chunks", "terms", "stats", "pending", "pending_stats")
        names = {name: sql.Identifier(f"{lexical.prefix}_{name}") for name in tables}

        def query(statement: str, names: dict[str, sql.Identifier] = names) -> list[tuple[int, ...]]:
            return store.conn.execute(sql.SQL(statement).format(**names)).fetchall()

        recount = dict(query("SELECT t, count(*) FROM {chunks}, unnest(terms) AS t GROUP BY t"))
        recorded = dict(
            query(
                """SELECT v.id, v.df + coalesce((SELECT sum(p.df) FROM {pending} AS p WHERE p.term = v.id), 0)
                FROM {terms} AS v"""
            )
        )
        assert {t: n for t, n in recorded.items() if n} == recount, lexical.prefix
        totals = query(
            """SELECT s.chunks + coalesce(sum(p.chunks), 0), s.tokens + coalesce(sum(p.tokens), 0)
            FROM {stats} AS s LEFT JOIN {pending_stats} AS p ON true GROUP BY s.chunks, s.tokens"""
        )
        assert totals == query("SELECT count(*), coalesce(sum(length), 0) FROM {chunks}"), lexical.prefix


def _in_step(store: PgStore) -> dict[str, int]:
    """The counts, checked to agree across tables; returns them."""
    counts = store.counts()
    assert counts["chunks"] == counts["chunk_vectors"] == counts["chunks_lexical"], counts
    assert counts["paragraphs"] == counts["paragraphs_lexical"], counts
    _lexical_agrees(store)
    return counts


def test_schema_is_idempotent_and_keeps_its_settings(
    postgres: Server, store: PgStore, embedder: Embedder
) -> None:
    tables = "SELECT count(*) FROM pg_tables WHERE tablename LIKE %s"
    before = store.conn.execute(tables, [f"{store.prefix}%"]).fetchone()
    settings = store.settings()
    with PgStore(postgres.dsn, prefix=store.prefix) as again:
        assert again.create(embedder.name) == settings
        assert again.create(embedder.name) == settings
    assert store.conn.execute(tables, [f"{store.prefix}%"]).fetchone() == before
    # 9 of the store (the queue's attempts among them), 2 of vectors, 2 x 5 of BM25
    assert before is not None and before[0] == 21
    with pytest.raises(IndexOpenError, match="chunking"):
        store.create(embedder.name, ChunkingConfig(max_chars=300))
    with pytest.raises(IndexOpenError, match="all-MiniLM-L6-v2-int8"):
        store.create("all-MiniLM-L6-v2-int8")
    with (
        PgStore(postgres.dsn, prefix=f"{store.prefix}_none") as absent,
        pytest.raises(IndexOpenError, match="create"),
    ):
        absent.settings()


def test_one_file_is_stored_whole_and_searchable(
    store: PgStore, embedder: Embedder, tmp_path: Path, small_corpus: Path
) -> None:
    paper = json.loads(SAMPLE.read_text(encoding="utf-8").splitlines()[0])
    paper["body_text"] = paper["body_text"][:6]  # a short paper: sections, citations, a bibliography
    paper_file = tmp_path / "paper.jsonl"
    paper_file.write_text(json.dumps(paper) + "\n", encoding="utf-8")
    assert store.enqueue([small_corpus, paper_file]) == 2
    assert store.enqueue([small_corpus]) == 0  # queued already
    outcomes = run(store, embedder)
    assert [(o.path, o.state, o.documents) for o in outcomes] == [
        (str(small_corpus.resolve()), "done", 12),
        (str(paper_file.resolve()), "done", 1),
    ]
    assert store.queued() == 0 and store.lexical.pending() == 0  # folded after each commit
    counts = _in_step(store)
    (document,) = load_path(paper_file)
    stored = store.document(document.id)
    assert stored is not None and stored.title == document.title and stored.file == str(paper_file.resolve())
    assert [p.text for p in store.paragraphs(document.id)] == [p.text for p in document.paragraphs]
    assert [p.citations for p in store.paragraphs(document.id)] == [p.citations for p in document.paragraphs]
    assert store.bibliography(document.id) == {b.key: b.text for b in document.bibliography.values()}
    assert counts["documents"] == 13 and counts["files"] == 2
    assert counts["bibliography"] == len(document.bibliography) > 0
    assert counts["paragraphs"] == 12 + len(document.paragraphs) == counts["paragraph_vectors"]
    assert counts["chunks"] == sum(o.chunks for o in outcomes)

    question = "wild yeast starter for sourdough bread"
    (lexical_best, _), *_ = store.bm25(question, 5)
    (dense_best, _), *_ = store.dense(embedder.embed([question])[0], 5)
    records = store.chunks([lexical_best, dense_best])
    assert {records[lexical_best].title, records[dense_best].title} == {"Sourdough baking"}
    (paragraph_best, _), *_ = store.bm25_paragraphs(question, 3)
    assert store.paragraph(paragraph_best).doc_id == records[lexical_best].doc_id  # type: ignore[union-attr]
    (nearest, _), *_ = store.dense_paragraphs(embedder.embed([question])[0], 3)
    assert nearest == paragraph_best

    kept, vectors = store.stored_vectors([dense_best, "no such chunk"])
    assert kept == [dense_best]
    (itself, similarity), *_ = store.dense(vectors[0], 1)
    assert itself == dense_best and similarity > 0.999  # halfvec keeps the vector to 1e-3

    # BM25 as bm25s scores the same texts: the worker brought the weights in step once the queue was empty
    assert store.lexical.drift() < 1e-9
    ids, texts = [], []
    for doc_id in store.document_ids():
        title = store.document(doc_id).title  # type: ignore[union-attr]
        rows = store.conn.execute(f"SELECT id, text FROM {store.prefix}_chunks WHERE doc_id = %s", [doc_id])
        for chunk_id, text in rows:
            ids.append(chunk_id)
            texts.append(chunk_input(title, text, store.settings().chunking))
    local = LexicalIndex(tmp_path / "bm25", load=False)
    local.build(ids, texts, generation=1)
    scores = local.score_all(question)
    expected = {ids[i]: float(s) for i, s in enumerate(scores) if s > 0}
    found = dict(store.bm25(question, len(ids)))
    assert sorted(found) == sorted(expected)  # every chunk sharing a term, and no other
    np.testing.assert_allclose(
        [found[i] for i in sorted(found)], [expected[i] for i in sorted(found)], rtol=1e-5
    )

    # the same file again: unchanged; a changed file: its stale document replaced in the same transaction
    assert store.enqueue([small_corpus]) == 1
    (again,) = run(store, embedder)
    assert again.state == "done" and again.documents == 0 and "unchanged" in again.skipped[0][1]
    records_now = [json.loads(line) for line in small_corpus.read_text().splitlines()]
    old_tides = next(d.id for d in load_path(small_corpus) if d.key == "tides")
    records_now[9]["text"] = "Tides follow the Moon. Twice a day the sea rises and falls on most coasts."
    small_corpus.write_text("".join(json.dumps(r) + "\n" for r in records_now), encoding="utf-8")
    store.enqueue([small_corpus])
    (changed,) = run(store, embedder)
    assert (changed.state, changed.documents, changed.removed) == ("done", 1, 1)
    assert old_tides not in store.document_ids() and len(store.document_ids()) == 13
    assert _in_step(store)["documents"] == 13
    (tides, _), *_ = store.bm25("twice a day the sea rises", 1)
    assert store.chunks([tides])[tides].text.startswith(("Tides follow", "Twice a day"))


def test_a_pdf_s_paragraphs_keep_their_line_boxes_in_the_shared_store(
    postgres: Server, store: PgStore, embedder: Embedder
) -> None:
    """Each paragraph's page and line boxes as the reader found them, read back in its collection only."""
    pdf = PDFS / "manual.pdf"
    assert store.enqueue([pdf], collection="looms") == 1
    (outcome,) = run(store, embedder)
    assert outcome.state == "done", outcome.error
    (document,) = load_path(pdf)
    stored = store.paragraphs(document.id, ("looms",))
    assert [p.boxes for p in stored] == [p.boxes for p in document.paragraphs]
    assert all(p.boxes for p in stored) and {p.boxes[0].page for p in stored} >= {0, 1, 2}
    one = store.paragraph(stored[3].id, ("looms",))
    assert one is not None and one.boxes == document.paragraphs[3].boxes
    assert store.paragraph(stored[3].id, ("other",)) is None and store.paragraphs(document.id, ()) == []
    with SharedIndex(
        postgres.dsn, prefix=store.prefix, embedder=embedder
    ) as index:  # the port both tiers give
        assert index.paragraph(stored[3].id, ("looms",)) == one
    # a text file's paragraphs have no boxes: NULL in the table, () read back
    text = load_path(SAMPLE)[0]
    store.enqueue([SAMPLE])
    run(store, embedder)
    assert all(p.boxes == () for p in store.paragraphs(text.id))


def test_a_store_of_the_previous_schema_gains_the_boxes_column_and_a_current_one_runs_no_ddl(
    postgres: Server, store: PgStore, embedder: Embedder
) -> None:
    paragraphs = sql.Identifier(f"{store.prefix}_paragraphs")
    meta = sql.Identifier(f"{store.prefix}_meta")
    store.conn.execute(sql.SQL("ALTER TABLE {} DROP COLUMN boxes").format(paragraphs))
    store.conn.execute(sql.SQL("UPDATE {} SET value = '2' WHERE key = 'schema'").format(meta))
    assert not store.current()
    with PgStore(postgres.dsn, prefix=store.prefix) as again:
        again.create(embedder.name)
        assert again.current()
    columns = "SELECT column_name FROM information_schema.columns WHERE table_name = %s"
    assert "boxes" in {r[0] for r in store.conn.execute(columns, [f"{store.prefix}_paragraphs"])}
    # once current, opening it again runs no DDL: it does not wait for a writer's lock on its tables
    with psycopg.connect(postgres.dsn, autocommit=True) as writer, writer.transaction():
        writer.execute(sql.SQL("LOCK TABLE {} IN ROW EXCLUSIVE MODE").format(paragraphs))
        with PgStore(postgres.dsn, prefix=store.prefix) as third:
            third.conn.execute("SET lock_timeout = '2s'")
            assert third.create(embedder.name) == store.settings()


def test_two_workers_share_the_queue_and_neither_waits_for_the_other(
    postgres: Server,
    store: PgStore,
    embedder: Embedder,
    tmp_path: Path,
    small_corpus_records: list[dict[str, str]],
) -> None:
    files = _files(tmp_path / "files", small_corpus_records)
    assert store.enqueue(files) == len(files)
    holder = _holder(postgres, store)  # holds the first file, written but not committed
    try:
        other = subprocess.run(
            [
                sys.executable,
                "-m",
                "citewise.index.shared.pgworker",
                "--store",
                postgres.dsn,
                "--prefix",
                store.prefix,
            ]
            + ["--worker", "other"],
            capture_output=True,
            text=True,
            env=_environment(),
            timeout=SECONDS,  # a worker that waited for the holder's transaction would never end
        )
        assert other.returncode == 0, other.stderr
        outcomes = store.outcomes()
        assert len(outcomes) == len(files) - 1 and {o.worker for o in outcomes} == {"other"}
        assert store.queued() == 1 and len(store.document_ids()) == len(files) - 1
        holder.stdin.write("\n")  # type: ignore[union-attr]
        holder.stdin.flush()  # type: ignore[union-attr]
        assert _line(holder).startswith("committed ")
        assert holder.wait(SECONDS) == 0
    finally:
        holder.kill()
        holder.communicate()
    outcomes = store.outcomes()
    assert sorted(o.path for o in outcomes) == sorted(str(f.resolve()) for f in files)  # each file once
    assert {o.state for o in outcomes} == {"done"} and sum(o.documents for o in outcomes) == len(files)
    assert [o.worker for o in outcomes].count("holder") == 1
    assert store.queued() == 0
    titles = {store.document(i).title for i in store.document_ids()}  # type: ignore[union-attr]
    assert titles == {r["title"] for r in small_corpus_records}
    counts = _in_step(store)
    assert counts["documents"] == len(files) and counts["files"] == len(files)


def test_a_killed_worker_leaves_nothing_and_its_file_goes_to_the_next(
    postgres: Server,
    store: PgStore,
    embedder: Embedder,
    tmp_path: Path,
    small_corpus_records: list[dict[str, str]],
) -> None:
    files = _files(tmp_path / "files", small_corpus_records[:3])
    store.enqueue(files)
    holder = _holder(postgres, store, "doomed")
    try:
        assert store.counts()["documents"] == 0  # written, not committed: no one sees it
        holder.send_signal(signal.SIGKILL)
        holder.wait(SECONDS)
    finally:
        holder.kill()
        holder.communicate()
    for _ in range(300):  # the server ends its sessions once it reads the closed sockets
        if not _sessions(store, "doomed"):
            break
        time.sleep(0.1)
    assert _sessions(store, "doomed") == 0
    counts = _in_step(store)
    assert {name: n for name, n in counts.items() if n} == {}  # not a row of it anywhere
    assert store.outcomes() == [] and store.queued() == len(files)
    outcomes = run(store, embedder, worker="next")
    assert [o.path for o in outcomes] == sorted(
        str(f.resolve()) for f in files
    )  # queue order: its file first
    assert all(o.state == "done" and o.documents == 1 and o.worker == "next" for o in outcomes)
    assert _in_step(store)["documents"] == len(files)


def test_bad_input_fails_its_item_and_the_others_go_on(
    store: PgStore, embedder: Embedder, tmp_path: Path, small_corpus_records: list[dict[str, str]]
) -> None:
    (good,) = _files(tmp_path / "files", small_corpus_records[:1])
    fake = tmp_path / "files" / "paper.pdf"
    fake.write_text("This is plain text that calls itself a PDF.\n", encoding="utf-8")
    empty = tmp_path / "files" / "notes.md"
    empty.write_text("   \n", encoding="utf-8")
    gone = tmp_path / "files" / "gone.txt"
    gone.write_text("A file deleted after it was queued.\n", encoding="utf-8")
    assert store.enqueue([tmp_path / "files"]) == 4
    gone.unlink()
    outcomes = {Path(o.path).name: o for o in run(store, embedder)}
    assert set(outcomes) == {"paper.pdf", "notes.md", "gone.txt", good.name}
    assert outcomes["paper.pdf"].state == "failed" and "PDF" in outcomes["paper.pdf"].error
    assert outcomes["notes.md"].state == "failed" and "empty" in outcomes["notes.md"].error
    assert outcomes["gone.txt"].state == "failed" and "unreadable" in outcomes["gone.txt"].error
    assert outcomes[good.name].state == "done" and outcomes[good.name].documents == 1
    assert store.queued() == 0
    counts = _in_step(store)
    assert counts["documents"] == 1 and counts["files"] == 1
    assert [Path(o.path).name for o in store.outcomes() if o.state == "failed"] == [
        "gone.txt",
        "notes.md",
        "paper.pdf",
    ]


def test_the_same_document_in_two_files_at_once_is_stored_once(
    postgres: Server,
    store: PgStore,
    embedder: Embedder,
    tmp_path: Path,
    small_corpus_records: list[dict[str, str]],
) -> None:
    (first,) = _files(tmp_path / "one", small_corpus_records[:1])
    (second,) = _files(tmp_path / "two", small_corpus_records[:1])
    store.enqueue([first])
    holder = _holder(postgres, store)  # the document written, not committed
    outcome: list[Outcome | None] = []
    try:
        store.enqueue([second])
        with PgStore(_dsn(postgres, "twin"), prefix=store.prefix) as twin:
            worker = threading.Thread(target=lambda: outcome.append(twin.work(embedder, worker="twin")))
            worker.start()
            waiting = """SELECT count(*) FROM pg_stat_activity
                WHERE application_name = 'twin' AND wait_event_type = 'Lock'"""
            for _ in range(SECONDS * 10):  # until the twin waits for the holder's document row
                if store.conn.execute(waiting).fetchone() != (0,) or not worker.is_alive():
                    break
                time.sleep(0.1)
            assert store.conn.execute(waiting).fetchone() == (1,)
            holder.stdin.write("\n")  # type: ignore[union-attr]
            holder.stdin.flush()  # type: ignore[union-attr]
            assert _line(holder).startswith("committed ")
            worker.join(SECONDS)
    finally:
        holder.kill()
        holder.communicate()
    (done,) = outcome
    assert done is not None and done.path == str(second.resolve()) and done.state == "done"
    assert done.documents == 0 and "stored meanwhile" in done.skipped[0][1]
    counts = _in_step(store)
    assert counts["documents"] == 1 and counts["files"] == 2


FAULTY = """
import os
import signal
import sys

from citewise.index import policy
from citewise.index.shared import pgworker, queue

real_load, real_chunk = policy.load_path, queue.chunk_documents


def load_path(path):
    if "crash" in path.name:
        os.kill(os.getpid(), signal.SIGKILL)  # dies inside the file, as on a segfault or the OOM killer
    if "buggy" in path.name:
        raise ZeroDivisionError("a loader's bug")
    return real_load(path)


def chunk_documents(documents, *args, **kwargs):
    if any(document.title == "Poison" for document in documents):
        raise RuntimeError("the embedder choked")
    return real_chunk(documents, *args, **kwargs)


policy.load_path, queue.chunk_documents = load_path, chunk_documents
sys.exit(pgworker.main(sys.argv[1:]))
"""
"""A real worker process (`pgworker.main`) whose loader kills it on files named *crash*, raises on *buggy*,
and whose chunking raises on a document titled Poison."""


def _worker(
    server: Server, store: PgStore, *options: str, faulty: bool = True
) -> subprocess.CompletedProcess:
    """Run one worker process: the faulty one, or `python -m citewise.index.shared.pgworker`."""
    program = ["-c", FAULTY] if faulty else ["-m", "citewise.index.shared.pgworker"]
    arguments = ["--store", _dsn(server, "faulty"), "--prefix", store.prefix, "--worker", "w", *options]
    done = subprocess.run(
        [sys.executable, *program, *arguments],
        capture_output=True,
        text=True,
        timeout=SECONDS,
        env=_environment(),
    )
    for _ in range(300):  # a killed worker's sessions (and its claim's lock) end once the server notices
        if not _sessions(store, "faulty"):
            break
        time.sleep(0.1)
    return done


def _claims(store: PgStore, path: Path) -> int:
    """How many claims of the file's current queue row are counted."""
    statement = sql.SQL(
        "SELECT count(*) FROM {a} AS a JOIN {q} AS q ON q.id = a.item WHERE q.path = %s"
    ).format(a=sql.Identifier(f"{store.prefix}_attempts"), q=sql.Identifier(f"{store.prefix}_queue"))
    row = store.conn.execute(statement, [str(path.resolve())]).fetchone()
    return int(row[0]) if row else 0


def test_a_file_that_kills_its_worker_is_failed_after_three_claims_and_requeue_retries_it(
    postgres: Server, store: PgStore, tmp_path: Path, small_corpus_records: list[dict[str, str]]
) -> None:
    good = _files(tmp_path / "files", small_corpus_records[:2])
    crash = tmp_path / "files" / "000-crash.txt"  # first in the queue (files are queued in path order)
    crash.write_text("Zeppelins were built in Friedrichshafen.\n", encoding="utf-8")
    assert store.enqueue([tmp_path / "files"]) == 3
    for claim in range(1, MAX_ATTEMPTS + 1):
        killed = _worker(postgres, store)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert store.outcomes() == [] and store.queued() == 3  # nothing recorded, the file still queued
        assert _claims(store, crash) == claim
    finished = _worker(postgres, store)  # would die too if it tried the file again
    assert finished.returncode == 0, finished.stderr
    outcomes = {Path(o.path).name: o for o in store.outcomes()}
    assert outcomes[crash.name].state == "failed"
    assert outcomes[crash.name].error == (
        f"{MAX_ATTEMPTS} claims ended without an outcome, not tried again "
        "(a worker stopped while ingesting it (killed or crashed))"
    )
    assert f"failed  {crash.resolve()}: {MAX_ATTEMPTS} claims" in finished.stdout
    assert all(outcomes[p.name].state == "done" and outcomes[p.name].documents == 1 for p in good)
    assert store.queued() == 0
    # --requeue puts it back; a worker without the fault ingests it
    again = _worker(postgres, store, "--requeue", faulty=False)
    assert again.returncode == 0, again.stderr
    assert (
        f"requeue {crash.resolve()}" in again.stdout
        and f"done    {crash.resolve()}: 1 documents" in again.stdout
    )
    assert store.outcomes()[-1].path == str(crash.resolve()) and store.outcomes()[-1].state == "done"
    assert _in_step(store)["documents"] == 3
    # a queued file whose claims died is given its count afresh (a claim in hand would keep it)
    later = tmp_path / "files" / "001-crash.txt"
    later.write_text("Airships crossed the Atlantic.\n", encoding="utf-8")
    store.enqueue([later])
    assert _worker(postgres, store).returncode == -signal.SIGKILL
    assert _claims(store, later) == 1
    assert store.requeue() == [str(later.resolve())]
    assert _claims(store, later) == 0 and store.queued() == 1


def test_the_same_bytes_under_another_name_are_not_stored_twice(
    store: PgStore, embedder: Embedder, tmp_path: Path, small_corpus_records: list[dict[str, str]]
) -> None:
    (first,) = _files(tmp_path / "files", small_corpus_records[:1])
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(first.read_bytes())
    store.enqueue([first])
    run(store, embedder)
    store.enqueue([copy])
    (outcome,) = run(store, embedder)
    assert outcome.state == "failed"
    assert outcome.error == f"the same bytes as {first.resolve()}, already in the index"  # as the local tier
    assert _in_step(store)["documents"] == 1


def test_an_exception_fails_its_file_alone_and_the_worker_goes_on(
    postgres: Server, store: PgStore, tmp_path: Path, small_corpus_records: list[dict[str, str]]
) -> None:
    (good,) = _files(tmp_path / "files", small_corpus_records[:1])
    (poison,) = _files(
        tmp_path / "files", [{"_id": "poison", "title": "Poison", "text": "Arsenic is toxic."}]
    )
    buggy = tmp_path / "files" / "buggy.md"
    buggy.write_text("# A note\n\nNothing wrong with it but the loader.\n", encoding="utf-8")
    assert store.enqueue([tmp_path / "files"]) == 3
    done = _worker(postgres, store)  # one process through the whole queue
    assert done.returncode == 0, done.stderr
    outcomes = {Path(o.path).name: o for o in store.outcomes()}
    assert set(outcomes) == {good.name, poison.name, buggy.name}
    assert outcomes[buggy.name].state == "failed"  # a loader's bug: failed at once, not retried
    assert outcomes[buggy.name].error == "the loader failed: ZeroDivisionError: a loader's bug"
    assert outcomes[poison.name].state == "failed"  # raised on every claim: failed on the last
    assert outcomes[poison.name].error == (
        f"failed on {MAX_ATTEMPTS} claims, not tried again (last error: RuntimeError: the embedder choked)"
    )
    assert (
        done.stdout.count(f"retry   {poison.resolve()}: RuntimeError: the embedder choked")
        == MAX_ATTEMPTS - 1
    )
    assert outcomes[good.name].state == "done" and outcomes[good.name].documents == 1
    assert store.queued() == 0
    counts = _in_step(store)  # the failed claims left no row behind
    assert counts["documents"] == 1 and counts["files"] == 1
    claims = sql.SQL("SELECT item, count(*) FROM {} GROUP BY item").format(
        sql.Identifier(f"{store.prefix}_attempts")
    )
    per_item = dict(store.conn.execute(claims).fetchall())
    assert per_item == {
        outcomes[buggy.name].item: 1,
        outcomes[poison.name].item: MAX_ATTEMPTS,
        outcomes[good.name].item: 1,
    }
