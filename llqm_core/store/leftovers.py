"""What processes that are gone left beside the store: journals of finished tasks they had not
committed, and their record of the tasks they were running (``in_flight``). The next writer
commits both and deletes them; a task that ended just before the kill keeps its finished row.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .in_flight import UNREAD_ROWS, read_in_flight, unread_until
from .journal import JournalFile, read_journals
from .record_statements import is_record_statement
from .schema import TASK_COLUMNS, older_row

if TYPE_CHECKING:
    from .backend import StoreBackend


def dead_journals(base: Path) -> list[JournalFile]:
    """The journals beside a store whose processes are gone: what ``fold_dead`` commits."""
    return [
        journal
        for journal in read_journals(base, len(TASK_COLUMNS), older_row)
        if journal.owner is not None and journal.owner.is_gone()
    ]


def fold_dead(
    commit_rows: Callable[..., bool],
    backend: StoreBackend,
    base: Path,
    unread_of: Callable[[str, int], list[tuple]] | None = None,
) -> None:
    """Commit, through ``commit_rows`` (``StoreWriter.commit_rows``: false once the store takes no
    more rows), the journals and in-flight records of processes now gone: a journal's statements
    (a run's end its database did not get, ``reconnect``) first. ``unread_of(host, pid)``: the
    stored running rows, with no reading, of that process's runs, which the moment it was last
    seen (``seen_watch``) carries on as well."""
    for journal in dead_journals(base):
        statements = [s for s in journal.statements if is_record_statement(backend, s[0])]
        if not commit_rows(journal.rows, statements=statements):
            return
        journal.path.unlink(missing_ok=True)
    for record in read_in_flight(base, len(TASK_COLUMNS)):
        rows = record.rows
        if record.seen is not None and record.owner is not None and unread_of is not None:
            known = {row[0] for row in rows}
            rows = rows + [
                carried
                for row in unread_of(record.owner.host, record.owner.pid)
                if row[0] not in known and (carried := unread_until(row, record.seen)) is not None
            ]
        if not commit_rows(rows, unless_ended=True):
            return
        record.path.unlink(missing_ok=True)


def still_running(backend: StoreBackend, conn: Any, rows: list[list]) -> list[list]:
    """The rows of a dead process's running tasks whose task the database holds as running, or
    not at all."""
    ended: set[str] = set()
    for first in range(0, len(rows), 500):
        ids = [row[0] for row in rows[first : first + 500]]
        marks = ",".join("?" * len(ids))
        found = backend.query_tuples(
            conn, f"SELECT id FROM tasks WHERE status <> 'running' AND id IN ({marks})", ids
        )
        ended.update(task_id for (task_id,) in found)
    return [row for row in rows if row[0] not in ended]


def unread_rows(backend: StoreBackend, conn: Any, host: str, pid: int) -> list[tuple]:
    """The stored running rows with no reading of the runs that process ``pid`` on ``host``
    ran (none where the database cannot be asked)."""
    sql = f"{UNREAD_ROWS} AND run_id IN (SELECT id FROM runs WHERE host = ? AND pid = ?)"
    try:
        return backend.query_tuples(conn, sql, (host, pid))
    except backend.errors:
        return []


class FoldingLeftovers:
    """The part of ``StoreWriter`` that commits what processes now gone left beside its store."""

    backend: StoreBackend
    _lock: threading.RLock
    _queue_lock: threading.Lock
    _conn: Any
    _outage: Any
    _finished: list[bytes | list]

    if TYPE_CHECKING:  # the writer's own (``StoreWriter``)

        def _accepting(self) -> bool: ...
        def _guarded(self, commit: Callable[[], None]) -> None: ...
        def _commit_all(self, sql: str | None = None, params: tuple = ()) -> None: ...
        def _write(self, sql: str | None, params: tuple) -> None: ...

    def fold_dead_journals(self) -> None:
        """Commit what processes now gone left behind, and delete it."""
        fold_dead(self.commit_rows, self.backend, self.backend.journal_base, self._unread_of)

    def _unread_of(self, host: str, pid: int) -> list[tuple]:
        with self._lock:
            live = self._conn is not None and self._outage is None
            return unread_rows(self.backend, self._conn, host, pid) if live else []

    def commit_rows(
        self, rows: list[list], *, unless_ended: bool = False, statements: list | None = None
    ) -> bool:
        """Commit another process's rows now, after the ``statements`` it left (``unless_ended``:
        not the rows of tasks the database holds as ended); whether all of it reached the store."""
        for sql, params in statements or ():
            self._write(sql, tuple(params))
        with self._lock:
            if unless_ended and self._outage is None:
                rows = still_running(self.backend, self._conn, rows)
            with self._queue_lock:
                self._finished.extend(rows)
            self._guarded(self._commit_all)
        return self._accepting() and self._outage is None
