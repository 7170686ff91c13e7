"""Repeated trials read back: every figure that varies between them as mean, sd and 95% interval.

A trial set is the runs whose configuration shares a ``trial.set`` id (``model.trial_keys``). Each
trial is reported as a run like any other (``report.build_report``); this module gathers the
figures that vary between trials (the fidelity figures, the run's wall time, each stage's wall,
CPU, QPU and queue seconds, and the QPU and queue seconds of the whole run) into summaries
(``stats``). A lone run is a set of one: its summaries say one trial, with no spread.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from ..model.errors import UserError
from ..model.modelled import merge_flags, with_word
from ..model.trial_keys import TRIAL_SET, is_trial_set_id, trial_of
from ..model.units import format_seconds
from ..store.profile_store import ProfileStore
from .ranges import common_range, figure_bounds
from .report import build_report, work_wall
from .stats import (
    BOOTSTRAP,
    CONFIDENCE,
    PAIRED_T,
    RATIO_OF_MEANS,
    SHOT_NOISE,
    SHOT_NOISE_LOG,
    STUDENT_T,
    WELCH,
    Summary,
    ratio_of_means,
    summarize_known,
)
from .summary import FIDELITY_FIGURES

#: Per stage, the figures summarised over trials (own and inclusive wall, CPU, QPU, queue).
STAGE_FIGURES = ("own_wall_s", "wall_s", "cpu_s", "qpu_s", "queue_s")
#: A fidelity figure's interval keeps to its range (``ranges.figure_bounds``: a value within the
#: observable's recorded range, errors and their ratio not negative), as every time's and count's
#: does (``stats``). The error reduction of more than one trial is not the mean of the trials'
#: own: see ``error_reduction``.
REDUCTION = "error_reduction"
#: Over the whole run: what the steps spent on the device and waiting for it, and what ran.
TOTAL_FIGURES = ("qpu_s", "queue_s", "circuits", "shots")


@dataclass(frozen=True)
class Trials:
    """The runs to report together: a trial set's (``set_id``), or one run (``set_id`` None)."""

    set_id: str | None
    run_ids: list[str]


def find_trials(store: ProfileStore, ident: str | None) -> Trials:
    """A trial set (by its id or a unique prefix) or one run (by id; the latest when None).

    The latest run, when it is a trial, stands for its whole set: ``llqm report`` after a
    repeated ``llqm run`` shows the trials, not the last one alone."""
    if ident is not None and is_trial_set_id(ident):
        if not re.fullmatch(r"t[0-9a-f]+", ident):
            raise UserError(
                f"{ident!r} is not a trial set id (t and hex digits, as llqm run prints it)."
            )
        runs = store.find_runs(TRIAL_SET, ident, prefix=True)
        sets = sorted({run.config[TRIAL_SET] for run in runs})
        if not sets:
            raise UserError(f"there is no trial set {ident!r} in {store.name}.")
        if len(sets) > 1:
            raise UserError(
                f"trial set prefix {ident!r} matches {len(sets)} sets in {store.name}; "
                "give more of the id."
            )
        return Trials(sets[0], [run.id for run in runs])
    run = store.run(ident)
    trial = trial_of(run.config)
    if ident is None and trial is not None:
        return Trials(trial["set"], [r.id for r in store.find_runs(TRIAL_SET, trial["set"])])
    return Trials(None, [run.id])


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def error_pairs(figures: Iterable[dict[str, Any]]) -> list[tuple[float, float]]:
    """(unmitigated, mitigated) absolute error of each trial that has both (its fidelity
    figures, or a sweep's row)."""
    return [
        (float(f["error_unmitigated"]), float(f["error_mitigated"]))
        for f in figures
        if _finite(f.get("error_unmitigated")) and _finite(f.get("error_mitigated"))
    ]


def error_reduction(pairs: list[tuple[float, float]]) -> Summary | None:
    """The error reduction of a set of trials: the mean unmitigated error over the mean
    mitigated error, with a bootstrap interval over whole trials (``stats.ratio_of_means``).

    Not the mean of the trials' own reductions: a ratio of two noisy errors is heavy-tailed, so
    one trial whose mitigated error happened to land near 0 (a reduction of 60 among trials
    of 0.5 to 2) made that mean 12 for a set whose mitigated errors were worse on average. The
    ratio of the means is below 1 whenever mitigation made the mean error worse. None where it
    is not a number (``reduction_note`` says why)."""
    return ratio_of_means(pairs)


def reduction_note(pairs: list[tuple[float, float]]) -> str | None:
    """Why the error reduction of these trials (or of one run) is not a number, in a few words
    for a table cell; None when it is one, or when no trial has both errors. A mitigated error
    of exactly 0 is the luck of finite shots, not an infinite reduction; 0/0 is no reduction."""
    if not pairs or any(m for _, m in pairs):
        return None
    if any(u for u, _ in pairs):
        return "unbounded (mitigated error 0)"
    return "undefined (both errors 0)"


def trial_summaries(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """``Summary`` objects (None where no trial has the figure) of the figures that vary."""
    stages = sorted({stage for report in reports for stage in report["stages"]})
    pairs = error_pairs(r["fidelity"] for r in reports)
    value_range = common_range(r["fidelity"] for r in reports)
    return {
        "wall_s": summarize_known((work_wall(r) for r in reports), nonnegative=True),
        "fidelity": {
            figure: (
                error_reduction(pairs)
                if figure == REDUCTION
                else summarize_known(
                    (r["fidelity"].get(figure) for r in reports),
                    bounds=figure_bounds(figure, value_range),
                )
            )
            for figure in FIDELITY_FIGURES
            if any(figure in r["fidelity"] for r in reports) or (figure == REDUCTION and pairs)
        },
        "stages": {
            stage: {
                field: summarize_known(
                    (r["stages"].get(stage, {}).get(field) for r in reports), nonnegative=True
                )
                for field in STAGE_FIGURES
            }
            | merge_flags(r["stages"].get(stage, {}) for r in reports)
            for stage in stages
        },
        "totals": {
            field: summarize_known(
                (sum(c[field] or 0 for c in r["costs"]) for r in reports), nonnegative=True
            )
            for field in TOTAL_FIGURES
        }
        | merge_flags(c for r in reports for c in r["costs"]),
    }


def as_json(value: Any) -> Any:
    """Summaries (nested in dicts) as JSON-ready data."""
    if isinstance(value, Summary):
        return value.as_dict()
    if isinstance(value, dict):
        return {key: as_json(item) for key, item in value.items()}
    return value


def _trial_row(report: dict[str, Any]) -> dict[str, Any]:
    run, trial = report["run"], trial_of(report["run"]["config"]) or {}
    return {
        "id": run["id"],
        "index": trial.get("index", 1),
        "seed": trial.get("seed"),
        "status": run["status"],
        "wall_s": work_wall(report),
        "error_mitigated": report["fidelity"].get("error_mitigated"),
    }


def common_bottleneck(reports: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The bottleneck most trials share (stage and resource), with how many of them it was."""
    found = Counter(
        (r["bottleneck"]["stage"], r["bottleneck"]["resource"]) for r in reports if r["bottleneck"]
    )
    if not found:
        return None
    (stage, resource), count = found.most_common(1)[0]
    return {"stage": stage, "resource": resource, "trials": count}


def trials_report(store: ProfileStore, trials: Trials) -> dict[str, Any]:
    """The trials' figures as mean, sd and 95% interval, and each trial in a row, as JSON data."""
    reports = [build_report(store, run_id, keep_tasks=0) for run_id in trials.run_ids]
    first = trial_of(reports[0]["run"]["config"]) or {}
    config = reports[0]["run"]["config"] or {}
    name = config.get("name") or re.sub(r" \[trial \d+/\d+\]$", "", reports[0]["run"]["name"])
    note = reduction_note(error_pairs(r["fidelity"] for r in reports))
    return (
        {
            "trials": {
                "set": trials.set_id,
                "name": name,
                "count": len(reports),
                "planned": first.get("count", 1),
                "single": len(reports) == 1,
                "base_seed": first.get("base_seed", first.get("seed")),
                "confidence": CONFIDENCE,
                "runs": [_trial_row(r) for r in reports],
            },
            "bottleneck": common_bottleneck(reports),
        }
        | as_json(trial_summaries(reports))
        | ({"fidelity_notes": {REDUCTION: note}} if note else {})
    )


def format_summary(
    summary: dict[str, Any] | None, show: Any = None, blank_zero: bool = False
) -> str:
    """A JSON summary in a cell: ``mean ± half-width`` for a Student-t interval (symmetric),
    ``mean (low to high)`` for any other (a bootstrap interval of a skewed figure is not), the
    mean alone for one trial or a figure the same in every trial; with ``blank_zero`` a figure
    that is zero in every trial (no QPU used) shows as ``-``."""
    if summary is None or (blank_zero and summary["mean"] == 0 and not summary["sd"]):
        return "-"
    show = show or (lambda v: f"{v:.4g}")
    if summary["ci95"] is None or summary["sd"] == 0:  # one trial, or the same in every trial
        return show(summary["mean"])
    low, high = summary["ci95"]
    if summary.get("method") == RATIO_OF_MEANS and low == high:  # the same in every resample
        return show(summary["mean"])
    if summary.get("method") == STUDENT_T:
        return f"{show(summary['mean'])} ± {show((high - low) / 2)}"
    return f"{show(summary['mean'])} ({_end(low, show)} to {_end(high, show)})"


def _end(value: float | None, show: Any = None) -> str:
    """An end of an interval; null (a ratio's resamples that divided by 0) is unbounded."""
    if value is None:
        return "unbounded"
    return show(value) if show else f"{value:.4g}"


def _interval(summary: dict[str, Any] | None) -> str:
    if summary is None or summary["ci95"] is None:
        return "-"
    low, high = summary["ci95"]
    return f"{_end(low)} to {_end(high)}"


def method_words(method: str | None) -> str:
    """An interval's method as a table names it."""
    return {
        STUDENT_T: "Student t",
        BOOTSTRAP: "expanded bootstrap percentile",
        SHOT_NOISE: "shot noise",
        SHOT_NOISE_LOG: "shot noise, log scale",
        WELCH: "Welch",
        PAIRED_T: "paired t",
        RATIO_OF_MEANS: "ratio of mean errors, bootstrap over trials",
    }.get(method or "", "-")


def _within(summary: dict[str, Any]) -> str:
    """The range a figure's interval keeps to, where both its ends are known (a value of the
    observable: ", within [0, 1]"); nothing otherwise."""
    bounds = summary.get("range")
    if summary["ci95"] is None or not bounds or None in bounds:
        return ""
    return f", within [{bounds[0]:.4g}, {bounds[1]:.4g}]"


#: How the tables name the interval of a time, a count or an error.
BOOTSTRAP_WORDS = "95% interval of the mean: expanded bootstrap percentile"


def trials_heading(report: dict[str, Any]) -> str:
    """The set in one line: its name, id, trials, seeds and mean wall time."""
    trials = report["trials"]
    missing = trials["planned"] - trials["count"]
    return (
        f"{trials['name']}: trial set {trials['set']}, {trials['count']} trials"
        + (f" ({missing} of {trials['planned']} never ran)" if missing > 0 else "")
        + f", seeds from {trials['base_seed']}, wall "
        f"{format_summary(report['wall_s'], format_seconds)}"
        + ("" if trials["single"] else f" (mean and {BOOTSTRAP_WORDS})")
        + (". One trial: no spread to show" if trials["single"] else "")
    )


def trials_closing(report: dict[str, Any]) -> list[str]:
    """What a trial spent on the device and waited, and the bottleneck most trials share."""
    totals, count = report["totals"], report["trials"]["count"]
    qpu = with_word(format_summary(totals["qpu_s"], format_seconds, True), totals["qpu_modelled"])
    queue = with_word(
        format_summary(totals["queue_s"], format_seconds, True), totals["queue_modelled"]
    )
    lines = [f"Per trial: QPU {qpu}, queue {queue}, {format_summary(totals['shots'])} shots"]
    found = report.get("bottleneck")
    if found:
        lines.append(
            f"Bottleneck: stage {found['stage']} on {found['resource']} "
            f"in {found['trials']} of {count} trials"
        )
    return lines


def trials_tables(report: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(caption, header, rows) of each table of a trial set's report: one layout for the
    console and the HTML page. The first column is a name, the others are figures."""
    trials = report["trials"]
    tables = [
        (
            "Trials",
            ["trial", "run", "seed", "status", "wall", "error mitigated"],
            [
                [
                    str(row["index"]),
                    row["id"][:12],
                    str(row["seed"]),
                    row["status"],
                    format_seconds(row["wall_s"]),
                    "-" if row["error_mitigated"] is None else f"{row['error_mitigated']:.4g}",
                ]
                for row in trials["runs"]
            ],
        )
    ]
    figures = [(name, s) for name, s in report["fidelity"].items() if s is not None]
    notes = report.get("fidelity_notes") or {}
    if figures or notes:
        rows = [
            [
                name.replace("_", " "),
                str(s["n"]),
                f"{s['mean']:.4g}",
                "-" if s["sd"] is None else f"{s['sd']:.4g}",
                _interval(s),
                method_words(s.get("method")) + _within(s),
            ]
            for name, s in figures
        ]
        rows += [[name.replace("_", " "), "-", note, "-", "-", "-"] for name, note in notes.items()]
        tables.append(
            (
                f"Fidelity over {trials['count']} trials (95% interval of the mean; the error "
                "reduction is the mean unmitigated error over the mean mitigated error)",
                ["figure", "trials", "mean", "sd", "95% interval", "method"],
                rows,
            )
        )
    ordered = sorted(
        report["stages"].items(),
        key=lambda item: -((item[1]["own_wall_s"] or {}).get("mean") or 0.0),
    )
    tables.append(
        (
            f"Stages per trial: mean ({BOOTSTRAP_WORDS})",
            ["stage", "own wall", "wall incl. nested", "cpu incl. nested", "QPU", "queue"],
            [
                [
                    stage,
                    *(
                        with_word(
                            format_summary(f[name], format_seconds, True),
                            bool(f.get(name.replace("_s", "_modelled"))),
                        )
                        for name in STAGE_FIGURES
                    ),
                ]
                for stage, f in ordered
            ],
        )
    )
    return tables


def render_trials(report: dict[str, Any], console: Console) -> None:
    """The trials as tables: each trial, the fidelity figures and the stages with their spread."""
    console.print(trials_heading(report), highlight=False)
    for caption, header, rows in trials_tables(report):
        table = Table(title=caption, title_justify="left")
        for position, column in enumerate(header):
            table.add_column(column, justify="left" if position == 0 else "right")
        for row in rows:
            table.add_row(*row)
        console.print(table)
    for line in trials_closing(report):
        console.print(line, highlight=False)


#: The figures of a sweep row (``pipeline.sweep.point_summary``) that vary between trials.
SWEEP_FIGURES = (
    "error_unmitigated",
    "error_mitigated",
    "error_reduction",
    "qpu_s",
    "queue_s",
    "cpu_s",
    "wall_s",
)


def repeated_point(rows: list[dict[str, Any]], set_id: str | None) -> dict[str, Any]:
    """One sweep point's trials (a row each) as one row: each varying figure's mean (the error
    reduction: the ratio of the mean errors, ``error_reduction``), its summary under ``spread``,
    and the runs; ``run`` is what ``llqm report`` takes for them. Where the reduction is no
    number, ``error_reduction_note`` says why."""
    row = dict(rows[0])
    spread = {}
    pairs = error_pairs(rows)
    for field in SWEEP_FIGURES:  # errors and costs: none can be negative
        summary = (
            error_reduction(pairs)
            if field == REDUCTION
            else summarize_known((r[field] for r in rows), nonnegative=True)
        )
        row[field] = None if summary is None else summary.mean
        spread[field] = None if summary is None else summary.as_dict()
    row.pop("error_reduction_note", None)
    note = reduction_note(pairs)
    if note:
        row["error_reduction_note"] = note
    return (
        row
        | merge_flags(rows)
        | {
            "run": set_id or rows[0]["run"],
            "runs": [r["run"] for r in rows],
            "trials": len(rows),
            "spread": spread,
        }
    )
