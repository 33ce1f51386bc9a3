"""Fixtures of the reliability campaigns: small real indexes and a FakeOpenAI the real clients talk to."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fake_openai import FakeOpenAI, SchemaResponder

from citewise.index import ChunkingConfig, Index
from citewise.index.embeddings import Embedder

WHOLE_DOCUMENTS = ChunkingConfig(threshold=-1.0, max_chars=4000)
"""One chunk per document, so a document with an attack appended is the same passage plus the attack."""


def build_index(root: Path, records: list[dict[str, str]], embedder: Embedder) -> str:
    """A real index (MiniLM, embedded Chroma, bm25s) of `records` under `root`; its directory."""
    root.mkdir(parents=True, exist_ok=True)
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    path = root / "index"
    with Index.open(path, embedder=embedder, chunking=WHOLE_DOCUMENTS) as index:
        report = index.ingest([corpus])
        assert report.documents_added == len(records), report
    return str(path)


@pytest.fixture
def indexes(embedder: Embedder, tmp_path: Path) -> Callable[[str, list[dict[str, str]]], str]:
    """Build indexes in the test's tmp folder."""

    def build(name: str, records: list[dict[str, str]]) -> str:
        return build_index(tmp_path / name, records, embedder)

    return build


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., FakeOpenAI]]:
    """Start a FakeOpenAI and point the openai client at it (each run's Context builds its own models)."""
    started: list[FakeOpenAI] = []
    for name in ("COHERE_BASE_URL", "CITEWISE_LLM_CACHE"):
        monkeypatch.delenv(name, raising=False)

    def start(responder: Any = None, *, key: str = "test", **options: Any) -> FakeOpenAI:
        server = FakeOpenAI(responder or SchemaResponder(), **options).start()
        started.append(server)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", key)
        return server

    yield start
    for server in started:
        server.stop()
