"""The chat page's screenshot in the docs (docs/chat-page.png), made again from a clean example.

    python bench/screenshot.py [--out docs/chat-page.png]

Not a benchmark: it lives beside them because it drives the page as they do. In a fresh temporary folder,
the bundled sample and two of the tests' typeset PDFs are ingested with `citewise ingest` into
`.citewise/index` (a relative path, so the page's header shows what a user's would); `citewise serve` runs
there on 127.0.0.1 in local mode; Debian's Chromium (Playwright) asks a question a PDF answers, opens its
marker (the passage, its page with the supporting lines marked) and takes the screenshot.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support.page import ANSWER_TIMEOUT, CITE, OFFLINE, ask, free_port, open_page  # noqa: E402

QUESTION = "What does the controller do with the brake band when the averaged tension reading rises?"
EXE = str(Path(sys.executable).with_name("citewise"))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "chat-page.png")
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
                    page.screenshot(path=str(args.out))
                    browser.close()
            finally:
                server.terminate()
                server.wait(30)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
