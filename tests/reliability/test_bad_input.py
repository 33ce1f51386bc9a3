"""Campaign: bad input (issue #11). Each gets a clear, specific message and a non-zero exit code, and nothing
already stored is lost.

The real CLI (`citewise ask`, `citewise ingest`) in local mode against a real index of the twelve-document
corpus: questions it cannot take; damaged index folders (each a copy, so the original is the control); a
model setting it cannot use and a key the provider refuses (an OpenAI-compatible server on 127.0.0.1
answering 401); files that are not what their names say. Before and after each, `citewise stats --json` (and
for damaged copies the copy's own SQLite) must count the same documents and chunks.

What it found, fixed with it: a question holding bytes that are not UTF-8 ended in "TypeError: TextEncodeInput
must be ..." (a fault in citewise, exit 1); control characters and a 100,000-character question were
answered; a BM25 pointer file with garbage in it stopped every question ("Expecting value: line 1 column 1"),
and one naming a folder outside the index ended in a traceback (now both are rebuilt from the document store,
as a deleted Chroma folder already was); a copy of an ingested file was stored again as a second document;
one 6-million-character text file was accepted for hours of embedding.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result
from pypdf import PdfWriter
from support.fake_openai import Fail, FakeOpenAI
from typer.testing import CliRunner

from citewise.cli import app
from citewise.context import Context
from citewise.index.embeddings import Embedder
from citewise.indexes import forget_index

pytestmark = pytest.mark.integration

QUESTION = "How do vaccines train the immune system?"
ANSWER = "Vaccines train the immune system"
"""The start of the corpus sentence a local answer to QUESTION quotes."""
runner = CliRunner()


def run(*args: str | Path, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, [str(a) for a in args], env=env, catch_exceptions=False)


def counts(index: Path) -> dict[str, int]:
    """Documents and chunks in each store of the index (`citewise stats --json`)."""
    result = run("stats", "--index", index, "--json")
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    return {key: value for key, value in stats.items() if isinstance(value, int)}


def stored_chunks(index: Path) -> int:
    """Chunks in the document store, read with sqlite3 itself (no citewise code in between)."""
    with sqlite3.connect(index / "docs.sqlite3") as db:
        return db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory, small_corpus_records: list[dict[str, str]], embedder: Embedder
) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("bad-input")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in small_corpus_records), encoding="utf-8")
    result = run("ingest", corpus, "--index", root / "idx")
    assert result.exit_code == 0, result.output
    yield root / "idx"
    forget_index(Context(index_dir=str(root / "idx")))


@pytest.fixture
def damaged(built: Path, tmp_path: Path) -> Iterator[Callable[[Callable[[Path], object]], Path]]:
    """A copy of the built index, damaged by the given function (the original stays whole)."""
    copies: list[Path] = []

    def copy(damage: Callable[[Path], object]) -> Path:
        target = tmp_path / f"copy{len(copies)}"
        shutil.copytree(built, target)
        damage(target)
        copies.append(target)
        return target

    yield copy
    for path in copies:
        forget_index(Context(index_dir=str(path)))


# questions --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "says"),
    [
        ("", "the question is empty"),
        (" \n\t  ", "the question is empty"),
        ("How do\x00 vaccines\x07 work?", "control characters (U+0000, U+0007)"),
        (
            "How do \udcff\udcfe vaccines work?",
            "not valid UTF-8 text",
        ),  # what Python makes of such argv bytes
        ("why " * 25_000, "99,999 characters long, at most 10,000"),
    ],
    ids=["empty", "whitespace", "control-characters", "invalid-utf8", "100k-characters"],
)
def test_a_question_citewise_cannot_take_exits_2_and_says_why(built: Path, question: str, says: str) -> None:
    before = counts(built)
    result = run("ask", "--index", built, question)
    assert result.exit_code == 2, result.output
    assert says in result.stderr and "Traceback" not in result.output
    assert counts(built) == before


def test_bytes_that_are_not_utf8_in_the_real_argv(built: Path) -> None:
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "citewise.cli",
            "ask",
            "--index",
            str(built),
            b"How do \xff\xfe vaccines work?",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == 2, process.stderr
    assert "the question is not valid UTF-8 text" in process.stderr and "Traceback" not in process.stderr


# damaged index folders --------------------------------------------------------------------------------------


def test_a_missing_index_folder(tmp_path: Path) -> None:
    result = run("ask", "--index", tmp_path / "nowhere", QUESTION)
    assert result.exit_code == 2
    assert "no index at" in result.stderr and "citewise ingest" in result.stderr
    assert not (tmp_path / "nowhere").exists()  # asking made no empty index


def test_a_truncated_document_store_is_named_and_left_as_it_was(damaged: Callable[..., Path]) -> None:
    def truncate(index: Path) -> None:
        for side in ("docs.sqlite3-wal", "docs.sqlite3-shm"):
            (index / side).unlink(missing_ok=True)
        with (index / "docs.sqlite3").open("r+b") as handle:
            handle.truncate(5000)

    index = damaged(truncate)
    result = run("ask", "--index", index, QUESTION)
    assert result.exit_code == 2
    assert "cannot open the document store" in result.stderr and "malformed" in result.stderr
    assert (index / "docs.sqlite3").stat().st_size == 5000  # not "repaired" into an empty store


def test_an_index_built_with_another_embedding_model_is_refused(damaged: Callable[..., Path]) -> None:
    def other_model(index: Path) -> None:
        with sqlite3.connect(index / "docs.sqlite3") as db:
            db.execute("UPDATE meta SET value = 'e5-large-v2' WHERE key = 'embedding_model'")

    index = damaged(other_model)
    chunks = stored_chunks(index)
    result = run("ask", "--index", index, QUESTION)
    assert result.exit_code == 2
    assert "was built with embedding model 'e5-large-v2', not 'all-MiniLM-L6-v2'" in result.stderr
    assert stored_chunks(index) == chunks


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda index: shutil.rmtree(index / "chroma"), id="chroma-folder-deleted"),
        pytest.param(lambda index: (index / "bm25.json").write_text("garbage{"), id="bm25-pointer-garbage"),
        pytest.param(
            lambda index: (index / "bm25p.json").write_text(
                json.dumps({"dir": "../../etc", "generation": 2})
            ),
            id="bm25-pointer-escapes",
        ),
    ],
)
def test_a_derived_store_damaged_is_rebuilt_from_the_document_store(
    built: Path, damaged: Callable[..., Path], damage: Callable[[Path], object]
) -> None:
    index = damaged(damage)
    result = run("ask", "--index", index, QUESTION)
    assert result.exit_code == 0, result.output
    assert ANSWER in result.stdout and "[1]" in result.stdout
    assert counts(index) == counts(built)  # Chroma and both BM25 indexes mirror every chunk again
    for name in ("bm25", "bm25p"):
        pointed = json.loads((index / f"{name}.json").read_text())["dir"]
        assert pointed.startswith(f"{name}-") and (index / pointed).is_dir()


# model settings ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "says"),
    [
        ("nosuch/x", "unknown model provider 'nosuch' in 'nosuch/x'"),
        ("openai", "must be written as provider/model"),
    ],
)
def test_a_model_setting_it_cannot_use_exits_2(built: Path, model: str, says: str) -> None:
    result = run("ask", "--index", built, "--model", model, QUESTION)
    assert result.exit_code == 2
    assert says in result.stderr and "Traceback" not in result.output


def test_a_key_the_provider_refuses_is_named_once(built: Path, serve: Callable[..., FakeOpenAI]) -> None:
    server = serve(lambda request: Fail(401), key="sk-refused-0000")
    result = run(
        "ask", "--index", built, "--model", "openai/test-model", QUESTION,
        env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-refused-0000"},
    )  # fmt: skip
    assert result.exit_code != 0
    assert "the API key was refused (401)" in result.stderr and "Set a valid key" in result.stderr
    assert "sk-refused-0000" not in result.output and "Traceback" not in result.output
    assert len(server.chat_requests) == 1  # an authentication error is not retried


# files that are not what their names say --------------------------------------------------------------------


def test_files_that_are_not_what_their_names_say_are_skipped_with_their_reasons(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    good = "Lake Baikal is the deepest lake in the world, at 1,642 metres.\n"
    (folder / "baikal.txt").write_text(good, encoding="utf-8")
    (folder / "baikal-copy.txt").write_text(good, encoding="utf-8")
    (folder / "empty.txt").write_bytes(b"")
    (folder / "binary.txt").write_bytes(bytes(range(256)) * 8)
    (folder / "random.pdf").write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 8)
    locked = PdfWriter()
    locked.add_blank_page(200, 200)
    locked.encrypt("secret")
    locked.write(folder / "locked.pdf")
    (folder / "huge.txt").write_text(("Lake Baikal lies in Siberia. " * 40 + "\n\n") * 5000, encoding="utf-8")
    index = tmp_path / "idx"

    result = run("ingest", folder, "--index", index)
    assert result.exit_code == 0, result.output
    reasons = {
        "empty.txt": "empty file",
        "binary.txt": "a binary file, not text",
        "random.pdf": "corrupt or unreadable PDF",
        "locked.pdf": "encrypted PDF (needs a password)",
        "huge.txt": "characters of text in one document, over 5,000,000: split it",
    }
    skipped = {line.split(": ", 1)[0]: line for line in result.stderr.splitlines()}
    for name, reason in reasons.items():
        assert reason in skipped[f"skipped {folder / name}"]
    # the copy comes first in the walk's order, so the original is the one named a copy of it
    assert f"skipped {folder / 'baikal.txt'}: the same bytes as {folder / 'baikal-copy.txt'}" in result.stderr
    assert counts(index)["documents"] == 1

    again = run("ingest", folder, "--index", index)  # nothing changed: nothing added, nothing lost
    assert again.exit_code == 0 and counts(index)["documents"] == 1
    only_bad = run("ingest", folder / "locked.pdf", "--index", index)
    assert only_bad.exit_code == 1 and "nothing was ingested" in only_bad.stderr
    assert counts(index)["documents"] == 1
    forget_index(Context(index_dir=str(index)))
