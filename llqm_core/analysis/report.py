"""Turning a stored run into a report: a JSON object for machines, tables for people."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..model.records import RunRecord, TaskRecord
from ..model.trials import trial_of
from ..model.units import format_bytes, format_seconds, iso_time
from ..store.profile_store import ProfileStore
from .plain import styled
from .summary import (
    FIDELITY_FIGURES,
    bottleneck,
    cache_savings,
    concurrency,
    exclusive_times,
    fidelity,
    find_critical_path,
    prediction_errors,
    step_costs,
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
    """Per stage: how many tasks, their summed wall, CPU, QPU and queue seconds and largest peak RSS.

    ``wall_s`` and ``cpu_s`` are inclusive: a task's time counts its nested tasks again (a
    ``mitigate.zne`` task contains its ``execute`` tasks). ``own_wall_s`` and ``own_cpu_s`` count
    only the time no child task accounts for, so they add up across stages to the run's busy time.
    ``own`` is ``exclusive_times(tasks)`` when the caller has it already."""
    own = exclusive_times(tasks) if own is None else own
    totals: dict[str, dict[str, Any]] = {}
    for task in tasks:
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
            format_seconds(t["qpu_s"]),
            format_seconds(t["queue_s"]),
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


def build_report(store: ProfileStore, run_id: str | None = None) -> dict[str, Any]:
    """The report of one run (the latest when ``run_id`` is None) as plain JSON-ready data."""
    run = store.run(run_id)
    tasks = store.tasks(run.id)
    decisions = store.decisions(run.id)
    own = exclusive_times(tasks)
    stages = stage_totals(tasks, own)
    busy = sum(entry["own_wall_s"] for entry in stages.values())
    figures = fidelity(tasks)
    path, guessed = find_critical_path(tasks)
    # The machine's cores bound the busy cores only when every task ran on it (not on a cluster).
    on_one_host = all(t.profile.host in (None, run.host) for t in tasks)
    cpus = run.cpus if on_one_host else None
    return {
        "run": run_summary(run)
        | {
            "trace_id": run.trace_id,
            "ended": iso_time(run.end_ns),
            "wall_s": run.wall_s,
            "busy_s": busy,
            "cpus": cpus,
            "error": run.error,
            "config": run.config,
            "host": run.host,
            "pid": run.pid,
        },
        "tasks": [task_entry(t, own.get(t.id)) for t in tasks],
        "stages": stages,
        "critical_path": [t.id for t in path],
        "critical_path_guessed": [t.id for t in path if t.id in guessed],
        "bottleneck": bottleneck(tasks, run.wall_s, path),
        "concurrency": concurrency(tasks, run.wall_s, cpus),
        "fidelity": figures,
        "cache": cache_savings(tasks),
        "costs": step_costs(tasks),
        "warnings": [w for t in tasks for w in t.metrics.get("pipeline.warnings", [])],
        "decisions": [d.__dict__ for d in decisions],
        "predictions": prediction_errors(decisions, stages, figures),
        "hardware": run_hardware(store, tasks),
        # One run is one trial: its figures have no spread (``member_of``: the set it belongs to).
        "trials": {"count": 1, "single": True, "member_of": trial_of(run.config)},
    }


def single_trial_sentence(report: dict[str, Any]) -> str:
    """What a one-run report says of its spread: it is one trial (of a set, or alone)."""
    trial = trial_of(report["run"].get("config"))
    if trial is not None:
        return (
            f"Trial {trial['index']} of {trial['count']} (seed {trial['seed']}) of trial set "
            f"{trial['set']}: llqm report {trial['set']} shows the spread over all of them."
        )
    return (
        "One trial: its figures are one draw with no spread; [run] repeat = N or "
        "llqm sweep --repeat N gives mean, sd and 95% intervals."
    )


def format_qpu(value: float | None, modelled: bool) -> str:
    """QPU seconds, labelled when a model of the device gave them rather than a device."""
    if not value:
        return "-"
    return format_seconds(value) + (" modelled" if modelled else "")


def _depths(tasks: list[dict[str, Any]]) -> dict[str, int]:
    parents = {t["id"]: t["parent_id"] for t in tasks}
    depths: dict[str, int] = {}
    for task_id in parents:
        depth, node = 0, parents.get(task_id)
        while node is not None and node in parents and depth < 64:
            depth, node = depth + 1, parents[node]
        depths[task_id] = depth
    return depths


#: Tasks the text report lists unless asked for all (``--tasks``): enough to name where time went.
BIGGEST_TASKS = 10


def _render_tasks(report: dict[str, Any], console: Console, every: bool) -> None:
    """Every task, nested under its parent; or only the few with the most own wall time."""
    depths = _depths(report["tasks"])
    rows = report["tasks"]
    title = "Tasks"
    if not every and len(rows) > BIGGEST_TASKS:
        rows = sorted(rows, key=lambda t: -(t["own_wall_s"] or 0.0))[:BIGGEST_TASKS]
        title = (
            f"Biggest tasks by own wall time ({BIGGEST_TASKS} of {len(report['tasks'])}; "
            "--tasks lists all)"
        )
    table = Table(title=title, title_justify="left")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("task", "left"),
        ("stage", "left"),
        ("status", "left"),
        ("own wall", "right"),
        ("wall", "right"),
        ("cpu", "right"),
        ("peak RSS", "right"),
        ("RSS growth", "right"),
        ("metrics", "left"),
    )
    for column, justify in columns:
        table.add_column(column, justify=justify)
    table.add_column("metrics", no_wrap=True, overflow="ellipsis", max_width=40)  # a line per task
    for task in rows:
        metrics = ", ".join(f"{k}={v}" for k, v in list(task["metrics"].items())[:4])
        if len(task["metrics"]) > 4:
            metrics += ", ..."
        style = "red" if task["status"] in ("failed", "interrupted") else None
        table.add_row(
            "  " * depths[task["id"]] * every + task["name"],
            task["stage"],
            task["status"],
            format_seconds(task["own_wall_s"]),
            format_seconds(task["wall_s"]),
            format_seconds(task["cpu_s"]),
            format_bytes(task["peak_rss_bytes"]),
            format_bytes(task["rss_growth_bytes"]),
            metrics,
            style=style,
        )
    console.print(table)


def render_report(report: dict[str, Any], console: Console, tasks: bool = False) -> None:
    """The report as tables that fit a screen: the biggest tasks (all of them with ``tasks``),
    the stages, and the outcome."""
    run = report["run"]
    console.print(
        styled(
            (run["name"], "bold"),
            f"  run {run['id']}  ",
            (run["status"], "bold"),
            f"  started {run['started']}  wall {format_seconds(run['wall_s'])}  trace {run['trace_id']}",
        )
    )
    if run.get("error"):
        console.print(styled(("error:", "red"), f" {run['error']}"))
    if report["tasks"]:
        _render_tasks(report, console, tasks)
    stages = Table(title=stages_caption(report), title_justify="left")
    for column in STAGE_COLUMNS:
        stages.add_column(column, justify="left" if column == "stage" else "right")
    for row in stage_rows(report):
        stages.add_row(*row)
    console.print(stages)
    render_outcome(report, console)


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


def render_outcome(report: dict[str, Any], console: Console) -> None:
    """The bottleneck, the cost of each step, and the fidelity figures: the answer at a glance."""
    sentence = bottleneck_sentence(report, lambda text: f"[bold]{escape(text)}[/bold]")
    if sentence:  # LLQM's own markup around escaped names
        console.print(Text.from_markup(sentence))
    cached = cache_sentence(report)
    if cached:
        console.print(cached, highlight=False)
    parallel = report.get("concurrency") or {}
    if parallel.get("mean_busy_cores") is not None:
        console.print(
            f"Concurrency: up to {parallel['max_parallel_tasks']} "
            f"task{'' if parallel['max_parallel_tasks'] == 1 else 's'} at once, "
            f"{parallel['mean_busy_cores']:.2f} busy cores on average"
            + (f" (of {parallel['cpus']})" if parallel.get("cpus") else "")
        )
    steps = report.get("costs", [])
    title = "Cost per step"
    if len(steps) > BIGGEST_TASKS:  # keep the biggest, in the run's order
        biggest = sorted(steps, key=lambda row: -(row["wall_s"] or 0.0))[:BIGGEST_TASKS]
        steps = [row for row in steps if any(row is big for big in biggest)]
        title += f" (the {BIGGEST_TASKS} longest of {len(report['costs'])}; --json has all)"
    costs = Table(title=title, title_justify="left")
    for column in ("step", "wall", "cpu", "circuits", "shots", "QPU", "queue", "peak RSS"):
        costs.add_column(column, justify="left" if column == "step" else "right")
    for row in steps:
        costs.add_row(
            row["stage"],
            format_seconds(row["wall_s"]),
            format_seconds(row["cpu_s"]),
            str(row["circuits"]),
            str(row["shots"]),
            format_qpu(row["qpu_s"], row.get("qpu_modelled", False)),
            format_seconds(row["queue_s"]),
            format_bytes(row["peak_rss_bytes"]),
        )
    console.print(costs)
    figures = report.get("fidelity") or {}
    if figures.get("observable"):
        chosen = figures.get("observable_choice")
        console.print(
            f"Observable: {_short(figures['observable'], 100)}"
            + (f" ({chosen})" if chosen else ""),
            highlight=False,
            markup=False,
        )
    if figures:
        table = Table(title="Fidelity", title_justify="left")
        for figure in FIDELITY_FIGURES:
            table.add_column(figure.replace("_", " "), justify="right")
        table.add_row(*(_figure(figures, k) for k in FIDELITY_FIGURES))
        console.print(table)
    config = report["run"].get("config") or {}
    if trial_of(config) or (figures and "profile.program" not in config):
        # a profiled script cannot be repeated by LLQM, so the note on trials is for pipelines only
        console.print(single_trial_sentence(report), highlight=False)
    predictions = report.get("predictions") or []
    if predictions:
        table = Table(title="Predicted before the run vs measured", title_justify="left")
        for column in ("what", "predicted", "measured", "error"):
            table.add_column(column, justify="left" if column == "what" else "right")
        for row in predictions:
            error = "-" if row["relative_error"] is None else f"{row['relative_error'] * 100:.0f}%"
            show = format_seconds if row.get("unit") == "s" else format_number
            table.add_row(row["stage"], show(row["predicted"]), show(row["measured"]), error)
        console.print(table)
    decisions = report.get("decisions") or []
    if decisions:
        shown = decisions[:BIGGEST_TASKS]
        title = "Policy decisions"
        if len(shown) < len(decisions):
            title += f" (first {len(shown)} of {len(decisions)}; --json has all)"
        table = Table(title=title, title_justify="left")
        for column in ("policy", "choice", "rationale"):
            table.add_column(column)
        for decision in shown:
            table.add_row(
                decision["policy"], choice_text(decision["choice"]), decision["rationale"]
            )
        console.print(table)
    for warning in report.get("warnings", []):
        console.print(styled(("warning:", "yellow"), f" {warning}"))


def _figure(figures: dict[str, Any], key: str) -> str:
    """A fidelity figure with its standard error where the run measured one; an ideal value
    no method could compute reads "unknown"."""
    if key == "ideal" and figures.get(key) is None and figures.get("ideal_method") == "unknown":
        return "unknown"
    value, error = figures.get(key), figures.get(f"{key}_stderr")
    if error is None or value is None:
        return format_number(value)
    return format_with_error(float(value), float(error))


def format_with_error(value: float, error: float) -> str:
    """``value ± error`` with the error to two significant figures and the value to the same
    decimal place, as results are quoted; digits below the error are noise."""
    if not math.isfinite(error) or error <= 0 or not math.isfinite(value):
        return f"{format_number(value)} ± {format_number(error)}"
    decimals = max(0, 1 - math.floor(math.log10(error)))
    if decimals > 12 or abs(value) >= 1e6:
        return f"{value:.4g} ± {error:.2g}"
    return f"{value:.{decimals}f} ± {error:.{decimals}f}"


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
