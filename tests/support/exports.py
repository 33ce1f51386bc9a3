"""Strict readers of the exported files, written for the tests (no BibTeX or RIS library is installed).

They refuse what a lenient importer would guess around: an unbalanced brace, a field outside an entry, a
line that is neither a tag nor blank, a record without its end.
"""

from __future__ import annotations

import re

BIB_UNESCAPE = [
    (r"\textbackslash{}", "\\"),
    (r"\textbraceleft{}", "{"),
    (r"\textbraceright{}", "}"),
    (r"\textasciitilde{}", "~"),
    (r"\textasciicircum{}", "^"),
    *((f"\\{c}", c) for c in "&%$#_"),
]
ENTRY_START = re.compile(r"@(\w+)\{([A-Za-z0-9_.:\-]+),\n")
FIELD_START = re.compile(r"  ([a-z]+) = \{")
RIS_LINE = re.compile(r"([A-Z][A-Z0-9])  - (.*)")
MARKDOWN_MARKER = re.compile(r"(?<!\\)\[(\d+)\](?!\()")


def bib_unescape(value: str) -> str:
    """A field's text as written before escaping (the escapes `citewise.app.export` uses, and only those)."""
    out, position = [], 0
    while position < len(value):
        for escaped, plain in BIB_UNESCAPE:
            if value.startswith(escaped, position):
                out.append(plain)
                position += len(escaped)
                break
        else:
            assert value[position] not in "\\{}", f"bare {value[position]!r} in {value!r}"
            out.append(value[position])
            position += 1
    return "".join(out)


def read_bibtex(text: str) -> list[tuple[str, str, dict[str, str]]]:
    """(type, key, fields) per entry; fails on anything but entries of `name = {value}` fields."""
    entries = []
    position = 0
    while position < len(text):
        if text[position] in " \n":
            position += 1
            continue
        start = ENTRY_START.match(text, position)
        assert start, f"not an entry at {position}: {text[position : position + 60]!r}"
        position = start.end()
        fields: dict[str, str] = {}
        while True:
            field = FIELD_START.match(text, position)
            assert field, f"not a field at {position}: {text[position : position + 60]!r}"
            depth, cursor = 1, field.end()
            while depth:
                char = text[cursor]
                assert char != "\n", "a field value runs over a line"
                depth += {"{": 1, "}": -1}.get(char, 0)
                cursor += 1
            assert field.group(1) not in fields, f"field {field.group(1)} twice"
            fields[field.group(1)] = text[field.end() : cursor - 1]
            position = cursor
            if text.startswith(",\n", position):
                position += 2
                continue
            assert text.startswith("\n}\n", position), f"entry not closed: {text[position : position + 40]!r}"
            position += 3
            break
        entries.append((start.group(1), start.group(2), fields))
    return entries


def read_ris(text: str) -> list[list[tuple[str, str]]]:
    """The records: (tag, value) lines from TY to ER; fails on any other line between records."""
    records: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] | None = None
    for line in text.split("\r\n"):
        if current is None:
            if not line:
                continue
            match = RIS_LINE.fullmatch(line)
            assert match and match.group(1) == "TY", f"a record must start with TY: {line!r}"
            current = [(match.group(1), match.group(2))]
            continue
        match = RIS_LINE.fullmatch(line)
        assert match, f"not a tag line inside a record: {line!r}"
        if match.group(1) == "ER":
            records.append(current)
            current = None
        else:
            assert match.group(1) != "TY", "a record started inside another"
            current.append((match.group(1), match.group(2)))
    assert current is None, "the last record has no ER"
    return records


def markdown_markers(text: str) -> tuple[list[int], set[int]]:
    """The [n] markers of the text before its References, and the numbers the References list."""
    body, _, rest = text.partition("\n## References\n")
    listed, _, _ = rest.partition("\n## ")
    numbers = {int(m.group(1)) for m in re.finditer(r"^\[(\d+)\] ", listed, re.M)}
    return [int(m.group(1)) for m in MARKDOWN_MARKER.finditer(body)], numbers
