"""What a failed PostgreSQL start reports from its log: its own try's lines."""

from __future__ import annotations

from pathlib import Path

from citewise.index.shared.pgserver import _log_since


def test_a_later_try_reads_only_what_it_logged(tmp_path: Path) -> None:
    # the log is one file over every try: a port clash on the first made a later failure read as one too
    log = tmp_path / "server.log"
    assert _log_since(log, 0) == ""  # no log yet
    log.write_text('LOG:  could not bind IPv4 address "127.0.0.1": Address already in use\n')
    offset = log.stat().st_size
    with log.open("a") as file:
        file.write("FATAL:  could not create lock file: Permission denied\n")
    assert _log_since(log, offset) == "FATAL:  could not create lock file: Permission denied\n"
    assert "Address already in use" in _log_since(log, 0)
