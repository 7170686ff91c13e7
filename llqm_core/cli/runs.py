"""``llqm runs``, ``llqm report``, ``llqm compare`` and ``llqm trace``: what the store holds."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from ..analysis.compare import change_text, compare_runs, wall_words
from ..analysis.console import styled
from ..analysis.html_report import MAX_TASK_ROWS, html_report, trials_html
from ..analysis.report import (
    analyse_run,
    build_report,
    run_summary,
    write_report_json,
)
from ..analysis.report_console import BIGGEST_TASKS, render_report
from ..analysis.report_words import format_number
from ..analysis.tables import json_lines
from ..analysis.trial_report import find_trials, method_words, render_trials, trials_report
from ..model.errors import UserError
from ..model.units import format_bytes, format_seconds, iso_time
from ..telemetry.chrome_trace import chrome_trace
from .options import Commands, add_outputs, positive_int, print_json, read_store, write_html


def add_commands(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add ``runs``, ``report``, ``compare`` and ``trace`` to ``llqm``."""
    runs = commands.add_parser(
        "runs", parents=[common], help="list the runs in the store, newest first"
    )
    add_outputs(runs, json="print a JSON list of {id, name, status, started}")
    runs.add_argument(
        "--limit", type=positive_int, default=None, help="show at most this many runs"
    )
    runs.set_defaults(handler=cmd_runs)

    report = commands.add_parser(
        "report", parents=[common], help="profile of one run (default: the latest)"
    )
    report.add_argument(
        "run",
        nargs="?",
        default=None,
        help="run id or a unique prefix of it, or a trial set id (t...) for the spread of its trials",
    )
    add_outputs(
        report,
        json="print the report as one JSON object",
        html="write a self-contained HTML report with pictures to FILE (instead of the tables)",
    )
    report.add_argument(
        "--jsonl", action="store_true", help="print one JSON object per task (flat columns)"
    )
    report.add_argument(
        "--tasks",
        action="store_true",
        help="list every task (by default only the biggest, so the report fits a screen)",
    )
    report.set_defaults(handler=cmd_report)

    compare = commands.add_parser(
        "compare", parents=[common], help="two runs side by side, stage by stage"
    )
    compare.add_argument("run_a", help="run id or trial set id (or a unique prefix)")
    compare.add_argument(
        "run_b", help="run id or trial set id (or a unique prefix), compared against run_a"
    )
    add_outputs(compare, json="print the differences as JSON")
    compare.set_defaults(handler=cmd_compare)

    trace = commands.add_parser(
        "trace", parents=[common], help="the spans of one run for trace tools"
    )
    trace.add_argument("run", nargs="?", default=None, help="run id or a unique prefix of it")
    trace.add_argument(
        "--format",
        choices=["otlp-json", "chrome"],
        default="otlp-json",
        help="otlp-json: an OTLP/JSON ExportTraceServiceRequest; chrome: trace-event JSON for "
        "chrome://tracing or ui.perfetto.dev, with memory and CPU counter tracks",
    )
    trace.add_argument(
        "-o",
        "--output",
        default=None,
        metavar="FILE",
        help="write to FILE instead of standard output",
    )
    trace.set_defaults(handler=cmd_trace)


def cmd_runs(args: argparse.Namespace, console: Console) -> None:
    store = read_store(args)
    runs = store.runs(limit=args.limit)
    if args.json:
        print_json([run_summary(r) for r in runs])
        return
    if not runs:
        console.print(f"No runs in {store.name} yet.")
        return
    table = Table(title=f"Runs in {store.name}", title_justify="left")
    for column in ("id", "name", "status", "started", "wall"):
        table.add_column(column)
    for run in runs:
        wall = "-" if run.wall_s is None else f"{run.wall_s:.2f} s"
        table.add_row(run.id[:12], run.name, run.status.value, iso_time(run.start_ns), wall)
    console.print(table)


def cmd_report(args: argparse.Namespace, console: Console) -> None:
    store = read_store(args)
    trials = find_trials(store, args.run)
    if args.jsonl:
        for run_id in trials.run_ids:
            for line in json_lines(store, run_id):
                print(line)
        return
    if trials.set_id is not None:  # a trial set: its spread
        report = trials_report(store, trials)
        what = f"trial set {trials.set_id} ({len(trials.run_ids)} trials)"
        page, render = trials_html, functools.partial(render_trials, report, console)
    else:  # one run: the listing of its tasks is what grows with it; only what is shown is built
        run_id = trials.run_ids[0]
        if args.html:
            analysed = analyse_run(store, run_id, keep_tasks=MAX_TASK_ROWS)
            report = analysed.report
            what = f"run {report['run']['id'][:12]} ({report['task_count']} tasks)"
            page = functools.partial(html_report, tasks=analysed.tasks, own=analysed.own)
        elif not args.json:
            report = build_report(store, run_id, keep_tasks=None if args.tasks else BIGGEST_TASKS)
            render = functools.partial(render_report, report, console, tasks=args.tasks)
    if args.html:
        write_html(args.html, page(report))
        console.print(
            f"Wrote the HTML report of {what} to {os.path.abspath(args.html)}",
            highlight=False,
            soft_wrap=True,
        )
    if args.json and trials.set_id is None:
        write_report_json(store, trials.run_ids[0], sys.stdout)
    elif args.json:
        print_json(report)
    elif not args.html:
        render()


def cmd_compare(args: argparse.Namespace, console: Console) -> None:
    result = compare_runs(read_store(args), args.run_a, args.run_b)
    if args.json:
        print_json(result)
        return
    for side in ("a", "b"):
        shown = result[side]
        console.print(
            styled(
                f"{side}: ",
                (shown["name"], "bold"),
                f" ({shown['id'][:17]}), {_trials_words(shown['trials'])}, {wall_words(shown)}, "
                f"decisions {result['decisions'][side] or 'none'}",
            )
        )
    a_trials, b_trials = result["a"]["trials"], result["b"]["trials"]
    if result.get("paired"):
        console.print(
            "The trials ran with the same seeds: each is compared with its partner (paired t).",
            highlight=False,
        )
    table = Table(title="Per stage, a -> b", title_justify="left")
    table.add_column("stage")
    for column in ("wall", "cpu", "QPU", "queue", "peak RSS"):
        table.add_column(column, justify="right")

    for stage, fields in result["stages"].items():
        table.add_row(
            stage,
            change_text(fields["wall_s"], format_seconds),
            change_text(fields["cpu_s"], format_seconds),
            change_text(fields["qpu_s"], format_seconds),
            change_text(fields["queue_s"], format_seconds),
            change_text(fields["peak_rss_bytes"], format_bytes),
        )
    console.print(table)
    if result["fidelity"]:
        errors = Table(title="Fidelity, a -> b", title_justify="left")
        columns = (
            "figure",
            "a",
            "b",
            "difference",
            "95% interval",
            "method",
            "larger than spread?",
        )
        for column in columns:
            errors.add_column(column, justify="left" if column == "figure" else "right")
        for name, entry in result["fidelity"].items():
            interval = entry.get("ci95")
            errors.add_row(
                name,
                format_number(entry["a"]),
                format_number(entry["b"]),
                format_number(entry.get("difference")),
                "-" if interval is None else f"{interval[0]:.4g} to {interval[1]:.4g}",
                method_words(entry.get("method")),
                _spread_verdict(entry),
            )
        console.print(errors)
    if 1 in (a_trials, b_trials):
        console.print(
            "A side with one trial has no spread of its times (its fidelity figures are weighed "
            "by their shots' standard error): repeat it ([run] repeat = N) to tell a difference "
            "in time from chance.",
            highlight=False,
        )


def _trials_words(count: int) -> str:
    return "1 trial" if count == 1 else f"{count} trials (means)"


def _spread_verdict(entry: dict[str, Any]) -> str:
    """Whether a difference is larger than the trials' spread, in a word or two."""
    if "difference" not in entry:
        return "-"
    verdict = entry.get("beyond_spread")
    return "unknown (1 trial, no standard error)" if verdict is None else "yes" if verdict else "no"


def cmd_trace(args: argparse.Namespace, console: Console) -> None:
    store = read_store(args)
    run = store.run(args.run)
    if args.format == "chrome":  # times, nesting and metrics: what the outlines hold
        document = json.dumps(chrome_trace(run, store.task_outlines(run)))
    else:
        from ..telemetry.otlp_json import run_spans, spans_to_otlp_json  # protobuf, for this alone

        tasks = store.tasks(run.id)
        document = json.dumps(spans_to_otlp_json(run_spans(run, tasks)), indent=2)
    if args.output is None:
        print(document)
        return
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(document + "\n")
    except OSError as exc:
        raise UserError(f"cannot write the trace to {args.output}: {exc.strerror}.") from None
