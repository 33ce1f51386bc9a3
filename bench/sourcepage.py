"""Time to the highlighted page: a marker clicked on the chat page until its PDF page shows, lines marked.

    python bench/sourcepage.py [--runs 15] [--out bench/results/sourcepage.json]

A 20-page PDF is made once (bench/.cache/sourcepage): the bundled sample's three papers as one HTML
document, printed by Debian's Chromium (Playwright, headless) and cut to its first 20 pages. It is ingested
into a local index; `citewise serve` serves it on 127.0.0.1. Two questions are asked whose answers stand on
pages far into the file (each the first sentence of a paragraph the reader placed there). Then, run by run,
the two answers' first markers are clicked in turn: each time from the click until the document view shows
that marker's page (its image decoded by the browser) with its marks over it. The server's part alone is
timed too, in this process: `source_html` (the index's reads by id, PDFium's render, the PNG, the marks).

The table gives min / median / max milliseconds. The target: under 1 s from click to highlighted page.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))
from common import CACHE, RESULTS, machine, print_table, save  # noqa: E402

SAMPLE = ROOT / "citewise" / "samples" / "unarxive_sample.jsonl"
PAGES = 20
IDLE_MS = 1000
"""Between a page shown and the next click: the browser has drawn what it got (a person reads it)."""
CHROMIUM = "/usr/bin/chromium"


def make_pdf(out: Path) -> Path:
    """The sample's papers as one 20-page PDF printed by Chromium (made once)."""
    pdf = out / "papers-20.pdf"
    if pdf.exists():
        return pdf
    import pypdfium2 as pdfium
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    parts = ["<html><head><meta charset='utf-8'><style>body{font:11pt serif;margin:0}</style></head><body>"]
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        paper = json.loads(line)
        parts.append(f"<h1>{html.escape(paper['metadata']['title'])}</h1>")
        section = ""
        for paragraph in paper["body_text"]:
            if paragraph.get("section") and paragraph["section"] != section:
                section = paragraph["section"]
                parts.append(f"<h2>{html.escape(section)}</h2>")
            text = re.sub(r"\{\{[^}]*\}\}", "", paragraph["text"])
            parts.append(f"<p>{html.escape(' '.join(text.split()))}</p>")
    parts.append("</body></html>")
    whole = out / "papers-all.pdf"
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        page = browser.new_page()
        page.set_content("".join(parts))
        page.pdf(
            path=str(whole),
            format="A4",
            margin={"top": "2cm", "bottom": "2cm", "left": "2cm", "right": "2cm"},
        )
        browser.close()
    source, cut = pdfium.PdfDocument(whole), pdfium.PdfDocument.new()
    assert len(source) >= PAGES, f"the sample printed to {len(source)} pages only"
    cut.import_pages(source, list(range(PAGES)))
    cut.save(pdf)
    return pdf


def questions(index_dir: Path, embedder: object) -> list[tuple[str, int]]:
    """Two questions, each the first sentence of a paragraph on a late page, and that page (0-based)."""
    from citewise.index import Index

    with Index.open(index_dir, embedder=embedder) as index:  # type: ignore[arg-type]
        (doc_id,) = index.docstore.document_ids()
        chosen = []
        for paragraph in index.paragraphs(doc_id):
            page = paragraph.boxes[0].page if paragraph.boxes else -1
            sentence = re.split(r"(?<=[.!?])\s", paragraph.text)[0]
            if (
                page >= PAGES - 6
                and 80 < len(sentence) < 220
                and "$" not in sentence
                and page not in dict(chosen).values()
            ):
                chosen.append((sentence, page))
            if len(chosen) == 2:
                return chosen
    raise SystemExit("no two paragraphs on late pages to ask about")


def server_side(index_dir: Path, embedder: object, runs: int) -> list[float]:
    """Milliseconds of `source_html` for the late pages' paragraphs (index reads, render, PNG, marks)."""
    from citewise.app.web.source import source_html
    from citewise.index import Index

    with Index.open(index_dir, embedder=embedder) as index:  # type: ignore[arg-type]
        (doc_id,) = index.docstore.document_ids()
        late = [p for p in index.paragraphs(doc_id) if p.boxes and p.boxes[0].page >= PAGES - 6][:runs]
        times = []
        for paragraph in late * max(1, runs // max(len(late), 1)):
            passage = {"doc_id": doc_id, "paragraph_id": paragraph.id, "lines": [paragraph.text[:120]]}
            started = time.perf_counter()
            shown = source_html(index, passage, None)
            times.append(1000 * (time.perf_counter() - started))
            assert "cw-mark" in shown
        return times[:runs]


def clicks(url: str, asked: list[tuple[str, int]], runs: int, shots: Path) -> tuple[list[float], list[int]]:
    """Milliseconds from a marker's click to its page shown with marks, alternating the two answers."""
    from playwright.sync_api import sync_playwright
    from support.page import ANSWER_TIMEOUT, ask, open_page

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        seen: list[str] = []
        page = open_page(browser, url, seen)
        for turn, (question, _) in enumerate(asked):
            ask(page, question)
            page.wait_for_selector(f"#cw-chat a.cw-cite[href^='#cite-{turn}-']", timeout=ANSWER_TIMEOUT)
        times, pages = [], []
        for run in range(runs):
            page.wait_for_timeout(IDLE_MS)  # a person reads the last page before the next click
            turn = run % 2
            link = page.locator(f"#cw-chat a.cw-cite[href^='#cite-{turn}-']").first
            cite = (link.get_attribute("href") or "").lstrip("#")
            started = time.perf_counter()
            link.click()
            page.wait_for_function(
                """(cite) => {
                  const view = document.querySelector(`#cw-document .cw-pdf[data-cite='${cite}']`);
                  const image = view && view.querySelector('img.cw-page-image');
                  const shown = image && image.complete && image.naturalWidth > 0;
                  return !!(shown && view.querySelector('.cw-mark'));
                }""",
                arg=cite,
                timeout=30_000,
            )
            times.append(1000 * (time.perf_counter() - started))
            pages.append(int(page.get_attribute("#cw-document .cw-pdf", "data-page") or -1))
        page.screenshot(path=str(shots / "sourcepage.png"), full_page=True)
        browser.close()
    outside = [u for u in seen if not u.startswith(("http://127.0.0.1", "data:", "blob:"))]
    assert not outside, outside
    return times, pages


def summary(name: str, values: list[float]) -> dict[str, object]:
    return {
        "what": name,
        "runs": len(values),
        "min_ms": min(values),
        "median_ms": statistics.median(values),
        "max_ms": max(values),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--out", type=Path, default=RESULTS / "sourcepage.json")
    args = parser.parse_args()

    from support.page import serving

    from citewise.index import Index
    from citewise.index.embeddings import load_embedder

    folder = CACHE / "sourcepage"
    pdf = make_pdf(folder)
    embedder = load_embedder()
    with tempfile.TemporaryDirectory(prefix="citewise-sourcepage-") as scratch:
        root = Path(scratch)
        with Index.open(root / "index", embedder=embedder) as index:
            index.ingest([pdf])
        asked = questions(root / "index", embedder)
        served = server_side(root / "index", embedder, args.runs)
        with serving(root, root / "index") as url:
            browser_times, pages = clicks(url, asked, args.runs, folder)
    rows = [
        summary("click -> highlighted page (browser)", browser_times),
        summary("source_html (server: reads, render, PNG, marks)", served),
    ]
    print(f"{pdf.name}: {PAGES} pages; questions answered from pages {sorted({p + 1 for _, p in asked})}")
    print_table(rows, ["what", "runs", "min_ms", "median_ms", "max_ms"])
    wanted = {p for _, p in asked}
    print(f"pages shown: {sorted({p + 1 for p in pages})} (asked about {sorted(p + 1 for p in wanted)})")
    save(
        args.out,
        {
            "machine": machine(),
            "pdf_pages": PAGES,
            "questions": [{"question": q, "page": p + 1} for q, p in asked],
            "pages_shown": [p + 1 for p in pages],
            "rows": rows,
            "browser_ms": browser_times,
            "server_ms": served,
        },
    )


if __name__ == "__main__":
    main()
