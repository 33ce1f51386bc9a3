"""Users, tokens, the audit log and the gate (citewise.app.access), on SQLite; no server, no model."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from citewise.app.access import (
    LOCAL_USER,
    AccessError,
    AccessStore,
    Gate,
    bearer_token,
    is_loopback,
    open_access,
    proxy_networks,
    require_login,
    token_hash,
)


@pytest.fixture
def access(tmp_path: Path) -> AccessStore:
    return open_access(tmp_path / "index")


def test_a_token_is_shown_once_and_only_its_hash_is_stored(access: AccessStore, tmp_path: Path) -> None:
    token = access.add_user("alice")
    assert access.user_of_token(token) == "alice"
    stored = (tmp_path / "index" / "access.sqlite3").read_bytes()
    wal = tmp_path / "index" / "access.sqlite3-wal"
    stored += wal.read_bytes() if wal.exists() else b""
    assert token.encode() not in stored
    assert token_hash(token).encode() in stored


def test_a_revoked_token_is_refused_at_the_next_lookup_by_every_holder(tmp_path: Path) -> None:
    one, other = open_access(tmp_path / "index"), open_access(tmp_path / "index")  # two replicas
    token = one.add_user("alice")
    assert other.user_of_token(token) == "alice"
    one.revoke_user("alice")
    assert other.user_of_token(token) is None
    assert one.user_of_token(token) is None
    assert [u.name for u in other.users()] == ["alice"] and other.users()[0].revoked


def test_a_user_with_a_token_is_not_made_twice_and_a_revoked_one_gets_a_new_token(
    access: AccessStore,
) -> None:
    first = access.add_user("alice")
    with pytest.raises(AccessError, match="revoke"):
        access.add_user("alice")
    access.revoke_user("alice")
    second = access.add_user("alice")
    assert access.user_of_token(first) is None and access.user_of_token(second) == "alice"
    with pytest.raises(AccessError):
        access.revoke_user("nobody")
    for bad in ("", "a b", "../x", LOCAL_USER):
        with pytest.raises(AccessError):
            access.add_user(bad)


def test_unknown_tokens_are_refused(access: AccessStore) -> None:
    access.add_user("alice")
    assert access.user_of_token("") is None
    assert access.user_of_token("not-a-token") is None


def test_the_audit_log_is_append_only_filtered_and_keeps_no_secret(
    access: AccessStore, tmp_path: Path
) -> None:
    token = access.add_user("alice")
    access.record(
        "ask", "alice", {"question": "Why?", "cited": [{"doc_id": "d1", "key": "k1", "title": "T"}]}
    )
    access.record("ingest", "bob", {"paths": ["/x.txt"]})
    with pytest.raises(AccessError, match="token"):
        access.record("ask", "alice", {"nested": {"token": token}})
    with pytest.raises(AccessError, match="Authorization"):
        access.record("ask", "alice", {"Authorization": "Bearer x"})
    with pytest.raises(AccessError, match="token"):  # a live token under any key, at any depth
        access.record("ask", "alice", {"question": "hi", "cited": [{"title": token}]})
    events = access.events()
    assert [e["action"] for e in events] == ["user.add", "ask", "ingest"]
    assert events[0]["user"] == LOCAL_USER and events[0]["user"] != "alice"  # the CLI's user added alice
    assert [e["action"] for e in access.events(user="alice")] == ["ask"]
    assert access.events(since="2999-01-01") == []
    assert len(access.events(until="2999-01-01")) == 3
    assert access.events(since=events[1]["at"], until=events[2]["at"]) == [events[1]]
    with pytest.raises(AccessError, match="ISO 8601"):
        access.events(since="yesterday")
    assert token not in repr(access.events())
    database = sqlite3.connect(tmp_path / "index" / "access.sqlite3")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        database.execute("UPDATE citewise_audit SET user_name = 'mallory'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        database.execute("DELETE FROM citewise_audit")


def test_loopback_and_bearer_parsing() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert is_loopback("127.0.0.2")
    assert not is_loopback("0.0.0.0") and not is_loopback("") and not is_loopback("10.0.0.1")
    assert bearer_token("Bearer abc") == "abc" and bearer_token("bearer  abc ") == "abc"
    assert (
        bearer_token("Basic abc") is None and bearer_token(None) is None and bearer_token("Bearer ") is None
    )


def test_beyond_loopback_a_server_without_a_way_in_is_refused(access: AccessStore) -> None:
    assert not require_login("127.0.0.1", "the API", access).login_required
    with pytest.raises(AccessError, match="citewise users add NAME"):
        require_login("0.0.0.0", "the API", access)
    with pytest.raises(AccessError, match="both"):
        require_login("0.0.0.0", "the API", access, user_header="X-User")
    assert require_login("0.0.0.0", "the API", access, ["10.0.0.1"], "X-User").login_required
    access.add_user("alice")
    assert require_login("0.0.0.0", "the API", access).login_required


def test_the_gate_believes_a_user_header_only_from_a_trusted_proxy(access: AccessStore) -> None:
    token = access.add_user("alice")
    gate = Gate(
        access, login_required=True, trusted_proxies=proxy_networks(["10.0.0.1"]), user_header="X-User"
    )
    named = {"x-user": "carol"}
    assert gate.user_of(None, "10.0.0.1", named) == "carol"
    assert gate.user_of(None, "10.0.0.2", named) is None  # the header from anyone else is ignored
    assert gate.user_of(None, "10.0.0.1", {}) is None  # a trusted proxy that names nobody lets nobody in
    assert gate.user_of(None, "10.0.0.1", {"x-user": "bad name"}) is None
    assert gate.user_of(token, "10.0.0.2", {}) == "alice"
    assert gate.user_of("wrong", "10.0.0.1", named) is None  # a token given is checked, never bypassed
    assert gate.user_of(None, "10.0.0.2", {}) is None
    loopback = Gate(access)
    assert loopback.user_of(None, "127.0.0.1", {}) == LOCAL_USER
    assert loopback.user_of("wrong", "127.0.0.1", {}) is None


def test_the_page_asks_for_a_login_only_beyond_loopback_without_a_proxy(access: AccessStore) -> None:
    from citewise.app.web.page import login_check

    token = access.add_user("alice")
    assert login_check(None) is None
    assert login_check(require_login("127.0.0.1", "the page", access)) is None
    assert login_check(require_login("0.0.0.0", "the page", access, ["10.0.0.1"], "X-User")) is None
    check = login_check(require_login("0.0.0.0", "the page", access))
    assert check is not None
    assert check("alice", token) and not check("bob", token) and not check("alice", "guess")
    gate = require_login("0.0.0.0", "the page", access)
    assert gate.user_of_session("alice", "10.0.0.9", {}) == "alice"
    access.revoke_user("alice")
    assert not check("alice", token)
    assert gate.user_of_session("alice", "10.0.0.9", {}) is None  # a revoked login ends at its next event


def test_grants_to_users_and_groups_say_what_each_reads_and_writes(tmp_path: Path) -> None:
    access, replica = open_access(tmp_path / "index"), open_access(tmp_path / "index")
    assert access.collections_of(LOCAL_USER) is None and access.may_write(LOCAL_USER, "anything")
    assert access.collections_of("nobody") == ("default",)  # the default collection is everyone's
    assert access.collections_of("nobody", "write") == ()
    access.grant("ann", "hr", "read")
    access.grant("ann", "drafts", "write")  # write gives read
    access.add_group("legal")
    access.set_member("legal", "ann")
    access.grant("legal", "contracts", "read", group=True)
    assert replica.collections_of("ann") == ("contracts", "default", "drafts", "hr")  # read afresh, anywhere
    assert replica.collections_of("ann", "write") == ("drafts",)
    assert replica.may_write("ann", "drafts") and not replica.may_write("ann", "hr")
    assert access.groups() == {"legal": ["ann"]}
    access.set_member("legal", "ann", member=False)
    access.revoke_grant("ann", "hr", "read")
    assert replica.collections_of("ann") == ("default", "drafts")
    with pytest.raises(AccessError, match="no read grant"):
        access.revoke_grant("ann", "hr", "read")
    with pytest.raises(AccessError, match="collection name"):
        access.grant("ann", "bad name", "read")
    with pytest.raises(AccessError, match="read or write"):
        access.grant("ann", "hr", "admin")
    with pytest.raises(AccessError, match="no group"):
        access.set_member("nope", "ann")
    with pytest.raises(AccessError, match="exists already"):
        access.add_group("legal")
    assert [row["name"] for row in access.grants()] == ["legal", "ann"]
    actions = [event["action"] for event in access.events()]
    assert actions == [
        "grant.add", "grant.add", "group.add", "group.member", "grant.add", "group.remove", "grant.revoke",
    ]  # fmt: skip
    first = access.events()[0] | {"at": ""}
    assert first == {"at": "", "user": LOCAL_USER, "action": "grant.add"} | {
        "name": "ann", "collection": "hr", "access": "read"
    }  # fmt: skip
