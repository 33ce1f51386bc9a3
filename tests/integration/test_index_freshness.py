"""An index kept open in one process sees what other processes ingest and remove meanwhile.

A long-running process (the LangGraph server, the chat page) keeps one `Index` open; `citewise ingest` and
`citewise remove` run beside it. Its searches must answer from the index as it is now, never fail on a chunk
deleted meanwhile, and never rebuild BM25 without the write lock. The other processes are the real CLI
(`python -m citewise.app.cli`); waits are bounded by generous timeouts that only turn a hang into a failure.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import pytest

from citewise.index import Index
from citewise.index.embeddings import Embedder
from citewise.index.local.lexical import LexicalIndex
from citewise.index.scoring import SearchMode

pytestmark = pytest.mark.integration

WAIT_SECONDS = 300.0  # only a guard against a hang
MODES: tuple[SearchMode, ...] = ("hybrid", "bm25", "dense")

EXTRA = [
    {
        "_id": "axolotl",
        "title": "Axolotls",
        "text": "Axolotls are salamanders that regrow lost limbs, parts of the heart and the spinal cord.",
    },
    {
        "_id": "espresso",
        "title": "Espresso",
        "text": "Espresso is brewed by forcing hot water through finely ground coffee at high pressure.",
    },
]
WORDS = [
    "amber", "basalt", "cedar", "dune", "ember", "fjord", "granite", "harbour", "indigo", "juniper",
    "kelp", "lagoon", "meadow", "nectar", "obsidian", "prairie", "quartz", "reef", "saffron", "tundra",
]  # fmt: skip


def write_records(path: Path, records: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def generated(prefix: str, count: int) -> list[dict[str, str]]:
    """`count` one-sentence documents (one paragraph, one chunk each), distinct within and across prefixes."""
    return [
        {
            "_id": f"{prefix}-{i:03d}",
            "title": f"{prefix.title()} entry {i}",
            "text": (
                f"The {prefix} catalogue lists item {i} made of {WORDS[i % len(WORDS)]} "
                f"and {WORDS[(7 * i + 3) % len(WORDS)]}."
            ),
        }
        for i in range(count)
    ]


def citewise(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run the CLI in another process and wait for it."""
    return subprocess.run(
        [sys.executable, "-m", "citewise.app.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
        env={**os.environ, "CITEWISE_LOG": "WARNING"},
    )


def start_citewise(*args: str | Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "citewise.app.cli", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CITEWISE_LOG": "WARNING"},
    )


def key_of(index: Index, doc_id: str) -> str | None:
    document = index.document(doc_id)
    return document.key if document else None


def assert_consistent(index: Index) -> set[str]:
    """SQLite, Chroma and BM25 hold exactly the same chunks, and the stats say so."""
    sqlite, chroma, bm25 = index.docstore.chunk_ids(), index.vectors.ids(), index.lexical.ids
    assert len(sqlite) == len(set(sqlite)) and len(bm25) == len(set(bm25))
    assert set(sqlite) == chroma == set(bm25)
    stats = index.stats()
    assert stats.consistent, stats
    assert stats.chunks == len(sqlite) and stats.paragraphs_lexical == stats.paragraphs
    return set(sqlite)


def bm25_folders(root: Path) -> dict[str, set[str]]:
    return {name: {p.name for p in root.glob(f"{name}-*")} for name in ("bm25", "bm25p")}


@pytest.fixture
def corpus_halves(tmp_path: Path, small_corpus_records: list[dict[str, str]]) -> tuple[Path, Path]:
    """The small corpus as two files of six documents each."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    first = write_records(folder / "first.jsonl", small_corpus_records[:6])
    second = write_records(folder / "second.jsonl", small_corpus_records[6:])
    return first, second


# (1) one open index, another process ingests and removes ----------------------------------------------------
def test_an_open_index_answers_from_what_another_process_ingested_and_removed(
    tmp_path: Path, embedder: Embedder, corpus_halves: tuple[Path, Path]
) -> None:
    first, second = corpus_halves
    root = tmp_path / "idx"
    index = Index.open(root, embedder=embedder)
    try:
        assert index.ingest([first, second]).documents_added == 12  # this process's Chroma holds them all
        removed_ids = index.docstore.document_ids(str(second.resolve()))
        assert len(removed_ids) == 6
        for mode in MODES:
            (hit,) = index.search("honey bees pollinate crops", k=1, mode=mode)
            assert key_of(index, hit.doc_id) == "honeybees"
            assert all(key_of(index, h.doc_id) != "axolotl" for h in index.search("axolotl", mode=mode))

        extra = write_records(tmp_path / "extra.jsonl", EXTRA)
        added = citewise("ingest", extra, "--index", root)
        assert added.returncode == 0, added.stderr
        assert "documents +2 -0" in added.stdout

        for mode in MODES:
            (hit,) = index.search("salamander that regrows its limbs", k=1, mode=mode)
            assert key_of(index, hit.doc_id) == "axolotl", mode
            (hit,) = index.search("coffee brewed under pressure", k=1, mode=mode)
            assert key_of(index, hit.doc_id) == "espresso", mode
        assert index.stats().documents == 14
        assert_consistent(index)
        # this process loaded the BM25 indexes the other one built; it did not build its own
        assert index.lexical.folder and f"-{os.getpid()}-" not in index.lexical.folder
        assert index.paragraph_lexical.folder and f"-{os.getpid()}-" not in index.paragraph_lexical.folder

        gone = citewise("remove", second, "--index", root)
        assert gone.returncode == 0, gone.stderr
        assert "documents +0 -6" in gone.stdout

        # this process's embedded Chroma still returns the removed chunks: they are skipped, not a KeyError
        for mode in MODES:
            for query in ("honey bees pollinate crops", "the moon pulls the sea: spring and neap tides"):
                hits = index.search(query, k=10, mode=mode, redundancy=1.0)
                assert hits or mode == "bm25", (mode, query)  # no term of the query is left in the index
                assert not {h.doc_id for h in hits} & removed_ids, (mode, query)
                assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
            (hit,) = index.search("wild yeast starter for sourdough bread", k=1, mode=mode)
            assert key_of(index, hit.doc_id) == "sourdough"
            (hit,) = index.search("salamander that regrows its limbs", k=1, mode=mode)
            assert key_of(index, hit.doc_id) == "axolotl"
        stale = [chunk_id for chunk_id, _ in index.vectors.search(embedder.embed(["honey bees"])[0], 20)]
        assert index.docstore.chunks(stale).keys() <= set(index.docstore.chunk_ids())
        assert index.docstore.vectors(stale, embedder.dim).shape == (len(stale), embedder.dim)
        assert index.stats().documents == 8
        assert_consistent(index)
    finally:
        index.close()


# (2) two processes ingest into one index at once ------------------------------------------------------------
DENSE_CHECK = """
import json, sys
from citewise.index import Index
with Index.open(sys.argv[1], create=False) as index:
    ids = json.loads(sys.argv[2])
    vectors = index.docstore.vectors(ids, index.embedder.dim)
    print(json.dumps([index.vectors.search(vector, 1)[0][0] for vector in vectors]))
"""


def test_two_processes_ingesting_at_once_leave_exact_counts(
    tmp_path: Path, embedder: Embedder, small_corpus: Path
) -> None:
    root = tmp_path / "idx"
    index = Index.open(root, embedder=embedder)
    try:
        assert index.ingest([small_corpus]).documents_added == 12
        base_chunks = index.stats().chunks
        files = [write_records(tmp_path / f"{p}.jsonl", generated(p, 150)) for p in ("alpha", "beta")]
        runs = [start_citewise("ingest", file, "--index", root) for file in files]
        outcomes = []
        for run in runs:
            try:
                out, err = run.communicate(timeout=WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                run.kill()
                pytest.fail("a concurrent ingest did not finish")
            outcomes.append((run.returncode, out, err))
        for file, (code, out, err) in zip(files, outcomes, strict=True):
            if code != 0:  # refused while the other one held the write lock: nothing was written, try again
                assert "being written by another process" in err, err
                assert "documents +" not in out
                retried = citewise("ingest", file, "--index", root)
                assert retried.returncode == 0, retried.stderr
                out = retried.stdout
            assert "documents +150 -0" in out, out

        with Index.open(root, embedder=embedder, create=False) as fresh:
            stats = fresh.stats()
            assert (stats.files, stats.documents, stats.paragraphs) == (3, 312, 312)
            assert stats.chunks == base_chunks + 300
            ids = assert_consistent(fresh)
        # the index kept open meanwhile sees the same
        assert index.stats() == stats
        assert assert_consistent(index) == ids
        (hit,) = index.search("beta catalogue item 42 made of meadow", k=1, mode="bm25")
        assert key_of(index, hit.doc_id) == "beta-042"
        # one BM25 folder each is left, the one its pointer names
        assert bm25_folders(root) == {
            "bm25": {index.lexical.folder},
            "bm25p": {index.paragraph_lexical.folder},
        }
        # Chroma on disk holds both processes' vectors: a fresh process finds each chunk by its own vector
        sample = [
            chunk_id
            for chunk_id, record in index.chunks(sorted(ids)).items()
            if key_of(index, record.doc_id) in {"alpha-007", "alpha-149", "beta-000", "beta-100"}
        ]
        assert len(sample) == 4
        found = subprocess.run(
            [sys.executable, "-c", DENSE_CHECK, str(root), json.dumps(sample)],
            capture_output=True,
            text=True,
            timeout=WAIT_SECONDS,
        )
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout) == sample
    finally:
        index.close()


# (3) searches from several threads while another process writes --------------------------------------------
QUERIES = [
    "how do vaccines make antibodies and memory cells",
    "event horizon where gravity traps light",
    "gamma catalogue item 17 made of harbour",
    "honey bees pollinate crops",
]


def test_concurrent_searches_while_another_process_ingests_and_removes(
    tmp_path: Path, embedder: Embedder, small_corpus: Path
) -> None:
    root = tmp_path / "idx"
    index = Index.open(root, embedder=embedder)
    errors: list[str] = []
    generations: set[int] = set()
    searches = [0] * 4  # per worker
    stop = threading.Event()

    def search_until_stopped(worker: int) -> None:
        n = worker
        while not stop.is_set():
            n += 1
            try:
                generations.add(index.docstore.generation)
                hits = index.search(
                    QUERIES[n % len(QUERIES)],
                    k=5,
                    mode=MODES[n % len(MODES)],
                    fusion="rrf" if n % 4 == 0 else "minmax",
                )
                assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
                if n % 7 == 0:
                    index.stats()
                searches[worker] += 1
            except Exception:  # every failure is reported by the test, after the workers stop
                errors.append(traceback.format_exc())
                return

    try:
        assert index.ingest([small_corpus]).documents_added == 12
        extra = write_records(tmp_path / "gamma.jsonl", generated("gamma", 300))
        workers = [threading.Thread(target=search_until_stopped, args=(i,)) for i in range(4)]
        for worker in workers:
            worker.start()
        try:
            added = citewise("ingest", extra, "--index", root)
            assert added.returncode == 0, added.stderr
            gone = citewise("remove", small_corpus, "--index", root)  # chunks this process's Chroma holds
            assert gone.returncode == 0, gone.stderr
            after_writes = sum(searches) + 8
            deadline = time.monotonic() + WAIT_SECONDS
            while sum(searches) < after_writes and not errors and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            stop.set()
            for worker in workers:
                worker.join(timeout=WAIT_SECONDS)
        assert not errors, errors[0]
        assert min(searches) > 5
        assert len(generations) >= 3, generations  # searches ran before, during and after the writes

        stats = index.stats()
        assert (stats.documents, stats.files) == (300, 1)
        assert_consistent(index)
        for mode in MODES:
            hits = index.search("how do vaccines make antibodies and memory cells", k=5, mode=mode)
            assert hits or mode == "bm25", mode  # no term of the query is left in the index
            assert all(h.title.startswith("Gamma entry") for h in hits), mode
        (hit,) = index.search("gamma catalogue item 17 made of harbour", k=1, mode="bm25")
        assert key_of(index, hit.doc_id) == "gamma-017"
    finally:
        stop.set()
        index.close()


# BM25 is built only under the write lock -------------------------------------------------------------------
def test_a_reader_that_cannot_take_the_lock_reads_what_is_there(
    tmp_path: Path, embedder: Embedder, corpus_halves: tuple[Path, Path]
) -> None:
    """A writer holds the lock and has deleted documents but not yet rebuilt BM25 (nor updated Chroma)."""
    first, second = corpus_halves
    index = Index.open(tmp_path / "idx", embedder=embedder)
    try:
        index.ingest([first, second])
        folders = bm25_folders(index.root)
        built_for = index.lexical.generation
        with open(index.root / ".lock", "w") as held:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            deleted = index.docstore.forget_file(str(second.resolve()))  # as the writer's SQLite commit
            assert deleted
            for mode in MODES:
                hits = index.search("honey bees pollinate crops", k=10, mode=mode, redundancy=1.0)
                assert hits or mode == "bm25", mode  # BM25 finds only the deleted chunks
                assert not {h.chunk_id for h in hits} & set(deleted), mode
            assert bm25_folders(index.root) == folders  # nothing was built without the lock
            assert index.lexical.generation == built_for
            assert set(deleted) <= set(index.lexical.ids)  # the loaded BM25 still has them: skipped
            fcntl.flock(held, fcntl.LOCK_UN)
        # the writer is gone without rebuilding (as after a crash): the next search repairs BM25
        index.search("honey bees pollinate crops", k=3)
        assert index.lexical.generation == index.docstore.generation
        assert not set(deleted) & set(index.lexical.ids)
        assert bm25_folders(index.root) == {
            "bm25": {index.lexical.folder},
            "bm25p": {index.paragraph_lexical.folder},
        }
    finally:
        index.close()


def test_a_build_never_deletes_the_folder_another_build_switched_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    oldest = LexicalIndex(tmp_path, load=False)
    oldest.build(["a"], ["the oldest text"], 1)
    slow, fast = LexicalIndex(tmp_path, load=False), LexicalIndex(tmp_path, load=False)
    cleanup = LexicalIndex.delete_old

    def switched_in_meanwhile(self: LexicalIndex, keep: str) -> None:
        if self is slow:  # `fast` switches its folder in between `slow` switching and cleaning up
            with monkeypatch.context() as patch:
                patch.setattr(LexicalIndex, "delete_old", lambda *_, **__: None)
                fast.build(["c"], ["the fast text"], 3)
        cleanup(self, keep)

    monkeypatch.setattr(LexicalIndex, "delete_old", switched_in_meanwhile)
    slow.build(["b"], ["the slow text"], 2)
    assert {p.name for p in tmp_path.glob("bm25-*")} == {slow.folder, fast.folder}
    reader = LexicalIndex(tmp_path)
    assert (reader.folder, reader.generation, reader.ids) == (fast.folder, 3, ["c"])
