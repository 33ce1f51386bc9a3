"""Collections and grants from the command line: ingest into collections, grant users and groups, read `--as`.

The real commands (Typer's runner) on a fresh local index: `ingest --collection`, `users grant` /
`revoke-grant` / `grants`, `groups add` / `member` / `list`, then `search --as`, `show --as` and `audit`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from citewise.app.cli import app

pytestmark = pytest.mark.integration

runner = CliRunner()


def run(*args: str | Path) -> Result:
    result = runner.invoke(app, [str(a) for a in args], catch_exceptions=False)
    return result


def titles(result: Result) -> set[str]:
    assert result.exit_code == 0, result.output
    return {hit["title"] for hit in json.loads(result.stdout)["hits"]}


def test_grants_to_users_and_groups_decide_what_a_command_run_as_them_reads(
    tmp_path: Path, small_corpus_records: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CITEWISE_STORE", raising=False)
    index = tmp_path / "index"
    for name, records in (("hr", small_corpus_records[:2]), ("legal", small_corpus_records[2:4])):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        assert run("ingest", path, "--index", index, "--collection", name, "-q").exit_code == 0
    public = tmp_path / "public.jsonl"
    public.write_text(json.dumps(small_corpus_records[4]) + "\n", encoding="utf-8")
    assert run("ingest", public, "--index", index, "-q").exit_code == 0  # the default collection
    assert run("ingest", public, "--index", index, "--collection", "bad name!").exit_code == 2

    for user in ("ann", "bob"):
        assert run("users", "add", user, "--index", index).exit_code == 0
    assert run("users", "grant", "ann", "--read", "hr", "--index", index).exit_code == 0
    assert run("groups", "add", "lawyers", "--index", index).exit_code == 0
    assert run("groups", "member", "lawyers", "bob", "--index", index).exit_code == 0
    granted = run("users", "grant", "lawyers", "--group", "--write", "legal", "--index", index)
    assert granted.exit_code == 0, granted.output
    listed = run("users", "grants", "--index", index, "--json")
    assert [json.loads(line)["name"] for line in listed.stdout.splitlines()] == ["lawyers", "ann"]
    assert "lawyers\tbob" in run("groups", "list", "--index", index).stdout

    query = ["search", "vaccines black holes sourdough photosynthesis volcanoes", "--index", index, "--json"]
    everything = titles(run(*query, "-k", "50"))  # the CLI: the administrator
    assert {"How vaccines work", "Sourdough baking", "Volcanic eruptions"} <= everything
    ann = titles(run(*query, "-k", "50", "--as", "ann"))
    assert ann == {"How vaccines work", "Black holes", "Volcanic eruptions"}, ann
    bob = titles(run(*query, "-k", "50", "--as", "bob"))
    assert bob == {"Sourdough baking", "Photosynthesis", "Volcanic eruptions"}, bob
    assert run("show", "How vaccines work", "--index", index, "--as", "bob").exit_code == 1
    assert run("show", "How vaccines work", "--index", index, "--as", "ann").exit_code == 0

    assert (
        run("users", "revoke-grant", "lawyers", "--group", "--write", "legal", "--index", index).exit_code
        == 0
    )
    assert titles(run(*query, "-k", "50", "--as", "bob")) == {"Volcanic eruptions"}
    assert run("users", "revoke-grant", "ann", "--read", "legal", "--index", index).exit_code == 2
    events = [json.loads(line) for line in run("audit", "--index", index, "--json").stdout.splitlines()]
    actions = [e["action"] for e in events]
    assert actions.count("grant.add") == 2 and actions.count("grant.revoke") == 1, actions
    assert {"group.add", "group.member"} <= set(actions)
    assert any(e["action"] == "ingest" and e.get("collection") == "hr" for e in events)


def test_an_ask_with_docs_logs_its_ingest_as_the_ingest_command_does(
    tmp_path: Path, small_corpus_records: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CITEWISE_STORE", raising=False)
    index = tmp_path / "index"
    notes, more = tmp_path / "notes.jsonl", tmp_path / "more.jsonl"
    notes.write_text("".join(json.dumps(r) + "\n" for r in small_corpus_records[:3]), encoding="utf-8")
    more.write_text(json.dumps(small_corpus_records[3]) + "\n", encoding="utf-8")
    for _ in range(2):  # the second ingests nothing: unchanged files are not logged, as by `ingest`
        asked = run("ask", "How do vaccines work?", "--docs", notes, "--index", index, "--json")
        assert asked.exit_code == 0, asked.output
    assert run("ingest", more, "--index", index, "-q").exit_code == 0
    events = [json.loads(line) for line in run("audit", "--index", index, "--json").stdout.splitlines()]
    by_ask, by_ingest = [e for e in events if e["action"] == "ingest"]
    assert {key: by_ask[key] for key in by_ask if key != "at"} == {
        "user": "local",
        "action": "ingest",
        "paths": [str(notes.resolve())],
        "via": "cli",
        "files": 1,
        "documents_added": 3,
        "documents_removed": 0,
    }
    assert set(by_ask) == set(by_ingest) and by_ingest["paths"] == [str(more.resolve())]
