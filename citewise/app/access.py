"""Who may come in: users and their API tokens, the audit log, and who a request to a server is.

One database holds both, beside the index it guards: the shared tier's PostgreSQL when a run names a store
(`--store`, CITEWISE_STORE), else `access.sqlite3` in the local index folder. Each server of the index (every
`api` replica, the page, a served graph) reads the same rows, so a token revoked anywhere is refused by all
of them at their next request: tokens are looked up at every request, never cached.

A token is shown once, when it is made (`citewise users add NAME`); only its SHA-256 is stored, so the
database leaks no way in. The audit log is append-only (triggers refuse UPDATE and DELETE) and holds who did
what, never a token or an Authorization header.

A server's `Gate` decides who a request is: a valid bearer token's user; else, when the client is one of
the operator's trusted proxies, the user its header names (single sign-on); else, on a loopback address,
the one local user ("local"), as before users existed. Beyond loopback a server without a way in refuses to
start (`require_login`).

What a user may read and write: documents belong to collections (`citewise ingest --collection NAME`), and
users and groups are granted read or write on them (`citewise users grant`, `citewise groups`); write
grants read too. `collections_of` is what a user's searches may see, handed to the run by the way in (the
API, the page, a served graph); the local user (loopback without logins, and the CLI on this machine) is
the administrator and sees every collection. Grants, groups and their members are recorded in the audit log.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import re
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from citewise.index.records import DEFAULT_COLLECTION

LOCAL_USER = "local"
"""The one user of a loopback server without logins, and the owner of threads from before owners."""

ACCESS_FILE = "access.sqlite3"
"""The local tier's access database, in the index folder."""

USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@\-]{0,63}")
"""What a user name may be (an e-mail address will do, as a proxy's header often carries one)."""

TOKEN_BYTES = 32
"""Random bytes in a token (`secrets.token_urlsafe`: 43 characters)."""

SECRET_KEYS = frozenset({"token", "authorization", "password", "secret", "cookie"})
"""Keys an audit record may never carry (a caller's mistake is refused, not written)."""

POSTGRES = ("postgresql://", "postgres://")

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS citewise_users (name TEXT PRIMARY KEY, token_sha256 TEXT NOT NULL UNIQUE, "
    "created TEXT NOT NULL, revoked TEXT)",
    "CREATE TABLE IF NOT EXISTS citewise_audit (id {serial} PRIMARY KEY, at TEXT NOT NULL, "
    "user_name TEXT NOT NULL, action TEXT NOT NULL, detail TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS citewise_audit_at ON citewise_audit (at)",
    "CREATE TABLE IF NOT EXISTS citewise_groups (name TEXT PRIMARY KEY, created TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS citewise_members (group_name TEXT NOT NULL, user_name TEXT NOT NULL, "
    "PRIMARY KEY (group_name, user_name))",
    "CREATE TABLE IF NOT EXISTS citewise_grants (principal TEXT NOT NULL, collection TEXT NOT NULL, "
    "access TEXT NOT NULL, granted TEXT NOT NULL, PRIMARY KEY (principal, collection, access))",
)
ACCESS = ("read", "write")
"""What a grant gives on a collection (write: ingest and remove there, and read it)."""
SQLITE_APPEND_ONLY = (
    "CREATE TRIGGER IF NOT EXISTS citewise_audit_no_update BEFORE UPDATE ON citewise_audit "
    "BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END",
    "CREATE TRIGGER IF NOT EXISTS citewise_audit_no_delete BEFORE DELETE ON citewise_audit "
    "BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END",
)
POSTGRES_APPEND_ONLY = (
    "CREATE OR REPLACE FUNCTION citewise_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$",
    "DROP TRIGGER IF EXISTS citewise_audit_append_only ON citewise_audit",
    "CREATE TRIGGER citewise_audit_append_only BEFORE UPDATE OR DELETE ON citewise_audit "
    "FOR EACH STATEMENT EXECUTE FUNCTION citewise_audit_append_only()",
)
SETUP_LOCK = "citewise.access.setup"
"""The advisory lock the PostgreSQL set-up holds (replicas starting together set it up one at a time)."""


class AccessError(ValueError):
    """A user or token request that cannot be done (said in one line)."""


def new_token() -> str:
    """A fresh API token: 32 random bytes, URL-safe."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    """What is stored of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def now() -> str:
    """The time now, as the audit log and the users table write it (ISO 8601, UTC, microseconds)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def as_utc(text: str) -> str:
    """An ISO 8601 time (a date alone is its midnight; no zone is UTC) as stored times are written.

    Raises:
        AccessError: not an ISO 8601 time.
    """
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as error:
        raise AccessError(
            f"{text!r} is not an ISO 8601 time such as 2026-03-01 or 2026-03-01T09:30"
        ) from error
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class User:
    """A user as `citewise users list` shows them (never their token)."""

    name: str
    created: str
    revoked: str | None

    def as_dict(self) -> dict[str, Any]:
        """The user as JSON."""
        return {"name": self.name, "created": self.created, "revoked": self.revoked}


class AccessStore:
    """The users table and the audit log of one index, in SQLite (local tier) or PostgreSQL (shared tier)."""

    def __init__(self, where: str | Path) -> None:
        """The access database at `where`: a postgresql:// URL, or a SQLite file (made with its folder).

        Raises:
            AccessError: the database cannot be opened or set up.
        """
        self.where = str(where)
        self.postgres = self.where.startswith(POSTGRES)
        self._lock = threading.Lock()
        self._connection: Any = None
        try:
            self._set_up()
        except (sqlite3.Error, OSError) as error:
            raise AccessError(f"cannot open the access database {self.where}: {error}") from error

    def __repr__(self) -> str:
        from citewise.app.memory import shown_setting

        return f"AccessStore({shown_setting(self.where)!r})"

    # the connection ---------------------------------------------------------------------------------------
    def _connect(self) -> Any:
        if self.postgres:
            import psycopg

            try:
                return psycopg.connect(self.where, autocommit=True)
            except psycopg.Error as error:
                from citewise.app.memory import shown_setting

                first = (str(error).strip().splitlines() or [type(error).__name__])[0]
                raise AccessError(
                    f"cannot reach the access database {shown_setting(self.where)}: {first}"
                ) from error
        path = Path(self.where)
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        return connection

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        """A cursor on the store's one connection, one caller at a time (autocommit: every read is fresh).

        A PostgreSQL connection that broke (a restarted server) is dropped and made again at the next call.
        """
        with self._lock:
            if self._connection is None:
                self._connection = self._connect()
            try:
                cursor = self._connection.cursor()
                try:
                    yield cursor
                finally:
                    cursor.close()
            except Exception as error:
                if self.postgres and self._connection.closed:
                    self._connection = None
                if type(error).__module__.startswith("psycopg"):  # said in one line, as SQLite's errors are
                    raise AccessError(_database_error(error, self.where)) from error
                raise

    def _sql(self, statement: str) -> str:
        return statement if self.postgres else statement.replace("%s", "?")

    def _set_up(self) -> None:
        serial = "BIGSERIAL" if self.postgres else "INTEGER"
        statements = [s.format(serial=serial) for s in SCHEMA]
        with self._cursor() as cursor:
            if self.postgres:
                cursor.execute("SELECT to_regclass('citewise_grants') IS NOT NULL")
                if cursor.fetchone()[0]:
                    return  # set up already: nothing written (a hot standby only reads)
                cursor.execute("SELECT pg_advisory_lock(hashtext(%s))", [SETUP_LOCK])
                try:
                    for statement in [*statements, *POSTGRES_APPEND_ONLY]:
                        cursor.execute(statement)
                finally:
                    cursor.execute("SELECT pg_advisory_unlock(hashtext(%s))", [SETUP_LOCK])
            else:
                for statement in [*statements, *SQLITE_APPEND_ONLY]:
                    cursor.execute(statement)

    def close(self) -> None:
        """Close the connection (the next call opens another)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    # users ------------------------------------------------------------------------------------------------
    def add_user(self, name: str, by: str = LOCAL_USER) -> str:
        """Make user `name` (or give a revoked one a new token) and return their token, the only copy.

        `by` is who did it, for the audit log.

        Raises:
            AccessError: a bad name, or a user of that name who still has a token.
        """
        if not USER_NAME.fullmatch(name) or name == LOCAL_USER:
            raise AccessError(
                f"a user name is 1-64 letters, digits, '_', '.', '@' or '-' (not {LOCAL_USER!r}): "
                f"not {name!r}"
            )
        token = new_token()
        with self._cursor() as cursor:
            cursor.execute(
                self._sql(
                    "INSERT INTO citewise_users (name, token_sha256, created) VALUES (%s, %s, %s) "
                    "ON CONFLICT (name) DO UPDATE SET token_sha256 = excluded.token_sha256, "
                    "created = excluded.created, revoked = NULL WHERE citewise_users.revoked IS NOT NULL"
                ),
                [name, token_hash(token), now()],
            )
            if cursor.rowcount == 0:
                raise AccessError(f"user {name!r} has a token already: `citewise users revoke {name}` first")
        self.record("user.add", by, {"name": name})
        return token

    def revoke_user(self, name: str, by: str = LOCAL_USER) -> None:
        """Revoke `name`'s token: every server refuses it from its next request (`by` did it).

        Raises:
            AccessError: no user of that name with a token.
        """
        with self._cursor() as cursor:
            cursor.execute(
                self._sql("UPDATE citewise_users SET revoked = %s WHERE name = %s AND revoked IS NULL"),
                [now(), name],
            )
            if cursor.rowcount == 0:
                raise AccessError(f"no user {name!r} with a token to revoke (`citewise users list`)")
        self.record("user.revoke", by, {"name": name})

    def users(self) -> list[User]:
        """Every user, revoked ones too, by name."""
        with self._cursor() as cursor:
            cursor.execute("SELECT name, created, revoked FROM citewise_users ORDER BY name")
            return [User(*row) for row in cursor.fetchall()]

    def has_users(self) -> bool:
        """Whether any user holds a token that is not revoked."""
        with self._cursor() as cursor:
            cursor.execute("SELECT 1 FROM citewise_users WHERE revoked IS NULL LIMIT 1")
            return cursor.fetchone() is not None

    def active(self, name: str) -> bool:
        """Whether `name` holds a token that is not revoked (read afresh at every call)."""
        with self._cursor() as cursor:
            cursor.execute(
                self._sql("SELECT 1 FROM citewise_users WHERE name = %s AND revoked IS NULL"), [name]
            )
            return cursor.fetchone() is not None

    def user_of_token(self, token: str) -> str | None:
        """The user a token belongs to, None for an unknown or revoked one (read afresh at every call)."""
        wanted = token_hash(token)
        with self._cursor() as cursor:
            cursor.execute(
                self._sql(
                    "SELECT name, token_sha256 FROM citewise_users "
                    "WHERE token_sha256 = %s AND revoked IS NULL"
                ),
                [wanted],
            )
            row = cursor.fetchone()
        if row is None or not hmac.compare_digest(row[1], wanted):
            return None
        return str(row[0])

    # groups and grants ------------------------------------------------------------------------------------
    def add_group(self, name: str, by: str = LOCAL_USER) -> None:
        """Make group `name` (`by` did it).

        Raises:
            AccessError: a bad name, or a group of that name already.
        """
        if not USER_NAME.fullmatch(name):
            raise AccessError(f"a group name is 1-64 letters, digits, '_', '.', '@' or '-': not {name!r}")
        with self._cursor() as cursor:
            cursor.execute(
                self._sql("INSERT INTO citewise_groups VALUES (%s, %s) ON CONFLICT (name) DO NOTHING"),
                [name, now()],
            )
            if cursor.rowcount == 0:
                raise AccessError(f"group {name!r} exists already")
        self.record("group.add", by, {"group": name})

    def groups(self) -> dict[str, list[str]]:
        """Every group with its members, by name."""
        with self._cursor() as cursor:
            cursor.execute("SELECT name FROM citewise_groups ORDER BY name")
            found: dict[str, list[str]] = {row[0]: [] for row in cursor.fetchall()}
            cursor.execute(
                "SELECT group_name, user_name FROM citewise_members ORDER BY group_name, user_name"
            )
            for group, user in cursor.fetchall():
                found.setdefault(group, []).append(user)
        return found

    def set_member(self, group: str, user: str, member: bool = True, by: str = LOCAL_USER) -> None:
        """Put `user` in `group` (or take them out, `member=False`).

        Raises:
            AccessError: no such group, or a bad user name.
        """
        if not USER_NAME.fullmatch(user):
            raise AccessError(f"not a user name: {user!r}")
        with self._cursor() as cursor:
            cursor.execute(self._sql("SELECT 1 FROM citewise_groups WHERE name = %s"), [group])
            if cursor.fetchone() is None:
                raise AccessError(f"no group {group!r} (`citewise groups add {group}` first)")
            if member:
                cursor.execute(
                    self._sql("INSERT INTO citewise_members VALUES (%s, %s) ON CONFLICT DO NOTHING"),
                    [group, user],
                )
            else:
                cursor.execute(
                    self._sql("DELETE FROM citewise_members WHERE group_name = %s AND user_name = %s"),
                    [group, user],
                )
        self.record("group.member" if member else "group.remove", by, {"group": group, "name": user})

    def grant(
        self, principal: str, collection: str, access: str, *, group: bool = False, by: str = LOCAL_USER
    ) -> None:
        """Give user (or `group`) `principal` `access` ("read" or "write") on `collection`.

        Raises:
            AccessError: a bad name, collection or access.
        """
        self._grant_checks(principal, collection, access)
        with self._cursor() as cursor:
            cursor.execute(
                self._sql("INSERT INTO citewise_grants VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING"),
                [_principal(principal, group), collection, access, now()],
            )
        self.record("grant.add", by, _grant_detail(principal, collection, access, group))

    def revoke_grant(
        self, principal: str, collection: str, access: str, *, group: bool = False, by: str = LOCAL_USER
    ) -> None:
        """Take back a grant (at every server's next request: grants are read afresh at each).

        Raises:
            AccessError: no such grant.
        """
        self._grant_checks(principal, collection, access)
        with self._cursor() as cursor:
            cursor.execute(
                self._sql(
                    "DELETE FROM citewise_grants WHERE principal = %s AND collection = %s AND access = %s"
                ),
                [_principal(principal, group), collection, access],
            )
            if cursor.rowcount == 0:
                raise AccessError(
                    f"no {access} grant on {collection!r} to {principal!r} (`citewise users grants`)"
                )
        self.record("grant.revoke", by, _grant_detail(principal, collection, access, group))

    def grants(self) -> list[dict[str, str]]:
        """Every grant: who (user or group), which collection, what access, when."""
        with self._cursor() as cursor:
            cursor.execute(
                "SELECT principal, collection, access, granted FROM citewise_grants ORDER BY 1, 2, 3"
            )
            rows = cursor.fetchall()
        return [
            {
                "kind": principal.split(":", 1)[0],
                "name": principal.split(":", 1)[1],
                "collection": c,
                "access": a,
            }
            | {"granted": at}
            for principal, c, a, at in rows
        ]

    def collections_of(self, user: str, access: str = "read") -> tuple[str, ...] | None:
        """The collections `user` may read (or write), read afresh: None for the local user (every one).

        Every user reads the default collection (documents ingested without `--collection`, as before
        collections existed); a write grant gives read too; a group's grants are its members'.
        """
        if user == LOCAL_USER:
            return None
        wanted = ("read", "write") if access == "read" else ("write", "write")
        with self._cursor() as cursor:
            cursor.execute(self._sql("SELECT group_name FROM citewise_members WHERE user_name = %s"), [user])
            principals = [f"user:{user}", *(f"group:{row[0]}" for row in cursor.fetchall())]
            marks = ", ".join(["%s"] * len(principals))
            cursor.execute(
                self._sql(
                    f"SELECT DISTINCT collection FROM citewise_grants WHERE principal IN ({marks}) "
                    "AND access IN (%s, %s)"
                ),
                [*principals, *wanted],
            )
            found = {row[0] for row in cursor.fetchall()}
        return tuple(sorted(found | {DEFAULT_COLLECTION} if access == "read" else found))

    def may_write(self, user: str, collection: str) -> bool:
        """Whether `user` may ingest into and remove from `collection`."""
        writable = self.collections_of(user, "write")
        return writable is None or collection in writable

    def _grant_checks(self, principal: str, collection: str, access: str) -> None:
        from citewise.index.records import check_collection

        if access not in ACCESS:
            raise AccessError(f"access is read or write, not {access!r}")
        if not USER_NAME.fullmatch(principal):
            raise AccessError(f"not a user or group name: {principal!r}")
        try:
            check_collection(collection)
        except ValueError as error:
            raise AccessError(str(error)) from error

    # the audit log ----------------------------------------------------------------------------------------
    def record(self, action: str, user: str, detail: Mapping[str, Any]) -> None:
        """Append one event: `user` did `action`; `detail` says to what (JSON; never a secret).

        Raises:
            AccessError: `detail` holds a key that names a secret (a token, an Authorization header).
        """
        leaked = _secret_keys(detail)
        if leaked:
            raise AccessError(f"an audit record may not hold {sorted(leaked)}")
        hashes = sorted({token_hash(text) for text in _strings(detail)})
        with self._cursor() as cursor:
            if hashes:  # a user's token, pasted anywhere in it (a question, a title)
                marks = ", ".join(["%s"] * len(hashes))
                cursor.execute(
                    self._sql(f"SELECT 1 FROM citewise_users WHERE token_sha256 IN ({marks}) LIMIT 1"), hashes
                )
                if cursor.fetchone() is not None:
                    raise AccessError("an audit record may not hold an API token")
            cursor.execute(
                self._sql(
                    "INSERT INTO citewise_audit (at, user_name, action, detail) VALUES (%s, %s, %s, %s)"
                ),
                [now(), user, action, json.dumps(dict(detail), ensure_ascii=False, sort_keys=True)],
            )

    def events(
        self, user: str | None = None, since: str | None = None, until: str | None = None
    ) -> list[dict[str, Any]]:
        """The audit log, oldest first: every event, or `user`'s, at or after `since` and before `until`."""
        where, values = [], []
        if user is not None:
            where.append("user_name = %s")
            values.append(user)
        if since is not None:
            where.append("at >= %s")
            values.append(as_utc(since))
        if until is not None:
            where.append("at < %s")
            values.append(as_utc(until))
        statement = "SELECT at, user_name, action, detail FROM citewise_audit"
        if where:
            statement += " WHERE " + " AND ".join(where)
        with self._cursor() as cursor:
            cursor.execute(self._sql(statement + " ORDER BY id"), values)
            rows = cursor.fetchall()
        return [
            {"at": at, "user": name, "action": action}
            | _without(json.loads(detail), ("at", "user", "action"))
            for at, name, action, detail in rows
        ]


def ask_detail(thread_id: str | None, turn: Mapping[str, Any]) -> dict[str, Any]:
    """An ask as the audit log records it (the API's, a served graph's).

    The thread, the question, the route, the documents its answer cited (id, key, title; each once) and
    whether the run failed. `turn` holds the run's question, route, citations, references and error (the
    state's names; a citation's key, when it has none, is its primary reference's).
    """
    primary = (turn.get("references") or {}).get("primary") or []
    keys = {entry.get("doc_id"): entry.get("key", "") for entry in primary}  # a citation's source's own key
    cited = {}
    for c in turn.get("citations") or []:
        key = c.get("key") or keys.get(c["doc_id"], "")
        cited[c["doc_id"]] = {"doc_id": c["doc_id"], "key": key, "title": c["title"]}
    return {
        "thread_id": thread_id,
        "question": turn.get("question"),
        "route": turn.get("route"),
        "cited": list(cited.values()),
        "failed": bool(turn.get("error")),
    }


def change_detail(
    paths: Sequence[str | Path],
    via: str,
    report: Mapping[str, Any] | None = None,
    collection: str | None = None,
) -> dict[str, Any]:
    """An ingest or removal as the audit log records it (the command line's, a served graph's).

    The paths given (absolute), the way in (`via`: cli, langgraph), the collection named, and from `report`
    (an `IngestReport`'s fields) the files and the documents added and removed.
    """
    detail: dict[str, Any] = {"paths": [str(Path(path).expanduser().resolve()) for path in paths], "via": via}
    if collection is not None:
        detail["collection"] = collection
    if report is not None:
        detail |= {key: report.get(key, 0) for key in ("files", "documents_added", "documents_removed")}
    return detail


def _principal(name: str, group: bool) -> str:
    """How a grant names who it is to: "user:NAME" or "group:NAME"."""
    return f"{'group' if group else 'user'}:{name}"


def _grant_detail(principal: str, collection: str, access: str, group: bool) -> dict[str, str]:
    """A grant as the audit log records it."""
    return {"group" if group else "name": principal, "collection": collection, "access": access}


def _database_error(error: BaseException, where: str) -> str:
    """A PostgreSQL error of the access database in one line (a read-only one says where to write)."""
    from citewise.app.memory import shown_setting

    first = (str(error).strip().splitlines() or [type(error).__name__])[0]
    if type(error).__name__ == "ReadOnlySqlTransaction":
        return f"the access database {shown_setting(where)} is read-only (a hot standby?): {first}"
    return f"the access database {shown_setting(where)}: {first}"


def _without(detail: dict[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """`detail` without `keys` (an event's own fields come first and are never overwritten)."""
    return {key: value for key, value in detail.items() if key not in keys}


def _strings(detail: Any) -> set[str]:
    """Every string anywhere in `detail`, and each whitespace-separated word of it."""
    if isinstance(detail, str):
        return {detail, *detail.split()}
    if isinstance(detail, Mapping):
        return set().union(*(_strings(value) for value in detail.values())) if detail else set()
    if isinstance(detail, list | tuple):
        return set().union(*(_strings(item) for item in detail)) if detail else set()
    return set()


def _secret_keys(detail: Any) -> set[str]:
    """The keys anywhere in `detail` that name a secret."""
    if isinstance(detail, Mapping):
        found = {str(k) for k in detail if str(k).lower() in SECRET_KEYS}
        for value in detail.values():
            found |= _secret_keys(value)
        return found
    if isinstance(detail, list | tuple):
        return set().union(*(_secret_keys(item) for item in detail)) if detail else set()
    return set()


def access_location(index_dir: str | Path, store: str | None = None) -> str:
    """Where an index's users and audit log are: the shared store's database, else its folder's file."""
    if store and store.startswith(POSTGRES):
        return store
    return str(Path(index_dir).expanduser() / ACCESS_FILE)


def open_access(index_dir: str | Path, store: str | None = None) -> AccessStore:
    """The access database of the index a run names (see `access_location`).

    Raises:
        AccessError: it cannot be opened.
    """
    return AccessStore(access_location(index_dir, store))


# who a request is -----------------------------------------------------------------------------------------
def is_loopback(host: str | None) -> bool:
    """Whether a bind or client address is this machine's loopback (127.0.0.0/8, ::1, localhost)."""
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def proxy_networks(addresses: Sequence[str]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """The trusted proxies' addresses (`--trusted-proxy`: an address or a network such as 10.0.0.0/24).

    Raises:
        AccessError: one is not an address or a network.
    """
    networks = []
    for address in addresses:
        try:
            networks.append(ipaddress.ip_network(address.strip(), strict=False))
        except ValueError as error:
            raise AccessError(f"--trusted-proxy {address!r} is not an IP address or network") from error
    return tuple(networks)


@dataclass(frozen=True)
class Gate:
    """Who a server's requests are: a bearer token's user, a trusted proxy's header, or the local user."""

    store: AccessStore | None
    """Where tokens are looked up (None: no tokens are accepted)."""
    login_required: bool = False
    """Beyond loopback: a request that is none of the ways in is refused."""
    trusted_proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    """The client addresses whose `user_header` is believed."""
    user_header: str | None = None
    """The header a trusted proxy names its authenticated user in (e.g. X-Forwarded-User)."""
    local_user: str = field(default=LOCAL_USER)

    def trusts(self, client: str | None) -> bool:
        """Whether `client` is one of the trusted proxies."""
        if not client or not self.trusted_proxies:
            return False
        try:
            address = ipaddress.ip_address(client.strip("[]"))
        except ValueError:
            return False
        return any(address in network for network in self.trusted_proxies)

    def user_of(self, token: str | None, client: str | None, headers: Mapping[str, str]) -> str | None:
        """The user a request is, or None: refuse it (401).

        A token given is checked even on loopback (a wrong one is refused, never read as the local user).
        """
        if token is not None:
            return self.store.user_of_token(token) if self.store is not None else None
        if self.user_header and self.trusts(client):  # a trusted proxy names its user, or nobody is let in
            named = (headers.get(self.user_header.lower()) or "").strip()
            return named if USER_NAME.fullmatch(named) else None
        if not self.login_required:
            return self.local_user
        return None

    def user_of_login(self, name: str, token: str) -> bool:
        """Whether `token` is `name`'s (the page's login form: user name and token)."""
        return self.store is not None and self.store.user_of_token(token) == name

    def user_of_session(
        self, logged_in: str | None, client: str | None, headers: Mapping[str, str]
    ) -> str | None:
        """The user of a page's request: its login's user while their token holds, else as `user_of` says.

        A login is checked at every event, so a revoked token's session ends at its next one.
        """
        if logged_in:
            return logged_in if self.store is not None and self.store.active(logged_in) else None
        return self.user_of(None, client, headers)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer TOKEN` header; None for no header or another scheme."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


SETUP_HINT = (
    "add a user with `citewise users add NAME` (clients send `Authorization: Bearer TOKEN`), or name a "
    "single sign-on proxy with --trusted-proxy ADDR --user-header NAME; or bind 127.0.0.1"
)


def require_login(
    host: str,
    what: str,
    store: AccessStore,
    trusted_proxies: Sequence[str] = (),
    user_header: str | None = None,
    login: bool = False,
) -> Gate:
    """The gate of a server binding `host`: beyond loopback a login is required, and a way in must exist.

    `login` requires one on loopback too (`--login`: a machine several people use).

    Raises:
        AccessError: `host` is not loopback (or `login`) and no user holds a token and no proxy is trusted
            (one line saying how to set one up), or only half of the proxy settings is given.
    """
    networks = proxy_networks(trusted_proxies)
    if bool(networks) != bool(user_header):
        raise AccessError("single sign-on needs both --trusted-proxy ADDR and --user-header NAME")
    if is_loopback(host) and not login:
        return Gate(store, login_required=False, trusted_proxies=networks, user_header=user_header)
    if not networks and not store.has_users():
        raise AccessError(f"{what} on {host} needs a login and none is set up: {SETUP_HINT}")
    return Gate(store, login_required=True, trusted_proxies=networks, user_header=user_header)
