"""Reports end to end: parallel sections against the critical path, LLM calls and retrievals, local mode.

    python bench/report.py latency --index bench/.cache/report-small --delay 0.3 --sections 5 --runs 3
    python bench/report.py calls   --index bench/.cache/report-small --sections 5 --questions 5
    python bench/report.py local   --sample --unarxive ../shared/data/unarxive/papers.jsonl --papers 10

`latency` and `calls` run the real query graph on its report path (Context.route "report") and the real
`openai` client against an OpenAI-compatible server on 127.0.0.1 (tests/support/fake_openai.py) whose
outline always plans `--sections` sections, over the twelve short documents of tests/conftest.py.
`latency` answers every request after a fixed delay and writes the same report with all sections at once
(a: max_parallel_sections = sections) and one section at a time (b: max_parallel_sections 1), alternating
a and b. Its critical path (c) is the number of dependent request rounds of the parallel run, from the
server's own clock: a request's depth is one more than the deepest request that had ended before it
started; the rounds are the largest depth, and c = rounds x delay. a / c is the graph's overhead beyond
waiting on the model; b / a is what running sections side by side buys, over the whole report and over
the section phase alone (the outline's reply to the first customize request).
`calls` counts LLM requests and tokens per stage and the index searches of each report, beside SynthRAG's
published 16.6 LLM calls and 15.6 retrievals per answer.
`local` writes reports with no model at all: on the bundled three-paper sample and on the first `--papers`
papers of an unarXive file, with questions made from the paper titles.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import re
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from common import RESULTS, machine, print_table, save  # noqa: E402

from citewise.context import Context  # noqa: E402
from citewise.graph.query import graph  # noqa: E402
from citewise.index import Index  # noqa: E402
from citewise.nodes import retrieve  # noqa: E402
from citewise.nodes.verify import is_structure, split_answer  # noqa: E402
from tests.conftest import SMALL_CORPUS  # noqa: E402
from tests.support.fake_openai import Delay, FakeOpenAI, SchemaResponder, prompt_text  # noqa: E402

CACHE = ROOT / "bench" / ".cache"
SAMPLE = ROOT / "citewise" / "samples" / "unarxive_sample.jsonl"
QUESTIONS = [
    "Give an overview of how vaccines train the immune system",
    "Write a report on how the Moon and the Sun shape ocean tides",
    "Give an overview of how glaciers carve valleys during ice ages",
    "Explain how honeybee workers forage for nectar and pollen",
    "Explain how bitcoin miners record transactions on the blockchain",
]
"""Report questions each answered by one document of the small corpus (the scripted judge scores by word
overlap with the section's question, so a question spread over two documents keeps nothing in any section)."""
STAGES = (
    "condense",
    "rewrite",
    "score",
    "reflect",
    "critique",
    "expand",
    "route",
    "answer",
    "outline",
    "write_section",
    "customize",
    "verify",
)
"""The stages in pipeline order (the question's own pass and the sections share stage names)."""
SYNTHRAG = {"llm_calls": 16.6, "retrievals": 15.6}
ASPECTS = [
    "immune system recognise a pathogen",
    "weakened viruses inactivated bacteria proteins mRNA",
    "B cells antibodies memory cells",
    "herd immunity people who cannot be vaccinated",
    "vaccines without causing the disease",
]
"""Section searches of the latency report: one aspect of the vaccines document each, so sections differ as
a model's outline would make them (the same search for every section makes every section say the same
thing, which the customize checks reject and retry)."""
"""SynthRAG's published cost per answer."""
MARKER = re.compile(r"\[\d+(?:\s*[,;]\s*\d+)*\]")
CUSTOMIZE = re.compile(r'<section id="[^"]*" title="')
"""A drafted section quoted in the customize prompt."""


# running reports ----------------------------------------------------------------------------------------


class TimedResponder:
    """The scripted responder, waiting out its delay itself so each request's start and end are on record."""

    def __init__(self, responder: SchemaResponder) -> None:
        self.responder = responder
        self.spans: list[tuple[float, float, str]] = []
        """(start, end, kind) per request, perf_counter seconds."""
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Any:
        started = time.perf_counter()
        reply = self.responder(request)
        if isinstance(reply, Delay):
            time.sleep(reply.seconds)
            reply = reply.reply
        with self._lock:
            self.spans.append((started, time.perf_counter(), request_kind(request)))
        return reply

    def section_phase(self) -> float:
        """Seconds from the outline's reply to the first customize request: the sections' share of the run."""
        planned = max(end for _, end, kind in self.spans if kind == "PlannedOutline")
        merged = min(start for start, _, kind in self.spans if kind == "customize")
        return merged - planned


def request_kind(request: dict[str, Any]) -> str:
    """The schema a request asks for; "customize" for the merge of drafted sections; else "text"."""
    response_format = request.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return (response_format.get("json_schema") or {}).get("name") or "json_schema"
    choice = request.get("tool_choice")
    if isinstance(choice, dict):
        return (choice.get("function") or {}).get("name") or "tool"
    return "customize" if CUSTOMIZE.search(prompt_text(request)) else "text"


@contextlib.contextmanager
def serve(responder: Any) -> Iterator[FakeOpenAI]:
    """A FakeOpenAI on loopback with the openai client pointed at it (each Context builds its own models).

    One server per event loop: langchain-openai caches its async HTTP client by base URL across loops, so a
    second `asyncio.run` against the same server reuses a client bound to a closed loop.
    """
    for name in ("COHERE_API_KEY", "COHERE_BASE_URL", "CITEWISE_LLM_CACHE"):
        os.environ.pop(name, None)
    with FakeOpenAI(responder) as server:
        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = server.base_url, "test"
        yield server


def report_context(index: Path, sections: int, **overrides: Any) -> Context:
    """LLM mode on the report path, the outline fixed at `sections` sections."""
    settings = {
        "index_dir": str(index),
        "model": "openai/bench-writer",
        "judge_model": "openai/bench-judge",
        "route": "report",
        "max_sections": sections,
        "min_sections": sections,
        "max_parallel_sections": sections,
    }
    return Context(**(settings | overrides))


def ask(question: str, context: Context) -> dict[str, Any]:
    """One report in its own event loop (the provider clients belong to a loop), with its wall time."""
    started = time.perf_counter()
    result = asyncio.run(graph.ainvoke({"messages": [("user", question)]}, context=context))
    return result | {"wall_s": time.perf_counter() - started}


def critical_rounds(spans: list[tuple[float, float, str]]) -> int:
    """Dependent rounds: a request is one deeper than the deepest request that ended before it started."""
    depths: list[tuple[float, int]] = []
    for started, ended, _ in sorted(spans):
        depth = 1 + max((d for end, d in depths if end <= started), default=0)
        depths.append((ended, depth))
    return max((d for _, d in depths), default=0)


def written(result: dict[str, Any]) -> int:
    """Sections written (not failed, not without evidence)."""
    return sum(s.get("status") == "written" for s in result.get("sections", {}).values())


def passed(result: dict[str, Any]) -> bool:
    """Whether the customize step's validation passed."""
    return bool((result.get("validation") or {}).get("passed"))


def small_index(path: Path) -> Path:
    """The twelve short documents of tests/conftest.py, indexed once under bench/.cache."""
    corpus = write_corpus(path.parent / f"{path.name}.jsonl", [json.dumps(r) for r in SMALL_CORPUS])
    return build(path, corpus, len(SMALL_CORPUS))


def write_corpus(corpus: Path, lines: list[str]) -> Path:
    """Write jsonl records (unless the file already holds exactly them, so its content hash stays)."""
    corpus.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(line.rstrip("\n") + "\n" for line in lines)
    if not corpus.exists() or corpus.read_text() != text:
        corpus.write_text(text)
    return corpus


def build(path: Path, corpus: Path, documents: int) -> Path:
    """Index `corpus` at `path`; reused when the index already holds its `documents` consistently."""
    with Index.open(path) as index:
        stats = index.stats()
        if stats.documents == documents and stats.consistent:
            print(f"index {path}: {stats.documents} documents, {stats.chunks} chunks (reused)")
            return path
        report = index.ingest([corpus])  # builds, completes an interrupted build, or finds the file unchanged
        stats = index.stats()
    print(
        f"index {path}: {stats.documents} documents, {stats.chunks} chunks (built in {report.seconds:.1f} s)"
    )
    return path


# latency ------------------------------------------------------------------------------------------------


def run_latency(args: argparse.Namespace) -> None:
    index = small_index(args.index)
    question = QUESTIONS[0]
    n = args.sections
    variants = {"a": n, "b": 1}
    with serve(SchemaResponder(route="report", sections=n, queries=ASPECTS)):  # loads the model and index
        ask(question, report_context(index, n))
    rows = []
    for run, variant in itertools.product(range(1, args.runs + 1), variants):
        responder = TimedResponder(
            SchemaResponder(route="report", sections=n, delay=args.delay, queries=ASPECTS)
        )
        with serve(responder) as server:
            width = variants[variant]
            context = report_context(index, n, max_parallel_sections=width, max_concurrency=args.concurrency)
            result = ask(question, context)
            requests, in_flight = len(server.chat_requests), server.max_in_flight
        rounds = critical_rounds(responder.spans)
        rows.append(
            {
                "run": run,
                "variant": variant,
                "parallel": variants[variant],
                "wall_s": result["wall_s"],
                "requests": requests,
                "max_in_flight": in_flight,
                "rounds": rounds,
                "critical_s": rounds * args.delay,
                "sections_s": responder.section_phase(),
                "sections": written(result),
                "citations": len(result.get("citations", [])),
                "passed": passed(result),
            }
        )
    print_table(
        rows,
        ["run", "variant", "parallel", "wall_s", "requests", "max_in_flight", "rounds", "critical_s"]
        + ["sections_s", "sections", "citations", "passed"],
    )
    a = [r for r in rows if r["variant"] == "a"]
    b = [r for r in rows if r["variant"] == "b"]
    a_wall = statistics.median(r["wall_s"] for r in a)
    b_wall = statistics.median(r["wall_s"] for r in b)
    c = statistics.median(r["critical_s"] for r in a)
    summary = {
        "a_wall_s": a_wall,
        "b_wall_s": b_wall,
        "c_critical_s": c,
        "a/c": a_wall / c,
        "b/a": b_wall / a_wall,
        "b/a_sections": statistics.median(r["sections_s"] for r in b)
        / statistics.median(r["sections_s"] for r in a),
        "a_rounds": statistics.median(r["rounds"] for r in a),
        "b_rounds": statistics.median(r["rounds"] for r in b),
        "sections": statistics.median(r["sections"] for r in a),
        "citations": statistics.median(r["citations"] for r in a),
        "passed": all(r["passed"] for r in rows),
    }
    print()
    print_table([summary], list(summary))
    print(
        f"{n} sections, {args.delay * 1000:.0f} ms per request, median of {args.runs} runs: a / c "
        f"{summary['a/c']:.2f} (target <= 1.3), b / a {summary['b/a']:.2f} (sections: {n}); the section "
        f"phase alone (outline reply to customize request) b / a {summary['b/a_sections']:.2f}, "
        f"{args.concurrency} LLM requests in flight at most"
    )
    save(
        args.out,
        {
            "question": question,
            "sections": n,
            "delay_s": args.delay,
            "max_concurrency": args.concurrency,
            "runs": rows,
            "median": summary,
            "machine": machine(),
        },
    )


# calls --------------------------------------------------------------------------------------------------


class Counter:
    """Counts calls of a function while `patch` is active (the bench process only)."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def patch(self, owner: Any, name: str) -> Iterator[None]:
        original = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.count += 1
            return original(*args, **kwargs)

        setattr(owner, name, counted)
        try:
            yield
        finally:
            setattr(owner, name, original)

    def take(self) -> int:
        with self._lock:
            count, self.count = self.count, 0
        return count


def stage_order(stage: str) -> tuple[int, str]:
    """A stage's place in pipeline order, unknown stages last."""
    return (STAGES.index(stage) if stage in STAGES else len(STAGES), stage)


def run_calls(args: argparse.Namespace) -> None:
    index = small_index(args.index)
    questions = QUESTIONS[: args.questions]
    searches, passes = Counter(), Counter()
    per_stage: dict[str, list[dict[str, int]]] = {}
    reports = []
    with searches.patch(Index, "search"), passes.patch(retrieve, "search_all"):
        for question in questions:
            with serve(SchemaResponder(route="report", sections=args.sections)):
                result = ask(question, report_context(index, args.sections))
            usage = result["usage"]
            reports.append(
                {
                    "question": question,
                    "llm_calls": sum(u["calls"] for u in usage.values()),
                    "searches": searches.take(),
                    "retrieve_passes": passes.take(),
                    "sections": written(result),
                    "citations": len(result.get("citations", [])),
                    "passed": passed(result),
                }
            )
            for stage, spent in usage.items():
                per_stage.setdefault(stage, []).append(spent)
    rows = [
        {
            "stage": stage,
            "calls": sum(s["calls"] for s in spent) / len(questions),
            "input_tokens": sum(s["input_tokens"] for s in spent) / len(questions),
            "output_tokens": sum(s["output_tokens"] for s in spent) / len(questions),
        }
        for stage, spent in sorted(per_stage.items(), key=lambda item: stage_order(item[0]))
    ]
    rows.append(
        {
            "stage": "total",
            "calls": sum(r["calls"] for r in rows),
            "input_tokens": sum(r["input_tokens"] for r in rows),
            "output_tokens": sum(r["output_tokens"] for r in rows),
        }
    )
    columns = ["question", "llm_calls", "searches", "retrieve_passes", "sections", "citations", "passed"]
    print_table(reports, columns)
    print()
    print_table(rows, ["stage", "calls", "input_tokens", "output_tokens"])
    mean = {k: statistics.fmean(r[k] for r in reports) for k in ("llm_calls", "searches", "retrieve_passes")}
    print()
    print_table(
        [
            {"per report": "citewise", "sections": args.sections, **mean},
            {"per report": "SynthRAG (published)", "llm_calls": SYNTHRAG["llm_calls"]}
            | {"searches": SYNTHRAG["retrievals"]},
        ],
        ["per report", "sections", "llm_calls", "searches", "retrieve_passes"],
    )
    save(
        args.out,
        {
            "sections": args.sections,
            "questions": len(questions),
            "reports": reports,
            "stages": {r["stage"]: {k: v for k, v in r.items() if k != "stage"} for r in rows},
            "mean": mean,
            "synthrag": SYNTHRAG,
            "machine": machine(),
        },
    )


# local --------------------------------------------------------------------------------------------------


def title_of(line: str) -> str:
    """An unarXive record's title on one line."""
    return " ".join(json.loads(line)["metadata"]["title"].split())


def title_questions(titles: list[str], count: int) -> list[str]:
    """Overviews of the first papers, then a comparison of the first two."""
    overviews = [f"Give an overview of {title}" for title in titles[: max(1, count - 1)]]
    compare = [f"Compare {titles[0]} and {titles[1]}"] if len(titles) > 1 and count > 1 else []
    return (overviews + compare)[:count]


def verified_sentences(result: dict[str, Any]) -> int:
    """Sentences verification kept: the support map when the result carries one, else the cited sentences."""
    if result.get("support"):
        return len(result["support"])
    parts = split_answer(result.get("answer", ""))
    return sum(bool(MARKER.search(part)) for part in parts if not is_structure(part))


def local_reports(corpus: str, index: Path, questions: list[str]) -> tuple[list[dict[str, Any]], float]:
    """Local-mode reports of the questions (the first one is asked once more first, to warm up)."""
    context = Context(index_dir=str(index), model=None, judge_model=None, route="report")
    warmup = ask(questions[0], context)["wall_s"]
    rows = []
    for question in questions:
        result = ask(question, context)
        verified, unsupported = verified_sentences(result), len(result.get("unsupported", []))
        rows.append(
            {
                "corpus": corpus,
                "question": question if len(question) <= 60 else question[:57] + "...",
                "wall_s": result["wall_s"],
                "planned": len(result.get("outline", [])),
                "written": written(result),
                "citations": len(result.get("citations", [])),
                "verified": verified,
                "unsupported": unsupported,
                "verified_share": verified / (verified + unsupported) if verified + unsupported else 0.0,
                "passed": passed(result),
                "route": result.get("route"),
                "full_question": question,
                "problems": (result.get("validation") or {}).get("problems", []),
            }
        )
    return rows, warmup


LOCAL_FIGURES = ("wall_s", "planned", "written", "citations", "verified", "unsupported", "verified_share")


def run_local(args: argparse.Namespace) -> None:
    corpora: dict[str, tuple[Path, list[str]]] = {}
    if args.sample:
        lines = [line for line in SAMPLE.read_text().splitlines() if line.strip()]
        corpora["sample"] = (
            build(CACHE / "unarxive-sample", SAMPLE, len(lines)),
            [title_of(x) for x in lines],
        )
    if args.unarxive:
        with args.unarxive.open() as handle:
            lines = [line for line in itertools.islice(handle, args.papers) if line.strip()]
        name = f"unarxive{args.papers}"
        index = build(CACHE / name, write_corpus(CACHE / f"{name}-papers.jsonl", lines), len(lines))
        corpora[name] = (index, [title_of(x) for x in lines])
    rows, medians, warmups = [], [], {}
    for corpus, (index, titles) in corpora.items():
        found, warmups[corpus] = local_reports(corpus, index, title_questions(titles, args.questions))
        rows += found
        medians.append(
            {
                "corpus": corpus,
                "question": f"median of {len(found)}",
                **{k: statistics.median(r[k] for r in found) for k in LOCAL_FIGURES},
                "passed": f"{sum(r['passed'] for r in found)}/{len(found)}",
            }
        )
    print_table(rows + medians, ["corpus", "question", *LOCAL_FIGURES, "passed"])
    save(
        args.out,
        {
            "questions": rows,
            "median": medians,
            "warmup_s": warmups,
            "papers": args.papers if args.unarxive else 0,
            "machine": machine(),
        },
    )


# parts ----------------------------------------------------------------------------------------------------

PARTS = ROOT / "bench" / "data" / "report-parts.jsonl"
MANUALS = ROOT / "bench" / "data" / "manuals.json"
MARKER = re.compile(r"\[\d+\]")
LONG_HEADING = 8
"""Words a heading a person would write keeps under."""


def manuals_index(path: Path) -> Path:
    """The PDFs of bench/manuals.py (Debian's texlive-doc), indexed once under bench/.cache.

    The ten the report questions were written for: the "fresh" documents, added later, stay out.
    """
    documents = json.loads(MANUALS.read_text())["documents"]
    files = [Path(d["file"]) for d in documents if d["split"] != "fresh"]
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        sys.exit(f"not installed: {', '.join(missing)} (apt-get install texlive-publishers-doc ...)")
    with Index.open(path) as index:
        if index.stats().documents != len(files):
            index.ingest(files)
    return path


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def part_figures(result: dict[str, Any], parts: list[dict[str, Any]]) -> dict[str, Any]:
    """How a report answers its question's parts (see `run_parts`)."""
    from citewise.core.report import is_own_text, section_bodies

    answer = result.get("answer", "")
    bodies = section_bodies(answer)
    covered, placed = 0, 0
    for part in parts:
        expect = [_norm(e) for e in part["expect"]]
        covered += any(e in _norm(answer) for e in expect)
        placed += any(
            any(w.lower() in heading.lower() for w in part["heading"])
            and any(e in _norm(body) for e in expect)
            for heading, body in bodies.items()
        )
    shown = [
        p for p in split_answer(answer) if not is_structure(p) and not is_own_text(p, result.get("question"))
    ]
    headings = [h for h in bodies if h]
    return {
        "parts": len(parts),
        "covered": covered / len(parts),
        "in_own_section": placed / len(parts),
        "unmarked": sum(not MARKER.search(p) for p in shown),
        "sentences": len(shown),
        "long_headings": sum(len(h.split()) > LONG_HEADING for h in headings),
        "headings": headings,
    }


PART_FIGURES = ("covered", "in_own_section", "unmarked", "long_headings", "wall_s")


def run_parts(args: argparse.Namespace) -> None:
    """Local reports on questions of several parts, against what each part's section must say."""
    asked = [json.loads(line) for line in PARTS.read_text().splitlines() if line.strip()]
    lines = [line for line in SAMPLE.read_text().splitlines() if line.strip()]
    indexes = {
        "sample": build(CACHE / "unarxive-sample", SAMPLE, len(lines)),
        "manuals": manuals_index(CACHE / "manuals-index"),
    }
    rows = []
    for item in asked:
        context = Context(
            index_dir=str(indexes[item["corpus"]]), model=None, judge_model=None, route="report"
        )
        result = ask(item["question"], context)
        figures = part_figures(result, item["parts"])
        rows.append(
            {"split": item["split"], "question": item["question"][:60], "wall_s": result["wall_s"], **figures}
        )
        print(f"{item['question']}\n  headings: {figures['headings']}")
    summary = [
        {
            "split": split,
            "question": f"mean of {len(chosen)}",
            **{k: statistics.fmean(r[k] for r in chosen) for k in PART_FIGURES},
        }
        for split in ("tune", "heldout")
        if (chosen := [r for r in rows if r["split"] == split])
    ]
    print_table(rows + summary, ["split", "question", *PART_FIGURES])
    save(args.out, {"questions": rows, "summary": summary, "machine": machine()})


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parts = parser.add_subparsers(dest="part", required=True)
    latency = parts.add_parser("latency", help="parallel vs one-at-a-time sections against the critical path")
    latency.add_argument("--index", type=Path, default=CACHE / "report-small")
    latency.add_argument("--delay", type=float, default=0.3)
    latency.add_argument("--sections", type=int, default=5)
    latency.add_argument("--runs", type=int, default=3)
    latency.add_argument(
        "--concurrency",
        type=int,
        default=Context(index_dir="").max_concurrency,
        help="Context.max_concurrency: LLM requests in flight at once (default: the Context default)",
    )
    latency.add_argument("--out", type=Path, default=RESULTS / "report-latency.json")
    calls = parts.add_parser("calls", help="LLM calls, tokens and searches per report")
    calls.add_argument("--index", type=Path, default=CACHE / "report-small")
    calls.add_argument("--sections", type=int, default=5)
    calls.add_argument("--questions", type=int, default=len(QUESTIONS))
    calls.add_argument("--out", type=Path, default=RESULTS / "report-calls.json")
    local = parts.add_parser("local", help="local-mode reports on unarXive papers")
    local.add_argument("--sample", action="store_true", help="the bundled three-paper sample")
    local.add_argument("--unarxive", type=Path, help="an unarXive jsonl file")
    local.add_argument("--papers", type=int, default=10)
    local.add_argument("--questions", type=int, default=4)
    local.add_argument("--out", type=Path, default=RESULTS / "report-local.json")
    multi = parts.add_parser("parts", help="local reports on questions of several parts (bench/data)")
    multi.add_argument("--out", type=Path, default=RESULTS / "report-parts.json")
    args = parser.parse_args()
    if args.part == "local" and not (args.sample or args.unarxive):
        parser.error("local: give --sample, --unarxive FILE, or both")
    {"latency": run_latency, "calls": run_calls, "local": run_local, "parts": run_parts}[args.part](args)


if __name__ == "__main__":
    main()
