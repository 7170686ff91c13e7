"""The profile store: where every run, task, snapshot and decision is kept.

``ProfileStore`` is the one interface the rest of LLQM uses, whatever keeps the rows: an SQLite
file by default, or a PostgreSQL database named by a ``postgresql://`` URL (``backend``).
Behind it a ``StoreWriter`` (``writer``) keeps what a run hands over and a ``StoreReader``
(``reader``) answers queries, each with its own connection. Each task is kept when it ends,
before control returns to the caller, so a crash or a kill keeps everything that finished
before it. Several processes write runs into one store while reports read it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..model.errors import StoreError
from ..model.records import (
    CachedValue,
    HardwareSnapshot,
    KeptResult,
    LaterPayload,
    PolicyDecision,
    RunRecord,
    TaskRecord,
    TaskRow,
)
from . import analyses
from .backend import StoreBackend
from .reader import StoreReader
from .schema import STORE_ENV
from .sqlite_backend import SQLiteBackend
from .writer import StoreWriter, WriterState

#: The URL schemes that name a PostgreSQL store (libpq's own two).
DATABASE_SCHEMES = ("postgresql://", "postgres://")
StoreLocation = str | os.PathLike


def is_database_url(location: StoreLocation) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than an SQLite file.

    Args:
        location: a store's location as a user gives it (a path or a URL).
    """
    return isinstance(location, str) and location.lower().startswith(DATABASE_SCHEMES)


def default_store_location() -> str:
    """``$LLQM_STORE`` (a file path or a ``postgresql://`` URL), else ``default_store_path()``."""
    return os.environ.get(STORE_ENV) or str(default_store_path())


def default_store_path() -> Path:
    """The default SQLite file: ``$XDG_DATA_HOME/llqm/profiles.sqlite`` (``~/.local/share/llqm/...``),
    or ``$LLQM_STORE`` when that names a file."""
    if os.environ.get(STORE_ENV) and not is_database_url(os.environ[STORE_ENV]):
        return Path(os.environ[STORE_ENV]).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return Path(data_home) / "llqm" / "profiles.sqlite"


def store_backend(location: StoreLocation | None = None) -> StoreBackend:
    """The backend for a path or URL (the default store when None)."""
    if location is None:
        location = default_store_location()
    if is_database_url(location):
        from .postgres_backend import PostgresBackend  # its driver is an extra: only when asked

        return PostgresBackend(str(location))
    return SQLiteBackend(Path(location).expanduser())


def store_exists(location: StoreLocation | None = None) -> bool:
    """Whether a store is there to read (the default store when None); creates nothing."""
    return store_backend(location).exists()


class ProfileStore:
    """One store, read and (unless ``readonly``) written; safe to share between threads.

    ``location`` is an SQLite file's path or a ``postgresql://`` URL (None: the default store).
    A reading store never creates or changes the store, except to upgrade an older SQLite
    schema where the file can be written."""

    def __init__(self, location: StoreLocation | None = None, *, readonly: bool = False) -> None:
        self.backend = store_backend(location)
        #: What reopens this store (``--store``, ``LLQM_STORE``): it may hold a password.
        self.location = self.backend.location
        #: How messages and tables name this store: never with a password.
        self.name = self.backend.name
        #: The SQLite file; None for a database store.
        self.path: Path | None = getattr(self.backend, "path", None)
        self.readonly = readonly
        self._writer: StoreWriter | None = None
        self._snapshots: set[str] = set()  # fingerprints of the snapshots written from here
        self.backend.prepare(readonly)
        if not readonly:
            self._writer = StoreWriter(self.backend, self.backend.connect_writer())
        self._reader = StoreReader(self.backend, readonly, self.backend.connect(readonly))
        if self._writer is not None:
            self._writer.fold_dead_journals()

    @property
    def closed(self) -> bool:
        return self._writer is not None and self._writer.state is WriterState.CLOSED

    # -- writing: what a run hands over -------------------------------------------------

    def _writing(self) -> StoreWriter:
        if self._writer is None:
            raise StoreError(f"{self.name} was opened for reading only; it cannot keep a run.")
        return self._writer

    def insert_run(self, run: RunRecord) -> None:
        self._writing().insert_run(run)

    def finish_run(self, run: RunRecord) -> None:
        self._writing().finish_run(run)

    def start_task(self, task: TaskRow) -> None:
        """Queue the running task's row, kept within seconds so that a crash shows it (``task``:
        its record, or its live handle)."""
        self._writing().start_task(task)

    def finish_task(self, task: TaskRow) -> None:
        """Keep the ended task with its profile before the task returns."""
        self._writing().finish_task(task)

    def record_in_flight(self, rows: list[list]) -> None:
        """Replace this process's record of its running tasks (``in_flight``) with ``rows``:
        what a kill leaves of them. The shared sampler calls it at each tick."""
        if self._writer is not None:
            self._writer.record_in_flight(rows)

    def save_snapshot(self, snapshot: HardwareSnapshot) -> str:
        """Commit a calibration snapshot at once, once: every later job on the same calibration
        names it by its fingerprint (a 156-qubit device's is ~8 ms of JSON and a commit)."""
        fingerprint = snapshot.fingerprint
        if fingerprint not in self._snapshots:
            self._store_snapshot(snapshot)
            self._snapshots.add(fingerprint)
        return fingerprint

    def _store_snapshot(self, snapshot: HardwareSnapshot) -> None:
        self._writing().save_snapshot(snapshot)

    def save_decision(self, decision: PolicyDecision) -> None:
        self._writing().save_decision(decision)

    def save_result(self, result: KeptResult, later: LaterPayload | None = None) -> None:
        """Keep what a device returned (``KeptResult``), committed by the writer's next commit
        (within seconds, and at the run's end); ``later`` makes its data then."""
        self._writing().save_result(result, later)

    def keep_cached(self, value: CachedValue, max_bytes: int) -> bool:
        """Keep a value a plugin computed for later runs (``store.cached``), committed by the
        writer's next commit, after which ``value.namespace`` is cut to ``max_bytes`` (least
        recently used entries first); False, and nothing kept, for a value larger than that."""
        if len(value.data) > max_bytes:
            return False
        self._writing().keep_cached(value, max_bytes)
        return True

    def cached(self, namespace: str, keys: list[str]) -> dict[str, CachedValue]:
        """The values kept in ``namespace`` under any of ``keys`` (``keep_cached``), by key; a
        writable store marks them used now."""
        found = self._reader.cached(namespace, keys)
        if found and self._writer is not None:
            self._writer.use_cached(namespace, list(found), time.time())
        return found

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

    def task_pages(self, run: RunRecord, size: int = 2000) -> Iterator[list[TaskRecord]]:
        """The run's tasks in start order, a page at a time: a listing of any size streams."""
        return self._reader.task_pages(run, size)

    def tasks_by_id(self, run: RunRecord, ids: list[str]) -> list[TaskRecord]:
        return self._reader.tasks_by_id(run, ids)

    def task_outlines(self, run: RunRecord) -> list[TaskRecord]:
        """The run's tasks with what analyses read (``StoreReader.task_outlines``)."""
        return self._reader.task_outlines(run)

    def stage_figures(self, run: RunRecord) -> tuple[dict[str, dict[str, Any]], float] | None:
        """Per stage, the figures of ``analysis.report.stage_totals`` added up in the database,
        and every ended task's own CPU seconds; None while some tasks are only in a journal."""
        return self._reader.stage_figures(run)

    def own_times(self, run: RunRecord) -> dict[str, tuple[float, float]] | None:
        """Each ended task's own (wall, CPU) seconds (``analysis.summary.exclusive_times``), found
        in the database; None while some tasks are only in a journal."""
        return self._reader.own_times(run)

    def analysis_stamp(self, run: RunRecord) -> str | None:
        """What the run holds now (``analyses.stamp``); None while it may still change."""
        return analyses.stamp(self._reader, run)

    def kept_analysis(self, run: RunRecord) -> dict[str, Any] | None:
        """The analysis kept for the run (``analyses``) while the run is as it was then."""
        return analyses.read(self._reader, run)[1]

    def keep_analysis(self, run: RunRecord, stamp: str, analysis: dict[str, Any]) -> bool:
        """Keep the run's analysis (plain JSON data) under ``stamp``, where the store takes it."""
        return analyses.keep(self._reader, run, stamp, analysis)

    def stage_names(self, run_id: str) -> set[str]:
        """The stages the run's (full id) tasks ran, committed or still in a journal."""
        return self._reader.stage_names(run_id)

    def count_tasks(self, run_id: str) -> int:
        """How many tasks the run (its full id) has, committed or still in a journal."""
        return self._reader.count_tasks(run_id)

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

    def results(
        self, run_id: str, kind: str | None = None, *, data: bool = True
    ) -> list[KeptResult]:
        """What the run kept of what its devices returned, in the order kept (of ``kind`` only,
        when given; without their payloads when ``data`` is false: sizes and meta only)."""
        return self._reader.results(run_id, kind, data=data)


_stores: dict[str, ProfileStore] = {}
_stores_lock = threading.Lock()


def store_key(location: StoreLocation | None = None) -> str:
    """One name per store: an SQLite file's resolved path, a database's URL."""
    backend = store_backend(location)
    return str(backend.path.resolve()) if isinstance(backend, SQLiteBackend) else backend.location


def open_store(location: StoreLocation | None = None) -> ProfileStore:
    """A writable store for ``location`` (the default store when None), shared within the process.

    Args:
        location: an SQLite file's path or a ``postgresql://`` URL; None for the default store.
    """
    key = store_key(location)
    with _stores_lock:
        store = _stores.get(key)
        if store is None or store.closed:
            store = ProfileStore(key)
            _stores[key] = store
        return store
