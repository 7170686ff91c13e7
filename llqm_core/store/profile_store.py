"""The profile store: one SQLite file that keeps every run, task, snapshot and decision.

Each task is kept when it ends, before control returns to the caller, so a crash or a kill
keeps everything that finished before it: appended to the process's journal beside the
store (``llqm_core.store.journal``), which the writer thread commits to SQLite in batches (within
``DRAIN_INTERVAL_S`` after a quiet spell, every ``FINISHED_ROWS_WAIT_S`` while tasks keep
ending), and which every reader merges in meanwhile. A running task's row is kept within
``DRAIN_INTERVAL_S`` of its start, so a dead run also names what was in flight.
WAL mode lets several processes write runs into one store while reports read it.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import sqlite3
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from pathlib import Path

from ..model.errors import StoreError
from ..model.records import (
    PROFILE_VALUE_NAMES,
    HardwareSnapshot,
    PolicyDecision,
    Profile,
    RunRecord,
    RunStatus,
    TaskRecord,
    TaskStatus,
)
from .journal import JournalFile, Owner, TaskJournal, encode_row, read_journals
from .journal import json_text as _dumps  # the one compact encoder of the store's text

STORE_ENV = "LLQM_STORE"
BUSY_TIMEOUT_MS = 30_000
CHECKPOINT_INTERVAL_S = 2.0
START_ROW_DELAY_S = 0.05
DRAIN_INTERVAL_S = 2.0
#: While tasks keep ending, their journaled rows wait this long between commits to SQLite: per row, a
#: commit of ten seconds' rows costs the writer about half what a commit every two seconds does.
FINISHED_ROWS_WAIT_S = 10.0
MAX_QUEUED_ROWS = (
    1000  # more finished rows than this are committed at once: bounded memory and commits
)

#: Each entry upgrades the schema by one version; ``PRAGMA user_version`` says how many ran.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, status TEXT NOT NULL,
        start_ns INTEGER NOT NULL, end_ns INTEGER,
        trace_id TEXT NOT NULL, span_id TEXT NOT NULL, parent_span_id TEXT,
        error TEXT, span_owned INTEGER NOT NULL DEFAULT 1,
        config TEXT NOT NULL DEFAULT '{}', resource TEXT NOT NULL DEFAULT '{}',
        pid INTEGER, host TEXT, process_started REAL
    );
    CREATE INDEX runs_by_start ON runs(start_ns);
    CREATE TABLE tasks (
        id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id),
        name TEXT NOT NULL, stage TEXT NOT NULL, status TEXT NOT NULL,
        parent_id TEXT, depends_on TEXT NOT NULL DEFAULT '[]',
        start_ns INTEGER NOT NULL, end_ns INTEGER,
        trace_id TEXT NOT NULL, span_id TEXT NOT NULL, parent_span_id TEXT,
        error TEXT, error_type TEXT,
        profile TEXT, metrics TEXT NOT NULL DEFAULT '{}', hardware TEXT
    );
    CREATE INDEX tasks_by_run ON tasks(run_id, start_ns);
    CREATE TABLE hardware_snapshots (
        fingerprint TEXT PRIMARY KEY, backend TEXT NOT NULL, taken_at REAL NOT NULL, data TEXT NOT NULL
    );
    CREATE TABLE decisions (
        id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, task_id TEXT, policy TEXT NOT NULL,
        choice TEXT NOT NULL, inputs TEXT NOT NULL, rationale TEXT NOT NULL, made_at REAL NOT NULL
    );
    CREATE INDEX decisions_by_run ON decisions(run_id);
    """,
    # 2: the profile as columns (SQL reads them by name; the store's writer encodes no JSON per task)
    """
    ALTER TABLE tasks ADD COLUMN wall_s REAL;
    ALTER TABLE tasks ADD COLUMN cpu_s REAL;
    ALTER TABLE tasks ADD COLUMN cpu_scope TEXT;
    ALTER TABLE tasks ADD COLUMN thread_cpu_s REAL;
    ALTER TABLE tasks ADD COLUMN process_cpu_s REAL;
    ALTER TABLE tasks ADD COLUMN children_cpu_s REAL;
    ALTER TABLE tasks ADD COLUMN start_rss_bytes INTEGER;
    ALTER TABLE tasks ADD COLUMN end_rss_bytes INTEGER;
    ALTER TABLE tasks ADD COLUMN peak_rss_bytes INTEGER;
    ALTER TABLE tasks ADD COLUMN rss_growth_bytes INTEGER;
    ALTER TABLE tasks ADD COLUMN samples INTEGER;
    ALTER TABLE tasks ADD COLUMN qpu_s REAL;
    ALTER TABLE tasks ADD COLUMN queue_s REAL;
    ALTER TABLE tasks ADD COLUMN pid INTEGER;
    ALTER TABLE tasks ADD COLUMN host TEXT;
    ALTER TABLE tasks ADD COLUMN gpu_available INTEGER;
    ALTER TABLE tasks ADD COLUMN gpu_reason TEXT;
    ALTER TABLE tasks ADD COLUMN gpu_devices INTEGER;
    ALTER TABLE tasks ADD COLUMN gpu_utilization_max_pct REAL;
    ALTER TABLE tasks ADD COLUMN gpu_utilization_mean_pct REAL;
    ALTER TABLE tasks ADD COLUMN gpu_memory_peak_bytes INTEGER;
    UPDATE tasks SET
        wall_s = coalesce(json_extract(profile, '$.wall_s'), 0.0),
        cpu_s = coalesce(json_extract(profile, '$.cpu_s'), 0.0),
        cpu_scope = coalesce(json_extract(profile, '$.cpu_scope'), 'process'),
        thread_cpu_s = coalesce(json_extract(profile, '$.thread_cpu_s'), 0.0),
        process_cpu_s = coalesce(json_extract(profile, '$.process_cpu_s'), 0.0),
        children_cpu_s = coalesce(json_extract(profile, '$.children_cpu_s'), 0.0),
        start_rss_bytes = coalesce(json_extract(profile, '$.start_rss_bytes'), 0),
        end_rss_bytes = coalesce(json_extract(profile, '$.end_rss_bytes'), 0),
        peak_rss_bytes = coalesce(json_extract(profile, '$.peak_rss_bytes'), 0),
        rss_growth_bytes = coalesce(json_extract(profile, '$.rss_growth_bytes'), 0),
        samples = coalesce(json_extract(profile, '$.samples'), 0), qpu_s = json_extract(profile, '$.qpu_s'),
        queue_s = json_extract(profile, '$.queue_s'), pid = json_extract(profile, '$.pid'),
        host = json_extract(profile, '$.host'),
        gpu_available = coalesce(json_extract(profile, '$.gpu.available'), 0),
        gpu_reason = CASE WHEN json_extract(profile, '$.gpu') IS NULL THEN 'not measured'
            ELSE json_extract(profile, '$.gpu.reason') END,
        gpu_devices = coalesce(json_extract(profile, '$.gpu.devices'), 0),
        gpu_utilization_max_pct = json_extract(profile, '$.gpu.utilization_max_pct'),
        gpu_utilization_mean_pct = json_extract(profile, '$.gpu.utilization_mean_pct'),
        gpu_memory_peak_bytes = json_extract(profile, '$.gpu.memory_peak_bytes'),
        profile = NULL
    WHERE profile IS NOT NULL;
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)


TASK_COLUMNS = (
    "id",
    "run_id",
    "name",
    "stage",
    "status",
    "parent_id",
    "depends_on",
    "start_ns",
    "end_ns",
    "trace_id",
    "span_id",
    "parent_span_id",
    "error",
    "error_type",
    "metrics",
    "hardware",
    *PROFILE_VALUE_NAMES,
)
#: A journal row as llqm wrote it before schema 2: the profile as one object (or its JSON text).
V1_TASK_COLUMNS = (
    "id",
    "run_id",
    "name",
    "stage",
    "status",
    "parent_id",
    "depends_on",
    "start_ns",
    "end_ns",
    "trace_id",
    "span_id",
    "parent_span_id",
    "error",
    "error_type",
    "profile",
    "metrics",
    "hardware",
)
_TASK_ROW_SQL = f"INSERT {{verb}} INTO tasks ({', '.join(TASK_COLUMNS)}) VALUES {{rows}}"
_ONE_ROW = f"({','.join('?' * len(TASK_COLUMNS))})"
_KEEP_RUNNING_ROWS = _TASK_ROW_SQL.format(
    verb="OR IGNORE", rows=_ONE_ROW
)  # never over a finished row
# SQLite before 3.32 takes at most 999 parameters in one statement, later ones 32766.
ROWS_PER_STATEMENT = 50 if sqlite3.sqlite_version_info >= (3, 32, 0) else 999 // len(TASK_COLUMNS)
_NOT_MEASURED = (None,) * len(PROFILE_VALUE_NAMES)


@functools.lru_cache(maxsize=ROWS_PER_STATEMENT)
def _keep_finished_rows(count: int) -> str:
    """One INSERT of ``count`` finished rows: SQLite takes them in one step, without the GIL.
    ``executemany`` would hand the GIL back and forth once per row, and each time take it
    from a task that is running Python (after a 5 ms switch interval, a forced switch)."""
    return _TASK_ROW_SQL.format(verb="OR REPLACE", rows=",".join([_ONE_ROW] * count))


def _running_row(task: TaskRecord) -> tuple:
    """The row of a task that has started: only what is fixed by then, so building it later is safe."""
    return (
        task.id,
        task.run_id,
        task.name,
        task.stage,
        "running",
        task.parent_id,
        _dumps(task.depends_on),
        task.start_ns,
        None,
        task.trace_id,
        task.span_id,
        task.parent_span_id,
        None,
        None,
        "{}",
        None,
        *_NOT_MEASURED,
    )


def _upgraded(row: list) -> list:
    """A journal row of ``V1_TASK_COLUMNS`` (a process of an older llqm died with it) as a row of ``TASK_COLUMNS``."""
    old = dict(zip(V1_TASK_COLUMNS, row))
    profile = old.pop("profile")
    if isinstance(profile, str):
        profile = json.loads(profile)
    values = Profile.from_dict(profile).values() if profile else _NOT_MEASURED
    return [*old.values(), *values]


#: The columns kept as JSON text, each with its text when empty (most tasks': no encoder call for it).
_JSON_COLUMNS = ((TASK_COLUMNS.index("depends_on"), "[]"), (TASK_COLUMNS.index("metrics"), "{}"))


def _stored_row(row: list) -> list:
    """A journaled row as SQLite keeps it: its list and dict as JSON text (an older journal's
    rows may hold the text already)."""
    row = list(row)
    for column, empty in _JSON_COLUMNS:
        value = row[column]
        if value is not None and not isinstance(value, str):
            row[column] = _dumps(value) if value else empty
    return row


_JOURNAL_WIDTHS = (len(TASK_COLUMNS), len(V1_TASK_COLUMNS))


def _journaled_rows(journal: JournalFile) -> list[list]:
    return [row if len(row) == len(TASK_COLUMNS) else _upgraded(row) for row in journal.rows]


def _foreign_file(path: Path) -> StoreError:
    return StoreError(
        f"{path} is an SQLite database but not an LLQM profile store; choose another file."
    )


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Bring the schema up to ``SCHEMA_VERSION`` in one transaction (another process may be doing the same)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 0 and conn.execute("SELECT name FROM sqlite_master").fetchall():
            raise _foreign_file(path)
        for step in range(version, SCHEMA_VERSION):
            for statement in MIGRATIONS[step].split(";"):
                if statement.strip():
                    conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def default_store_path() -> Path:
    """``$LLQM_STORE``, else ``$XDG_DATA_HOME/llqm/profiles.sqlite`` (``~/.local/share/llqm/...``)."""
    if os.environ.get(STORE_ENV):
        return Path(os.environ[STORE_ENV]).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return Path(data_home) / "llqm" / "profiles.sqlite"


class ProfileStore:
    """A connection to one store file; safe to share between the threads of a process."""

    def __init__(self, path: str | os.PathLike | None = None, *, readonly: bool = False) -> None:
        self.path = Path(path).expanduser() if path is not None else default_store_path()
        self.readonly = readonly
        self._lock = threading.RLock()
        self._write_failed = False
        self._journal_warned = False
        self._dirty = False
        self._closed = False
        self._start_afresh()
        self._open()
        if not readonly:
            _writable.add(self)
            self._fold_dead_journals()

    def _open(self) -> None:
        """Connect and bring the schema up to date. Processes that create one store at once can
        find it locked in ways SQLite's busy handler does not wait out (switching a new file to
        WAL): they try again, up to the busy timeout."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            conn = None
            try:
                self._conn = conn = self._connect()
                self._check_schema()
                return
            except sqlite3.DatabaseError as exc:
                if conn is not None:
                    conn.close()
                locked = isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)
                if not locked or time.monotonic() > deadline:
                    raise StoreError(
                        f"{self.path} is not a readable LLQM profile store (SQLite says: {exc})."
                    ) from None
                time.sleep(0.05)

    def _start_afresh(self) -> None:
        """The per-process half of the store: what a forked child must not share with its parent."""
        self._pid = os.getpid()
        self._queue_lock = (
            threading.Lock()
        )  # held by tasks only for moments: never while SQLite works
        self._pending: dict[
            str, TaskRecord
        ] = {}  # started tasks whose running row is not written yet
        self._finished: list[list] = []  # journaled rows of finished tasks, not yet in SQLite
        self._journal: TaskJournal | None = None
        self._wake = threading.Event()  # rows are queued: commit them within DRAIN_INTERVAL_S
        self._woken = (
            False  # set with ``_wake`` by a task, reset by the writer: a plain read at every task
        )
        self._hurry = threading.Event()  # commit now: many rows queued, or the store is closing
        self._writer: threading.Thread | None = None

    def _reopen_in_child(self) -> None:
        """After a fork: the parent's rows, journal, writer thread and SQLite connection stay the parent's."""
        self._lock = threading.RLock()
        self._start_afresh()
        try:
            self._conn = self._connect()
        except (sqlite3.Error, StoreError):
            self._write_failed = True

    def _connect(self) -> sqlite3.Connection:
        if self.readonly:
            if not self.path.is_file():
                raise StoreError(
                    f"there is no profile store at {self.path}; run a pipeline first, or point --store or {STORE_ENV} at an existing store."
                )
            conn = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
            )
        else:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                if not self.path.exists():
                    os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            except OSError as exc:
                raise StoreError(
                    f"cannot create the profile store at {self.path}: {exc.strerror}."
                ) from None
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(
                "PRAGMA wal_autocheckpoint = 0"
            )  # checkpoints run off the hot path, see _checkpoint_loop
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.row_factory = sqlite3.Row
        return conn

    def _check_schema(self) -> None:
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has store schema version {version}, newer than this llqm understands ({SCHEMA_VERSION}); upgrade llqm to read it."
            )
        if version == SCHEMA_VERSION:
            return
        if self.readonly:
            if version == 0 and not self._conn.execute("SELECT name FROM sqlite_master").fetchall():
                raise StoreError(
                    f"{self.path} is an empty file, not an LLQM profile store yet; run a pipeline into it first."
                )
            if version == 0:
                raise _foreign_file(self.path)
            self._upgrade_for_reader(version)
            return
        with self._lock:
            _migrate(self._conn, self.path)

    def _upgrade_for_reader(self, version: int) -> None:
        """A report on a store that an older llqm wrote upgrades it first, where the file can be written."""
        try:
            conn = sqlite3.connect(self.path, isolation_level=None)
            try:
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                _migrate(conn, self.path)
            finally:
                conn.close()
        except sqlite3.OperationalError as exc:
            raise StoreError(
                f"{self.path} has store schema version {version} and cannot be upgraded to {SCHEMA_VERSION} "
                f"here (SQLite says: {exc}); open it once where it can be written."
            ) from None

    def close(self) -> None:
        """Commit what is queued, fold the WAL into the database file and close it.

        Run at exit for every writable store, so that the store is one self-contained file
        again (a copy of it alone holds every run)."""
        if self._closed:
            return
        with self._lock:
            if not self.readonly:
                self._guarded(self._commit)
            self._closed = True
        self._wake.set()
        self._hurry.set()
        if self._writer is not None:
            self._writer.join(timeout=2.0)
        with self._lock:
            if not self.readonly:
                if self._journal is not None and not self._journal.holds_rows:
                    self._journal.remove()  # a journal that still holds rows is left for the next writer
                    self._journal = None
                try:
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                except sqlite3.Error:
                    pass  # another process is using the store; it will checkpoint later
            self._conn.close()

    def _fold_dead_journals(self) -> None:
        """Commit the journals that processes now gone left behind (a kill, a crash), and delete them."""
        for journal in read_journals(self.path, _JOURNAL_WIDTHS):
            if journal.owner is None or not journal.owner.is_gone():
                continue
            with self._lock:
                with self._queue_lock:
                    self._finished.extend(_journaled_rows(journal))
                self._guarded(self._commit)
            if self._write_failed:
                return
            journal.path.unlink(missing_ok=True)

    def _start_writer(self) -> None:
        if self._writer is None:
            self._writer = threading.Thread(
                target=self._writer_loop, name="llqm-store-writer", daemon=True
            )
            self._writer.start()

    def _writer_loop(self) -> None:
        """Commit journaled rows and queued start rows, and checkpoint the WAL, off the tasks' path.

        Woken by a task's start or end, it waits ``DRAIN_INTERVAL_S`` first (less when
        ``MAX_QUEUED_ROWS`` wait, or the store closes), so that one commit takes every row of
        that while: a pipeline of short tasks sees one commit per interval, not one per task
        (each holds the store's lock, and the GIL, while a task may wait; between 20 ms tasks
        one commit costs milliseconds of cold SQLite code). Journaled rows, which readers merge
        in anyway, are taken once per ``FINISHED_ROWS_WAIT_S`` at most, unless a commit happens
        anyway. Start rows wait until their task has run ``START_ROW_DELAY_S``: a shorter task's
        finish row replaces its start row. A checkpoint writes and syncs many pages at once: left
        to SQLite, it would fall on whichever commit comes then."""
        checkpoints = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        checkpoints.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        last_checkpoint = time.monotonic()
        rows_due_at = 0.0  # from when journaled rows are committed again
        try:
            while not self._closed:
                self._wake.wait(CHECKPOINT_INTERVAL_S)
                hurried = self._hurry.wait(DRAIN_INTERVAL_S)
                self._wake.clear()
                self._woken = False  # after the clear: a task that still saw True queued its row before, and the commit below sees it
                self._hurry.clear()
                with self._lock:
                    if self._closed:
                        break
                    rows_due = hurried or time.monotonic() >= rows_due_at
                    self._guarded(
                        functools.partial(
                            self._commit,
                            started_by_ns=time.time_ns() - int(START_ROW_DELAY_S * 1e9),
                            rows_due=rows_due,
                        )
                    )
                    if rows_due:
                        rows_due_at = time.monotonic() + FINISHED_ROWS_WAIT_S
                    if self._pending or self._finished:
                        self._wake.set()  # tasks too young to keep, or rows not due yet: look again after the interval
                if self._dirty and time.monotonic() - last_checkpoint >= CHECKPOINT_INTERVAL_S:
                    self._dirty = False
                    last_checkpoint = time.monotonic()
                    try:
                        checkpoints.execute("PRAGMA wal_checkpoint(PASSIVE)")
                    except sqlite3.Error:
                        pass  # another process holds the lock; the next round or another writer checkpoints
        finally:
            checkpoints.close()

    # -- writing -----------------------------------------------------------------------

    def _guarded(self, action: Callable[[], None]) -> None:
        """Run a write; a failure warns once and the pipeline goes on without the store."""
        if self._write_failed:
            return
        try:
            action()
            self._dirty = True
        except sqlite3.Error as exc:
            self._write_failed = True
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            warnings.warn(f"profiles are no longer being kept in {self.path}: {exc}", stacklevel=4)

    def _write(self, sql: str, params: tuple) -> None:
        with self._lock:
            self._guarded(lambda: self._commit(sql, params))
            self._start_writer()

    def _commit(
        self,
        sql: str | None = None,
        params: tuple = (),
        started_by_ns: int | None = None,
        rows_due: bool = True,
    ) -> None:
        """One statement (if any), the journaled finished rows and the queued running rows
        (those of tasks started by ``started_by_ns``, else all), committed together; then the
        journal is emptied if no task finished meanwhile. The journaled rows stay queued when
        they are not ``rows_due`` and nothing else is committed. Call with ``_lock`` held."""
        with self._queue_lock:
            # A copy: ``start_task`` adds to ``_pending`` without the lock, which iterating it directly would not survive.
            running = [
                t
                for t in list(self._pending.values())
                if started_by_ns is None or t.start_ns <= started_by_ns
            ]
            for task in running:
                del self._pending[task.id]
            finished = []
            if rows_due or running or sql is not None:
                finished, self._finished = self._finished, []
        if not finished and not running:
            if sql is not None:
                self._conn.execute(sql, params)
            return
        self._conn.execute("BEGIN")
        if sql is not None:
            self._conn.execute(sql, params)
        self._conn.executemany(_KEEP_RUNNING_ROWS, [_running_row(t) for t in running])
        for first in range(0, len(finished), ROWS_PER_STATEMENT):
            chunk = finished[first : first + ROWS_PER_STATEMENT]
            self._conn.execute(
                _keep_finished_rows(len(chunk)),
                [value for row in chunk for value in _stored_row(row)],
            )
        self._conn.execute("COMMIT")
        with self._queue_lock:
            if not self._finished and self._journal is not None:
                self._journal.clear()

    def insert_run(self, run: RunRecord) -> None:
        self._write(
            "INSERT INTO runs (id, name, status, start_ns, end_ns, trace_id, span_id, parent_span_id, error, span_owned,"
            " config, resource, pid, host, process_started) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run.id,
                run.name,
                run.status.value,
                run.start_ns,
                run.end_ns,
                run.trace_id,
                run.span_id,
                run.parent_span_id,
                run.error,
                int(run.span_owned),
                _dumps(run.config),
                _dumps(run.resource),
                run.pid,
                run.host,
                run.process_started,
            ),
        )

    def finish_run(self, run: RunRecord) -> None:
        self._write(
            "UPDATE runs SET status = ?, end_ns = ?, error = ? WHERE id = ?",
            (run.status.value, run.end_ns, run.error, run.id),
        )

    def start_task(self, task: TaskRecord) -> None:
        """Queue the running task's row: the writer thread keeps it within ``DRAIN_INTERVAL_S``,
        so a crash shows what was in flight, without a commit on the task's own path."""
        self._pending[task.id] = (
            task  # one dict operation, atomic under the GIL: the writer reads a copy
        )
        if not self._woken:
            self._wake_writer()

    def finish_task(self, task: TaskRecord) -> None:
        """Keep the ended task with its profile before the task returns: one append to this
        process's journal, committed to SQLite by the writer thread.

        The row is the journal's (``TASK_COLUMNS``, the list and dict as they are, so that the task's
        own path encodes it once, as a compact frame); ``_stored_row`` makes the SQLite row of it."""
        row = [  # ``_value_`` is the member's plain attribute; ``.value`` is a property, a call per task
            task.id,
            task.run_id,
            task.name,
            task.stage,
            task.status._value_,
            task.parent_id,
            list(task.depends_on),
            task.start_ns,
            task.end_ns,
            task.trace_id,
            task.span_id,
            task.parent_span_id,
            task.error,
            task.error_type,
            dict(task.metrics),
            task.hardware,
            *task.profile.values(),
        ]
        frame = encode_row(row)
        with self._queue_lock:
            self._pending.pop(task.id, None)  # the finished row supersedes the running one
            self._finished.append(row)
            try:
                if self._journal is None:
                    self._journal = TaskJournal(self.path)
                self._journal.append(frame)
                journaled = True
            except OSError as exc:
                journaled = False
                self._journal_broken(exc)
        if journaled:
            if not self._woken:
                self._wake_writer()
            if len(self._finished) >= MAX_QUEUED_ROWS and not self._hurry.is_set():
                self._hurry.set()
        else:
            self._write(None, ())  # no journal: commit now, as the guarantee asks

    def _wake_writer(self) -> None:
        """Have the writer commit within ``DRAIN_INTERVAL_S``: called while ``_woken`` is False."""
        if self._writer is None:
            with self._lock:
                self._start_writer()
        self._woken = True
        self._wake.set()

    def _journal_broken(self, exc: OSError) -> None:
        if not self._journal_warned:
            self._journal_warned = True
            warnings.warn(
                f"the journal beside {self.path} cannot be written ({exc.strerror}); each task is committed "
                "to SQLite as it ends instead, which is slower.",
                stacklevel=4,
            )

    def save_snapshot(self, snapshot: HardwareSnapshot) -> str:
        fingerprint = snapshot.fingerprint
        self._write(
            "INSERT OR IGNORE INTO hardware_snapshots (fingerprint, backend, taken_at, data) VALUES (?,?,?,?)",
            (fingerprint, snapshot.backend, snapshot.taken_at, _dumps(snapshot.to_dict())),
        )
        return fingerprint

    def save_decision(self, decision: PolicyDecision) -> None:
        self._write(
            "INSERT INTO decisions (run_id, task_id, policy, choice, inputs, rationale, made_at) VALUES (?,?,?,?,?,?,?)",
            (
                decision.run_id,
                decision.task_id,
                decision.policy,
                _dumps(decision.choice),
                _dumps(decision.inputs),
                decision.rationale,
                decision.made_at,
            ),
        )

    # -- reading -----------------------------------------------------------------------

    def _query(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
        try:
            with self._lock:
                return self._conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} could not be read (SQLite says: {exc}).") from None

    def runs(self, limit: int | None = None) -> list[RunRecord]:
        sql = "SELECT * FROM runs ORDER BY start_ns DESC" + (" LIMIT ?" if limit else "")
        return [self._run(row) for row in self._query(sql, (limit,) if limit else ())]

    def run(self, run_id: str | None = None) -> RunRecord:
        """The run with this id (or unique id prefix); the latest run when ``run_id`` is None."""
        if run_id is None:
            rows = self._query("SELECT * FROM runs ORDER BY start_ns DESC LIMIT 1")
            if not rows:
                raise StoreError(
                    f"the profile store {self.path} holds no runs yet; run a pipeline first."
                )
            return self._run(rows[0])
        rows = []
        if re.fullmatch(r"[0-9a-f]+", run_id):
            rows = self._query(
                "SELECT * FROM runs WHERE id LIKE ? ORDER BY start_ns DESC LIMIT 2", (run_id + "%",)
            )
        if not rows:
            raise StoreError(
                f"there is no run with id {run_id!r} in {self.path}; `llqm runs` lists the run ids."
            )
        if len(rows) > 1:
            raise StoreError(
                f"run id prefix {run_id!r} matches more than one run in {self.path}; give more of the id."
            )
        return self._run(rows[0])

    def tasks(self, run_id: str) -> list[TaskRecord]:
        """The run's tasks in start order: those in SQLite and those still in a journal."""
        run = self.run(run_id)
        # Journals first: a row leaves a journal only once committed, so read in this order none is missed.
        journaled = {
            row[0]: row
            for journal in read_journals(self.path, _JOURNAL_WIDTHS)
            for row in _journaled_rows(journal)
            if row[1] == run.id
        }
        stored = self._query(
            "SELECT * FROM tasks WHERE run_id = ? ORDER BY start_ns, rowid", (run.id,)
        )
        rows = [journaled.pop(row["id"], row) for row in stored] + list(journaled.values())
        tasks = [
            self._task(
                row if isinstance(row, sqlite3.Row) else dict(zip(TASK_COLUMNS, _stored_row(row))),
                run.status,
            )
            for row in rows
        ]
        tasks.sort(key=lambda task: task.start_ns)
        return tasks

    def find_run(self, config_key: str, value: str) -> RunRecord | None:
        """The latest run whose configuration has ``config_key`` equal to ``value`` (e.g. an engine's run id)."""
        rows = self._query(
            "SELECT * FROM runs WHERE json_extract(config, ?) = ? ORDER BY start_ns DESC LIMIT 1",
            (f'$."{config_key}"', value),
        )
        return self._run(rows[0]) if rows else None

    def task_ids_by_metric(self, run_id: str, key: str, values: list[str]) -> dict[str, str]:
        """For each value, the latest task of the run whose metric ``key`` has it (e.g. an engine's task run id)."""
        wanted = set(values)
        return (
            {
                task.metrics[key]: task.id
                for task in self.tasks(run_id)
                if task.metrics.get(key) in wanted
            }
            if wanted
            else {}
        )

    def snapshot(self, fingerprint: str) -> HardwareSnapshot | None:
        rows = self._query(
            "SELECT data FROM hardware_snapshots WHERE fingerprint = ?", (fingerprint,)
        )
        return HardwareSnapshot.from_dict(json.loads(rows[0]["data"])) if rows else None

    def snapshots(self, backend: str | None = None) -> list[tuple[str, str, float]]:
        """(fingerprint, backend, taken_at) of the stored snapshots, newest first."""
        rows = self._query(
            "SELECT fingerprint, backend, taken_at FROM hardware_snapshots"
            + (" WHERE backend = ?" if backend else "")
            + " ORDER BY taken_at DESC",
            (backend,) if backend else (),
        )
        return [(r["fingerprint"], r["backend"], r["taken_at"]) for r in rows]

    def find_snapshot(self, name: str) -> HardwareSnapshot:
        """A stored snapshot by fingerprint (or a unique prefix of it), or the latest of a backend by its name."""
        latest = self.snapshots(backend=name)
        if latest:
            return self.snapshot(latest[0][0])
        matches = [fp for fp, _, _ in self.snapshots() if fp.startswith(name)] if name else []
        if len(matches) == 1:
            return self.snapshot(matches[0])
        if len(matches) > 1:
            raise StoreError(
                f"snapshot prefix {name!r} matches {len(matches)} snapshots in {self.path}; give more of the fingerprint."
            )
        raise StoreError(
            f"there is no hardware snapshot {name!r} (a backend name or fingerprint) in {self.path}; "
            "`llqm hardware list` shows the stored ones."
        )

    def decisions(self, run_id: str) -> list[PolicyDecision]:
        return self._decisions(
            self._query("SELECT * FROM decisions WHERE run_id = ? ORDER BY id", (run_id,))
        )

    def policy_history(self, policy: str, limit: int = 100) -> list[PolicyDecision]:
        """A policy's latest decisions over all runs, newest first: what a policy learns from."""
        return self._decisions(
            self._query(
                "SELECT * FROM decisions WHERE policy = ? ORDER BY id DESC LIMIT ?", (policy, limit)
            )
        )

    @staticmethod
    def _decisions(rows: list[sqlite3.Row]) -> list[PolicyDecision]:
        return [
            PolicyDecision(
                policy=r["policy"],
                choice=json.loads(r["choice"]),
                rationale=r["rationale"],
                inputs=json.loads(r["inputs"]),
                run_id=r["run_id"],
                task_id=r["task_id"],
                made_at=r["made_at"],
            )
            for r in rows
        ]

    def _run(self, row: sqlite3.Row) -> RunRecord:
        run = RunRecord(
            id=row["id"],
            name=row["name"],
            status=RunStatus(row["status"]),
            start_ns=row["start_ns"],
            end_ns=row["end_ns"],
            trace_id=row["trace_id"],
            span_id=row["span_id"],
            parent_span_id=row["parent_span_id"],
            error=row["error"],
            span_owned=bool(row["span_owned"]),
            config=json.loads(row["config"]),
            resource=json.loads(row["resource"]),
            pid=row["pid"],
            host=row["host"],
            process_started=row["process_started"],
        )
        if (
            run.status is RunStatus.RUNNING
            and run.pid is not None
            and Owner(run.host, run.pid, run.process_started).is_gone()
        ):
            run.status = RunStatus.INTERRUPTED
        return run

    @staticmethod
    def _task(row: sqlite3.Row, run_status: RunStatus) -> TaskRecord:
        status = TaskStatus(row["status"])
        if status is TaskStatus.RUNNING and run_status is not RunStatus.RUNNING:
            status = (
                TaskStatus.INTERRUPTED
            )  # its run ended without it: its process died (a killed worker)
        return TaskRecord(
            id=row["id"],
            run_id=row["run_id"],
            name=row["name"],
            stage=row["stage"],
            status=status,
            start_ns=row["start_ns"],
            end_ns=row["end_ns"],
            trace_id=row["trace_id"],
            span_id=row["span_id"],
            parent_id=row["parent_id"],
            parent_span_id=row["parent_span_id"],
            depends_on=json.loads(row["depends_on"]),
            error=row["error"],
            error_type=row["error_type"],
            profile=Profile.from_values([row[c] for c in PROFILE_VALUE_NAMES])
            if row["wall_s"] is not None
            else Profile(),
            metrics=json.loads(row["metrics"]),
            hardware=row["hardware"],
        )


_writable: weakref.WeakSet[ProfileStore] = weakref.WeakSet()


@atexit.register
def _close_writable_stores() -> None:
    for store in list(_writable):
        try:
            store.close()
        except Exception:  # at exit, a store that cannot close cleanly is left to SQLite's recovery
            pass


def _reopen_writable_stores_in_child() -> None:
    for store in list(_writable):
        if not store._closed:
            store._reopen_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reopen_writable_stores_in_child)


_stores: dict[Path, ProfileStore] = {}
_stores_lock = threading.Lock()


def open_store(path: str | os.PathLike | None = None) -> ProfileStore:
    """A writable store for ``path`` (default location when None), shared within the process."""
    resolved = (Path(path).expanduser() if path is not None else default_store_path()).resolve()
    with _stores_lock:
        store = _stores.get(resolved)
        if store is None or store._pid != os.getpid():
            store = ProfileStore(resolved)
            _stores[resolved] = store
        return store
