"""A hot standby of the shared tier's PostgreSQL on a second loopback port: it follows, and refuses writes."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from citewise.index.pgserver import Server, standby

pytestmark = pytest.mark.integration


def test_a_standby_follows_the_primary_and_refuses_writes(postgres: Server) -> None:
    folder = Path(tempfile.mkdtemp(prefix="citewise-standby-"))
    folder.chmod(0o755)
    with psycopg.connect(postgres.dsn, autocommit=True) as primary:
        primary.execute("CREATE TABLE IF NOT EXISTS notes (id int PRIMARY KEY, text text NOT NULL)")
        primary.execute("INSERT INTO notes VALUES (1, 'before the copy') ON CONFLICT DO NOTHING")
        try:
            follower = standby(postgres, folder / "standby")
            try:
                assert follower.port != postgres.port
                primary.execute("INSERT INTO notes VALUES (2, 'after the copy') ON CONFLICT DO NOTHING")
                with psycopg.connect(follower.dsn, autocommit=True) as replica:
                    assert replica.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
                    deadline = time.monotonic() + 30  # streaming replication is asynchronous: wait for replay
                    rows: list[tuple] = []
                    while time.monotonic() < deadline:
                        rows = replica.execute("SELECT id, text FROM notes ORDER BY id").fetchall()
                        if len(rows) == 2:
                            break
                        time.sleep(0.1)
                    assert rows == [(1, "before the copy"), (2, "after the copy")]
                    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                        replica.execute("INSERT INTO notes VALUES (3, 'written to the standby')")
            finally:
                follower.stop()
        finally:
            primary.execute("DROP TABLE IF EXISTS notes")
            shutil.rmtree(folder, ignore_errors=True)
