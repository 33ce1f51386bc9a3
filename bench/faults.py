"""Provider faults (issue #11): 100 questions at a 30% fault rate beside the same 100 without faults.

    python bench/faults.py [--n 100] [--rate 0.3] [--seed 11] [--max-retries 2] [--timeout 1] \
        [--backoff 0.05] [--out bench/results/faults.json]

The real query graph in LLM mode, through the real openai and cohere clients, against an OpenAI-compatible
server with Cohere's rerank on 127.0.0.1 (tests/support/fake_openai.py) that injects faults at a seeded rate
(`Faults`: 429 with Retry-After 1 s, 500, 503, connection resets, timeouts, truncated JSON bodies, malformed
JSON content, empty completions, spread evenly) into chat and rerank requests. The same questions run first
without faults, then with them, one after another in one process, over the twelve-document test corpus (one
chunk per document). As in tests/reliability/test_provider_faults.py, every other run keeps every passage
(so the critic and the reranker always have work) and every third streams its answer (messages mode, as the
chat does). A run ends with an answer, a specific error (the graph's `error`: model provider or model
output), an unexpected error (a fault in citewise), or an exception or a hang past its deadline.

Per phase: the success rate (answers), answers vs specific and unexpected errors, runs with a `degraded`
stage, requests and retries per run, the most retries of one request (the cap is --max-retries), 429
retries sooner than Retry-After, median and p90 latency and the latency added over the fault-free phase.
Retries are counted from the server's records: a request repeated after a failed attempt (a status, a reset,
a timeout or a cut body); Retry-After is honoured, the other waits are `--backoff` seconds doubling.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from common import RESULTS, machine, print_table, save  # noqa: E402

from citewise import models  # noqa: E402
from citewise.context import Context  # noqa: E402
from citewise.core.evidence import NO_ANSWER  # noqa: E402
from citewise.graph.query import builder  # noqa: E402
from citewise.index import ChunkingConfig, Index  # noqa: E402
from citewise.index.embeddings import load_embedder  # noqa: E402
from tests.conftest import SMALL_CORPUS  # noqa: E402
from tests.support.fake_openai import FakeOpenAI, Faults, Recorded, SchemaResponder, exchanges  # noqa: E402

DEADLINE = 300.0
"""Per run: far beyond a run whose every stage exhausts its retries; only a hang reaches it."""
SPECIFIC = {"model provider", "model output"}
COLUMNS = [
    "phase",
    "runs",
    "success",
    "answers",
    "specific_errors",
    "unexpected_errors",
    "raised_or_hung",
    "blank_answers",
    "no_answer_replies",
    "same_answer",
    "degraded_runs",
    "requests_per_run",
    "retries_per_run",
    "max_retries_per_request",
    "early_429_retries",
    "median_s",
    "p90_s",
]
JUDGE = SchemaResponder()
KEPT_ALL = SchemaResponder(scores={f"E{n}": 60 + n for n in range(1, 31)})


def questions(records: list[dict[str, str]], count: int) -> list[str]:
    """`count` distinct questions (the campaign test's): each sentence asked two ways, then off-topic ones."""
    sentences = [s.strip().rstrip(".") for r in records for s in r["text"].split(". ") if s.strip()]
    asked = [f"Is it true that {s[0].lower()}{s[1:]}?" for s in sentences]
    asked += [f"What do the documents say about this: {s}?" for s in sentences]
    asked += [f"What is the boiling point of compound {n}?" for n in range(count)]
    return asked[:count]


def build_index(root: Path) -> str:
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in SMALL_CORPUS), encoding="utf-8")
    chunking = ChunkingConfig(threshold=-1.0, max_chars=4000)  # one chunk per document
    with Index.open(root / "index", embedder=load_embedder(), chunking=chunking) as index:
        index.ingest([corpus])
    return str(root / "index")


def quick_backoff(initial: float) -> None:
    """Retries wait `initial` seconds doubling (the product's default is 1 s); Retry-After still rules."""
    original = models.Backoff.__init__

    def patched(self: models.Backoff, _initial: float = 1.0, maximum: float = 30.0) -> None:
        original(self, initial, maximum)

    models.Backoff.__init__ = patched  # type: ignore[method-assign]


async def one(question: str, context: Context, stream: bool) -> dict[str, Any]:
    graph, given = builder.compile(), {"messages": [("user", question)]}
    if not stream:
        return await graph.ainvoke(given, context=context)
    final: dict[str, Any] = {}
    async for mode, part in graph.astream(given, context=context, stream_mode=["messages", "values"]):
        if mode == "values":
            final = part
    return final


def outcome(result: dict[str, Any] | BaseException) -> str:
    if isinstance(result, asyncio.TimeoutError | TimeoutError):
        return "hang"
    if isinstance(result, BaseException):
        return "raised"
    error = result.get("error")
    if error is None:
        return "answer" if (result.get("answer") or "").strip() else "empty"
    return "specific error" if error["kind"] in SPECIFIC else "unexpected error"


def read_run(
    question: str,
    stream: bool,
    result: dict[str, Any] | BaseException,
    seconds: float,
    records: list[Recorded],
) -> dict[str, Any]:
    """One run's figures, from its output and the requests the server saw during it."""
    found = exchanges(records)
    waits = [
        after.started - before.started
        for e in found
        for before, after in zip(e.requests, e.requests[1:], strict=False)
        if before.fault == "429"
    ]
    error = result.get("error") if isinstance(result, dict) else None
    return {
        "question": question,
        "stream": stream,
        "seconds": round(seconds, 3),
        "outcome": outcome(result),
        "answer": result.get("answer") if isinstance(result, dict) and error is None else None,
        "error": None if error is None else f"{error['kind']} in {error['stage']}: {error['message'][:160]}",
        "raised": repr(result)[:200] if isinstance(result, BaseException) else None,
        "degraded": sorted({d["stage"] for d in (result.get("degraded") or [])})
        if isinstance(result, dict)
        else [],
        "requests": len(records),
        "faults": dict(Counter(r.fault for r in records if r.fault)),
        "retries": sum(e.retries for e in found),
        "max_retries_per_request": max((max(e.retry_runs()) for e in found), default=0),
        "early_429_retries": sum(w < 1.0 for w in waits),
    }


async def phase(
    rate: float, asked: list[str], index_dir: str, args: argparse.Namespace
) -> tuple[list[dict[str, Any]], Counter]:
    """Every question once against a fresh server with faults at `rate`."""
    faults = Faults(rate, seed=args.seed, retry_after=1.0, hang=DEADLINE) if rate > 0 else None
    server = FakeOpenAI(JUDGE, faults=faults).start()
    os.environ.update(
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="bench",
        COHERE_API_KEY="bench-cohere",
        COHERE_BASE_URL=server.root_url,
    )
    context = Context(
        model="openai/bench-writer",
        judge_model="openai/bench-judge",
        index_dir=index_dir,
        max_retries=args.max_retries,
        timeout_seconds=args.timeout,
    )
    runs = []
    try:
        for n, question in enumerate(asked):
            server.responder = KEPT_ALL if n % 2 else JUDGE
            stream = n % 3 == 2
            first = len(server.requests)
            started = time.perf_counter()
            try:
                result: dict[str, Any] | BaseException = await asyncio.wait_for(
                    one(question, context, stream), DEADLINE
                )
            except Exception as error:  # counted: a run must never end this way
                result = error
            seconds = time.perf_counter() - started
            runs.append(read_run(question, stream, result, seconds, server.requests[first:]))
            print(f"  {rate:.0%} {n + 1}/{len(asked)} {runs[-1]['outcome']} {seconds:.1f}s", file=sys.stderr)
    finally:
        server.stop()
    return runs, Counter({kind: count for kind, count in server.fault_counts().items()})


def summary(
    name: str,
    runs: list[dict[str, Any]],
    faults: Counter,
    base: dict[str, Any] | None = None,
    base_runs: list = (),
) -> dict:
    """A phase's figures; beside the fault-free phase (`base`, `base_runs`): what the faults changed."""
    seconds = [r["seconds"] for r in runs]
    outcomes = Counter(r["outcome"] for r in runs)
    requests = sum(r["requests"] for r in runs)
    row = {
        "phase": name,
        "runs": len(runs),
        "success": outcomes["answer"] / len(runs),
        "answers": outcomes["answer"],
        "specific_errors": outcomes["specific error"],
        "unexpected_errors": outcomes["unexpected error"],
        "raised_or_hung": outcomes["raised"] + outcomes["hang"],
        "blank_answers": outcomes["empty"],
        "no_answer_replies": sum((r["answer"] or "").startswith(NO_ANSWER) for r in runs),
        "ended_well": (outcomes["answer"] + outcomes["specific error"]) / len(runs),
        "degraded_runs": sum(bool(r["degraded"]) for r in runs),
        "requests": requests,
        "faults": sum(faults.values()),
        "fault_rate": sum(faults.values()) / requests if requests else 0.0,
        "requests_per_run": requests / len(runs),
        "retries_per_run": sum(r["retries"] for r in runs) / len(runs),
        "max_retries_per_request": max(r["max_retries_per_request"] for r in runs),
        "early_429_retries": sum(r["early_429_retries"] for r in runs),
        "median_s": statistics.median(seconds),
        "p90_s": float(np.percentile(seconds, 90)),
        "mean_s": statistics.fmean(seconds),
    }
    if base is not None:
        same = sum(
            r["answer"] is not None and r["answer"] == b["answer"]
            for r, b in zip(runs, base_runs, strict=True)
        )
        row["same_answer"] = same / len(runs)
        row["added_median"] = row["median_s"] / base["median_s"]
        row["added_p90"] = row["p90_s"] / base["p90_s"]
        row["added_mean_s"] = row["mean_s"] - base["mean_s"]
    row["faults_by_kind"] = dict(sorted(faults.items()))
    row["degraded_stages"] = dict(Counter(s for r in runs for s in r["degraded"]))
    row["errors"] = dict(Counter(r["error"].split(":")[0] for r in runs if r["error"]))
    return row


async def campaign(args: argparse.Namespace) -> dict[str, Any]:
    asked = questions(SMALL_CORPUS, args.n)
    with tempfile.TemporaryDirectory() as folder:
        index_dir = build_index(Path(folder))
        clean, clean_faults = await phase(0.0, asked, index_dir, args)
        faulty, faulty_faults = await phase(args.rate, asked, index_dir, args)
    base = summary("no faults", clean, clean_faults)
    return {
        "clean": base,
        "faulty": summary(f"{args.rate:.0%} faults", faulty, faulty_faults, base, clean),
        "runs": {
            "clean": clean,
            "faulty": faulty,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100, help="questions per phase")
    parser.add_argument("--rate", type=float, default=0.3, help="share of requests that meet a fault")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--max-retries", type=int, default=2, help="Context.max_retries")
    parser.add_argument(
        "--timeout", type=float, default=1.0, help="Context.timeout_seconds (a timeout's cost)"
    )
    parser.add_argument(
        "--backoff", type=float, default=0.05, help="first retry wait in seconds (product: 1)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "faults.json")
    args = parser.parse_args()
    for name, value in {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "False",
        "LANGSMITH_TRACING": "false",
    }.items():
        os.environ.setdefault(name, value)
    quick_backoff(args.backoff)
    figures = asyncio.run(campaign(args))
    rows = [figures["clean"], figures["faulty"]]
    print_table(rows, COLUMNS)
    faulty = figures["faulty"]
    print(
        f"added latency at {args.rate:.0%} faults: median x{faulty['added_median']:.2f}, "
        f"p90 x{faulty['added_p90']:.2f}, mean +{faulty['added_mean_s']:.2f}s per run"
    )
    print(f"faults injected: {faulty['faults_by_kind']} ({faulty['fault_rate']:.1%} of requests)")
    print(f"degraded stages: {faulty['degraded_stages']}; errors: {faulty['errors']}")
    save(
        args.out,
        {
            "settings": {
                "questions": args.n,
                "rate": args.rate,
                "seed": args.seed,
                "max_retries": args.max_retries,
                "timeout_seconds": args.timeout,
                "backoff_initial_seconds": args.backoff,
                "retry_after_seconds": 1.0,
                "deadline_seconds": DEADLINE,
                "corpus": "tests/conftest.py SMALL_CORPUS (12 documents, one chunk each)",
            },
            "phases": rows,
            "runs": figures["runs"],
            "machine": machine(),
        },
    )


if __name__ == "__main__":
    main()
