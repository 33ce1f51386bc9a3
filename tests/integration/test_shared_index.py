"""The shared tier answers searches as the local tier does (#28): real PostgreSQL with pgvector on loopback.

The same files (the twelve-document corpus, one file a record, and the bundled unarXive sample) go into a
local `Index` and, through the queue and the worker loop (`citewise.index.shared.pgworker.run`), into a
`PgStore`; `SharedIndex` on that store must rank as `Index` does. On these small corpora HNSW (ef_search 200
over a few hundred vectors) finds every true neighbour, so the hits are the same chunks in the same order.
Their lexical and dense scores agree to `SCORE_TOLERANCE` (halfvec vectors; BM25 in float64 against bm25s's
float32). The fused score agrees less closely, to `FUSED_TOLERANCE`: min-max fusion divides by the range of
the whole pool of candidates, and the pool's last members are near-ties that the rounding (or equal lexical
scores, ordered by chunk id here and by BM25 index position locally) settles either way, which moves the dense
minimum.
"""

from __future__ import annotations

import inspect
import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from citewise.index import Index
from citewise.index.embeddings import Embedder, load_embedder
from citewise.index.reading import SearchIndex
from citewise.index.records import IndexOpenError
from citewise.index.shared.index import SharedIndex
from citewise.index.shared.pgserver import Server
from citewise.index.shared.pgstore import PgStore
from citewise.index.shared.pgworker import run

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parents[2] / "citewise" / "samples" / "unarxive_sample.jsonl"
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
MODES = ("hybrid", "bm25", "dense")
SCORE_TOLERANCE = 1e-3
"""A chunk's lexical and dense scores in both tiers (halfvec: 1e-4 a cosine; float64 against float32 BM25)."""
FUSED_TOLERANCE = 1e-2
"""A chunk's fused score in both tiers (see the module: the pool's boundary moves the min-max range)."""


def _files(folder: Path, records: list[dict[str, str]]) -> list[Path]:
    """One BEIR jsonl file per record (a file is the workers' unit of work), and the sample."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for record in records:
        path = folder / f"{record['_id']}.jsonl"
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
        paths.append(path)
    return [*paths, SAMPLE]


@pytest.fixture(scope="module")
def tiers(
    tmp_path_factory: pytest.TempPathFactory,
    postgres: Server,
    embedder: Embedder,
    small_corpus_records: list[dict[str, str]],
) -> Iterator[tuple[Index, SharedIndex, PgStore]]:
    """The same files in a local index and, by the worker loop, in a new shared store; both opened."""
    root = tmp_path_factory.mktemp("shared-index")
    files = _files(root / "files", small_corpus_records)
    local = Index.open(root / "index", embedder=embedder)
    assert local.ingest(files).documents_added == len(small_corpus_records) + 3
    store = PgStore(postgres.dsn, prefix=f"s{uuid.uuid4().hex[:8]}")
    store.create(embedder.name)
    store.enqueue(files)
    outcomes = run(store, embedder)
    assert [o.state for o in outcomes] == ["done"] * len(files)
    shared = SharedIndex(postgres.dsn, prefix=store.prefix, embedder=embedder)
    yield local, shared, store
    shared.close()
    store.close()
    local.close()


@pytest.mark.parametrize("mode", MODES)
def test_shared_hits_are_the_local_hits(tiers: tuple[Index, SharedIndex, PgStore], mode: str) -> None:
    local, shared, _ = tiers
    for query in QUERIES:
        expected = local.search(query, k=10, mode=mode)  # type: ignore[arg-type]
        found = shared.search(query, k=10, mode=mode)  # type: ignore[arg-type]
        assert expected, query
        assert [h.chunk_id for h in found] == [h.chunk_id for h in expected], (mode, query)
        for ours, theirs in zip(found, expected, strict=True):
            assert (ours.doc_id, ours.paragraph_id, ours.text) == (
                theirs.doc_id,
                theirs.paragraph_id,
                theirs.text,
            )
            assert ours.bm25 == pytest.approx(theirs.bm25, abs=SCORE_TOLERANCE)
            assert ours.dense == pytest.approx(theirs.dense, abs=SCORE_TOLERANCE)
            assert ours.score == pytest.approx(theirs.score, abs=FUSED_TOLERANCE)


@pytest.mark.parametrize(
    "options",
    [
        {"fusion": "rrf"},
        {"alpha": 0.3, "paragraph_weight": 0.0},
        {"paragraph_dense_weight": 0.0},
        {"redundancy": 1.0, "candidates": 5},
        {"mode": "bm25", "paragraph_weight": 1.0},
    ],
)
def test_shared_search_options_match_the_local_ones(
    tiers: tuple[Index, SharedIndex, PgStore], options: dict[str, object]
) -> None:
    local, shared, _ = tiers
    for query in QUERIES:
        expected = local.search(query, k=10, **options)  # type: ignore[arg-type]
        found = shared.search(query, k=10, **options)  # type: ignore[arg-type]
        ours, theirs = [h.chunk_id for h in found], [h.chunk_id for h in expected]
        if options.get("fusion") == "rrf":
            # RRF scores ranks, not scores: two equal lexical scores (ordered by chunk id here, by BM25 index
            # position locally) swap ranks and move the fused scores of both; the top stays
            assert ours[0] == theirs[0] and len(set(ours) & set(theirs)) >= 8, (options, query)
        else:
            assert ours == theirs, (options, query)


def test_deep_lexical_lists_need_the_threshold_rounds(tiers: tuple[Index, SharedIndex, PgStore]) -> None:
    """With few candidates a round, chunks that only their paragraph's BM25 lifts still make the list."""
    local, shared, _ = tiers
    query = "retrosynthesis routes of single-step models"
    for candidates in (1, 3, 10, 40):
        expected = local.search(query, k=40, mode="bm25", candidates=candidates, redundancy=1.0)
        found = shared.search(query, k=40, mode="bm25", candidates=candidates, redundancy=1.0)
        assert [h.chunk_id for h in found] == [h.chunk_id for h in expected], candidates
    assert any(h.bm25 > 0 for h in found)


def test_reading_api_matches(tiers: tuple[Index, SharedIndex, PgStore]) -> None:
    local, shared, _ = tiers
    hit = local.search(QUERIES[2], k=1)[0]
    assert replace(shared.document(hit.doc_id), added="") == replace(local.document(hit.doc_id), added="")
    listed = [(d.id, d.file, d.title, d.metadata) for d in shared.documents()]
    assert listed == [(d.id, d.file, d.title, d.metadata) for d in local.documents()]
    assert len(listed) == shared.stats().documents and all(d.added for d in shared.documents())
    assert shared.documents(("nope",)) == [] and len(shared.documents(("default",))) == len(listed)
    assert shared.paragraphs(hit.doc_id) == local.paragraphs(hit.doc_id)
    assert shared.paragraph(hit.paragraph_id) == local.paragraph(hit.paragraph_id)
    assert shared.bibliography(hit.doc_id) == local.bibliography(hit.doc_id)
    assert shared.bibliography(hit.doc_id)  # an unarXive paper has references
    assert shared.chunks([hit.chunk_id, "nope"]) == local.chunks([hit.chunk_id])
    assert shared.document("nope") is None and shared.paragraph("nope") is None
    assert shared.embed(["a sentence"]).tobytes() == local.embed(["a sentence"]).tobytes()
    ours, theirs = shared.stats(), local.stats()
    for name in ("files", "documents", "paragraphs", "bibliography", "chunks", "paragraphs_lexical"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert ours.consistent
    shared.refresh()
    assert shared.search("   ") == []
    with pytest.raises(ValueError, match="mode"):
        shared.search("x", mode="sparse")  # type: ignore[arg-type]


def test_both_tiers_have_the_protocols_members() -> None:
    """`SearchIndex` is what the layers above take: both classes have its members, with its parameters."""
    members = [name for name in vars(SearchIndex) if not name.startswith("_") and name != "embedder"]
    assert {"search", "embed", "document", "paragraphs", "chunks", "stats", "refresh", "close"} <= set(
        members
    )
    for cls in (Index, SharedIndex):
        for name in members:
            wanted = list(inspect.signature(getattr(SearchIndex, name)).parameters)
            assert list(inspect.signature(getattr(cls, name)).parameters) == wanted, (cls, name)


def test_a_document_committed_later_is_found_without_reopening(
    tiers: tuple[Index, SharedIndex, PgStore], tmp_path: Path, embedder: Embedder
) -> None:
    _, shared, store = tiers
    query = "zeppelin airship hangar in Friedrichshafen"
    assert all("Friedrichshafen" not in h.text for h in shared.search(query, k=5))
    record = {
        "_id": "zeppelin",
        "title": "Airships",
        "text": "A zeppelin airship hangar stood in Friedrichshafen.",
    }
    path = tmp_path / "zeppelin.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    store.enqueue([path])
    assert [o.documents for o in run(store, embedder)] == [1]
    for mode in MODES:
        hits = shared.search(query, k=5, mode=mode)  # type: ignore[arg-type]
        assert "Friedrichshafen" in hits[0].text, mode


def test_two_threads_search_at_once(tiers: tuple[Index, SharedIndex, PgStore]) -> None:
    _, shared, _ = tiers
    expected = {query: [h.chunk_id for h in shared.search(query, k=10)] for query in QUERIES}
    found: dict[int, list[list[str]]] = {0: [], 1: []}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def searcher(n: int) -> None:
        try:
            start.wait()
            for _ in range(3):
                for query in QUERIES[n::2] + QUERIES[1 - n :: 2]:
                    found[n].append([h.chunk_id for h in shared.search(query, k=10)])
        except BaseException as error:  # noqa: BLE001 - re-raised in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=searcher, args=(n,)) for n in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors
    for n in (0, 1):
        order = (QUERIES[n::2] + QUERIES[1 - n :: 2]) * 3
        assert found[n] == [expected[query] for query in order]


def test_paired_queries_one_at_a_time_find_the_same_hits(
    tiers: tuple[Index, SharedIndex, PgStore], postgres: Server, embedder: Embedder
) -> None:
    """The side connection (same snapshot, queried meanwhile) changes no hit; it opens at a first search."""
    _, shared, store = tiers
    with SharedIndex(postgres.dsn, prefix=store.prefix, embedder=embedder, parallel=False) as sequential:
        for mode in MODES:
            for query in QUERIES:
                ours = shared.search(query, k=10, mode=mode)  # type: ignore[arg-type]
                theirs = sequential.search(query, k=10, mode=mode)  # type: ignore[arg-type]
                assert [(h.chunk_id, h.bm25, h.dense, h.score) for h in ours] == [
                    (h.chunk_id, h.bm25, h.dense, h.score) for h in theirs
                ], (mode, query)
    with SharedIndex(postgres.dsn, prefix=store.prefix, embedder=embedder) as fresh:
        assert fresh._side_pool is None  # noqa: SLF001 - nothing opened before a search needs it
        fresh.search(QUERIES[0], k=3)
        assert fresh._side_pool is not None  # noqa: SLF001


def test_more_searches_at_once_than_connections_all_end(
    tiers: tuple[Index, SharedIndex, PgStore], postgres: Server, embedder: Embedder
) -> None:
    """Six threads on two connections and two side ones: every search ends, with its own hits."""
    _, shared, store = tiers
    expected = {query: [h.chunk_id for h in shared.search(query, k=10)] for query in QUERIES}
    found: list[tuple[str, list[str]]] = []
    errors: list[BaseException] = []
    with SharedIndex(postgres.dsn, prefix=store.prefix, embedder=embedder, connections=2) as narrow:
        start = threading.Barrier(6)

        def searcher(n: int) -> None:
            try:
                start.wait()
                for query in QUERIES[n % len(QUERIES) :] + QUERIES[: n % len(QUERIES)]:
                    found.append((query, [h.chunk_id for h in narrow.search(query, k=10)]))
            except BaseException as error:  # noqa: BLE001 - re-raised in the test's thread
                errors.append(error)

        threads = [threading.Thread(target=searcher, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
    assert not errors, errors
    assert len(found) == 6 * len(QUERIES)
    assert all(ids == expected[query] for query, ids in found)


def test_open_refuses_a_missing_store_and_another_model(
    postgres: Server, tiers: tuple[Index, SharedIndex, PgStore]
) -> None:
    _, _, store = tiers
    with pytest.raises(IndexOpenError, match="no citewise store"):
        SharedIndex(postgres.dsn, prefix=f"absent{uuid.uuid4().hex[:6]}")
    with pytest.raises(IndexOpenError, match="embedding model"):
        SharedIndex(postgres.dsn, prefix=store.prefix, embedder=load_embedder("all-MiniLM-L6-v2-int8"))
    with SharedIndex(postgres.dsn, prefix=store.prefix) as opened:  # the store's model, by its name
        assert opened.embedder.name == store.settings().model
