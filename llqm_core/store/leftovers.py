"""What processes that are gone left beside the store: journals of finished tasks they had not
committed, and their record of the tasks they were running (``in_flight``). The next writer
commits both and deletes them; a task that ended just before the kill keeps its finished row.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .in_flight import read_in_flight
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


def fold_dead(commit_rows: Callable[..., bool], backend: StoreBackend, base: Path) -> None:
    """Commit, through ``commit_rows`` (``StoreWriter.commit_rows``: false once the store takes no
    more rows), the journals and in-flight records of processes now gone: a journal's statements
    (a run's end its database did not get, ``reconnect``) first."""
    for journal in dead_journals(base):
        statements = [s for s in journal.statements if is_record_statement(backend, s[0])]
        if not commit_rows(journal.rows, statements=statements):
            return
        journal.path.unlink(missing_ok=True)
    for record in read_in_flight(base, len(TASK_COLUMNS)):
        if not commit_rows(record.rows, unless_ended=True):
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
