"""A run's tasks as flat rows: a pandas DataFrame from Python, JSON Lines for other tools.

One row per task, with the profile's fields as columns and the domain metrics as
``metrics.<name>`` columns, so a notebook can group, filter and plot without knowing the
store's layout.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from ..model.records import RunRecord, TaskRecord
from ..model.units import iso_time
from ..store.profile_store import ProfileStore
from .iterations import iterations
from .summary import exclusive_times

PROFILE_COLUMNS = (
    "wall_s",
    "cpu_s",
    "cpu_scope",
    "peak_rss_bytes",
    "rss_growth_bytes",
    "qpu_s",
    "queue_s",
    "pid",
    "host",
)


def task_rows(store: ProfileStore, run_id: str | None = None) -> list[dict[str, Any]]:
    """The tasks of one run (the latest by default) as flat dicts."""
    run = store.run(run_id)
    return list(iter_task_rows(run, store.tasks(run.id)))


def iter_task_rows(run: RunRecord, tasks: list[TaskRecord]) -> Iterator[dict[str, Any]]:
    """One flat dict per task of ``run``, made as it is asked for (``llqm export`` streams them)."""
    own = exclusive_times(tasks)
    for task in tasks:
        yield task_row(run, task, own.get(task.id))


def task_row(run: RunRecord, task: TaskRecord, own: tuple[float, float] | None) -> dict[str, Any]:
    """A task as a flat dict; ``own`` is its (wall, CPU) seconds outside its child tasks."""
    ended = task.end_ns is not None
    row: dict[str, Any] = {
        "run_id": run.id,
        "run_name": run.name,
        "task_id": task.id,
        "name": task.name,
        "stage": task.stage,
        "status": task.status.value,
        "parent_id": task.parent_id,
        "depends_on": list(task.depends_on),
        "start": iso_time(task.start_ns),
        "end": iso_time(task.end_ns),
        "start_ns": task.start_ns,
        "end_ns": task.end_ns,
        "hardware": task.hardware,
        "error": task.error,
    }
    for column in PROFILE_COLUMNS:
        value = getattr(task.profile, column)
        row[column] = value if ended or column in ("pid", "host") else None
    row["own_wall_s"] = None if own is None else own[0]
    row["own_cpu_s"] = None if own is None else own[1]
    row["gpu.available"] = task.profile.gpu.available
    row["gpu.utilization_max_pct"] = task.profile.gpu.utilization_max_pct
    row["gpu.memory_peak_bytes"] = task.profile.gpu.memory_peak_bytes
    row.update({f"metrics.{k}": v for k, v in task.metrics.items()})
    return row


def json_lines(store: ProfileStore, run_id: str | None = None) -> Iterator[str]:
    for row in task_rows(store, run_id):
        yield json.dumps(row, default=str)


def dataframe(
    run_id: str | None = None, store: ProfileStore | str | os.PathLike | None = None
) -> Any:
    """The tasks of a run (the latest by default) as a pandas DataFrame, one row per task;
    ``store`` is a ``ProfileStore``, a path, or None for the default store.

    Args:
        run_id: a run id or a unique prefix; None for the latest run.
        store: a ``ProfileStore``, a path or URL, or None for the default store.
    """
    import pandas

    if not isinstance(store, ProfileStore):
        store = ProfileStore(store, readonly=True)
    return pandas.DataFrame(task_rows(store, run_id))


def iterations_dataframe(
    run_id: str | None = None, store: ProfileStore | str | os.PathLike | None = None
) -> Any:
    """A closed loop's iterations (``analysis.iterations``) as a pandas DataFrame, one row per
    iteration, for a notebook to plot: ``frame.plot(x="index", y="value", yerr="error")``.

    Args:
        run_id: a run id or a unique prefix; None for the latest run.
        store: a ``ProfileStore``, a path or URL, or None for the default store.
    """
    import pandas

    if not isinstance(store, ProfileStore):
        store = ProfileStore(store, readonly=True)
    run = store.run(run_id)
    return pandas.DataFrame(iterations(store.results(run.id, data=False), store.tasks(run.id)))
