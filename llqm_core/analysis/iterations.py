"""A closed loop's iterations as the report shows them: objective, cost and calibration per step.

The marks (``runtime.iterations``) give each iteration's window and objective; the run's tasks
that started in the window are its tasks, whose QPU seconds add up to its QPU cost. Its CPU is
the process's CPU seconds in the window (what the loop's own Python cost too, not only its
tasks'), its wall the window's length; both leave out the warm-up paid in the window (imports,
a first pass manager: ``model.warmup``), which is shown apart. The calibration in force is
the snapshot its last job ran against; a change from the previous iteration is marked.

More in docs/modules.md (``llqm_core.analysis.iterations``).
"""

from __future__ import annotations

import bisect
from typing import Any

from ..model.records import KeptResult, TaskRecord
from ..model.units import format_seconds
from ..model.warmup import is_warmup

KIND = "llqm.iteration"
USER = "user"


def chosen_marks(results: list[KeptResult]) -> list[dict[str, Any]]:
    """The marks that are the run's iterations, in order (empty when it ran no loop)."""
    by_source: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        if result.kind == KIND:
            by_source.setdefault(result.meta["source"], []).append(result.meta)
    if USER in by_source:
        marks = by_source[USER]
    else:
        marks = max(by_source.values(), key=len, default=[])
        if len(marks) < 2:
            return []
    return sorted(marks, key=lambda m: m["index"])


def iterations(results: list[KeptResult], tasks: list[TaskRecord]) -> list[dict[str, Any]]:
    """Each iteration with its tasks' count and cost and the calibration in force."""
    marks = chosen_marks(results)
    if not marks:
        return []
    ordered = sorted((t for t in tasks if t.stage != "hardware.monitor"), key=lambda t: t.start_ns)
    starts = [t.start_ns for t in ordered]
    rows: list[dict[str, Any]] = []
    calibration = None
    for mark in marks:
        first = bisect.bisect_right(starts, mark["start_ns"])
        last = bisect.bisect_right(starts, mark["end_ns"])
        window = ordered[first:last]
        inside = [t for t in window if not is_warmup(t.stage)]
        warm_ids = {t.id for t in window if is_warmup(t.stage)}
        warm = [t for t in window if t.id in warm_ids and t.parent_id not in warm_ids]
        warm_wall = sum(t.profile.wall_s or 0.0 for t in warm)
        warm_cpu = sum(t.profile.cpu_s or 0.0 for t in warm)
        qpu = [t.profile.qpu_s for t in inside if t.profile.qpu_s is not None]
        seen = [t.hardware for t in inside if t.hardware]
        previous = calibration
        calibration = seen[-1] if seen else calibration
        rows.append(
            {
                "index": mark["index"],
                "value": mark.get("value"),
                "error": mark.get("error"),
                "parameter_change": mark.get("parameter_change"),
                "parameters_norm": mark.get("parameters_norm"),
                "tasks": len(inside),
                # a first call's cost (imports, a first pass manager) is shown apart, not as
                # the iteration's: a later iteration does not pay it
                "wall_s": max((mark["end_ns"] - mark["start_ns"]) / 1e9 - warm_wall, 0.0),
                "process_cpu_s": (
                    None
                    if mark.get("process_cpu_s") is None
                    else max(mark["process_cpu_s"] - warm_cpu, 0.0)
                ),
                "warmup_wall_s": warm_wall,
                "qpu_s": sum(qpu) if qpu else None,
                "calibration": calibration,
                "calibration_changed": previous is not None and calibration != previous,
                "source": mark["source"],
            }
        )
    return rows


ITERATION_COLUMNS = (
    "#",
    "objective",
    "|Δparams|",
    "tasks",
    "wall",
    "process CPU",
    "QPU",
    "calibration",
)


def iteration_rows(report: dict[str, Any]) -> list[list[str]]:
    """The iterations as table rows: objective with its error, parameter change, tasks, costs,
    calibration (a change marked)."""
    rows = []
    for it in report.get("iterations") or []:
        value = "-" if it["value"] is None else f"{it['value']:.4g}"
        if it["error"] is not None and it["value"] is not None:
            value += f" ± {it['error']:.2g}"
        change = it["parameter_change"]
        calibration = (it["calibration"] or "-")[:12]
        if it["calibration_changed"]:
            calibration += " (changed)"
        rows.append(
            [
                str(it["index"]),
                value,
                "-" if change is None else f"{change:.4g}",
                str(it["tasks"]),
                format_seconds(it["wall_s"])
                + (
                    f" (+{format_seconds(it['warmup_wall_s'])} warm-up)"
                    if it["warmup_wall_s"]
                    else ""
                ),
                format_seconds(it["process_cpu_s"]),
                format_seconds(it["qpu_s"]),
                calibration,
            ]
        )
    return rows
