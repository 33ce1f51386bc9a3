"""Removing documents by id from a local index: the document goes from every store, its file's others stay.

The Library removes one document at a time; a file (a JSONL of many records) keeps its other documents, and
its record goes with its last document only, so that an unchanged file is not read again (the removed
document stays removed) while a file emptied of documents can be ingested anew.
"""

from __future__ import annotations

import json
from pathlib import Path

from citewise.index import Index
from citewise.index.embeddings import Embedder


def write(path: Path, records: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def titles(index: Index, query: str, k: int = 12) -> list[str]:
    return [hit.title for hit in index.search(query, k=k)]


def test_a_document_removed_by_id_leaves_every_store_and_its_files_others_stay(
    tmp_path: Path, embedder: Embedder, small_corpus_records: list[dict[str, str]]
) -> None:
    corpus = write(tmp_path / "corpus.jsonl", small_corpus_records[:4])
    with Index.open(tmp_path / "index", embedder=embedder) as index:
        index.ingest([corpus])
        sourdough = next(d for d in index.documents() if d.title == "Sourdough baking")
        chunks = index.stats().chunks
        report = index.remove_documents([sourdough.id])
        assert (report.documents_removed, report.files, report.skipped) == (1, 0, []), report
        assert 0 < report.chunks_removed < chunks
        stats = index.stats()
        assert (stats.files, stats.documents, stats.chunks) == (1, 3, chunks - report.chunks_removed)
        assert stats.consistent, stats  # SQLite, the vectors and BM25 agree
        assert index.document(sourdough.id) is None and index.paragraphs(sourdough.id) == []
        assert "Sourdough baking" not in titles(index, "sourdough starter of wild yeast")
        assert "How vaccines work" in titles(index, "how vaccines train the immune system", k=1)

        # the file is unchanged and still recorded: ingested again, it is skipped, the removed one stays out
        again = index.ingest([corpus])
        assert (again.unchanged_files, again.documents_added) == (1, 0), again
        assert index.document(sourdough.id) is None


def test_the_last_document_of_a_file_takes_its_record_so_the_file_can_come_back(
    tmp_path: Path, embedder: Embedder, small_corpus_records: list[dict[str, str]]
) -> None:
    single = write(tmp_path / "single.jsonl", small_corpus_records[:1])
    other = write(tmp_path / "other.jsonl", small_corpus_records[1:3])
    with Index.open(tmp_path / "index", embedder=embedder) as index:
        index.ingest([single, other])
        (vaccines,) = [d for d in index.documents() if Path(d.file).name == "single.jsonl"]
        report = index.remove_documents([vaccines.id, vaccines.id])  # named twice: removed once
        assert (report.documents_removed, report.files) == (1, 1), report
        stats = index.stats()
        assert (stats.files, stats.documents) == (1, 2) and stats.consistent, stats
        back = index.ingest([single])
        assert back.documents_added == 1, back
        assert index.document(vaccines.id) is not None


def test_an_id_the_index_does_not_hold_is_skipped_with_its_reason_and_nothing_changes(
    tmp_path: Path, embedder: Embedder, small_corpus_records: list[dict[str, str]]
) -> None:
    corpus = write(tmp_path / "corpus.jsonl", small_corpus_records[:2])
    with Index.open(tmp_path / "index", embedder=embedder) as index:
        index.ingest([corpus])
        generation = index.stats().generation
        report = index.remove_documents(["no-such-id", ""])
        assert report.skipped == [
            ("no-such-id", "no such document in the index"),
            ("", "no such document in the index"),
        ]
        assert not report.changed and report.files == 0
        stats = index.stats()
        assert (stats.documents, stats.generation) == (2, generation), stats
