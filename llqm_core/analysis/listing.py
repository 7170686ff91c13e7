"""Which tasks a report lists: all of them, or the biggest (the most own wall time)."""

from __future__ import annotations

import heapq
from typing import Any

from ..model.records import RunRecord, TaskRecord
from ..store.profile_store import ProfileStore

#: How many of the biggest tasks a kept analysis remembers (``store.analyses``): the most a
#: report lists by default (the HTML page's rows).
KEPT_BIGGEST = 500


def biggest_tasks(
    tasks: list[TaskRecord], own: dict[str, tuple[float, float]], count: int | None
) -> dict[str, tuple[float, float] | None]:
    """The ``count`` tasks with the most own wall time (``own``: ``exclusive_times``), by id, most
    first (ties in the order of ``tasks``), with their own (wall, CPU) seconds."""
    if not count:
        return {}
    ranked = heapq.nlargest(count, tasks, key=lambda t: own.get(t.id, (0.0,))[0])
    return {t.id: own.get(t.id) for t in ranked}


def listed_tasks(
    store: ProfileStore,
    run: RunRecord,
    biggest: dict[str, Any],
    keep_tasks: int | None,
) -> list[TaskRecord]:
    """The tasks a report lists, read whole, in start order: every task (``keep_tasks`` None),
    or the first ``keep_tasks`` of ``biggest``."""
    if keep_tasks is None:
        return store.tasks(run.id)
    listed = store.tasks_by_id(run, list(biggest)[:keep_tasks]) if keep_tasks > 0 else []
    listed.sort(key=lambda t: t.start_ns)
    return listed
