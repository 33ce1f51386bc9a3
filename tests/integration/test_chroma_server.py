"""The index against a real Chroma server (`chroma run` on loopback) instead of embedded Chroma."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings

from citewise.index import Index
from citewise.index.docstore import DocStore
from citewise.index.embeddings import Embedder

pytestmark = pytest.mark.integration

STARTUP_SECONDS = 60.0  # only a guard against a server that never comes up


def chroma_executable() -> str:
    beside = Path(sys.executable).parent / "chroma"
    found = shutil.which("chroma") or (str(beside) if beside.exists() else None)
    if found is None:
        pytest.fail("the `chroma` executable is not installed next to the test interpreter")
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ChromaServer:
    """A `chroma run` process on 127.0.0.1, started and stopped by the test."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, data: Path) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.stderr_path = self.logs / f"chroma-{data.name}.err"
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "CHROMA_TELEMETRY": "False", "NO_COLOR": "1"}
        with open(self.logs / f"chroma-{data.name}.out", "wb") as out, open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen(
                [
                    chroma_executable(),
                    "run",
                    "--path",
                    str(data),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                ],
                stdout=out,
                stderr=err,
                env=env,
            )
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"chroma exited with {self.process.returncode}:\n{self.stderr()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2) as response:
                    if response.status == 200 and "heartbeat" in json.loads(response.read()).__str__():
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                pass
            time.sleep(0.1)
        self.stop()
        pytest.fail(f"chroma did not answer its heartbeat within {STARTUP_SECONDS}s:\n{self.stderr()}")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)

    def client(self) -> chromadb.ClientAPI:
        return chromadb.HttpClient(
            host="127.0.0.1", port=self.port, settings=Settings(anonymized_telemetry=False)
        )


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ChromaServer]:
    chroma = ChromaServer(tmp_path / "logs")
    chroma.start(tmp_path / "server-data")
    try:
        yield chroma
    finally:
        chroma.stop()


def assert_consistent(index: Index) -> set[str]:
    sqlite, chroma, bm25 = set(index.docstore.chunk_ids()), index.vectors.ids(), set(index.lexical.ids)
    assert sqlite == chroma == bm25
    assert index.stats().consistent
    return sqlite


def test_ingest_search_and_stats_on_a_chroma_server(
    server: ChromaServer, tmp_path: Path, small_corpus: Path, embedder: Embedder
) -> None:
    root = tmp_path / "idx"
    with Index.open(root, chroma_url=server.url, embedder=embedder) as index:
        report = index.ingest([small_corpus])
        assert report.documents_added == 12
        ids = assert_consistent(index)
        stats = index.stats()
        assert stats.documents == 12 and stats.chunks_chroma == stats.chunks_sqlite == len(ids) > 0

        for mode in ("hybrid", "bm25", "dense"):
            hits = index.search("event horizon of a black hole", k=3, mode=mode)  # type: ignore[arg-type]
            assert hits and hits[0].title == "Black holes", mode
            assert all(h.chunk_id in ids for h in hits)

    # the vectors live on the server, not under the index directory
    assert not (root / "chroma").exists()
    assert (root / "docs.sqlite3").exists()
    collection = server.client().get_collection(collection_of(root))
    assert set(collection.get(include=[])["ids"]) == ids
    assert any((tmp_path / "server-data").iterdir())


def collection_of(root: Path) -> str:
    """The Chroma collection an index directory records (each index has its own)."""
    store = DocStore(root / "docs.sqlite3")
    try:
        name = store.get_meta("collection")
    finally:
        store.close()
    assert name and name.startswith("citewise_")
    return name


def test_reopen_edit_and_remove_on_a_chroma_server(
    server: ChromaServer, tmp_path: Path, small_corpus: Path, embedder: Embedder
) -> None:
    root = tmp_path / "idx"
    with Index.open(root, chroma_url=server.url, embedder=embedder) as index:
        index.ingest([small_corpus])
        before = assert_consistent(index)

    with Index.open(root, chroma_url=server.url, embedder=embedder, create=False) as index:
        assert assert_consistent(index) == before
        records = [json.loads(line) for line in small_corpus.read_text().splitlines()]
        kept = [r for r in records if r["_id"] != "tides"]
        small_corpus.write_text("".join(json.dumps(r) + "\n" for r in kept))
        report = index.ingest([small_corpus])
        assert report.documents_removed == 1 and report.chunks_removed > 0
        after = assert_consistent(index)
        assert len(after) == len(before) - report.chunks_removed and after < before
        assert set(server.client().get_collection(collection_of(root)).get(include=[])["ids"]) == after

        index.remove([small_corpus])
        assert assert_consistent(index) == set()
        assert server.client().get_collection(collection_of(root)).count() == 0


def test_the_same_index_can_switch_between_embedded_and_server_chroma(
    server: ChromaServer, tmp_path: Path, small_corpus: Path, embedder: Embedder
) -> None:
    root = tmp_path / "idx"
    with Index.open(root, embedder=embedder) as index:
        index.ingest([small_corpus])
        embedded = assert_consistent(index)
    # the server has never seen this index: opening it there mirrors the stored vectors, no re-embedding
    with Index.open(root, chroma_url=server.url, embedder=embedder) as index:
        assert assert_consistent(index) == embedded
        assert index.search("sourdough starter", k=1, mode="dense")[0].title == "Sourdough baking"
    assert server.client().get_collection(collection_of(root)).count() == len(embedded)


def test_a_server_that_lost_its_data_is_refilled_on_open(
    tmp_path: Path, small_corpus: Path, embedder: Embedder
) -> None:
    chroma = ChromaServer(tmp_path / "logs")
    root = tmp_path / "idx"
    try:
        chroma.start(tmp_path / "first")
        with Index.open(root, chroma_url=chroma.url, embedder=embedder) as index:
            index.ingest([small_corpus])
            before = assert_consistent(index)
        chroma.stop()
        chroma.start(tmp_path / "second")  # same URL, empty database
        with Index.open(root, chroma_url=chroma.url, embedder=embedder) as index:
            assert index.stats().chunks_chroma == len(before)
            assert index.search("sourdough starter", k=1, mode="dense")
    finally:
        chroma.stop()


def test_two_indexes_can_share_one_chroma_server(
    server: ChromaServer, tmp_path: Path, small_corpus: Path, embedder: Embedder
) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text(
        json.dumps(
            {"_id": "kites", "title": "Kites", "text": "A kite flies on the wind at the end of a line."}
        )
        + "\n"
    )
    with Index.open(tmp_path / "first", chroma_url=server.url, embedder=embedder) as first:
        first.ingest([small_corpus])
    with Index.open(tmp_path / "second", chroma_url=server.url, embedder=embedder) as second:
        second.ingest([other])
        assert_consistent(second)
    with Index.open(tmp_path / "first", chroma_url=server.url, embedder=embedder) as first:
        assert_consistent(first)
        assert first.search("event horizon", k=1, mode="dense")[0].title == "Black holes"
