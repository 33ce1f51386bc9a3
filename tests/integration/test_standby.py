"""A hot standby of the shared tier's PostgreSQL on a second loopback port: it follows, and refuses writes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
import pytest

from citewise.index.embeddings import Embedder
from citewise.index.shared.index import SharedIndex
from citewise.index.shared.pgserver import Server, standby
from citewise.index.shared.pgstore import PgStore
from citewise.index.shared.pgworker import run

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parents[2] / "citewise" / "samples" / "unarxive_sample.jsonl"


def test_a_standby_follows_the_primary_and_refuses_writes(postgres: Server) -> None:
    folder = Path(tempfile.mkdtemp(prefix="citewise-standby-"))
    folder.chmod(0o755)
    with psycopg.connect(postgres.dsn, autocommit=True) as primary:
        primary.execute("CREATE TABLE IF NOT EXISTS notes (id int PRIMARY KEY, text text NOT NULL)")
        primary.execute("INSERT INTO notes VALUES (1, 'before the copy') ON CONFLICT DO NOTHING")
        try:
            follower = standby(postgres, folder / "standby")
            try:
                assert follower.port != postgres.port
                primary.execute("INSERT INTO notes VALUES (2, 'after the copy') ON CONFLICT DO NOTHING")
                with psycopg.connect(follower.dsn, autocommit=True) as replica:
                    assert replica.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
                    deadline = time.monotonic() + 30  # streaming replication is asynchronous: wait for replay
                    rows: list[tuple] = []
                    while time.monotonic() < deadline:
                        rows = replica.execute("SELECT id, text FROM notes ORDER BY id").fetchall()
                        if len(rows) == 2:
                            break
                        time.sleep(0.1)
                    assert rows == [(1, "before the copy"), (2, "after the copy")]
                    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                        replica.execute("INSERT INTO notes VALUES (3, 'written to the standby')")
            finally:
                follower.stop()
        finally:
            primary.execute("DROP TABLE IF EXISTS notes")
            shutil.rmtree(folder, ignore_errors=True)


QUERIES = (
    "how do vaccines train the immune system",
    "glaciers shrinking as the climate warms",
    "zeppelin airship hangar in Friedrichshafen",
)


def _read_only(dsn: str) -> str:
    """The DSN with every transaction read-only: a write on the primary through it fails as on a standby."""
    return f"{dsn}?options=-c%20default_transaction_read_only%3Don"


def _replayed(dsn: str, prefix: str, doc_id: str, seconds: float = 30) -> None:
    """Wait until the standby at `dsn` holds document `doc_id` (replication is asynchronous)."""
    deadline = time.monotonic() + seconds
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(f"SELECT count(*) FROM {prefix}_documents WHERE id = %s", [doc_id]).fetchone()
            if row == (1,):
                return
            time.sleep(0.1)
    raise AssertionError(f"{doc_id} did not reach the standby in {seconds} s")


def test_a_shared_index_on_the_standby_searches_as_the_primary_and_never_writes(
    postgres: Server, embedder: Embedder, small_corpus_records: list[dict[str, str]], tmp_path: Path
) -> None:
    folder = Path(tempfile.mkdtemp(prefix="citewise-standby-"))
    folder.chmod(0o755)
    files = tmp_path / "files"
    files.mkdir()
    for record in small_corpus_records:
        (files / f"{record['_id']}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    store = PgStore(postgres.dsn, prefix=f"sb{uuid.uuid4().hex[:8]}")
    try:
        store.create(embedder.name)
        store.enqueue([files])
        assert all(o.state == "done" for o in run(store, embedder))
        follower = standby(postgres, folder / "standby")
        try:
            with psycopg.connect(follower.dsn, autocommit=True) as replica:
                assert replica.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
            # a document committed on the primary after the copy, its BM25 df changes left pending (unfolded)
            late = tmp_path / "zeppelin.jsonl"
            record = {
                "_id": "zeppelin",
                "title": "Airships",
                "text": "A zeppelin hangar stood in Friedrichshafen.",
            }
            late.write_text(json.dumps(record) + "\n", encoding="utf-8")
            store.enqueue([late])
            outcome = store.work(embedder)
            assert outcome is not None and outcome.documents == 1
            assert store.lexical.pending() > 0  # a reader that folded on open would have to write
            (doc_id,) = store.document_ids(str(late.resolve()))
            _replayed(follower.dsn, store.prefix, doc_id)
            with (
                SharedIndex(_read_only(postgres.dsn), prefix=store.prefix, embedder=embedder) as primary,
                SharedIndex(follower.dsn, prefix=store.prefix, embedder=embedder) as secondary,
            ):
                for mode in ("hybrid", "bm25", "dense"):
                    for query in QUERIES:
                        expected = primary.search(query, k=5, mode=mode)  # type: ignore[arg-type]
                        found = secondary.search(query, k=5, mode=mode)  # type: ignore[arg-type]
                        assert expected, (mode, query)
                        assert [h.chunk_id for h in found] == [h.chunk_id for h in expected], (mode, query)
                        assert [round(h.score, 4) for h in found] == [round(h.score, 4) for h in expected]
                assert "Friedrichshafen" in secondary.search(QUERIES[2], k=1)[0].text
                assert secondary.stats() == primary.stats()
                assert secondary.stats().documents == len(small_corpus_records) + 1
                assert secondary.idf(["zeppelin"]) == primary.idf(["zeppelin"])
                assert secondary.document(doc_id) == primary.document(doc_id)
            with psycopg.connect(
                follower.dsn, autocommit=True
            ) as replica:  # the standby still refuses writes
                with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                    replica.execute(f"DELETE FROM {store.prefix}_lexical_pending")
        finally:
            follower.stop()
    finally:
        store.close()
        shutil.rmtree(folder, ignore_errors=True)


def _citewise(*arguments: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in ("CITEWISE_THREADS", "CITEWISE_STORE")}
    return subprocess.run(
        [sys.executable, "-m", "citewise.app.cli", *arguments],
        capture_output=True, text=True, timeout=900, env=environment,
    )  # fmt: skip


def test_the_command_line_reads_from_the_standby_and_says_where_it_must_write(
    postgres: Server, tmp_path: Path
) -> None:
    name = f"standby_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    primary = postgres.dsn.rsplit("/", 1)[0] + f"/{name}"
    note = tmp_path / "zeppelin.txt"
    note.write_text("The Graf Zeppelin was moored in a hangar at Friedrichshafen.\n", encoding="utf-8")
    assert _citewise("ingest", str(SAMPLE), str(note), "--store", primary).returncode == 0
    folder = Path(tempfile.mkdtemp(prefix="citewise-standby-"))
    folder.chmod(0o755)
    try:
        follower = standby(postgres, folder / "standby")
        try:
            secondary = follower.dsn.rsplit("/", 1)[0] + f"/{name}"
            found = _citewise("search", "Graf Zeppelin hangar", "--store", secondary, "--json")
            expected = _citewise("search", "Graf Zeppelin hangar", "--store", primary, "--json")
            assert found.returncode == 0, found.stderr
            assert json.loads(found.stdout) == json.loads(expected.stdout)
            assert "Friedrichshafen" in json.loads(found.stdout)["hits"][0]["text"]
            removed = _citewise("remove", str(note), "--store", secondary)
            assert removed.returncode == 2 and "Traceback" not in removed.stderr
            assert "read-only (a hot standby?)" in removed.stderr and "primary's URL" in removed.stderr
            worker = subprocess.run(
                [sys.executable, "-m", "citewise.index.shared.pgworker", "--store", secondary, "--once"],
                capture_output=True, text=True, timeout=900,
            )  # fmt: skip
            assert worker.returncode == 2 and "Traceback" not in worker.stderr
            assert "read-only (a hot standby?)" in worker.stderr
            replica = _citewise("api", "--store", secondary, "--port", "1")  # threads would go to the standby
            assert replica.returncode == 2 and "Traceback" not in replica.stderr, replica.stderr[-3000:]
            assert "thread store" in replica.stderr and "read-only" in replica.stderr
        finally:
            follower.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        with psycopg.connect(postgres.dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
