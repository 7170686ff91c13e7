"""``llqm run``, ``llqm predict`` and ``llqm sweep``: the commands that take a pipeline file."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from ..analysis.plots import sweep_plot
from ..analysis.report import build_report
from ..analysis.report_console import render_report
from ..analysis.tradeoffs import COSTS, front_sentence, point_labels
from ..analysis.trial_report import (
    find_trials,
    format_summary,
    render_trials,
    trials_report,
)
from ..model.errors import UserError
from ..model.modelled import with_word
from ..model.units import format_bytes, format_seconds
from ..pipeline.cheaper import alternatives, said
from ..pipeline.file import Pipeline, load_pipeline
from ..pipeline.fit import error_text
from ..pipeline.sweep import parse_grid
from ..pipeline.trials import run_trials
from ..store.profile_store import ProfileStore
from ..sweeps import plan_sweep, run_plan
from .examples import add_pipeline_argument, pipeline_file
from .options import Commands, add_outputs, positive_int, print_json, progress_bar


def add_commands(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add ``run``, ``predict`` and ``sweep`` to ``llqm``."""
    run = commands.add_parser(
        "run", parents=[common], help="run a pipeline file (TOML) and report its profile"
    )
    add_pipeline_argument(run, "the pipeline file; see docs/pipelines.md for its format")
    add_outputs(
        run, json="print the run's report as JSON instead of tables (with --check: the estimate)"
    )
    run.add_argument(
        "--check",
        action="store_true",
        help="only check the file and estimate each step's time and memory, run nothing",
    )
    run.add_argument(
        "--force",
        action="store_true",
        help="run even when the estimates say it will not fit (memory, [run] max_minutes)",
    )
    run.add_argument(
        "--tasks",
        action="store_true",
        help="list every task (by default only the biggest, so the report fits a screen)",
    )
    run.set_defaults(handler=cmd_run)

    predict = commands.add_parser(
        "predict",
        parents=[common],
        help="each step's time and memory for a pipeline file, with their expected errors: "
        "the estimate llqm run --check makes (models, and stored runs that cover the file)",
    )
    add_pipeline_argument(predict, "the pipeline file")
    add_outputs(predict, json="print the predictions as JSON")
    predict.set_defaults(handler=cmd_predict)

    sweep = commands.add_parser(
        "sweep", parents=[common], help="run a pipeline file over a grid of values"
    )
    add_pipeline_argument(sweep, "the pipeline file")
    sweep.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="a dotted key of the file and its values, e.g. circuit.qubits=4,8 (repeat for more keys)",
    )
    add_outputs(
        sweep,
        json="print one JSON row per point",
        plot="also draw each point's error against its cost (--cost), with the Pareto front",
    )
    sweep.add_argument(
        "--force",
        action="store_true",
        help="run the points even when the estimates say they will not fit",
    )
    sweep.add_argument(
        "--repeat",
        type=positive_int,
        default=None,
        metavar="N",
        help="run each point N times (default: the file's [run] repeat), reporting mean, sd "
        "and 95%% intervals",
    )
    sweep.add_argument(
        "--cost",
        choices=sorted(COSTS),
        default=None,
        help="the cost the Pareto front weighs the mitigated error against: qpu (seconds), "
        "shots or wall (seconds); default qpu where a point reports QPU time, else shots",
    )
    sweep.set_defaults(handler=cmd_sweep)


def cmd_run(args: argparse.Namespace, console: Console) -> None:
    args.pipeline = pipeline_file(args)
    pipeline = load_pipeline(args.pipeline, store=getattr(args, "store", None), force=args.force)
    if args.check:
        pipeline.cheaper = alternatives(pipeline, getattr(args, "store", None) or pipeline.store)
        if args.json:
            print_json(estimate_json(pipeline))
            return
        console.print(
            f"{args.pipeline}: ok ({len(pipeline.steps)} steps: {', '.join(s.name for s in pipeline.steps)}; "
            f"{pipeline.fit.summary() if pipeline.fit else 'not estimated'}"
            + (
                f"; {pipeline.repeat} trials, about "
                f"{format_seconds(pipeline.fit.trials_s(pipeline.repeat))} in all"
                if pipeline.repeat > 1 and pipeline.fit
                else ""
            )
            + ")"
        )
        for note in pipeline.notes:
            console.print(f"  {note}")
        render_estimate(pipeline, args.pipeline, console)
        return
    store = getattr(args, "store", None) or pipeline.store
    with progress_bar(args.json) as progress:
        bar = progress.add_task(pipeline.name, total=len(pipeline.steps) * pipeline.repeat)

        def on_step(index: int, total: int, name: str) -> None:
            progress.update(
                bar, completed=index, total=total, description=f"{pipeline.name}: {name}"
            )

        trials = run_trials(pipeline, store=store, on_step=on_step)
    if trials.id is not None:
        show_trials(ProfileStore(store, readonly=True), trials.id, args.json, console)
        return
    report = build_report(ProfileStore(store, readonly=True), trials.run_ids[0])
    if args.json:
        print_json(report)
    else:
        render_report(report, console, tasks=args.tasks)


def cmd_predict(args: argparse.Namespace, console: Console) -> None:
    """The check's estimate (``llqm_core.pipeline.fit``) of every step, printed alone: a
    prediction of a run that will not fit is still a prediction."""
    args.pipeline = pipeline_file(args)
    pipeline = load_pipeline(args.pipeline, store=getattr(args, "store", None), force=True)
    pipeline.cheaper = alternatives(pipeline, getattr(args, "store", None) or pipeline.store)
    if args.json:
        print_json(estimate_json(pipeline))
        return
    render_estimate(pipeline, args.pipeline, console)


def estimate_json(pipeline: Pipeline) -> dict[str, object]:
    """What ``llqm predict --json`` and ``llqm run --check --json`` print: the fit's figures,
    each with its expected error, and the check's notes."""
    figures = pipeline.fit.figures() if pipeline.fit else {"steps": []}
    cheaper = [a.figures() for a in pipeline.cheaper]
    return figures | {"trials": pipeline.repeat, "notes": pipeline.notes, "cheaper": cheaper}


def render_estimate(pipeline: Pipeline, source: str, console: Console) -> None:
    """Each step's estimated wall time and peak memory with its expected error and what the
    figures come from, then the whole run's: the table ``llqm predict`` and ``llqm run
    --check`` print alike."""
    fit = pipeline.fit
    if fit is None:
        return
    table = Table(
        title=f"Estimated for {source} (error: a factor either way)", title_justify="left"
    )
    for column in ("step", "wall", "error", "peak memory", "error", "from"):
        table.add_column(column, justify="left" if column in ("step", "from") else "right")
    for step in fit.steps:
        table.add_row(
            step.step,
            format_seconds(step.wall_s),
            error_text(step.wall_error),
            format_bytes(int(step.peak_bytes)),
            error_text(step.peak_error),
            step.basis,
        )
    peak = fit.peak
    table.add_row(
        "whole run",
        format_seconds(fit.wall_s),
        error_text(fit.wall_error),
        format_bytes(int(peak.peak_bytes)) if peak else "-",
        error_text(fit.peak_error),
        f"x{fit.slowdown:.1f} for the machine's load" if fit.slowdown > 1.05 else "",
        end_section=True,
    )
    console.print(table)
    for line in said(pipeline.cheaper):  # a run over 10 minutes: what would cut it
        console.print(line)


def cmd_sweep(args: argparse.Namespace, console: Console) -> None:
    args.pipeline = pipeline_file(args)
    if not args.grid:
        raise UserError(
            "llqm sweep needs at least one --grid KEY=V1,V2,... (for example --grid circuit.qubits=4,8)."
        )
    plan = plan_sweep(
        args.pipeline,
        parse_grid(args.grid),
        store=getattr(args, "store", None),
        force=args.force,
        cost=args.cost,
    )
    with progress_bar(args.json) as progress:
        bar = progress.add_task("sweep", total=len(plan.points))

        def on_point(index: int, count: int, name: str) -> None:
            progress.update(bar, completed=index, description=f"sweep {index + 1}/{count}: {name}")

        result = run_plan(plan, repeat=args.repeat, on_point=on_point)
        progress.update(bar, completed=len(result.rows), description="sweep done")
    rows = result.rows
    if args.plot:
        sweep_plot(rows, args.plot, result.title, result.cost)
    if args.json:
        print_json(rows)
        return
    trial_counts = sorted({row["trials"] for row in rows})
    spread_note = (
        "one trial per point, no spread"
        if trial_counts == [1]
        else f"{'/'.join(map(str, trial_counts))} trials per point: mean and 95% interval; "
        "reduction: mean unmitigated over mean mitigated error"
    )
    table = Table(
        title=f"Sweep of {args.pipeline}: error against cost ({spread_note})",
        title_justify="left",
    )
    for column in (
        "point",
        "error unmitigated",
        "error mitigated",
        "reduction",
        "circuits",
        "shots",
        "QPU",
        "queue",
        "CPU",
        "wall",
        "run",
    ):
        table.add_column(
            column,
            justify="left" if column in ("point", "run") else "right",
            no_wrap=column == "run",  # the id llqm report takes, whole
        )
    # one key=value a line, named as in the plot, never cut: "mitigation.techn…" hides the point
    # a point on the trade-off front says so on a line of its own: no column to widen the table
    labels = [
        "\n".join(point_labels(row["point"]) + (["[front]"] if row["pareto"] else []))
        for row in rows
    ]
    widest = max((len(line) for label in labels for line in label.split("\n")), default=5)
    table.columns[0].min_width = min(widest, 30)
    for row, label in zip(rows, labels):
        table.add_row(
            label,
            format_summary(row["spread"]["error_unmitigated"]),
            format_summary(row["spread"]["error_mitigated"]),
            row.get("error_reduction_note") or format_summary(row["spread"]["error_reduction"]),
            str(row["circuits"]),
            str(row["shots"]),
            with_word(
                format_summary(row["spread"]["qpu_s"], format_seconds, True),
                bool(row["qpu_s"] and row["qpu_modelled"]),
            ),
            with_word(
                format_summary(row["spread"]["queue_s"], format_seconds, True),
                bool(row["queue_s"] and row.get("queue_modelled")),
            ),
            format_summary(row["spread"]["cpu_s"], format_seconds),
            format_summary(row["spread"]["wall_s"], format_seconds),
            row["run"][:17],
        )
    console.print(table)
    console.print(front_sentence(result), highlight=False, soft_wrap=True)


def show_trials(store: ProfileStore, set_id: str, as_json: bool, console: Console) -> None:
    """The report of a trial set: its figures as mean, sd and 95% interval."""
    report = trials_report(store, find_trials(store, set_id))
    if as_json:
        print_json(report)
    else:
        render_trials(report, console)
