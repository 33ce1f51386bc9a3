"""A search of a few collections reads their rows alone, and finds what it must (shared tier, local tier).

One collection of ten (or three) is a small share of the chunks: the HNSW graph and the BM25 terms' GIN index
would visit about ten times the rows the search keeps. The collection index makes such a search read the
collection's rows only, exactly: the dense top k is the exact one of the readable rows, the BM25 top k the
one every chunk of those collections sharing a term gives. A search of most collections goes the BM25
floor's way, with the same results as an unpruned scan; which of its two plans a dense search takes is the
planner's to cost (on these 3,000 rows even nine collections of ten are cheaper to read whole).

On the local tier a search's candidates are read from SQLite by chunk id with the collections' filter: by id
first, not every chunk of the collections through the collection index.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest

from citewise.index import Index
from citewise.index.embeddings import Embedder
from citewise.index.records import IndexOpenError
from citewise.index.shared.pglexical import PgLexical
from citewise.index.shared.pgserver import Server
from citewise.index.shared.pgstore import PgStore
from citewise.index.shared.pgvectors import PgVectors
from citewise.index.shared.writer import SharedWriter

pytestmark = pytest.mark.integration

ROWS, COLLECTIONS, DIM = 3000, 10, 384
NAMES = [f"c{n}" for n in range(COLLECTIONS)]
WORDS = [f"w{n:03d}" for n in range(400)]


@pytest.fixture(scope="module")
def rows() -> tuple[list[str], list[str], np.ndarray, list[str]]:
    """Chunk ids, their collections (dealt round-robin), vectors (halfvec-exact) and texts."""
    rng = np.random.default_rng(7)
    ids = [f"chunk-{n:05d}" for n in range(ROWS)]
    homes = [NAMES[n % COLLECTIONS] for n in range(ROWS)]
    vectors = rng.normal(size=(ROWS, DIM)).astype(np.float16).astype(np.float32)  # as halfvec stores them
    weights = 1.0 / np.arange(1, len(WORDS) + 1)  # Zipf: a few common words, many rare ones
    texts = [" ".join(rng.choice(WORDS, size=25, p=weights / weights.sum())) for _ in range(ROWS)]
    return ids, homes, vectors, texts


@pytest.fixture(scope="module")
def conn(postgres: Server) -> Iterator[psycopg.Connection]:
    with psycopg.connect(postgres.dsn, autocommit=True) as connection:
        yield connection


def index_scans(conn: psycopg.Connection, index: str) -> int:
    """How many scans of `index` the server has counted (this session's flushed first)."""
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT 1")  # the flush happens when a statement ends
    for _ in range(50):
        row = conn.execute(
            "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = %s", [index]
        ).fetchone()
        if row is not None:
            return int(row[0])
        time.sleep(0.1)
    raise AssertionError(f"no index {index}")


def test_a_dense_search_of_one_collection_is_exact_and_reads_that_collection_alone(
    conn: psycopg.Connection, rows: tuple[list[str], list[str], np.ndarray, list[str]]
) -> None:
    ids, homes, vectors, _ = rows
    table = PgVectors(conn, DIM, prefix="t_scans_vectors")
    table.create(index=False)
    try:
        table.upsert(ids, vectors, metadatas=[{"collection": home} for home in homes])
        table.create_index()
        table.analyze()
        normed = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        rng = np.random.default_rng(11)
        before = index_scans(conn, "t_scans_vectors_collection_index")
        for _ in range(5):
            query = rng.normal(size=DIM).astype(np.float16).astype(np.float32)
            for readable in (("c3",), ("c3", "c5", "c7")):
                found = table.search(query, 50, collections=readable)
                held = np.isin(homes, readable)
                cosines = np.where(held, normed @ (query / np.linalg.norm(query)), -np.inf)
                exact = [ids[i] for i in np.argsort(-cosines, kind="stable")[:50]]
                assert [key for key, _ in found] == exact, readable  # the exact top 50, in order
                assert {homes[ids.index(key)] for key, _ in found} <= set(readable)
        assert index_scans(conn, "t_scans_vectors_collection_index") >= before + 10  # each through it
    finally:
        table.drop()


def test_a_bm25_search_of_one_collection_reads_it_alone_and_ranks_as_an_unpruned_scan(
    conn: psycopg.Connection, rows: tuple[list[str], list[str], np.ndarray, list[str]]
) -> None:
    ids, homes, _, texts = rows
    lexical = PgLexical(conn, "bm25", prefix="t_scans_lexical")
    lexical.create()
    try:
        lexical.add(ids, texts, collections=homes)
        lexical.analyze()
        rng = np.random.default_rng(13)
        queries = [" ".join(rng.choice(WORDS[:60], size=6)) for _ in range(8)]
        ways = [("c3",), ("c3", "c5", "c7"), tuple(NAMES[1:])]
        before = index_scans(conn, "t_scans_lexical_chunks_collection")
        found = {(q, way): lexical.search(q, 20, collections=way) for q in queries for way in ways}
        # each filtered search counted its collections' chunks through the collection index (and one of a
        # few collections scored them there; most collections go the floor's way, through the terms)
        assert index_scans(conn, "t_scans_lexical_chunks_collection") >= before + len(found)
        for (query, readable), hits in found.items():
            unpruned = lexical.search(query, 20, collections=readable, prune=False)
            assert [key for key, _ in hits] == [key for key, _ in unpruned], (query, readable)
            np.testing.assert_allclose([s for _, s in hits], [s for _, s in unpruned], rtol=1e-5)
            assert len(hits) == 20 and {homes[ids.index(key)] for key, _ in hits} <= set(readable)
    finally:
        lexical.drop()


COLLECTION_INDEXES = (
    "citewise_vectors_collection_index",
    "citewise_pvectors_collection_index",
    "citewise_lexical_chunks_collection",
    "citewise_plexical_chunks_collection",
)


def test_a_store_without_the_collection_indexes_gains_them_and_a_read_only_server_searches_it_as_it_is(
    postgres: Server, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"form_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = postgres.dsn.rsplit("/", 1)[0] + f"/{name}"
    read_only = url + "?options=-c%20default_transaction_read_only%3Don"  # as a hot standby refuses writes
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
        with PgStore(url) as store:
            store.create("all-MiniLM-L6-v2")
        with psycopg.connect(url, autocommit=True) as conn:  # as the citewise before them left a store
            conn.execute("UPDATE citewise_meta SET value = '3' WHERE key = 'schema'")
            for index in COLLECTION_INDEXES:
                conn.execute(f"DROP INDEX {index}")
        with caplog.at_level(logging.WARNING, logger="citewise.index.shared.writer"):
            SharedWriter(read_only).up_to_date()  # answers as it is (slower filtered searches), said once
        assert "cannot upgrade it" in caplog.text
        with PgStore(url) as store:
            assert not store.current() and store.searchable()

        with psycopg.connect(url, autocommit=True) as conn:  # a store without collections cannot be searched
            conn.execute("DELETE FROM citewise_meta WHERE key = 'schema'")
        with pytest.raises(IndexOpenError, match="against the primary"):
            SharedWriter(read_only).up_to_date()

        SharedWriter(url).up_to_date()  # where it can be written, it is brought up to date
        with PgStore(url) as store, psycopg.connect(url) as conn:
            assert store.current()
            made = {row[0] for row in conn.execute("SELECT indexname FROM pg_indexes")}
            assert set(COLLECTION_INDEXES) <= made
    finally:
        with psycopg.connect(postgres.dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_a_local_search_s_candidates_are_read_by_chunk_id_then_kept_by_collection(
    tmp_path: Path, embedder: Embedder, small_corpus_records: list[dict[str, str]]
) -> None:
    with Index.open(tmp_path / "index", embedder=embedder) as index:
        for name, records in (("a", small_corpus_records[:6]), ("b", small_corpus_records[6:])):
            path = tmp_path / f"{name}.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
            index.ingest([path], collection=name)
        homes = index.docstore.chunk_collections(index.docstore.chunk_ids())
        of_a = [chunk for chunk, home in homes.items() if home == "a"]
        ran: list[str] = []
        index.docstore.db.set_trace_callback(ran.append)
        asked = [*of_a[:3], *(f"gone-{n}" for n in range(150))]  # a search's hundred-odd candidates
        kept, matrix = index.docstore.stored_vectors(asked, embedder.dim, ("a",))
        records = index.docstore.chunks(asked, ("a",))
        index.docstore.db.set_trace_callback(None)
        assert kept == of_a[:3] and matrix.shape == (3, embedder.dim) and set(records) == set(of_a[:3])
        reads = [statement for statement in ran if "c.id IN" in statement]
        assert len(reads) == 2, ran
        for statement in reads:  # the first step of each plan: chunks by their primary key
            plan = index.docstore.db.execute("EXPLAIN QUERY PLAN " + statement).fetchall()
            assert plan[0][3].startswith("SEARCH c USING INDEX sqlite_autoindex_chunks"), plan
