"""The JSON API's users and threads: logins beyond loopback, threads that belong to their user, the audit log.

The app of `citewise api` (FastAPI's TestClient, its client given an address beyond loopback) over a real
index of the bundled sample in local mode; the refusal to start runs the real command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from citewise.app.access import AccessStore, Gate, open_access, proxy_networks, require_login
from citewise.app.api import build_app
from citewise.context import Context
from citewise.core.resources import Resources

pytestmark = pytest.mark.integration

REMOTE = ("203.0.113.7", 40000)
"""A client beyond loopback (TEST-NET-3)."""
PROXY = ("198.51.100.2", 40000)
"""The trusted single sign-on proxy's address (TEST-NET-2)."""
QUESTION = "Which telescopes were used to observe the transits of GJ 486b?"


@pytest.fixture(scope="module")
def access(sample_index: Path) -> AccessStore:
    return open_access(sample_index)


@pytest.fixture(scope="module")
def tokens(access: AccessStore) -> dict[str, str]:
    return {name: access.add_user(name) for name in ("alice", "bob", "dora")}


@pytest.fixture(scope="module")
def api(
    sample_index: Path, resources: Resources, access: AccessStore, tokens: dict[str, str]
) -> Iterator[TestClient]:
    """The API as `citewise api --host 0.0.0.0` serves it, asked from a remote address."""
    context = Context(index_dir=str(sample_index), resources=resources)
    gate = require_login("0.0.0.0", "the API", access)
    threads = sample_index.parent / "threads.sqlite"
    with TestClient(build_app(context, str(threads), gate=gate, audit=access), client=REMOTE) as client:
        yield client


def as_user(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_without_a_token_every_thread_route_is_refused(api: TestClient) -> None:
    for method, path in [
        ("get", "/threads"),
        ("post", "/threads"),
        ("get", "/threads/t1"),
        ("delete", "/threads/t1"),
        ("post", "/threads/t1/resume"),
    ]:
        reply = api.request(method, path)
        assert reply.status_code == 401, (method, path, reply.text)
        assert reply.headers["www-authenticate"] == "Bearer"
    assert api.post("/threads/t1/ask", json={"question": QUESTION}).status_code == 401
    assert api.get("/threads", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert api.get("/threads", headers={"Authorization": "Basic YWxpY2U6eA=="}).status_code == 401
    assert api.get("/health").status_code == 200  # the proxy's health check needs no login


def test_a_valid_token_asks_and_the_reply_cites_sources_by_key_and_title(
    api: TestClient, tokens: dict[str, str]
) -> None:
    reply = api.post("/threads/alice-1/ask", json={"question": QUESTION}, headers=as_user(tokens["alice"]))
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["thread_id"] == "alice-1" and body["citations"]
    assert body["route_reason"].startswith("local rule")  # mode auto, as `citewise ask`: the rule decided
    for citation in body["citations"]:
        assert citation["key"] == "2212.11816"
        assert citation["title"].startswith("High-Resolution Transmission Spectroscopy")


def test_another_user_cannot_read_resume_continue_list_or_delete_a_thread(
    api: TestClient, tokens: dict[str, str]
) -> None:
    alice, bob = as_user(tokens["alice"]), as_user(tokens["bob"])
    made = api.post("/threads", headers=alice)
    assert made.status_code == 201
    thread = made.json()["thread_id"]
    assert len(thread) >= 20
    assert api.post(f"/threads/{thread}/ask", json={"question": QUESTION}, headers=alice).status_code == 200
    before = api.get(f"/threads/{thread}", headers=alice).json()
    assert [m["role"] for m in before["messages"]] == ["user", "assistant"]

    probes = [
        api.get(f"/threads/{thread}", headers=bob),
        api.post(f"/threads/{thread}/resume", headers=bob),
        api.post(f"/threads/{thread}/ask", json={"question": "And its radius?"}, headers=bob),
        api.delete(f"/threads/{thread}", headers=bob),
    ]
    assert [p.status_code for p in probes] == [404, 404, 404, 404]
    unknown = api.get("/threads/no-such-thread", headers=bob)
    assert {p.json()["detail"].split()[0] for p in probes} == {unknown.json()["detail"].split()[0]} == {"no"}
    assert thread not in {t["thread_id"] for t in api.get("/threads", headers=bob).json()}
    assert api.get(f"/threads/{thread}", headers=alice).json() == before  # unchanged
    assert thread in {t["thread_id"] for t in api.get("/threads", headers=alice).json()}

    assert api.delete(f"/threads/{thread}", headers=alice).status_code == 204
    assert api.get(f"/threads/{thread}", headers=alice).status_code == 404
    assert thread not in {t["thread_id"] for t in api.get("/threads", headers=alice).json()}


def test_a_client_chosen_id_of_another_user_s_thread_cannot_be_taken_over(
    api: TestClient, tokens: dict[str, str]
) -> None:
    alice, bob = as_user(tokens["alice"]), as_user(tokens["bob"])
    assert api.post("/threads/shared-name/ask", json={"question": QUESTION}, headers=bob).status_code == 200
    taken = api.post("/threads/shared-name/ask", json={"question": "And its radius?"}, headers=alice)
    assert taken.status_code == 404
    assert len(api.get("/threads/shared-name", headers=bob).json()["messages"]) == 2


def test_a_revoked_token_is_refused_at_once_by_every_replica(
    sample_index: Path, resources: Resources, api: TestClient, access: AccessStore, tokens: dict[str, str]
) -> None:
    context = Context(index_dir=str(sample_index), resources=resources)
    other_replica = build_app(
        context, str(sample_index.parent / "threads.sqlite"), gate=require_login("0.0.0.0", "the API", access)
    )
    dora = as_user(tokens["dora"])
    with TestClient(other_replica, client=REMOTE) as second:
        assert api.get("/threads", headers=dora).status_code == 200
        assert second.get("/threads", headers=dora).status_code == 200
        open_access(sample_index).revoke_user("dora")  # as `citewise users revoke dora` does, elsewhere
        assert api.get("/threads", headers=dora).status_code == 401
        assert second.get("/threads", headers=dora).status_code == 401


def test_the_single_sign_on_header_is_believed_only_from_the_trusted_proxy(
    sample_index: Path, resources: Resources, access: AccessStore
) -> None:
    context = Context(index_dir=str(sample_index), resources=resources)
    gate = Gate(access, login_required=True, trusted_proxies=proxy_networks([PROXY[0]]), user_header="X-User")
    app = build_app(context, str(sample_index.parent / "threads-sso.sqlite"), gate=gate)
    named = {"X-User": "carol"}
    with TestClient(app, client=PROXY) as proxy, TestClient(app, client=REMOTE) as direct:
        made = proxy.post("/threads", headers=named)
        assert made.status_code == 201
        thread = made.json()["thread_id"]
        assert proxy.get(f"/threads/{thread}", headers=named).status_code == 200
        assert proxy.get(f"/threads/{thread}", headers={"X-User": "mallory"}).status_code == 404
        assert proxy.get("/threads").status_code == 401  # the proxy named nobody
        assert direct.get(f"/threads/{thread}", headers=named).status_code == 401
        assert direct.get("/threads", headers=named).status_code == 401


def test_on_loopback_the_local_user_needs_no_login(sample_index: Path, resources: Resources) -> None:
    context = Context(index_dir=str(sample_index), resources=resources)
    gate = require_login("127.0.0.1", "the API", open_access(sample_index))
    with TestClient(
        build_app(context, str(sample_index.parent / "threads-local.sqlite"), gate=gate)
    ) as local:
        made = local.post("/threads")
        assert made.status_code == 201
        assert local.get(f"/threads/{made.json()['thread_id']}").json()["messages"] == []


def test_the_audit_log_holds_asks_citations_deletions_and_user_changes_and_no_token(
    api: TestClient, access: AccessStore, tokens: dict[str, str]
) -> None:
    alice = as_user(tokens["alice"])
    api.post("/threads/audited/ask", json={"question": QUESTION}, headers=alice)
    api.delete("/threads/audited", headers=alice)
    events = access.events()
    asks = [e for e in events if e["action"] == "ask" and e["thread_id"] == "audited"]
    assert asks and asks[0]["user"] == "alice" and asks[0]["question"] == QUESTION
    assert asks[0]["cited"][0]["key"] == "2212.11816" and asks[0]["cited"][0]["title"]
    assert any(e["action"] == "thread.delete" and e["thread_id"] == "audited" for e in events)
    assert {e["name"] for e in events if e["action"] == "user.add"} >= {"alice", "bob", "dora"}
    dump = json.dumps(access.events())
    for token in tokens.values():
        assert token not in dump
    assert "Bearer" not in dump


def test_the_openapi_schema_describes_every_field_of_every_reply(api: TestClient) -> None:
    schema = api.get("/openapi.json").json()
    assert (
        "/threads/{thread_id}/ask" in schema["paths"] and "delete" in schema["paths"]["/threads/{thread_id}"]
    )
    components = schema["components"]["schemas"]
    for name in ("Reply", "CitedSource", "EvidenceRecord", "Thread", "ThreadListed", "Ask"):
        properties = components[name]["properties"]
        undescribed = [field for field, spec in properties.items() if not spec.get("description")]
        assert not undescribed, (name, undescribed)
    assert components["Ask"]["properties"]["mode"]["default"] == "auto"
    assert components["CitedSource"]["required"] == ["marker", "chunk_id", "doc_id", "key", "title", "text"]
    assert "HTTPBearer" in schema["components"]["securitySchemes"]


def test_api_beyond_loopback_without_a_way_in_refuses_to_start(tmp_path: Path) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "citewise.app.cli",
            "api",
            "--host",
            "0.0.0.0",
            "--index",
            str(tmp_path / "i"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ | {"CITEWISE_STORE": ""},
    )
    assert done.returncode == 2, done.stderr
    assert time.monotonic() - started < 30
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "citewise users add NAME" in lines[0] and "0.0.0.0" in lines[0]
    serve = subprocess.run(
        [
            sys.executable,
            "-m",
            "citewise.app.cli",
            "serve",
            "--host",
            "0.0.0.0",
            "--index",
            str(tmp_path / "i"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert serve.returncode == 2 and "citewise users add NAME" in serve.stderr
