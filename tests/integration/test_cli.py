"""The command line (`citewise ingest / search / stats / remove`) driven through Typer's CliRunner."""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from citewise.app.cli import app
from citewise.index import Index
from citewise.index.embeddings import Embedder

pytestmark = pytest.mark.integration

runner = CliRunner()


def run(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def write_records(path: Path, records: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def ingested(
    tmp_path_factory: pytest.TempPathFactory, small_corpus_records: list[dict[str, str]], embedder: Embedder
) -> Iterator[Path]:
    """An index directory filled by `citewise ingest`, shared by the tests that only read it."""
    root = tmp_path_factory.mktemp("cli")
    corpus = write_records(root / "corpus.jsonl", small_corpus_records)
    result = run("ingest", corpus, "--index", root / "idx")
    assert result.exit_code == 0, result.output
    yield root / "idx"


COLD_ASK = """
import sys
sys.argv = ["citewise", "ask", "How do vaccines train the immune system?", "--index", sys.argv[1]]
from citewise.app.cli import main
try:
    main()
except SystemExit as end:
    code = end.code
print("exit", code, "loaded", " ".join(m for m in ("chromadb", "openai", "torch") if m in sys.modules))
"""


def test_a_local_question_loads_neither_chroma_nor_a_provider_client(ingested: Path) -> None:
    """A cold `ask` of an index below EXACT_LIMIT reads the document store's vectors: Chroma (half a second
    to import) and the openai client stay unloaded, as PyTorch does."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "OPENAI_BASE_URL"}
    result = subprocess.run(
        [sys.executable, "-c", COLD_ASK, str(ingested)], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last == "exit 0 loaded", last
    assert "[1]" in result.stdout


# ingest ----------------------------------------------------------------------------------------------------
def test_ingest_prints_the_summary_and_exits_0(
    tmp_path: Path, small_corpus: Path, embedder: Embedder
) -> None:
    index = tmp_path / "idx"
    result = run("ingest", small_corpus, "--index", index)
    assert result.exit_code == 0, result.output
    with Index.open(index, embedder=embedder, create=False) as opened:
        stats = opened.stats()
    chunks = stats.chunks
    assert stats.documents == 12 and chunks > 0
    assert re.search(
        rf"ingest: 1 files \(1 ingested, 0 unchanged, 0 skipped\); documents \+12 -0; chunks \+{chunks} -0; "
        r"[\d.]+s",
        result.stdout,
    ), result.stdout
    assert (
        f"index {index}: 12 documents, 12 paragraphs, {chunks} chunks (chroma {chunks}, bm25 {chunks})"
        in result.stdout
    )
    assert "skipped" not in result.stderr

    again = run("ingest", small_corpus, "--index", index)
    assert again.exit_code == 0, again.output
    assert "(0 ingested, 1 unchanged, 0 skipped); documents +0 -0; chunks +0 -0" in again.stdout


def test_ingest_quiet_prints_nothing(tmp_path: Path, small_corpus: Path) -> None:
    result = run("ingest", small_corpus, "--index", tmp_path / "idx", "--quiet")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert json.loads(run("stats", "--json", "--index", tmp_path / "idx").stdout)["documents"] == 12


def test_ingest_of_only_an_unsupported_file_exits_1(tmp_path: Path) -> None:
    slides = tmp_path / "slides.pptx"
    slides.write_bytes(b"PK\x03\x04 not really a presentation")
    result = run("ingest", slides, "--index", tmp_path / "idx")
    assert result.exit_code == 1, result.output
    assert f"skipped {slides}: unsupported file type '.pptx'" in result.stderr
    assert "error: nothing was ingested" in result.stderr
    assert "documents +0 -0" in result.stdout
    stats = json.loads(run("stats", "--json", "--index", tmp_path / "idx").stdout)
    assert stats["documents"] == stats["chunks"] == 0


def test_ingest_of_a_missing_path_exits_1(tmp_path: Path) -> None:
    result = run("ingest", tmp_path / "nowhere.txt", "--index", tmp_path / "idx")
    assert result.exit_code == 1, result.output
    assert "no such file or directory" in result.stderr
    assert "nothing was ingested" in result.stderr
    assert not (tmp_path / "idx").exists()  # a failed ingest leaves no empty index behind


@pytest.mark.parametrize("name, content", [("missing.pdf", None), ("fake.pdf", b"not a PDF at all")])
def test_ask_with_docs_that_ingest_nothing_leaves_no_index_folder(
    tmp_path: Path, name: str, content: bytes | None
) -> None:
    document = tmp_path / name
    if content is not None:
        document.write_bytes(content)
    result = run("ask", "What is in it?", "--docs", document, "--index", tmp_path / "new" / "idx")
    assert result.exit_code == 1, result.output
    assert f"skipped {document}" in result.stderr
    assert not (tmp_path / "new").exists()  # neither the index folder nor the folder made for it


def test_help_shows_no_type_beside_flags() -> None:
    result = run("ask", "--help")
    assert result.exit_code == 0
    assert "<bool>" not in result.stdout
    assert re.search(r"--json\s+Print one JSON object", result.stdout)
    assert "--docs PATH" in result.stdout


def test_a_folders_files_of_other_types_are_listed_as_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "kiwi.md").write_text("# Kiwi\n\nKiwi birds cannot fly. They lay very large eggs.\n")
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n")
    latin = "Le caf\u00e9 cr\u00e8me co\u00fbte deux euros.\n"
    (folder / "caf\u00e9.txt").write_bytes(latin.encode("latin-1"))
    result = run("ingest", folder, "--index", tmp_path / "idx")
    assert result.exit_code == 0, result.output
    assert "photo.png: unsupported type .png" in result.stderr
    assert "2 ingested" in result.stdout  # the Latin-1 file is read in its encoding


def test_ingest_of_a_good_and_a_bad_file_exits_0_and_reports_the_bad_one(
    tmp_path: Path, small_corpus: Path
) -> None:
    empty = tmp_path / "empty.md"
    empty.write_text("  \n")
    result = run("ingest", small_corpus, empty, "--index", tmp_path / "idx")
    assert result.exit_code == 0, result.output
    assert f"skipped {empty}: empty file" in result.stderr
    assert "(1 ingested, 0 unchanged, 1 skipped); documents +12 -0" in result.stdout


def test_ingest_rejects_bad_chunking_options(tmp_path: Path, small_corpus: Path) -> None:
    result = run("ingest", small_corpus, "--index", tmp_path / "idx", "--max-chars", "10")
    assert result.exit_code == 2
    assert "max_chars must be at least 50" in result.stderr
    assert not (tmp_path / "idx").exists()


def test_ingest_with_other_chunking_on_a_filled_index_exits_2(ingested: Path, small_corpus: Path) -> None:
    result = run("ingest", small_corpus, "--index", ingested, "--threshold", "0.5")
    assert result.exit_code == 2
    assert "was built with chunking" in result.stderr and "new --index directory" in result.stderr


def test_switching_paragraph_vectors_on_a_filled_index_is_refused_and_loses_nothing(
    tmp_path: Path, small_corpus: Path
) -> None:
    index = tmp_path / "idx"
    assert run("ingest", small_corpus, "--index", index, "--no-whole-paragraphs").exit_code == 0
    with Index.open(index, create=False) as opened:
        before = opened.stats()
    result = run("ingest", small_corpus, "--index", index, "--whole-paragraphs")
    assert result.exit_code == 2
    assert "'paragraph_vectors': 'pooled'" in result.stderr and "new --index directory" in result.stderr
    with Index.open(index, create=False) as opened:
        assert opened.stats() == before and opened.chunking.paragraph_vectors == "pooled"


def test_adding_files_keeps_the_settings_the_index_was_built_with(tmp_path: Path, small_corpus: Path) -> None:
    index = tmp_path / "idx"
    assert run("ingest", small_corpus, "--index", index, "--threshold", "0.5").exit_code == 0
    more = tmp_path / "kites.txt"
    more.write_text("Kites fly on the wind at the end of a long line.\n")
    result = run("ingest", more, "--index", index)
    assert result.exit_code == 0, result.output
    assert "documents +1 -0" in result.stdout


def test_ingest_while_another_writer_holds_the_lock_exits_2(tmp_path: Path, small_corpus: Path) -> None:
    index = tmp_path / "idx"
    index.mkdir()
    with open(index / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = run("ingest", small_corpus, "--index", index)
    assert result.exit_code == 2
    assert "being written by another process" in result.stderr


# search ----------------------------------------------------------------------------------------------------
def test_search_json_has_hits_with_scores(ingested: Path) -> None:
    result = run("search", "wild yeast sourdough starter", "--json", "--index", ingested)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["query"] == "wild yeast sourdough starter" and payload["mode"] == "hybrid"
    hits = payload["hits"]
    assert 1 <= len(hits) <= 10
    assert hits[0]["title"] == "Sourdough baking"
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    for hit in hits:
        assert {"chunk_id", "doc_id", "paragraph_id", "title", "section", "text"} <= set(hit)
        assert all(isinstance(hit[key], float) for key in ("bm25", "dense", "score"))
    assert hits[0]["bm25"] > 0 and hits[0]["dense"] > 0


def test_search_json_in_bm25_mode_with_k(ingested: Path) -> None:
    result = run("search", "Bitcoin miners", "--json", "--mode", "bm25", "-k", "2", "--index", ingested)
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)["hits"]
    assert 1 <= len(hits) <= 2
    assert hits[0]["title"] == "Bitcoin and the blockchain"
    assert all(h["score"] == pytest.approx(h["bm25"]) for h in hits)


def test_search_prints_ranked_hits_for_people(ingested: Path) -> None:
    result = run("search", "glaciers and the ice age", "--index", ingested, "-k", "3", "--fusion", "rrf")
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()[0]
    assert re.match(r"^\s+1\. [\d.]+\s+bm25\s+[\d.]+\s+dense [\d.-]+\s+Glaciers and ice ages", first), first
    assert "glacier" in result.stdout.lower()


def test_search_with_docs_ingests_first_and_keeps_stdout_json(tmp_path: Path, small_corpus: Path) -> None:
    index = tmp_path / "idx"
    result = run("search", "tides and the moon", "--docs", small_corpus, "--json", "--index", index)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["hits"][0]["title"] == "Ocean tides"


def test_search_on_a_missing_index_exits_2_with_a_clear_message(tmp_path: Path) -> None:
    result = run("search", "anything", "--index", tmp_path / "absent")
    assert result.exit_code == 2
    assert f"error: no index at {tmp_path / 'absent'}" in result.stderr
    assert "citewise ingest" in result.stderr
    assert not (tmp_path / "absent").exists()


def test_search_on_an_empty_index_exits_1(tmp_path: Path, small_corpus: Path) -> None:
    index = tmp_path / "idx"
    assert run("ingest", small_corpus, "--index", index, "-q").exit_code == 0
    assert run("remove", small_corpus, "--index", index).exit_code == 0
    result = run("search", "vaccines", "--index", index)
    assert result.exit_code == 1
    assert "is empty" in result.stderr


@pytest.mark.parametrize(
    ("args", "mentions"),
    [
        (["--mode", "sparse"], "--mode"),
        (["--fusion", "max"], "--fusion"),
        (["-k", "0"], "-k"),
        (["--alpha", "1.5"], "--alpha"),
    ],
)
def test_bad_search_options_exit_2(ingested: Path, args: list[str], mentions: str) -> None:
    result = run("search", "vaccines", "--index", ingested, *args)
    assert result.exit_code == 2
    assert "Invalid value" in result.stderr and mentions in result.stderr


# stats -----------------------------------------------------------------------------------------------------
def test_stats_json_counts_agree(ingested: Path, embedder: Embedder) -> None:
    result = run("stats", "--json", "--index", ingested)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["documents"] == 12 and data["files"] == 1
    assert data["chunks"] == data["chunk_vectors"] == data["chunks_lexical"] > 0
    assert data["consistent"] is True
    with Index.open(ingested, embedder=embedder, create=False) as opened:
        assert opened.stats().as_dict() == data


def test_stats_for_people_and_on_a_missing_index(ingested: Path, tmp_path: Path) -> None:
    result = run("stats", "--index", ingested)
    assert result.exit_code == 0
    assert re.search(r"^\s+documents: 12$", result.stdout, re.MULTILINE)
    assert re.search(r"^\s+consistent: True$", result.stdout, re.MULTILINE)
    missing = run("stats", "--index", tmp_path / "absent")
    assert missing.exit_code == 2 and "no index at" in missing.stderr


# remove ----------------------------------------------------------------------------------------------------
def test_remove_deletes_the_file_from_the_index(tmp_path: Path, small_corpus: Path) -> None:
    index = tmp_path / "idx"
    assert run("ingest", small_corpus, "--index", index, "-q").exit_code == 0
    result = run("remove", small_corpus, "--index", index)
    assert result.exit_code == 0, result.output
    assert re.search(r"remove: 1 files .*documents \+0 -12; chunks \+0 -\d+", result.stdout), result.stdout
    assert f"index {index}: 0 documents, 0 paragraphs, 0 chunks (chroma 0, bm25 0)" in result.stdout
    data = json.loads(run("stats", "--json", "--index", index).stdout)
    assert data["documents"] == data["chunks"] == data["chunk_vectors"] == data["chunks_lexical"] == 0


def test_remove_of_an_unknown_file_exits_1(ingested: Path, tmp_path: Path) -> None:
    result = run("remove", tmp_path / "never-ingested.txt", "--index", ingested)
    assert result.exit_code == 1
    assert "not in the index" in result.stderr
    assert "nothing matched in the index" in result.stderr
    assert json.loads(run("stats", "--json", "--index", ingested).stdout)["documents"] == 12


def test_remove_by_document_id_keeps_the_files_other_documents(tmp_path: Path, small_corpus: Path) -> None:
    index = tmp_path / "idx"
    assert run("ingest", small_corpus, "--index", index, "-q").exit_code == 0
    shown = json.loads(run("show", small_corpus, "--json").stdout)
    doc_id = shown[0]["doc_id"]
    result = run("remove", "--doc", doc_id, "--index", index)
    assert result.exit_code == 0, result.output
    assert re.search(r"documents \+0 -1;", result.stdout), result.stdout
    assert json.loads(run("stats", "--json", "--index", index).stdout)["documents"] == 11
    again = run("remove", "--doc", doc_id, "--index", index)  # gone: nothing matched
    assert again.exit_code == 1 and "nothing matched in the index" in again.stderr
    both = run("remove", small_corpus, "--doc", doc_id, "--index", index)
    assert both.exit_code == 2 and "not both" in both.stderr
    assert json.loads(run("stats", "--json", "--index", index).stdout)["documents"] == 11


def test_remove_on_a_missing_index_exits_2(tmp_path: Path, small_corpus: Path) -> None:
    result = run("remove", small_corpus, "--index", tmp_path / "absent")
    assert result.exit_code == 2 and "no index at" in result.stderr
    assert not (tmp_path / "absent").exists()


def test_a_cold_local_ask_loads_neither_pytorch_transformers_nor_scikit_learn(
    ingested: Path, embedder: Embedder
) -> None:
    """Once the model is exported to ONNX (the index's ingest did that), a new process answers without the
    libraries that made a cold `citewise ask` take twice as long: PyTorch, transformers, sentence-transformers
    (the embedding) and scikit-learn (only a report's outline clusters)."""
    import subprocess
    import sys

    assert embedder.embed(["warm"]).shape == (1, 384)  # the export exists in the cache
    heavy = ("torch", "transformers", "sentence_transformers", "sklearn")
    question = "How do vaccines train the immune system?"
    probe = (
        "import runpy, sys\n"
        f"sys.argv = ['citewise', 'ask', {question!r}, '--index', {str(ingested)!r}]\n"
        "try:\n    runpy.run_module('citewise.app.cli', run_name='__main__')\nexcept SystemExit as end:\n"
        "    assert not end.code, end.code\n"
        f"print('LOADED', ','.join(m for m in {heavy!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Vaccines train the immune system" in done.stdout  # it answered
    assert done.stdout.strip().splitlines()[-1] == "LOADED"
