"""The PDF reader on every generated family, before and after a change, side by side in one run.

For each test set under bench/.cache (made by `bench/pdfset.py`), `bench/pdfread.py --readers citewise` is
run twice: with the reader of another checkout (`--before`, a git worktree: its package goes first on
PYTHONPATH) and with the reader installed here. Both rows, the set's role (tuned on, held out, looked at,
never looked at) and the mean over each role are saved in one JSON; the table prints the columns that say
how a PDF was read.

Run: git worktree add /tmp/before <commit>
     python bench/pdffamilies.py --before /tmp/before [--sets pdfset,tables-journals] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import RESULTS, machine, print_table

CACHE = Path(__file__).resolve().parent / ".cache"
SETS = {
    # set: (family, role) -- "tuned": the reader was changed while looking at it; "looked at": held out
    # first, then looked at paper by paper; "held out": never looked at; "fresh": made this stop with
    # --rotate (the same papers in another class or layout), never looked at
    "pdfset": ("LaTeX article", "tuned"),
    "pdfset-heldout": ("LaTeX article (Times)", "held out"),
    "pdfset-chromium": ("Chromium", "tuned"),
    "pdfset-chromium-heldout": ("Chromium", "looked at"),
    "pdfset-journals": ("nine journal classes", "tuned"),
    "pdfset-journals-heldout": ("nine journal classes", "looked at"),
    "pdfset-journals-rotated": ("nine journal classes", "fresh"),
    "pdfset-office": ("LibreOffice", "held out"),
    "tables": ("tables, pdfTeX", "tuned"),
    "tables-heldout": ("tables, pdfTeX", "held out"),
    "tables-chromium": ("tables, Chromium", "tuned"),
    "tables-chromium-heldout": ("tables, Chromium", "looked at"),
    "tables-chromium-rotated": ("tables, Chromium", "fresh"),
    "tables-office-tune": ("tables, LibreOffice", "tuned"),
    "tables-office": ("tables, LibreOffice", "looked at"),
    "tables-office-rotated": ("tables, LibreOffice", "fresh"),
    "tables-journals": ("tables, journal classes", "tuned"),
    "tables-journals-rotated": ("tables, journal classes", "fresh"),
}
COLUMNS = ["paragraphs", "sections", "in_section", "refs", "linked", "tables", "cells", "ms/page"]


def measure(folder: Path, before: Path | None) -> dict[str, Any]:
    """`bench/pdfread.py` on one set, with this checkout's reader or `before`'s; its citewise row."""
    env = dict(os.environ)
    if before is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(before), env.get("PYTHONPATH", "")]))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "row.json"
        command = [sys.executable, str(Path(__file__).resolve().parent / "pdfread.py"), "--set", str(folder)]
        command += ["--readers", "citewise", "--out", str(out)]
        subprocess.run(command, check=True, env=env, cwd=before or None, capture_output=True)
        return json.loads(out.read_text())["rows"][0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the reader to compare")
    parser.add_argument("--sets", default=",".join(SETS), help="comma separated, from bench/.cache")
    parser.add_argument("--out", type=Path, default=RESULTS / "pdfread-families.json")
    args = parser.parse_args()
    results, table = {}, []
    for name in args.sets.split(","):
        folder = CACHE / name
        if not (folder / "index.json").exists():
            print(f"skip {name}: no {folder} (make it with bench/pdfset.py)")
            continue
        family, role = SETS.get(name, (name, "?"))
        papers = len(json.loads((folder / "index.json").read_text())["papers"])
        before, after = measure(folder, args.before.resolve()), measure(folder, None)
        results[name] = {"family": family, "role": role, "papers": papers, "before": before, "after": after}
        for label, row in (("before", before), ("after", after)):
            shown = {c: round(row[c], 3) if isinstance(row.get(c), float) else row.get(c) for c in COLUMNS}
            table.append({"set": name, "role": role, "reader": label, **shown})
        print(f"{name}: done", flush=True)
    note = (
        f"bench/pdffamilies.py --before {args.before}: bench/pdfread.py --readers citewise on each set with "
        "the reader of that checkout ('before') and this one ('after'), one run each, the two runs of a set "
        "one after the other."
    )
    args.out.write_text(json.dumps({"note": note, "sets": results, "machine": machine()}, indent=1) + "\n")
    print_table(table, ["set", "role", "reader", *COLUMNS])
    print(f"saved {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
