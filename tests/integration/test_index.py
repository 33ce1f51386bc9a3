"""The index end to end: embedded Chroma, bm25s and MiniLM under tmp_path, kept in agreement."""

from __future__ import annotations

import fcntl
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document as LCDocument

from citewise.index import ChunkingConfig, Index, IndexOpenError
from citewise.index.embeddings import Embedder
from citewise.index.local.paragraphs import ParagraphVectors

pytestmark = pytest.mark.integration

# an obvious query per document of the small corpus, and the document that must come first
OBVIOUS = [
    ("how do vaccines make antibodies and memory cells", "vaccines"),
    ("event horizon where gravity traps light", "black-holes"),
    ("wild yeast starter for sourdough bread", "sourdough"),
    ("chlorophyll turns sunlight into sugar", "photosynthesis"),
    ("the moon pulls the sea: spring and neap tides", "tides"),
]


def read_records(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_records(path: Path, records: list[dict[str, str]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def store_ids(index: Index) -> tuple[list[str], set[str], list[str]]:
    """Chunk ids as each store holds them: SQLite, Chroma, BM25."""
    return index.docstore.chunk_ids(), index.vectors.ids(), list(index.lexical.ids)


def assert_stores_agree(index: Index) -> set[str]:
    sqlite, chroma, bm25 = store_ids(index)
    assert len(set(sqlite)) == len(sqlite)
    assert len(set(bm25)) == len(bm25)
    assert set(sqlite) == chroma == set(bm25)
    stats = index.stats()
    assert stats.chunks == stats.chunk_vectors == stats.chunks_lexical == len(sqlite)
    assert stats.consistent
    return set(sqlite)


def chunk_ids_of(index: Index, key: str) -> set[str]:
    """The chunk ids of the stored document with this BEIR id."""
    ids = {
        chunk_id
        for chunk_id, record in index.chunks(index.docstore.chunk_ids()).items()
        if index.document(record.doc_id).key == key  # type: ignore[union-attr]
    }
    return ids


def keys_of(index: Index) -> set[str]:
    return {index.document(doc_id).key for doc_id in index.docstore.document_ids()}  # type: ignore[union-attr]


@pytest.fixture
def index(tmp_path: Path, embedder: Embedder) -> Iterator[Index]:
    opened = Index.open(tmp_path / "idx", embedder=embedder)
    yield opened
    opened.close()


@pytest.fixture
def filled(index: Index, small_corpus: Path) -> Index:
    report = index.ingest([small_corpus])
    assert report.documents_added == 12, report
    return index


@pytest.fixture(scope="module")
def searchable(
    tmp_path_factory: pytest.TempPathFactory, embedder: Embedder, small_corpus_records: list[dict[str, str]]
) -> Iterator[Index]:
    """One filled index shared by the tests that only read it."""
    root = tmp_path_factory.mktemp("searchable")
    corpus = root / "corpus.jsonl"
    write_records(corpus, small_corpus_records)
    opened = Index.open(root / "idx", embedder=embedder)
    assert opened.ingest([corpus]).documents_added == 12
    yield opened
    opened.close()


# ingest ----------------------------------------------------------------------------------------------------
def test_ingest_fills_the_three_stores_in_agreement(index: Index, small_corpus: Path) -> None:
    report = index.ingest([small_corpus])
    assert report.skipped == []
    assert (report.files, report.ingested_files, report.unchanged_files) == (1, 1, 0)
    assert report.documents_added == 12
    assert report.documents_removed == report.chunks_removed == 0
    ids = assert_stores_agree(index)
    stats = index.stats()
    assert len(ids) == report.chunks_added == stats.chunks
    assert stats.chunks >= 12
    assert (stats.files, stats.documents, stats.paragraphs) == (1, 12, 12)
    assert stats.generation > 0
    assert keys_of(index) == {r["_id"] for r in read_records(small_corpus)}


def test_ingest_of_a_folder_with_text_markdown_and_jsonl(index: Index, small_corpus: Path) -> None:
    folder = small_corpus.parent
    (folder / "espresso.md").write_text(
        "# Espresso\n\n## Brewing\n\nEspresso is brewed by forcing hot water through finely ground coffee "
        "at nine bars of pressure. A good shot has a thick golden crema.\n",
        encoding="utf-8",
    )
    (folder / "knots.txt").write_text(
        "Sailing knots\n\nThe bowline makes a fixed loop at the end of a rope. Sailors tie a cleat hitch to "
        "secure a line to a cleat on the dock.\n",
        encoding="utf-8",
    )
    report = index.ingest([folder])
    assert report.skipped == []
    assert (report.files, report.ingested_files, report.documents_added) == (3, 3, 14)
    assert_stores_agree(index)
    assert index.stats().files == 3

    (hit,) = index.search("espresso crema pressure", k=1)
    assert hit.title == "Espresso"
    assert hit.section == "Brewing"
    (hit,) = index.search("which knot makes a fixed loop in a rope", k=1)
    assert hit.title == "Sailing knots"


# search ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["hybrid", "bm25", "dense"])
@pytest.mark.parametrize(("query", "key"), OBVIOUS)
def test_obvious_query_finds_its_document_first(searchable: Index, mode: str, query: str, key: str) -> None:
    hits = searchable.search(query, k=5, mode=mode)  # type: ignore[arg-type]
    assert hits
    assert searchable.document(hits[0].doc_id).key == key  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["hybrid", "bm25", "dense"])
def test_hits_carry_ids_texts_scores_and_ranks(searchable: Index, mode: str) -> None:
    stored = set(searchable.docstore.chunk_ids())
    hits = searchable.search("bacteria in bread and vaccines", k=6, mode=mode, redundancy=1.0)  # type: ignore[arg-type]
    assert 2 <= len(hits) <= 6
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert len({h.chunk_id for h in hits}) == len(hits)
    for hit in hits:
        assert hit.chunk_id in stored
        record = searchable.chunks([hit.chunk_id])[hit.chunk_id]
        assert (hit.doc_id, hit.text, hit.title) == (record.doc_id, record.text, record.title)
        assert hit.paragraph_id == f"{hit.doc_id}:p0"
        document = searchable.document(hit.doc_id)
        assert document is not None and document.title == hit.title
        assert hit.text and hit.text in " ".join(p.text for p in searchable.paragraphs(hit.doc_id))
        assert hit.bm25 >= 0.0
        assert -1.0 <= hit.dense <= 1.0 + 1e-6
        assert set(hit.as_dict()) >= {"chunk_id", "doc_id", "title", "text", "bm25", "dense", "score", "rank"}
        if mode == "bm25":
            assert hit.score == pytest.approx(hit.bm25, rel=1e-5)
            assert hit.bm25 > 0
        elif mode == "dense":
            assert hit.score == pytest.approx(hit.dense, abs=1e-5)
        else:
            assert 0.0 <= hit.score <= 1.0
    # both retrievers took part in the hybrid ranking: some hit has a BM25 score, all have a dense one
    assert any(h.bm25 > 0 for h in hits)


def test_dense_score_is_the_cosine_to_the_query(searchable: Index, embedder: Embedder) -> None:
    query = "a race of forty-two kilometres"
    hits = searchable.search(query, k=3, mode="dense", paragraph_dense_weight=0.0)
    query_vector = embedder.embed([query])[0]
    vectors = searchable.docstore.vectors([h.chunk_id for h in hits], embedder.dim)
    np.testing.assert_allclose([h.dense for h in hits], vectors @ query_vector, rtol=1e-5, atol=1e-6)
    assert searchable.document(hits[0].doc_id).key == "marathon"  # type: ignore[union-attr]


def test_dense_score_mixes_in_the_paragraph_embedded_whole(searchable: Index, embedder: Embedder) -> None:
    query = "a race of forty-two kilometres"
    hits = searchable.search(query, k=3, mode="dense", paragraph_dense_weight=0.4)
    query_vector = embedder.embed([query])[0]
    own = searchable.docstore.vectors([h.chunk_id for h in hits], embedder.dim) @ query_vector
    paragraphs = [searchable.paragraph(h.paragraph_id) for h in hits]
    whole = embedder.embed([f"{h.title}\n{p.text}" for h, p in zip(hits, paragraphs, strict=True)])  # type: ignore[union-attr]
    expected = 0.6 * own + 0.4 * (whole @ query_vector)
    np.testing.assert_allclose([h.dense for h in hits], expected, rtol=1e-4, atol=1e-5)
    assert searchable.document(hits[0].doc_id).key == "marathon"  # type: ignore[union-attr]


@pytest.mark.parametrize(("query", "key"), OBVIOUS)
def test_exact_dense_search_finds_what_chroma_finds(searchable: Index, query: str, key: str) -> None:
    """Below EXACT_LIMIT chunks, dense search is a product with the held vectors: Chroma's HNSW agrees."""
    held = searchable.paragraph_vectors.current()
    assert held.exact and len(held.chunk_ids) == len(searchable.docstore.chunk_ids())
    vector = searchable.embedder.embed([query])[0]
    exact = held.nearest_chunks(vector, 10)
    chroma = searchable.vectors.search(vector, 10)
    assert [i for i, _ in exact] == [i for i, _ in chroma]
    np.testing.assert_allclose([s for _, s in exact], [s for _, s in chroma], atol=1e-4)
    first = searchable.chunks([exact[0][0]])[exact[0][0]]
    assert searchable.document(first.doc_id).key == key  # type: ignore[union-attr]


def test_past_the_exact_limit_dense_search_goes_to_chroma(searchable: Index, monkeypatch) -> None:
    query = "event horizon where gravity traps light"
    exact = [h.chunk_id for h in searchable.search(query, k=5, mode="dense")]
    paragraphs_only = ParagraphVectors(searchable.docstore, searchable.embedder.dim, exact_limit=0)
    monkeypatch.setattr(searchable, "paragraph_vectors", paragraphs_only)
    held = searchable.paragraph_vectors.current()
    assert not held.exact and held.chunk_ids == []
    assert [h.chunk_id for h in searchable.search(query, k=5, mode="dense")] == exact
    with pytest.raises(RuntimeError, match="EXACT_LIMIT"):
        held.nearest_chunks(np.zeros(searchable.embedder.dim, dtype=np.float32), 3)


def test_past_the_exact_limit_a_search_of_some_collections_is_chroma_s_where(
    index: Index, small_corpus_records: list[dict[str, str]], tmp_path: Path, monkeypatch
) -> None:
    """Chroma filters the chunks' `collection` metadata inside its search: k found, none of another."""
    write_records(tmp_path / "a.jsonl", small_corpus_records[:6])
    write_records(tmp_path / "b.jsonl", small_corpus_records[6:])
    index.ingest([tmp_path / "a.jsonl"], collection="a")
    index.ingest([tmp_path / "b.jsonl"], collection="b")
    monkeypatch.setattr(
        index, "paragraph_vectors", ParagraphVectors(index.docstore, index.embedder.dim, exact_limit=0)
    )
    query = "how vaccines train the immune system"
    vector = index.embedder.embed([query])[0]
    of_b = {
        c
        for c, collection in index.docstore.chunk_collections(index.docstore.chunk_ids()).items()
        if collection == "b"
    }
    found = index.vectors.search(vector, 8, ["b"])
    assert len(found) == 8 and {c for c, _ in found} <= of_b
    hits = index.search(query, k=5, mode="dense", collections=("b",))
    assert len(hits) == 5 and {h.chunk_id for h in hits} <= of_b
    index.ingest([tmp_path / "b.jsonl"], collection="a")  # moved: Chroma's metadata is rewritten
    assert index.vectors.search(vector, 8, ["b"]) == []
    assert index.search(query, k=5, mode="dense", collections=("b",)) == []


def test_a_search_opens_no_chroma_and_its_first_use_rebuilds_it(filled: Index, embedder: Embedder) -> None:
    """Chroma opens on first use: a deleted folder does not stop a search, and is rebuilt when it is used."""
    from chromadb.api.client import SharedSystemClient

    root = filled.root
    filled.close()
    SharedSystemClient.clear_system_cache()  # the ingest's client, kept by chromadb per path, goes too
    shutil.rmtree(root / "chroma")
    reopened = Index.open(root, embedder=embedder)
    try:
        hits = reopened.search("wild yeast starter for sourdough bread", k=3)
        assert reopened.document(hits[0].doc_id).key == "sourdough"  # type: ignore[union-attr]
        assert not (root / "chroma").exists()  # an embedded client would have made the folder
        assert_stores_agree(reopened)  # Chroma opened for its ids, found empty, rebuilt from SQLite
    finally:
        reopened.close()


def test_paragraph_vectors_follow_ingests_and_removals(
    filled: Index, small_corpus: Path, tmp_path: Path
) -> None:
    paragraphs = filled.paragraph_vectors.current()
    assert len(paragraphs.ids) == filled.stats().paragraphs
    extra = tmp_path / "extra.txt"
    extra.write_text("Axolotls regrow lost limbs within weeks.\n", encoding="utf-8")
    filled.ingest([extra])
    assert len(filled.paragraph_vectors.current().ids) == filled.stats().paragraphs
    hits = filled.search("salamander that regrows its legs", k=1, mode="dense")
    assert "Axolotls" in hits[0].text
    filled.remove([extra])
    assert len(filled.paragraph_vectors.current().ids) == filled.stats().paragraphs
    assert all("Axolotls" not in h.text for h in filled.search("salamander regrows legs", k=5, mode="dense"))


def test_an_index_of_the_previous_schema_gains_paragraph_vectors_on_open(
    tmp_path: Path, embedder: Embedder, small_corpus: Path
) -> None:
    """Schema 2 had no paragraph vectors (nor boxes): it opens, is migrated, and pools its chunks' vectors."""
    old = Index.open(tmp_path / "old", embedder=embedder, chunking=ChunkingConfig(paragraph_vectors="pooled"))
    old.ingest([small_corpus])
    old.docstore.db.execute("ALTER TABLE paragraphs DROP COLUMN vector")
    old.docstore.db.execute("ALTER TABLE paragraphs DROP COLUMN boxes")
    old.docstore.set_meta("schema", "2")
    settings = json.loads(old.docstore.get_meta("chunking") or "{}")
    settings.pop("paragraph_vectors")
    old.docstore.set_meta("chunking", json.dumps(settings))
    old.close()
    reopened = Index.open(tmp_path / "old", embedder=embedder)
    assert reopened.docstore.get_meta("schema") == "4"
    assert len(reopened.paragraph_vectors.current().ids) == reopened.stats().paragraphs
    assert reopened.search("a race of forty-two kilometres", k=1)[0].title
    reopened.close()


def test_rrf_fusion_and_k(searchable: Index) -> None:
    hits = searchable.search("honey bees pollinate crops", k=2, fusion="rrf")
    assert len(hits) == 2
    assert searchable.document(hits[0].doc_id).key == "honeybees"  # type: ignore[union-attr]
    assert hits[0].score <= 2 / 61 + 1e-12  # at best first in both rankings


def test_search_argument_errors_and_blank_query(searchable: Index) -> None:
    assert searchable.search("   ") == []
    with pytest.raises(ValueError, match="k must be"):
        searchable.search("tides", k=0)
    with pytest.raises(ValueError, match="mode"):
        searchable.search("tides", mode="sparse")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fusion"):
        searchable.search("tides", fusion="max")  # type: ignore[arg-type]


def test_bm25_finds_nothing_for_words_outside_the_corpus(searchable: Index) -> None:
    assert searchable.search("xylophone zeppelin", mode="bm25") == []
    assert len(searchable.search("xylophone zeppelin", mode="dense", k=3)) == 3


# changes ---------------------------------------------------------------------------------------------------
def test_a_loader_s_bug_skips_its_file_and_the_ingest_goes_on(
    index: Index, small_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from citewise.index import policy

    buggy = tmp_path / "buggy.md"
    buggy.write_text("# A note\n\nNothing wrong with it but the loader.\n", encoding="utf-8")
    real = policy.load_path
    monkeypatch.setattr(policy, "load_path", lambda path: 1 / 0 if path.name == "buggy.md" else real(path))
    report = index.ingest([buggy, small_corpus])
    assert (str(buggy), "the loader failed: ZeroDivisionError: division by zero") in report.skipped
    assert report.ingested_files == 1 and index.stats().documents > 0  # the shared tier does the same


def test_reingest_of_an_unchanged_file_is_a_no_op(filled: Index, small_corpus: Path) -> None:
    before_ids = assert_stores_agree(filled)
    before = filled.stats()
    report = filled.ingest([small_corpus])
    assert (report.unchanged_files, report.ingested_files) == (1, 0)
    assert report.documents_added == report.chunks_added == report.documents_removed == 0
    assert not report.changed
    assert filled.stats() == before
    assert assert_stores_agree(filled) == before_ids


def test_reopen_sees_the_same_index(filled: Index, embedder: Embedder) -> None:
    before_ids = assert_stores_agree(filled)
    before = filled.stats()
    filled.close()
    with Index.open(filled.root, embedder=embedder, create=False) as reopened:
        assert reopened.stats() == before
        assert assert_stores_agree(reopened) == before_ids
        assert reopened.search("sourdough starter", k=1)


def test_editing_one_document_replaces_only_its_chunks(filled: Index, small_corpus: Path) -> None:
    old_chess = chunk_ids_of(filled, "chess")
    all_before = assert_stores_agree(filled)
    others_before = all_before - old_chess
    records = read_records(small_corpus)
    for record in records:
        if record["_id"] == "chess":
            record["text"] = (
                "Checkers is played on the dark squares of a board with twelve pieces per side. "
                "A piece that reaches the far row is crowned a king."
            )
    write_records(small_corpus, records)

    report = filled.ingest([small_corpus])
    assert (report.ingested_files, report.documents_added, report.documents_removed) == (1, 1, 1)
    assert report.chunks_removed == len(old_chess)
    after = assert_stores_agree(filled)
    new_chess = chunk_ids_of(filled, "chess")
    assert new_chess and not new_chess & old_chess
    assert not after & old_chess  # gone from SQLite, Chroma and BM25 alike
    assert after - new_chess == others_before  # everything else untouched
    assert report.chunks_added == len(new_chess)
    assert filled.stats().documents == 12

    (hit,) = filled.search("crowned a king on the far row", k=1, mode="bm25")
    assert hit.chunk_id in new_chess
    assert filled.search("Sicilian gambit castling grandmasters", mode="bm25") == []


def test_removing_a_record_from_the_file_deletes_its_document(filled: Index, small_corpus: Path) -> None:
    old_jazz = chunk_ids_of(filled, "jazz")
    before = assert_stores_agree(filled)
    write_records(small_corpus, [r for r in read_records(small_corpus) if r["_id"] != "jazz"])

    report = filled.ingest([small_corpus])
    assert (report.documents_added, report.documents_removed) == (0, 1)
    assert report.chunks_removed == len(old_jazz) > 0
    after = assert_stores_agree(filled)
    assert after == before - old_jazz
    assert keys_of(filled) == {r["_id"] for r in read_records(small_corpus)}
    assert filled.stats().documents == 11
    assert filled.search("Louis Armstrong trumpet bebop", mode="bm25") == []


def test_remove_of_the_file_empties_the_index(filled: Index, small_corpus: Path) -> None:
    report = filled.remove([small_corpus])
    assert (report.files, report.documents_removed) == (1, 12)
    assert report.chunks_removed > 0
    assert assert_stores_agree(filled) == set()
    stats = filled.stats()
    assert (stats.files, stats.documents, stats.paragraphs, stats.chunks) == (0, 0, 0, 0)
    assert filled.search("vaccines") == []
    # and it can be filled again
    assert filled.ingest([small_corpus]).documents_added == 12
    assert_stores_agree(filled)


def test_remove_of_a_folder_and_of_an_unknown_file(filled: Index, small_corpus: Path, tmp_path: Path) -> None:
    unknown = filled.remove([tmp_path / "nowhere.jsonl"])
    assert unknown.files == 0 and unknown.skipped == [(str(tmp_path / "nowhere.jsonl"), "not in the index")]
    assert filled.stats().documents == 12
    by_folder = filled.remove([small_corpus.parent])
    assert (by_folder.files, by_folder.documents_removed) == (1, 12)
    assert filled.stats().documents == 0


def test_unsupported_and_empty_files_are_skipped_and_nothing_is_lost(
    filled: Index, small_corpus: Path, tmp_path: Path
) -> None:
    before_ids = assert_stores_agree(filled)
    before = filled.stats()
    unsupported = tmp_path / "slides.pptx"
    unsupported.write_bytes(b"PK\x03\x04 not really a presentation")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    blank_jsonl = tmp_path / "blank.jsonl"
    blank_jsonl.write_text("\n\n")
    missing = tmp_path / "missing.md"

    report = filled.ingest([unsupported, empty, blank_jsonl, missing, small_corpus])
    skipped = dict(report.skipped)
    assert set(skipped) == {str(unsupported), str(empty), str(blank_jsonl), str(missing)}
    assert "unsupported" in skipped[str(unsupported)]
    assert "empty" in skipped[str(empty)]
    assert "empty" in skipped[str(blank_jsonl)]
    assert "no such file" in skipped[str(missing)]
    assert report.unchanged_files == 1
    assert report.documents_added == report.documents_removed == 0
    assert filled.stats() == before
    assert assert_stores_agree(filled) == before_ids


def test_a_broken_line_skips_the_file_and_keeps_its_old_documents(filled: Index, small_corpus: Path) -> None:
    before_ids = assert_stores_agree(filled)
    small_corpus.write_text(small_corpus.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    report = filled.ingest([small_corpus])
    ((path, reason),) = report.skipped
    assert path == str(small_corpus) and "line 13" in reason
    assert assert_stores_agree(filled) == before_ids


def test_a_document_repeated_in_another_file_is_stored_once(
    filled: Index, small_corpus: Path, tmp_path: Path
) -> None:
    before_ids = assert_stores_agree(filled)
    copy = tmp_path / "copy.jsonl"
    write_records(copy, read_records(small_corpus)[:2])
    report = filled.ingest([copy])
    assert report.documents_added == 0
    assert len(report.skipped) == 2
    assert all("duplicate of" in reason for _, reason in report.skipped)
    assert assert_stores_agree(filled) == before_ids


# opening ---------------------------------------------------------------------------------------------------
def test_other_chunking_settings_on_a_non_empty_index_are_refused(filled: Index, embedder: Embedder) -> None:
    other = ChunkingConfig(threshold=0.5)
    with pytest.raises(IndexOpenError, match="chunking"):
        Index.open(filled.root, embedder=embedder, chunking=other)
    # the stored settings are used when none are asked for, and asking for them explicitly is fine
    with Index.open(filled.root, embedder=embedder) as again:
        assert again.chunking == ChunkingConfig()
    with Index.open(filled.root, embedder=embedder, chunking=ChunkingConfig()) as again:
        assert again.stats().documents == 12


def test_other_chunking_settings_on_an_empty_index_are_taken(tmp_path: Path, embedder: Embedder) -> None:
    Index.open(tmp_path / "idx", embedder=embedder).close()
    other = ChunkingConfig(threshold=0.5, max_chars=300)
    with Index.open(tmp_path / "idx", embedder=embedder, chunking=other) as opened:
        assert opened.chunking == other
    with Index.open(tmp_path / "idx", embedder=embedder) as opened:
        assert opened.chunking == other


def test_another_embedding_model_is_refused(filled: Index, embedder: Embedder) -> None:
    class Renamed:
        name = "another-model"
        dim = embedder.dim

        def embed(self, texts):  # type: ignore[no-untyped-def]
            return embedder.embed(texts)

    with pytest.raises(IndexOpenError, match="embedding model"):
        Index.open(filled.root, embedder=Renamed())


def test_opening_a_file_as_an_index_is_refused(tmp_path: Path, embedder: Embedder) -> None:
    path = tmp_path / "not-a-folder"
    path.write_text("hello")
    with pytest.raises(IndexOpenError, match="is a file"):
        Index.open(path, embedder=embedder)
    assert path.read_text() == "hello"


def test_opening_a_missing_index_without_create_is_refused(tmp_path: Path, embedder: Embedder) -> None:
    with pytest.raises(IndexOpenError, match="no index"):
        Index.open(tmp_path / "absent", embedder=embedder, create=False)
    assert not (tmp_path / "absent").exists()


# LangChain -------------------------------------------------------------------------------------------------
def test_langchain_retriever_returns_documents_with_metadata(searchable: Index) -> None:
    retriever = searchable.as_retriever(k=3)
    documents = retriever.invoke("glaciers carve valleys during an ice age")
    assert 1 <= len(documents) <= 3
    assert all(isinstance(d, LCDocument) for d in documents)
    first = documents[0]
    assert first.metadata["title"] == "Glaciers and ice ages"
    assert first.id == first.metadata["chunk_id"]
    assert "text" not in first.metadata
    assert set(first.metadata) >= {"chunk_id", "doc_id", "paragraph_id", "title", "bm25", "dense", "score"}
    assert [d.metadata["rank"] for d in documents] == list(range(1, len(documents) + 1))
    stored = searchable.chunks([d.id for d in documents])  # type: ignore[misc]
    assert [d.page_content for d in documents] == [stored[d.id].text for d in documents]  # type: ignore[index]


def test_langchain_retriever_passes_search_settings(searchable: Index) -> None:
    documents = searchable.as_retriever(k=1, mode="bm25").invoke("Bitcoin miners proof-of-work")
    (document,) = documents
    assert document.metadata["title"] == "Bitcoin and the blockchain"
    assert document.metadata["score"] == pytest.approx(document.metadata["bm25"])


# one writer at a time --------------------------------------------------------------------------------------
def test_a_second_writer_is_refused_while_the_lock_is_held(index: Index, small_corpus: Path) -> None:
    with open(index.root / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(IndexOpenError, match="being written"):
            index.ingest([small_corpus])
        with pytest.raises(IndexOpenError, match="being written"):
            index.remove([small_corpus])
        assert index.stats().documents == 0
        fcntl.flock(held, fcntl.LOCK_UN)
    assert index.ingest([small_corpus]).documents_added == 12
    assert_stores_agree(index)


def test_near_duplicate_hits_are_dropped_unless_redundancy_is_one(index: Index, tmp_path: Path) -> None:
    text = "Octopuses have three hearts and blue blood. They can change colour in a fraction of a second."
    corpus = tmp_path / "twins.jsonl"
    write_records(
        corpus,
        [{"_id": "a", "title": "Octopus", "text": text}, {"_id": "b", "title": "Octopus", "text": text}],
    )
    assert index.ingest([corpus]).documents_added == 2
    kept = index.search("octopus hearts", k=5, redundancy=1.0)
    assert len({h.doc_id for h in kept}) == 2
    deduplicated = index.search("octopus hearts", k=5)
    assert len({h.doc_id for h in deduplicated}) == 1
    assert [h.rank for h in deduplicated] == list(range(1, len(deduplicated) + 1))


def test_progress_moves_while_a_single_file_embeds(tmp_path: Path, embedder: Embedder) -> None:
    """The first ingest of one file of three papers: the files bar moves only at its end, so the texts
    embedded move on the way (they stayed at 0% for the whole 36 s)."""
    events: list[tuple[str, int]] = []

    class Bar:
        def __init__(self, desc: str = "", **_: object) -> None:
            self.desc = desc

        def update(self, count: int = 1) -> None:
            events.append((self.desc, count))

        def close(self) -> None:
            pass

    sample = Path(__file__).resolve().parents[2] / "citewise" / "samples" / "unarxive_sample.jsonl"
    with Index.open(tmp_path / "idx", embedder=embedder) as index:
        index.ingest([sample], progress=Bar)
    first_file_done = events.index(("files", 1))
    embedded = [count for desc, count in events[:first_file_done] if desc == "embedded"]
    assert len(embedded) > 5 and sum(embedded) > 500, events[:first_file_done]
