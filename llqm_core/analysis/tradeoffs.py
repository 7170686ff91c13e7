"""The trade-off front of a sweep: the points no other point beats on both mitigated error and cost.

A point is dominated when another is at least as good on both figures and better on one, and
the trial intervals say so: each figure is compared by its 95% interval (``stats``), the other
point's upper bound against this one's lower bound, so two points whose intervals overlap on
either figure are not told apart and both may stay on the front. A point run once has no
interval: its figure is its one value, and the front of one-trial points is the plain Pareto
front of their values (the sweep's table says the points have no spread). A point without a
mitigated error (a failed run, a pipeline with no ideal value) is on no front.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import display
from ..model.errors import UserError

#: ``--cost`` names: the sweep row's field and how the plot's axis names it.
COSTS = {
    "qpu": ("qpu_s", "QPU seconds (all jobs)"),
    "shots": ("shots", "shots spent (all circuits)"),
    "wall": ("wall_s", "wall seconds (the whole run, warm-up left out)"),
}
ERROR = "error_mitigated"


def cost_field(cost: str) -> str:
    """The sweep row's field of a ``--cost`` name."""
    if cost not in COSTS:
        raise UserError(f"unknown cost {cost!r}; the costs are {', '.join(COSTS)}.")
    return COSTS[cost][0]


def bounds(row: dict[str, Any], field: str) -> tuple[float, float] | None:
    """The figure's 95% interval over the point's trials, or its one value twice (one trial)."""
    value = row.get(field)
    if value is None:
        return None
    summary = (row.get("spread") or {}).get(field)
    if summary and summary.get("ci95") is not None:
        low, high = summary["ci95"]
        return float(low), float(high)
    return float(value), float(value)


def dominates(b: dict[str, Any], a: dict[str, Any], cost: str) -> bool:
    """Whether point ``b`` beats point ``a`` beyond both figures' intervals: no worse on either
    (b's upper bound at most a's lower bound) and better on one (strictly below it)."""
    field = cost_field(cost)
    error_b, error_a, cost_b, cost_a = (
        bounds(b, ERROR),
        bounds(a, ERROR),
        bounds(b, field),
        bounds(a, field),
    )
    if error_b is None or error_a is None or cost_b is None or cost_a is None:
        return False
    no_worse = error_b[1] <= error_a[0] and cost_b[1] <= cost_a[0]
    better = error_b[1] < error_a[0] or cost_b[1] < cost_a[0]
    return no_worse and better


def default_cost(rows: list[dict[str, Any]]) -> str:
    """QPU seconds where a point reports any, else shots (a simulator reports no QPU time)."""
    return "qpu" if any(row.get("qpu_s") for row in rows) else "shots"


def mark_front(rows: list[dict[str, Any]], cost: str) -> list[dict[str, Any]]:
    """Give every row ``pareto`` (True on the front, False when dominated, None without a
    mitigated error or cost) and ``pareto_cost``; the rows, in their order."""
    field = cost_field(cost)
    for row in rows:
        known = row.get(ERROR) is not None and row.get(field) is not None
        row["pareto"] = (
            not any(dominates(other, row, cost) for other in rows if other is not row)
            if known
            else None
        )
        row["pareto_cost"] = cost
    return rows


def front(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows ``mark_front`` put on the front."""
    return [row for row in rows if row.get("pareto")]


@dataclass
class Sweep:
    """A sweep's rows (``pipeline.sweep.point_summary``, repeated and marked), shown in a
    notebook cell as its plot with the front and its table."""

    rows: list[dict[str, Any]]
    title: str
    cost: str = "qpu"

    @property
    def front(self) -> list[dict[str, Any]]:
        return front(self.rows)

    def _repr_html_(self) -> str | None:
        return display.html("sweep", self)


def front_sentence(sweep: Sweep) -> str:
    """The front in one sentence: against which cost, how points were compared, and its points."""
    on, cost_name = sweep.front, COSTS[sweep.cost][1]
    if not on:
        return f"No point has both a mitigated error and {cost_name}: there is no trade-off front."
    how = (
        "one trial per point, so compared by value, without spread"
        if all(row.get("trials", 1) == 1 for row in sweep.rows)
        else "a point is dominated only where the 95% intervals of both figures say so"
    )
    points = "; ".join(", ".join(point_labels(row["point"])) for row in on)
    return f"Pareto front of mitigated error against {cost_name} ({how}): {points}."


def point_labels(point: dict[str, Any]) -> list[str]:
    """A sweep point's ``key=value`` items, each key by its last part (``technique=zne``) unless
    two keys share it: short enough to stay whole beside a plot's marker or in a table's cell."""
    short = [key.split(".")[-1] for key in point]
    names = short if len(set(short)) == len(short) else list(point)
    return [f"{name}={value}" for name, value in zip(names, point.values())]
