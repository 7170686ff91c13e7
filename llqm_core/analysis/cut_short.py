"""What a run whose process died was doing: the tasks running at its exit, as far as they got.

A killed process leaves its running tasks as the sampler last recorded them (``store.in_flight``):
their start, how long they had run and their RSS at the last reading. The report names them and
says the run did not end, so that the task that was running when the process died is never
missing from its answer (docs/reliability.md).
"""

from __future__ import annotations

from typing import Any

from ..model.records import RunRecord, RunStatus, TaskRecord, TaskStatus
from ..model.units import iso_time


def cut_short_summary(run: RunRecord, tasks: list[TaskRecord]) -> dict[str, Any] | None:
    """The tasks running when the run's process died (status ``running at exit``), longest
    first, each with its start, seconds run and RSS at its last reading (None where it died
    before the sampler's first); None for a run that ended."""
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
        }
        for t in cut
    ]
    last = max((t.end_ns or t.start_ns for t in tasks), default=None)
    return {"running_at_exit": entries, "last_seen": iso_time(last)}
