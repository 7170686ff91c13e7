"""The time of a run that no task accounts for: its wall time less the union of its tasks'
intervals. Under ``llqm profile`` that is the program's own code between the calls LLQM records
(a numpy post-processing, building a backend), which no stage and so no bottleneck can name:
the report gives it beside the bottleneck (``report_words.no_task_sentence``).
"""

from __future__ import annotations

from typing import Any

from ..model.hardware import MONITOR_STAGE, OFF_PATH_METRIC
from ..model.records import TaskRecord


def no_task_seconds(tasks: list[TaskRecord], start_ns: int, end_ns: int | None) -> float | None:
    """Seconds of the run (``start_ns`` to ``end_ns``) in which no task ran anywhere: the run's
    wall time less the union of its tasks' intervals. A warm-up task counts as a task (it is
    reported apart, not as time in no task); the hardware monitor's task and its reactions, which
    run beside the work for the whole run, do not. A task without an end ran to the run's end.
    None while the run has no end.

    One pass over the tasks in start order (``task_outlines``' order; sorted first otherwise),
    keeping only the interval being merged: linear in the tasks, no step over pairs of them
    (10^6 tasks in about half a second)."""
    if end_ns is None:
        return None
    covered = _covered(tasks, start_ns, end_ns)
    if covered is None:  # not in start order
        covered = _covered(sorted(tasks, key=lambda t: t.start_ns), start_ns, end_ns)
    return max(end_ns - start_ns - (covered or 0), 0) / 1e9


def _covered(tasks: list[TaskRecord], start_ns: int, end_ns: int) -> int | None:
    """Nanoseconds of ``start_ns`` to ``end_ns`` that the tasks' intervals cover (the monitor's
    and its reactions' apart: ``off_path``); None when the tasks are not in start order."""
    covered = 0
    low = high = start_ns  # the interval being merged
    last = None
    for task in tasks:
        begin = task.start_ns
        if last is not None and begin < last:
            return None
        last = begin
        if task.stage == MONITOR_STAGE or task.metrics.get(OFF_PATH_METRIC):
            continue
        finish = end_ns if task.end_ns is None or task.end_ns > end_ns else task.end_ns
        if begin < start_ns:
            begin = start_ns
        if finish <= begin:
            continue
        if begin > high:
            covered += high - low
            low, high = begin, finish
        elif finish > high:
            high = finish
    return covered + high - low


def no_task_summary(
    seconds: float | None, work_wall_s: float | None, found: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The run's time in no task (``no_task_seconds``) as the report gives it: its seconds, its
    share of the run's wall time without warm-up (the bottleneck's base, so the two compare), and
    whether it is more than the bottleneck's seconds (``found``: ``bottleneck``'s). None while
    the run has no end."""
    if seconds is None:
        return None
    return {
        "wall_s": seconds,
        "share": min(seconds / work_wall_s, 1.0) if work_wall_s else None,
        "more_than_bottleneck": found is not None and seconds > found["seconds"],
    }
