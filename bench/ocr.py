"""Scanned pages read by OCR: generated papers rendered to images, read back, scored against their truth.

Each PDF of a `bench/pdfset.py` set is rendered page by page by PDFium at --dpi, made black and white
(--bilevel, as a scanner's text mode) or kept grey, and saved by Pillow as a PDF of those images: no text
layer. citewise reads it as it reads any PDF; its pages go to Tesseract (`citewise.index.ocr`). The same
score as bench/pdfread.py (paragraphs, section titles, words whole, references, citations linked) against
the same truth, beside the reading of the original PDF, and the seconds a page.

    python bench/ocr.py --set bench/.cache/pdfset --limit 4 [--skip 0] [--dpi 300] [--grey]

Tesseract's answer for each page image is kept under bench/.cache/ocr-tsv (by the image's hash), so a
second run reads the same words in seconds: the reader can be changed and measured again without the
15 s a page of OCR (--fresh runs Tesseract again; the seconds a page are only measured on pages it read).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from common import CACHE, RESULTS, machine, print_table, save  # noqa: E402
from pdfread import score  # noqa: E402

from citewise.index import ocr  # noqa: E402
from citewise.index.loaders import load_path  # noqa: E402

COLUMNS = ["paragraphs", "sections", "in_section", "words", "refs", "linked"]


def scanned(source: Path, target: Path, dpi: int, grey: bool) -> int:
    """`source` as a PDF of page images at `dpi` (black and white unless `grey`); its page count."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(source)
    images = []
    for page in pdf:
        image = page.render(scale=dpi / 72, grayscale=True).to_pil().convert("L")
        images.append(image if grey else image.point(lambda v: 255 if v > 160 else 0).convert("1"))
    pdf.close()
    images[0].save(target, "PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return len(images)


def cache_tesseract(folder: Path) -> dict[str, int]:
    """Keep Tesseract's TSV of each page image under `folder`; counts of pages read and found there."""
    folder.mkdir(parents=True, exist_ok=True)
    read = ocr.image_tsv
    counts = {"read": 0, "cached": 0}

    def cached(image: object) -> str:
        key = hashlib.sha256(image.tobytes() + repr((image.mode, image.size)).encode()).hexdigest()  # type: ignore[attr-defined]
        path = folder / f"{key}.tsv"
        if path.exists():
            counts["cached"] += 1
            return path.read_text()
        tsv = read(image)
        path.write_text(tsv)
        counts["read"] += 1
        return tsv

    ocr.image_tsv = cached  # type: ignore[assignment]
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--set", type=Path, default=ROOT / "bench" / ".cache" / "pdfset")
    parser.add_argument("--limit", type=int, default=4)
    parser.add_argument("--skip", type=int, default=0, help="papers to pass over first (a held-out part)")
    parser.add_argument("--fresh", action="store_true", help="run Tesseract on every page again")
    parser.add_argument("--dpi", type=int, default=300)
    parser.add_argument("--grey", action="store_true", help="grey images (default: black and white)")
    parser.add_argument("--out", type=Path, default=RESULTS / "ocr.json")
    args = parser.parse_args()
    papers = sorted(args.set.glob("*.json"))
    papers = [p for p in papers if p.name != "index.json"][args.skip : args.skip + args.limit]
    counts = {"read": 0, "cached": 0} if args.fresh else cache_tesseract(CACHE / "ocr-tsv")
    rows, per_paper = [], []
    with tempfile.TemporaryDirectory() as folder:
        for truth_file in papers:
            truth = json.loads(truth_file.read_text())
            source = truth_file.with_suffix(".pdf")
            image_pdf = Path(folder) / source.name
            pages = scanned(source, image_pdf, args.dpi, args.grey)
            text_score = score(load_path(source)[0], truth)
            cached_before = counts["cached"]
            started = time.perf_counter()
            document = load_path(image_pdf)[0]
            seconds = time.perf_counter() - started
            timed = counts["cached"] == cached_before  # Tesseract read every page of this paper
            ocr_score = score(document, truth)
            per_paper.append(
                {"paper": source.stem, "pages": pages, "s/page": round(seconds / pages, 2) if timed else None,
                 "ocr": ocr_score, "text layer": text_score, "ocr_pages": document.metadata.get("ocr_pages")}
            )  # fmt: skip
            speed = f"{seconds / pages:.1f} s/page" if timed else "(OCR from the cache)"
            print(source.stem, {k: round(ocr_score[k], 3) for k in COLUMNS}, speed)
    for name in ("text layer", "ocr"):
        row = {"read": name, "papers": len(per_paper), "pages": sum(p["pages"] for p in per_paper)}
        row |= {k: round(statistics.fmean(p[name][k] for p in per_paper), 3) for k in COLUMNS}
        if name == "ocr":
            timings = [p["s/page"] for p in per_paper if p["s/page"] is not None]
            row["s/page (median)"] = statistics.median(timings) if timings else None
        rows.append(row)
    image = "grey" if args.grey else "black and white"
    print(f"{args.set.name}: pages as {args.dpi} dpi {image} images, read by Tesseract through citewise")
    print_table(rows, ["read", "papers", "pages", *COLUMNS, "s/page (median)"])
    save(args.out, {"machine": machine(), "set": args.set.name, "dpi": args.dpi, "image": image,
                    "rows": rows, "per_paper": per_paper})  # fmt: skip


if __name__ == "__main__":
    main()
