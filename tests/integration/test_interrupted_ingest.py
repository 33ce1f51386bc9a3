"""An ingest killed half-way (SIGKILL, or Ctrl-C on the CLI) leaves an index that reopens consistent.

The ingest runs in a subprocess; the test watches the SQLite document count (read-only) and interrupts it
once some but not all documents are stored, then resumes it and compares with a clean ingest. Waits are
bounded by generous timeouts that only turn a hang into a failure; nothing asserts how long anything took.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from citewise.index import Index
from citewise.index.embeddings import Embedder

pytestmark = pytest.mark.integration

TOTAL = 300
WAIT_SECONDS = 300.0  # only a guard against a hang

SUBJECTS = [
    "The river", "A farmer", "The committee", "An engineer", "The orchestra", "A glacier", "The market",
    "A satellite", "The library", "A volcano", "The hospital", "A startup", "The forest", "A submarine",
    "The bakery", "A telescope", "The parliament", "A vineyard", "The railway", "A lighthouse",
]  # fmt: skip
VERBS = [
    "measured", "repaired", "described", "funded", "photographed", "delayed", "inspected", "studied",
    "rebuilt", "celebrated", "mapped", "painted", "predicted", "recorded", "exported", "cooled",
]  # fmt: skip
OBJECTS = [
    "the harvest", "a copper bridge", "the winter storm", "an old manuscript", "the coral reef",
    "a wind turbine", "the school budget", "a rare orchid", "the subway tunnel", "a jazz festival",
    "the salt marsh", "a chess tournament", "the city archive", "a solar panel", "the wheat price",
    "a migrating herd",
]  # fmt: skip
PLACES = [
    "near the northern coast", "in the capital", "before dawn", "after the flood", "in a quiet valley",
    "during the summer", "on the island", "under heavy rain", "across the border", "beside the lake",
]  # fmt: skip


def generated_record(i: int) -> dict[str, str]:
    """A deterministic two-sentence document.

    The two sentences share no subject, verb, object or place, so their MiniLM similarity stays far below the
    0.8 chunking threshold (at most about 0.52 over the 300 documents): chunk boundaries, and so chunk ids,
    cannot depend on how sentences happened to be batched for the model.
    """
    rng = random.Random(i)
    parts = zip(
        rng.sample(SUBJECTS, 2),
        rng.sample(VERBS, 2),
        rng.sample(OBJECTS, 2),
        rng.sample(PLACES, 2),
        strict=True,
    )
    sentences = [f"{s} {v} {o} {p} in year {1900 + i}." for s, v, o, p in parts]
    return {"_id": f"doc-{i:03d}", "title": f"Record {i}: {rng.choice(OBJECTS)}", "text": " ".join(sentences)}


def write_corpus(path: Path) -> Path:
    path.write_text("".join(json.dumps(generated_record(i)) + "\n" for i in range(TOTAL)), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("big") / "records.jsonl")


@pytest.fixture(scope="module")
def clean_chunk_ids(tmp_path_factory: pytest.TempPathFactory, corpus: Path, embedder: Embedder) -> set[str]:
    """The chunk ids of an uninterrupted ingest of the same file."""
    with Index.open(tmp_path_factory.mktemp("clean") / "idx", embedder=embedder) as index:
        report = index.ingest([corpus])
        assert report.documents_added == TOTAL
        ids = index.docstore.chunk_ids()
        assert len(ids) == len(set(ids)) == index.stats().chunk_vectors == index.stats().chunks_lexical
        return set(ids)


def stored_documents(database: Path) -> int | None:
    """The number of stored documents, read-only; None while the database is not there yet."""
    if not database.exists():
        return None
    try:
        connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.OperationalError:
        return None
    try:
        return int(connection.execute("SELECT COUNT(*) FROM documents").fetchone()[0])
    except sqlite3.OperationalError:  # schema not created yet, or busy
        return None
    finally:
        connection.close()


def interrupt_midway(process: subprocess.Popen[str], database: Path, sig: signal.Signals) -> None:
    """Send `sig` once some documents are stored and at least one more batch of 64 is still to come."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(
                f"ingest ended (exit {process.returncode}) before it could be interrupted:\n{out}\n{err}"
            )
        count = stored_documents(database)
        if count is not None and 0 < count < TOTAL - 64:  # one landing in the last batch may finish it
            process.send_signal(sig)
            return
        time.sleep(0.005)
    process.kill()
    out, err = process.communicate()
    pytest.fail(f"no documents were stored within {WAIT_SECONDS}s:\n{out}\n{err}")


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"the interrupted ingest did not exit:\n{out}\n{err}")
    return process.returncode, out, err


def citewise_command() -> list[str]:
    script = Path(sys.executable).parent / "citewise"
    return (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "from citewise.app.cli import main; main()"]
    )


def assert_consistent(index: Index) -> set[str]:
    sqlite, chroma, bm25 = index.docstore.chunk_ids(), index.vectors.ids(), list(index.lexical.ids)
    assert len(sqlite) == len(set(sqlite)) and len(bm25) == len(set(bm25))
    assert set(sqlite) == chroma == set(bm25)
    stats = index.stats()
    assert stats.consistent, stats
    # every stored document has all its chunks: two dissimilar sentences, two chunks
    assert stats.chunks == 2 * stats.documents
    return set(sqlite)


INGEST_SCRIPT = """
import sys
from pathlib import Path
from citewise.index import Index
with Index.open(Path(sys.argv[1])) as index:
    index.ingest([Path(sys.argv[2])], batch_documents=8)
print("finished")
"""


def start_ingest(root: Path, corpus: Path) -> subprocess.Popen[str]:
    """INGEST_SCRIPT in its own process (quiet logs), to be interrupted."""
    return subprocess.Popen(
        [sys.executable, "-c", INGEST_SCRIPT, str(root), str(corpus)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CITEWISE_LOG": "WARNING"},
    )


def test_sigkill_mid_ingest_then_reopen_and_resume(
    tmp_path: Path, corpus: Path, clean_chunk_ids: set[str], embedder: Embedder
) -> None:
    root = tmp_path / "idx"
    process = start_ingest(root, corpus)
    interrupt_midway(process, root / "docs.sqlite3", signal.SIGKILL)
    code, out, _ = finish(process)
    assert code == -signal.SIGKILL
    assert "finished" not in out

    with Index.open(root, embedder=embedder, create=False) as index:
        partial = assert_consistent(index)
        stored = index.stats().documents
        assert 0 < stored < TOTAL
        assert partial < clean_chunk_ids  # what is there is exactly what a clean ingest makes
        hits = index.search("the river repaired a copper bridge", k=5)
        assert len(hits) == 5 and all(h.chunk_id in partial for h in hits)

        report = index.ingest([corpus])
        assert report.documents_added == TOTAL - stored
        assert report.documents_removed == 0
        assert report.chunks_added == 2 * (TOTAL - stored)
        assert index.stats().documents == TOTAL
        assert assert_consistent(index) == clean_chunk_ids

        again = index.ingest([corpus])
        assert again.unchanged_files == 1 and not again.changed


def test_ctrl_c_on_the_cli_exits_130_and_leaves_a_consistent_index(
    tmp_path: Path, corpus: Path, clean_chunk_ids: set[str], embedder: Embedder
) -> None:
    root = tmp_path / "idx"
    command = [*citewise_command(), "ingest", str(corpus), "--index", str(root)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    interrupt_midway(process, root / "docs.sqlite3", signal.SIGINT)
    code, out, err = finish(process)
    assert code == 130, (out, err)
    assert "interrupted" in err
    assert "run the same command again" in err

    with Index.open(root, embedder=embedder, create=False) as index:
        partial = assert_consistent(index)
        stored = index.stats().documents
        assert 0 < stored < TOTAL
        assert partial < clean_chunk_ids
        assert index.search("a telescope photographed the coral reef", k=3)

    resumed = subprocess.run(command, capture_output=True, text=True, timeout=WAIT_SECONDS)
    assert resumed.returncode == 0, resumed.stderr
    assert f"documents +{TOTAL - stored} -0" in resumed.stdout
    with Index.open(root, embedder=embedder, create=False) as index:
        assert index.stats().documents == TOTAL
        assert assert_consistent(index) == clean_chunk_ids


class _InterruptAfterCommit:
    """A connection stand-in: runs every statement, then raises KeyboardInterrupt right after COMMIT.

    That is what Ctrl-C does when it lands while SQLite is committing: the signal handler runs once the C call
    returns, inside the `try` of `DocStore.transaction`.
    """

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        cursor = self._connection.execute(sql, *args)
        if sql.strip().upper() == "COMMIT":
            raise KeyboardInterrupt
        return cursor

    def __getattr__(self, name: str) -> object:
        return getattr(self._connection, name)


def test_ctrl_c_right_after_a_commit_stays_a_keyboard_interrupt(tmp_path: Path) -> None:
    from citewise.index.local.docstore import DocStore

    store = DocStore(tmp_path / "docs.sqlite3")
    real = store.db
    store.db = _InterruptAfterCommit(real)  # type: ignore[assignment]
    try:
        with pytest.raises(KeyboardInterrupt):
            store.mark_file("/data/a.txt", "0" * 64, 3)
    finally:
        store.db = real
        assert store.file_sha("/data/a.txt") == "0" * 64  # the commit itself went through
        store.close()


KILLS = 20


def kill_after(process: subprocess.Popen[str], database: Path, target: int) -> int:
    """SIGKILL the ingest once at least `target` documents are stored; the count it was killed at."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"ingest ended (exit {process.returncode}) before the kill:\n{out}\n{err}")
        count = stored_documents(database)
        if count is not None and count >= target:
            process.kill()
            return count
        time.sleep(0.005)
    process.kill()
    out, err = process.communicate()
    pytest.fail(f"{target} documents were not stored within {WAIT_SECONDS}s:\n{out}\n{err}")


def test_twenty_kills_at_random_points_then_a_rerun_completes_exactly(
    tmp_path: Path, corpus: Path, clean_chunk_ids: set[str], embedder: Embedder
) -> None:
    """kill -9 twenty times, each run resuming the last one's file, at seeded random numbers of documents."""
    root, rng = tmp_path / "idx", random.Random(20)
    stored, kills = 0, []
    for _ in range(KILLS):
        target = stored + rng.randint(1, 12)  # the ingest stores batches of 8 documents
        process = start_ingest(root, corpus)
        kills.append(kill_after(process, root / "docs.sqlite3", target))
        code, out, _ = finish(process)
        assert code == -signal.SIGKILL and "finished" not in out
        with Index.open(root, embedder=embedder, create=False) as index:  # opens, consistent, searchable
            partial = assert_consistent(index)
            assert partial <= clean_chunk_ids  # no orphan, no chunk a clean ingest would not make
            stored = index.stats().documents
            assert stored >= target - 8 and len(index.search("a farmer measured the harvest", k=3)) == 3
    assert len(set(kills)) > 10 and stored < TOTAL  # twenty different points, all before the end
    with Index.open(root, embedder=embedder, create=False) as index:
        report = index.ingest([corpus])
        assert report.documents_added == TOTAL - stored and report.documents_removed == 0
        assert assert_consistent(index) == clean_chunk_ids  # exact: no duplicates, no orphans
