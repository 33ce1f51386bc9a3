"""Replicas: two `citewise api` processes on two loopback ports, one index, threads in one PostgreSQL.

A turn asked on one replica continues on the other; a document ingested meanwhile by another process is
found by both; a replica killed mid-answer loses nothing it committed, and the other finishes the turn.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from support.fake_openai import FakeOpenAI, SchemaResponder

from citewise.index.shared.pgserver import Server, free_port

pytestmark = pytest.mark.integration

STARTUP_SECONDS = 180
"""How long a replica may take to answer /health (it loads the embedding model): readiness, not speed."""


@dataclass(frozen=True)
class Replica:
    url: str
    process: subprocess.Popen


@contextmanager
def replica(index: Path, threads: str, *options: str, env: dict[str, str] | None = None) -> Iterator[Replica]:
    """A `citewise api` process on a free loopback port, ready. Killed at the end."""
    port = free_port()
    log = index.parent / f"replica-{port}.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "citewise.app.cli", "api", "--index", str(index), "--threads", threads,
             "--port", str(port), *options],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if process.poll() is not None:
                pytest.fail(f"the replica exited with {process.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the replica did not come up: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield Replica(url, process)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


def ask(url: str, thread: str, question: str) -> dict:
    response = httpx.post(f"{url}/threads/{thread}/ask", json={"question": question}, timeout=120)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def threads_url(postgres: Server) -> str:
    return postgres.dsn


@pytest.fixture(scope="module")
def replicas(sample_index: Path, threads_url: str) -> Iterator[tuple[str, str]]:
    """Two local-mode replicas of the sample's index, one thread store; the first one set the store up."""
    with replica(sample_index, threads_url) as first, replica(sample_index, threads_url) as second:
        yield first.url, second.url


def test_a_thread_started_on_one_replica_continues_on_the_other(replicas: tuple[str, str]) -> None:
    first, second = replicas
    opened = ask(first, "gj486b", "Which telescopes were used to observe the transits of GJ 486b?")
    assert "Subaru" in opened["answer"]
    followed = ask(second, "gj486b", "And its equilibrium temperature?")  # read with the first replica's turn
    assert "700 K" in followed["answer"], followed["answer"]
    thread = httpx.get(f"{first}/threads/gj486b", timeout=30).json()
    assert [m["role"] for m in thread["messages"]] == ["user", "assistant", "user", "assistant"]
    assert thread["cut_off"] is None


def test_a_document_ingested_meanwhile_is_found_by_both(
    replicas: tuple[str, str], sample_index: Path, tmp_path: Path
) -> None:
    first, second = replicas
    question = "What colour is the okapi's coat on its legs?"
    before = ask(first, "okapi-before", question)
    assert "zebra" not in before["answer"].lower()
    note = tmp_path / "okapi.txt"
    note.write_text(
        "The okapi is a forest giraffid of the Congo. Its legs carry white horizontal stripes like a "
        "zebra's, while the rest of its coat is a dark reddish brown.\n",
        encoding="utf-8",
    )
    ingested = subprocess.run(  # another process, as a worker would
        [sys.executable, "-m", "citewise.app.cli", "ingest", str(note), "--index", str(sample_index)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert ingested.returncode == 0, ingested.stderr
    for url in (first, second):  # neither reopens: each search loads what another process committed
        found = ask(url, f"okapi-{url[-4:]}", question)
        assert "zebra" in found["answer"].lower(), found["answer"]
        assert any("okapi" in c.get("title", "").lower() for c in found["citations"]), found["citations"]


def test_a_replica_killed_mid_answer_loses_nothing_and_the_other_finishes(
    replicas: tuple[str, str], sample_index: Path, threads_url: str
) -> None:
    _, survivor = replicas
    slow = FakeOpenAI(SchemaResponder(), delay=1.5).start()  # every model request takes 1.5 s
    env = {"OPENAI_BASE_URL": slow.base_url, "OPENAI_API_KEY": "test"}
    question = "Which telescopes were used to observe the transits of GJ 486b?"
    try:
        with replica(sample_index, threads_url, "--model", "openai/slow-model", env=env) as doomed:
            asked = threading.Thread(target=_ask_quietly, args=(doomed.url, "killed", question), daemon=True)
            asked.start()
            stages = _wait_for_progress(survivor, "killed")
            os.kill(doomed.process.pid, signal.SIGKILL)
            asked.join(timeout=60)
    finally:
        slow.stop()
    left = httpx.get(f"{survivor}/threads/killed", timeout=30).json()
    assert left["cut_off"] is not None, left
    assert left["cut_off"]["question"] == question
    assert [m["text"] for m in left["messages"] if m["role"] == "user"] == [question]  # stored once
    assert set(left["cut_off"]["stages"]) != {"condense"}, (stages, left)  # it had got past the first stage
    finished = httpx.post(f"{survivor}/threads/killed/resume", timeout=120)
    assert finished.status_code == 200, finished.text
    assert finished.json()["answer"].strip()
    after = httpx.get(f"{survivor}/threads/killed", timeout=30).json()
    assert after["cut_off"] is None
    assert [m["role"] for m in after["messages"]] == ["user", "assistant"]


def _ask_quietly(url: str, thread: str, question: str) -> None:
    try:
        httpx.post(f"{url}/threads/{thread}/ask", json={"question": question}, timeout=120)
    except httpx.TransportError:
        pass  # the replica was killed under it


def _wait_for_progress(url: str, thread: str, seconds: float = 120) -> list[str]:
    """The stages left of the thread's running turn once it is past its first stage (asked on another)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        response = httpx.get(f"{url}/threads/{thread}", timeout=10)
        if response.status_code == 200:
            pending = response.json()["cut_off"]
            if pending and set(pending["stages"]) - {"condense", "rewrite"}:
                return pending["stages"]
        time.sleep(0.2)
    pytest.fail("the turn on the doomed replica made no progress")


def test_replicas_on_the_shared_tier_find_what_a_worker_commits(
    postgres: Server, tmp_path: Path, threads_url: str
) -> None:
    """Two replicas answer from one PostgreSQL store (`--store`) while an ingest worker adds a document."""
    import uuid

    import psycopg

    name = f"replicas_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    store = postgres.dsn.rsplit("/", 1)[0] + f"/{name}"
    sample = Path(__file__).resolve().parents[2] / "citewise" / "samples" / "unarxive_sample.jsonl"
    made = subprocess.run(
        [sys.executable, "-m", "citewise.app.cli", "ingest", str(sample), "--store", store],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    unused = tmp_path / "no-local-index"
    with (
        replica(unused, threads_url, "--store", store) as first,
        replica(unused, threads_url, "--store", store) as second,
    ):
        opened = ask(
            first.url, "shared-gj486b", "Which telescopes were used to observe the transits of GJ 486b?"
        )
        assert "Subaru" in opened["answer"]
        followed = ask(second.url, "shared-gj486b", "And its equilibrium temperature?")
        assert "700 K" in followed["answer"], followed["answer"]
        note = tmp_path / "okapi.txt"
        note.write_text(
            "The okapi is a forest giraffid of the Congo. Its legs carry white horizontal stripes like a "
            "zebra's, while the rest of its coat is a dark reddish brown.\n",
            encoding="utf-8",
        )
        from citewise.index.shared.pgstore import PgStore

        with PgStore(store) as queue:
            assert queue.enqueue([note]) == 1
        worker = subprocess.run(  # a worker process, as on another machine
            [sys.executable, "-m", "citewise.index.shared.pgworker", "--store", store],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert worker.returncode == 0, worker.stderr
        for url in (first.url, second.url):  # neither reopens: each search reads what the worker committed
            found = ask(url, f"okapi-shared-{url[-5:]}", "What colour is the okapi's coat on its legs?")
            assert "zebra" in found["answer"].lower(), found["answer"]


def test_replicas_and_ingests_started_together_on_a_fresh_database_all_come_up(
    postgres: Server, tmp_path: Path
) -> None:
    """Four replicas (`api --store`) and two `ingest --store` at the same instant on a fresh database.

    A replica refused an empty store, and nothing serialised making the store: now the first of them makes
    it (under advisory locks), the replicas start on it empty, and answer once the ingests commit.
    """
    import uuid

    import psycopg

    name = f"together_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    store = postgres.dsn.rsplit("/", 1)[0] + f"/{name}"
    sample = Path(__file__).resolve().parents[2] / "citewise" / "samples" / "unarxive_sample.jsonl"
    command = [sys.executable, "-m", "citewise.app.cli"]
    ports = [free_port() for _ in range(4)]
    logs = [(tmp_path / f"process-{n}.log").open("w") for n in range(6)]
    asked = [[*command, "api", "--store", store, "--threads", store, "--port", str(port)] for port in ports]
    asked += [[*command, "ingest", str(sample), "--store", store]] * 2
    processes = [
        subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        for argv, log in zip(asked, logs, strict=True)
    ]
    try:
        for process in processes[4:]:
            assert process.wait(timeout=600) == 0, [log.name for log in logs]
        deadline = time.monotonic() + STARTUP_SECONDS
        for n, port in enumerate(ports):
            while True:
                assert processes[n].poll() is None, (tmp_path / f"process-{n}.log").read_text()[-2000:]
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "a replica did not come up"
                time.sleep(0.5)
        with psycopg.connect(store) as conn:  # the two ingests stored the sample once
            assert conn.execute("SELECT count(*) FROM citewise_documents").fetchone() == (3,)
        answered = ask(f"http://127.0.0.1:{ports[-1]}", "together", "What is the orbital period of GJ 486b?")
        assert "1.5 days" in answered["answer"], answered["answer"]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()
        for log in logs:
            log.close()


def test_ingest_can_only_queue_files_for_the_store_s_workers(postgres: Server, tmp_path: Path) -> None:
    import uuid

    import psycopg

    name = f"queued_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    store = postgres.dsn.rsplit("/", 1)[0] + f"/{name}"
    sample = Path(__file__).resolve().parents[2] / "citewise" / "samples" / "unarxive_sample.jsonl"
    command = [sys.executable, "-m", "citewise.app.cli", "ingest", str(sample)]
    refused = subprocess.run([*command, "--queue-only"], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "give --store URL" in refused.stderr
    queued = subprocess.run(
        [*command, "--store", store, "--queue-only"], capture_output=True, text=True, timeout=300
    )
    assert queued.returncode == 0 and "1 files queued for the store's workers" in queued.stderr, queued.stderr
    with psycopg.connect(store) as conn:
        assert conn.execute("SELECT count(*) FROM citewise_documents").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM citewise_queue").fetchone() == (1,)
    worker = subprocess.run(
        [sys.executable, "-m", "citewise.index.shared.pgworker", "--store", store],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert worker.returncode == 0, worker.stderr
    with psycopg.connect(store) as conn:
        assert conn.execute("SELECT count(*) FROM citewise_documents").fetchone() == (3,)
