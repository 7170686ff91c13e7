"""Turning a stored run into a report: a JSON object (the console renders it in
``report_console``, the HTML page in ``html_report``; the words and table rows they share are
``report_words``'s)."""

from __future__ import annotations

import json
from typing import Any, NamedTuple, TextIO

import orjson

from ..model.modelled import flags, is_modelled
from ..model.records import RunRecord, TaskRecord
from ..model.trial_keys import trial_of
from ..model.units import iso_time
from ..model.warmup import is_warmup
from ..store.profile_store import ProfileStore
from ..store.reader import collector_paused
from .cut_short import cut_short_summary, out_of_memory_summary
from .iterations import iterations
from .kept import kept_summary
from .listing import KEPT_BIGGEST, biggest_tasks, listed_tasks
from .no_task import no_task_seconds, no_task_summary
from .summary import (
    bottleneck,
    cache_savings,
    concurrency,
    exclusive_times,
    fidelity,
    find_critical_path,
    prediction_errors,
    step_costs,
    warmup_summary,
)
from .timeline import run_hardware


def run_summary(run: RunRecord) -> dict[str, Any]:
    return {
        "id": run.id,
        "name": run.name,
        "status": run.status.value,
        "started": iso_time(run.start_ns),
    }


def task_entry(task: TaskRecord, own: tuple[float, float] | None = None) -> dict[str, Any]:
    """One task as JSON-ready data; ``own`` is its (wall, cpu) seconds outside its child tasks."""
    p = task.profile
    return {
        "id": task.id,
        "name": task.name,
        "stage": task.stage,
        "status": task.status.value,
        "parent_id": task.parent_id,
        "depends_on": list(task.depends_on),
        "start": iso_time(task.start_ns),
        "end": iso_time(task.end_ns),
        "wall_s": p.wall_s if task.end_ns is not None else None,
        "cpu_s": p.cpu_s if task.end_ns is not None else None,
        "own_wall_s": None if own is None else own[0],
        "own_cpu_s": None if own is None else own[1],
        "cpu_scope": p.cpu_scope,
        "peak_rss_bytes": p.peak_rss_bytes if task.end_ns is not None else None,
        "rss_growth_bytes": p.rss_growth_bytes if task.end_ns is not None else None,
        "gpu": p.gpu.to_dict(),
        "qpu_s": p.qpu_s,
        "queue_s": p.queue_s,
        **flags(is_modelled(task, "qpu_s"), is_modelled(task, "queue_s")),
        "pid": p.pid,
        "host": p.host,
        "span_id": task.span_id,
        "hardware": task.hardware,
        "metrics": dict(task.metrics),
        "error": None if task.error is None else f"{task.error_type}: {task.error}",
        "profile": p.to_dict() if task.end_ns is not None else None,
    }


def stage_totals(
    tasks: list[TaskRecord], own: dict[str, tuple[float, float]] | None = None
) -> dict[str, dict[str, Any]]:
    """Per stage: how many tasks, their summed wall, CPU, QPU and queue seconds and largest peak
    RSS, and whether a model gave its QPU or queue seconds (``qpu_modelled``,
    ``queue_modelled``, ``modelled``: ``llqm_core.model.modelled``).

    ``wall_s`` and ``cpu_s`` are inclusive: a task's time counts its nested tasks again (a
    ``mitigate.zne`` task contains its ``execute`` tasks). ``own_wall_s`` and ``own_cpu_s`` count
    only the time no child task accounts for, so they add up across stages to the run's busy time.
    ``own`` is ``exclusive_times(tasks)`` when the caller has it already."""
    own = exclusive_times(tasks) if own is None else own
    totals: dict[str, dict[str, Any]] = {}
    for task in tasks:
        if is_warmup(task.stage):  # reported apart (``warmup_summary``)
            continue
        entry = totals.setdefault(
            task.stage,
            {
                "tasks": 0,
                "own_wall_s": 0.0,
                "own_cpu_s": 0.0,
                "wall_s": 0.0,
                "cpu_s": 0.0,
                "qpu_s": 0.0,
                "queue_s": 0.0,
                "peak_rss_bytes": 0,
                "qpu_modelled": False,
                "queue_modelled": False,
                "modelled": False,
            },
        )
        entry["tasks"] += 1
        if task.end_ns is not None:
            entry["own_wall_s"] += own[task.id][0]
            entry["own_cpu_s"] += own[task.id][1]
            entry["wall_s"] += task.profile.wall_s
            entry["cpu_s"] += task.profile.cpu_s
            entry["qpu_s"] += task.profile.qpu_s or 0.0
            entry["queue_s"] += task.profile.queue_s or 0.0
            entry["peak_rss_bytes"] = max(entry["peak_rss_bytes"], task.profile.peak_rss_bytes)
            for field in ("qpu_s", "queue_s"):
                if is_modelled(task, field):
                    entry[field.replace("_s", "_modelled")] = entry["modelled"] = True
    return totals


def _work_wall(wall_s: float | None, warm: dict[str, Any] | None) -> float | None:
    """The run's wall time without its warm-up (``warmup_summary``)."""
    if wall_s is None or not warm:
        return wall_s
    return max(wall_s - warm["wall_s"], 0.0)


def work_wall(report: dict[str, Any]) -> float | None:
    """A report's run wall time without its warm-up (``model.warmup``): what trials and
    comparisons set side by side, as a first trial pays imports that later ones do not."""
    run = report["run"]
    return run.get("work_wall_s", run["wall_s"])


class RunAnalysis(NamedTuple):
    """A run's report, the tasks it was computed from (``ProfileStore.task_outlines``: times,
    nesting and metrics, no span ids or errors) and each task's own (wall, cpu) seconds."""

    report: dict[str, Any]
    tasks: list[TaskRecord]
    own: dict[str, tuple[float, float]]


def analyse_run(
    store: ProfileStore, run_id: str | None = None, *, keep_tasks: int | None = None
) -> RunAnalysis:
    """The report of one run (the latest when ``run_id`` is None) as plain JSON-ready data.

    Every figure covers every task. ``report["tasks"]`` lists them all in start order, or with
    ``keep_tasks`` only that many, those with the most own wall time (still in start order):
    a listing of 10^5 tasks is what a screen or a page cannot show and costs most to build."""
    run = store.run(run_id)
    # what the run holds before it is read: an analysis is kept only for that (``store.analyses``)
    now = store.analysis_stamp(run) if keep_tasks is not None else None
    with collector_paused():  # 10^5 records and their dicts hold no cycles to collect
        tasks = store.task_outlines(run)
        decisions = store.decisions(run.id)
        own = exclusive_times(tasks)
        summed = store.stage_figures(run)  # None while some tasks are only in a journal
        if summed is None:
            stages, own_cpu = stage_totals(tasks, own), sum(c for _, c in own.values())
        else:
            stages, own_cpu = summed
        busy = sum(entry["own_wall_s"] for entry in stages.values())
        figures = fidelity(tasks)
        kept = store.results(run.id, data=False)
        path, guessed = find_critical_path(tasks)
        warm = warmup_summary(tasks)
        # The machine's cores bound the busy cores only when every task ran on it (not on a cluster).
        on_one_host = all(t.profile.host in (None, run.host) for t in tasks)
        cpus = run.cpus if on_one_host else None
        biggest = biggest_tasks(
            tasks, own, max(keep_tasks or 0, KEPT_BIGGEST) if now else keep_tasks
        )
        listed = listed_tasks(store, run, biggest, keep_tasks)
        work = _work_wall(run.wall_s, warm)
        found = bottleneck(tasks, work, path, own)
        report = {
            "run": run_summary(run)
            | {
                "trace_id": run.trace_id,
                "ended": iso_time(run.end_ns),
                "wall_s": run.wall_s,
                # the run's wall time without its warm-up: what a trial's statistics compare
                "work_wall_s": work,
                "busy_s": busy,
                "cpus": cpus,
                "error": run.error,
                "config": run.config,
                "host": run.host,
                "pid": run.pid,
            },
            "tasks": [task_entry(t, own.get(t.id)) for t in listed],
            "task_count": len(tasks),
            # the tasks its process was running when it died, for a run that did not end
            "cut_short": cut_short_summary(run, tasks),
            # the task whose allocation the OS refused (a MemoryError), with its RSS curve
            "out_of_memory": out_of_memory_summary(tasks),
            "stages": stages,
            "critical_path": [t.id for t in path],
            "critical_path_guessed": [t.id for t in path if t.id in guessed],
            "bottleneck": found,
            # the time no task accounts for: the program's own code between recorded calls
            "no_task": no_task_summary(
                no_task_seconds(tasks, run.start_ns, run.end_ns), work, found
            ),
            "concurrency": concurrency(tasks, run.wall_s, cpus, own_cpu_s=own_cpu),
            "warmup": warm,
            "fidelity": figures,
            "cache": cache_savings(tasks),
            "results": kept_summary(kept, tasks),
            "iterations": iterations(kept, tasks),
            "costs": step_costs(tasks),
            "warnings": [w for t in tasks for w in t.metrics.get("pipeline.warnings", [])],
            "decisions": [d.__dict__ for d in decisions],
            "predictions": prediction_errors(decisions, stages, figures),
            "hardware": run_hardware(store, tasks),
            # One run is one trial: its figures have no spread (``member_of``: the set it belongs to).
            "trials": {"count": 1, "single": True, "member_of": trial_of(run.config)},
        }
    if now is not None:  # kept for a later report or comparison (``store.analyses``)
        ranked = [[task_id, *(times or (None, None))] for task_id, times in biggest.items()]
        store.keep_analysis(run, now, {"report": report | {"tasks": []}, "biggest": ranked})
    return RunAnalysis(report, tasks, own)


def build_report(
    store: ProfileStore, run_id: str | None = None, *, keep_tasks: int | None = None
) -> dict[str, Any]:
    """``analyse_run``'s report alone: the one kept in the store (``store.analyses``) when the
    run has not changed since it was analysed and it lists no more than ``KEPT_BIGGEST`` tasks.

    Args:
        store: the profile store holding the run.
        run_id: the run; None for the latest.
        keep_tasks: list at most this many tasks (those with the most own time); None for all.
    """
    if keep_tasks is not None and keep_tasks <= KEPT_BIGGEST:
        run = store.run(run_id)
        kept = store.kept_analysis(run)
        if kept is not None:
            own = {
                i: (wall, cpu) for i, wall, cpu in kept["biggest"][:keep_tasks] if wall is not None
            }
            listed = listed_tasks(store, run, own, keep_tasks)
            return kept["report"] | {"tasks": [task_entry(t, own.get(t.id)) for t in listed]}
    return analyse_run(store, run_id, keep_tasks=keep_tasks).report


_TASKS_HERE = "\x00the run's tasks\x00"


def write_report_json(store: ProfileStore, run_id: str, out: TextIO) -> None:
    """The report with every task as one JSON document, its tasks written a page at a time (one
    line each, by orjson: a fifth of the json module's time) as they are read: a run of 10^5
    tasks never has all its entries in memory. A run's kept analysis (``store.analyses``) is
    read back, with the tasks' own times found in the database."""
    run = store.run(run_id)
    kept = store.kept_analysis(run)
    own = store.own_times(run) if kept is not None else None
    if kept is None or own is None:
        analysed = analyse_run(store, run.id, keep_tasks=0)
        kept, own = {"report": analysed.report}, analysed.own
        del analysed  # its records: the pages below hold a page of them at a time
    report = kept["report"] | {"tasks": _TASKS_HERE}
    head, tail = json.dumps(report, indent=2, default=str).split(json.dumps(_TASKS_HERE))
    out.write(head + "[")
    out.flush()
    raw = getattr(out, "buffer", None)  # the bytes orjson writes go out as they are
    write = raw.write if raw is not None else lambda data: out.write(data.decode())
    separator = b"\n    "
    with collector_paused():  # each collection would walk every page's records and entries
        for page in store.task_pages(run):
            lines = [orjson.dumps(task_entry(task, own.get(task.id)), default=str) for task in page]
            write(separator + b",\n    ".join(lines))
            separator = b",\n    "
    if raw is not None:
        raw.flush()
    out.write(("\n  ]" if separator != b"\n    " else "]") + tail + "\n")
