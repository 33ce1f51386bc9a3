"""Browser tests: `citewise serve` in a subprocess on loopback, driven by Playwright in Debian's Chromium."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.page import serving

from citewise.index import Index
from citewise.index.embeddings import Embedder

CHROMIUM = Path("/usr/bin/chromium")

if not CHROMIUM.exists():  # CI installs it; a machine without it cannot run these tests at all
    pytest.skip(
        f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)",
        allow_module_level=True,
    )

playwright = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def sample_index(
    tmp_path_factory: pytest.TempPathFactory, embedder: Embedder, small_corpus_records: list[dict[str, str]]
) -> Path:
    """A real index of the twelve-document corpus (as tests/integration/conftest.py builds it)."""
    root = tmp_path_factory.mktemp("web-index")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in small_corpus_records), encoding="utf-8")
    with Index.open(root / "index", embedder=embedder) as index:
        assert index.ingest([corpus]).documents_added == len(small_corpus_records)
    return root / "index"


@pytest.fixture(scope="module")
def server(sample_index: Path) -> Iterator[str]:
    """`citewise serve` in local mode over the sample index; its URL. Stopped after the module."""
    with serving(sample_index.parent, sample_index) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless Chromium (Debian's, not a downloaded one)."""
    with playwright.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
        yield launched
        launched.close()
