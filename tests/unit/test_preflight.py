"""Model settings checked before a run starts (citewise.models.preflight), against servers on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import openai
import pytest
from typer.testing import CliRunner

from citewise.app.cli import app
from citewise.models.faults import ProviderUnreachable
from citewise.models.preflight import check_models
from citewise.models.specs import ModelSetupError


def serving(status: int, body: object) -> Iterator[str]:
    """A server answering every GET with `status` and `body`; its base URL."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            seen.append(f"{self.path} {self.headers.get('Authorization')}")
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()
    assert all(line.startswith("/v1/models Bearer ") for line in seen)


def models(*names: str) -> dict:
    return {"object": "list", "data": [{"id": name, "object": "model"} for name in names]}


@pytest.fixture
def base_url(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    status, body = request.param
    for url in serving(status, body):
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield url


@pytest.mark.parametrize("base_url", [(200, models("qwen2.5", "llama3.2:3b"))], indirect=True)
def test_a_model_the_server_does_not_serve_is_named_with_what_it_serves(base_url: str) -> None:
    check_models(["openai/qwen2.5", None])  # served: nothing said
    with pytest.raises(
        ModelSetupError, match=r"model 'qwen-2.5' is not served at .*; it serves: llama3.2:3b, qwen2.5"
    ):
        check_models(["openai/qwen-2.5"])


@pytest.mark.parametrize("base_url", [(200, models("smollm2"))], indirect=True)
def test_a_server_of_one_model_answers_to_any_name(base_url: str) -> None:
    check_models(["openai/any-name", "ollama/other"])  # llama.cpp serves its one model under any name


@pytest.mark.parametrize("base_url", [(401, {"error": {"message": "bad key"}})], indirect=True)
def test_a_refused_key_is_said_with_the_variable_to_check(base_url: str) -> None:
    with pytest.raises(openai.AuthenticationError):  # what the run's first request would have met
        check_models(["openai/gpt-4o-mini"])


@pytest.mark.parametrize("base_url", [(404, {}), (200, {"unexpected": True}), (500, "busy")], indirect=True)
def test_a_server_that_says_nothing_of_its_models_is_left_to_the_run(base_url: str) -> None:
    check_models(["vllm/whatever"])


def test_nothing_listening_and_bad_specs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    with pytest.raises(ProviderUnreachable, match="nothing answers at http://127.0.0.1:9/v1"):
        check_models(["openai/smollm2"])
    with pytest.raises(ModelSetupError, match="provider/model"):
        check_models(["smollm2"])
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    with pytest.raises(ModelSetupError, match="COHERE_API_KEY"):
        check_models(["cohere/command-r"])


@pytest.mark.parametrize("base_url", [(200, models("qwen2.5", "llama3.2:3b"))], indirect=True)
def test_ask_says_a_wrong_model_before_opening_the_index(base_url: str, tmp_path: Path) -> None:
    missing = tmp_path / "no-index-here"
    result = CliRunner().invoke(
        app, ["ask", "What did they find?", "--index", str(missing), "--model", "openai/qwen"]
    )
    assert result.exit_code == 2
    assert "model 'qwen' is not served" in result.output  # not the missing index: the model was checked first
    assert "Fix the model setting" in result.output
    result = CliRunner().invoke(
        app, ["ask", "What did they find?", "--index", str(missing), "--model", "openai/qwen2.5"]
    )
    assert (
        result.exit_code != 0 and "not served" not in result.output
    )  # served: the run goes on, to the index
    assert "no index at" in result.output and "no-index-here" in result.output
