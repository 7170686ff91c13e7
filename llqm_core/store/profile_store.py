"""The profile store: one SQLite file that keeps every run, task, snapshot and decision.

``ProfileStore`` is the one interface the rest of LLQM uses; behind it a ``StoreWriter``
(``writer``) keeps what a run hands over and a ``StoreReader`` (``reader``) answers queries,
each with its own connection. Each task is kept when it ends, before control returns to the
caller, so a crash or a kill keeps everything that finished before it. WAL mode lets several
processes write runs into one store while reports read it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

from ..model.errors import StoreError
from ..model.records import HardwareSnapshot, PolicyDecision, RunRecord, TaskRecord
from .reader import StoreReader, connect_for_reading
from .schema import BUSY_TIMEOUT_MS, SCHEMA_VERSION, STORE_ENV, migrate, version_of
from .writer import StoreWriter, WriterState, connect_for_writing


def default_store_path() -> Path:
    """``$LLQM_STORE``, else ``$XDG_DATA_HOME/llqm/profiles.sqlite`` (``~/.local/share/llqm/...``)."""
    if os.environ.get(STORE_ENV):
        return Path(os.environ[STORE_ENV]).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return Path(data_home) / "llqm" / "profiles.sqlite"


class ProfileStore:
    """One store file, read and (unless ``readonly``) written; safe to share between threads.

    A reading store never creates or changes the file, except to upgrade an older schema where
    the file can be written."""

    def __init__(self, path: str | os.PathLike | None = None, *, readonly: bool = False) -> None:
        self.path = Path(path).expanduser() if path is not None else default_store_path()
        self.readonly = readonly
        self._writer: StoreWriter | None = None
        if readonly:
            conn = self._open(lambda path: connect_for_reading(path, readonly=True))
            self._reader = StoreReader(self.path, True, conn)
        else:
            self._create_file()
            self._writer = StoreWriter(self.path, self._open(connect_for_writing))
            self._reader = StoreReader(self.path, False, connect_for_reading(self.path, False))
            self._writer.fold_dead_journals()

    @property
    def closed(self) -> bool:
        return self._writer is not None and self._writer.state is WriterState.CLOSED

    # -- opening ------------------------------------------------------------------------

    def _open(self, connect) -> sqlite3.Connection:
        """Connect and bring the schema up to date. Processes that create one store at once can
        find it locked in ways SQLite's busy handler does not wait out (switching a new file to
        WAL): they try again, up to the busy timeout."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            conn = None
            try:
                conn = connect(self.path)
                self._bring_up_to_date(conn)
                return conn
            except sqlite3.DatabaseError as exc:
                if conn is not None:
                    conn.close()
                locked = isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)
                if not locked or time.monotonic() > deadline:
                    raise StoreError(
                        f"{self.path} is not a readable LLQM profile store (SQLite says: {exc})."
                    ) from None
                time.sleep(0.05)
            except BaseException:
                if conn is not None:
                    conn.close()
                raise

    def _bring_up_to_date(self, conn: sqlite3.Connection) -> None:
        version = version_of(conn, self.path)
        if version == SCHEMA_VERSION:
            return
        if not self.readonly:
            migrate(conn, self.path)
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
                migrate(conn, self.path)
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

    # -- writing: what a run hands over -------------------------------------------------

    def _writing(self) -> StoreWriter:
        if self._writer is None:
            raise StoreError(f"{self.path} was opened for reading only; it cannot keep a run.")
        return self._writer

    def insert_run(self, run: RunRecord) -> None:
        self._writing().insert_run(run)

    def finish_run(self, run: RunRecord) -> None:
        self._writing().finish_run(run)

    def start_task(self, task: TaskRecord) -> None:
        """Queue the running task's row, kept within seconds so that a crash shows it."""
        self._writing().start_task(task)

    def finish_task(self, task: TaskRecord) -> None:
        """Keep the ended task with its profile before the task returns."""
        self._writing().finish_task(task)

    def save_snapshot(self, snapshot: HardwareSnapshot) -> str:
        return self._writing().save_snapshot(snapshot)

    def save_decision(self, decision: PolicyDecision) -> None:
        self._writing().save_decision(decision)

    def save_hardware_change(
        self,
        backend: str,
        fingerprint: str | None,
        seen_at: float,
        run_id: str | None = None,
        error: str | None = None,
    ) -> None:
        """Keep a point of ``backend``'s timeline: the calibration ``fingerprint`` came into force
        at ``seen_at`` (its snapshot saved with ``save_snapshot``), or reading it failed (``error``)."""
        self._writing().save_hardware_change(backend, fingerprint, seen_at, run_id, error)

    def close(self) -> None:
        """Commit what is queued and close; run at exit for every writable store."""
        if self._writer is not None:
            self._writer.close()
        self._reader.close()

    # -- reading ------------------------------------------------------------------------

    def runs(self, limit: int | None = None) -> list[RunRecord]:
        return self._reader.runs(limit)

    def run(self, run_id: str | None = None) -> RunRecord:
        """The run with this id (or unique id prefix); the latest run when ``run_id`` is None."""
        return self._reader.run(run_id)

    def tasks(self, run_id: str) -> list[TaskRecord]:
        """The run's tasks in start order, those still in a journal included."""
        return self._reader.tasks(run_id)

    def find_run(self, config_key: str, value: str) -> RunRecord | None:
        return self._reader.find_run(config_key, value)

    def find_runs(self, config_key: str, value: str, *, prefix: bool = False) -> list[RunRecord]:
        return self._reader.find_runs(config_key, value, prefix=prefix)

    def task_ids_by_metric(self, run_id: str, key: str, values: list[str]) -> dict[str, str]:
        return self._reader.task_ids_by_metric(run_id, key, values)

    def latest_task_with_metric(self, key: str, value: str) -> TaskRecord | None:
        return self._reader.latest_task_with_metric(key, value)

    def snapshot(self, fingerprint: str) -> HardwareSnapshot | None:
        return self._reader.snapshot(fingerprint)

    def snapshots(self, backend: str | None = None) -> list[tuple[str, str, float]]:
        return self._reader.snapshots(backend)

    def find_snapshot(self, name: str) -> HardwareSnapshot:
        return self._reader.find_snapshot(name)

    def hardware_changes(
        self, backend: str, since: float | None = None
    ) -> list[tuple[float, str | None, str | None, str | None]]:
        return self._reader.hardware_changes(backend, since)

    def decisions(self, run_id: str) -> list[PolicyDecision]:
        return self._reader.decisions(run_id)

    def policy_history(self, policy: str, limit: int = 100) -> list[PolicyDecision]:
        return self._reader.policy_history(policy, limit)


_stores: dict[Path, ProfileStore] = {}
_stores_lock = threading.Lock()


def open_store(path: str | os.PathLike | None = None) -> ProfileStore:
    """A writable store for ``path`` (default location when None), shared within the process."""
    resolved = (Path(path).expanduser() if path is not None else default_store_path()).resolve()
    with _stores_lock:
        store = _stores.get(resolved)
        if store is None or store.closed:
            store = ProfileStore(resolved)
            _stores[resolved] = store
        return store
