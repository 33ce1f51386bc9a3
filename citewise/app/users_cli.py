"""`citewise users` (API tokens, grants), `citewise groups` and `citewise audit` (read the audit log).

Both work on the access database of the index a command names (`--index`, or `--store` for the shared tier:
see `citewise.app.access`). Registered on the main CLI beside the other commands.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from citewise.app.access import AccessError, AccessStore, open_access
from citewise.app.console import fail
from citewise.app.options import DEFAULT_INDEX, IndexOption, StoreOption

users_app = typer.Typer(
    help="API tokens: who may use `citewise api`, `serve` and a served graph beyond loopback.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@contextmanager
def access_of(index: object, store: str | None) -> Iterator[AccessStore]:
    """The access database of the index named, closed after; its errors in one line (exit 2)."""
    try:
        access = open_access(str(index), store)
    except AccessError as error:
        raise fail(str(error)) from error
    try:
        yield access
    except AccessError as error:
        raise fail(str(error)) from error
    finally:
        access.close()


def collections_as(user: str | None, index: object, store: str | None) -> tuple[str, ...] | None:
    """What a command run `--as USER` may read (None without --as: every collection)."""
    if user is None:
        return None
    with access_of(index, store) as access:
        return access.collections_of(user)


@users_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="The user's name (letters, digits, '_', '.', '@', '-').")],
    index: IndexOption = DEFAULT_INDEX,
    store: StoreOption = None,
) -> None:
    """Make a user and print their API token, once: only its hash is kept."""
    with access_of(index, store) as access:
        token = access.add_user(name)
    typer.echo(token)
    typer.echo(
        f"the API token of {name}, shown this once: send it as `Authorization: Bearer TOKEN` "
        "(or log in to the page with the name and the token)",
        err=True,
    )


@users_app.command("list")
def list_users(
    index: IndexOption = DEFAULT_INDEX,
    store: StoreOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
) -> None:
    """List the users: name, when their token was made, and when it was revoked."""
    with access_of(index, store) as access:
        users = access.users()
    for user in users:
        if as_json:
            typer.echo(json.dumps(user.as_dict()))
        else:
            state = f"revoked {user.revoked}" if user.revoked else "active"
            typer.echo(f"{user.name}\t{state}\tcreated {user.created}")


@users_app.command("revoke")
def revoke(
    name: Annotated[str, typer.Argument(help="The user whose token stops working.")],
    index: IndexOption = DEFAULT_INDEX,
    store: StoreOption = None,
) -> None:
    """Revoke a user's token: every server refuses it from its next request."""
    with access_of(index, store) as access:
        access.revoke_user(name)
    typer.echo(f"revoked the token of {name}", err=True)


Collection = Annotated[
    list[str] | None,
    typer.Option("--read", metavar="COLLECTION", help="Read on this collection (repeatable)."),
]
WriteCollection = Annotated[
    list[str] | None,
    typer.Option("--write", metavar="COLLECTION", help="Write (and read) on this collection (repeatable)."),
]
GroupFlag = Annotated[bool, typer.Option("--group", help="NAME is a group (`citewise groups add`).")]


def _change_grants(
    name: str,
    read: list[str] | None,
    write: list[str] | None,
    group: bool,
    index: object,
    store: str | None,
    give: bool,
) -> None:
    asked = [(c, "read") for c in read or []] + [(c, "write") for c in write or []]
    if not asked:
        raise fail("name a collection: --read COLLECTION or --write COLLECTION")
    with access_of(index, store) as access:
        for collection, kind in asked:
            if give:
                access.grant(name, collection, kind, group=group)
            else:
                access.revoke_grant(name, collection, kind, group=group)
    said = ", ".join(f"{kind} on {collection}" for collection, kind in asked)
    typer.echo(f"{'granted' if give else 'revoked'} {said} {'to' if give else 'from'} {name}", err=True)


@users_app.command("grant")
def grant(
    name: Annotated[str, typer.Argument(help="The user (or, with --group, the group).")],
    read: Collection = None,
    write: WriteCollection = None,
    group: GroupFlag = False,
    index: IndexOption = DEFAULT_INDEX,
    store: StoreOption = None,
) -> None:
    """Let a user or group read (or write) collections: their searches see those documents only."""
    _change_grants(name, read, write, group, index, store, give=True)


@users_app.command("revoke-grant")
def revoke_grant(
    name: Annotated[str, typer.Argument(help="The user (or, with --group, the group).")],
    read: Collection = None,
    write: WriteCollection = None,
    group: GroupFlag = False,
    index: IndexOption = DEFAULT_INDEX,
    store: StoreOption = None,
) -> None:
    """Take back grants: every server applies it from its next request."""
    _change_grants(name, read, write, group, index, store, give=False)


@users_app.command("grants")
def list_grants(
    index: IndexOption = DEFAULT_INDEX,
    store: StoreOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
) -> None:
    """List the grants: who (user or group), which collection, read or write."""
    with access_of(index, store) as access:
        grants = access.grants()
    for row in grants:
        typer.echo(
            json.dumps(row)
            if as_json
            else f"{row['kind']} {row['name']}\t{row['access']}\t{row['collection']}"
        )


groups_app = typer.Typer(
    help="Groups of users: a grant to a group (`citewise users grant G --group ...`) is its members'.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@groups_app.command("add")
def add_group(
    name: Annotated[str, typer.Argument(help="The group's name.")],
    index: IndexOption = DEFAULT_INDEX,
    store: StoreOption = None,
) -> None:
    """Make a group."""
    with access_of(index, store) as access:
        access.add_group(name)
    typer.echo(f"made group {name}", err=True)


@groups_app.command("member")
def member(
    group: Annotated[str, typer.Argument(help="The group.")],
    user: Annotated[str, typer.Argument(help="The user.")],
    remove: Annotated[bool, typer.Option("--remove", help="Take the user out of the group.")] = False,
    index: IndexOption = DEFAULT_INDEX,
    store: StoreOption = None,
) -> None:
    """Put a user in a group (or take them out, --remove)."""
    with access_of(index, store) as access:
        access.set_member(group, user, member=not remove)
    typer.echo(f"{user} {'left' if remove else 'joined'} {group}", err=True)


@groups_app.command("list")
def list_groups(
    index: IndexOption = DEFAULT_INDEX,
    store: StoreOption = None,
) -> None:
    """List the groups and their members."""
    with access_of(index, store) as access:
        groups = access.groups()
    for name, members in groups.items():
        typer.echo(f"{name}\t{' '.join(members)}")


def audit(
    index: IndexOption = DEFAULT_INDEX,
    store: StoreOption = None,
    user: Annotated[str | None, typer.Option("--user", help="Only this user's events.")] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only events at or after this ISO 8601 time (UTC if no zone)."),
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Only events before this ISO 8601 time.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines, one event a line.")] = False,
) -> None:
    """Print the audit log, oldest first: who asked, ingested or removed what, users added and revoked.

    An ask lists the documents its answer cited. `--json`: one JSON object a line.
    """
    with access_of(index, store) as access:
        events = access.events(user=user, since=since, until=until)
    for event in events:
        if as_json:
            typer.echo(json.dumps(event, ensure_ascii=False))
            continue
        rest = {k: v for k, v in event.items() if k not in ("at", "user", "action")}
        typer.echo(
            f"{event['at']}  {event['user']}  {event['action']}  {json.dumps(rest, ensure_ascii=False)}"
        )
