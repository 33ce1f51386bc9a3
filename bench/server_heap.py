"""Where a `langgraph dev` server's memory goes while it answers: its own Python heap, from inside.

    python bench/server_heap.py [--warm 10] [--between 60] [--out bench/results/server-heap.json]

bench/waysin.py shows the dev server's resident memory growing with questions while the same graph in one
process does not. This serves the query graph beside a probe graph in one `langgraph dev` (the bundled
sample, local mode). The probe starts tracemalloc in the server's process on its first call and compares
the heap with its previous call on each later one. The client asks `--warm` questions, probes, asks
`--between` more (each on its own thread, deleted after its run), probes again, and prints the allocation
sites whose memory grew in between, each with its stack: what the server keeps per question. Then the same
graph in this process with LangGraph's own in-memory checkpointer, threads deleted or kept, for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from common import machine, print_table, save
from waysin import QUESTIONS, QUIET, REPO, SAMPLE, free_port, start, stop, wait_up

PROBE = '''
import gc
import tracemalloc

from langgraph.graph import START, MessagesState, StateGraph

_last = {}


def probe(state: MessagesState) -> dict:
    """On the first call start tracing; later, the heap's size and the sites that grew since the last call."""
    gc.collect()
    if not tracemalloc.is_tracing():
        tracemalloc.start(25)
        return {"messages": [("assistant", "[]")]}
    snapshot = tracemalloc.take_snapshot()
    grown = []
    if "snapshot" in _last:
        for stat in snapshot.compare_to(_last["snapshot"], "traceback")[:8]:
            frames = [f"{frame.filename}:{frame.lineno}" for frame in stat.traceback]
            grown.append({"kb": round(stat.size_diff / 1024, 1), "blocks": stat.count_diff, "stack": frames})
    _last["snapshot"] = snapshot
    heap = round(tracemalloc.get_traced_memory()[0] / 2**20, 1)
    return {"messages": [("assistant", json.dumps({"heap_mb": heap, "grown": grown}))]}


import json  # noqa: E402

builder = StateGraph(MessagesState)
builder.add_node(probe)
builder.add_edge(START, "probe")
graph = builder.compile()
'''


async def ask(client: Any, graph_id: str, text: str) -> str:
    """One run on a new thread, the thread deleted after it; the last message's text."""
    thread = await client.threads.create()
    result = await client.runs.wait(
        thread["thread_id"], graph_id, input={"messages": [{"role": "user", "content": text}]}
    )
    await client.threads.delete(thread["thread_id"])
    return result["messages"][-1]["content"]


async def campaign(url: str, warm: int, between: int) -> dict[str, Any]:
    from langgraph_sdk import get_client

    client = get_client(url=url)
    for n in range(warm):
        await ask(client, "citewise", QUESTIONS[n % len(QUESTIONS)])
    await ask(client, "probe", "start")  # tracing starts
    await ask(client, "probe", "first snapshot")
    for n in range(between):
        await ask(client, "citewise", QUESTIONS[n % len(QUESTIONS)])
    return json.loads(await ask(client, "probe", "compare"))


async def checkpointed(index: Path, count: int, delete: bool) -> list[dict[str, float]]:
    """The graph in this process with LangGraph's in-memory checkpointer, a thread per question (deleted
    after its run, or kept): resident memory after a collection and malloc_trim, at a few points."""
    import ctypes
    import gc
    import uuid

    from langgraph.checkpoint.memory import InMemorySaver
    from waysin import own_rss_mb

    from citewise.context import Context
    from citewise.graph.query import builder

    libc = ctypes.CDLL("libc.so.6")
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    context = Context(index_dir=str(index))
    series = []
    for n in range(1, count + 1):
        thread = str(uuid.uuid4())
        question = {"messages": [("user", QUESTIONS[n % len(QUESTIONS)])]}
        await graph.ainvoke(question, {"configurable": {"thread_id": thread}}, context=context)
        if delete:
            await saver.adelete_thread(thread)
        if n in (1, 25, 50, count):
            gc.collect()
            libc.malloc_trim(0)
            series.append({"questions": n, "rss_mb": round(own_rss_mb(), 1)})
    return series


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--warm", type=int, default=10)
    parser.add_argument("--between", type=int, default=60)
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/server-heap.json")
    args = parser.parse_args()
    os.environ.update(QUIET)
    work = Path(tempfile.mkdtemp(prefix="citewise-heap-"))
    index = work / "index"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "COHERE_", "CITEWISE_"))}
    env |= QUIET | {"CITEWISE_INDEX": str(index), "CITEWISE_DATA_ROOT": str(work)}
    subprocess.run(
        [sys.executable, "-m", "citewise.app.cli", "ingest", str(SAMPLE), "--index", str(index), "-q"],
        check=True,
        env=env,
    )
    (work / "probe.py").write_text(PROBE)
    config = {
        "dependencies": [str(REPO), str(work)],
        "graphs": {"citewise": "citewise.app.served:graph", "probe": f"{work}/probe.py:graph"},
        "python_version": "3.11",
        "env": {"CITEWISE_SERVED": "1"},
    }
    (work / "langgraph.json").write_text(json.dumps(config))
    langgraph = str(Path(sys.executable).parent / "langgraph")
    port = free_port()
    log = work / "server.log"
    command = [langgraph, "dev", "--host", "127.0.0.1", "--port", str(port), "--no-browser", "--no-reload"]
    server = start([*command, "--config", str(work / "langgraph.json")], env, log, work)
    began = time.perf_counter()
    try:
        wait_up(f"http://127.0.0.1:{port}/ok", server, log)
        found = asyncio.run(campaign(f"http://127.0.0.1:{port}", args.warm, args.between))
    finally:
        stop(server)
    rows = [
        {"kb": site["kb"], "per question kb": round(site["kb"] / args.between, 1), "blocks": site["blocks"],
         "allocated at": " <- ".join(Path(f).name for f in reversed(site["stack"][-4:]))}
        for site in found["grown"]
    ]  # fmt: skip
    print(
        f"langgraph dev, {args.between} questions (threads deleted) after {args.warm}: Python heap "
        f"{found['heap_mb']} MB traced; the sites that grew most ({time.perf_counter() - began:.0f} s)"
    )
    print_table(rows, ["kb", "per question kb", "blocks", "allocated at"])
    # the same graph in this process, with the checkpointer the dev server uses, threads deleted or kept
    local = {
        kind: asyncio.run(checkpointed(index, args.between + args.warm, kind == "deleted"))
        for kind in ("deleted", "kept")
    }
    print("\nthe graph in-process with LangGraph's in-memory checkpointer (resident MB, after malloc_trim)")
    print_table(
        [{"questions": a["questions"], "threads deleted": a["rss_mb"], "threads kept": b["rss_mb"]}
         for a, b in zip(local["deleted"], local["kept"], strict=True)],
        ["questions", "threads deleted", "threads kept"],
    )  # fmt: skip
    save(
        args.out,
        {"warm": args.warm, "between": args.between, **found, "in_process": local, "machine": machine()},
    )


if __name__ == "__main__":
    main()
