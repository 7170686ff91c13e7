"""Running a sweep: a pipeline file over a grid of values, each point as a trial set, and the
trade-off front of its points (``llqm sweep``, and ``llqm_core.sweep`` in a notebook).

The grid is ``pipeline.sweep``'s; the rows are ``pipeline.sweep.point_summary`` per trial,
gathered per point by ``analysis.trial_report.repeated_point`` and marked by
``analysis.tradeoffs.mark_front``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .analysis.report import build_report
from .analysis.tradeoffs import Sweep, cost_field, default_cost, mark_front
from .analysis.trial_report import repeated_point
from .pipeline.file import Pipeline, read_pipeline_file
from .pipeline.sweep import grid_pipelines, parse_grid, point_summary
from .pipeline.trials import run_trials
from .store.profile_store import ProfileStore

Grid = Mapping[str, Sequence[Any]] | Sequence[str] | Sequence[tuple[str, Sequence[Any]]]


def _grid(grid: Grid) -> list[tuple[str, list[Any]]]:
    """``{"key": [values]}``, ``["key=V1,V2"]`` (as on the command line) or ``[(key, values)]``."""
    if isinstance(grid, Mapping):
        return [(key, list(values)) for key, values in grid.items()]
    entries = list(grid)
    if all(isinstance(entry, str) for entry in entries):
        return parse_grid([str(entry) for entry in entries])
    return [(str(entry[0]), list(entry[1])) for entry in entries if not isinstance(entry, str)]


@dataclass(frozen=True)
class SweepPlan:
    """The checked points of a sweep (each estimated to fit unless forced), before any runs."""

    pipeline: str
    points: list[tuple[dict[str, Any], Pipeline]]
    store: str | None
    cost: str | None


def plan_sweep(
    pipeline: str,
    grid: Grid,
    *,
    store: str | None = None,
    force: bool = False,
    cost: str | None = None,
) -> SweepPlan:
    """Every point of ``grid`` over the pipeline file, checked: a bad value, key or cost name
    is refused in one sentence before anything runs."""
    if cost is not None:
        cost_field(cost)
    config = read_pipeline_file(pipeline)
    points = grid_pipelines(config, _grid(grid), pipeline, store=store, force=force)
    return SweepPlan(pipeline, points, store, cost)


def run_plan(
    plan: SweepPlan,
    *,
    repeat: int | None = None,
    on_point: Callable[[int, int, str], None] | None = None,
) -> Sweep:
    """Run each point (``repeat`` trials each, default the file's), then mark the front of
    mitigated error against the plan's cost (default QPU seconds where any point reports
    them, else shots). ``on_point(index, count, name)`` hears of each point before it runs."""
    rows = []
    for index, (assignment, point) in enumerate(plan.points):
        if on_point is not None:
            on_point(index, len(plan.points), point.name)
        where = plan.store or point.store
        trials = run_trials(point, store=where, repeat=repeat)
        stored = ProfileStore(where, readonly=True)
        rows.append(
            repeated_point(
                [
                    point_summary(assignment, build_report(stored, r, keep_tasks=0))
                    for r in trials.run_ids
                ],
                trials.id,
            )
        )
    chosen = plan.cost or default_cost(rows)
    return Sweep(mark_front(rows, chosen), f"Sweep of {plan.pipeline}", chosen)


def run_sweep(
    pipeline: str,
    grid: Grid,
    *,
    store: str | None = None,
    force: bool = False,
    repeat: int | None = None,
    cost: str | None = None,
    on_point: Callable[[int, int, str], None] | None = None,
) -> Sweep:
    """``plan_sweep`` and ``run_plan`` in one call (``llqm_core.sweep`` in a notebook)."""
    plan = plan_sweep(pipeline, grid, store=store, force=force, cost=cost)
    return run_plan(plan, repeat=repeat, on_point=on_point)
