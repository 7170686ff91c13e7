"""The ``llqm`` command.

User errors (a bad option, an unknown run, an unreadable store) print one sentence on
standard error and exit with status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from . import __version__, profile_command, store_command
from . import hardware_commands as hardware_actions
from .analysis.compare import compare_runs
from .analysis.html_report import html_report, trials_html
from .analysis.plain import plain_console, styled
from .analysis.plots import device_map_png, drift_map_png, point_labels, sweep_plot
from .analysis.report import (
    build_report,
    format_bytes,
    format_number,
    format_seconds,
    render_report,
    run_summary,
)
from .analysis.tables import json_lines
from .analysis.trials import (
    find_trials,
    format_summary,
    render_trials,
    repeated_point,
    trials_report,
)
from .hooks.plugins import configure_plugins, loaded_plugins
from .model import hardware
from .model.errors import LLQMWarning, StoreError, UserError
from .model.records import HardwareSnapshot
from .model.units import iso_time
from .pipeline import registries
from .pipeline.file import PipelineFailed, load_pipeline, read_pipeline_file
from .pipeline.sections import features
from .pipeline.shapes import describe, pipeline_shape
from .pipeline.sweep import grid_pipelines, parse_grid, point_summary
from .pipeline.trials import run_trials
from .store.profile_store import ProfileStore, default_store_path
from .telemetry.chrome_trace import chrome_trace

EXIT_USER_ERROR = 2
EXIT_RUN_FAILED = 1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse would print the whole usage first
        raise UserError(f"{message} (see `{self.prog} --help`).")


def _common_options() -> _Parser:
    common = _Parser(add_help=False)
    common.add_argument(
        "--store",
        default=argparse.SUPPRESS,
        metavar="PATH|URL",
        help="profile store: an SQLite file or a postgresql:// URL "
        f"(default: $LLQM_STORE or {default_store_path()})",
    )
    common.add_argument(
        "--plugins",
        default=argparse.SUPPRESS,
        metavar="NAMES",
        help="load only these plugins (comma-separated entry-point names; env LLQM_PLUGINS)",
    )
    common.add_argument(
        "--disable-plugins",
        default=argparse.SUPPRESS,
        metavar="NAMES",
        help="skip these plugins (comma-separated; env LLQM_DISABLE_PLUGINS)",
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common_options()
    parser = _Parser(
        prog="llqm",
        description="Profile quantum-classical pipelines task by task.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"llqm {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    run = commands.add_parser(
        "run", parents=[common], help="run a pipeline file (TOML) and report its profile"
    )
    run.add_argument("pipeline", help="the pipeline file; see docs/pipelines.md for its format")
    run.add_argument(
        "--json", action="store_true", help="print the run's report as JSON instead of tables"
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
        help="each stage's time and memory for a pipeline file, predicted from stored profiles",
    )
    predict.add_argument("pipeline", help="the pipeline file")
    predict.add_argument(
        "--model",
        default="cost_model",
        help="the registered policy that predicts (default cost_model)",
    )
    predict.add_argument("--json", action="store_true", help="print the predictions as JSON")
    predict.set_defaults(handler=cmd_predict)

    sweep = commands.add_parser(
        "sweep", parents=[common], help="run a pipeline file over a grid of values"
    )
    sweep.add_argument("pipeline", help="the pipeline file")
    sweep.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="a dotted key of the file and its values, e.g. circuit.qubits=4,8 (repeat for more keys)",
    )
    sweep.add_argument("--json", action="store_true", help="print one JSON row per point")
    sweep.add_argument(
        "--force",
        action="store_true",
        help="run the points even when the estimates say they will not fit",
    )
    sweep.add_argument(
        "--plot",
        default=None,
        metavar="FILE.png",
        help="also draw each point's error against its QPU seconds (shots where no QPU time is reported)",
    )
    sweep.add_argument(
        "--repeat",
        type=_positive_int,
        default=None,
        metavar="N",
        help="run each point N times (default: the file's [run] repeat), reporting mean, sd "
        "and 95%% intervals",
    )
    sweep.set_defaults(handler=cmd_sweep)

    runs = commands.add_parser(
        "runs", parents=[common], help="list the runs in the store, newest first"
    )
    runs.add_argument(
        "--json", action="store_true", help="print a JSON list of {id, name, status, started}"
    )
    runs.add_argument(
        "--limit", type=_positive_int, default=None, help="show at most this many runs"
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
    report.add_argument("--json", action="store_true", help="print the report as one JSON object")
    report.add_argument(
        "--jsonl", action="store_true", help="print one JSON object per task (flat columns)"
    )
    report.add_argument(
        "--html",
        default=None,
        metavar="FILE",
        help="write a self-contained HTML report with pictures to FILE (instead of the tables)",
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
    compare.add_argument("--json", action="store_true", help="print the differences as JSON")
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

    hardware = commands.add_parser(
        "hardware", parents=[common], help="hardware snapshots kept in the store"
    )
    hardware_commands = hardware.add_subparsers(
        dest="hardware_command", metavar="ACTION", parser_class=_Parser
    )
    hardware_commands.required = True
    listing = hardware_commands.add_parser(
        "list", parents=[common], help="stored snapshots, newest first"
    )
    listing.add_argument("--backend", default=None, help="only this backend's snapshots")
    listing.add_argument("--json", action="store_true", help="print a JSON list")
    listing.set_defaults(handler=cmd_hardware_list)
    show = hardware_commands.add_parser(
        "show", parents=[common], help="one snapshot: faulty qubits and couplers, each qubit"
    )
    show.add_argument(
        "snapshot",
        help="a device name (its own calibration, as its plugin gives it; the latest stored one with "
        "--stored, or when no plugin knows the device) or a stored snapshot's fingerprint "
        "(or a unique prefix)",
    )
    show.add_argument(
        "--stored",
        action="store_true",
        help="for a device name: the latest snapshot a run stored (drifted, if the run modelled drift)",
    )
    show.add_argument("--json", action="store_true", help="print the snapshot summary as JSON")
    show.add_argument(
        "--plot",
        default=None,
        metavar="FILE.png",
        help="draw the coupling map coloured by calibration",
    )
    show.add_argument(
        "--field",
        default="readout_error",
        help="qubit field for --plot: readout_error, t1_s or t2_s",
    )
    show.set_defaults(handler=cmd_hardware_show)
    compare = hardware_commands.add_parser(
        "diff", parents=[common], help="what changed between two snapshots of a backend"
    )
    compare.add_argument("before", help="fingerprint (or backend name: its latest snapshot)")
    compare.add_argument("after", help="fingerprint (or backend name: its latest snapshot)")
    compare.add_argument("--json", action="store_true", help="print the differences as JSON")
    compare.add_argument(
        "--plot",
        default=None,
        metavar="FILE.png",
        help="draw the coupling map coloured by the drift",
    )
    compare.set_defaults(handler=cmd_hardware_diff)
    hardware_actions.add_commands(hardware_commands, common)

    plugins = commands.add_parser(
        "plugins", parents=[common], help="list plugins and what they register"
    )
    plugins.add_argument("--json", action="store_true", help="print a JSON list")
    plugins.set_defaults(handler=cmd_plugins)
    profile_command.add_command(commands, common)
    store_command.add_command(commands, common)
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def _store(args: argparse.Namespace) -> ProfileStore:
    return ProfileStore(getattr(args, "store", None), readonly=True)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


def _progress(disable: bool) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),  # the run's name, as written
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=plain_console(stderr=True),
        disable=disable,
    )


def cmd_run(args: argparse.Namespace, console: Console) -> None:
    pipeline = load_pipeline(args.pipeline, store=getattr(args, "store", None), force=args.force)
    if args.check:
        console.print(
            f"{args.pipeline}: ok ({len(pipeline.steps)} steps: {', '.join(s.name for s in pipeline.steps)}; "
            f"{pipeline.fit.summary() if pipeline.fit else 'not estimated'}"
            + (f"; {pipeline.repeat} trials, each estimated alike" if pipeline.repeat > 1 else "")
            + ")"
        )
        for note in pipeline.notes:
            console.print(f"  {note}")
        return
    store = getattr(args, "store", None) or pipeline.store
    with _progress(args.json) as progress:
        bar = progress.add_task(pipeline.name, total=len(pipeline.steps) * pipeline.repeat)

        def on_step(index: int, total: int, name: str) -> None:
            progress.update(
                bar, completed=index, total=total, description=f"{pipeline.name}: {name}"
            )

        trials = run_trials(pipeline, store=store, on_step=on_step)
    if trials.id is not None:
        _show_trials(ProfileStore(store, readonly=True), trials.id, args.json, console)
        return
    report = build_report(ProfileStore(store, readonly=True), trials.run_ids[0])
    if args.json:
        _print_json(report)
    else:
        render_report(report, console, tasks=args.tasks)


def cmd_predict(args: argparse.Namespace, console: Console) -> None:
    # A prediction of a run that will not fit is still a prediction.
    pipeline = load_pipeline(args.pipeline, force=True)
    data = pipeline.initial_data()
    for step in pipeline.steps_to_choice():  # the circuit only: nothing executes or is recorded
        data.update(step.run(data) or {})
    model = registries.create("policy", args.model)
    if not hasattr(model, "forecast"):
        raise UserError(
            f"policy {args.model!r} does not predict costs; use a cost model such as cost_model."
        )
    store = getattr(args, "store", None) or pipeline.store
    shape = pipeline_shape(pipeline.config, [s.name for s in pipeline.steps])
    known = features(data)
    found = model.forecast(known, ProfileStore(store, readonly=True), shape)
    if not found["runs_stored"]:
        raise UserError(
            "the store holds no completed pipeline runs to learn from; run some pipelines first (llqm run)."
        )
    if args.json:
        _print_json({"features": known} | found)
        return
    if not found["runs_used"]:
        console.print(f"{found['note']}: nothing to predict {args.pipeline} from.")
        return
    console.print(
        f"Predicted from {found['runs_used']} earlier runs of the same shape ({describe(shape)})."
    )
    table = Table(title=f"Predicted for {args.pipeline}", title_justify="left")
    for column in ("stage", "runs", "wall", "cpu", "QPU", "queue", "peak RSS"):
        table.add_column(column, justify="left" if column == "stage" else "right")
    for stage, guess in sorted(found["stages"].items(), key=lambda item: -item[1]["wall_s"]):
        table.add_row(
            stage,
            str(guess["runs"]),
            format_seconds(guess["wall_s"]),
            format_seconds(guess["cpu_s"]),
            format_seconds(guess["qpu_s"] or None),
            format_seconds(guess["queue_s"] or None),
            format_bytes(int(guess["peak_rss_bytes"])),
        )
    console.print(table)
    console.print(f"How close: {found['closeness']}.")


def cmd_sweep(args: argparse.Namespace, console: Console) -> None:
    if not args.grid:
        raise UserError(
            "llqm sweep needs at least one --grid KEY=V1,V2,... (for example --grid circuit.qubits=4,8)."
        )
    config = read_pipeline_file(args.pipeline)
    points = grid_pipelines(
        config,
        parse_grid(args.grid),
        args.pipeline,
        store=getattr(args, "store", None),
        force=args.force,
    )
    rows = []
    with _progress(args.json) as progress:
        bar = progress.add_task("sweep", total=len(points))
        for index, (assignment, pipeline) in enumerate(points):
            progress.update(
                bar,
                completed=index,
                description=f"sweep {index + 1}/{len(points)}: {pipeline.name}",
            )
            store = getattr(args, "store", None) or pipeline.store
            trials = run_trials(pipeline, store=store, repeat=args.repeat)
            stored = ProfileStore(store, readonly=True)
            rows.append(
                repeated_point(
                    [point_summary(assignment, build_report(stored, r)) for r in trials.run_ids],
                    trials.id,
                )
            )
        progress.update(bar, completed=len(points), description="sweep done")
    if args.plot:
        sweep_plot(rows, args.plot, f"Sweep of {args.pipeline}")
    if args.json:
        _print_json(rows)
        return
    trial_counts = sorted({row["trials"] for row in rows})
    spread_note = (
        "one trial per point, no spread"
        if trial_counts == [1]
        else f"{'/'.join(map(str, trial_counts))} trials per point: mean ± half the 95% interval"
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
    labels = ["\n".join(point_labels(row["point"])) for row in rows]
    widest = max((len(line) for label in labels for line in label.split("\n")), default=5)
    table.columns[0].min_width = min(widest, 30)
    for row, label in zip(rows, labels):
        table.add_row(
            label,
            format_summary(row["spread"]["error_unmitigated"]),
            format_summary(row["spread"]["error_mitigated"]),
            format_summary(row["spread"]["error_reduction"]),
            str(row["circuits"]),
            str(row["shots"]),
            format_summary(row["spread"]["qpu_s"], format_seconds, True)
            + (" modelled" if row["qpu_s"] and row["qpu_modelled"] else ""),
            format_summary(row["spread"]["queue_s"], format_seconds, True),
            format_summary(row["spread"]["cpu_s"], format_seconds),
            format_summary(row["spread"]["wall_s"], format_seconds),
            row["run"][:17],
        )
    console.print(table)


def cmd_runs(args: argparse.Namespace, console: Console) -> None:
    store = _store(args)
    runs = store.runs(limit=args.limit)
    if args.json:
        _print_json([run_summary(r) for r in runs])
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


def _show_trials(store: ProfileStore, set_id: str, as_json: bool, console: Console) -> None:
    """The report of a trial set: its figures as mean, sd and 95% interval."""
    report = trials_report(store, find_trials(store, set_id))
    if as_json:
        _print_json(report)
    else:
        render_trials(report, console)


def _write_html(path: str, page: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(page)
    except OSError as exc:
        raise UserError(f"cannot write the HTML report to {path}: {exc.strerror}.") from None


def cmd_report(args: argparse.Namespace, console: Console) -> None:
    store = _store(args)
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
    else:
        report = build_report(store, trials.run_ids[0])
        what = f"run {report['run']['id'][:12]} ({len(report['tasks'])} tasks)"
        page = html_report
        render = functools.partial(render_report, report, console, tasks=args.tasks)
    if args.html:
        _write_html(args.html, page(report))
        console.print(
            f"Wrote the HTML report of {what} to {os.path.abspath(args.html)}",
            highlight=False,
            soft_wrap=True,
        )
    if args.json:
        _print_json(report)
    elif not args.html:
        render()


def cmd_compare(args: argparse.Namespace, console: Console) -> None:
    result = compare_runs(_store(args), args.run_a, args.run_b)
    if args.json:
        _print_json(result)
        return
    for side in ("a", "b"):
        shown = result[side]
        console.print(
            styled(
                f"{side}: ",
                (shown["name"], "bold"),
                f" ({shown['id'][:17]}), {_trials_words(shown['trials'])}, wall "
                f"{format_seconds(shown['wall_s'])}, decisions {result['decisions'][side] or 'none'}",
            )
        )
    a_trials, b_trials = result["a"]["trials"], result["b"]["trials"]
    table = Table(title="Per stage, a -> b", title_justify="left")
    table.add_column("stage")
    for column in ("wall", "cpu", "QPU", "queue", "peak RSS"):
        table.add_column(column, justify="right")

    def cell(entry: dict[str, Any], show: Any) -> str:
        if entry["a"] is None or entry["b"] is None:
            a = show(entry["a"]) if entry["a"] is not None else "-"
            b = show(entry["b"]) if entry["b"] is not None else "-"
            return f"{a} -> {b}"
        ratio = f" ({entry['ratio']:.2f}x)" if entry.get("ratio") else ""
        verdict = entry.get("beyond_spread")
        beyond = "" if verdict is None else ", beyond spread" if verdict else ", within spread"
        return f"{show(entry['a'])} -> {show(entry['b'])}{ratio}{beyond}"

    for stage, fields in result["stages"].items():
        table.add_row(
            stage,
            cell(fields["wall_s"], format_seconds),
            cell(fields["cpu_s"], format_seconds),
            cell(fields["qpu_s"], format_seconds),
            cell(fields["queue_s"], format_seconds),
            cell(fields["peak_rss_bytes"], format_bytes),
        )
    console.print(table)
    if result["fidelity"]:
        errors = Table(title="Fidelity, a -> b", title_justify="left")
        for column in ("figure", "a", "b", "difference", "95% interval", "larger than spread?"):
            errors.add_column(column, justify="left" if column == "figure" else "right")
        for name, entry in result["fidelity"].items():
            interval = entry.get("ci95")
            errors.add_row(
                name,
                format_number(entry["a"]),
                format_number(entry["b"]),
                format_number(entry.get("difference")),
                "-" if interval is None else f"{interval[0]:.4g} to {interval[1]:.4g}",
                _spread_verdict(entry),
            )
        console.print(errors)
    if 1 in (a_trials, b_trials):
        console.print(
            "A side with one trial has no spread: repeat it ([run] repeat = N) to tell a "
            "difference from chance.",
            highlight=False,
        )


def _trials_words(count: int) -> str:
    return "1 trial" if count == 1 else f"{count} trials (means)"


def _spread_verdict(entry: dict[str, Any]) -> str:
    """Whether a difference is larger than the trials' spread, in a word or two."""
    if "difference" not in entry:
        return "-"
    verdict = entry.get("beyond_spread")
    return "unknown (1 trial)" if verdict is None else "yes" if verdict else "no"


def cmd_trace(args: argparse.Namespace, console: Console) -> None:
    store = _store(args)
    run = store.run(args.run)
    tasks = store.tasks(run.id)
    if args.format == "chrome":
        document = json.dumps(chrome_trace(run, tasks))
    else:
        from .telemetry.otlp_json import run_spans, spans_to_otlp_json  # protobuf, for this alone

        document = json.dumps(spans_to_otlp_json(run_spans(run, tasks)), indent=2)
    if args.output is None:
        print(document)
        return
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(document + "\n")
    except OSError as exc:
        raise UserError(f"cannot write the trace to {args.output}: {exc.strerror}.") from None


def cmd_hardware_list(args: argparse.Namespace, console: Console) -> None:
    rows = [
        {"fingerprint": fp, "backend": backend, "taken_at": iso_time(int(taken * 1e9))}
        for fp, backend, taken in _store(args).snapshots(args.backend)
    ]
    if args.json:
        _print_json(rows)
        return
    table = Table(title="Hardware snapshots", title_justify="left")
    for column in ("fingerprint", "backend", "taken_at"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["fingerprint"], row["backend"], row["taken_at"])
    console.print(table)


def _snapshot_to_show(args: argparse.Namespace) -> tuple[HardwareSnapshot, str]:
    """The device's own calibration for a device name (unless ``--stored``), else a stored snapshot;
    with a sentence that says which one it is."""
    live = None
    if not args.stored:
        live = loaded_plugins().first_result("llqm_device_snapshot", device=args.snapshot)
    if live is not None:
        return (
            live,
            "the device's own calibration, as its plugin reports it now (not a stored snapshot)",
        )
    try:
        found = _store(args).find_snapshot(args.snapshot)
    except StoreError as exc:
        if args.stored:
            raise
        raise UserError(
            f"{exc} No installed plugin knows a device called {args.snapshot!r} either."
        ) from None
    return found, stored_origin(found)


def stored_origin(snapshot: HardwareSnapshot) -> str:
    """Which stored snapshot this is, in words: a drifted one says so, with the drift that made it."""
    drift = snapshot.extra.get("drift") if isinstance(snapshot.extra, dict) else None
    if isinstance(drift, dict):
        return (
            f"a stored snapshot DRIFTED by LLQM's drift model (seed {drift.get('seed')}, "
            f"{float(drift.get('elapsed_h') or 0):g} modelled hours after snapshot {drift.get('base')}): "
            "not the device's own calibration"
        )
    return "a stored snapshot, as a run recorded it"


def cmd_hardware_show(args: argparse.Namespace, console: Console) -> None:
    found, origin = _snapshot_to_show(args)
    if args.plot:
        _write_png(args.plot, device_map_png(found, args.field))
    snapshot = hardware.summary(found) | {
        "origin": origin,
        "shown": "device" if origin.startswith("the device's own") else "stored",
        "drifted": isinstance(found.extra, dict) and "drift" in found.extra,
    }
    if args.json:
        _print_json(snapshot)
        return
    console.print(
        styled(
            (snapshot["backend"], "bold"),
            f"  {snapshot['num_qubits']} qubits  snapshot {snapshot['fingerprint']}"
            f"  taken {iso_time(int(snapshot['taken_at'] * 1e9))}",
        )
    )
    console.print(styled(("Shown:", "bold"), f" {origin}"))
    console.print(f"faulty qubits: {snapshot['faulty_qubits'] or 'none'}")
    console.print(f"faulty couplers: {[tuple(p) for p in snapshot['faulty_couplers']] or 'none'}")
    table = Table(title="Qubits", title_justify="left")
    for column in ("qubit", "T1 us", "T2 us", "readout error"):
        table.add_column(column, justify="right")
    for q in snapshot["qubits"]:
        table.add_row(
            str(q["qubit"]),
            _micro(q["t1_s"]),
            _micro(q["t2_s"]),
            "-" if q["readout_error"] is None else f"{q['readout_error']:.4f}",
        )
    console.print(table)


def _micro(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.1f}"


def cmd_hardware_diff(args: argparse.Namespace, console: Console) -> None:
    store = _store(args)
    before, after = store.find_snapshot(args.before), store.find_snapshot(args.after)
    try:
        changes = hardware.diff(before, after)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if args.plot:
        _write_png(args.plot, drift_map_png(before, after))
    data = changes.to_dict()
    if args.json:
        _print_json(data)
        return
    console.print(
        f"snapshot {data['before']} -> {data['after']}: {len(data['qubits'])} qubits and "
        f"{len(data['gates'])} gates changed"
    )
    for label in (
        "newly_faulty_qubits",
        "repaired_qubits",
        "newly_faulty_couplers",
        "repaired_couplers",
    ):
        if data[label]:
            console.print(f"{label.replace('_', ' ')}: {data[label]}")
    table = Table(title="Largest relative change", title_justify="left")
    table.add_column("field")
    table.add_column("max |change|", justify="right")
    for name, value in data["max_relative_change"].items():
        table.add_row(name, f"{value * 100:.1f}%")
    console.print(table)


def _write_png(path: str, png: bytes) -> None:
    try:
        with open(path, "wb") as out:
            out.write(png)
    except OSError as exc:
        raise UserError(f"cannot write the picture to {path}: {exc.strerror}.") from None


def cmd_plugins(args: argparse.Namespace, console: Console) -> None:
    loaded = loaded_plugins()
    registered: dict[str, dict[str, list[str]]] = {}  # plugin -> kind -> names
    for kind, hook in registries.KINDS.items():
        for name, entry in sorted(loaded.registry(hook).items()):
            registered.setdefault(entry["plugin"], {}).setdefault(kind, []).append(name)
    rows: list[dict[str, Any]] = []
    for info in loaded.info:
        hooks = (
            sorted(
                impl_hook
                for impl_hook, impls in loaded.manager.hook.__dict__.items()
                if hasattr(impls, "get_hookimpls")
                and any(i.plugin_name == info.name for i in impls.get_hookimpls())
            )
            if info.status == "loaded"
            else []
        )
        rows.append(
            {
                "name": info.name,
                "package": info.package,
                "module": info.module,
                "status": info.status,
                "registers": registered.get(info.name, {}),
                "hooks": hooks,
                "error": info.error,
            }
        )
    if args.json:
        _print_json(rows)
        return
    table = Table(title="Plugins (entry-point group 'llqm')", title_justify="left")
    for column in ("name", "package", "status", "registers", "other hooks"):
        table.add_column(column)
    for row in rows:
        status = row["status"] if row["error"] is None else f"{row['status']}: {row['error']}"
        registers = "\n".join(
            f"{_plural(kind)}: {', '.join(names)}" for kind, names in row["registers"].items()
        )
        observes = [h for h in row["hooks"] if not h.startswith("llqm_register_")]
        table.add_row(
            row["name"], row["package"] or "-", status, registers or "-", ", ".join(observes) or "-"
        )
    console.print(table)


def _format_llqm_warnings(python_way: Callable[..., str]) -> Callable[..., str]:
    """A ``warnings.formatwarning`` that writes LLQM's own warnings as one line, ``llqm: warning:
    ...`` (no file and line: they are about the run, not the code), and any other as Python
    would. Only the text changes, not where a warning goes, so a caller recording warnings
    (``pytest.warns``, ``catch_warnings(record=True)``) around ``main`` still gets them."""

    def format(message, category, filename, lineno, line=None) -> str:
        if issubclass(category, LLQMWarning):
            return f"llqm: warning: {message}\n"
        return python_way(message, category, filename, lineno, line)

    return format


def _plural(kind: str) -> str:
    return kind[:-1] + "ies" if kind.endswith("y") else kind + "s"


def main(argv: Sequence[str] | None = None) -> int:
    console = plain_console() if sys.stdout.isatty() else plain_console(width=160)
    python_way = warnings.formatwarning
    warnings.formatwarning = _format_llqm_warnings(python_way)
    try:
        return _main(argv, console)
    finally:
        warnings.formatwarning = python_way


def _main(argv: Sequence[str] | None, console: Console) -> int:
    try:
        args = build_parser().parse_args(argv)
        if hasattr(args, "plugins") or hasattr(args, "disable_plugins"):
            configure_plugins(
                getattr(args, "plugins", None), getattr(args, "disable_plugins", None)
            )
        status = args.handler(args, console)
    except UserError as exc:
        print(f"llqm: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except PipelineFailed as failed:
        where = f" in step {failed.step}" if failed.step else ""
        kept = (
            f"; run {failed.run_id} is in the store as failed (llqm report {failed.run_id[:12]})"
            if failed.run_id
            else ""
        )
        said = str(failed).rstrip(".") if kept else str(failed)  # no ".;" where the run is named
        print(f"llqm: the pipeline failed{where}: {said}{kept}", file=sys.stderr)
        return EXIT_RUN_FAILED
    except BrokenPipeError:
        return 0
    return status or 0


if __name__ == "__main__":
    sys.exit(main())
