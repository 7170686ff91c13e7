"""What a run whose process died was doing: the tasks running at its exit, as far as they got,
and what it knew of its memory when it ran out.

A killed process leaves its running tasks as the sampler last recorded them (``store.in_flight``):
their start, how long they had run, their RSS at the last reading and its curve. The report
names them and says the run did not end, so that the task that was running when the process
died is never missing from its answer; where the OS tells that the process was killed for its
memory (its cgroup's OOM kills), or a task's allocation was refused (a ``MemoryError`` under
``ulimit -v``), it says so, with the task that was growing (docs/reliability.md).
"""

from __future__ import annotations

from typing import Any

from ..model.memory_limits import CGROUP_MAX, OUT_OF_MEMORY, RLIMIT_AS, RSS_CURVE, limit_text
from ..model.records import RunRecord, RunStatus, TaskRecord, TaskStatus
from ..model.units import iso_time

#: A last RSS reading at this share of a memory limit or above reads "likely out of memory".
NEAR_LIMIT = 0.9


def cut_short_summary(run: RunRecord, tasks: list[TaskRecord]) -> dict[str, Any] | None:
    """The tasks running when the run's process died (status ``running at exit``), longest
    first, each with its start, seconds run, RSS at its last reading and RSS curve (None where it
    died before the sampler's first reading); why it died where the OS told (``cause``); None
    for a run that ended."""
    if run.status is not RunStatus.INTERRUPTED or run.end_ns is not None:
        return None
    cut = [t for t in tasks if t.status is TaskStatus.RUNNING_AT_EXIT]
    cut.sort(key=lambda t: -t.profile.wall_s if t.end_ns is not None else 0.0)
    entries = [
        {
            "id": t.id,
            "name": t.name,
            "stage": t.stage,
            "start": iso_time(t.start_ns),
            "ran_s": t.profile.wall_s if t.end_ns is not None else None,
            "last_reading": iso_time(t.end_ns),
            "last_rss_bytes": t.profile.end_rss_bytes if t.end_ns is not None else None,
            "peak_rss_bytes": t.profile.peak_rss_bytes if t.end_ns is not None else None,
            "rss_growth_bytes": t.profile.rss_growth_bytes if t.end_ns is not None else None,
            "rss_curve": t.metrics.get(RSS_CURVE),
        }
        for t in cut
    ]
    last = max((t.end_ns or t.start_ns for t in tasks), default=None)
    return {
        "running_at_exit": entries,
        "last_seen": iso_time(last),
        "cause": run.error,
        "memory": _memory_at_death(run, entries),
    }


def _memory_at_death(run: RunRecord, entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The task that grew most before the death, and whether the last RSS reading was near a
    memory limit the run ran under; None without readings."""
    read = [entry for entry in entries if entry["last_rss_bytes"] is not None]
    if not read:
        return None
    growing = max(read, key=lambda entry: entry["rss_growth_bytes"] or 0)
    limits = [run.resource.get(key) for key in (RLIMIT_AS, CGROUP_MAX)]
    limit = min((value for value in limits if isinstance(value, int)), default=None)
    last_rss = max(entry["last_rss_bytes"] for entry in read)
    return {
        "growing_task": growing["name"],
        "last_rss_bytes": last_rss,
        "limit_bytes": limit,
        "limits": limit_text(run.resource),
        "near_limit": limit is not None and last_rss >= NEAR_LIMIT * limit,
    }


def out_of_memory_summary(tasks: list[TaskRecord]) -> dict[str, Any] | None:
    """The task whose allocation the OS refused (its ``MemoryError``), with the limits in force
    and its RSS curve up to the end; None when no task ran out of memory."""
    for task in tasks:
        if OUT_OF_MEMORY in task.metrics:
            return {
                "task": task.name,
                "stage": task.stage,
                "limits": task.metrics[OUT_OF_MEMORY],
                "peak_rss_bytes": task.profile.peak_rss_bytes,
                "rss_curve": task.metrics.get(RSS_CURVE),
            }
    return None
