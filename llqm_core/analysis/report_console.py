"""A report on the console: the run's heading, its stages and biggest tasks, and its outcome
(the bottleneck, costs per step, fidelity, predictions, decisions), as rich tables.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..model.modelled import with_word
from ..model.trial_keys import trial_of
from ..model.units import format_bytes, format_seconds
from ..model.warmup import is_warmup
from .console import styled
from .iterations import ITERATION_COLUMNS, iteration_rows
from .kept import derived_sentence, kept_sentence
from .report_words import (
    COST_COLUMNS,
    STAGE_COLUMNS,
    bottleneck_sentence,
    cache_sentence,
    choice_text,
    cut_short_sentence,
    detail_sentence,
    fidelity_text,
    format_number,
    format_qpu,
    no_task_sentence,
    out_of_memory_sentence,
    single_trial_sentence,
    stage_rows,
    stages_caption,
    transpiled_text,
    warmup_sentence,
)
from .summary import FIDELITY_FIGURES


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
    rows = report["tasks"] if every else [t for t in report["tasks"] if not is_warmup(t["stage"])]
    title = "Tasks"
    total = report.get("task_count", len(rows))  # the report may list only the biggest
    if not every and (len(rows) > BIGGEST_TASKS or total > len(rows)):
        rows = sorted(rows, key=lambda t: -(t["own_wall_s"] or 0.0))[:BIGGEST_TASKS]
        title = f"Biggest tasks by own wall time ({len(rows)} of {total}; --tasks lists all)"
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
    )
    for column, justify in columns:
        table.add_column(column, justify=justify)
    table.add_column("metrics", no_wrap=True, overflow="ellipsis", max_width=40)  # a line per task
    for task in rows:
        metrics = ", ".join(f"{k}={v}" for k, v in list(task["metrics"].items())[:4])
        if len(task["metrics"]) > 4:
            metrics += ", ..."
        style = "red" if task["status"] in ("failed", "interrupted", "running at exit") else None
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
    for sentence in (cut_short_sentence(report), out_of_memory_sentence(report)):
        if sentence:
            console.print(styled((sentence, "red")), highlight=False, soft_wrap=True)
    derived = derived_sentence(report)
    if derived:
        console.print(derived, highlight=False, soft_wrap=True)
    detail = detail_sentence(report)
    if detail:
        console.print(detail, highlight=False, soft_wrap=True)
    if report["tasks"]:
        _render_tasks(report, console, tasks)
    stages = Table(title=stages_caption(report), title_justify="left")
    for column in STAGE_COLUMNS:
        stages.add_column(column, justify="left" if column == "stage" else "right")
    for row in stage_rows(report):
        stages.add_row(*row)
    console.print(stages)
    render_outcome(report, console)


def render_outcome(report: dict[str, Any], console: Console) -> None:
    """The bottleneck, the cost of each step, and the fidelity figures: the answer at a glance."""
    sentence = bottleneck_sentence(report, lambda text: f"[bold]{escape(text)}[/bold]")
    if sentence:  # LLQM's own markup around escaped names
        console.print(Text.from_markup(sentence))
    outside = no_task_sentence(report, lambda text: f"[bold]{escape(text)}[/bold]")
    if outside:
        console.print(Text.from_markup(outside))
    warm = warmup_sentence(report)
    if warm:
        console.print(warm, highlight=False)
    cached = cache_sentence(report)
    if cached:
        console.print(cached, highlight=False)
    kept = kept_sentence(report)
    if kept:
        console.print(kept, highlight=False, soft_wrap=True)
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
    for column in COST_COLUMNS:
        costs.add_column(column, justify="left" if column == "step" else "right")
    for row in steps:
        costs.add_row(
            row["stage"],
            format_seconds(row["wall_s"]),
            format_seconds(row["cpu_s"]),
            str(row["circuits"]),
            transpiled_text(row),
            str(row["shots"]),
            format_qpu(row["qpu_s"], row.get("qpu_modelled", False)),
            with_word(format_seconds(row["queue_s"]), row.get("queue_modelled", False)),
            format_bytes(row["peak_rss_bytes"]),
        )
    console.print(costs)
    render_iterations(report, console)
    figures = report.get("fidelity") or {}
    if figures.get("observable"):  # what was measured and, for the default, why
        chosen = figures.get("observable_choice")
        label = str(figures["observable"])
        label = label if len(label) <= 100 else label[:97] + "..."
        console.print(
            f"Observable: {label}" + (f" ({chosen})" if chosen else ""),
            highlight=False,
            markup=False,
        )
    if figures:
        table = Table(title="Fidelity", title_justify="left")
        for figure in FIDELITY_FIGURES:
            table.add_column(figure.replace("_", " "), justify="right")
        table.add_row(*(fidelity_text(figures, k) for k in FIDELITY_FIGURES))
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
            if row.get("modelled"):  # a model reproducing itself is no measure of accuracy
                error = "not scored (modelled)"
            show = format_seconds if row.get("unit") == "s" else format_number
            measured = with_word(show(row["measured"]), row.get("modelled", False))
            table.add_row(row["stage"], show(row["predicted"]), measured, error)
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


#: Iterations shown in the console: the first and the last ones of a longer loop.
SHOWN_ITERATIONS = 20


def render_iterations(report: dict[str, Any], console: Console) -> None:
    """The loop's iterations, if the run was one (the first and last of a long loop)."""
    rows = iteration_rows(report)
    if not rows:
        return
    title = f"Iterations ({len(rows)}"
    if len(rows) > SHOWN_ITERATIONS:
        half = SHOWN_ITERATIONS // 2
        rows = rows[:half] + [["..."] * len(ITERATION_COLUMNS)] + rows[-half:]
        title += f"; the first and last {half}, --json or --html has all"
    source = report["iterations"][0]["source"]
    title += ", marked by the program)" if source == "user" else f", detected: {source})"
    table = Table(title=title, title_justify="left")
    for column in ITERATION_COLUMNS:
        table.add_column(column, justify="right" if column != "calibration" else "left")
    for row in rows:
        table.add_row(*row)
    console.print(table)
