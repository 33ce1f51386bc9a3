"""The overhead of each way in: a local-mode answer in-process, through `langgraph dev`, and on the chat page.

    python bench/waysin.py [--n 5] [--memory 200] [--out bench/results/waysin.json]

The same questions on the bundled sample, one after another, through each way in within one run: the
compiled graph streamed in this process (`astream`, updates), the LangGraph server driven by langgraph_sdk
(`runs.stream`, updates), `citewise chat` with the questions piped in (warm: after a first question), and
the Gradio page driven in Debian's Chromium (Playwright). For each, the time
until the first stage is visible (rewrite's queries: local mode streams no tokens, so this is its "first
token") and until the cited answer is there; medians and the ratio to in-process. Then memory over `--memory`
questions, sampled as it goes, of this process running the graph (resident set, the same after malloc_trim,
and the Python heap with the allocation sites that grew) and of the server's process group (each thread
deleted after its run): it must level off at the caches' caps, not grow with every question.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests.support imports support.*
from common import machine, print_table, save

from tests.support.langgraph_dev import free_port, isolated_config

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "citewise" / "samples" / "unarxive_sample.jsonl"
QUESTIONS = [
    "How many transits of GJ 486b were observed?",
    "What is the equilibrium temperature of GJ 1132b?",
    "What does the second-generation HTRF donor improve?",
    "Which telescope observed the transits of GJ 486b?",
    "What is the boiling point of ethanol?",  # not in the sample: the no-answer path
]
QUIET = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "GRADIO_ANALYTICS_ENABLED": "False",
}


CONTROL_GRAPH = """
from langgraph.graph import START, MessagesState, StateGraph


def reply(state: MessagesState) -> dict:
    return {"messages": [("assistant", "ok")]}


builder = StateGraph(MessagesState)
builder.add_node(reply)
builder.add_edge(START, "reply")
graph = builder.compile()
"""
"""The control for the server's memory: a one-node graph under the same name, served the same way, so what
the dev server itself keeps per run is told apart from what citewise keeps."""


def wait_up(url: str, process: subprocess.Popen, log: Path, seconds: float = 240) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.5)
    raise SystemExit(f"{url} did not come up:\n{log.read_text()[-2000:]}")


def start(command: list[str], env: dict[str, str], log: Path, cwd: Path = REPO) -> subprocess.Popen:
    """A process in a session of its own. A `langgraph dev` gets a folder of its own as `cwd`: it keeps its
    state in `.langgraph_api` there and reloads it at start (see tests/support/langgraph_dev.py)."""
    return subprocess.Popen(
        command, cwd=cwd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def group_rss_mb(pid: int) -> float:
    """Resident memory of a process group (the server and its workers), from /proc."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getpgid(int(entry.name)) != pid:
                continue
            status = (entry / "status").read_text()
        except (OSError, ProcessLookupError):
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS")), 0)
    return total / 1024


async def in_process(index: Path, questions: list[str]) -> list[dict[str, float]]:
    from citewise.context import Context
    from citewise.graph.query import graph

    context = Context(index_dir=str(index))
    await graph.ainvoke({"messages": [("user", "warm up")]}, context=context)  # the model and index load
    rows = []
    for question in questions:
        began = time.perf_counter()
        first = None
        async for update in graph.astream(
            {"messages": [("user", question)]}, context=context, stream_mode="updates"
        ):
            if first is None and "rewrite" in update:
                first = time.perf_counter() - began
        rows.append({"first": first or 0.0, "total": time.perf_counter() - began})
    return rows


def own_rss_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS")) / 1024


async def process_memory(index: Path, count: int) -> tuple[list[dict[str, float]], list[dict[str, Any]]]:
    """This process's memory while the graph answers `count` questions (no checkpointer).

    Each sample, after a garbage collection: the resident set; the same after glibc's malloc_trim (what the
    allocator holds in freed pages is not live memory); and the Python heap as tracemalloc counts it (live
    Python objects only: Chroma's and onnxruntime's native memory is not in it). Returns the series and the
    allocation sites whose Python memory grew most between the first sample after warm-up and the last.
    """
    import ctypes
    import gc
    import tracemalloc

    from citewise.context import Context
    from citewise.graph.query import graph

    libc = ctypes.CDLL("libc.so.6")
    context = Context(index_dir=str(index))
    tracemalloc.start()
    series: list[dict[str, float]] = []
    marks = sorted({1, 10, 25, *range(50, count + 1, 50), count})
    baseline = None
    for n in range(1, count + 1):
        question = QUESTIONS[n % len(QUESTIONS)]
        await graph.ainvoke({"messages": [("user", question)]}, context=context)
        if n not in marks:
            continue
        gc.collect()
        rss = own_rss_mb()
        libc.malloc_trim(0)
        heap, _ = tracemalloc.get_traced_memory()
        series.append(
            {"questions": n, "rss_mb": round(rss, 1), "rss_trimmed_mb": round(own_rss_mb(), 1),
             "python_heap_mb": round(heap / 2**20, 1)}
        )  # fmt: skip
        print(f"in-process after {n} questions: {series[-1]}", flush=True)
        if n == 25:
            baseline = tracemalloc.take_snapshot()
    growth: list[dict[str, Any]] = []
    if baseline is not None:
        diff = tracemalloc.take_snapshot().compare_to(baseline, "lineno")
        growth = [
            {"site": str(stat.traceback[0]), "kb": round(stat.size_diff / 1024, 1), "blocks": stat.count_diff}
            for stat in diff[:8]
        ]
    tracemalloc.stop()
    return series, growth


async def through_server(url: str, questions: list[str], forget: bool = False) -> list[dict[str, float]]:
    """Each question on a thread of its own; `forget` deletes the thread after its run (the dev server keeps
    threads in memory, so this measures the server and citewise, not what it was asked to store)."""
    from langgraph_sdk import get_client

    client = get_client(url=url)
    rows = []
    for n, question in enumerate([QUESTIONS[0], *questions]):
        thread = await client.threads.create()
        began = time.perf_counter()
        first = None
        async for part in client.runs.stream(
            thread["thread_id"], "citewise", input={"messages": [{"role": "user", "content": question}]},
            stream_mode="updates",
        ):  # fmt: skip
            if first is None and part.event == "updates" and "rewrite" in (part.data or {}):
                first = time.perf_counter() - began
        if n:  # the first question warms the server's model and index
            rows.append({"first": first or 0.0, "total": time.perf_counter() - began})
        if forget:
            await client.threads.delete(thread["thread_id"])
    return rows


def sample_memory(server: subprocess.Popen, url: str, count: int, label: str) -> list[dict[str, float]]:
    """The server group's resident memory before and after each step of `count` questions, threads deleted."""
    memory = [{"questions": 0, "rss_mb": round(group_rss_mb(server.pid), 1)}]
    done = 0
    for step in sorted({25, *range(50, count + 1, 50), count}):
        asked = (QUESTIONS * (1 + step // len(QUESTIONS)))[done:step]
        asyncio.run(through_server(url, asked[:1] + asked, forget=True))
        done = step
        memory.append({"questions": step, "rss_mb": round(group_rss_mb(server.pid), 1)})
        print(f"{label} server after {step} questions: {memory[-1]['rss_mb']} MB", flush=True)
    return memory


def server_memory(work: Path, env: dict[str, str], dev: list[str], count: int) -> list[dict[str, float]]:
    """The same dev server (`dev`: its command, no port or config) serving CONTROL_GRAPH: its memory over
    the same number of runs."""
    folder = work / "control"
    folder.mkdir()
    (folder / "control.py").write_text(CONTROL_GRAPH)
    graphs = {"citewise": f"{folder / 'control.py'}:graph"}  # the server runs in the repository
    config = {"dependencies": [str(folder)], "graphs": graphs, "python_version": "3.11"}
    (folder / "langgraph.json").write_text(json.dumps(config))
    port = free_port()
    log = work / "control.log"
    server = start([*dev, "--port", str(port), "--config", str(folder / "langgraph.json")], env, log, folder)
    try:
        wait_up(f"http://127.0.0.1:{port}/ok", server, log)
        return sample_memory(server, f"http://127.0.0.1:{port}", count, "control")
    finally:
        stop(server)


def through_chat(
    citewise: list[str], index: Path, threads: Path, env: dict[str, str], questions: list[str]
) -> list[dict[str, float]]:
    """`citewise chat` with the questions piped in, after one warm-up question (the model and index load).

    Piped input is echoed as `you> QUESTION` when chat reads it, which it does as soon as the answer before
    is shown: each question's time is from its echo to the next echo, its first stage rewrite's line.
    """
    lines = [QUESTIONS[0], *questions, "/quit"]
    process = subprocess.Popen(
        [*citewise, "chat", "--index", str(index), "--threads", str(threads), "--mode", "answer"],
        cwd=REPO, env=env | {"PYTHONUNBUFFERED": "1"}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("".join(f"{line}\n" for line in lines))
    process.stdin.close()
    echoes: list[float] = []
    firsts: list[float | None] = []
    for line in process.stdout:
        now = time.perf_counter()
        if line.startswith("you> "):
            echoes.append(now)
            firsts.append(None)
        elif echoes and firsts[-1] is None and line.strip().startswith("rewrite:"):
            firsts[-1] = now - echoes[-1]  # the stage the other ways in count as the first one shown
    if process.wait(timeout=60) != 0 or len(echoes) != len(lines):
        raise SystemExit(
            f"citewise chat ended with {process.returncode} after {len(echoes)} of {len(lines)} lines"
        )
    return [{"first": firsts[n] or 0.0, "total": echoes[n + 1] - echoes[n]} for n in range(1, len(lines) - 1)]


def through_page(url: str, questions: list[str]) -> tuple[list[dict[str, float]], list[str]]:
    from playwright.sync_api import sync_playwright

    rows, seen = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1150})
        page.on("request", lambda request: seen.append(request.url))
        page.goto(url)
        page.wait_for_selector("#cw-question textarea")
        for n, question in enumerate([QUESTIONS[0], *questions]):
            stages = page.locator("#cw-chat :text('Working:')").count()
            links = page.locator("#cw-chat a.cw-cite").count()
            page.fill("#cw-question textarea", question)
            began = time.perf_counter()
            page.click("#cw-ask")
            first = None
            deadline = began + 300
            while time.perf_counter() < deadline:  # polled as the browser tests look: the visible text
                # the stage box's title names the first finished stage ("Working: rewrite…"); its lines sit
                # in a collapsed box, so the title is what a person sees first
                if first is None and page.locator("#cw-chat :text('Working:')").count() > stages:
                    first = time.perf_counter() - began
                if page.locator("#cw-chat a.cw-cite").count() > links:  # the answer, with its markers
                    break
                page.wait_for_timeout(50)
            else:
                raise SystemExit(f"the page gave no answer to {question!r} within 300 s")
            if n:
                rows.append({"first": first or 0.0, "total": time.perf_counter() - began})
        browser.close()
    return rows, seen


def summary(name: str, rows: list[dict[str, float]], base: dict[str, float] | None) -> dict[str, Any]:
    first = statistics.median(r["first"] for r in rows)
    total = statistics.median(r["total"] for r in rows)
    row = {"way in": name, "first stage (s)": round(first, 2), "answer (s)": round(total, 2)}
    if base:
        row["first x"] = round(first / base["first"], 2)
        row["answer x"] = round(total / base["total"], 2)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=len(QUESTIONS), help="questions per way in")
    parser.add_argument("--memory", type=int, default=200, help="questions for the server's memory (0: skip)")
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/waysin.json")
    args = parser.parse_args()
    os.environ.update(QUIET)
    questions = (QUESTIONS * (1 + args.n // len(QUESTIONS)))[: args.n]
    work = Path(tempfile.mkdtemp(prefix="citewise-waysin-"))
    index = work / "index"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "COHERE_", "CITEWISE_"))}
    env |= QUIET | {"CITEWISE_INDEX": str(index), "CITEWISE_DATA_ROOT": str(work)}
    citewise = [sys.executable, "-m", "citewise.app.cli"]
    subprocess.run([*citewise, "ingest", str(SAMPLE), "--index", str(index), "-q"], check=True, env=env)

    local = asyncio.run(in_process(index, questions))
    own, growth = asyncio.run(process_memory(index, args.memory)) if args.memory else ([], [])
    base = {
        "first": statistics.median(r["first"] for r in local),
        "total": statistics.median(r["total"] for r in local),
    }
    results = [summary("in-process (astream)", local, None)]

    langgraph = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or "langgraph"
    port = free_port()
    log = work / "server.log"
    dev = [langgraph, "dev", "--host", "127.0.0.1", "--no-browser", "--no-reload"]
    config = isolated_config(work / "server")
    server = start([*dev, "--port", str(port), "--config", str(config)], env, log, config.parent)
    memory: list[dict[str, float]] = []
    try:
        wait_up(f"http://127.0.0.1:{port}/ok", server, log)
        results.append(
            summary(
                "langgraph dev (SDK)",
                asyncio.run(through_server(f"http://127.0.0.1:{port}", questions)),
                base,
            )
        )
        if args.memory:
            memory = sample_memory(server, f"http://127.0.0.1:{port}", args.memory, "citewise")
    finally:
        stop(server)
    control: list[dict[str, float]] = []
    if args.memory:
        control = server_memory(work, env, dev, args.memory)

    results.append(
        summary(
            "terminal chat (warm)", through_chat(citewise, index, work / "chat.sqlite", env, questions), base
        )
    )

    port = free_port()
    log = work / "page.log"
    page = start([*citewise, "serve", "--index", str(index), "--port", str(port), "--threads",
                  str(work / "threads.sqlite")], env, log)  # fmt: skip
    try:
        wait_up(f"http://127.0.0.1:{port}/", page, log)
        rows, seen = through_page(f"http://127.0.0.1:{port}/", questions)
        results.append(summary("chat page (Chromium)", rows, base))
    finally:
        stop(page)
    outside = [
        u for u in seen if not u.startswith(("http://127.0.0.1", "http://localhost", "data:", "blob:"))
    ]

    print(f"A local-mode answer through each way in, {len(questions)} questions (medians; x: to in-process)")
    print_table(results, ["way in", "first stage (s)", "first x", "answer (s)", "answer x"])
    if memory:
        print("\nlanggraph dev server memory (resident MB, process group; each thread deleted after its run)")
        rows = [
            {"questions": m["questions"], "citewise": m["rss_mb"], "control (one-node graph)": c["rss_mb"]}
            for m, c in zip(memory, control or [{"rss_mb": ""}] * len(memory), strict=True)
        ]
        print_table(rows, ["questions", "citewise", "control (one-node graph)"])
    if own:
        print("\nin-process memory (the graph alone, no checkpointer)")
        print_table(own, ["questions", "rss_mb", "rss_trimmed_mb", "python_heap_mb"])
        print("\nPython allocation sites that grew most after question 25 (tracemalloc)")
        print_table(growth, ["site", "kb", "blocks"])
    print(f"\nrequests the page made beyond 127.0.0.1: {len(outside)}")
    found = {
        "ways_in": results,
        "server_memory": memory,
        "control_server_memory": control,
        "process_memory": own,
        "python_growth": growth,
        "page_outside": outside,
    }
    save(args.out, {"questions": questions, **found, "machine": machine()})
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
