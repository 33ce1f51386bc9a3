"""`citewise users` (add, list, revoke API tokens) and `citewise audit` (read the audit log).

Both work on the access database of the index a command names (`--index`, or `--store` for the shared tier:
see `citewise.app.access`). Registered on the main CLI beside the other commands.
"""

from __future__ import annotations

import json
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


def access_of(index: object, store: str | None) -> AccessStore:
    """The access database of the index named (its error in one line, exit 2)."""
    try:
        return open_access(str(index), store)
    except AccessError as error:
        raise fail(str(error)) from error


@users_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="The user's name (letters, digits, '_', '.', '@', '-').")],
    index: IndexOption = DEFAULT_INDEX,
    store: StoreOption = None,
) -> None:
    """Make a user and print their API token, once: only its hash is kept."""
    access = access_of(index, store)
    try:
        token = access.add_user(name)
    except AccessError as error:
        raise fail(str(error)) from error
    finally:
        access.close()
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
    access = access_of(index, store)
    try:
        users = access.users()
    finally:
        access.close()
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
    access = access_of(index, store)
    try:
        access.revoke_user(name)
    except AccessError as error:
        raise fail(str(error)) from error
    finally:
        access.close()
    typer.echo(f"revoked the token of {name}", err=True)


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
    access = access_of(index, store)
    try:
        events = access.events(user=user, since=since, until=until)
    except AccessError as error:
        raise fail(str(error)) from error
    finally:
        access.close()
    for event in events:
        if as_json:
            typer.echo(json.dumps(event, ensure_ascii=False))
            continue
        rest = {k: v for k, v in event.items() if k not in ("at", "user", "action")}
        typer.echo(
            f"{event['at']}  {event['user']}  {event['action']}  {json.dumps(rest, ensure_ascii=False)}"
        )
