"""A PostgreSQL server started on a free port starts on another when the port is taken before it binds."""

from __future__ import annotations

import shutil
import socket
import tempfile
from pathlib import Path

import psycopg
import pytest

from citewise.index.shared import pgserver

pytestmark = pytest.mark.integration


def test_a_free_port_taken_before_the_server_binds_it_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    # CI's run: another server started meanwhile took the port chosen for PostgreSQL ("Address already in
    # use"), and three tests errored at their setup
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ports = [taken.getsockname()[1], pgserver.free_port()]
    monkeypatch.setattr(pgserver, "free_port", lambda host="127.0.0.1": ports.pop(0))
    folder = Path(tempfile.mkdtemp(prefix="citewise-pg-"))
    folder.chmod(0o755)
    try:
        server = pgserver.start(folder / "cluster")
        try:
            assert server.port != taken.getsockname()[1] and not ports
            with psycopg.connect(server.dsn, autocommit=True) as conn:
                assert conn.execute("SELECT 1").fetchone() == (1,)
        finally:
            server.stop()
    finally:
        taken.close()
        shutil.rmtree(folder, ignore_errors=True)
