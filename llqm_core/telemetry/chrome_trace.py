"""A run as a Chrome trace (the JSON that chrome://tracing and ui.perfetto.dev open).

Each ended task is a complete event ("ph": "X") in a lane: tasks that overlap in time go
to different lanes (greedy packing of the top-level tasks; a task's children share its
lane), waiting for a queue has a lane of its own. Counter tracks ("ph": "C") show the
process's resident memory at each task's start, peak and end, and each task's CPU use
(CPU seconds over wall seconds) while it ran. Times are microseconds from the run's start.
In a run of many tasks, those too short to see are merged into one event per run of like
siblings, in their parent's lane, with their count (``model.visible``); the trace says so
in ``otherData.merged`` and in an instant event at its start.
"""

from __future__ import annotations

import heapq
from typing import Any

from ..model.records import RunRecord, TaskRecord
from ..model.visible import visible_tasks

QUEUE_LANE = "queue"


def _lanes(tasks: list[TaskRecord]) -> dict[str, str]:
    """A lane name for each task: overlapping top-level tasks apart, children with their parent.
    Top-level tasks take the lowest-numbered free lane (free lanes and busy ones kept in heaps)."""
    by_parent: dict[str | None, list[TaskRecord]] = {}
    for task in tasks:
        by_parent.setdefault(task.parent_id, []).append(task)
    lanes: dict[str, str] = {}
    free: list[int] = []  # lane indices free now
    busy: list[tuple[int, int]] = []  # (busy until, lane index)
    for task in sorted(by_parent.get(None, []), key=lambda t: t.start_ns):
        while busy and busy[0][0] <= task.start_ns:
            heapq.heappush(free, heapq.heappop(busy)[1])
        index = heapq.heappop(free) if free else len(busy) + len(free)
        heapq.heappush(busy, (task.end_ns or task.start_ns, index))
        lanes[task.id] = f"worker {index + 1}"
    pending = list(by_parent.get(None, []))
    while pending:
        parent = pending.pop()
        for child in by_parent.get(parent.id, []):
            lanes[child.id] = QUEUE_LANE if child.stage.endswith("queue") else lanes[parent.id]
            pending.append(child)
    for task in tasks:  # orphans whose parent is missing from the store
        lanes.setdefault(task.id, "worker 1")
    return lanes


def chrome_trace(run: RunRecord, tasks: list[TaskRecord]) -> dict[str, Any]:
    """The trace-event JSON of one run."""
    origin = run.start_ns
    tasks, merged = visible_tasks(tasks, run.wall_s)
    lanes = _lanes(tasks)
    lane_ids = {
        name: i + 1
        for i, name in enumerate(sorted(set(lanes.values()), key=lambda n: (n == QUEUE_LANE, n)))
    }
    pid = run.pid or 1

    def micros(ns: int) -> float:
        return (ns - origin) / 1000

    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": f"llqm run {run.name}"}},
        *(
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}
            for name, tid in lane_ids.items()
        ),
    ]
    if merged:
        events.append(
            {"ph": "i", "s": "g", "name": merged["note"], "pid": pid, "tid": 1, "ts": 0.0}
        )
    for task in sorted(tasks, key=lambda t: t.start_ns):
        if task.end_ns is None:
            continue
        p = task.profile
        args = {
            "stage": task.stage,
            "status": task.status.value,
            "cpu_s": p.cpu_s,
            "peak_rss_bytes": p.peak_rss_bytes,
            "qpu_s": p.qpu_s,
            "queue_s": p.queue_s,
            "task_id": task.id,
            **{k: v for k, v in task.metrics.items() if isinstance(v, (int, float, str, bool))},
        }
        events.append(
            {
                "ph": "X",
                "name": task.name,
                "cat": task.stage,
                "pid": pid,
                "tid": lane_ids[lanes[task.id]],
                "ts": micros(task.start_ns),
                "dur": (task.end_ns - task.start_ns) / 1000,
                "args": args,
            }
        )
        if task.parent_id is None or lanes[task.id] == QUEUE_LANE:
            continue
        mib = 1024 * 1024
        middle = (task.start_ns + task.end_ns) // 2
        for at, rss in (
            (task.start_ns, p.start_rss_bytes),
            (middle, p.peak_rss_bytes),
            (task.end_ns, p.end_rss_bytes),
        ):
            events.append(
                {
                    "ph": "C",
                    "name": "memory (MiB)",
                    "pid": pid,
                    "ts": micros(at),
                    "args": {"rss": rss / mib},
                }
            )
    cpus = run.cpus or 64  # a tiny task may be charged a whole tick of CPU
    parents = {t.parent_id for t in tasks}
    for task in tasks:  # CPU use of the innermost tasks, as a step function
        if task.end_ns is None or task.id in parents or not task.profile.wall_s:
            continue
        use = min(100.0 * task.profile.cpu_s / task.profile.wall_s, 100.0 * cpus)
        events.append(
            {
                "ph": "C",
                "name": "cpu (%)",
                "pid": pid,
                "ts": micros(task.start_ns),
                "args": {"cpu": use},
            }
        )
        events.append(
            {
                "ph": "C",
                "name": "cpu (%)",
                "pid": pid,
                "ts": micros(task.end_ns),
                "args": {"cpu": 0.0},
            }
        )
    other: dict[str, Any] = {"run_id": run.id, "run_name": run.name, "trace_id": run.trace_id}
    if merged:
        other["merged"] = merged
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}
