"""An upload's progress per file: what the readers tell as they read, and the lines the page shows."""

from __future__ import annotations

from pathlib import Path

from citewise.app.web.uploads import FileProgress, UploadProgress, file_line, files_markdown
from citewise.index.loaders import load_path, reading

PDF = Path(__file__).parent.parent / "data" / "pdf" / "manual.pdf"


def test_the_readers_tell_the_file_and_each_page_read(tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nA short note about harbours.\n", encoding="utf-8")
    told: list[tuple[str, int, int]] = []
    token = reading.set(lambda path, pages, of: told.append((Path(path).name, pages, of)))
    try:
        load_path(note)
        load_path(PDF)
    finally:
        reading.reset(token)
    assert told == [("note.md", 0, 0), ("manual.pdf", 0, 0)] + [("manual.pdf", n, 4) for n in range(1, 5)]
    load_path(note)  # nobody listening: nothing told, nothing fails


def test_each_count_belongs_to_the_file_read_last(tmp_path: Path) -> None:
    paths = [tmp_path / "a.pdf", tmp_path / "b.md", tmp_path / "c.md"]
    progress = UploadProgress(paths)
    files, embedded, chunks = (
        progress.bar(desc="files"),
        progress.bar(desc="embedded"),
        progress.bar(desc="chunks"),
    )
    progress.read(paths[0], 0, 0)
    progress.read(paths[0], 2, 4)
    embedded.update(30)
    progress.read(paths[0], 4, 4)
    embedded.update(10)
    chunks.update(7)
    files.update(1)
    progress.read(paths[1], 0, 0)
    embedded.update(5)
    text = progress.markdown(3.0)
    assert "1 of 3 file(s) done, 7 chunks stored, 45 texts embedded (3s)" in text
    assert "- a.pdf: done, 4 of 4 pages read, 40 texts embedded, 7 chunks stored" in text
    assert "- b.md: reading, 5 texts embedded" in text
    assert "- 1 file(s) waiting" in text
    assert text.index("b.md") < text.index("a.pdf")  # the file being read comes first


def test_file_lines_are_escaped_and_capped() -> None:
    assert file_line(FileProgress("[x](http://elsewhere).md", "done")) == (
        "- \\[x\\](http://elsewhere).md: done, 0 chunks stored"
    )
    many = [FileProgress(f"f{n}.md", "done", chunks=1) for n in range(20)]
    lines = files_markdown(many).splitlines()
    assert lines[0].startswith("- f19.md: done") and lines[-1] == "- … 12 more done" and len(lines) == 9
