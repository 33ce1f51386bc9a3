"""An upload's progress on the chat page, file by file: pages read, texts embedded, chunks stored.

The ingest runs in a worker thread; what it does is counted here as it goes: its progress bars (files done,
chunks stored, texts embedded: `citewise.index.writer.IndexWriter.ingest`'s `progress`) and the file being
read, page by page (`citewise.index.loaders.reading`). A bar's count belongs to the file read last, so each
file gets its own line under the totals `render.ingest_progress` writes.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citewise.app.web import render
from citewise.index.loaders import reading

SHOWN_FILES = 8
"""File lines shown at most (the files being read and the last ones done; the totals count them all)."""


@dataclass
class FileProgress:
    """One uploaded file as far as it went."""

    name: str
    state: str = "waiting"
    """waiting, reading or done."""
    pages: int = 0
    """Pages read (a PDF)."""
    of_pages: int = 0
    """Pages in all (0: not a PDF, or not opened yet)."""
    embedded: int = 0
    chunks: int = 0


def file_line(file: FileProgress) -> str:
    """One file's progress line (its name escaped: a person named it)."""
    parts = [file.state]
    if file.of_pages:
        parts.append(f"{file.pages} of {file.of_pages} pages read")
    if file.embedded:
        parts.append(f"{file.embedded} texts embedded")
    if file.chunks or file.state == "done":
        parts.append(f"{file.chunks} chunks stored")
    return f"- {render.escape_markdown(file.name)}: {', '.join(parts)}"


def files_markdown(files: list[FileProgress]) -> str:
    """The file lines under an upload's totals: those being read first, then the last ones done."""
    busy = [f for f in files if f.state == "reading"]
    done = [f for f in files if f.state == "done"]
    waiting = sum(1 for f in files if f.state == "waiting")
    shown = (busy + done[::-1])[:SHOWN_FILES]
    lines = [file_line(f) for f in shown]
    hidden = len(busy) + len(done) - len(shown)
    if hidden > 0:
        lines.append(f"- … {hidden} more done")
    if waiting:
        lines.append(f"- {waiting} file(s) waiting")
    return "\n".join(lines)


class UploadProgress:
    """What an ingest of `paths` did so far, per file and in all (written by its thread, read by the page)."""

    def __init__(self, paths: list[Path]) -> None:
        self.files = {path.resolve(): FileProgress(path.name) for path in paths}
        self.current: FileProgress | None = None
        self.done = 0
        self.chunks = 0
        self.embedded = 0
        self._lock = threading.Lock()

    def read(self, path: Path, pages: int, of_pages: int) -> None:
        """A file is being read (`citewise.index.loaders.reading`): it is the current one."""
        with self._lock:
            file = self.files.get(Path(path).resolve())
            if file is None:
                return
            if self.current is not None and self.current is not file and self.current.state == "reading":
                self.current.state = "done"  # a tier that counts files done otherwise: the next one started
            self.current = file
            file.state = "reading"
            file.pages, file.of_pages = pages, of_pages

    def count(self, kind: str, amount: int) -> None:
        """A progress bar moved: files done, chunks stored or texts embedded (of the current file)."""
        with self._lock:
            file = self.current
            if kind == "files":
                self.done += amount
                if file is not None:
                    file.state = "done"
            elif kind == "embedded":
                self.embedded += amount
                if file is not None:
                    file.embedded += amount
            else:
                self.chunks += amount
                if file is not None:
                    file.chunks += amount

    def bar(self, desc: str = "", **_: Any) -> Any:
        """A tqdm-like bar for the ingest's `progress` factory, counting into this."""
        counter = self

        class Bar:
            key = desc if desc in ("files", "embedded") else "chunks"

            def update(self, count: int = 1) -> None:
                counter.count(self.key, count)

            def close(self) -> None:
                pass

        return Bar()

    @contextmanager
    def watching(self) -> Any:
        """Within: the files read in this thread are told to `read`."""
        token = reading.set(self.read)
        try:
            yield self
        finally:
            reading.reset(token)

    def markdown(self, seconds: float) -> str:
        """The totals line, then a line per file."""
        with self._lock:
            files = [FileProgress(**vars(f)) for f in self.files.values()]
            totals = render.ingest_progress(self.done, len(self.files), self.chunks, seconds, self.embedded)
        return totals + "\n\n" + files_markdown(files)
