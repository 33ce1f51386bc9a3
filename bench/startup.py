"""Start-up where users wait: a cold `citewise ask` beside `citewise chat` and `citewise serve`, side by side.

    python bench/startup.py [--runs 5] [--index bench/.cache/startup]

The bundled sample is ingested once into `--index`; then, round by round (so the machine's load falls on
every command alike), each of these runs as a fresh process: `ask` a question (the whole command), `chat`
until its banner (the prompt is next), `chat` answering one piped question until it exits, and `serve`
until its page answers on 127.0.0.1. The table gives min / median / max seconds and each median as a
multiple of the `ask` median (the target: chat and serve within 1.5x of a cold ask).

`--baseline CHECKOUT` adds a cold `ask`, `--help` and `serve` of another checkout of citewise (a git
worktree of an earlier commit), run in the same rounds beside today's (its package first on PYTHONPATH, the
same interpreter, index and question), so a change's effect on start-up is a ratio of medians from one run.
`--baseline-index DIR` gives the baseline its own index, ingested by the baseline checkout (as a user of
that commit would have it: e.g. a float32 embedding model before int8 became the default); without it both
ask the same index. `--only-ask` leaves out chat and serve.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from common import machine, print_table, save  # noqa: E402

EXE = str(Path(sys.executable).with_name("citewise"))
QUESTION = "How many transits of GJ 486b were observed?"
SAMPLE = ROOT / "citewise" / "samples" / "unarxive_sample.jsonl"


def ask(index: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([EXE, "ask", QUESTION, "--index", index], capture_output=True, env=env, check=True)
    return time.perf_counter() - started


def help_text(index: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([EXE, "--help"], capture_output=True, env=env, check=True)
    return time.perf_counter() - started


def chat_prompt(index: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    with subprocess.Popen(
        [EXE, "chat", "--index", index], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    ) as process:
        for line in process.stdout:
            if line.startswith("citewise chat:"):
                took = time.perf_counter() - started
                break
        process.stdin.close()
        process.wait()
    return took


def chat_one(index: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        [EXE, "chat", "--index", index],
        input=f"{QUESTION}\n",
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return time.perf_counter() - started


def serve_page(index: str, env: dict[str, str], port: int = 7899) -> float:
    started = time.perf_counter()
    with subprocess.Popen(
        [EXE, "serve", "--index", index, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    ) as process:
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).read()
                break
            except OSError:
                if process.poll() is not None:
                    raise RuntimeError("citewise serve exited before its page answered") from None
                time.sleep(0.05)
        took = time.perf_counter() - started
        process.terminate()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--index", type=Path, default=ROOT / "bench" / ".cache" / "startup")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "startup.json")
    parser.add_argument("--baseline", type=Path, help="another checkout, timed beside this one")
    parser.add_argument(
        "--baseline-index", type=Path, help="the baseline's own index (ingested by it), else --index"
    )
    parser.add_argument("--only-ask", action="store_true", help="only ask and --help (no chat, no serve)")
    args = parser.parse_args()
    env = dict(os.environ, HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False", GRADIO_ANALYTICS_ENABLED="False")
    subprocess.run([EXE, "ingest", str(SAMPLE), "--index", str(args.index), "--quiet"], env=env, check=True)
    commands = {"ask (whole command)": ask, "--help": help_text}
    if not args.only_ask:
        commands |= {
            "chat, to its prompt": chat_prompt,
            "chat, one question to exit": chat_one,
            "serve, to its page": serve_page,
        }
    baseline_env = dict(env, PYTHONPATH=str(args.baseline.resolve())) if args.baseline else None
    baseline_index = args.index
    if baseline_env is not None and args.baseline_index is not None:
        baseline_index = args.baseline_index
        ingest = [EXE, "ingest", str(SAMPLE), "--index", str(baseline_index), "--quiet"]
        subprocess.run(ingest, env=baseline_env, check=True)
    if baseline_env is not None:
        commands |= {"ask, baseline checkout": ask, "--help, baseline checkout": help_text}
        if not args.only_ask:
            commands["serve, baseline checkout"] = serve_page
    times: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory() as folder:
        env["CITEWISE_THREADS"] = str(Path(folder) / "threads.sqlite")
        if baseline_env is not None:
            baseline_env["CITEWISE_THREADS"] = env["CITEWISE_THREADS"]
        for _ in range(args.runs):
            for name, command in commands.items():
                chosen = baseline_env if "baseline" in name else env
                index = baseline_index if "baseline" in name else args.index
                times[name].append(command(str(index), chosen))  # type: ignore[arg-type]
    base = statistics.median(times["ask (whole command)"])
    rows = [
        {
            "command": name,
            "min s": round(min(values), 2),
            "median s": round(statistics.median(values), 2),
            "max s": round(max(values), 2),
            "x ask": round(statistics.median(values) / base, 2),
        }
        for name, values in times.items()
    ]
    if baseline_env is not None:
        before = statistics.median(times["ask, baseline checkout"])
        print(f"cold ask: {base:.2f} s, baseline {before:.2f} s: {base / before:.2f}x")
    print(f"Start-up, {args.runs} rounds, the bundled sample's index")
    print_table(rows, list(rows[0]))
    models = {"index": model_of(args.index)}
    if baseline_env is not None:
        models["baseline index"] = model_of(baseline_index)
    print("embedding models:", models)
    save(args.out, {"machine": machine(), "runs": args.runs, "embedding models": models, "rows": rows})


def model_of(index: Path) -> str:
    """The embedding model an index was built with (its document store's metadata)."""
    with closing(sqlite3.connect(f"file:{index / 'docs.sqlite3'}?mode=ro", uri=True)) as db:
        row = db.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone()
    return row[0] if row else "?"


if __name__ == "__main__":
    main()
