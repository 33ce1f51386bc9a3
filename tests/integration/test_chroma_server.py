"""The index against a real Chroma server (`chroma run` on loopback) instead of embedded Chroma."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.chroma import ChromaServer

from citewise.index import Index
from citewise.index.embeddings import Embedder
from citewise.index.local.docstore import DocStore

pytestmark = pytest.mark.integration


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
        assert stats.documents == 12 and stats.chunk_vectors == stats.chunks == len(ids) > 0

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
            assert index.stats().chunk_vectors == len(before)
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
