"""What reading a PDF keeps: PDF readers measured against the known truth of typeset papers.

The papers come from `bench/pdfset.py` (unarXive papers typeset with LaTeX in one and two columns, numbered
and author-year citations, running heads, page numbers, footnotes and display equations; each PDF has a JSON
of its truth). Every other reader gives the text of each page, and citewise's line pipeline (the one it used
with pypdf, `citewise.index.loaders.pdf_document`) rebuilds sections, paragraphs and the bibliography from
it. `citewise` is the loader as shipped (`load_path`: PDFium's text objects read by `citewise.index.pdf`).

Per PDF, against its truth:
- paragraphs: share of the truth's paragraphs with an extracted paragraph of text similarity >= 0.9
  (rapidfuzz ratio on whitespace-collapsed NFKC text);
- sections: share of section titles found among the extracted paragraphs' sections (similarity >= 0.9, the
  section number left out); in_section: share of recovered paragraphs filed under their own section;
- order: share of consecutive recovered paragraphs that come out in the truth's order;
- heads: running heads (and the page numbers beside them) that reached paragraphs, per page;
  notes_out: share of footnotes kept out of paragraphs;
- words: share of the truth's long words (8+ letters) found whole in the extracted text (hyphenation joined);
- refs: share of reference entries found in the bibliography (similarity >= 0.9);
- linked: share of in-text citations whose paragraph links them to the right entry;
- R@5 (`--retrieval`): questions made from the papers' sentences (content words of the longest sentence of
  every seventh paragraph), searched in an index of the PDFs and in an index of the same papers as unarXive
  JSON; a hit counts when it is from the right paper and holds at least half of the sentence's words.

Run: python bench/pdfread.py --set bench/.cache/pdfset
     [--readers pypdf,pypdfium2,pdfminer,pdfplumber,citewise] [--retrieval citewise]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import RESULTS, machine, print_table
from rapidfuzz import fuzz, process

from citewise.index.document import Document
from citewise.index.loaders import load_path, pdf_document
from citewise.index.tables import whole_tables

PageReader = Callable[[Path], tuple[list[str], str]]
HEAD = "citewise typeset test set"
NOTE = "Typesetting note"
_NUMBER = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,5}\.|[A-Z]\.)\s+")
_WORD = re.compile(r"[^\W\d_]{8,}")


def _pypdf(path: Path) -> tuple[list[str], str]:
    from pypdf import PdfReader

    reader = PdfReader(path)
    title = str(reader.metadata.title) if reader.metadata and reader.metadata.title else ""
    return [page.extract_text() or "" for page in reader.pages], title


def _pypdfium2(path: Path) -> tuple[list[str], str]:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path)
    try:
        pages = [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
        return [
            page.replace("\r\n", "\n").replace("\r", "\n") for page in pages
        ], pdf.get_metadata_dict().get("Title", "")
    finally:
        pdf.close()


def _pdfminer(path: Path) -> tuple[list[str], str]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LAParams, LTTextContainer

    pages = []
    for layout in extract_pages(str(path), laparams=LAParams()):
        boxes = [box.get_text() for box in layout if isinstance(box, LTTextContainer)]
        pages.append("\n".join(boxes))
    return pages, ""


def _pdfplumber(path: Path) -> tuple[list[str], str]:
    import pdfplumber

    with pdfplumber.open(path) as pdf:
        return [page.extract_text() or "" for page in pdf.pages], str(pdf.metadata.get("Title") or "")


PAGE_READERS: dict[str, PageReader] = {
    "pypdf": _pypdf,
    "pypdfium2": _pypdfium2,
    "pdfminer": _pdfminer,
    "pdfplumber": _pdfplumber,
}


def read(reader: str, path: Path) -> tuple[Document, float]:
    """The document a reader makes of a PDF, and the seconds it took."""
    start = time.perf_counter()
    if reader == "citewise":
        document = load_path(path)[0]
    else:
        pages, title = PAGE_READERS[reader](path)
        document = pdf_document(path, pages, title)[0]
    return document, time.perf_counter() - start


def norm(text: str) -> str:
    """Text as compared: NFKC (ligatures), whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def _title(section: str) -> str:
    """A section title as compared: its last heading without its number, in lower case (a class may set
    its headings in capitals: "1 INTRODUCTION" is the heading "Introduction")."""
    last = section.split(" > ")[-1]
    return _NUMBER.sub("", norm(last)).lower()


def _entry(text: str) -> str:
    return re.sub(r"^\[\d+\]\s*", "", norm(text))


def score(document: Document, truth: dict[str, Any]) -> dict[str, float]:
    """How much of the truth the document keeps (see the module docstring)."""
    extracted = [norm(p.text) for p in document.paragraphs]
    matches: list[tuple[int, float]] = []
    for paragraph in truth["paragraphs"]:
        best = (
            process.extractOne(norm(paragraph["text"]), extracted, scorer=fuzz.ratio) if extracted else None
        )
        matches.append((best[2], best[1] / 100) if best else (-1, 0.0))
    recovered = [(i, m) for i, (m, s) in enumerate(matches) if s >= 0.9]
    sections = {_title(p.section) for p in document.paragraphs if p.section}
    found = [
        t
        for t in truth["sections"]
        if process.extractOne(t.lower(), sections, scorer=fuzz.ratio, score_cutoff=90)
    ]
    in_section = [
        fuzz.ratio(_title(document.paragraphs[m].section), t.lower()) >= 90
        for i, m in recovered
        for t in [truth["paragraphs"][i]["section"]]
    ]
    order = [b[1] > a[1] for a, b in zip(recovered, recovered[1:], strict=False)]
    body = " ".join(extracted) + " " + " ".join(sections)
    words = [w for p in truth["paragraphs"] for w in _WORD.findall(norm(p["text"]))]
    tokens = set(_WORD.findall(body))
    entries = {key: _entry(entry.text) for key, entry in document.bibliography.items()}
    truth_entries = {ref["key"]: _entry(ref["text"]) for ref in truth["references"]}
    refs = [
        bool(process.extractOne(text, list(entries.values()), scorer=fuzz.ratio, score_cutoff=90))
        for text in truth_entries.values()
    ]
    linked, cites = 0, 0
    for (match, similarity), paragraph in zip(matches, truth["paragraphs"], strict=True):
        for key in paragraph["cites"]:
            cites += 1
            if similarity < 0.6 or key not in truth_entries:
                continue
            keys = document.paragraphs[match].citations
            linked += any(fuzz.ratio(entries.get(k, ""), truth_entries[key]) >= 90 for k in keys)
    pages = max(1, int(truth["pages"]))
    tables = {"tables": None, "cells": None}
    if truth.get("tables"):
        tables["tables"], tables["cells"] = table_cells(document, truth["tables"])
    return {
        **tables,
        "paragraphs": len(recovered) / len(matches),
        "sections": len(found) / len(truth["sections"]),
        "in_section": sum(in_section) / max(1, len(in_section)),
        "order": sum(order) / max(1, len(order)),
        "heads": body.count(HEAD) / pages,
        "notes_out": 1 - min(body.count(NOTE), len(truth["footnotes"])) / max(1, len(truth["footnotes"])),
        "words": sum(w in tokens for w in words) / max(1, len(words)),
        "refs": sum(refs) / max(1, len(refs)),
        "linked": linked / max(1, cites),
    }


def read_tables(document: Document) -> list[list[list[str]]]:
    """The tables of a document's passages, parts of one table joined again."""
    return [rows for _, _, rows in whole_tables([p.text for p in document.paragraphs])]


def table_cells(document: Document, truths: list[dict[str, Any]]) -> tuple[float, float]:
    """(share of the truth's tables read as tables, share of their cells read in their row and column)."""
    read = read_tables(document)
    found = cells = total = 0
    for truth in truths:
        want = [[" ".join(cell.split()).lower() for cell in row] for row in truth["rows"]]
        total += sum(len(row) for row in want)

        def agree(rows: list[list[str]], want: list[list[str]] = want) -> int:
            return sum(
                got.lower() == cell
                for row, wanted in zip(rows, want, strict=False)
                for got, cell in zip(row, wanted, strict=False)
            )

        best = max((agree(rows) for rows in read), default=0)
        found += best > 0
        cells += best
    return found / len(truths), cells / max(1, total)


# --- retrieval ------------------------------------------------------------------------------------------


def questions(truths: list[dict[str, Any]]) -> list[tuple[set[str], str, str]]:
    """(the paper's names, question, sentence) from the longest sentence of every seventh paragraph.

    A paper is named by its PDF's file name and by its arXiv id (the key of its JSON record).
    """
    out = []
    for truth in truths:
        for paragraph in truth["paragraphs"][1::7]:
            sentences = re.split(
                r"(?<=[.!?])\s+", norm(re.sub(r"\[[\d, ]+\]|\([^()]*\d{4}\)", "", paragraph["text"]))
            )
            sentence = max(sentences, key=len)
            words = [w for w in re.findall(r"[^\W\d_]{4,}", sentence)][:10]
            if len(words) >= 5:
                out.append(({truth["name"], truth["paper_id"]}, " ".join(words), sentence))
    return out


def as_unarxive(truth: dict[str, Any]) -> dict[str, Any]:
    """The truth as an unarXive record, so the JSON loader reads the same papers."""
    paragraphs = truth["paragraphs"]
    abstract = paragraphs[0]["text"] if paragraphs and paragraphs[0]["section"] == "Abstract" else ""
    return {
        "paper_id": truth["paper_id"],
        "metadata": {"title": truth["title"]},
        "abstract": {"text": abstract},
        "body_text": [
            {"section": p["section"], "text": p["text"]} for p in paragraphs[1 if abstract else 0 :]
        ],
        "bib_entries": {ref["key"]: {"bib_entry_raw": ref["text"]} for ref in truth["references"]},
    }


def recall_at_5(
    files: list[Path], asked: list[tuple[str, str, str]], reader: str = "citewise"
) -> tuple[float, float]:
    """R@5 of the questions in a fresh index of the files (hybrid search, as `citewise ask` runs it), and the
    seconds the ingest took. PDFs are read by `reader` (its pages through citewise's line pipeline)."""
    from citewise.index import loaders
    from citewise.index.local.store import Index

    shipped = loaders._LOADERS[".pdf"]
    if reader != "citewise":
        loaders._LOADERS[".pdf"] = lambda path: pdf_document(path, *PAGE_READERS[reader](path))
    try:
        with tempfile.TemporaryDirectory() as folder, Index.open(Path(folder) / "index") as index:
            start = time.perf_counter()
            index.ingest(files)
            seconds = time.perf_counter() - start
            found = 0
            for names, question, sentence in asked:
                expected = set(re.findall(r"[^\W\d_]{4,}", sentence.lower()))
                for hit in index.search(question, k=5):
                    shared = expected & set(re.findall(r"[^\W\d_]{4,}", hit.text.lower()))
                    document = index.document(hit.doc_id)
                    paper = {Path(document.file).stem, document.key} if document else set()
                    if paper & names and len(shared) >= 0.5 * len(expected):
                        found += 1
                        break
            return found / max(1, len(asked)), seconds
    finally:
        loaders._LOADERS[".pdf"] = shipped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", type=Path, default=Path("bench/.cache/pdfset"))
    parser.add_argument("--readers", default="pypdf,pypdfium2,pdfminer,pdfplumber,citewise")
    parser.add_argument("--retrieval", default="", help="readers whose PDF index to search (comma separated)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N papers")
    parser.add_argument("--out", type=Path, default=RESULTS / "pdfread.json")
    args = parser.parse_args()
    truths = [
        json.loads(path.read_text()) for path in sorted(args.set.glob("*.json")) if path.name != "index.json"
    ]
    truths = truths[: args.limit] if args.limit else truths
    if not truths:
        sys.exit(f"no typeset papers in {args.set}: run bench/pdfset.py first")
    readers = [name for name in args.readers.split(",") if name]
    rows, per_paper = [], []
    for reader in readers:
        figures: dict[str, list[float]] = {}
        seconds, pages = 0.0, 0
        for truth in truths:
            path = args.set / f"{truth['name']}.pdf"
            try:
                document, took = read(reader, path)
                result = score(document, truth)
            except Exception as error:  # a reader that fails on a paper scores nothing there
                print(f"{reader}: {path.name}: {type(error).__name__}: {error}", file=sys.stderr)
                result, took = dict.fromkeys(["paragraphs", "sections", "refs", "linked"], 0.0), 0.0
            seconds, pages = seconds + took, pages + truth["pages"]
            per_paper.append({"reader": reader, "paper": truth["name"], "seconds": round(took, 3), **result})
            for name, value in result.items():
                figures.setdefault(name, []).append(value)
        kept = {name: [v for v in values if v is not None] for name, values in figures.items()}
        row = {
            "reader": reader,
            **{name: statistics.fmean(values) for name, values in kept.items() if values},
        }
        row["ms/page"] = 1000 * seconds / max(1, pages)
        for layout in ("1col", "2col"):
            chosen = [r["paragraphs"] for r in per_paper if r["reader"] == reader and layout in r["paper"]]
            row[f"para {layout}"] = statistics.fmean(chosen) if chosen else None
        rows.append(row)
    if args.retrieval:
        asked = questions(truths)
        pages = sum(t["pages"] for t in truths)
        with tempfile.TemporaryDirectory() as folder:
            jsonl = Path(folder) / "papers.jsonl"
            jsonl.write_text("".join(json.dumps(as_unarxive(t)) + "\n" for t in truths))
            json_recall, _ = recall_at_5([jsonl], asked)
        print(f"{len(asked)} questions; R@5 from the JSON index {json_recall:.3f}")
        pdfs = [args.set / f"{t['name']}.pdf" for t in truths]
        for row in rows:
            if row["reader"] in args.retrieval.split(","):
                recall, seconds = recall_at_5(pdfs, asked, row["reader"])
                row["R@5 pdf"], row["R@5 json"], row["ingest s/page"] = recall, json_recall, seconds / pages
    columns = [
        "reader", "paragraphs", "para 1col", "para 2col", "sections", "in_section", "order", "heads",
        "notes_out", "words", "refs", "linked", "tables", "cells", "R@5 pdf", "R@5 json", "ms/page",
        "ingest s/page",
    ]  # fmt: skip
    print(f"{len(truths)} typeset papers, {sum(t['pages'] for t in truths)} pages")
    print_table(rows, columns)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {"machine": machine(), "papers": len(truths), "rows": rows, "per_paper": per_paper}, indent=1
        )
    )
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
