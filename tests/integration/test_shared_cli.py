"""The shared tier from the command line: `ingest --store` fills a PostgreSQL store, `ask --store` reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from citewise.core.evidence import NO_ANSWER
from citewise.index.shared.pgserver import Server, free_port
from citewise.index.shared.pgstore import PgStore

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


def test_search_and_stats_on_the_shared_store_have_the_local_shapes(store: str, sample_index: Path) -> None:
    question = "transits of GJ 486b"
    shared = citewise("search", question, "--store", store, "--json", "-k", "3")
    local = citewise("search", question, "--index", str(sample_index), "--json", "-k", "3")
    assert shared.returncode == 0 and local.returncode == 0, shared.stderr + local.stderr
    found, expected = json.loads(shared.stdout), json.loads(local.stdout)
    assert set(found) == set(expected) and len(found["hits"]) == 3
    assert [set(hit) for hit in found["hits"]] == [set(hit) for hit in expected["hits"]]
    assert all("GJ 486b" in hit["title"] for hit in found["hits"])
    printed = citewise("search", question, "--store", store, "-k", "1")
    assert printed.returncode == 0 and printed.stdout.startswith("  1. ") and "bm25" in printed.stdout
    counted = citewise("stats", "--store", store, "--json")
    assert counted.returncode == 0, counted.stderr
    data = json.loads(counted.stdout)
    assert set(data) == set(json.loads(citewise("stats", "--index", str(sample_index), "--json").stdout))
    with PgStore(store) as opened:
        assert data == opened.stats().as_dict()
    assert data["documents"] >= 3 and data["chunks"] == data["chunk_vectors"] == data["chunks_lexical"]
    assert data["consistent"] is True


def test_remove_deletes_a_file_from_the_shared_store(store: str, tmp_path: Path) -> None:
    note = tmp_path / "zeppelin.txt"
    note.write_text("The Graf Zeppelin was moored in a hangar at Friedrichshafen.\n", encoding="utf-8")
    assert citewise("ingest", str(note), "--store", store).returncode == 0
    hits = json.loads(citewise("search", "Graf Zeppelin hangar", "--store", store, "--json").stdout)["hits"]
    assert "Friedrichshafen" in hits[0]["text"]
    removed = citewise("remove", str(note), "--store", store)
    assert removed.returncode == 0, removed.stderr
    assert (
        removed.stdout.startswith("remove: 1 files (") and "documents +0 -1; chunks +0 -1" in removed.stdout
    )
    with PgStore(store) as opened:
        assert opened.document_ids(str(note.resolve())) == set() and str(note.resolve()) not in opened.files()
        assert opened.stats().consistent
    hits = json.loads(citewise("search", "Graf Zeppelin hangar", "--store", store, "--json").stdout)["hits"]
    assert all("Friedrichshafen" not in hit["text"] for hit in hits)
    again = citewise("remove", str(note), "--store", store)
    assert again.returncode == 1 and "nothing matched in the store" in again.stderr
    assert "Traceback" not in again.stderr


def test_the_index_graph_writes_to_the_shared_store_the_query_graph_reads(store: str, tmp_path: Path) -> None:
    import asyncio

    from citewise.context import Context
    from citewise.graph.index import graph as index_graph
    from citewise.graph.query import graph as query_graph

    note = tmp_path / "lichen.md"
    note.write_text(
        "# Lichen on the Moonrise glacier\n\nThe orange lichen Xanthoria moonrisensis grows 2 mm a year "
        "on the glacier's northern moraine.\n",
        encoding="utf-8",
    )
    context = Context(store=store, index_dir=str(tmp_path / "never-written"))
    added = asyncio.run(index_graph.ainvoke({"paths": [str(note)]}, context=context))
    assert added["error"] is None and added["report"]["documents_added"] == 1
    assert not (tmp_path / "never-written").exists()  # not the local folder
    asked = asyncio.run(
        query_graph.ainvoke(
            {"messages": [("user", "How fast does Xanthoria moonrisensis grow?")]}, context=context
        )
    )
    assert "2 mm a year" in asked["answer"]
    removed = asyncio.run(index_graph.ainvoke({"paths": [str(note)], "remove": True}, context=context))
    assert removed["report"]["documents_removed"] == 1


def test_a_served_index_graph_writes_to_the_store_its_environment_names(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Served, the store is CITEWISE_STORE's alone: an upload through the index graph lands where questions
    look, and nothing is written to the local index folder the environment also names."""
    import asyncio

    from citewise.context import Context
    from citewise.graph.index import graph as index_graph
    from citewise.graph.query import graph as query_graph

    note = tmp_path / "moss.md"
    note.write_text(
        "# Moss on the Lantern quarry walls\n\nThe silver moss Bryum lanternense covers 40 square metres of "
        "the quarry's eastern wall.\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("CITEWISE_SERVED", "1")
    monkeypatch.setenv("CITEWISE_STORE", store)
    monkeypatch.setenv("CITEWISE_INDEX", str(tmp_path / "never-written"))
    monkeypatch.setenv("CITEWISE_DATA_ROOT", str(tmp_path))
    context = Context()  # the server's settings, from its environment, as a served run gets them
    assert context.store == store
    added = asyncio.run(index_graph.ainvoke({"paths": ["moss.md"]}, context=context))
    assert added["error"] is None and added["report"]["documents_added"] == 1
    assert not (tmp_path / "never-written").exists()  # not the local folder
    with PgStore(store) as shared:
        assert str(note.resolve()) in shared.files()
    asked = asyncio.run(
        query_graph.ainvoke(
            {"messages": [("user", "How much of the quarry wall does Bryum lanternense cover?")]},
            context=context,
        )
    )
    assert "40 square metres" in asked["answer"]
    removed = asyncio.run(index_graph.ainvoke({"paths": ["moss.md"], "remove": True}, context=context))
    assert removed["report"]["documents_removed"] == 1


def test_ingest_tags_documents_in_the_shared_store_as_on_the_local_tier(store: str, tmp_path: Path) -> None:
    note = tmp_path / "tagged.md"
    note.write_text("# Tagged note\n\nThe kiln fires at 1,280 degrees.\n", encoding="utf-8")
    done = citewise("ingest", str(note), "--store", store, "--tag", "trusted", "--tag", "lab")
    assert done.returncode == 0, done.stderr
    assert "documents tagged: 1" in done.stderr
    again = citewise("ingest", str(note), "--store", store, "--tag", "reviewed")  # unchanged: tags added
    assert again.returncode == 0 and "documents tagged: 1" in again.stderr
    with PgStore(store) as shared:
        (doc_id,) = shared.document_ids(str(note.resolve()))
        record = shared.document(doc_id)
    assert record is not None and record.metadata["tags"] == ["lab", "reviewed", "trusted"]
    assert citewise("remove", str(note), "--store", store).returncode == 0


def test_requeue_ingests_a_failed_file_once_it_is_fixed(store: str, tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("   \n", encoding="utf-8")
    failed = citewise("ingest", str(notes), "--store", store)
    assert failed.returncode == 1 and "empty" in failed.stderr
    notes.write_text("# Airships\n\nThe LZ 129 Hindenburg first flew in 1936.\n", encoding="utf-8")
    unsaid = citewise("requeue")
    assert unsaid.returncode == 2 and "give --store URL" in unsaid.stderr and "Traceback" not in unsaid.stderr
    done = citewise("requeue", str(tmp_path), "--store", store)
    assert done.returncode == 0, done.stderr
    assert "requeue (shared store): 1 files queued, 1 taken here (0 failed); documents +1" in done.stderr
    hits = json.loads(citewise("search", "Hindenburg first flight", "--store", store, "--json").stdout)[
        "hits"
    ]
    assert "1936" in hits[0]["text"]
    nothing = citewise("requeue", str(tmp_path), "--store", store)  # nothing failed is left under it
    assert nothing.returncode == 0 and "0 files queued, 0 taken here" in nothing.stderr
    assert citewise("remove", str(notes), "--store", store).returncode == 0


def test_eval_runs_a_question_set_on_the_shared_store(store: str, tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    asked = [
        {"id": "q1", "question": "Which telescopes were used to observe the transits of GJ 486b?"},
        {"id": "q2", "question": "Who won the 1998 football World Cup?"},
    ]
    questions.write_text("".join(json.dumps(q) + "\n" for q in asked), encoding="utf-8")
    out = tmp_path / "report.json"
    done = citewise("eval", "--questions", str(questions), "--store", store, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("2 questions, local mode")
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["settings"]["store"] == store
    answers = {row["id"]: row["answer"] for row in report["questions"]}
    assert "Subaru" in answers["q1"] and answers["q2"].startswith(NO_ANSWER)


def test_serve_answers_from_the_shared_store_and_ingests_uploads_there(store: str, tmp_path: Path) -> None:
    from gradio_client import Client, handle_file

    index = tmp_path / "home" / "index"  # the local tier's place: nothing may be written there
    port = free_port()
    environment = {k: v for k, v in os.environ.items() if k not in ("CITEWISE_THREADS", "CITEWISE_STORE")}
    with psycopg.connect(store, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('checkpoints')").fetchone() == (None,)  # no threads here yet
    server = subprocess.Popen(
        [sys.executable, "-m", "citewise.app.cli", "serve", "--store", store, "--index", str(index)]
        + ["--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                client = Client(f"http://127.0.0.1:{port}/", verbose=False)
                break
            except (httpx.HTTPError, ValueError):
                assert server.poll() is None and time.monotonic() < deadline, "the page did not come up"
                time.sleep(1)
        notes = tmp_path / "airship-notes.txt"
        notes.write_text(
            "The Graf Zeppelin was moored at Lakehurst after crossing the Atlantic.\n", encoding="utf-8"
        )
        empty = tmp_path / "empty.txt"
        empty.write_text("", encoding="utf-8")
        summary = client.predict([handle_file(str(notes)), handle_file(str(empty))], api_name="/ingest")
        assert (
            summary.startswith("**Ingested 1 of 2 file(s)**") and "skipped empty.txt: empty file" in summary
        )
        assert "The shared store now holds" in summary
        uploaded = tmp_path / "home" / "uploads" / notes.name
        with PgStore(store) as opened:
            assert len(opened.document_ids(str(uploaded.resolve()))) == 1  # in the shared store
        assert not index.exists()  # and not in a local index
        history = client.predict("Where was the Graf Zeppelin moored?", "answer", [], api_name="/ask")[0]
        answer = history[-1]["content"][0]["text"]
        assert "Lakehurst" in answer and 'class="cw-cite"' in answer
        with psycopg.connect(store, autocommit=True) as conn:  # the thread is kept in the store's database
            threads = conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()
        assert threads is not None and threads[0] >= 1
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    with PgStore(store) as opened:
        opened.remove([uploaded])


def test_a_store_an_older_citewise_made_is_upgraded_when_opened_and_keeps_its_documents(
    postgres: Server,
) -> None:
    """A store made before documents had collections (no `schema` mark, no collection column, no paragraph
    boxes) answers, and gains the columns: its documents in the default collection, its paragraphs boxless."""
    name = f"older_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = postgres.dsn.rsplit("/", 1)[0] + f"/{name}"
    try:
        assert citewise("ingest", str(SAMPLE), "--store", url).returncode == 0
        with psycopg.connect(url, autocommit=True) as conn:  # the tables as an older citewise left them
            conn.execute("DELETE FROM citewise_meta WHERE key = 'schema'")
            conn.execute("ALTER TABLE citewise_documents DROP COLUMN collection")
            conn.execute("ALTER TABLE citewise_paragraphs DROP COLUMN boxes")
        with PgStore(url) as shared:
            assert not shared.current()
        asked = citewise(
            "ask", "Which telescopes observed the transits of GJ 486b?", "--store", url, "--json"
        )
        assert asked.returncode == 0, asked.stderr
        assert "Subaru" in json.loads(asked.stdout)["answer"]
        with PgStore(url) as shared:
            assert shared.current() and shared.stats().documents == 3
            doc_id = next(iter(shared.document_ids()))
            assert shared.paragraphs(doc_id) and all(p.boxes == () for p in shared.paragraphs(doc_id))
    finally:
        with psycopg.connect(postgres.dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
