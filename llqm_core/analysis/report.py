"""Turning a stored run into a report: a JSON object for machines, tables for people."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..model.records import RunRecord, TaskRecord
from ..model.units import format_bytes, format_seconds
from ..store.profile_store import ProfileStore
from .summary import (
    FIDELITY_FIGURES,
    bottleneck,
    concurrency,
    critical_path,
    fidelity,
    prediction_errors,
    step_costs,
)


def iso_time(ns: int | None) -> str | None:
    if ns is None:
        return None
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat(timespec="microseconds")


def run_summary(run: RunRecord) -> dict[str, Any]:
    return {
        "id": run.id,
        "name": run.name,
        "status": run.status.value,
        "started": iso_time(run.start_ns),
    }


def task_entry(task: TaskRecord) -> dict[str, Any]:
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


def stage_totals(tasks: list[TaskRecord]) -> dict[str, dict[str, Any]]:
    """Per stage: how many tasks, and their summed wall, CPU, QPU and queue seconds and largest peak RSS."""
    totals: dict[str, dict[str, Any]] = {}
    for task in tasks:
        entry = totals.setdefault(
            task.stage,
            {
                "tasks": 0,
                "wall_s": 0.0,
                "cpu_s": 0.0,
                "qpu_s": 0.0,
                "queue_s": 0.0,
                "peak_rss_bytes": 0,
            },
        )
        entry["tasks"] += 1
        if task.end_ns is not None:
            entry["wall_s"] += task.profile.wall_s
            entry["cpu_s"] += task.profile.cpu_s
            entry["qpu_s"] += task.profile.qpu_s or 0.0
            entry["queue_s"] += task.profile.queue_s or 0.0
            entry["peak_rss_bytes"] = max(entry["peak_rss_bytes"], task.profile.peak_rss_bytes)
    return totals


def build_report(store: ProfileStore, run_id: str | None = None) -> dict[str, Any]:
    """The report of one run (the latest when ``run_id`` is None) as plain JSON-ready data."""
    run = store.run(run_id)
    tasks = store.tasks(run.id)
    decisions = store.decisions(run.id)
    stages = stage_totals(tasks)
    figures = fidelity(tasks)
    path = critical_path(tasks)
    return {
        "run": run_summary(run)
        | {
            "trace_id": run.trace_id,
            "ended": iso_time(run.end_ns),
            "wall_s": run.wall_s,
            "error": run.error,
            "config": run.config,
            "host": run.host,
            "pid": run.pid,
        },
        "tasks": [task_entry(t) for t in tasks],
        "stages": stages,
        "critical_path": [t.id for t in path],
        "bottleneck": bottleneck(tasks, run.wall_s, path),
        "concurrency": concurrency(tasks, run.wall_s),
        "fidelity": figures,
        "costs": step_costs(tasks),
        "warnings": [w for t in tasks for w in t.metrics.get("pipeline.warnings", [])],
        "decisions": [d.__dict__ for d in decisions],
        "predictions": prediction_errors(decisions, stages, figures),
    }


def _depths(tasks: list[dict[str, Any]]) -> dict[str, int]:
    parents = {t["id"]: t["parent_id"] for t in tasks}
    depths: dict[str, int] = {}
    for task_id in parents:
        depth, node = 0, parents.get(task_id)
        while node is not None and node in parents and depth < 64:
            depth, node = depth + 1, parents[node]
        depths[task_id] = depth
    return depths


def _render_tasks(report: dict[str, Any], console: Console) -> None:
    depths = _depths(report["tasks"])
    table = Table(title="Tasks", title_justify="left")
    for column, justify in (
        ("task", "left"),
        ("stage", "left"),
        ("status", "left"),
        ("wall", "right"),
        ("cpu", "right"),
        ("peak RSS", "right"),
        ("RSS growth", "right"),
        ("metrics", "left"),
    ):
        table.add_column(column, justify=justify)
    for task in report["tasks"]:
        metrics = ", ".join(f"{k}={v}" for k, v in list(task["metrics"].items())[:4])
        if len(task["metrics"]) > 4:
            metrics += ", ..."
        style = "red" if task["status"] in ("failed", "interrupted") else None
        table.add_row(
            "  " * depths[task["id"]] + task["name"],
            task["stage"],
            task["status"],
            format_seconds(task["wall_s"]),
            format_seconds(task["cpu_s"]),
            format_bytes(task["peak_rss_bytes"]),
            format_bytes(task["rss_growth_bytes"]),
            metrics,
            style=style,
        )
    console.print(table)


def render_report(report: dict[str, Any], console: Console, tasks: bool = True) -> None:
    run = report["run"]
    console.print(
        f"[bold]{run['name']}[/bold]  run {run['id']}  [bold]{run['status']}[/bold]  "
        f"started {run['started']}  wall {format_seconds(run['wall_s'])}  trace {run['trace_id']}"
    )
    if run.get("error"):
        console.print(f"[red]error:[/red] {run['error']}")
    if tasks:
        _render_tasks(report, console)
    stages = Table(title="Stages", title_justify="left")
    for column in ("stage", "tasks", "wall", "cpu"):
        stages.add_column(column, justify="left" if column == "stage" else "right")
    for stage, totals in sorted(report["stages"].items(), key=lambda item: -item[1]["wall_s"]):
        stages.add_row(
            stage,
            str(totals["tasks"]),
            format_seconds(totals["wall_s"]),
            format_seconds(totals["cpu_s"]),
        )
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
    return (
        f"{strong('Bottleneck:')} stage {strong(found['stage'])} on {strong(found['resource'])}, "
        f"{found['share'] * 100:.0f}% of the run's wall time ({format_seconds(found['seconds'])}) on the critical "
        f"path of {len(report.get('critical_path') or [])} tasks"
    )


def render_outcome(report: dict[str, Any], console: Console) -> None:
    """The bottleneck, the cost of each step, and the fidelity figures: the answer at a glance."""
    sentence = bottleneck_sentence(report, lambda text: f"[bold]{escape(text)}[/bold]")
    if sentence:
        console.print(sentence)
    parallel = report.get("concurrency") or {}
    if parallel.get("mean_busy_cores") is not None:
        console.print(
            f"Concurrency: up to {parallel['max_parallel_tasks']} tasks at once, "
            f"{parallel['mean_busy_cores']:.2f} busy cores on average"
        )
    costs = Table(title="Cost per step", title_justify="left")
    for column in ("step", "wall", "cpu", "circuits", "shots", "QPU", "queue", "peak RSS"):
        costs.add_column(column, justify="left" if column == "step" else "right")
    for row in report.get("costs", []):
        costs.add_row(
            row["stage"],
            format_seconds(row["wall_s"]),
            format_seconds(row["cpu_s"]),
            str(row["circuits"]),
            str(row["shots"]),
            format_seconds(row["qpu_s"]),
            format_seconds(row["queue_s"]),
            format_bytes(row["peak_rss_bytes"]),
        )
    console.print(costs)
    figures = report.get("fidelity") or {}
    if figures:
        table = Table(title="Fidelity", title_justify="left")
        for figure in FIDELITY_FIGURES:
            table.add_column(figure.replace("_", " "), justify="right")
        table.add_row(*(format_number(figures.get(k)) for k in FIDELITY_FIGURES))
        console.print(table)
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
        table = Table(title="Policy decisions", title_justify="left")
        for column in ("policy", "choice", "rationale"):
            table.add_column(column)
        for decision in decisions:
            choice = (
                ", ".join(
                    f"{k}={_short(v)}" for k, v in decision["choice"].items() if k != "stages"
                )
                or "stage predictions"
            )
            table.add_row(decision["policy"], choice, decision["rationale"])
        console.print(table)
    for warning in report.get("warnings", []):
        console.print(f"[yellow]warning:[/yellow] {warning}")


def _short(value: Any, limit: int = 60) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
