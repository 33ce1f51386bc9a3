"""Both index tiers through the one port: the same writes and reads, the same answers, on a fresh index each.

Every test runs once per tier, opened only as the ways in open them (`citewise.core.resources`: a writer and
a reader for the index a Context names, the local folder or a shared store's URL), never by a tier's class.
So the ingest policy (unchanged files skipped, a changed file replaced, a copy under another name refused, a
file no loader reads skipped with its reason while the others go in, tags) is checked to hold on both, and a
third backend is one more `tier` parameter. Collections too: a search of some collections sees only their
documents, still k of them, scored as an index of those documents alone would score them, and reads by id
hand out nothing of the others.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from citewise.context import Context
from citewise.core.resources import Resources
from citewise.index.embeddings import Embedder
from citewise.index.reading import Readable, SearchIndex
from citewise.index.records import document_collection, document_tags
from citewise.index.shared.pgserver import Server
from citewise.index.writer import IndexWriter

pytestmark = pytest.mark.integration


@dataclass
class Tier:
    """One fresh index of a tier, as a Context names it, with the resources that open it."""

    name: str
    context: Context
    resources: Resources
    files: Path
    postgres: Server

    def writer(self) -> IndexWriter:
        return self.resources.writer(self.context)

    def reader(self) -> SearchIndex:
        return asyncio.run(self.resources.index(self.context))

    def sibling(self, folder: Path) -> Tier:
        """Another new, empty index on the same tier (with the same files)."""
        return Tier(
            self.name, _fresh(self.name, folder, self.postgres), self.resources, self.files, self.postgres
        )

    def write(self, name: str, records: list[dict[str, str]]) -> Path:
        """A BEIR jsonl file of `records` among the tier's files."""
        path = self.files / name
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        return path


@pytest.fixture(params=["local", "shared"])
def tier(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder, postgres: Server
) -> Iterator[Tier]:
    """A new, empty index on the tier: a folder, or a database of its own on the test PostgreSQL."""
    files = tmp_path / "files"
    files.mkdir()
    resources = Resources(embedder=embedder)
    yield Tier(request.param, _fresh(request.param, tmp_path / "index", postgres), resources, files, postgres)
    resources.close()


def _fresh(tier: str, folder: Path, postgres: Server) -> Context:
    """The Context of a new, empty index: `folder`, or a new database on the test PostgreSQL."""
    if tier == "shared":
        name = f"port_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(postgres.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return Context(index_dir=str(folder / "unused"), store=postgres.dsn.rsplit("/", 1)[0] + f"/{name}")
    return Context(index_dir=str(folder))


def _titles(index: SearchIndex, query: str, k: int = 3) -> list[str]:
    index.refresh()
    titles = []
    for hit in index.search(query, k=k):
        record = index.document(hit.doc_id)
        assert record is not None, hit
        titles.append(record.title)
    return titles


def test_an_ingest_is_searched_counted_and_found_again_unchanged(
    tier: Tier, small_corpus_records: list[dict[str, str]]
) -> None:
    files = [tier.write(f"{r['_id']}.jsonl", [r]) for r in small_corpus_records[:6]]
    with tier.writer() as writer:
        report = writer.ingest(files)
        assert (report.files, report.ingested_files, report.documents_added) == (6, 6, 6), report
        assert report.chunks_added > 0 and not report.skipped
        stats = writer.stats()
    assert (stats.files, stats.documents) == (6, 6) and stats.consistent, stats
    reader = tier.reader()
    assert not reader.empty()
    assert _titles(reader, "how vaccines train the immune system")[0] == "How vaccines work"
    with tier.writer() as writer:
        again = writer.ingest(files)
    assert (again.unchanged_files, again.documents_added, again.documents_removed) == (6, 0, 0), again


def test_a_changed_file_is_replaced_and_a_copy_under_another_name_refused(
    tier: Tier, small_corpus_records: list[dict[str, str]]
) -> None:
    vaccines, holes = small_corpus_records[0], small_corpus_records[1]
    first = tier.write("first.jsonl", [vaccines])
    with tier.writer() as writer:
        assert writer.ingest([first]).documents_added == 1
    first.write_text(json.dumps(holes) + "\n", encoding="utf-8")  # the same name, other bytes
    copy = tier.write("copy.jsonl", [holes])  # the same bytes as first.jsonl now holds
    with tier.writer() as writer:
        replaced = writer.ingest([first])
        refused = writer.ingest([copy])
        stats = writer.stats()
    assert (replaced.documents_removed, replaced.documents_added) == (1, 1), replaced
    assert refused.documents_added == 0
    ((path, why),) = refused.skipped
    assert Path(path).name == "copy.jsonl", refused
    assert why.startswith("the same bytes as ") and why.endswith("first.jsonl, already in the index"), why
    assert (stats.files, stats.documents) == (1, 1) and stats.consistent, stats
    assert _titles(tier.reader(), "event horizon of a black hole", k=1) == ["Black holes"]


def test_a_file_no_loader_reads_is_skipped_with_its_reason_and_the_others_go_in(
    tier: Tier, small_corpus_records: list[dict[str, str]]
) -> None:
    good = tier.write("good.jsonl", small_corpus_records[:2])
    broken = tier.files / "report.pdf"
    broken.write_text("this is a plain text file named as a PDF\n", encoding="utf-8")
    with tier.writer() as writer:
        report = writer.ingest([broken, good])
        stats = writer.stats()
    assert report.documents_added == 2, report
    ((path, why),) = report.skipped
    assert Path(path).name == "report.pdf" and "PDF" in why, why
    assert (stats.files, stats.documents) == (1, 2), stats


def test_tags_given_at_ingest_are_the_documents_and_removal_takes_every_trace(
    tier: Tier, small_corpus_records: list[dict[str, str]]
) -> None:
    tagged = tier.write("guidelines.jsonl", small_corpus_records[2:4])
    plain = tier.write("other.jsonl", small_corpus_records[4:6])
    with tier.writer() as writer:
        report = writer.ingest([tagged], tags=["trusted"])
        writer.ingest([plain])
    assert report.documents_tagged == 2, report
    reader = tier.reader()
    reader.refresh()
    tags = {}
    for hit in reader.search("sourdough starter of wild yeast", k=10):
        record = reader.document(hit.doc_id)
        assert record is not None
        tags[Path(record.file).name] = document_tags(record.metadata)
    assert tags.get("guidelines.jsonl") == ["trusted"] and tags.get("other.jsonl", []) == [], tags
    with tier.writer() as writer:
        removed = writer.remove([tagged])
        stats = writer.stats()
    assert removed.documents_removed == 2, removed
    assert (stats.files, stats.documents) == (1, 2) and stats.consistent, stats
    reader.refresh()
    assert "Sourdough baking" not in _titles(reader, "sourdough starter of wild yeast", k=10)


def test_a_document_removed_by_id_goes_alone_and_its_files_record_with_its_last_document(
    tier: Tier, small_corpus_records: list[dict[str, str]]
) -> None:
    corpus = tier.write("corpus.jsonl", small_corpus_records[:3])
    with tier.writer() as writer:
        writer.ingest([corpus])
    reader = tier.reader()
    reader.refresh()
    ids = {record.title: record.id for record in reader.documents()}
    with tier.writer() as writer:
        one = writer.remove_documents([ids["Black holes"], "no-such-id"])
        stats = writer.stats()
        again = writer.ingest([corpus])  # unchanged, still recorded: skipped, the removed one stays out
    assert (one.documents_removed, one.files) == (1, 0) and one.chunks_removed > 0, one
    ((unknown, why),) = one.skipped
    assert unknown == "no-such-id" and why.startswith("no such document"), one.skipped
    assert (stats.files, stats.documents) == (1, 2) and stats.consistent, stats
    assert (again.unchanged_files, again.documents_added) == (1, 0), again
    reader.refresh()
    assert reader.document(ids["Black holes"]) is None
    assert "Black holes" not in _titles(reader, "event horizon of a black hole", k=3)
    assert _titles(reader, "sourdough starter of wild yeast", k=1) == ["Sourdough baking"]
    with tier.writer() as writer:
        rest = writer.remove_documents([ids["How vaccines work"], ids["Sourdough baking"]])
        empty = writer.stats()
        back = writer.ingest([corpus])  # its record went with its last document: read again whole
    assert (rest.documents_removed, rest.files) == (2, 1), rest
    assert (empty.files, empty.documents) == (0, 0) and empty.consistent, empty
    assert back.documents_added == 3, back


QUESTION = "how vaccines train the immune system"
"""Best answered by a document of collection "work", asked by searches of collection "home"."""


def test_a_search_of_some_collections_sees_only_theirs_still_k_scored_as_if_alone(
    tier: Tier, small_corpus_records: list[dict[str, str]], tmp_path: Path
) -> None:
    work, home = small_corpus_records[:6], small_corpus_records[6:]
    work_file, home_file = tier.write("work.jsonl", work), tier.write("home.jsonl", home)
    with tier.writer() as writer:
        assert writer.ingest([work_file], collection="work").documents_added == 6
        assert writer.ingest([home_file], collection="home").documents_added == 6
    reader = tier.reader()
    reader.refresh()
    every = reader.search(QUESTION, k=5)
    assert every[0].title == "How vaccines work"  # the best evidence is in "work"
    home_ids = {hit.doc_id for hit in reader.search("a b c " + QUESTION, k=50, collections=("home",))}
    homes = reader.search(QUESTION, k=5, collections=("home",))
    assert len(homes) == 5, homes  # still k: filtered inside the stores, not after ranking
    assert {hit.doc_id for hit in homes} <= home_ids and not {h.doc_id for h in every[:1]} & home_ids
    for hit in homes:
        record = reader.document(hit.doc_id)
        assert record is not None and document_collection(record.metadata) == "home", record
    assert reader.search(QUESTION, k=5, collections=()) == []
    assert len(reader.search(QUESTION, k=5, collections=("home", "work"))) == 5

    alone = tier.sibling(tmp_path / "alone")  # an index of the "home" documents only
    with alone.writer() as writer:
        assert writer.ingest([home_file]).documents_added == 6
    solo = alone.reader()
    solo.refresh()
    for mode in ("hybrid", "dense", "bm25"):
        theirs = solo.search(QUESTION, k=5, mode=mode)  # type: ignore[arg-type]
        ours = reader.search(QUESTION, k=5, mode=mode, collections=("home",))  # type: ignore[arg-type]
        assert [h.chunk_id for h in ours][:1] == [h.chunk_id for h in theirs][:1], (mode, ours, theirs)
        # the top hit's normalised scores are the readable candidates' alone: no unreadable maximum
        assert abs(ours[0].score - theirs[0].score) < 0.02, (mode, ours[0], theirs[0])
        assert abs(ours[0].dense - theirs[0].dense) < 1e-3 and abs(ours[0].bm25 - theirs[0].bm25) < 0.02


def test_reads_by_id_hand_out_nothing_of_an_unreadable_collection(
    tier: Tier, small_corpus_records: list[dict[str, str]]
) -> None:
    secret = tier.write("secret.jsonl", small_corpus_records[:1])
    public = tier.write("public.jsonl", small_corpus_records[1:3])
    with tier.writer() as writer:
        writer.ingest([secret], collection="hr")
        writer.ingest([public])  # no collection named: the default one
    reader = tier.reader()
    reader.refresh()
    (hit,) = reader.search(QUESTION, k=1, collections=("hr",))
    chunk = reader.chunks([hit.chunk_id])[hit.chunk_id]
    assert reader.document(hit.doc_id) is not None and reader.paragraphs(hit.doc_id)
    outside = ("default",)
    assert reader.document(hit.doc_id, outside) is None
    assert reader.paragraphs(hit.doc_id, outside) == []
    assert reader.paragraph(chunk.paragraph_id, outside) is None
    assert reader.chunks([hit.chunk_id], outside) == {}
    assert reader.bibliography(hit.doc_id, outside) == {}
    view = Readable(reader, outside)  # what a user's run is handed
    assert view.document(hit.doc_id) is None and view.chunks([hit.chunk_id]) == {}
    assert view.document(hit.doc_id, ("hr",)) is None  # a call cannot widen the asker's collections
    assert all(h.doc_id != hit.doc_id for h in view.search(QUESTION, k=10))
    assert not view.chunk_vectors([hit.chunk_id]).any()
    record = reader.document(hit.doc_id, ("hr",))
    assert record is not None and document_collection(record.metadata) == "hr"
    public_doc = reader.search("event horizon of a black hole", k=1)[0].doc_id
    public_record = reader.document(public_doc, outside)
    assert public_record is not None and document_collection(public_record.metadata) == "default"

    with tier.writer() as writer:  # ingested again into another collection: its documents move there
        writer.ingest([secret], collection="default")
    reader.refresh()
    assert reader.document(hit.doc_id, outside) is not None
    assert reader.search(QUESTION, k=1, collections=outside)[0].doc_id == hit.doc_id
    assert reader.search(QUESTION, k=1, collections=("hr",)) == []
