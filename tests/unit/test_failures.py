"""A run that cannot answer says why, and a served run cannot choose the server's stores or files."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai
import pytest

from citewise.context import Context
from citewise.deployment import DeploymentError, allowed_paths, check_settings, escapes_root
from citewise.graph.query import graph
from citewise.index.records import IndexOpenError
from citewise.models import MalformedOutput, ModelSetupError
from citewise.nodes.failed import explain


def provider_error() -> openai.APIConnectionError:
    return openai.APIConnectionError(request=httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions"))


@pytest.mark.parametrize(
    ("error", "kind", "hint"),
    [
        (IndexOpenError("no index at x"), "no index", "citewise ingest"),
        (ModelSetupError("unknown model provider 'foo'"), "model setup", "CITEWISE_MODEL"),
        (DeploymentError("index_dir is a server setting"), "server setting", "operator"),
        (provider_error(), "model provider", "OPENAI_BASE_URL"),
        (TimeoutError("read timed out"), "model provider", "check its URL"),
        (MalformedOutput("breaks the schema"), "model output", "another model"),
        (KeyError("chunk-7"), "unexpected", "fault in citewise"),
    ],
)
def test_each_failure_is_explained_with_what_to_do(error: BaseException, kind: str, hint: str) -> None:
    problem = explain(error, "rewrite")
    assert problem["kind"] == kind and problem["stage"] == "rewrite"
    assert hint in problem["hint"]
    assert problem["message"]


async def test_a_missing_index_ends_the_run_with_a_reply_not_an_exception(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here"
    result = await graph.ainvoke(
        {"messages": [("user", "How deep is Lake Baikal?")]}, context=Context(index_dir=str(missing))
    )
    assert result["error"]["kind"] == "no index"
    reply = result["messages"][-1]
    assert reply.type == "ai" and f"no index at {missing}" in reply.content
    assert "citewise ingest" in reply.content
    assert result["citations"] == [] and result["evidence"] == []
    assert not missing.exists()  # asking never creates an index


def test_outside_a_server_the_caller_chooses_its_stores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CITEWISE_SERVED", raising=False)
    check_settings(Context(index_dir="/anywhere", chroma_url="http://127.0.0.1:1"))  # no error


def test_a_served_run_may_not_choose_the_index_or_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITEWISE_SERVED", "1")
    monkeypatch.setenv("CITEWISE_INDEX", "/srv/citewise/index")
    monkeypatch.delenv("CITEWISE_LLM_CACHE", raising=False)
    monkeypatch.delenv("CITEWISE_CHROMA_URL", raising=False)
    check_settings(Context())  # the server's own settings
    with pytest.raises(DeploymentError, match="index_dir is a server setting.*CITEWISE_INDEX"):
        check_settings(Context(index_dir="/etc"))
    with pytest.raises(DeploymentError, match="llm_cache is a server setting.*CITEWISE_LLM_CACHE"):
        check_settings(Context(llm_cache="/tmp/elsewhere.sqlite"))
    with pytest.raises(DeploymentError, match="chroma_url"):
        check_settings(Context(chroma_url="http://127.0.0.1:8000"))


def test_a_served_index_graph_needs_a_data_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITEWISE_SERVED", "1")
    monkeypatch.delenv("CITEWISE_DATA_ROOT", raising=False)
    with pytest.raises(DeploymentError, match="CITEWISE_DATA_ROOT"):
        allowed_paths(["notes.txt"])


def test_paths_resolve_inside_the_data_root_and_never_out_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = tmp_path / "data", tmp_path / "outside"
    (root / "docs").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (root / "docs" / "note.txt").write_text("note")
    (root / "docs" / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "escape").symlink_to(outside, target_is_directory=True)
    monkeypatch.setenv("CITEWISE_DATA_ROOT", str(root))
    assert allowed_paths(["docs/note.txt"]) == [(root / "docs" / "note.txt").resolve()]
    assert allowed_paths([str(root / "docs")]) == [(root / "docs").resolve()]
    for bad in (str(outside / "secret.txt"), "../outside/secret.txt", "escape/secret.txt", "/etc/passwd"):
        with pytest.raises(DeploymentError, match="outside the data root"):
            allowed_paths([bad])
    assert escapes_root(root / "docs" / "leak.txt")
    assert not escapes_root(root / "docs" / "note.txt")
