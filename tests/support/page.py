"""The chat page under test: `citewise serve` on loopback, what a test does on it, where requests go.

Shared by the browser tests (tests/browser), which drive the page in Debian's Chromium with Playwright.
"""

from __future__ import annotations

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

from support.processes import stop

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
    command = [sys.executable, "-m", "citewise.app.cli", "serve", "--index", str(index)]
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
        stop(process)
        log.close()


def leaving(urls: list[str]) -> list[str]:
    """The URLs that go to another machine (data: and blob: URLs stay in the browser)."""
    parsed = [(url, urlparse(url)) for url in urls]
    return [url for url, p in parsed if p.scheme not in ("data", "blob") and p.hostname not in LOCAL_HOSTS]


ANSWER_TIMEOUT = 180_000  # ms: a local-mode turn takes 15-30 s on a shared two-core machine
CITE = "#cw-chat a.cw-cite"


def open_page(browser, url: str, seen: list[str], context=None):
    """A new tab on the page at `url`, every request it makes appended to `seen`; ready for a question."""
    context = context or browser.new_context(viewport={"width": 1400, "height": 1150})
    page = context.new_page()
    page.on("request", lambda request: seen.append(request.url))
    page.goto(url)
    page.wait_for_selector("#cw-question textarea")
    return page


def ask(page, question: str) -> None:
    """Type the question and press Ask (Playwright waits until both are enabled)."""
    page.fill("#cw-question textarea", question)
    page.click("#cw-ask")


def open_cited(page, link, shots: Path) -> str:
    """Click a marker link and wait for its passage with a supporting line highlighted; its marker.

    On a timeout the failure holds what the page showed instead (the passage, the chat with any degraded
    stage), with a screenshot in `shots`: a marker that opens no supporting line is a product defect.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    marker = link.inner_text().strip("[]")
    link.click()
    try:
        page.wait_for_selector(f"#cw-passage .cw-passage[data-marker='{marker}'] mark.cw-support")
    except PlaywrightTimeout:
        page.screenshot(path=shots / f"marker-{marker}-failed.png", full_page=True)
        pytest.fail(
            f"marker [{marker}] opened no passage with a supporting line.\n"
            f"passage: {page.inner_html('#cw-passage')[:3000]}\nchat: {page.inner_text('#cw-chat')[-4000:]}"
        )
    return marker
