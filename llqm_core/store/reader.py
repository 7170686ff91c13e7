"""Reading the store: the queries reports and policies ask, and rows turned back into records.

A reader merges the journals of this machine's writing processes into what the database holds,
so a task shows the moment it ends. A run or task whose process is gone while its row still says running
reads as interrupted.
"""

from __future__ import annotations

import gc
import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..model.errors import StoreError
from ..model.records import (
    CachedValue,
    HardwareSnapshot,
    KeptResult,
    PolicyDecision,
    RunRecord,
    TaskRecord,
    TaskStatus,
)
from . import aggregates, cached
from .backend import Row, StoreBackend
from .forking import hold_across_forks
from .in_flight import UNREAD_ROWS, read_in_flight, unread_until
from .journal import read_journals
from .row_records import (
    OUTLINE_COLUMNS,
    SELECT_TASKS,
    START_COLUMN,
    decision_record,
    outline_record,
    result_record,
    run_record,
    task_from_row,
    task_record,
)
from .schema import TASK_COLUMNS, older_row, stored_row

_STAGE, _STATUS = TASK_COLUMNS.index("stage"), TASK_COLUMNS.index("status")


class StoreReader:
    """The reading half of one store: one connection, used under one lock by every thread;
    a forked child opens its own at its first query."""

    def __init__(self, backend: StoreBackend, readonly: bool, conn: Any) -> None:
        self.backend = backend
        self.name = backend.name
        self.readonly = readonly
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._conn = conn
        hold_across_forks(self)

    def fork_locks(self) -> tuple[threading.Lock]:
        return (self._lock,)

    def after_fork_in_child(self) -> None:
        """The parent's connection stays the parent's: the child connects at its first query."""
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self.backend.close(self._conn, self._pid == os.getpid())

    def _connection(self) -> Any:
        """The connection to query with (hold ``_lock``): a forked child's own, and a new one
        where the old one is gone (a database server restarted)."""
        if self._pid != os.getpid() or self.backend.connection_lost(self._conn):
            self._pid, self._conn = os.getpid(), self.backend.connect(self.readonly)
        return self._conn

    def _ask(self, ask: Callable[[Any], list]) -> list:
        """``ask(connection)``; where it fails because the connection is gone (a database
        server restarted), once more on a new one."""
        try:
            with self._lock:
                try:
                    return ask(self._connection())
                except self.backend.errors:
                    if not self.backend.connection_lost(self._conn):
                        raise
                    return ask(self._connection())
        except self.backend.errors as exc:
            raise StoreError(
                f"{self.name} could not be read ({self.backend.describe_error(exc)})."
            ) from None

    def _query(self, sql: str, params: tuple = ()) -> list[Row]:
        return self._ask(lambda conn: self.backend.query(conn, sql, params))

    def _journal_rows(self) -> list[list]:
        """The finished rows in this machine's journals of the store, newest journal last."""
        journals = read_journals(self.backend.journal_base, len(TASK_COLUMNS), older_row)
        return [row for journal in journals for row in journal.rows]

    def runs(self, limit: int | None = None) -> list[RunRecord]:
        sql = "SELECT * FROM runs ORDER BY start_ns DESC" + (" LIMIT ?" if limit else "")
        return [run_record(row) for row in self._query(sql, (limit,) if limit else ())]

    def run(self, run_id: str | None = None) -> RunRecord:
        """The run with this id (or unique id prefix); the latest run when ``run_id`` is None."""
        if run_id is None:
            rows = self._query("SELECT * FROM runs ORDER BY start_ns DESC LIMIT 1")
            if not rows:
                raise StoreError(
                    f"the profile store {self.name} holds no runs yet; run a pipeline first."
                )
            return run_record(rows[0])
        rows = []
        if re.fullmatch(r"[0-9a-f]+", run_id):
            rows = self._query(
                "SELECT * FROM runs WHERE id LIKE ? ORDER BY start_ns DESC LIMIT 2", (run_id + "%",)
            )
        if not rows:
            raise StoreError(
                f"there is no run with id {run_id!r} in {self.name}; `llqm runs` lists the run ids."
            )
        if len(rows) > 1:
            raise StoreError(
                f"run id prefix {run_id!r} matches more than one run in {self.name}; "
                "give more of the id."
            )
        return run_record(rows[0])

    def _journaled(self, run_id: str) -> dict[str, list]:
        """The run's rows still in a journal (``TASK_COLUMNS``), by id. Read before the
        database: a row leaves a journal only once committed, so in this order none is missed."""
        journaled = {row[0]: stored_row(row) for row in self._journal_rows() if row[1] == run_id}
        cut_short = self._cut_short(run_id, journaled)
        journaled.update(cut_short)
        return journaled

    def _cut_short(self, run_id: str, journaled: dict[str, list]) -> dict[str, list]:
        """The run's tasks that a process now gone was running when it died, as its sampler
        last recorded them (``in_flight``), where no finished row of theirs was kept since."""
        records = read_in_flight(self.backend.journal_base, len(TASK_COLUMNS))
        finished = {i for i, row in journaled.items() if row[_STATUS] != "running"}
        rows = {
            row[0]: row
            for record in records
            for row in record.rows
            if row[1] == run_id and row[0] not in finished
        }
        cut = {}
        if rows:
            ended = {
                i for i, row in self._rows_by_id(list(rows)).items() if row[_STATUS] != "running"
            }
            cut = {i: stored_row(row) for i, row in rows.items() if i not in ended}
        if any(record.seen is not None for record in records):
            started = [r for i, r in journaled.items() if i not in cut and r[_STATUS] == "running"]
            cut.update(self._unread_until_seen(run_id, records, started, {*journaled, *cut}))
        return cut

    def _unread_until_seen(
        self, run_id: str, records: list, started: list[list], known: set[str]
    ) -> dict[str, list]:
        """The run's tasks that its process, now gone, was running with no reading of the
        sampler (started within a tick of the death, or while native code kept the GIL): their
        journaled starts (``started``) and stored running rows, carried to the moment the
        process was last seen alive (``seen_watch``)."""
        run = self.run(run_id)
        seen = max(
            (
                record.seen
                for record in records
                if record.seen is not None
                and record.owner is not None
                and (record.owner.host, record.owner.pid) == (run.host, run.pid)
            ),
            default=None,
            key=lambda found: found.seen_ns,
        )
        if seen is None:
            return {}
        stored = self._query_tuples(f"{UNREAD_ROWS} AND run_id = ?", (run_id,))
        unread = [row for row in stored if row[0] not in known] + started
        return {
            row[0]: carried for row in unread if (carried := unread_until(row, seen)) is not None
        }

    def tasks(self, run_id: str) -> list[TaskRecord]:
        """The run's tasks in start order: those in the database and those still in a journal."""
        run = self.run(run_id)
        journaled = self._journaled(run.id)
        stored = self._query_tuples(f"{SELECT_TASKS} WHERE run_id = ? ORDER BY start_ns", (run.id,))
        rows = [journaled.pop(row[0], row) for row in stored] + list(journaled.values())
        with collector_paused():
            tasks = [task_from_row(row, run.status) for row in rows]
        tasks.sort(key=lambda task: task.start_ns)
        return tasks

    def task_pages(self, run: RunRecord, size: int = 2000) -> Iterator[list[TaskRecord]]:
        """The run's tasks in start order, about ``size`` at a time, so a run of any size streams
        in bounded memory. Each page starts after the last start time read (the index's order,
        never an offset counted off), its last start time read whole: ties stay on one page."""
        journaled = self._journaled(run.id)
        extra = sorted(journaled.values(), key=lambda row: row[START_COLUMN])  # not yet committed
        after = -1
        while True:
            stored = self._query_tuples(
                f"{SELECT_TASKS} WHERE run_id = ? AND start_ns > ? ORDER BY start_ns LIMIT ?",
                (run.id, after, size),
            )
            if len(stored) == size:  # the rest of the tasks that started when the page's last did
                last = stored[-1][START_COLUMN]
                seen = {row[0] for row in stored}
                stored += [
                    row
                    for row in self._query_tuples(
                        f"{SELECT_TASKS} WHERE run_id = ? AND start_ns = ?", (run.id, last)
                    )
                    if row[0] not in seen
                ]
            if stored:
                after = stored[-1][START_COLUMN]
            rows = [journaled.pop(row[0], row) for row in stored]
            while extra and (not stored or extra[0][START_COLUMN] <= after):
                if extra[0][0] in journaled:  # not among the committed rows
                    rows.append(journaled.pop(extra[0][0]))
                extra.pop(0)
            if not rows:
                return
            with collector_paused():
                page = [task_from_row(row, run.status) for row in rows]
            page.sort(key=lambda task: task.start_ns)
            yield page

    def tasks_by_id(self, run: RunRecord, ids: list[str]) -> list[TaskRecord]:
        """The run's tasks with these ids, in the order given."""
        journaled = self._journaled(run.id)
        found: dict[str, Any] = self._rows_by_id([i for i in ids if i not in journaled])
        found.update((i, journaled[i]) for i in ids if i in journaled)
        return [task_from_row(found[i], run.status) for i in ids if i in found]

    def task_outlines(self, run: RunRecord) -> list[TaskRecord]:
        """The run's tasks in start order with what analyses read of them (times, nesting,
        stage, metrics, where they ran) and without what only a listing shows (span ids,
        errors, the profile's finer readings): read as plain tuples, so a run of 10^5 tasks
        takes about a second."""
        journaled = self._journaled(run.id)
        rows = self._query_tuples(
            f"SELECT {', '.join(OUTLINE_COLUMNS)} FROM tasks WHERE run_id = ? ORDER BY start_ns",
            (run.id,),
        )
        with collector_paused():  # acyclic records: a collection every 700 would be most of it
            outlines = [outline_record(row, run.status) for row in rows if row[0] not in journaled]
            outlines += [task_from_row(row, run.status) for row in journaled.values()]
        if journaled:
            outlines.sort(key=lambda task: task.start_ns)
        return outlines

    def stage_figures(self, run: RunRecord) -> tuple[dict[str, dict[str, Any]], float] | None:
        """``aggregates.stage_figures`` of the run, added up in the database; None while some of
        its tasks are still only in a journal (the caller adds up the tasks it read)."""
        if self._journaled(run.id):
            return None
        return aggregates.stage_figures(self.backend, self._query_tuples, run.id)

    def own_times(self, run: RunRecord) -> dict[str, tuple[float, float]] | None:
        """``aggregates.own_times`` of the run; None while some tasks are only in a journal."""
        if self._journaled(run.id):
            return None
        return aggregates.own_times(self.backend, self._query_tuples, run.id)

    def _query_tuples(self, sql: str, params: tuple = ()) -> list[tuple]:
        """``_query``'s rows as plain tuples: a third of the time for many rows."""
        return self._ask(lambda conn: self.backend.query_tuples(conn, sql, params))

    def count_tasks(self, run_id: str) -> int:
        """How many tasks the run has, in the database and still in a journal: counted where
        they are, not read."""
        stored = self._query("SELECT COUNT(*) AS n FROM tasks WHERE run_id = ?", (run_id,))[0]["n"]
        journaled = list(self._journaled(run_id))
        return stored + len(journaled) - len(self._rows_by_id(journaled))

    def stage_names(self, run_id: str) -> set[str]:
        """The stages the run's tasks ran, committed or still in a journal: found where they are
        kept, no task read."""
        journaled = {row[_STAGE] for row in self._journaled(run_id).values()}
        stored = self._query_tuples("SELECT DISTINCT stage FROM tasks WHERE run_id = ?", (run_id,))
        return journaled | {stage for (stage,) in stored}

    def _rows_by_id(self, ids: list[str]) -> dict[str, tuple]:
        """The stored rows (``TASK_COLUMNS``) of tasks with these ids (500 to a query), by id."""
        found: dict[str, tuple] = {}
        for first in range(0, len(ids), 500):
            chunk = ids[first : first + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._query_tuples(f"{SELECT_TASKS} WHERE id IN ({marks})", tuple(chunk)):
                found[row[0]] = row
        return found

    def find_run(self, config_key: str, value: str) -> RunRecord | None:
        """The latest run whose configuration has ``config_key`` equal to ``value`` (e.g. an
        engine's run id)."""
        condition, key = self.backend.json_equals("config", config_key)
        rows = self._query(
            f"SELECT * FROM runs WHERE {condition} ORDER BY start_ns DESC LIMIT 1", (key, value)
        )
        return run_record(rows[0]) if rows else None

    def find_runs(self, config_key: str, value: str, *, prefix: bool = False) -> list[RunRecord]:
        """Every run whose configuration has ``config_key`` equal to ``value`` (starting with it,
        with ``prefix``), oldest first: the trials of one repeat share a key."""
        test = "LIKE ? || '%'" if prefix else "= ?"
        rows = self._query(
            f"SELECT * FROM runs WHERE json_extract(config, ?) {test} ORDER BY start_ns, rowid",
            (f'$."{config_key}"', value),
        )
        return [run_record(row) for row in rows]

    def task_ids_by_metric(self, run_id: str, key: str, values: list[str]) -> dict[str, str]:
        """For each value, the latest task of the run whose metric ``key`` has it (e.g. an
        engine's task run id)."""
        wanted = set(values)
        if not wanted:
            return {}
        return {
            task.metrics[key]: task.id
            for task in self.tasks(run_id)
            if task.metrics.get(key) in wanted
        }

    def latest_task_with_metric(self, key: str, value: str) -> TaskRecord | None:
        """The latest completed task of any run whose metric ``key`` is ``value`` (e.g. the task
        that computed a result an engine later served from its cache under that key), committed
        or still in a journal."""
        condition, json_key = self.backend.json_equals("metrics", key)
        rows = self._query(
            f"SELECT * FROM tasks WHERE status = 'completed' AND {condition} "
            "ORDER BY end_ns DESC LIMIT 1",
            (json_key, value),
        )
        found: list = list(rows)
        for row in self._journal_rows():
            entry = dict(zip(TASK_COLUMNS, stored_row(row)))
            if (
                entry["status"] == TaskStatus.COMPLETED.value
                and json.loads(entry["metrics"]).get(key) == value
            ):
                found.append(entry)
        if not found:
            return None
        latest = max(found, key=lambda entry: entry["end_ns"] or 0)
        return task_record(latest, self.run(latest["run_id"]).status)

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

    def hardware_changes(
        self, backend: str, since: float | None = None
    ) -> list[tuple[float, str | None, str | None, str | None]]:
        """(seen_at, fingerprint, run_id, error) of ``backend``'s calibration changes and failed
        readings, oldest first."""
        rows = self._query(
            "SELECT seen_at, fingerprint, run_id, error FROM hardware_changes WHERE backend = ?"
            + (" AND seen_at >= ?" if since is not None else "")
            + " ORDER BY seen_at",
            (backend, since) if since is not None else (backend,),
        )
        return [(r["seen_at"], r["fingerprint"], r["run_id"], r["error"]) for r in rows]

    def find_snapshot(self, name: str) -> HardwareSnapshot:
        """A stored snapshot by fingerprint (or a unique prefix of it), or the latest of a
        backend by its name."""
        latest = self.snapshots(backend=name)
        matches = [latest[0][0]] if latest else []
        if not matches and name:
            matches = [fp for fp, _, _ in self.snapshots() if fp.startswith(name)]
        if len(matches) > 1:
            raise StoreError(
                f"snapshot prefix {name!r} matches {len(matches)} snapshots in {self.name}; "
                "give more of the fingerprint."
            )
        snapshot = self.snapshot(matches[0]) if matches else None
        if snapshot is None:
            raise StoreError(
                f"there is no hardware snapshot {name!r} (a backend name or fingerprint) in "
                f"{self.name}; `llqm hardware list` shows the stored ones."
            )
        return snapshot

    def decisions(self, run_id: str) -> list[PolicyDecision]:
        rows = self._query("SELECT * FROM decisions WHERE run_id = ? ORDER BY id", (run_id,))
        return [decision_record(row) for row in rows]

    def results(self, run_id: str, kind: str | None, *, data: bool) -> list[KeptResult]:
        columns = "*" if data else "id, run_id, task_id, kind, meta, raw_bytes, kept_at, "
        if not data:
            columns += "LENGTH(data) AS stored_bytes"
        where, params = "run_id = ?", (run_id,)
        if kind is not None:
            where, params = where + " AND kind = ?", (run_id, kind)  # type: ignore[assignment]
        rows = self._query(f"SELECT {columns} FROM results WHERE {where} ORDER BY id", params)
        return [result_record(row) for row in rows]

    def cached(self, namespace: str, keys: list[str]) -> dict[str, CachedValue]:
        """The entries of ``namespace`` kept under any of ``keys``, by key."""
        found: dict[str, CachedValue] = {}
        for chunk in cached.key_chunks(keys):
            for row in self._query(cached.look_up_sql(len(chunk)), (namespace, *chunk)):
                found[row["key"]] = cached.cached_value(row)
        return found

    def policy_history(self, policy: str, limit: int = 100) -> list[PolicyDecision]:
        """A policy's latest decisions over all runs, newest first: what a policy learns from."""
        rows = self._query(
            "SELECT * FROM decisions WHERE policy = ? ORDER BY id DESC LIMIT ?", (policy, limit)
        )
        return [decision_record(row) for row in rows]


@contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector off while many acyclic records are built, on again after."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
