"""Two runs (or two trial sets) side by side: what changed per stage and in the error, and
whether each change is larger than the spread.

More in docs/modules.md (``llqm_core.analysis.compare``).
"""

from __future__ import annotations

import math
from typing import Any

from ..model import display
from ..model.trial_keys import trial_of
from ..model.units import format_seconds
from ..store.profile_store import ProfileStore
from .ranges import common_range, figure_bounds
from .report import work_wall
from .side_by_side import run_reports
from .stats import (
    NONNEGATIVE,
    Bounds,
    Summary,
    difference,
    paired_difference,
    summarize_known,
    with_stderr,
)
from .summary import FIDELITY_FIGURES
from .trial_report import (
    REDUCTION,
    common_bottleneck,
    error_pairs,
    error_reduction,
    find_trials,
)

STAGE_FIELDS = ("tasks", "wall_s", "cpu_s", "qpu_s", "queue_s", "peak_rss_bytes")


def _change(
    before: Summary | None,
    after: Summary | None,
    pairs: list[tuple[float, float]] | None = None,
    bounds: Bounds | None = None,
) -> dict[str, Any]:
    """Both sides' means, their difference and ratio, and the difference against the spread
    (trial by trial where ``pairs`` holds the paired trials' values), its interval cut to the
    range a difference of two values in ``bounds`` can have (± the range's width)."""
    entry: dict[str, Any] = {
        "a": None if before is None else before.mean,
        "b": None if after is None else after.mean,
    }
    if before is not None and after is not None:
        weighed = (
            paired_difference(pairs, bounds)
            if pairs is not None and len(pairs) > 1
            else difference(before, after)
        )
        entry["difference"] = weighed.difference
        entry["ratio"] = after.mean / before.mean if before.mean else None
        entry["ci95"] = None if weighed.low is None else [weighed.low, weighed.high]
        entry["method"] = weighed.method
        if weighed.bounds is not None:
            entry["range"] = weighed.as_dict()["range"]
        entry["beyond_spread"] = weighed.beyond_spread
        entry["trials"] = [before.n, after.n]
    return entry


def paired_seeds(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """Whether two trial sets ran trial by trial with the same seeds (so their trials pair)."""
    seeds = [[(trial_of(r["run"]["config"]) or {}).get("seed") for r in side] for side in (a, b)]
    return len(a) == len(b) > 1 and None not in seeds[0] and seeds[0] == seeds[1]


def _reports(
    store: ProfileStore, run_a: str, run_b: str
) -> tuple[tuple[str, list[dict[str, Any]]], tuple[str, list[dict[str, Any]]]]:
    """For each side, the id to show (a trial set's or a run's) and the report of each of its
    runs: the big runs never analysed are analysed at once (``side_by_side``)."""
    sides = [find_trials(store, ident) for ident in (run_a, run_b)]
    reports = run_reports(store, [r for side in sides for r in side.run_ids])
    a, b = ((s.set_id or s.run_ids[0], [reports[r] for r in s.run_ids]) for s in sides)
    return a, b


def _side(shown_id: str, reports: list[dict[str, Any]]) -> dict[str, Any]:
    """One side's heading: ``wall_s`` is its wall time without warm-up (``work_wall``, what the
    comparison compares: a first run pays imports a second does not), ``run_wall_s`` with it."""
    wall = summarize_known(work_wall(r) for r in reports)
    whole = summarize_known(r["run"]["wall_s"] for r in reports)
    return {
        "id": shown_id,
        "name": reports[0]["run"]["name"],
        "trials": len(reports),
        "wall_s": None if wall is None else wall.mean,
        "run_wall_s": None if whole is None else whole.mean,
        "bottleneck": reports[0]["bottleneck"] if len(reports) == 1 else common_bottleneck(reports),
    }


def _known(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _side_summary(
    reports: list[dict[str, Any]], read: Any, bounds: Bounds | None, stderr: Any
) -> Summary | None:
    """The side's summary of a figure in its range ``bounds``; a side of one run with a standard
    error for it (a fidelity figure's shot noise) carries that error."""
    summary = summarize_known(map(read, reports), bounds=bounds)
    if summary is None or summary.n > 1 or len(reports) > 1 or stderr is None:
        return summary
    error = stderr(reports[0])
    return with_stderr(summary.mean, error, bounds=bounds) if _known(error) else summary


def _compared(
    a: list[dict[str, Any]],
    b: list[dict[str, Any]],
    read: Any,
    paired: bool,
    bounds: Bounds | None = NONNEGATIVE,
    stderr: Any = None,
) -> dict[str, Any]:
    """``_change`` of the figure ``read`` takes from each report, over each side's trials."""
    pairs = None
    if paired:
        pairs = [
            (float(x), float(y))
            for x, y in zip(map(read, a), map(read, b))
            if _known(x) and _known(y)
        ]
    return _change(
        _side_summary(a, read, bounds, stderr),
        _side_summary(b, read, bounds, stderr),
        pairs,
        bounds,
    )


def _reduction_side(reports: list[dict[str, Any]]) -> Summary | None:
    """A side's error reduction: its mean unmitigated error over its mean mitigated error with
    the bootstrap's standard error (``trial_report.error_reduction``); one run's own reduction
    with the shot-noise standard error it recorded."""
    summary = error_reduction(error_pairs(r["fidelity"] for r in reports))
    if summary is not None and len(reports) == 1:
        error = reports[0]["fidelity"].get(f"{REDUCTION}_stderr")
        if _known(error):
            return with_stderr(summary.mean, error, ratio=True)
    return summary


def _compared_reduction(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> dict[str, Any]:
    """The error reductions of the two sides (ratios of mean errors) and their difference
    against the spread: each side's standard error counts as known (a normal interval, named
    ``welch`` as a difference of two shot-noise figures is), never trial by trial, since the
    ratio of means is no per-trial figure."""
    return _change(_reduction_side(a), _reduction_side(b))


def _stage_figure(stage: str, field: str) -> Any:
    return lambda report: report["stages"].get(stage, {}).get(field)


def _fidelity_figure(name: str) -> Any:
    return lambda report: report["fidelity"].get(name)


def _fidelity_stderr(name: str) -> Any:
    return lambda report: report["fidelity"].get(f"{name}_stderr")


def wall_words(side: dict[str, Any]) -> str:
    """A side's wall time as its heading gives it: without warm-up where that differs from the
    whole (``llqm report``'s "wall"), with the whole beside it."""
    work, whole = side["wall_s"], side.get("run_wall_s")
    if work is None or whole is None or abs(whole - work) < 5e-4:
        return f"wall {format_seconds(whole if work is None else work)}"
    return f"wall {format_seconds(work)} without warm-up ({format_seconds(whole)} with it)"


def change_text(entry: dict[str, Any], show: Any, arrow: str = "->") -> str:
    """One figure's change as words: ``a -> b modelled (ratio), beyond spread`` (``-`` for a
    missing side; "modelled" where a model of the device gave the seconds), each side shown by
    ``show``."""
    a = "-" if entry["a"] is None else show(entry["a"])
    b = "-" if entry["b"] is None else show(entry["b"])
    modelled = " modelled" if entry.get("modelled") else ""
    if entry["a"] is None or entry["b"] is None:
        return f"{a} {arrow} {b}{modelled}"
    ratio = f" ({entry['ratio']:.2f}x)" if entry.get("ratio") else ""
    verdict = entry.get("beyond_spread")
    beyond = "" if verdict is None else ", beyond spread" if verdict else ", within spread"
    return f"{a} {arrow} {b}{modelled}{ratio}{beyond}"


class Comparison(dict):
    """What ``compare_runs`` found: plain JSON-ready data that shows itself in a notebook cell."""

    def _repr_html_(self) -> str | None:
        return display.html("comparison", self)


def compare_runs(store: ProfileStore, run_a: str, run_b: str) -> Comparison:
    """Per-stage and fidelity differences between two stored runs or trial sets (b against a)."""
    (a_id, a), (b_id, b) = _reports(store, run_a, run_b)
    paired = paired_seeds(a, b)
    stages = {
        stage: {
            field: _compared(a, b, _stage_figure(stage, field), paired) for field in STAGE_FIELDS
        }
        for stage in sorted({s for r in a + b for s in r["stages"]})
    }
    for stage, fields in stages.items():  # a model's seconds stay labelled so on both sides
        for field in ("qpu_s", "queue_s"):
            flag = field.replace("_s", "_modelled")
            fields[field]["modelled"] = any(r["stages"].get(stage, {}).get(flag) for r in a + b)
    value_range = common_range(r["fidelity"] for r in a + b)
    fidelity = {
        name: (
            _compared_reduction(a, b)
            if name == REDUCTION
            else _compared(
                a,
                b,
                _fidelity_figure(name),
                paired,
                figure_bounds(name, value_range),
                _fidelity_stderr(name),
            )
        )
        for name in FIDELITY_FIGURES
        if any(name in r["fidelity"] for r in a + b)
        or (name == REDUCTION and bool(error_pairs(r["fidelity"] for r in a + b)))
    }
    return Comparison(
        {
            "a": _side(a_id, a),
            "b": _side(b_id, b),
            "paired": paired,
            "wall_s": _compared(a, b, work_wall, paired),
            "stages": stages,
            "fidelity": fidelity,
            "decisions": {
                "a": [d["policy"] for d in a[0]["decisions"]],
                "b": [d["policy"] for d in b[0]["decisions"]],
            },
        }
    )
