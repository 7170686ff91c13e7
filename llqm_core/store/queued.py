"""Rows the store's writer commits with its next commit, after the tasks' rows: kept device
results (``results``) and cache entries (``cache_entries``, ``store.cached``).

Both are queued from a task's thread and committed by the writer's thread (within seconds, and
at the run's end), a transaction for all of them: a transaction per job on the job's own thread
cost more than its task. The writer guards a ``QueuedRows`` with its queue lock and swaps in an
empty one when it commits.
"""

from __future__ import annotations

from typing import Any

from ..model.records import CachedValue, KeptResult, LaterPayload
from . import cached
from .backend import StoreBackend
from .journal import json_text

_INSERT_RESULT = (
    "INSERT INTO results (run_id, task_id, kind, meta, data, raw_bytes, kept_at)"
    " VALUES (?,?,?,?,?,?,?)"
)


class QueuedRows:
    """What waits for the writer's next commit; each method returns how many results wait."""

    def __init__(self) -> None:
        self.results: list[tuple] = []
        self.kept: list[tuple] = []  # cache entries
        self.used: list[tuple] = []  # cache entries a look-up found
        self.bounds: dict[str, int] = {}  # each namespace kept to, after this commit

    def result(self, result: KeptResult, later: LaterPayload | None) -> int:
        """A kept result; ``later`` makes its data and raw size at the commit (None: nothing)."""
        data = result.data if later is None else later  # meta as JSON at the commit, too
        row = (result.run_id, result.task_id, result.kind, result.meta, data)
        self.results.append((*row, result.raw_bytes, result.kept_at))
        return len(self.results)

    def keep_cached(self, value: CachedValue, max_bytes: int) -> int:
        self.kept.append(cached.keep_row(value))
        self.bounds[value.namespace] = max_bytes
        return len(self.results)

    def use_cached(self, namespace: str, keys: list[str], at: float) -> int:
        self.used.extend((at, namespace, key) for key in keys)
        return len(self.results)

    def commit(self, backend: StoreBackend, conn: Any) -> None:
        """Insert the results, keep and mark the cache entries, then cut each namespace kept
        into to its bound (least recently used out first). Each part is forgotten once
        committed: after a failure (a lost connection), what is left is what to commit again."""
        if rows := [row for row in map(_stored, self.results) if row is not None]:
            backend.execute_many(conn, _INSERT_RESULT, rows)
        self.results = []
        if self.kept:
            backend.execute_many(conn, cached.KEEP, self.kept)
            self.kept = []
        if self.used:
            backend.execute_many(conn, cached.USE, self.used)
            self.used = []
        for namespace, bound in list(self.bounds.items()):
            backend.execute(conn, cached.TRIM, (namespace, namespace, bound))
            del self.bounds[namespace]

    def followed_by(self, later: QueuedRows) -> QueuedRows:
        """These rows, then ``later``'s (queued since these were taken), as one."""
        self.results += later.results
        self.kept += later.kept
        self.used += later.used
        self.bounds.update(later.bounds)
        return self


def _stored(row: tuple) -> tuple | None:
    """A queued result as the store keeps it: its meta as JSON, its payload made now where
    ``save_result`` was given one to make later (None: nothing to keep after all)."""
    data, raw = row[4], row[5]
    if callable(data):
        made = data()
        if made is None:
            return None
        data, raw = made
    return (*row[:3], json_text(row[3]), data, raw, row[6])
