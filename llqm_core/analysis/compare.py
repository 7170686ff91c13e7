"""Two runs (or two trial sets) side by side: what changed per stage and in the error, and
whether each change is larger than the trials' spread.

The runs may differ by policy, backend, calibration or code; the comparison is by stage name,
so a stage only one run has shows with nothing on the other side. Either side may be a trial
set (``[run] repeat``): its figures are then the trials' means, and each difference carries
its Welch 95% interval and ``beyond_spread`` (None while a side is a single trial, whose spread
is unknown).
"""

from __future__ import annotations

from typing import Any

from ..store.profile_store import ProfileStore
from .report import build_report, work_wall
from .stats import Summary, difference, summarize_known
from .summary import FIDELITY_FIGURES
from .trial_report import common_bottleneck, find_trials

STAGE_FIELDS = ("tasks", "wall_s", "cpu_s", "qpu_s", "queue_s", "peak_rss_bytes")


def _change(before: Summary | None, after: Summary | None) -> dict[str, Any]:
    """Both sides' means, their difference and ratio, and the difference against the spread."""
    entry: dict[str, Any] = {
        "a": None if before is None else before.mean,
        "b": None if after is None else after.mean,
    }
    if before is not None and after is not None:
        weighed = difference(before, after)
        entry["difference"] = weighed.difference
        entry["ratio"] = after.mean / before.mean if before.mean else None
        entry["ci95"] = None if weighed.low is None else [weighed.low, weighed.high]
        entry["beyond_spread"] = weighed.beyond_spread
        entry["trials"] = [before.n, after.n]
    return entry


def _reports(store: ProfileStore, ident: str) -> tuple[str, list[dict[str, Any]]]:
    """The id to show for a side (a trial set's or a run's) and the report of each of its runs."""
    trials = find_trials(store, ident)
    return trials.set_id or trials.run_ids[0], [build_report(store, r) for r in trials.run_ids]


def _side(shown_id: str, reports: list[dict[str, Any]]) -> dict[str, Any]:
    wall = summarize_known(work_wall(r) for r in reports)
    return {
        "id": shown_id,
        "name": reports[0]["run"]["name"],
        "trials": len(reports),
        "wall_s": None if wall is None else wall.mean,
        "bottleneck": reports[0]["bottleneck"] if len(reports) == 1 else common_bottleneck(reports),
    }


def _compared(a: list[dict[str, Any]], b: list[dict[str, Any]], read: Any) -> dict[str, Any]:
    """``_change`` of the figure ``read`` takes from each report, over each side's trials."""
    return _change(summarize_known(map(read, a)), summarize_known(map(read, b)))


def _stage_figure(stage: str, field: str) -> Any:
    return lambda report: report["stages"].get(stage, {}).get(field)


def _fidelity_figure(name: str) -> Any:
    return lambda report: report["fidelity"].get(name)


def compare_runs(store: ProfileStore, run_a: str, run_b: str) -> dict[str, Any]:
    """Per-stage and fidelity differences between two stored runs or trial sets (b against a)."""
    a_id, a = _reports(store, run_a)
    b_id, b = _reports(store, run_b)
    stages = {
        stage: {field: _compared(a, b, _stage_figure(stage, field)) for field in STAGE_FIELDS}
        for stage in sorted({s for r in a + b for s in r["stages"]})
    }
    fidelity = {
        name: _compared(a, b, _fidelity_figure(name))
        for name in FIDELITY_FIGURES
        if any(name in r["fidelity"] for r in a + b)
    }
    return {
        "a": _side(a_id, a),
        "b": _side(b_id, b),
        "wall_s": _compared(a, b, work_wall),
        "stages": stages,
        "fidelity": fidelity,
        "decisions": {
            "a": [d["policy"] for d in a[0]["decisions"]],
            "b": [d["policy"] for d in b[0]["decisions"]],
        },
    }
