"""The PDF reader before and after a change, on PDFs drawn at random: which read differently, what words went.

The manuals' truths (`bench/manuals.py`) cover a few pages of 88 documents. A rule made on one of them can
still lose text elsewhere: this bench draws PDFs at random from /usr/share/doc (a seeded draw, 2 to 40 pages,
none with a truth), reads each with the reader of another checkout (`--before`, a git worktree whose package
goes first on PYTHONPATH, as `bench/pdffamilies.py` does) and with the reader installed here, and counts per
document the words read before and not after (lost) and the other way round (gained). A change should lose
no word it was not meant to (a margin note repeating the macro beside it is one it is meant to). Over all
drawn PDFs, before and after, it also counts the paragraph breaks that cut a sentence (`suspect_breaks`).

Run: git worktree add /tmp/before <commit>
     python bench/pdfwide.py --before /tmp/before [--count 120] [--seed 57] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from common import RESULTS, machine, print_table

TRUTH = Path(__file__).parent / "data" / "manuals.json"
READ = """
import json, sys
from pathlib import Path
from citewise.index.loaders import load_path
out = {}
for name in json.load(open(sys.argv[1])):
    try:
        (document,) = load_path(Path(name))[:1]
        out[name] = {
            "texts": [p.text for p in document.paragraphs] + [e.text for e in document.bibliography.values()],
            "sections": [p.section for p in document.paragraphs],
        }
    except Exception as error:  # a PDF the reader refuses is reported, not a reason to stop
        out[name] = {"error": str(error)[:200]}
json.dump(out, open(sys.argv[2], "w"))
"""


def draw(count: int, seed: int) -> list[str]:
    """`count` PDFs under /usr/share/doc with 2 to 40 pages and no truth, drawn with `random.Random(seed)`."""
    import pypdfium2 as pdfium

    truths = {d["file"] for d in json.loads(TRUTH.read_text(encoding="utf-8"))["documents"]}
    pool = sorted(
        str(p) for p in Path("/usr/share/doc").rglob("*.pdf") if not p.is_symlink() and str(p) not in truths
    )
    random.Random(seed).shuffle(pool)
    chosen = []
    for name in pool:
        try:
            pdf = pdfium.PdfDocument(name)
            pages = len(pdf)
            pdf.close()
        except pdfium.PdfiumError:
            continue
        if 2 <= pages <= 40:
            chosen.append(name)
        if len(chosen) == count:
            break
    return chosen


def read(files: list[str], package: Path | None, folder: Path) -> dict:
    """Every file read by the reader of `package` (a checkout) or, without one, the one installed here."""
    listed, out = folder / "files.json", folder / f"read-{'before' if package else 'after'}.json"
    listed.write_text(json.dumps(files), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(package)) if package else dict(os.environ)
    subprocess.run([sys.executable, "-c", READ, str(listed), str(out)], check=True, env=env, cwd=folder)
    return json.loads(out.read_text(encoding="utf-8"))


def words(read: dict) -> Counter[str]:
    """The words of a document's passages (none for one the reader refused)."""
    return Counter(w for text in read.get("texts", []) for w in re.findall(r"\w+", text))


_CODE_END = re.compile(r"[\\{}$=_]|\b\d+\s*$")
"""The end of a paragraph that may be code or a formula (a break after it says nothing)."""


def suspect_breaks(read: dict) -> tuple[int, int]:
    """(breaks that cut a sentence, breaks looked at) between a document's paragraphs within one section.

    A break cuts a sentence when the paragraph before it ends in a lower-case word or a comma and the one
    after starts in lower case: prose runs on there (a list item or a heading seldom does). Only breaks
    between paragraphs of 40 and 20 characters at least, neither looking like code, are looked at. A
    figure with no truth behind it, for any PDF: it finds paragraphs cut line by line, not paragraphs
    glued together.
    """
    texts, sections = read.get("texts", []), read.get("sections", [])
    suspect = looked = 0
    for n in range(len(sections) - 1):
        if sections[n] != sections[n + 1]:
            continue
        before, after = texts[n].rstrip(), texts[n + 1].lstrip()
        if len(before) < 40 or len(after) < 20 or _CODE_END.search(before[-15:]) or after[:1] in "\\{}$":
            continue
        looked += 1
        suspect += bool(re.search(r"[a-z,]$", before) and re.match(r"[a-z]", after))
    return suspect, looked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the reader to compare with")
    parser.add_argument("--count", type=int, default=120)
    parser.add_argument("--seed", type=int, default=57)
    parser.add_argument("--out", type=Path, default=RESULTS / "pdfwide.json")
    args = parser.parse_args()
    files = draw(args.count, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        before = read(files, args.before.resolve(), Path(tmp))
        after = read(files, None, Path(tmp))
    rows = []
    for name in files:
        if before[name] == after[name]:
            continue
        lost, gained = words(before[name]) - words(after[name]), words(after[name]) - words(before[name])
        rows.append(
            {
                "document": name.removeprefix("/usr/share/doc/"),
                "passages": f"{len(before[name].get('texts', []))} -> {len(after[name].get('texts', []))}",
                "words lost": sum(lost.values()),
                "words gained": sum(gained.values()),
                "lost": " ".join(list(lost)[:6]),
            }
        )
    print(f"{len(rows)} of {len(files)} PDFs read differently (seed {args.seed})")
    if rows:
        print_table(rows, list(rows[0]))
    breaks = {
        reader: [sum(x) for x in zip(*(suspect_breaks(read[name]) for name in files), strict=True)]
        for reader, read in (("before", before), ("after", after))
    }
    print("\nbreaks that cut a sentence, of the breaks looked at (all drawn PDFs)")
    print_table([{"reader": r, "suspect": s, "looked at": n, "share": round(s / max(1, n), 4)}
                 for r, (s, n) in breaks.items()], ["reader", "suspect", "looked at", "share"])  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    saved = {"machine": machine(), "seed": args.seed, "drawn": len(files), "changed": rows, "breaks": breaks}
    args.out.write_text(json.dumps(saved, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
