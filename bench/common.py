"""Helpers shared by the benchmarks: data sets in BEIR layout, timing, tables, JSON results."""

from __future__ import annotations

import csv
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results"
CACHE = Path(__file__).parent / ".cache"
"""What benches build and can build again (generated PDFs, indexes): git ignores it."""


def read_queries(path: Path) -> dict[str, str]:
    """BEIR queries.jsonl -> {query id: text}."""
    with path.open() as handle:
        return {(row := json.loads(line))["_id"]: row["text"] for line in handle if line.strip()}


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """BEIR qrels TSV (query-id, corpus-id, score, with a header) -> {query id: {doc id: relevance}}."""
    qrels: dict[str, dict[str, int]] = {}
    with path.open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if int(row["score"]) > 0:
                qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return qrels


def hotpotqa_as_beir(folder: Path, out: Path) -> tuple[Path, dict[str, str], dict[str, dict[str, int]]]:
    """Write HotpotQA's closed corpus as BEIR jsonl; queries and passage qrels from the supporting facts."""
    corpus = json.loads((folder / "corpus.json").read_text())
    questions = json.loads((folder / "questions.json").read_text())
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as handle:
        for title, sentences in corpus.items():
            handle.write(
                json.dumps({"_id": title, "title": title, "text": "".join(sentences).strip()}) + "\n"
            )
    queries = {str(i): q["question"] for i, q in enumerate(questions)}
    qrels = {str(i): {title: 1 for title, _ in q["supporting_facts"]} for i, q in enumerate(questions)}
    return out, queries, qrels


def percentiles(samples_ms: list[float]) -> tuple[float, float]:
    """p50 and p95 of latencies in milliseconds."""
    return float(np.percentile(samples_ms, 50)), float(np.percentile(samples_ms, 95))


def machine() -> dict[str, Any]:
    """Where and when the figures were measured."""
    import os

    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "when": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def print_table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    """Print rows as an aligned text table."""
    widths = {c: max(len(c), *(len(_fmt(r.get(c))) for r in rows)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    print("  ".join("-" * widths[c] for c in columns))
    for row in rows:
        print("  ".join(_fmt(row.get(c)).ljust(widths[c]) for c in columns))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return "" if value is None else str(value)


def save(path: Path, data: dict[str, Any]) -> None:
    """Write JSON results (creating the folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    print(f"saved {path}")


def median(values: list[float]) -> float:
    """The median."""
    return statistics.median(values)
