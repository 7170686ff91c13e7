"""The SQLite store: one file in WAL mode, its schema version in ``PRAGMA user_version``.

Several processes write one file at once (WAL); the writer thread checkpoints the WAL off the
tasks' path and folds it into the file at close, so a closed store is one self-contained file.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..model.errors import StoreError
from .backend import ONE_TASK_ROW, TASK_INSERT, Row, StoreBackend
from .disk_full import no_room_at
from .schema import (
    BUSY_TIMEOUT_MS,
    SCHEMA_VERSION,
    STORE_ENV,
    TASK_COLUMNS,
    check_version,
    migration_statements,
)

# SQLite before 3.32 takes at most 999 parameters in one statement, later ones 32766.
ROWS_PER_STATEMENT = 50 if sqlite3.sqlite_version_info >= (3, 32, 0) else 999 // len(TASK_COLUMNS)
_KEEP_RUNNING_ROWS = TASK_INSERT.replace("INSERT", "INSERT OR IGNORE", 1) + ONE_TASK_ROW


@functools.lru_cache(maxsize=ROWS_PER_STATEMENT)
def _keep_finished_rows(count: int) -> str:
    """One INSERT of ``count`` finished rows: SQLite takes them in one step (docs/performance.md)."""
    return TASK_INSERT.replace("INSERT", "INSERT OR REPLACE", 1) + ",".join([ONE_TASK_ROW] * count)


class SQLiteBackend(StoreBackend):
    errors = (sqlite3.Error,)

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = self.name = str(path)
        self.journal_base = path

    # -- opening ------------------------------------------------------------------------

    def prepare(self, readonly: bool) -> None:
        """Create the file (a writer), then bring its schema up to date. Processes that create
        one store at once can find it locked in ways SQLite's busy handler does not wait out
        (switching a new file to WAL): they try again, up to the busy timeout."""
        if not readonly:
            self._create_file()
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            conn = None
            try:
                conn = self.connect_writer() if not readonly else self.connect(readonly=True)
                self._bring_up_to_date(conn, readonly)
                return
            except sqlite3.DatabaseError as exc:
                locked = isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)
                if not locked or time.monotonic() > deadline:
                    raise StoreError(
                        f"{self.path} is not a readable LLQM profile store (SQLite says: {exc})."
                    ) from None
                time.sleep(0.05)
            finally:
                if conn is not None:
                    conn.close()

    def exists(self) -> bool:
        return self.path.exists()

    def _bring_up_to_date(self, conn: sqlite3.Connection, readonly: bool) -> None:
        version = self._version_of(conn)
        if version == SCHEMA_VERSION:
            return
        if not readonly:
            self._migrate(conn)
        elif version == 0:
            raise StoreError(
                f"{self.path} is an empty file, not an LLQM profile store yet; "
                "run a pipeline into it first."
            )
        else:
            self._upgrade_for_reader(version)

    def _upgrade_for_reader(self, version: int) -> None:
        """A report on a store that an older llqm wrote upgrades it first, where the file can be
        written."""
        try:
            conn = sqlite3.connect(self.path, isolation_level=None)
            try:
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                self._migrate(conn)
            finally:
                conn.close()
        except sqlite3.OperationalError as exc:
            raise StoreError(
                f"{self.path} has store schema version {version} and cannot be upgraded to "
                f"{SCHEMA_VERSION} here (SQLite says: {exc}); open it once where it can be written."
            ) from None

    def _create_file(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        except OSError as exc:
            raise StoreError(
                f"cannot create the profile store at {self.path}: {exc.strerror}."
            ) from None

    def _version_of(self, conn: sqlite3.Connection) -> int:
        """The file's schema version: 0 for an empty file; refused when no llqm release reads it.
        One statement reads both, so a schema another process commits in between cannot be
        seen as tables without their version."""
        version, tables = conn.execute(
            "SELECT (SELECT user_version FROM pragma_user_version),"
            " (SELECT COUNT(*) FROM sqlite_master)"
        ).fetchone()
        if version == 0 and tables:
            raise StoreError(
                f"{self.path} is an SQLite database but not an LLQM profile store; choose another file."
            )
        return check_version(version, str(self.path))

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Bring the file up to ``SCHEMA_VERSION`` in one transaction (another process may be
        doing the same: the first one to take the lock does it, the others find it done)."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in migration_statements(self._version_of(conn)):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    # -- connections --------------------------------------------------------------------

    def connect(self, readonly: bool) -> sqlite3.Connection:
        """A connection for queries; ``readonly`` opens the file as it is, and never creates it."""
        if not readonly:
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        elif self.path.is_file():
            conn = self._connect_readonly()
        else:
            raise StoreError(
                f"there is no profile store at {self.path}; run a pipeline first, or point --store "
                f"or {STORE_ENV} at an existing store."
            )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.row_factory = sqlite3.Row
        return conn

    def _connect_readonly(self) -> sqlite3.Connection:
        """The file opened read only. A WAL file's readers share its ``-shm`` file, which a
        folder this user cannot write cannot hold: a store with no ``-wal`` file left (every
        writer closed it) is then read as a file that does not change (SQLite's ``immutable``)."""
        uri = self.path.resolve().as_uri()
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
        try:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError as exc:
            conn.close()
            if "readonly" not in str(exc) and "unable to open" not in str(exc):
                raise
            wal = self.path.with_name(self.path.name + "-wal")
            if wal.exists() and wal.stat().st_size:
                raise StoreError(
                    f"{self.path} cannot be read here: its folder cannot be written and a writer "
                    f"left rows in {wal.name}; open it once where the folder can be written."
                ) from None
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False)

    def write_briefly(self, sql: str, params: Sequence[Any] = ()) -> bool:
        try:
            # mode=rw: a file gone since the store was opened is not made again, empty
            uri = f"{self.path.resolve().as_uri()}?mode=rw"
            conn = sqlite3.connect(uri, uri=True, timeout=0.2, isolation_level=None)
        except sqlite3.Error:
            return False
        try:
            conn.execute(sql, params)
            return True
        except sqlite3.Error:
            return False
        finally:
            conn.close()

    def connect_writer(self, timeout_s: float | None = None) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        # the writer thread checkpoints, off the tasks' path
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        return conn

    def connect_housekeeping(self) -> sqlite3.Connection:
        """The writer thread's own connection for checkpoints: none waits on a commit's lock."""
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return conn

    # -- statements ---------------------------------------------------------------------

    def query(self, conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return conn.execute(sql, params).fetchall()

    def query_tuples(
        self, conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()
    ) -> list[tuple]:
        cursor = conn.cursor()
        cursor.row_factory = None
        return cursor.execute(sql, params).fetchall()

    def execute(self, conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> None:
        conn.execute(sql, params)

    def execute_many(
        self, conn: sqlite3.Connection, sql: str, rows: Sequence[Sequence[Any]]
    ) -> None:
        conn.execute("BEGIN")  # a failure is rolled back by the writer (``rollback``)
        conn.executemany(sql, rows)
        conn.execute("COMMIT")

    def commit_rows(
        self,
        conn: sqlite3.Connection,
        sql: str | None,
        params: Sequence[Any],
        running: list[tuple],
        finished: list[list],
    ) -> None:
        conn.execute("BEGIN")
        if sql is not None:
            conn.execute(sql, params)
        conn.executemany(_KEEP_RUNNING_ROWS, running)
        for first in range(0, len(finished), ROWS_PER_STATEMENT):
            chunk = finished[first : first + ROWS_PER_STATEMENT]
            conn.execute(_keep_finished_rows(len(chunk)), [value for row in chunk for value in row])
        conn.execute("COMMIT")

    def insert_ignoring_duplicates(self, table: str, columns: Sequence[str]) -> str:
        marks = ",".join("?" * len(columns))
        return f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({marks})"

    def json_equals(self, column: str, key: str) -> tuple[str, Any]:
        return f"json_extract({column}, ?) = ?", f'$."{key}"'

    def describe_error(self, exc: BaseException) -> str:
        return f"SQLite says: {exc}"

    def full_disk(self, exc: BaseException) -> str | None:
        """SQLite's ``SQLITE_FULL``, or a write error (``SQLITE_IOERR``: a file-size limit's
        ``EFBIG`` reads so) where the store's file can take no more (``no_room_at``)."""
        code = getattr(exc, "sqlite_errorcode", None)
        if code is None:
            return None
        if code & 0xFF == sqlite3.SQLITE_FULL:
            return f"SQLite says: {exc}"
        if code & 0xFF == sqlite3.SQLITE_IOERR:
            return no_room_at(self.path)
        return None

    def rollback(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")

    def checkpoint(self, conn: sqlite3.Connection, final: bool) -> None:
        """Fold the WAL into the file: all of it at close, so the file alone holds every run."""
        try:
            conn.execute(f"PRAGMA wal_checkpoint({'TRUNCATE' if final else 'PASSIVE'})")
        except sqlite3.Error:
            pass  # another process is using the store; it will checkpoint later
