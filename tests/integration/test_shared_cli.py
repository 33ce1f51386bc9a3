"""The shared tier from the command line: `ingest --store` fills a PostgreSQL store, `ask --store` reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from citewise.core.evidence import NO_ANSWER
from citewise.index.pgserver import Server

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parents[2] / "citewise" / "samples" / "unarxive_sample.jsonl"


def citewise(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "citewise.app.cli", *arguments],
        capture_output=True, text=True, timeout=900, env=os.environ.copy(),
    )  # fmt: skip


@pytest.fixture(scope="module")
def store(postgres: Server) -> Iterator[str]:
    """A database of its own on the test server, the sample ingested into it through the CLI."""
    name = f"shared_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = postgres.dsn.rsplit("/", 1)[0] + f"/{name}"
    done = citewise("ingest", str(SAMPLE), "--store", url)
    assert done.returncode == 0, done.stderr
    assert "documents +3" in done.stderr
    yield url
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_ask_answers_from_the_shared_store_with_citations(store: str) -> None:
    done = citewise(
        "ask", "Which telescopes were used to observe the transits of GJ 486b?", "--store", store, "--json"
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert "Subaru" in payload["answer"]
    assert payload["citations"] and all(c["chunk_id"] for c in payload["citations"])


def test_a_question_the_shared_store_cannot_answer_is_said_so(store: str) -> None:
    done = citewise("ask", "Who won the 1998 football World Cup?", "--store", store, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answer"].startswith(NO_ANSWER)


def test_a_file_that_is_not_what_its_name_says_fails_alone(store: str, tmp_path: Path) -> None:
    fake = tmp_path / "paper.pdf"
    fake.write_text("not a PDF at all\n", encoding="utf-8")
    done = citewise("ingest", str(fake), "--store", store)
    assert done.returncode == 1
    assert "corrupt or unreadable PDF" in done.stderr
    again = citewise(
        "ask", "Which telescopes were used to observe the transits of GJ 486b?", "--store", store
    )
    assert again.returncode == 0 and "Subaru" in again.stdout  # what was stored is intact


def test_unreachable_and_empty_stores_are_clear_errors(postgres: Server) -> None:
    unreachable = citewise("ask", "What is it?", "--store", "postgresql://postgres@127.0.0.1:1/postgres")
    assert unreachable.returncode == 2
    assert "cannot reach the shared store" in unreachable.stderr
    name = f"empty_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    empty = citewise("ask", "What is it?", "--store", postgres.dsn.rsplit("/", 1)[0] + f"/{name}")
    assert empty.returncode == 2
    assert "no shared store" in empty.stderr and "citewise ingest PATH --store URL" in empty.stderr
    assert "Traceback" not in empty.stderr
