"""Where the test suite's time goes: a run's `--durations=0` figures split by test file and by age.

    pytest -q --durations=0 > run.log
    python bench/suite_time.py run.log --since e36c910^ --out bench/results/suite-time.json
    pytest -q -n 0 --collect-only > ids.log
    python bench/suite_time.py ids.log --since e36c910^ --then-ids > then.txt
    pytest -q @then.txt   # only the tests there then (one node id a line: pytest reads @file arguments)

Every test's setup, call and teardown seconds (pytest prints those of at least 5 ms) are summed per test
function (its parametrizations together) and per file. ``--since REF``: a test function whose name a test
file at REF defined too (in any file, as tests moved) counts as "then", the others as "added since", so the
time of the tests that were there can be told from the time of the tests written later. A module or session
fixture's setup counts for the first test that uses it.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import print_table, save

LINE = re.compile(r"^(?P<seconds>[\d.]+)s (?P<phase>setup|call|teardown)\s+(?P<node>\S+)$")
SUMMARY = re.compile(r"(?P<passed>\d+) passed.* in (?P<seconds>[\d.]+)s")
DEFINITION = re.compile(r"^\s*(?:async\s+)?def (test_\w+)", re.M)


def durations(log: str) -> dict[str, float]:
    """Seconds per test node id (its phases summed) from pytest's `--durations=0` report."""
    found: dict[str, float] = defaultdict(float)
    for line in log.splitlines():
        if match := LINE.match(line.strip()):
            found[match["node"]] += float(match["seconds"])
    return dict(found)


def function_of(node: str) -> str:
    """The test function a node id runs (`file.py::test_x[param]` -> `test_x`)."""
    return node.split("::")[-1].split("[")[0]


def names_at(ref: str) -> set[str]:
    """The test function names the tests/ folder defined at git `ref`."""
    files = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", ref, "tests"], capture_output=True, text=True, check=True
    ).stdout.split()
    names: set[str] = set()
    for path in files:
        if Path(path).name.startswith("test_") and path.endswith(".py"):
            text = subprocess.run(["git", "show", f"{ref}:{path}"], capture_output=True, text=True).stdout
            names.update(DEFINITION.findall(text))
    return names


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("log", type=Path, help="the output of a pytest run with --durations=0")
    parser.add_argument("--since", help="a git ref: tests defined there count as 'then'")
    parser.add_argument("--top", type=int, default=15, help="files shown")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--then-ids",
        action="store_true",
        help="print the node ids of LOG (a --collect-only -q output) there at --since",
    )
    args = parser.parse_args()
    text = args.log.read_text()
    if args.then_ids:
        then = names_at(args.since)
        collected = re.findall(r"^(tests/\S+::\S+)$", text, re.M)
        print("\n".join(node for node in collected if function_of(node) in then))
        return
    seconds = durations(text)
    summary = SUMMARY.search(text)
    wall = float(summary["seconds"]) if summary else sum(seconds.values())
    per_file: dict[str, float] = defaultdict(float)
    for node, value in seconds.items():
        per_file[node.split("::")[0]] += value
    ranked = sorted(per_file.items(), key=lambda item: -item[1])
    rows = [{"file": name, "s": round(value), "share": f"{value / wall:.0%}"} for name, value in ranked]
    print_table(rows[: args.top], ["file", "s", "share"])
    result: dict = {"log": str(args.log), "wall_seconds": wall, "tests": len(seconds), "per_file": per_file}
    if args.since:
        then = names_at(args.since)
        ages = {"then": 0.0, "added since": 0.0}
        counts = {"then": 0, "added since": 0}
        for node, value in seconds.items():
            age = "then" if function_of(node) in then else "added since"
            ages[age] += value
            counts[age] += 1
        gone = sorted(then - {function_of(node) for node in seconds})
        print()
        print_table(
            [{"tests": age, "node ids": counts[age], "s": round(ages[age]), "min": round(ages[age] / 60, 1)}
             for age in ages],
            ["tests", "node ids", "s", "min"],
        )  # fmt: skip
        print(f"{len(gone)} test names of {args.since} not in the run (renamed, removed, or under 5 ms)")
        result |= {"since": args.since, "seconds_by_age": ages, "node_ids_by_age": counts, "names_gone": gone}
    if args.out:
        save(args.out, result)


if __name__ == "__main__":
    main()
