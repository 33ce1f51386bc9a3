"""Browser tests: `citewise serve` in a subprocess on loopback, driven by Playwright in Debian's Chromium."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import pytest

from citewise.index import Index
from citewise.index.embeddings import Embedder

CHROMIUM = Path("/usr/bin/chromium")

if not CHROMIUM.exists():  # CI installs it; a machine without it cannot run these tests at all
    pytest.skip(
        f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)",
        allow_module_level=True,
    )

playwright = pytest.importorskip("playwright.sync_api")

LOCAL_HOSTS = {"127.0.0.1", "localhost"}

OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "GRADIO_ANALYTICS_ENABLED": "False",
}


def free_port() -> int:
    """A port nothing listens on, on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


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


@contextmanager
def serving(root: Path, index: Path, *options: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """`citewise serve` on a free loopback port (threads in a fresh SQLite file under `root`); its URL.

    `options` are more command-line options (`--model ...`), `env` more environment (`OPENAI_BASE_URL`).
    """
    port = free_port()
    own = ("OPENAI_", "COHERE_", "CITEWISE_")
    environment = {k: v for k, v in os.environ.items() if not k.startswith(own)}
    environment |= OFFLINE | (env or {})
    log_path = root / "serve.log"
    log = log_path.open("w")
    command = [sys.executable, "-m", "citewise.cli", "serve", "--index", str(index)]
    command += ["--port", str(port), "--threads", str(root / "threads.sqlite"), *options]
    process = subprocess.Popen(command, cwd=root, env=environment, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 180
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"citewise serve exited {process.returncode}:\n{log_path.read_text()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"citewise serve did not answer in time:\n{log_path.read_text()}")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


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


def leaving(urls: list[str]) -> list[str]:
    """The URLs that go to another machine (data: and blob: URLs stay in the browser)."""
    parsed = [(url, urlparse(url)) for url in urls]
    return [url for url, p in parsed if p.scheme not in ("data", "blob") and p.hostname not in LOCAL_HOSTS]
