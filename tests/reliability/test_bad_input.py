"""Campaign: bad input (issue #11). Each gets a clear, specific message and a non-zero exit code, and nothing
already stored is lost.

The real CLI, run as a subprocess (`python -m citewise.app.cli`) in local mode (no provider key in its
environment), against a real index of the twelve-document corpus. One matrix, a row per bad input: what is
wrong, the command, the exit code it must end with, the words its message must hold. Questions it cannot take
(empty, whitespace, control characters, bytes that are not UTF-8 in the real argv, 100,000 characters);
missing and damaged index folders (each damage on a copy: a truncated, overwritten, emptied or deleted
`docs.sqlite3`, a deleted Chroma folder, garbage in `bm25.json` / `bm25p.json`, a pointer naming a folder
outside the index, an index whose metadata names another embedding model, a Chroma collection of another
model's 768-dimensional vectors); model settings it cannot use and a key the provider refuses (an
OpenAI-compatible server on 127.0.0.1 answering 401); files it cannot ingest into an existing index (a copy):
unreadable (chmod 000; skipped when the tests run as root, who reads it all the same), random bytes named
.txt and .pdf, zero bytes, an encrypted PDF, a 50 MB text file, one file named three ways, the same bytes
under two names, a copy of a file already in the index. Every row checks the index it touches before and
after: the shared index with `citewise stats --json` (documents, chunks and what Chroma and both BM25
indexes hold), a damaged copy with sqlite3 itself (rows of the document store and of Chroma, the BM25
pointers), so a refusal that "repaired" a store into an empty one fails the row. A folder of 10,000 small
files runs only with CITEWISE_SLOW_TESTS=1: 454 s on 2 cores (10,000 documents, 20,000 chunks, consistent).

What it found, fixed with it: an earlier round (a not-UTF-8 question ended in a TypeError; control characters
and a 100,000-character question were answered; a garbage BM25 pointer stopped every question and one naming
a folder outside the index raised a traceback; a copy of a file was stored as a second document; a
6-million-character file was taken for hours of embedding). This round: a Chroma collection of
768-dimensional vectors ended every question in "a fault in citewise" (exit 1) instead of naming the other
model; an emptied or deleted `docs.sqlite3` beside intact Chroma and BM25 stores was silently recreated
empty ("index is empty: add documents", the old collection orphaned); a truncated store and another model's
index named the problem but not what to do; a deleted Chroma folder was rebuilt without a word; one file
named twice (`in/a.txt`, `in/../in/a.txt`) counted as two files, the second "unchanged".
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from pypdf import PdfWriter
from support.fake_openai import Fail, FakeOpenAI

pytestmark = pytest.mark.integration

QUESTION = "How do vaccines train the immune system?"
ANSWER = "Vaccines train the immune system"
"""The start of the corpus sentence a local answer to QUESTION quotes."""
REFUSED_KEY = "sk-refused-7f3a9c"
KEYLESS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COHERE_API_KEY", "COHERE_BASE_URL", "CITEWISE_MODEL")
KEYLESS += ("CITEWISE_JUDGE_MODEL", "CITEWISE_INDEX", "CITEWISE_CHROMA_URL", "CITEWISE_LLM_CACHE")
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
OFFLINE |= {
    "LANGSMITH_TRACING": "false",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
}


def citewise(*args: str | bytes | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the CLI as a subprocess in local mode (no provider key or server), plus `env`."""
    environment = {k: v for k, v in os.environ.items() if k not in KEYLESS} | OFFLINE | (env or {})
    command = [
        sys.executable,
        "-m",
        "citewise.app.cli",
        *(a if isinstance(a, bytes) else str(a) for a in args),
    ]
    return subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600)


def stats(index: Path) -> dict[str, int | bool]:
    """`citewise stats --index DIR --json`: documents, chunks in SQLite, Chroma and BM25, consistency."""
    result = citewise("stats", "--index", index, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def stored(index: Path) -> dict[str, object]:
    """What the index's files hold, read by sqlite3 itself (no citewise code in between, nothing written):
    rows of the document store and of Chroma, and the BM25 pointers' text."""

    def rows(path: Path, tables: tuple[str, ...]) -> object:
        if not path.exists() or not path.stat().st_size:
            return "absent or empty"
        try:
            with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                return {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables}
        except sqlite3.DatabaseError as error:  # damaged: its bytes must stay as they are
            return f"unreadable ({error}): sha256 {hashlib.sha256(path.read_bytes()).hexdigest()}"

    pointers = {
        name: (index / name).read_bytes() for name in ("bm25.json", "bm25p.json") if (index / name).exists()
    }
    return {
        "documents": rows(index / "docs.sqlite3", ("files", "documents", "paragraphs", "chunks")),
        "chroma": rows(index / "chroma" / "chroma.sqlite3", ("embeddings",)),
        "pointers": pointers,
    }


# damage done to a copy of the index ------------------------------------------------------------------------


def _truncate(size: int) -> Callable[[Path], None]:
    def damage(index: Path) -> None:
        for side in ("docs.sqlite3-wal", "docs.sqlite3-shm"):
            (index / side).unlink(missing_ok=True)
        with (index / "docs.sqlite3").open("r+b") as handle:
            handle.truncate(size)

    return damage


def _overwrite(index: Path) -> None:
    _truncate(0)(index)
    (index / "docs.sqlite3").write_bytes(np.random.default_rng(7).bytes(20_000))


def _delete_store(index: Path) -> None:
    for name in ("docs.sqlite3", "docs.sqlite3-wal", "docs.sqlite3-shm"):
        (index / name).unlink(missing_ok=True)


def _other_model_named(index: Path) -> None:
    with closing(sqlite3.connect(index / "docs.sqlite3")) as db, db:
        db.execute("UPDATE meta SET value = 'e5-large-v2' WHERE key = 'embedding_model'")


def _other_model_vectors(index: Path) -> None:
    """Chroma's collection replaced by one a 768-dimensional model made (same ids, texts and metadata)."""
    import chromadb
    from chromadb.config import Settings

    from citewise.index.local.vectors import ChromaEmbedding

    class Other:
        name, dim = "bge-base-en-v1.5", 768

    with closing(sqlite3.connect(index / "docs.sqlite3")) as db:
        name = db.execute("SELECT value FROM meta WHERE key = 'collection'").fetchone()[0]
    client = chromadb.PersistentClient(
        path=str(index / "chroma"), settings=Settings(anonymized_telemetry=False)
    )
    old = client.get_collection(name).get(include=["documents", "metadatas"])
    client.delete_collection(name)
    new = client.create_collection(
        name,
        embedding_function=ChromaEmbedding(Other()),  # type: ignore[arg-type]
        configuration={"hnsw": {"space": "cosine"}},
        metadata={"embedding_model": Other.name},
    )
    vectors = np.random.default_rng(0).normal(size=(len(old["ids"]), Other.dim)).astype(np.float32)
    new.add(ids=old["ids"], embeddings=vectors, documents=old["documents"], metadatas=old["metadatas"])
    client.clear_system_cache()


# files to ingest -------------------------------------------------------------------------------------------

BAIKAL = "Lake Baikal is the deepest lake in the world, at 1,642 metres.\n"


def _encrypted_pdf(path: Path) -> None:
    locked = PdfWriter()
    locked.add_blank_page(200, 200)
    locked.encrypt("secret")
    locked.write(path)


def _huge(path: Path) -> None:
    paragraph = "Lake Baikal lies in Siberia and holds a fifth of the fresh water on Earth. " * 20 + "\n\n"
    with path.open("w", encoding="utf-8") as handle:
        for _ in range(50_000_000 // len(paragraph) + 1):
            handle.write(paragraph)


def _unreadable(path: Path) -> None:
    path.write_text(BAIKAL, encoding="utf-8")
    path.chmod(0)


def _twins(folder: Path) -> None:
    folder.mkdir()
    (folder / "a.txt").write_text(BAIKAL, encoding="utf-8")
    (folder / "b.md").write_text(BAIKAL, encoding="utf-8")


FILES: dict[str, Callable[[Path], None]] = {
    "locked.txt": _unreadable,
    "random.txt": lambda path: path.write_bytes(np.random.default_rng(1).bytes(4096)),
    "random.pdf": lambda path: path.write_bytes(b"%PDF-1.7\n" + np.random.default_rng(2).bytes(4096)),
    "empty.txt": lambda path: path.write_bytes(b""),
    "encrypted.pdf": _encrypted_pdf,
    "huge.txt": _huge,
    "baikal.txt": lambda path: path.write_text(BAIKAL, encoding="utf-8"),
    "twins": _twins,
}
"""What the ingest rows name under {tmp}, made on demand."""


# the matrix -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One bad input: what is wrong, the command (after `citewise`), the exit code, words its message holds.

    `{index}` in the command is the index the row touches, `{tmp}` its own folder. `index` says which:
    "built" (the shared index, which must stay as it was), "copy" (a copy, `damage`d first; a refusal must
    leave it as it was, a `rebuilt` store must mirror the original again), or "none". `added` is how many
    documents an ingest into the copy may add (0: none, nothing lost either).
    """

    wrong: str
    command: tuple[str | bytes, ...]
    code: int
    says: tuple[str, ...]
    index: str = "built"
    damage: Callable[[Path], object] | None = None
    rebuilt: bool = False
    added: int = 0
    stdout: tuple[str, ...] = ()
    provider: bool = False
    needs_non_root: bool = False
    quiet_about: tuple[str, ...] = ()


# fmt: off
ASK = ("ask", "--index", "{index}")
INGEST_INTO = ("--index", "{index}")
CASES = {
    # questions
    "empty-question": Case("an empty question", (*ASK, ""), 2, ("the question is empty",)),
    "whitespace-question": Case("a question of whitespace", (*ASK, " \n\t  "), 2, ("the question is empty",)),
    "control-characters": Case(
        "BEL and ESC in the question",
        (*ASK, "How do\x07 vaccines \x1b[31mwork?"),
        2,
        ("the question holds control characters (U+0007, U+001B)", "remove them"),
    ),
    "invalid-utf8": Case(
        "bytes that are not UTF-8 in argv",
        (*ASK, b"How do \xff\xfe vaccines work?"),
        2,
        ("the question is not valid UTF-8 text", "check the terminal's encoding"),
    ),
    "100k-question": Case(
        "a 100,000-character question",
        (*ASK, "why " * 25_000),
        2,
        ("the question is 99,999 characters long, at most 10,000 are taken", "ingest it"),
    ),
    # index folders
    "no-index-folder": Case(
        "no index folder", ("ask", "--index", "{tmp}/nowhere", QUESTION), 2,
        ("no index at", "citewise ingest"), index="none",
    ),
    "sqlite-truncated": Case(
        "docs.sqlite3 cut to 90,000 bytes", (*ASK, QUESTION), 2,
        ("cannot open the document store", "malformed", "restore it from a backup", "new --index directory"),
        index="copy", damage=_truncate(90_000),
    ),
    "sqlite-garbage": Case(
        "docs.sqlite3 overwritten with random bytes", (*ASK, QUESTION), 2,
        ("cannot open the document store", "file is not a database", "restore it from a backup"),
        index="copy", damage=_overwrite,
    ),
    "sqlite-emptied": Case(
        "docs.sqlite3 truncated to 0 bytes", (*ASK, QUESTION), 2,
        ("docs.sqlite3 is missing or empty", "restore docs.sqlite3 from a backup", "new --index directory"),
        index="copy", damage=_truncate(0), quiet_about=("is empty: add documents",),
    ),
    "sqlite-deleted": Case(
        "docs.sqlite3 deleted", ("stats", "--index", "{index}"), 2,
        ("docs.sqlite3 is missing or empty", "restore docs.sqlite3 from a backup"),
        index="copy", damage=_delete_store,
    ),
    "chroma-deleted": Case(  # a question does not read Chroma below EXACT_LIMIT chunks: it answers
        "the chroma folder deleted, then a question", (*ASK, QUESTION), 0, (),
        index="copy", damage=lambda index: shutil.rmtree(index / "chroma"), rebuilt=True,
        stdout=(ANSWER, "[1]"),
    ),
    "chroma-deleted-stats": Case(  # the first command that opens Chroma rebuilds it, and says so
        "the chroma folder deleted, then stats", ("stats", "--index", "{index}"), 0,
        ("holds none of the document store's", "rebuilding it from the document store"),
        index="copy", damage=lambda index: shutil.rmtree(index / "chroma"), rebuilt=True,
        stdout=("consistent: True",),
    ),
    "bm25-garbage": Case(
        "garbage in bm25.json", (*ASK, QUESTION), 0, ("bm25.json cannot be read", "it will be rebuilt"),
        index="copy", damage=lambda index: (index / "bm25.json").write_text("garbage{"), rebuilt=True,
        stdout=(ANSWER, "[1]"),
    ),
    "bm25p-garbage": Case(
        "binary garbage in bm25p.json", (*ASK, QUESTION), 0,
        ("bm25p.json cannot be read", "it will be rebuilt"),
        index="copy", damage=lambda index: (index / "bm25p.json").write_bytes(b"\x00\x9f{\"dir\": "),
        rebuilt=True, stdout=(ANSWER, "[1]"),
    ),
    "bm25p-escapes": Case(
        "bm25p.json naming a folder outside the index", (*ASK, QUESTION), 0,
        ("bm25p.json names no index folder ('../../etc')", "it will be rebuilt"),
        index="copy", rebuilt=True, stdout=(ANSWER, "[1]"),
        damage=lambda index: (index / "bm25p.json").write_text('{"dir": "../../etc", "generation": 2}'),
    ),
    "other-model-named": Case(
        "an index another embedding model built (its metadata)", (*ASK, QUESTION), 2,
        ("was built with embedding model 'e5-large-v2', not 'all-MiniLM-L6-v2", "new --index directory"),
        index="copy", damage=_other_model_named,
    ),
    "other-model-dimension": Case(  # the first command that opens Chroma refuses it
        "Chroma vectors of 768 dimensions (another model), then stats", ("stats", "--index", "{index}"), 2,
        ("holds 768-dimensional vectors", "not the 384 of 'all-MiniLM-L6-v2",
         "rebuild it from the document store"),
        index="copy", damage=_other_model_vectors, quiet_about=("a fault in citewise",),
    ),
    "other-model-dimension-ingest": Case(
        "Chroma vectors of 768 dimensions (another model), then an ingest",
        ("ingest", "{tmp}/baikal.txt", *INGEST_INTO), 2,
        ("holds 768-dimensional vectors", "rebuild it from the document store"),
        index="copy", damage=_other_model_vectors,
    ),
    "other-model-dimension-ask": Case(  # below EXACT_LIMIT a question reads the document store's vectors
        "Chroma vectors of 768 dimensions (another model), then a question", (*ASK, QUESTION), 0, (),
        index="copy", damage=_other_model_vectors, stdout=(ANSWER, "[1]"),
    ),
    # model settings
    "unknown-provider": Case(
        "--model nosuch/x", (*ASK, "--model", "nosuch/x", QUESTION), 2,
        ("unknown model provider 'nosuch' in 'nosuch/x'", "Fix the model setting"),
    ),
    "no-provider": Case(
        "--model openai (no model name)", (*ASK, "--model", "openai", QUESTION), 2,
        ("model 'openai' must be written as provider/model", "Fix the model setting"),
    ),
    "no-key": Case(
        "--model openai/gpt-4o-mini without a key", (*ASK, "--model", "openai/gpt-4o-mini", QUESTION), 2,
        ("needs the OPENAI_API_KEY environment variable",),
    ),
    "refused-key": Case(
        "a key the provider refuses (401)", (*ASK, "--model", "openai/test-model", QUESTION), 1,
        ("the API key was refused (401)", "Set a valid key"), provider=True,
    ),
    # files to ingest into the index
    "unreadable-file": Case(
        "a chmod 000 file", ("ingest", "{tmp}/locked.txt", *INGEST_INTO), 1,
        ("unreadable: Permission denied", "nothing was ingested"), index="copy", needs_non_root=True,
    ),
    "binary-as-txt": Case(
        "random bytes named .txt", ("ingest", "{tmp}/random.txt", *INGEST_INTO), 1,
        ("random.txt: a binary file, not text", "nothing was ingested"), index="copy",
    ),
    "binary-as-pdf": Case(
        "random bytes named .pdf", ("ingest", "{tmp}/random.pdf", *INGEST_INTO), 1,
        ("random.pdf: corrupt or unreadable PDF", "nothing was ingested"), index="copy",
    ),
    "zero-bytes": Case(
        "a zero-byte file", ("ingest", "{tmp}/empty.txt", *INGEST_INTO), 1,
        ("empty.txt: empty file", "nothing was ingested"), index="copy",
    ),
    "encrypted-pdf": Case(
        "an encrypted PDF", ("ingest", "{tmp}/encrypted.pdf", *INGEST_INTO), 1,
        ("encrypted.pdf: encrypted PDF (needs a password)", "nothing was ingested"), index="copy",
    ),
    "huge-file": Case(
        "a 50 MB text file", ("ingest", "{tmp}/huge.txt", *INGEST_INTO), 1,
        ("characters of text in one document, over 5,000,000: split it", "nothing was ingested"),
        index="copy",
    ),
    "same-file-thrice": Case(
        "one file named three ways",
        ("ingest", "{tmp}/baikal.txt", "{tmp}/../in/baikal.txt", "{tmp}", *INGEST_INTO), 0, (),
        index="copy", added=1, stdout=("ingest: 1 files (1 ingested, 0 unchanged, 0 skipped)",),
    ),
    "same-bytes-two-names": Case(
        "the same bytes as a.txt and b.md", ("ingest", "{tmp}/twins", *INGEST_INTO), 0,
        ("twins/b.md: the same bytes as", "twins/a.txt, already in the index"), index="copy", added=1,
    ),
    "copy-of-an-ingested-file": Case(
        "a copy of the corpus already ingested", ("ingest", "{tmp}/corpus-copy.jsonl", *INGEST_INTO), 1,
        ("corpus-copy.jsonl: the same bytes as", "corpus.jsonl, already in the index",
         "nothing was ingested"),
        index="copy",
    ),
}
# fmt: on


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, small_corpus_records: list[dict[str, str]]) -> Path:
    root = tmp_path_factory.mktemp("bad-input")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in small_corpus_records), encoding="utf-8")
    result = citewise("ingest", corpus, "--index", root / "idx", "--quiet")
    assert result.returncode == 0, result.stderr
    return root / "idx"


@pytest.fixture(scope="module")
def baseline(built: Path) -> dict[str, int | bool]:
    """The shared index's figures before any row: each row must leave them so."""
    figures = stats(built)
    assert figures["documents"] == 12 and figures["consistent"] is True
    return figures


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_bad_input(case: Case, built: Path, baseline: dict[str, int | bool], tmp_path: Path) -> None:
    if case.needs_non_root and os.geteuid() == 0:
        pytest.skip("run as root, who reads a chmod 000 file all the same (unit test: test_unreadable_file)")
    files = tmp_path / "in"
    files.mkdir()
    index = {"built": built, "copy": tmp_path / "copy", "none": files / "nowhere"}[case.index]
    if case.index == "copy":
        shutil.copytree(built, index)
        if case.damage:
            case.damage(index)
    for name, make in FILES.items():
        if any(isinstance(a, str) and f"{{tmp}}/{name}" in a for a in case.command):
            make(files / name)
    if "{tmp}/corpus-copy.jsonl" in case.command:
        shutil.copy(built.parent / "corpus.jsonl", files / "corpus-copy.jsonl")
    before = stored(index) if case.index == "copy" else None
    args = [a.replace("{index}", str(index)).replace("{tmp}", str(files)) if isinstance(a, str) else a
            for a in case.command]  # fmt: skip

    server = FakeOpenAI(lambda request: Fail(401)).start() if case.provider else None
    try:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": REFUSED_KEY} if server else None
        result = citewise(*args, env=env)
    finally:
        if server:
            server.stop()

    assert result.returncode == case.code, f"{case.wrong}: exit {result.returncode}\n{result.stderr[-3000:]}"
    for words in case.says:
        assert words in result.stderr, f"{case.wrong}: {words!r} not in\n{result.stderr[-3000:]}"
    for words in case.stdout:
        assert words in result.stdout, f"{case.wrong}: {words!r} not in\n{result.stdout[-3000:]}"
    output = result.stdout + result.stderr
    assert "Traceback" not in output and "a fault in citewise" not in output
    for words in case.quiet_about:
        assert words not in output

    if case.index == "built":
        assert stats(built) == baseline  # nothing stored was lost or added
    elif case.index == "none":
        assert not index.exists()  # asking made no empty index
    elif case.rebuilt:  # Chroma and both BM25 indexes mirror every chunk of the document store again
        after = stats(index)
        assert after == baseline | {"generation": after["generation"]}
        assert stored(index)["documents"] == before["documents"]
        for name in ("bm25", "bm25p"):
            pointed = json.loads((index / f"{name}.json").read_text())["dir"]
            assert pointed.startswith(f"{name}-") and (index / pointed).is_dir()
    elif case.command[0] != "ingest" or case.code == 2:
        assert stored(index) == before  # refused: not "repaired", not emptied, bytes as they were
    else:  # at most `added` documents more, none of the index's lost, the stores in agreement
        after = stats(index)
        assert after["documents"] == baseline["documents"] + case.added
        assert after["chunks"] >= baseline["chunks"] and after["consistent"] is True
        if not case.added:
            assert stored(index) == before
    if server:
        assert REFUSED_KEY not in output
        assert len(server.chat_requests) == 1  # an authentication error is not retried


@pytest.mark.skipif(
    os.environ.get("CITEWISE_SLOW_TESTS") != "1",
    reason="about 8 minutes on 2 cores (454 s measured); set CITEWISE_SLOW_TESTS=1 to run it",
)
def test_a_folder_of_10000_small_files(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    places = "lake river stone forest harbour lantern copper meadow falcon glacier orchard canyon".split()
    for i in range(10_000):
        near = places[i % len(places)]
        text = (
            f"Note {i}: the survey marker of site {i} stands by the {near}. It was set in {1800 + i % 200}.\n"
        )
        (folder / f"note{i:05d}.txt").write_text(text, encoding="utf-8")
    started = time.perf_counter()
    result = citewise("ingest", folder, "--index", tmp_path / "idx", "--quiet")
    seconds = time.perf_counter() - started
    assert result.returncode == 0, result.stderr[-3000:]
    figures = stats(tmp_path / "idx")
    assert figures["files"] == figures["documents"] == 10_000 and figures["consistent"] is True
    print(f"10,000 files: {seconds:.0f} s, {figures['chunks']} chunks")


def test_a_nul_character_which_argv_cannot_carry_is_refused_too() -> None:
    """`citewise chat` reads questions from stdin, where a NUL can arrive; it goes through the same check."""
    from citewise.core.questions import BadQuestion, check_question

    with pytest.raises(BadQuestion, match=r"control characters \(U\+0000, U\+0007\): remove them"):
        check_question("How do\x00 vaccines\x07 work?")
