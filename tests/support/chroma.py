"""A real Chroma server (`chroma run`) on 127.0.0.1 for the tests, started and stopped by them."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings

STARTUP_SECONDS = 60.0  # only a guard against a server that never comes up


def chroma_executable() -> str:
    beside = Path(sys.executable).parent / "chroma"
    found = shutil.which("chroma") or (str(beside) if beside.exists() else None)
    if found is None:
        pytest.fail("the `chroma` executable is not installed next to the test interpreter")
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ChromaServer:
    """A `chroma run` process on 127.0.0.1, started and stopped by the test."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, data: Path) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.stderr_path = self.logs / f"chroma-{data.name}.err"
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "CHROMA_TELEMETRY": "False", "NO_COLOR": "1"}
        with open(self.logs / f"chroma-{data.name}.out", "wb") as out, open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen(
                [
                    chroma_executable(),
                    "run",
                    "--path",
                    str(data),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                ],
                stdout=out,
                stderr=err,
                env=env,
            )
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"chroma exited with {self.process.returncode}:\n{self.stderr()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2) as response:
                    if response.status == 200 and "heartbeat" in json.loads(response.read()).__str__():
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                pass
            time.sleep(0.1)
        self.stop()
        pytest.fail(f"chroma did not answer its heartbeat within {STARTUP_SECONDS}s:\n{self.stderr()}")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)

    def client(self) -> chromadb.ClientAPI:
        return chromadb.HttpClient(
            host="127.0.0.1", port=self.port, settings=Settings(anonymized_telemetry=False)
        )
