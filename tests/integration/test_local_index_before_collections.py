"""A local index made before collections opens with every document in `default`, and nothing lost.

The index is built, then put back in the form an older citewise left: the documents table without its
`collection` column (nor its index), the documents' metadata without the key, the Chroma chunks' metadata
without it, and no record that Chroma's chunks carry their collection. Opened with this citewise, every
document reads as `default`, searches of `default` find what searches of everything find (the exact tier and
Chroma's `where` alike), another collection finds nothing, and a new ingest into a collection is kept apart.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from citewise.index import Index
from citewise.index.embeddings import Embedder
from citewise.index.local.paragraphs import ParagraphVectors
from citewise.index.reading import Readable
from citewise.index.records import DEFAULT_COLLECTION, document_collection

pytestmark = pytest.mark.integration

QUERIES = (
    "how vaccines train the immune system",
    "event horizon where gravity traps light",
    "wild yeast starter for sourdough bread",
)


def write_records(path: Path, records: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def as_an_older_citewise_left_it(root: Path) -> None:
    """Remove every trace of collections from a closed index: SQLite's column and meta, Chroma's metadata."""
    import chromadb
    from chromadb.api.client import SharedSystemClient

    with sqlite3.connect(root / "docs.sqlite3") as db:
        name = db.execute("SELECT value FROM meta WHERE key = 'collection'").fetchone()[0]
        db.execute("DROP INDEX documents_collection")
        db.execute("ALTER TABLE documents DROP COLUMN collection")
        db.execute("UPDATE documents SET metadata = json_remove(metadata, '$.collection')")
        db.execute("DELETE FROM meta WHERE key LIKE '%:collections'")
    db.close()
    SharedSystemClient.clear_system_cache()
    client = chromadb.PersistentClient(path=str(root / "chroma"))
    chunks = client.get_collection(name)
    stored = chunks.get(include=["metadatas"])
    assert stored["ids"] and all(m["collection"] == DEFAULT_COLLECTION for m in stored["metadatas"])
    chunks.update(ids=stored["ids"], metadatas=[{"collection": None}] * len(stored["ids"]))  # key removed
    assert all("collection" not in m for m in chunks.get(include=["metadatas"])["metadatas"])
    SharedSystemClient.clear_system_cache()


def test_an_index_made_before_collections_reads_as_default_and_loses_nothing(
    tmp_path: Path, embedder: Embedder, small_corpus_records: list[dict[str, str]], monkeypatch
) -> None:
    root = tmp_path / "index"
    corpus = write_records(tmp_path / "corpus.jsonl", small_corpus_records[:10])
    with Index.open(root, embedder=embedder) as index:
        assert index.ingest([corpus]).documents_added == 10
        before = index.stats()
        found = {query: [h.chunk_id for h in index.search(query, k=5)] for query in QUERIES}
        documents = set(index.docstore.collections())
        assert index.vectors.count() == before.chunks  # Chroma written (the `where` path is checked below)
    as_an_older_citewise_left_it(root)
    with sqlite3.connect(root / "docs.sqlite3") as db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(documents)")}
    db.close()
    assert "collection" not in columns

    with Index.open(root, embedder=embedder) as index:
        after = index.stats()
        assert (after.documents, after.paragraphs, after.chunks) == (
            before.documents,
            before.paragraphs,
            before.chunks,
        )
        assert after.consistent, after
        assert index.docstore.collections() == dict.fromkeys(documents, DEFAULT_COLLECTION)
        for doc_id in documents:
            record = index.document(doc_id, (DEFAULT_COLLECTION,))
            assert record is not None and document_collection(record.metadata) == DEFAULT_COLLECTION
            assert index.paragraphs(doc_id, (DEFAULT_COLLECTION,))
            assert index.document(doc_id, ("hr",)) is None
        view = Readable(index, (DEFAULT_COLLECTION,))  # a user who reads the default collection alone
        for query, chunk_ids in found.items():
            assert [h.chunk_id for h in index.search(query, k=5)] == chunk_ids, query
            assert [h.chunk_id for h in view.search(query, k=5)] == chunk_ids, query
            assert index.search(query, k=5, collections=("hr",)) == []

        # Chroma (the dense side past EXACT_LIMIT chunks) filters by its chunks' metadata: brought up to date
        vector = embedder.embed([QUERIES[0]])[0]
        assert len(index.vectors.search(vector, 8, [DEFAULT_COLLECTION])) == 8
        monkeypatch.setattr(
            index, "paragraph_vectors", ParagraphVectors(index.docstore, embedder.dim, exact_limit=0)
        )
        dense = [h.chunk_id for h in index.search(QUERIES[0], k=5, mode="dense")]
        assert [h.chunk_id for h in view.search(QUERIES[0], k=5, mode="dense")] == dense
        assert index.search(QUERIES[0], k=5, mode="dense", collections=("hr",)) == []

        hr = write_records(tmp_path / "hr.jsonl", small_corpus_records[10:])
        assert index.ingest([hr], collection="hr").documents_added == len(small_corpus_records[10:])
        index.refresh()
        ours = {h.doc_id for h in index.search("a b c " + QUERIES[1], k=50, collections=("hr",))}
        assert ours and ours.isdisjoint(documents)
        for query in QUERIES:
            kept = {h.doc_id for h in view.search(query, k=10)}
            assert kept and kept <= documents, query  # the default reader sees none of hr's
