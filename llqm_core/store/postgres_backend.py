"""The PostgreSQL store: a database named by a ``postgresql://`` URL, reached with psycopg 3.

The schema is the SQLite store's (``schema.MIGRATIONS``, its types read as their 64-bit
equivalents) and its version is kept in the table ``llqm_schema``. Finished tasks still go to a
journal on this machine first (under ``$XDG_DATA_HOME/llqm/journals/``), so the network stays
off the task's path and a killed process loses nothing; the writer thread commits them in
batches. The URL's password is never shown: messages name the store by its URL without it, and
it is cut out of every text LLQM records (``model.secrets``).
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..model.errors import StoreError
from ..model.secrets import keep_secret, redact_text, url_password, without_password
from .backend import ONE_TASK_ROW, TASK_INSERT, Row, StoreBackend
from .schema import SCHEMA_VERSION, TASK_COLUMNS, check_version, migration_statements

try:
    import psycopg
    from psycopg.rows import dict_row, tuple_row
except ImportError:  # the driver is an extra: the error says how to get it
    psycopg = None  # type: ignore[assignment]

#: Any number: every llqm migrating one database takes this transaction lock, one at a time.
_MIGRATION_LOCK = 0x11C0_5709
_CONNECT_TIMEOUT_S = 10
#: Unacknowledged data this long on a TCP connection to the server means the server is gone.
_DEAD_PEER_MS = 30_000
_KEEP_RUNNING_ROW = TASK_INSERT + ONE_TASK_ROW + " ON CONFLICT (id) DO NOTHING"
_KEEP_FINISHED_ROW = (
    TASK_INSERT
    + ONE_TASK_ROW
    + " ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{column} = EXCLUDED.{column}" for column in TASK_COLUMNS[1:])
)
_TYPES = (
    (re.compile(r"\bINTEGER PRIMARY KEY AUTOINCREMENT\b"), "BIGSERIAL PRIMARY KEY"),
    (re.compile(r"\bINTEGER\b"), "BIGINT"),
    (re.compile(r"\bREAL\b"), "DOUBLE PRECISION"),
    (re.compile(r"\bBLOB\b"), "BYTEA"),
)


@functools.lru_cache(maxsize=256)
def _sql(text: str) -> str:
    """The store's SQL (``?`` placeholders) as psycopg takes it (``%s``)."""
    return text.replace("%", "%%").replace("?", "%s")


def postgres_ddl(statement: str) -> str:
    """A migration statement of the one list, with SQLite's types as PostgreSQL's."""
    for pattern, replacement in _TYPES:
        statement = pattern.sub(replacement, statement)
    return statement


def _integer_flag(value: Any) -> Any:
    return int(value) if value is True or value is False else value


class PostgresBackend(StoreBackend):
    greatest = "GREATEST"
    same_value = "IS NOT DISTINCT FROM"

    def __init__(self, url: str) -> None:
        self.location = url
        self.name = without_password(url)
        password = url_password(url)
        if password:
            keep_secret(password)
        if psycopg is None:
            raise StoreError(
                f"the profile store {self.name} is a PostgreSQL database, which needs the psycopg "
                "driver: pip install 'llqm[postgres]'."
            )
        self.errors = (psycopg.Error,)
        self._conninfo = self._parse(url)
        data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(
            os.path.expanduser("~"), ".local", "share"
        )
        who = "\n".join(f"{k}={v}" for k, v in sorted(self._conninfo.items()) if k != "password")
        digest = hashlib.sha256(who.encode()).hexdigest()[:16]
        self.journal_base = Path(data_home) / "llqm" / "journals" / f"postgres-{digest}"

    def _parse(self, url: str) -> dict[str, Any]:
        try:
            return psycopg.conninfo.conninfo_to_dict(url)
        except psycopg.Error as exc:
            raise StoreError(
                f"{self.name} is not a PostgreSQL URL psycopg understands "
                f"({self.describe_error(exc)}); write it as postgresql://user@host:port/database."
            ) from None

    def describe_error(self, exc: BaseException) -> str:
        text = " ".join(str(exc).split())  # libpq's messages span lines
        return f"PostgreSQL says: {redact_text(text)}"

    def connection_lost(self, conn: Any) -> bool:
        """A server that restarted or stopped ends its sessions: psycopg marks the connection
        broken (or closed) at the first statement that fails for it."""
        return bool(conn.closed or conn.broken)

    def full_disk(self, exc: BaseException) -> str | None:
        """The server's ``disk_full`` (SQLSTATE 53100): the database's disk, not this machine's."""
        if getattr(exc, "sqlstate", None) == "53100":
            return self.describe_error(exc)
        return None

    # -- opening ------------------------------------------------------------------------

    def prepare(self, readonly: bool) -> None:
        """Check the schema version; a writer creates the schema in an empty database, and
        either upgrades an older one (under a lock: several may open it at once)."""
        for _attempt in range(3):
            try:
                return self._prepare(readonly)
            except (psycopg.errors.DuplicateTable, psycopg.errors.UniqueViolation):
                continue  # another process created the schema meanwhile: look again
            except psycopg.Error as exc:
                raise self._unreadable(exc) from None
        raise StoreError(
            f"the profile store {self.name} kept changing while its schema was checked; "
            "open it again."
        )

    def _unreadable(self, exc: BaseException) -> StoreError:
        return StoreError(
            f"the profile store {self.name} could not be read ({self.describe_error(exc)})."
        )

    def _prepare(self, readonly: bool) -> None:
        with self._connect() as conn:
            version = self._version_of(conn)
            if version == SCHEMA_VERSION:
                return
            if readonly and version == 0:
                raise StoreError(
                    f"the database {self.name} holds no LLQM profile store yet; "
                    "run a pipeline into it first."
                )
            try:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                    for statement in migration_statements(self._version_of(conn)):
                        conn.execute(postgres_ddl(statement))
                    conn.execute("CREATE TABLE IF NOT EXISTS llqm_schema (version BIGINT NOT NULL)")
                    conn.execute("DELETE FROM llqm_schema")
                    conn.execute("INSERT INTO llqm_schema VALUES (%s)", (SCHEMA_VERSION,))
            except (psycopg.errors.DuplicateTable, psycopg.errors.UniqueViolation):
                raise
            except psycopg.Error as exc:
                raise StoreError(
                    f"the profile store {self.name} (schema version {version}) cannot be brought "
                    f"to version {SCHEMA_VERSION} ({self.describe_error(exc)})."
                ) from None

    def exists(self) -> bool:
        with self._connect() as conn:
            try:
                return self._version_of(conn) > 0
            except psycopg.Error as exc:
                raise self._unreadable(exc) from None

    def _version_of(self, conn: Any) -> int:
        # The catalog read as a table, not through the session's cache of it: a schema another
        # process committed while this one waited for the migration lock shows.
        found = conn.execute(
            "SELECT bool_or(tablename = 'llqm_schema') AS versioned,"
            " bool_or(tablename IN ('runs', 'tasks')) AS taken"
            " FROM pg_catalog.pg_tables WHERE schemaname = current_schema()"
        ).fetchone()
        if found["versioned"]:
            version = conn.execute("SELECT max(version) AS version FROM llqm_schema").fetchone()
            return check_version(int(version["version"] or 0), self.name)
        if found["taken"]:
            raise StoreError(
                f"the database {self.name} has tables named runs or tasks that are not an LLQM "
                "profile store; choose another database."
            )
        return 0

    # -- connections --------------------------------------------------------------------

    def _connect(self, timeout_s: float | None = None) -> Any:
        """A connection, waiting ``timeout_s`` (whole seconds, 2 at least: libpq's least) or
        ``_CONNECT_TIMEOUT_S`` at most for the server to answer, unless the URL says."""
        if timeout_s is not None:
            timeout_s = max(2, min(_CONNECT_TIMEOUT_S, math.ceil(timeout_s)))
        options: dict[str, Any] = {
            "application_name": "llqm",
            "connect_timeout": timeout_s or _CONNECT_TIMEOUT_S,
            # a server whose host vanished (no FIN, no RST) is given up on in about half a
            # minute, not the kernel's quarter of an hour, so the run's end does not hang on it
            "keepalives": 1,
            "keepalives_idle": 10,
            "keepalives_interval": 5,
            "keepalives_count": 3,
            "tcp_user_timeout": _DEAD_PEER_MS,
        }
        options = {k: v for k, v in options.items() if k not in self._conninfo}
        try:
            return psycopg.connect(self.location, autocommit=True, row_factory=dict_row, **options)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to the profile store {self.name} ({self.describe_error(exc)})."
            ) from None

    def connect(self, readonly: bool) -> Any:
        conn = self._connect()
        if readonly:
            conn.execute("SET default_transaction_read_only = on")  # a reader never changes it
        return conn

    def write_briefly(self, sql: str, params: Sequence[Any] = ()) -> bool:
        try:
            with self._connect() as conn:
                conn.execute("SET lock_timeout = '200ms'")
                conn.execute(_sql(sql), params)
            return True
        except (psycopg.Error, StoreError):
            return False

    def connect_writer(self, timeout_s: float | None = None) -> Any:
        self.journal_base.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self._connect(timeout_s)

    # -- statements ---------------------------------------------------------------------

    def query(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return conn.execute(_sql(sql), params).fetchall()

    def query_tuples(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with conn.cursor(row_factory=tuple_row) as cursor:
            return cursor.execute(_sql(sql), params).fetchall()

    def execute(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> None:
        conn.execute(_sql(sql), params)

    def execute_many(self, conn: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with conn.transaction(), conn.cursor() as cursor:
            cursor.executemany(_sql(sql), rows)

    def commit_rows(
        self,
        conn: Any,
        sql: str | None,
        params: Sequence[Any],
        running: list[tuple],
        finished: list[list],
    ) -> None:
        # One row per id (a statement may not update a row twice: a repeat keeps the last), and
        # flags as the integers their columns hold, as SQLite keeps them.
        latest = {row[0]: [_integer_flag(value) for value in row] for row in finished}
        with conn.transaction(), conn.cursor() as cursor:
            if sql is not None:
                cursor.execute(_sql(sql), params)
            if running:
                cursor.executemany(_sql(_KEEP_RUNNING_ROW), running)
            if latest:
                cursor.executemany(_sql(_KEEP_FINISHED_ROW), list(latest.values()))

    def insert_ignoring_duplicates(self, table: str, columns: Sequence[str]) -> str:
        marks = ",".join("?" * len(columns))
        return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks}) ON CONFLICT DO NOTHING"

    def json_equals(self, column: str, key: str) -> tuple[str, Any]:
        return f"({column}::jsonb ->> ?) = CAST(? AS text)", key

    def rollback(self, conn: Any) -> None:
        pass  # a transaction that raised was rolled back by ``conn.transaction()``
