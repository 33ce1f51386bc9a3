"""Content-hash ids: stable across runs and processes, different whenever the content differs."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from citewise.index.chunking import ChunkingConfig, chunk_documents
from citewise.index.document import BibEntry, Document, Paragraph, content_hash


class ConstantEmbedder:
    """Every text gets the same vector, so chunking depends only on sizes (ids do not depend on vectors)."""

    name = "constant-fake"
    dim = 3

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.tile(np.array([0.6, 0.8, 0.0], dtype=np.float32), (len(texts), 1))


def make_document(**changes: object) -> Document:
    document = Document(
        title="Black holes",
        source="/data/space.md",
        key="bh-1",
        paragraphs=[
            Paragraph("A black hole traps light [1]. Its edge is the event horizon.", "Basics", ("1",)),
            Paragraph("Hawking radiation makes black holes evaporate slowly [2].", "Quantum effects", ("2",)),
        ],
        bibliography={
            "1": BibEntry("1", "Schwarzschild, K. (1916). On the gravitational field of a mass point."),
            "2": BibEntry("2", "Hawking, S. (1974). Black hole explosions? Nature 248."),
        },
        metadata={"authors": ["A. Author"]},
    )
    return replace(document, **changes)  # type: ignore[arg-type]


def chunk_ids(document: Document) -> list[str]:
    (result,) = chunk_documents([document], ConstantEmbedder(), ChunkingConfig(max_chars=50))
    return [chunk.id for chunk in result.chunks]


# content_hash ----------------------------------------------------------------------------------------------
def test_content_hash_is_truncated_sha256_of_separated_parts() -> None:
    expected = hashlib.sha256(b"a\x1fbc\x1f").hexdigest()
    assert content_hash("a", "bc") == expected[:32]
    assert content_hash("a", "bc", size=64) == expected
    assert content_hash("a", "bc", size=8) == expected[:8]


def test_content_hash_separates_its_parts() -> None:
    assert content_hash("ab", "c") != content_hash("a", "bc")
    assert content_hash("abc") != content_hash("ab", "c")
    assert content_hash("") != content_hash()


def test_content_hash_handles_unicode() -> None:
    assert content_hash("café") == hashlib.sha256("café\x1f".encode()).hexdigest()[:32]
    assert content_hash("café") != content_hash("cafe\u0301")  # no silent normalisation


# Document.id -----------------------------------------------------------------------------------------------
def test_document_id_is_stable_for_equal_content() -> None:
    first, second = make_document(), make_document()
    assert first is not second
    assert first.id == second.id
    assert len(first.id) == 32 and int(first.id, 16) >= 0


_ID_SCRIPT = """
import json, sys
from citewise.index.document import BibEntry, Document, Paragraph
doc = Document(
    title="Titre é", source="x", key="k",
    paragraphs=[Paragraph("Un. Deux.", "S", ("1",))],
    bibliography={"1": BibEntry("1", "Ref"), "0": BibEntry("0", "Other")},
)
print(json.dumps(doc.id))
"""


def test_document_id_is_the_same_in_another_process_with_another_hash_seed() -> None:
    ids = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", _ID_SCRIPT], env=env, capture_output=True, text=True, check=True
        ).stdout
        ids.add(json.loads(out))
    local = Document(
        title="Titre é",
        source="x",
        key="k",
        paragraphs=[Paragraph("Un. Deux.", "S", ("1",))],
        bibliography={"0": BibEntry("0", "Other"), "1": BibEntry("1", "Ref")},
    )
    assert ids == {local.id}


def test_document_id_ignores_source_and_metadata() -> None:
    base = make_document()
    assert make_document(source="/elsewhere/space.md").id == base.id
    assert make_document(metadata={"licence": "CC-BY"}).id == base.id


def test_document_id_ignores_bibliography_order() -> None:
    base = make_document()
    reordered = dict(reversed(list(base.bibliography.items())))
    assert list(reordered) != list(base.bibliography)
    assert make_document(bibliography=reordered).id == base.id


def _with_paragraph(index: int, **changes: object) -> Document:
    base = make_document()
    paragraphs = list(base.paragraphs)
    paragraphs[index] = replace(paragraphs[index], **changes)  # type: ignore[arg-type]
    return make_document(paragraphs=paragraphs)


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param(lambda: make_document(title="Black holes!"), id="title"),
        pytest.param(lambda: make_document(key="bh-2"), id="key"),
        pytest.param(
            lambda: _with_paragraph(1, text="Hawking radiation makes black holes evaporate."), id="text"
        ),
        pytest.param(lambda: _with_paragraph(0, section="Introduction"), id="section"),
        pytest.param(lambda: _with_paragraph(0, citations=("1", "2")), id="citations"),
        pytest.param(
            lambda: make_document(paragraphs=make_document().paragraphs[::-1]), id="paragraph order"
        ),
        pytest.param(
            lambda: make_document(
                bibliography={**make_document().bibliography, "2": BibEntry("2", "Hawking, S. (1975).")}
            ),
            id="bibliography entry",
        ),
        pytest.param(
            lambda: make_document(bibliography={"1": make_document().bibliography["1"]}),
            id="bibliography size",
        ),
    ],
)
def test_document_id_changes_with_content(changed) -> None:  # type: ignore[no-untyped-def]
    assert changed().id != make_document().id


def test_moving_a_sentence_between_paragraphs_changes_the_id() -> None:
    one = make_document(paragraphs=[Paragraph("A. B."), Paragraph("C.")])
    other = make_document(paragraphs=[Paragraph("A."), Paragraph("B. C.")])
    assert one.id != other.id


# chunk ids -------------------------------------------------------------------------------------------------
def test_chunk_ids_are_stable_across_runs() -> None:
    first, second = chunk_ids(make_document()), chunk_ids(make_document())
    assert first == second
    assert len(first) >= 3  # max_chars=50 cuts the paragraphs into several chunks
    assert len(set(first)) == len(first)


def test_chunk_ids_do_not_depend_on_the_vectors() -> None:
    class OtherEmbedder(ConstantEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return np.tile(np.array([0.0, 0.0, 1.0], dtype=np.float32), (len(texts), 1))

    (result,) = chunk_documents([make_document()], OtherEmbedder(), ChunkingConfig(max_chars=50))
    assert [c.id for c in result.chunks] == chunk_ids(make_document())


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param(lambda: make_document(title="Black holes!"), id="title"),
        pytest.param(lambda: _with_paragraph(0, section="Introduction"), id="section"),
        pytest.param(
            lambda: make_document(bibliography={"1": make_document().bibliography["1"]}), id="bibliography"
        ),
    ],
)
def test_every_chunk_id_changes_when_the_document_changes_around_the_same_text(changed) -> None:  # type: ignore[no-untyped-def]
    before = chunk_ids(make_document())
    after = chunk_ids(changed())
    assert len(after) == len(before)
    assert not set(after) & set(before)


def test_editing_text_changes_the_chunk_ids() -> None:
    before = chunk_ids(make_document())
    after = chunk_ids(_with_paragraph(1, text="Hawking radiation makes black holes evaporate slowly [3]."))
    assert len(after) == len(before)
    assert not set(after) & set(before)  # the document id is part of every chunk id


def test_chunk_ids_within_a_document_differ_for_repeated_text() -> None:
    document = make_document(paragraphs=[Paragraph("Same sentence here."), Paragraph("Same sentence here.")])
    ids = chunk_ids(document)
    assert len(ids) == 2 and ids[0] != ids[1]
