"""Who a served graph's requests are: LangGraph's auth hook, with the same users and tokens as `citewise api`.

langgraph.json names `auth` here (with `disable_studio_auth`, so that every request, Studio's too, comes
through `authenticate`). A request with `Authorization: Bearer TOKEN` is the token's user (looked up in the
served index's access database at every request, so a revoked token is refused at once); a request from a
trusted proxy (CITEWISE_TRUSTED_PROXIES, comma-separated addresses, with CITEWISE_USER_HEADER) is the user its
header names; any other request from this machine's loopback is the local user, so `langgraph dev` and
Studio in a browser on the same machine work as before; anything else is refused (401).

Threads, runs, crons and assistants a user makes carry `owner` in their metadata, and every read, search,
update, delete and run is filtered to the caller's own (LangGraph answers 404 for another's thread). The
graphs' own assistants (from langgraph.json, with no owner) are readable by everyone. Store items live under
the user's namespace.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from functools import cache
from typing import Any

from langgraph_sdk import Auth

from citewise.app.access import Gate, bearer_token, is_loopback, open_access, proxy_networks
from citewise.deployment import DEFAULT_INDEX_DIR

auth = Auth()


@cache
def served_gate() -> Gate:
    """The gate of this server: the access database of the index it serves, the proxies it trusts."""
    store = open_access(
        os.environ.get("CITEWISE_INDEX") or DEFAULT_INDEX_DIR, os.environ.get("CITEWISE_STORE")
    )
    proxies = [p for p in os.environ.get("CITEWISE_TRUSTED_PROXIES", "").split(",") if p.strip()]
    header = os.environ.get("CITEWISE_USER_HEADER") or None
    return Gate(store, login_required=True, trusted_proxies=proxy_networks(proxies), user_header=header)


def request_user(authorization: str | None, client: str | None, headers: Mapping[str, str]) -> str | None:
    """The user of a request to the served graphs, None to refuse it."""
    gate = served_gate()
    token = bearer_token(authorization)
    if token is None and authorization:
        return None  # another scheme, or an empty token: refused, never read as the local user
    user = gate.user_of(token, client, headers)
    if user is None and token is None and is_loopback(client) and not gate.trusts(client):
        return gate.local_user
    return user


@auth.authenticate
async def authenticate(
    authorization: str | None, headers: dict[bytes, bytes], scope: dict[str, Any]
) -> Auth.types.MinimalUserDict:
    """The caller: a token's user, a trusted proxy's user, or the local user from loopback; else 401."""
    client = (scope.get("client") or (None,))[0]
    named = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in headers.items()}
    user = await asyncio.to_thread(request_user, authorization, client, named)
    if user is None:
        raise Auth.exceptions.HTTPException(
            status_code=401,
            detail="log in: send Authorization: Bearer TOKEN",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return {"identity": user, "display_name": user}


@auth.on
async def owned(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    """What a user makes is theirs (owner in its metadata); what they read, change or run is theirs only."""
    owner = {"owner": ctx.user.identity}
    if isinstance(value, dict):
        metadata = value.setdefault("metadata", {})
        if isinstance(metadata, dict):
            metadata.update(owner)
    return owner


@auth.on.assistants.read
async def read_assistants(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Anyone may read an assistant: the served graphs' own have no owner."""
    return True


@auth.on.assistants.search
async def search_assistants(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Anyone may list the assistants."""
    return True


@auth.on.store
async def own_namespace(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Store items live under the caller's namespace."""
    namespace = tuple(value.get("namespace") or ())
    if not namespace or namespace[0] != ctx.user.identity:
        value["namespace"] = (ctx.user.identity, *namespace)
