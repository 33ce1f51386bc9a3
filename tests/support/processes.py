"""Servers the tests start as processes: wait until one answers, stop it whatever state it is in."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path


def wait_until_up(url: str, process: subprocess.Popen, guard: float, log_path: Path, what: str) -> None:
    """Return once GET `url` answers 200; RuntimeError (with the log's end) if the process exits or `guard`
    seconds pass first."""
    deadline = time.monotonic() + guard
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.5)


def stop(process: subprocess.Popen, grace: float = 20.0) -> None:
    """Terminate the process; kill it if it has not ended after `grace` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
