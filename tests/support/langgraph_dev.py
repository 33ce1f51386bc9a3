"""LangGraph's own dev server (`langgraph dev`) serving langgraph.json on a free loopback port, for tests."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support.processes import wait_until_up

REPO = Path(__file__).resolve().parents[2]
STARTUP_GUARD = 180.0
"""Seconds the server may take to answer /ok; only a server that never comes up reaches it."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def isolated_config(folder: Path) -> Path:
    """The repository's langgraph.json with absolute paths, written into `folder`; its path.

    Graphs named by module (`citewise.app.served:graph`) are imported from the installed package and stay
    as they are; graphs named by file get the file's absolute path.

    `langgraph dev` resolves graph paths against its working directory, and its in-memory runtime keeps its
    state (threads, checkpoints, assistants) in `.langgraph_api` there and reloads it at start: a server run
    from the repository inherits every earlier server's threads and graphs. Started in `folder` with this
    file, a server keeps its state to itself.
    """
    config = json.loads((REPO / "langgraph.json").read_text())
    config["dependencies"] = [str((REPO / dependency).resolve()) for dependency in config["dependencies"]]
    graphs = {}
    for name, spec in config["graphs"].items():
        file, variable = spec.rsplit(":", 1)
        graphs[name] = f"{(REPO / file).resolve()}:{variable}" if "/" in file else spec
    config["graphs"] = graphs
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "langgraph.json"
    path.write_text(json.dumps(config, indent=2))
    return path


@contextmanager
def langgraph_dev(log_dir: Path, environment: dict[str, str]) -> Iterator[str]:
    """Start `langgraph dev` with `environment` on top of this process's (no CITEWISE_ settings of its own,
    no analytics, no version check, no tracing); yield its URL; stop its process group afterwards.
    """
    executable = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which("langgraph")
    if not executable:
        raise RuntimeError("langgraph-cli is not installed (pip install -e '.[test]')")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("CITEWISE_") or k == "CITEWISE_PROFILE"
    } | {
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
        **environment,
    }
    port = free_port()
    log_path = log_dir / "server.log"
    home = Path(tempfile.mkdtemp(prefix="citewise-langgraph-dev-"))  # not under a data root a test reads
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [executable, "dev", "--host", "127.0.0.1", "--port", str(port), "--no-browser", "--no-reload",
             "--config", str(isolated_config(home))],
            cwd=home,  # its .langgraph_api state stays there (see isolated_config)
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_up(f"{url}/ok", server, STARTUP_GUARD, log_path, "langgraph dev")
            yield url
        finally:
            if server.poll() is None:
                os.killpg(server.pid, signal.SIGTERM)
                try:
                    server.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(server.pid, signal.SIGKILL)
            shutil.rmtree(home, ignore_errors=True)
