"""A throwaway PostgreSQL cluster for tests and benchmarks: initdb in a temporary folder, a
server on a free loopback port with its socket in that folder, stopped and deleted at the end.

Debian's ``postgresql`` package keeps ``initdb`` and ``pg_ctl`` in a versioned folder off PATH;
both refuse to run as root, so as root they run as ``nobody`` in a folder that user owns.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

#: The role the stores connect as, with a password, so that tests can check it never shows.
ROLE = "llqm"


def server_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, or None where no server can be had."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=_version, reverse=True)
    return Path(versions[0]).parent if versions else None


def _version(path: str) -> int:
    part = Path(path).parent.parent.name
    return int(part) if part.isdigit() else 0


def why_unavailable() -> str | None:
    """None when a cluster can be started here; else the reason, for a skip."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'llqm[postgres]')"
    if server_binaries() is None:
        return "no PostgreSQL server binaries (initdb, pg_ctl) on this machine"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser to start PostgreSQL as another user"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Cluster:
    """One running server; ``url(database)`` names a database in it with the role's password."""

    def __init__(self) -> None:
        bindir = server_binaries()
        if bindir is None:
            raise RuntimeError(why_unavailable() or "no PostgreSQL server")
        self.folder = Path(tempfile.mkdtemp(prefix="llqm-postgres-"))
        self.data = self.folder / "data"
        self.port = _free_port()
        self.password = "pw-" + secrets.token_hex(12)
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            self._as_user = ["runuser", "-u", "nobody", "--"]
            shutil.chown(self.folder, "nobody")
        self._pg_ctl = str(bindir / "pg_ctl")
        self._run(str(bindir / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust")
        with open(self.data / "pg_hba.conf", "w") as hba:  # written as the server's user reads it
            hba.write("local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n")
        self._options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} "
            f"-c unix_socket_directories={self.folder} -c fsync=off -c max_connections=200"
        )
        self.start()
        self.admin(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{self.password}'")

    def _run(self, *command: str) -> None:
        subprocess.run([*self._as_user, *command], check=True, capture_output=True, cwd=self.folder)

    def _server(self, action: str, *mode: str) -> None:
        """``pg_ctl start``, ``restart`` or ``stop``, waiting for it. The server's output goes to
        its log: a server started without ``-l`` would hold the pipes ``_run`` reads to their
        end open for as long as it runs, and ``_run`` would never return."""
        self._run(
            self._pg_ctl, "-D", str(self.data), "-o", self._options,
            "-l", str(self.folder / "log"), *mode, "-w", "-t", "120", action,
        )  # fmt: skip

    def start(self) -> None:
        self._server("start")

    def restart(self) -> None:
        """Restart the server as an administrator would (``pg_ctl restart``, fast mode: it
        ends every session instead of waiting for them to end)."""
        self._server("restart", "-m", "fast")

    def halt(self) -> None:
        """Stop the server (fast mode), leaving its data for ``start``."""
        self._server("stop", "-m", "fast")

    def admin(self, sql: str) -> None:
        """Run one statement as the superuser, over the unix socket."""
        import psycopg

        with psycopg.connect(
            host=str(self.folder), port=self.port, user="postgres", dbname="postgres",
            autocommit=True,
        ) as conn:  # fmt: skip
            conn.execute(sql)

    def new_database(self) -> str:
        """A fresh, empty database owned by the role: its URL, password included."""
        name = "llqm_" + secrets.token_hex(6)
        self.admin(f"CREATE DATABASE {name} OWNER {ROLE}")
        return self.url(name)

    def url(self, database: str) -> str:
        return f"postgresql://{ROLE}:{self.password}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        try:
            self._run(self._pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
