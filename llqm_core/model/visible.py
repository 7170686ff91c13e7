"""What a picture of a whole run draws one by one, and which of its tasks it merges.

A run of 10^5 tasks of microseconds cannot be drawn one bar per task (nor loaded that way by a
trace viewer): at the width of a screen each pixel holds many of them. So in a run of more
than ``DRAWN_TASKS`` tasks, innermost tasks shorter than the run's wall time over
``DRAWN_TASKS`` are merged with the like siblings next to them (same parent, same stage, one
after the other) into one bar in their parent's lane that says how many tasks it stands for.
Longer tasks, tasks with children, and every task of a smaller run are drawn alone.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .records import TaskRecord, TaskStatus

#: A run with more tasks than this has its too-short tasks merged (see the module's docstring).
DRAWN_TASKS = 10_000
#: The metrics of a merged bar: how many tasks it stands for, their summed wall seconds (the bar
#: spans from the first one's start to the last one's end), and the first and last of them.
MERGED_TASKS = "merged.tasks"
MERGED_BUSY = "merged.busy_s"
MERGED_FIRST = "merged.first_task"
MERGED_LAST = "merged.last_task"


def visible_tasks(
    tasks: list[TaskRecord], run_wall_s: float | None
) -> tuple[list[TaskRecord], dict[str, Any] | None]:
    """The tasks to draw, in start order, each too-short run of siblings replaced by one merged
    task (``MERGED_*`` metrics); and what was merged (None when nothing was)."""
    if len(tasks) <= DRAWN_TASKS:
        return tasks, None
    ended = [t for t in tasks if t.end_ns is not None]
    span_s = run_wall_s or (
        (max(t.end_ns or 0 for t in ended) - min(t.start_ns for t in ended)) / 1e9 if ended else 0
    )
    shortest_ns = span_s * 1e9 / DRAWN_TASKS
    parents = {t.parent_id for t in tasks}
    drawn: list[TaskRecord] = []
    open_groups: dict[str | None, list[TaskRecord]] = {}  # per parent: the group being gathered
    merged = groups = 0

    def close(parent: str | None) -> None:
        nonlocal merged, groups
        group = open_groups.pop(parent, None)
        if not group:
            return
        if len(group) == 1:
            drawn.append(group[0])
            return
        drawn.append(_merged(group))
        merged, groups = merged + len(group), groups + 1

    for task in tasks:  # start order: a parent's children come one after the other
        short = (
            task.end_ns is not None
            and task.id not in parents
            and task.end_ns - task.start_ns < shortest_ns
        )
        group = open_groups.get(task.parent_id)
        if group and not (short and group[-1].stage == task.stage):
            close(task.parent_id)
        if short:
            open_groups.setdefault(task.parent_id, []).append(task)
        else:
            drawn.append(task)
    for parent in list(open_groups):
        close(parent)
    drawn.sort(key=lambda t: t.start_ns)
    if not merged:
        return tasks, None
    return drawn, {
        "tasks": merged,
        "bars": groups,
        "shorter_than_s": shortest_ns / 1e9,
        "note": (
            f"{merged} of the run's {len(tasks)} tasks, each shorter than "
            f"{shortest_ns / 1e9 * 1e3:.3g} ms (the run's wall time / {DRAWN_TASKS}), are drawn "
            f"merged with their like siblings into {groups} bars in their parent's lane, each "
            "with the number of tasks it stands for"
        ),
    }


def _merged(group: list[TaskRecord]) -> TaskRecord:
    """One task standing for ``group`` (siblings of one stage, in start order)."""
    first, last = group[0], group[-1]
    end_ns = max(t.end_ns or 0 for t in group)
    failed = any(t.status is TaskStatus.FAILED for t in group)
    profile = replace(
        first.profile,
        wall_s=(end_ns - first.start_ns) / 1e9,
        cpu_s=sum(t.profile.cpu_s for t in group),
        end_rss_bytes=last.profile.end_rss_bytes,
        peak_rss_bytes=max(t.profile.peak_rss_bytes for t in group),
        qpu_s=sum(t.profile.qpu_s or 0.0 for t in group) or None,
        queue_s=sum(t.profile.queue_s or 0.0 for t in group) or None,
    )
    return replace(
        first,
        id=f"{first.id}+{len(group) - 1}",
        name=f"{len(group)} {first.stage} tasks (merged)",
        status=TaskStatus.FAILED if failed else first.status,
        end_ns=end_ns,
        depends_on=[],
        profile=profile,
        metrics={
            MERGED_TASKS: len(group),
            MERGED_BUSY: sum(t.profile.wall_s for t in group),
            MERGED_FIRST: first.id,
            MERGED_LAST: last.id,
        },
    )
