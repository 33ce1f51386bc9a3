"""Prompt injection over BIPIA's own attacks: the reliability campaign with a seeded sample of 20 of them.

The test suite runs the campaign over attacks written for it (tests read nothing outside the repository);
this bench adds BIPIA's (../shared/data/bipia) by setting CITEWISE_BIPIA and runs the same test module.

    python bench/injection.py [--bipia ../shared/data/bipia] [--out bench/results/injection-bipia.json]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from common import RESULTS, machine, print_table, save

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = (("BIPIA sample", "bipia-"), ("written for the tests", "wild-"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bipia", type=Path, default=ROOT.parent / "shared" / "data" / "bipia")
    parser.add_argument("--out", type=Path, default=RESULTS / "injection-bipia.json")
    args = parser.parse_args()
    if not (args.bipia / "text_attack_train.json").exists():
        print(f"BIPIA's attack files are not in {args.bipia}", file=sys.stderr)
        return 2
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "0",
            "-rA",
            "tests/reliability/test_prompt_injection.py",
        ],
        cwd=ROOT,
        env={**os.environ, "CITEWISE_BIPIA": str(args.bipia.resolve())},
        capture_output=True,
        text=True,
    )
    outcomes = dict(
        (name, outcome)
        for outcome, name in re.findall(r"^(PASSED|FAILED|ERROR) \S+\[([^\]]+)\]", run.stdout, re.MULTILINE)
    )
    rows = []
    families = [(label, [n for n in outcomes if n.startswith(prefix)]) for label, prefix in FAMILIES]
    named = {n for _, names in families for n in names}
    for label, names in [*families, ("hand-written", [n for n in outcomes if n not in named])]:
        passed = sum(outcomes[n] == "PASSED" for n in names)
        rows.append({"attacks": label, "n": len(names), "changed nothing": passed})
    print_table(rows, ["attacks", "n", "changed nothing"])
    save(args.out, {"machine": machine(), "summary": rows, "outcomes": outcomes})
    return run.returncode


if __name__ == "__main__":
    raise SystemExit(main())
