"""A running run as it stands now, read from the store (``llqm watch``).

Everything comes from what the run's processes already write: the running rows of started tasks
(committed within two seconds of their start), the finished rows (seen at once on the store's own
machine, where the journals are merged in; within the writer's commit interval from another
machine, through a PostgreSQL URL), the calibrations the monitor stored. Watching therefore
costs the run nothing but the reads; each frame reads the run's tasks once (linear in them).

More in docs/modules.md (``llqm_core.analysis.live``).
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..model.errors import UserError
from ..model.modelled import with_word
from ..model.records import RunRecord, RunStatus, TaskStatus
from ..model.units import format_bytes, format_seconds, iso_time
from ..store.profile_store import ProfileStore
from .report import stage_totals
from .summary import exclusive_times
from .timeline import run_hardware

#: The span of the "last minute" panel and the width of each of its bins, in seconds.
WINDOW_S, BIN_S = 60.0, 5.0
#: Rows of the running-tasks and stages tables (the longest-running and the biggest first).
MAX_ROWS = 12
_BLOCKS = "▁▂▃▄▅▆▇█"


def newest_running(store: ProfileStore) -> RunRecord:
    """The newest run of the store still running, or one sentence saying there is none."""
    for run in store.runs():
        if run.status is RunStatus.RUNNING:
            return run
    raise UserError(
        f"no run is running in {store.name}; name one to see how it ended (`llqm runs` lists them)."
    )


def _spread(
    intervals: list[tuple[int, int, float]], now_ns: int, combine: str
) -> list[float | None]:
    """Per bin of the last ``WINDOW_S`` seconds: the sum of each interval's amount spread evenly
    over its time (``combine="sum"``, per second of the bin), or the largest amount of the
    intervals that overlap it (``"max"``); None where no interval overlaps a bin."""
    count = int(WINDOW_S / BIN_S)
    start = now_ns - int(WINDOW_S * 1e9)
    values: list[float | None] = [None] * count
    for begin, end, amount in intervals:
        if end <= start or begin >= now_ns:
            continue
        for index in range(max(0, int((begin - start) // (BIN_S * 1e9))), count):
            low = start + int(index * BIN_S * 1e9)
            high = low + int(BIN_S * 1e9)
            if low >= end:
                break
            overlap = min(end, high) - max(begin, low)
            if overlap <= 0:
                continue
            current = values[index] or 0.0
            if combine == "sum":
                values[index] = current + amount * overlap / max(end - begin, 1) / BIN_S
            else:
                values[index] = max(current, amount)
    return values


def live_frame(store: ProfileStore, run_id: str) -> dict[str, Any]:
    """What ``llqm watch`` shows of a run now, as data."""
    run = store.run(run_id)
    tasks = store.tasks(run.id)
    now = time.time_ns() if run.end_ns is None else run.end_ns
    ended = [t for t in tasks if t.end_ns is not None]
    running = sorted(
        (t for t in tasks if t.end_ns is None and t.status is TaskStatus.RUNNING),
        key=lambda t: t.start_ns,
    )
    own = exclusive_times(tasks)
    stages = stage_totals(ended, own)
    with_cpu = [(t.start_ns, t.end_ns or now, own[t.id][1]) for t in ended if t.id in own]
    with_rss = [(t.start_ns, t.end_ns or now, float(t.profile.peak_rss_bytes)) for t in ended]
    calibrations: dict[str, dict[str, Any]] = {}
    for entry in run_hardware(store, tasks):  # oldest first: the last one of a device is in force
        calibrations[entry["backend"]] = entry
    failed = [f"{t.name} ({t.stage}) failed: {t.error}" for t in ended if t.error]
    return {
        "run": {
            "id": run.id,
            "name": run.name,
            "status": run.status.value,
            "started": iso_time(run.start_ns),
            "elapsed_s": (now - run.start_ns) / 1e9,
            "cpus": run.cpus,
        },
        "ended": run.status is not RunStatus.RUNNING,
        "tasks": {"ended": len(ended), "running": len(running)},
        "running": [
            {"name": t.name, "stage": t.stage, "elapsed_s": (now - t.start_ns) / 1e9}
            for t in running
        ],
        "stages": stages,
        "last_minute": {
            "bin_s": BIN_S,
            "busy_cores": _spread(with_cpu, now, "sum"),
            "peak_rss_bytes": _spread(with_rss, now, "max"),
        },
        "calibrations": list(calibrations.values()),
        "warnings": [w for t in ended for w in t.metrics.get("pipeline.warnings", [])] + failed,
    }


def sparkline(values: list[float | None]) -> str:
    """One character per value, its height relative to the largest; a blank where none is known."""
    known = [v for v in values if v is not None]
    top = max(known, default=0.0) or 1.0
    return "".join(
        " " if v is None else _BLOCKS[min(len(_BLOCKS) - 1, int(v / top * (len(_BLOCKS) - 1)))]
        for v in values
    )


def _table(title: str, columns: list[str]) -> Table:
    table = Table(title=title, title_justify="left")
    for position, column in enumerate(columns):
        table.add_column(column, justify="left" if position < 2 else "right")
    return table


def render_frame(frame: dict[str, Any]) -> RenderableType:
    """The frame as the console shows it: what runs, what finished, the last minute, calibrations."""
    run = frame["run"]
    parts: list[RenderableType] = [
        Text(
            f"{run['name']} (run {run['id'][:12]}): {run['status']}, "
            f"{format_seconds(run['elapsed_s'])} since {run['started']}; "
            f"{frame['tasks']['running']} tasks running, {frame['tasks']['ended']} ended"
        )
    ]
    if frame["running"]:
        running = _table("Running now", ["task", "stage", "for"])
        for task in frame["running"][:MAX_ROWS]:
            running.add_row(task["name"], task["stage"], format_seconds(task["elapsed_s"]))
        more = len(frame["running"]) - MAX_ROWS
        if more > 0:
            running.add_row(f"... {more} more", "", "")
        parts.append(running)
    stages = _table(
        "Stages finished so far (own time: outside nested stages)",
        ["stage", "tasks", "own wall", "own CPU", "peak RSS", "QPU", "queue"],
    )
    ordered = sorted(frame["stages"].items(), key=lambda item: -item[1]["own_wall_s"])
    for stage, entry in ordered[:MAX_ROWS]:
        stages.add_row(
            stage,
            str(entry["tasks"]),
            format_seconds(entry["own_wall_s"]),
            format_seconds(entry["own_cpu_s"]),
            format_bytes(entry["peak_rss_bytes"]),
            with_word(format_seconds(entry["qpu_s"] or None), entry.get("qpu_modelled", False)),
            with_word(format_seconds(entry["queue_s"] or None), entry.get("queue_modelled", False)),
        )
    parts.append(stages)
    minute = frame["last_minute"]
    cores = [v for v in minute["busy_cores"] if v is not None]
    rss = [v for v in minute["peak_rss_bytes"] if v is not None]
    cpus = f" of {run['cpus']}" if run["cpus"] else ""
    parts.append(
        Text(
            f"Last minute, {minute['bin_s']:g} s a mark, of the tasks that ended (a running task "
            "counts once it ends):\n"
            f"  busy cores |{sparkline(minute['busy_cores'])}| "
            f"peak {max(cores, default=0.0):.2f}{cpus}\n"
            f"  peak RSS   |{sparkline(minute['peak_rss_bytes'])}| "
            f"peak {format_bytes(int(max(rss, default=0)))}"
        )
    )
    if frame["calibrations"]:
        hardware = _table(
            "Calibrations in force", ["device", "snapshot", "since", "2q err", "readout err"]
        )
        for entry in frame["calibrations"]:
            hardware.add_row(
                entry["backend"],
                entry["fingerprint"],
                iso_time(int(entry["at"] * 1e9)),
                _figure(entry.get("two_qubit_error_median")),
                _figure(entry.get("readout_error_median")),
            )
        parts.append(hardware)
    for warning in frame["warnings"][-5:]:
        parts.append(Text(f"warning: {warning}", style="yellow"))
    return Group(*parts)


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"
