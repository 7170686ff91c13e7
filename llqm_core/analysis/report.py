"""Turning a stored run into a report: a JSON object, and the words and table rows every
rendering of it shares (the console's is ``report_console``, the HTML page's ``html_report``)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, NamedTuple, TextIO

import orjson

from ..model.detail import CALLS, CONFIG_KEY
from ..model.modelled import flags, is_modelled, with_word
from ..model.records import RunRecord, TaskRecord
from ..model.trial_keys import trial_of
from ..model.units import format_bytes, format_seconds, iso_time
from ..model.warmup import is_warmup
from ..store.profile_store import ProfileStore
from ..store.reader import collector_paused
from .iterations import iterations
from .kept import kept_summary
from .listing import KEPT_BIGGEST, biggest_tasks, listed_tasks
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


STAGE_COLUMNS = (
    "stage",
    "tasks",
    "own wall",
    "own cpu",
    "wall incl. nested",
    "cpu incl. nested",
    "QPU",
    "queue",
    "peak RSS",
)


def stage_rows(report: dict[str, Any]) -> list[list[str]]:
    """The stages table's rows (``STAGE_COLUMNS``), the most own wall time first: one layout for
    the console, HTML and Markdown, so own and inclusive time are named alike everywhere."""
    ordered = sorted(report["stages"].items(), key=lambda item: -item[1]["own_wall_s"])
    return [
        [
            stage,
            str(t["tasks"]),
            format_seconds(t["own_wall_s"]),
            format_seconds(t["own_cpu_s"]),
            format_seconds(t["wall_s"]),
            format_seconds(t["cpu_s"]),
            with_word(format_seconds(t["qpu_s"]), t.get("qpu_modelled", False)),
            with_word(format_seconds(t["queue_s"]), t.get("queue_modelled", False)),
            format_bytes(t["peak_rss_bytes"]),
        ]
        for stage, t in ordered
    ]


def stages_caption(report: dict[str, Any]) -> str:
    """What the stages table's columns add up to, in one sentence."""
    busy = report["run"].get("busy_s")
    return (
        f"Stages: own time adds up to the tasks' busy time ({format_seconds(busy)}); "
        "time incl. nested counts a nested stage again in its parent, so do not add it up"
    )


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
        report = {
            "run": run_summary(run)
            | {
                "trace_id": run.trace_id,
                "ended": iso_time(run.end_ns),
                "wall_s": run.wall_s,
                # the run's wall time without its warm-up: what a trial's statistics compare
                "work_wall_s": _work_wall(run.wall_s, warm),
                "busy_s": busy,
                "cpus": cpus,
                "error": run.error,
                "config": run.config,
                "host": run.host,
                "pid": run.pid,
            },
            "tasks": [task_entry(t, own.get(t.id)) for t in listed],
            "task_count": len(tasks),
            "stages": stages,
            "critical_path": [t.id for t in path],
            "critical_path_guessed": [t.id for t in path if t.id in guessed],
            "bottleneck": bottleneck(tasks, _work_wall(run.wall_s, warm), path, own),
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
    run has not changed since it was analysed and it lists no more than ``KEPT_BIGGEST`` tasks."""
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


def single_trial_sentence(report: dict[str, Any]) -> str:
    """What a one-run report says of its spread: it is one trial (of a set, or alone)."""
    trial = trial_of(report["run"].get("config"))
    if trial is not None:
        return (
            f"Trial {trial['index']} of {trial['count']} (seed {trial['seed']}) of trial set "
            f"{trial['set']}: llqm report {trial['set']} shows the spread over all of them."
        )
    if any(key.endswith("_stderr") for key in report.get("fidelity") or {}):
        return (
            "One trial: its fidelity figures carry the standard error of their shots (±); its "
            "times are one draw with no spread; [run] repeat = N or llqm sweep --repeat N "
            "gives mean, sd and 95% intervals."
        )
    return (
        "One trial: its figures are one draw with no spread; [run] repeat = N or "
        "llqm sweep --repeat N gives mean, sd and 95% intervals."
    )


def format_qpu(value: float | None, modelled: bool) -> str:
    """QPU (or queue) seconds, labelled when a model of the device gave them rather than a device."""
    if not value:
        return "-"
    return with_word(format_seconds(value), modelled)


def format_number(value: Any) -> str:
    return "-" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def bottleneck_sentence(report: dict[str, Any], strong: Callable[[str], str] = str) -> str | None:
    """The report's bottleneck in one sentence, its stage and resource passed through ``strong``
    (bold in the console, HTML or Markdown); None when the run has none."""
    found = report.get("bottleneck")
    if not found:
        return None
    guessed = len(report.get("critical_path_guessed") or [])
    caveat = (
        f" ({guessed} of its links guessed from timing: those tasks were stored without their thread)"
        if guessed
        else ""
    )
    return (
        f"{strong('Bottleneck:')} stage {strong(found['stage'])} on {strong(found['resource'])}, "
        f"{found['share'] * 100:.0f}% of the run's wall time ({format_seconds(found['seconds'])}) "
        "on the critical "
        f"path of {len(report.get('critical_path') or [])} tasks{caveat}"
    )


def warmup_sentence(report: dict[str, Any]) -> str | None:
    """The run's warm-up on one line (None when it paid none): first calls that a second run in
    the same process would not pay, left out of every figure above and below it."""
    warm = report.get("warmup")
    if not warm:
        return None
    shown = ", ".join(
        f"{item['name']} {format_seconds(item['wall_s'])}" for item in warm["items"][:3]
    )
    more = len(warm["items"]) - 3
    return (
        f"Warm-up: {format_seconds(warm['wall_s'])} in {warm['tasks']} first "
        f"call{'' if warm['tasks'] == 1 else 's'} ({shown}{f', {more} more' if more > 0 else ''}), "
        "left out of the tasks, stages, bottleneck and critical path"
    )


def detail_sentence(report: dict[str, Any]) -> str | None:
    """What a run that recorded its instrumented calls alone lacks; None for a full one."""
    if (report["run"].get("config") or {}).get(CONFIG_KEY) != CALLS:
        return None
    return (
        "Detail: calls - each instrumented call is a task with its times, CPU and dependencies; "
        "no per-stage or per-pass transpile seconds, descriptions of circuits and results, or "
        "kept results were recorded (llqm profile --detail full records them)"
    )


def cache_sentence(report: dict[str, Any]) -> str | None:
    """What the engine's cache saved, in one sentence; None when it served no task."""
    cache = report.get("cache")
    if not cache:
        return None
    unknown = cache["cached_tasks"] - cache["with_known_source"]
    return (
        f"Cache: {cache['cached_tasks']} tasks served from the engine's cache, saving "
        f"{format_seconds(cache['saved_wall_s'])} of wall time and {format_seconds(cache['saved_cpu_s'])} "
        "of CPU (what computing their results took)"
        + (f"; {unknown} of them computed outside this store" if unknown else "")
    )


def format_with_error(value: float, error: float) -> str:
    """``value ± error`` with the error to two significant figures and the value to the same
    decimal place, as results are quoted; digits below the error are noise."""
    if not math.isfinite(error) or error <= 0 or not math.isfinite(value):
        return f"{format_number(value)} ± {format_number(error)}"
    decimals = max(0, 1 - math.floor(math.log10(error)))
    if decimals > 12 or abs(value) >= 1e6:
        return f"{value:.4g} ± {error:.2g}"
    return f"{value:.{decimals}f} ± {error:.{decimals}f}"


def fidelity_text(figures: dict[str, Any], key: str) -> str:
    """A fidelity figure with its standard error where the run measured one; an ideal value
    no method could compute reads "unknown"."""
    if key == "ideal" and figures.get(key) is None and figures.get("ideal_method") == "unknown":
        return "unknown"
    value, error = figures.get(key), figures.get(f"{key}_stderr")
    if error is None or value is None:
        return format_number(value)
    return format_with_error(float(value), float(error))


def choice_text(choice: dict[str, Any]) -> str:
    """A decision's choice in a few words: "default kept" for one that changed nothing."""
    if not choice:
        return "default kept"
    if "stages" in choice:
        return "stage predictions"
    return ", ".join(f"{k}={_short(v)}" for k, v in choice.items())


def _short(value: Any, limit: int = 60) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
