"""How PDFs nobody here made are read: manuals and samples from Debian's texlive-doc against a hand truth.

`bench/data/manuals.json` names each PDF (installed under /usr/share/doc by the Debian package it names; some
ship gzipped, read here from a decompressed copy), the pages its truth covers and, for those pages, written
by hand from the page: the title, the section headings standing there, every paragraph wholly on them by its
first and last words (a list item is a paragraph), text that must stay out of every passage (running heads,
sidebars, margin line numbers, contents lines, footnotes) and some reference entries by their first words.
Each document is `tune` (looked at while the reader was changed), `heldout` (never looked at for that) or
`fresh` (added later, from other producers: Acrobat Distiller, dvipdfm, Ghostscript, Quartz, LuaTeX,
ReportLab, groff, Texinfo, DocBook, XeTeX, LibreOffice, cairo, Microsoft Print to PDF; then FOP, gropdf,
Asciidoctor, ConTeXt, dvipdfmx; then iText, Word, MiKTeX and older Distillers: `round` 2 and 3); its truth
written from the rendered pages without running the reader, and never looked at while the reader was
changed).

Per document, with text compared in lower case, letters and digits only:
- title: the document's title is the truth's (similarity >= 0.9; a truth with no title printed is left out
  of the mean);
- sections: share of the truth's headings among the headings the paragraphs are filed under (>= 0.9,
  a reference list's heading counted as found when the document's bibliography holds entries;
  numbering left out; a truth with no heading on its pages, a one-screen form, is left out of the mean);
- paragraphs: share of the truth's paragraphs read whole: one paragraph begins with the first words and ends
  with the last (a label or mark of up to 12 characters aside at either end), nothing glued before or after;
  a read paragraph answers one truth paragraph only (of copies word for word, the one in its section first);
  a run-in head the truth keeps as a paragraph's first words may be the heading the reader files it under
  (since stop 65: both readings count);
- in_section: share of those filed under their own heading;
- kept_out: share of the text that must stay out of passages that is found in none on the truth's pages
  (nor in their headings);
- refs: share of the truth's reference entries that begin a bibliography entry (spaces aside).

A document whose text layer maps its glyphs to no characters (metre's manual) is read by OCR, as ingest reads
it where Tesseract is installed; Tesseract's page reads are kept in bench/.cache/ocr-tsv, so that only the
first run pays for them.

Run: python bench/manuals.py [--split tune|heldout|fresh] [--round 3] [--out FILE]
(a run of part of the set saves to bench/results/manuals-<part>.json unless --out says otherwise)
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

from common import CACHE, RESULTS, machine, print_table
from ocr import cache_tesseract
from rapidfuzz import fuzz

from citewise.index.citations import is_reference_heading
from citewise.index.document import Document
from citewise.index.loaders import load_path

TRUTH = Path(__file__).parent / "data" / "manuals.json"
CONTENTS = re.compile(
    r"(?:table of )?contents|list of (?:figures|tables)|inhalt(?:sverzeichnis)?|table des matières|sommaire"
)
"""A table of contents' heading (or a list of figures' or tables'), as compared; German's and French's too."""
SLACK = 12
"""Characters a paragraph may carry beyond its truth's first or last words: a list label, a footnote mark."""
_NUMBER = re.compile(r"^\s*(?:(?:[A-Z]\.?)?\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,5}\.|[A-Za-z]\.)\s+")  # "B.2 "


def norm(text: str) -> str:
    """Text as compared: NFKC, lower case, letters and digits only, single spaces."""
    text = unicodedata.normalize("NFKC", text).replace("\u00ad", "").replace("\ufffe", "").lower()
    return " ".join(re.findall(r"[^\W_]+", text))


def heading(text: str) -> str:
    """A heading as compared: without its number ("2.1", "IV.", "A.")."""
    return norm(_NUMBER.sub("", unicodedata.normalize("NFKC", text)))


def whole(paragraph: str, start: str, end: str) -> bool:
    """Whether a read paragraph is the truth's: it begins with its first words and ends with its last."""
    at, last = paragraph.find(start), paragraph.rfind(end)
    return 0 <= at <= SLACK and 0 <= last and last >= len(paragraph) - len(end) - SLACK


def score(document: Document, truth: dict[str, Any]) -> dict[str, Any]:
    """How much of one document's truth the reading keeps (see the module docstring)."""
    read = [(norm(p.text), [heading(h) for h in p.section.split(" > ") if h]) for p in document.paragraphs]
    headings = {h for _, path in read for h in path}
    found = [
        t
        for t in truth["sections"]
        if any(fuzz.ratio(heading(t), h) >= 90 for h in headings)
        # a reference list's heading files no paragraph: its entries are the bibliography; nor does a table
        # of contents' heading: its lines are kept out of the passages, with it
        or (is_reference_heading(t) and bool(document.bibliography))
        or (CONTENTS.fullmatch(heading(t)) is not None and bool(document.metadata.get("contents_lines")))
    ]
    recovered, filed = 0, 0
    missed: list[str] = []
    used: set[int] = set()  # a read paragraph answers one truth paragraph (a manual may repeat one)

    def in_place(path: list[str], want: str) -> bool:
        return (not path and not want) or bool(path and fuzz.ratio(path[-1], want) >= 90)

    for paragraph in truth["paragraphs"]:
        start, end = norm(paragraph["start"]), norm(paragraph["end"])
        want = heading(paragraph["section"])
        matches = [n for n, (text, _) in enumerate(read) if n not in used and whole(text, start, end)]
        # a run-in head ("Description of workflow. The procedure is ...") the truth keeps as the paragraph's
        # first words and the reader as the heading it files the paragraph under: either reading counts
        run_in = [
            n
            for n, (text, path) in enumerate(read)
            if n not in used
            and not matches
            and path
            and start.startswith(path[-1] + " ")
            and whole(text, start[len(path[-1]) + 1 :], end)
        ]
        if not matches and not run_in:
            missed.append(paragraph["start"])
            continue
        if matches:  # in its section first
            chosen = next((n for n in matches if in_place(read[n][1], want)), matches[0])
        else:
            chosen = run_in[0]
        used.add(chosen)
        recovered += 1
        filed += in_place(read[chosen][1][:-1] if run_in else read[chosen][1], want)
    # what the truth's pages show: a title block's author may sign the code a later page prints (nomentbl)
    shown = {page - 1 for page in truth["pages"]}
    on_pages = [
        (norm(p.text), p.section)
        for p in document.paragraphs
        if not p.boxes or shown & {b.page for b in p.boxes}
    ]
    body = (
        " | ".join(text for text, _ in on_pages)
        + " | "
        + " | ".join({heading(h) for _, path in on_pages for h in path.split(" > ") if h})
    )
    leaked = [text for text in truth["absent"] if norm(text) in body]
    # spaces aside: a label set close against its entry ("GNOMEThe GNOME desktop") reads as one word
    entries = [norm(entry.text).replace(" ", "") for entry in document.bibliography.values()]
    refs = truth.get("references", [])
    refs_found = sum(any(0 <= e.find(norm(r).replace(" ", "")) <= SLACK for e in entries) for r in refs)
    # (a document that prints no title, a bibliography sample opening on its first heading, is left out)
    titled = float(fuzz.ratio(norm(document.title), norm(truth["title"])) >= 90) if truth["title"] else None
    return {
        "title": titled,
        "sections": len(found) / len(truth["sections"]) if truth["sections"] else None,
        "paragraphs": recovered / len(truth["paragraphs"]),
        "in_section": filed / max(1, recovered),
        "kept_out": 1 - len(leaked) / max(1, len(truth["absent"])),
        "refs": refs_found / len(refs) if refs else None,
        "missed": missed,
        "leaked": leaked,
        "sections_missed": [t for t in truth["sections"] if t not in found],
    }


def unpacked(path: Path) -> Path:
    """The PDF itself: a gzipped one (fonts' documentation ships so) decompressed once into the cache."""
    if path.suffix != ".gz":
        return path
    copy = CACHE / "manuals" / path.with_suffix("").name
    if not copy.exists():
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(gzip.decompress(path.read_bytes()))
    return copy


FIGURES = ["title", "sections", "paragraphs", "in_section", "kept_out", "refs"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=["tune", "heldout", "fresh"], help="only this part of the set")
    parser.add_argument(
        "--round", type=int, help="only the documents whose truths came in this round (2 to 22)"
    )
    parser.add_argument("--show", action="store_true", help="print what each document missed")
    parser.add_argument(
        "--out", type=Path, help="default: bench/results/manuals.json for all, manuals-<part>.json for a part"
    )
    args = parser.parse_args()
    truths = [
        t
        for t in json.loads(TRUTH.read_text())["documents"]
        if args.split in (None, t["split"]) and args.round in (None, t.get("round"))
    ]
    absent = [t for t in truths if not Path(t["file"]).exists()]
    if absent:
        packages = " ".join(sorted({t["package"] for t in absent}))
        sys.exit(f"not installed: {', '.join(t['file'] for t in absent)} (apt-get install {packages})")
    # a document whose text layer maps its glyphs to no characters is read by OCR: Tesseract's page reads
    # are kept, so that a run after the first times the reader, not Tesseract
    ocr_counts = cache_tesseract(CACHE / "ocr-tsv")
    rows, per_document = [], []
    for truth in truths:
        path = unpacked(Path(truth["file"]))
        start = time.perf_counter()
        document = load_path(path)[0]
        took = time.perf_counter() - start
        pages = int(document.metadata.get("pages") or 1)
        result = score(document, truth)
        ms = 1000 * took / pages
        per_document.append({"file": path.name, "split": truth["split"], "ms/page": ms, **result})
        if args.show:
            print(f"{path.name}: missed {result['missed']} leaked {result['leaked']} "
                  f"sections missed {result['sections_missed']}")  # fmt: skip
    for split in ("tune", "heldout", "fresh", "all"):
        chosen = [r for r in per_document if split in ("all", r["split"])]
        if not chosen:
            continue
        row: dict[str, Any] = {"set": split, "documents": len(chosen)}
        for name in FIGURES:
            values = [r[name] for r in chosen if r[name] is not None]
            row[name] = statistics.fmean(values) if values else None
        row["ms/page"] = statistics.median(r["ms/page"] for r in chosen)
        rows.append(row)
    columns = ["file", "split", *FIGURES, "ms/page"]
    print_table(per_document, columns)
    print()
    print_table(rows, ["set", "documents", *FIGURES, "ms/page"])
    if sum(ocr_counts.values()):
        print(f"pages read by OCR: {ocr_counts['read']} by Tesseract, {ocr_counts['cached']} from its cache")
    if args.out is None:  # a part's run never overwrites the whole set's figures
        part = "-".join(x for x in (args.split, f"round{args.round}" if args.round else None) if x)
        args.out = RESULTS / (f"manuals-{part}.json" if part else "manuals.json")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    saved = {"machine": machine(), "rows": rows, "per_document": per_document}
    args.out.write_text(json.dumps(saved, indent=1))
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
