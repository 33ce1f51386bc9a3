"""The PDF reader before and after a change, on PDFs drawn at random: which read differently, what words went.

The manuals' truths (`bench/manuals.py`) cover a few pages of 88 documents. A rule made on one of them can
still lose text elsewhere: this bench draws PDFs at random from /usr/share/doc (a seeded draw, 2 to 40 pages,
none with a truth), reads each with the reader of another checkout (`--before`, a git worktree whose package
goes first on PYTHONPATH, as `bench/pdffamilies.py` does) and with the reader installed here, and counts per
document the words read before and not after (lost) and the other way round (gained). A change should lose
no word it was not meant to (a margin note repeating the macro beside it is one it is meant to).

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
        out[name] = [p.text for p in document.paragraphs] + [e.text for e in document.bibliography.values()]
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


def words(texts: list[str] | dict) -> Counter[str]:
    """The words of a document's passages (none for one the reader refused)."""
    if not isinstance(texts, list):
        return Counter()
    return Counter(w for text in texts for w in re.findall(r"\w+", text))


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
                "passages": f"{len(before[name])} -> {len(after[name])}",
                "words lost": sum(lost.values()),
                "words gained": sum(gained.values()),
                "lost": " ".join(list(lost)[:6]),
            }
        )
    print(f"{len(rows)} of {len(files)} PDFs read differently (seed {args.seed})")
    if rows:
        print_table(rows, list(rows[0]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    saved = {"machine": machine(), "seed": args.seed, "drawn": len(files), "changed": rows}
    args.out.write_text(json.dumps(saved, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
