"""The outline editor of `citewise ask --approve`: the planned outline shown, edited line by line, approved.

The query graph pauses before writing a report (the `approve` step's interrupt); the command line shows the
outline here and resumes the graph with what the person made of it.
"""

from __future__ import annotations

import typer

EDIT_HELP = """Edit the outline, one command per line (empty line or `ok` to write the report):
  rename N TITLE    give section N a new title
  goal N TEXT       give section N a new goal
  drop N            leave section N out
  move N M          put section N at position M
  add TITLE         add a section at the end
  pin N DOC_ID...   draw section N's evidence only from these documents
  show              print the outline again"""


def edit_outline(outline: list[dict]) -> list[dict]:
    """Show the planned outline and apply the person's edits, line by line (see EDIT_HELP)."""
    sections = [dict(s) for s in outline]
    typer.secho("Planned outline:", bold=True, err=True)
    _print_outline(sections)
    typer.echo(EDIT_HELP, err=True)
    while True:
        line = typer.prompt("outline", default="ok", show_default=False, err=True).strip()
        if line.lower() in ("", "ok"):
            return sections
        try:
            sections = apply_edit(sections, line)
        except (ValueError, IndexError) as error:
            typer.secho(f"not applied: {error}", err=True, fg=typer.colors.YELLOW)
            continue
        _print_outline(sections)


def apply_edit(sections: list[dict], line: str) -> list[dict]:
    """One outline edit command applied to a copy of the sections (ValueError when it does not parse)."""
    verb, _, rest = line.partition(" ")
    sections = [dict(s) for s in sections]

    def position(text: str) -> int:
        n = int(text)
        if not 1 <= n <= len(sections):
            raise ValueError(f"there is no section {n} (1-{len(sections)})")
        return n - 1

    words = rest.split()
    if verb == "rename" and len(words) >= 2:
        sections[position(words[0])]["title"] = " ".join(words[1:])
    elif verb == "goal" and len(words) >= 2:
        sections[position(words[0])]["goal"] = " ".join(words[1:])
    elif verb == "drop" and len(words) == 1:
        del sections[position(words[0])]
    elif verb == "move" and len(words) == 2:
        moved = sections.pop(position(words[0]))
        sections.insert(max(0, min(len(sections), int(words[1]) - 1)), moved)
    elif verb == "add" and words:
        sections.append({"title": rest.strip()})
    elif verb == "pin" and len(words) >= 2:
        sections[position(words[0])]["documents"] = words[1:]
    elif verb != "show":
        raise ValueError(f"unknown edit {line!r}")
    return sections


def _print_outline(sections: list[dict]) -> None:
    for n, section in enumerate(sections, start=1):
        pinned = f"  [pinned: {', '.join(section['documents'])}]" if section.get("documents") else ""
        typer.echo(f"  {n}. {section['title']}{pinned}", err=True)
        if section.get("goal"):
            typer.echo(f"     {section['goal']}", err=True)
