"""The chat page's screenshots in the docs (docs/*.png), made again from a clean example.

    python bench/screenshot.py [--folder docs]

Not a benchmark: it lives beside them because it drives the page as they do. In a fresh temporary folder,
the bundled sample and two of the tests' typeset PDFs are ingested with `citewise ingest` into
`.citewise/index` (a relative path, so the page's header shows what a user's would); `citewise serve` runs
there on 127.0.0.1 in local mode; Debian's Chromium (Playwright) asks a question a PDF answers, opens its
marker (the passage, its page with the supporting lines marked) and takes the screenshots:

- chat-page.png: the page with the answer, the passage and its page;
- document-view.png: the document view alone, the cited page with its supporting lines marked;
- library.png: the Library tab in a 1280 px window, the PDF that answered opened (sections, references, left
  out);
- outline.png: a report asked "outline first", its planned outline waiting in the editor.

No path of the temporary folder is on any of them (the page names files by their names).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support.page import ANSWER_TIMEOUT, CITE, OFFLINE, ask, free_port, open_page  # noqa: E402

QUESTION = "What does the controller do with the brake band when the averaged tension reading rises?"
REPORT = "Give an overview of how the weaving controller keeps the warp tension steady"
PDF_TITLE = "The Loomwright Weaving Controller"
SHOTS = ("chat-page.png", "document-view.png", "library.png", "outline.png")
EXE = str(Path(sys.executable).with_name("citewise"))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--folder", type=Path, default=ROOT / "docs", help="where the PNG files go")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "COHERE_", "CITEWISE_"))}
    env |= OFFLINE
    with tempfile.TemporaryDirectory(prefix="citewise-screenshot-") as scratch:
        home = Path(scratch)
        papers = home / "papers"
        papers.mkdir()
        shutil.copyfile(ROOT / "citewise" / "samples" / "unarxive_sample.jsonl", papers / "sample.jsonl")
        for name in ("manual.pdf", "retrieval.pdf"):
            shutil.copyfile(ROOT / "tests" / "data" / "pdf" / name, papers / name)
        index = [".citewise/index"]
        subprocess.run([EXE, "ingest", "papers", "--index", *index], cwd=home, env=env, check=True)
        port = free_port()
        command = [
            EXE,
            "serve",
            "--index",
            *index,
            "--threads",
            ".citewise/threads.sqlite",
            "--port",
            str(port),
        ]
        with (home / "serve.log").open("w") as log:
            server = subprocess.Popen(command, cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                with sync_playwright() as driver:
                    browser = driver.chromium.launch(
                        executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"]
                    )
                    context = browser.new_context(viewport={"width": 1400, "height": 1300})
                    page = None
                    for _ in range(120):  # the server starts in a few seconds
                        try:
                            page = open_page(browser, f"http://127.0.0.1:{port}/", [], context)
                            break
                        except Exception:  # noqa: BLE001 (not up yet: any error of the first loads)
                            subprocess.run(["sleep", "1"], check=True)
                    assert page is not None, (home / "serve.log").read_text()
                    ask(page, QUESTION)
                    page.wait_for_selector(CITE, timeout=ANSWER_TIMEOUT)
                    page.locator(CITE).first.click()
                    page.wait_for_selector("#cw-document .cw-mark")
                    page.wait_for_function("document.querySelector('#cw-document img').naturalWidth > 0")
                    page.wait_for_timeout(500)  # the frame scrolled to the marks
                    page.evaluate("window.scrollTo(0, 0)")
                    shots = [args.folder / name for name in SHOTS]
                    clean(page, scratch)
                    page.screenshot(path=str(shots[0]))
                    page.locator("#cw-document").screenshot(path=str(shots[1]))
                    library(page, shots[2], scratch)
                    waiting_outline(page, shots[3], scratch)
                    browser.close()
            finally:
                server.terminate()
                server.wait(30)
    print("wrote", ", ".join(str(args.folder / name) for name in SHOTS))


def clean(page: Any, scratch: str) -> None:
    """Check that the page shows no path of the temporary folder (nor any other of /tmp)."""
    shown = page.inner_text("body")
    assert scratch not in shown and "/tmp/" not in shown, "the page shows a temporary path"


def library(page: Any, shot: Path, scratch: str) -> None:
    """The Library tab in a 1280 px window (the table fits it), with the PDF that answered opened."""
    page.set_viewport_size({"width": 1280, "height": 1300})
    page.get_by_role("tab", name="Library").click()
    page.wait_for_selector("#cw-lib-status :text('documents')", timeout=60_000)
    page.locator("#cw-library [role=gridcell]", has_text=PDF_TITLE).first.click()
    page.wait_for_selector(f"#cw-lib-doc h3:text('{PDF_TITLE}')")
    page.evaluate("window.scrollTo(0, 0)")
    clean(page, scratch)
    page.screenshot(path=str(shot))
    page.set_viewport_size({"width": 1400, "height": 1300})
    page.get_by_role("tab", name="Chat").click()


def waiting_outline(page: Any, shot: Path, scratch: str) -> None:
    """A report asked "outline first" in a new thread: its planned outline in the editor."""
    page.click("#cw-new")
    page.locator("#cw-mode label", has_text="outline first").click()
    ask(page, REPORT)
    page.wait_for_selector("#cw-outline-title-1 textarea", timeout=ANSWER_TIMEOUT)
    page.evaluate("window.scrollTo(0, 0)")  # the header, the question and the editor whole
    clean(page, scratch)
    page.screenshot(path=str(shot))


if __name__ == "__main__":
    main()
