"""The shared tier with its vectors in a Chroma server (#28): real `chroma run` and PostgreSQL on loopback.

The same files go through the queue and the worker loop into two stores of one PostgreSQL server: one keeps
its vectors in pgvector (the default), the other in a Chroma server (`--vectors chroma://host:port`). Read
through `SharedIndex`, both must rank alike. On these small corpora both HNSW graphs (ef_search 200 over a
few hundred vectors) find every true neighbour, so the hits are the same chunks in the same order; dense
scores agree to `SCORE_TOLERANCE` (pgvector keeps halfvec, Chroma float32), fused ones to `FUSED_TOLERANCE`
(min-max fusion divides by the whole pool's range, whose near-tied edge that rounding moves: see
test_shared_index.py).

A Chroma server cannot join a PostgreSQL transaction: a worker upserts a file's vectors before it commits,
so one killed in between leaves vectors PostgreSQL never holds. Those must never be seen, and the file must
go to the next worker (`citewise.index.shared.chromavectors` says how).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from support.chroma import ChromaServer, free_port

from citewise.index.embeddings import Embedder
from citewise.index.records import IndexOpenError
from citewise.index.shared.chromavectors import vector_choice
from citewise.index.shared.index import SharedIndex
from citewise.index.shared.pgserver import Server
from citewise.index.shared.pgstore import PgStore
from citewise.index.shared.pgworker import run
from citewise.index.shared.writes import Forgotten

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "citewise" / "samples" / "unarxive_sample.jsonl"
SECONDS = 300  # the most a worker process may take (loading the model on a busy machine included)
QUERIES = [
    "how do vaccines train the immune system",
    "glaciers shrinking as the climate warms",
    "adversarial text generation by mutation",
    "transmission spectroscopy of a terrestrial exoplanet atmosphere",
    "multi-step retrosynthesis prediction",
    "single-step retrosynthesis models evaluated on routes",
    "photosynthesis turns light into chemical energy",
    "machine learning classifiers fooled by perturbed inputs",
    "spectrograph observations of transits",
    "what causes earthquakes",
]
SCORE_TOLERANCE = 1e-3
"""A chunk's dense score in both stores (a halfvec cosine is within 1e-4 of float32's)."""
FUSED_TOLERANCE = 1e-2
"""A chunk's fused score in both stores (see the module)."""

HOLDER = """
import sys
from citewise.index.shared.pgstore import PgStore
from citewise.index.shared.pgworker import store_embedder

dsn, prefix = sys.argv[1:3]
with PgStore(dsn, prefix=prefix) as store:
    embedder = store_embedder(store)

    def hold(item):
        print("inside", item.id, flush=True)
        sys.stdin.readline()

    outcome = store.work(embedder, worker="holder", before_commit=hold)
    print("committed", outcome.item, flush=True)
"""
"""A worker that claims one file, writes it (its vectors upserted into Chroma) and waits before its commit."""


@pytest.fixture(scope="module")
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """One `chroma run` on 127.0.0.1 for the module."""
    folder = tmp_path_factory.mktemp("chroma")
    server = ChromaServer(folder / "logs")
    server.start(folder / "data")
    try:
        yield server
    finally:
        server.stop()


def _choice(server: ChromaServer) -> str:
    choice = vector_choice(f"chroma://127.0.0.1:{server.port}")
    assert choice is not None
    return choice


def _files(folder: Path, records: list[dict[str, str]]) -> list[Path]:
    """One BEIR jsonl file per record (a file is the workers' unit of work)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for record in records:
        path = folder / f"{record['_id']}.jsonl"
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def _filled(dsn: str, embedder: Embedder, files: list[Path], vectors: str | None) -> PgStore:
    store = PgStore(dsn, prefix=f"c{uuid.uuid4().hex[:8]}")
    store.create(embedder.name, vectors=vectors)
    store.enqueue(files)
    assert [o.state for o in run(store, embedder)] == ["done"] * len(files)
    return store


@pytest.fixture(scope="module")
def both(
    tmp_path_factory: pytest.TempPathFactory,
    postgres: Server,
    chroma: ChromaServer,
    embedder: Embedder,
    small_corpus_records: list[dict[str, str]],
) -> Iterator[tuple[SharedIndex, SharedIndex, PgStore]]:
    """The same files in a pgvector store and a Chroma store, by the worker loop; both opened to search."""
    files = [*_files(tmp_path_factory.mktemp("both") / "files", small_corpus_records), SAMPLE]
    pg = _filled(postgres.dsn, embedder, files, None)
    ch = _filled(postgres.dsn, embedder, files, _choice(chroma))
    pg_index = SharedIndex(postgres.dsn, prefix=pg.prefix, embedder=embedder)
    ch_index = SharedIndex(postgres.dsn, prefix=ch.prefix, embedder=embedder)
    yield pg_index, ch_index, ch
    for opened in (pg_index, ch_index, pg, ch):
        opened.close()


def _collection_ids(server: ChromaServer, store: PgStore, kind: str = "chunks") -> dict[str, str]:
    """Chunk (or paragraph) id -> document id of every vector the store's collection holds, read directly."""
    collection = server.client().get_collection(f"{store.settings().collection}-{kind}")
    found = collection.get(include=["metadatas"])
    return {
        key: str(meta["doc_id"]) for key, meta in zip(found["ids"], found["metadatas"] or [], strict=True)
    }


def _stored_ids(store: PgStore, table: str = "chunks") -> set[str]:
    return {r[0] for r in store.conn.execute(f"SELECT id FROM {store.prefix}_{table}")}


@pytest.mark.parametrize("mode", ["hybrid", "dense", "bm25"])
def test_chroma_hits_are_the_pgvector_hits(both: tuple[SharedIndex, SharedIndex, PgStore], mode: str) -> None:
    pgvector, chroma, _ = both
    for query in QUERIES:
        expected = pgvector.search(query, k=10, mode=mode)  # type: ignore[arg-type]
        found = chroma.search(query, k=10, mode=mode)  # type: ignore[arg-type]
        assert expected, query
        assert [h.chunk_id for h in found] == [h.chunk_id for h in expected], (mode, query)
        for ours, theirs in zip(found, expected, strict=True):
            assert (ours.doc_id, ours.paragraph_id, ours.text) == (
                theirs.doc_id,
                theirs.paragraph_id,
                theirs.text,
            )
            assert ours.bm25 == pytest.approx(theirs.bm25, abs=1e-9)  # the same PostgreSQL BM25
            assert ours.dense == pytest.approx(theirs.dense, abs=SCORE_TOLERANCE)
            assert ours.score == pytest.approx(theirs.score, abs=FUSED_TOLERANCE)


@pytest.mark.parametrize(
    "options",
    [{"paragraph_dense_weight": 0.0}, {"alpha": 0.8}, {"redundancy": 1.0, "candidates": 5, "mode": "dense"}],
)
def test_chroma_search_options_match_pgvector(
    both: tuple[SharedIndex, SharedIndex, PgStore], options: dict[str, object]
) -> None:
    pgvector, chroma, _ = both
    for query in QUERIES:
        expected = [h.chunk_id for h in pgvector.search(query, k=10, **options)]  # type: ignore[arg-type]
        assert [h.chunk_id for h in chroma.search(query, k=10, **options)] == expected, (options, query)  # type: ignore[arg-type]


def test_a_search_of_a_collection_filters_inside_chroma_as_inside_pgvector(
    both: tuple[SharedIndex, SharedIndex, PgStore], postgres: Server, embedder: Embedder, chroma: ChromaServer
) -> None:
    """Files queued again into a collection move there in PostgreSQL and in Chroma's metadata; a search of
    it finds only its chunks, still k, the same on both vector stores (Chroma's `where`, pgvector's WHERE)."""
    pgvector, in_chroma, ch = both
    pg = PgStore(postgres.dsn, prefix=pgvector.prefix)
    try:
        moved = [f for f in ch.files() if Path(f).stem in ("vaccines", "black-holes", "tides", "jazz")]
        assert len(moved) == 4
        for store in (pg, ch):
            store.enqueue(moved, "private")
            assert [o.state for o in run(store, embedder)] == ["done"] * 4
        private = {d for f in moved for d in ch.document_ids(f)}
        held = _collection_ids(chroma, ch)
        meta = chroma.client().get_collection(f"{ch.settings().collection}-chunks").get(include=["metadatas"])
        placed = {k: m["collection"] for k, m in zip(meta["ids"], meta["metadatas"] or [], strict=True)}
        assert {placed[k] for k, doc in held.items() if doc in private} == {"private"}
        for query in QUERIES:
            expected = pgvector.search(query, k=5, collections=("private",))
            found = in_chroma.search(query, k=5, collections=("private",))
            assert len(found) == 5 and {h.doc_id for h in found} <= private, query
            assert [h.chunk_id for h in found] == [h.chunk_id for h in expected], query
            assert not {h.doc_id for h in in_chroma.search(query, k=10, collections=("default",))} & private
    finally:
        for store in (pg, ch):  # back to the default collection, for the other tests
            store.enqueue(moved, "default")
            run(store, embedder)
        pg.close()


def test_the_vectors_are_on_the_chroma_server_and_agree_with_postgresql(
    both: tuple[SharedIndex, SharedIndex, PgStore], chroma: ChromaServer, postgres: Server
) -> None:
    pgvector, index, store = both
    assert store.settings().vectors == f"chroma://127.0.0.1:{chroma.port}"
    assert store.settings().collection.startswith(f"citewise-{store.prefix}-")
    missing = store.conn.execute("SELECT to_regclass(%s)", [f"{store.prefix}_vectors_chunks"]).fetchone()
    assert missing == (None,)  # no pgvector table: the vectors are on the server only
    assert set(_collection_ids(chroma, store)) == _stored_ids(store)
    assert set(_collection_ids(chroma, store, "paragraphs")) == _stored_ids(store, "paragraphs")
    stats = index.stats()
    assert stats.consistent and stats.chunk_vectors == stats.chunks == pgvector.stats().chunks
    hit = pgvector.search(QUERIES[0], k=3)
    ids = [h.chunk_id for h in hit]
    assert abs(index.chunk_vectors(ids) - pgvector.chunk_vectors(ids)).max() < SCORE_TOLERANCE
    assert index.chunks(ids) == pgvector.chunks(ids)


def test_the_vector_store_is_recorded_and_another_is_refused(
    both: tuple[SharedIndex, SharedIndex, PgStore], chroma: ChromaServer, postgres: Server, embedder: Embedder
) -> None:
    pgvector, _, store = both
    choice = _choice(chroma)
    with PgStore(postgres.dsn, prefix=store.prefix) as again:  # a second creator: the first one's choice
        assert again.create(embedder.name) == store.settings()
        assert again.create(embedder.name, vectors=choice) == store.settings()
        with pytest.raises(
            IndexOpenError, match=f"keeps its vectors in the Chroma server {choice}, not in pgvector"
        ):
            again.create(embedder.name, vectors="pgvector")
    with PgStore(postgres.dsn, prefix=pgvector.prefix) as other:
        assert other.settings().vectors == "pgvector" and other.settings().collection == ""
        with pytest.raises(
            IndexOpenError, match=f"keeps its vectors in pgvector, not in the Chroma server {choice}"
        ):
            other.create(embedder.name, vectors=choice)


def _line(process: subprocess.Popen[str], seconds: float = SECONDS) -> str:
    """The next line a process prints (failing with its stderr if it ends or stays silent first)."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if selector.select(seconds):
            line = process.stdout.readline()
            if line:
                return line.strip()
    process.kill()
    _, errors = process.communicate()
    raise AssertionError(f"the worker printed nothing more; its stderr:\n{errors}")


def _environment() -> dict[str, str]:
    """Worker processes import this checkout's citewise, offline."""
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "HF_HUB_OFFLINE": "1"}


def _holder(server: Server, store: PgStore, name: str) -> subprocess.Popen[str]:
    """Start a worker that stops after its Chroma upsert, before its commit; returns once it is there."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, f"{server.dsn}?application_name={name}", store.prefix],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_environment(),
    )
    assert _line(process).startswith("inside ")
    return process


def _kill(holder: subprocess.Popen[str], store: PgStore, name: str) -> None:
    """SIGKILL a holder and wait until the server has ended its sessions (rolled its transaction back)."""
    try:
        holder.send_signal(signal.SIGKILL)
        holder.wait(SECONDS)
    finally:
        holder.kill()
        holder.communicate()
    sessions = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
    for _ in range(300):
        if store.conn.execute(sessions, [name]).fetchone() == (0,):
            return
        time.sleep(0.1)
    raise AssertionError("the killed worker's sessions did not end")


@pytest.fixture
def store(postgres: Server, chroma: ChromaServer, embedder: Embedder) -> Iterator[PgStore]:
    """A new store (its own prefix and collections) with its vectors in the module's Chroma server."""
    with PgStore(postgres.dsn, prefix=f"k{uuid.uuid4().hex[:8]}") as made:
        made.create(embedder.name, vectors=_choice(chroma))
        yield made


def test_a_worker_killed_between_the_chroma_upsert_and_the_commit_leaves_nothing_visible(
    postgres: Server,
    chroma: ChromaServer,
    store: PgStore,
    embedder: Embedder,
    tmp_path: Path,
    small_corpus_records: list[dict[str, str]],
) -> None:
    sourdough = next(r for r in small_corpus_records if r["title"] == "Sourdough baking")
    others = [r for r in small_corpus_records if r is not sourdough]
    (first, *rest) = _files(tmp_path / "files", [sourdough, *others[:2]])
    store.enqueue([first])
    _kill(_holder(postgres, store, "doomed"), store, "doomed")
    store.enqueue(rest)
    orphans = _collection_ids(chroma, store)
    assert orphans and not _stored_ids(store)  # its vectors reached Chroma; its rows were rolled back
    with SharedIndex(postgres.dsn, prefix=store.prefix, embedder=embedder) as index:
        for mode in ("dense", "hybrid"):
            assert index.search("wild yeast starter for sourdough bread", k=5, mode=mode) == []  # type: ignore[arg-type]
        assert index.stats().chunks == 0 and index.stats().chunk_vectors == len(orphans)
        assert store.outcomes() == [] and store.queued() == 3

        outcomes = run(store, embedder, worker="next")  # its file first: the queue's order
        assert [(o.path, o.state, o.worker) for o in outcomes][0] == (str(first.resolve()), "done", "next")
        assert all(o.state == "done" and o.documents == 1 for o in outcomes)
        held = _collection_ids(chroma, store)
        assert (
            set(held) == _stored_ids(store) >= set(orphans)
        )  # the retry rewrote the same ids: no orphan left
        for mode in ("dense", "hybrid"):
            (best, *_) = index.search("wild yeast starter for sourdough bread", k=5, mode=mode)  # type: ignore[arg-type]
            assert best.title == "Sourdough baking", mode
        assert index.stats().consistent

        # a killed worker whose file is not retried: its orphans stay invisible until a sweep deletes them
        (late,) = _files(tmp_path / "late", others[5:6])
        store.enqueue([late])
        _kill(_holder(postgres, store, "doomed2"), store, "doomed2")
        extra = set(_collection_ids(chroma, store)) - _stored_ids(store)
        assert extra and not index.stats().consistent
        stored = _stored_ids(store)
        for mode in ("dense", "hybrid"):  # the orphans are the nearest to their own text, and take no place
            found = index.search(others[5]["text"], k=len(stored), mode=mode, redundancy=1.0)  # type: ignore[arg-type]
            assert {h.chunk_id for h in found} == stored, mode
        paragraphs = set(_collection_ids(chroma, store, "paragraphs")) - _stored_ids(store, "paragraphs")
        assert store.sweep() == len(extra) + len(paragraphs) > len(extra)
        assert set(_collection_ids(chroma, store)) == _stored_ids(store)
        assert index.stats().consistent


def test_removal_deletes_from_postgresql_then_chroma_and_spares_a_document_being_stored(
    postgres: Server,
    chroma: ChromaServer,
    store: PgStore,
    embedder: Embedder,
    tmp_path: Path,
    small_corpus_records: list[dict[str, str]],
) -> None:
    records = small_corpus_records[:3]
    changing = tmp_path / "changing.jsonl"
    changing.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    store.enqueue([changing])
    run(store, embedder)
    before = _collection_ids(chroma, store)
    changing.write_text("".join(json.dumps(r) + "\n" for r in records[1:]), encoding="utf-8")
    store.enqueue([changing])
    (outcome,) = run(store, embedder)
    assert outcome.removed == 1
    after = _collection_ids(chroma, store)
    assert set(after) == _stored_ids(store) < set(before)  # the removed document's vectors went too

    # the removed document arrives again from another file, and its worker holds its commit: a removal's
    # Chroma delete of the same ids waits for that commit (the document's advisory lock), then spares them
    (again,) = _files(tmp_path / "again", records[:1])
    store.enqueue([again])
    holder = _holder(postgres, store, "storing")
    gone = {key: doc for key, doc in before.items() if key not in after}
    assert set(gone) <= set(_collection_ids(chroma, store))  # upserted, not committed
    forgotten = Forgotten()
    forgotten.add(set(gone.values()), gone, [])
    deleted: list[int] = []
    with PgStore(f"{postgres.dsn}?application_name=remover", prefix=store.prefix) as remover:
        thread = threading.Thread(target=lambda: deleted.append(remover._forget(forgotten)))
        thread.start()
        waiting = """SELECT count(*) FROM pg_stat_activity
            WHERE application_name = 'remover' AND wait_event_type = 'Lock'"""
        try:
            for _ in range(SECONDS * 10):
                if store.conn.execute(waiting).fetchone() == (1,) or not thread.is_alive():
                    break
                time.sleep(0.1)
            assert store.conn.execute(waiting).fetchone() == (1,)  # waiting for the holder's commit
            assert holder.stdin is not None
            holder.stdin.write("\n")
            holder.stdin.flush()
            assert _line(holder).startswith("committed ")
            thread.join(SECONDS)
        finally:
            holder.kill()
            holder.communicate()
    assert deleted == [0]
    assert set(_collection_ids(chroma, store)) == _stored_ids(store) >= set(gone)


def test_an_unreachable_chroma_server_is_a_clear_one_line_error(
    postgres: Server, embedder: Embedder, tmp_path: Path, small_corpus_records: list[dict[str, str]]
) -> None:
    dead = vector_choice(f"chroma://127.0.0.1:{free_port()}")
    assert dead is not None
    with PgStore(postgres.dsn, prefix=f"u{uuid.uuid4().hex[:8]}") as refused:
        with pytest.raises(IndexOpenError, match=f"cannot reach the Chroma server at {dead}") as raised:
            refused.create(embedder.name, vectors=dead)
        assert "\n" not in str(raised.value)
        exists = refused.conn.execute("SELECT to_regclass(%s)", [f"{refused.prefix}_meta"]).fetchone()
        assert exists == (None,)  # refused before anything was recorded

    # a store whose server goes away: opening it to search, and a worker, say so in one line
    server = ChromaServer(tmp_path / "logs")
    server.start(tmp_path / "data")
    try:
        made = _filled(
            postgres.dsn, embedder, _files(tmp_path / "files", small_corpus_records[:1]), _choice(server)
        )
    finally:
        server.stop()
    with made:
        with pytest.raises(
            IndexOpenError, match=f"cannot reach the Chroma server at {_choice(server)}"
        ) as raised:
            SharedIndex(postgres.dsn, prefix=made.prefix, embedder=embedder)
        assert "\n" not in str(raised.value)
        worker = subprocess.run(
            [
                sys.executable,
                "-m",
                "citewise.index.shared.pgworker",
                "--store",
                postgres.dsn,
                "--prefix",
                made.prefix,
            ],
            capture_output=True,
            text=True,
            timeout=SECONDS,
            env=_environment(),
        )
        assert worker.returncode == 2, worker.stderr
        (line,) = worker.stderr.strip().splitlines()
        assert line.startswith(f"error: cannot reach the Chroma server at {_choice(server)}"), line


def test_ingest_store_vectors_from_the_command_line(postgres: Server, chroma: ChromaServer) -> None:
    name = f"chromacli_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = postgres.dsn.rsplit("/", 1)[0] + f"/{name}"

    def citewise(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "citewise.app.cli", *arguments],
            capture_output=True, text=True, timeout=900, env=_environment(),
        )  # fmt: skip

    try:
        made = citewise(
            "ingest", str(SAMPLE), "--store", url, "--vectors", f"chroma://127.0.0.1:{chroma.port}"
        )
        assert made.returncode == 0 and "documents +3" in made.stderr, made.stderr
        with PgStore(url) as store:
            assert store.settings().vectors == _choice(chroma)
            assert set(_collection_ids(chroma, store)) == _stored_ids(store) != set()
        other = citewise("ingest", str(SAMPLE), "--store", url, "--vectors", "pgvector")
        assert other.returncode == 2
        assert other.stderr.strip().splitlines() == [
            f"error: shared store: the shared store 'citewise' keeps its vectors in the Chroma server "
            f"{_choice(chroma)}, not in pgvector: leave --vectors out, or use another prefix or database"
        ]
        dead = citewise(
            "ingest", str(SAMPLE), "--store", url, "--vectors", f"chroma://127.0.0.1:{free_port()}"
        )
        assert dead.returncode == 2 and len(dead.stderr.strip().splitlines()) == 1, dead.stderr
        assert "cannot reach the Chroma server" in dead.stderr
    finally:
        with psycopg.connect(postgres.dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
