"""Where a shared store keeps its vectors: the ``--vectors`` option's forms (`vector_choice`)."""

from __future__ import annotations

import pytest

from citewise.index.shared.chromavectors import vector_choice


@pytest.mark.parametrize(
    ("option", "canonical"),
    [
        (None, None),
        ("  ", None),
        ("pgvector", "pgvector"),
        (" PGVECTOR ", "pgvector"),
        ("chroma://127.0.0.1:8000", "chroma://127.0.0.1:8000"),
        ("chroma://chroma.internal", "chroma://chroma.internal:8000"),
        ("http://localhost:9000/", "chroma://localhost:9000"),
        ("https://chroma.internal", "chroma+https://chroma.internal:443"),
        ("chroma+https://chroma.internal:8443", "chroma+https://chroma.internal:8443"),
        ("chroma://[::1]:8000", "chroma://[::1]:8000"),
    ],
)
def test_the_forms_of_the_option(option: str | None, canonical: str | None) -> None:
    assert vector_choice(option) == canonical


@pytest.mark.parametrize(
    "option", ["qdrant://127.0.0.1:6333", "chroma://", "127.0.0.1:8000", "chroma://host:8000/path"]
)
def test_anything_else_is_refused_with_what_is_expected(option: str) -> None:
    with pytest.raises(ValueError, match="pgvector or a Chroma server's address"):
        vector_choice(option)


def test_a_bad_port_is_refused() -> None:
    with pytest.raises(ValueError, match="bad port"):
        vector_choice("chroma://host:99999")
