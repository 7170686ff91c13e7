"""Pictures of what a table cannot show at a glance (matplotlib, imported only when drawing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..model.errors import UserError
from .tradeoffs import COSTS, default_cost, point_labels


def sweep_plot(
    rows: list[dict[str, Any]], path: str | Path, title: str, cost: str | None = None
) -> Path:
    """Draw ``sweep_figure`` into a PNG file at ``path``."""
    plt = pyplot()
    figure = sweep_figure(rows, title, cost)
    path = Path(path)
    try:
        figure.savefig(path, dpi=120)
    except OSError as exc:
        raise UserError(f"cannot write the plot to {path}: {exc.strerror}.") from None
    finally:
        plt.close(figure)
    return path


def _error_bar(row: dict[str, Any], field: str) -> list[list[float]] | None:
    """How far a repeated point's 95% interval reaches below and above its mean, as
    matplotlib's error bars take it (an interval of a skewed figure is not symmetric); None for
    one trial or none known."""
    summary = (row.get("spread") or {}).get(field)
    if not summary or summary.get("ci95") is None or row.get(field) is None:
        return None
    low, high = summary["ci95"]
    return [[max(0.0, row[field] - low)], [max(0.0, high - row[field])]]


def sweep_png(rows: list[dict[str, Any]], title: str, cost: str | None = None) -> bytes:
    """``sweep_figure`` as PNG bytes (a notebook cell shows it inline)."""
    return png_bytes(sweep_figure(rows, title, cost))


def sweep_figure(rows: list[dict[str, Any]], title: str, cost_name: str | None = None) -> Any:
    """Error against cost for each point of a sweep: mitigated (filled) and unmitigated (open)
    errors against the cost (``tradeoffs.COSTS``; by default the QPU seconds each point spent,
    or its shots on a backend that reports no QPU time), one labelled marker per point, and a
    legend that says which marker is which. A point run as repeated trials shows its means with
    error bars of the 95% interval. Points that ``tradeoffs.mark_front`` put on the Pareto front
    are ringed and joined by the front's steps."""
    plt = pyplot()
    # Beyond a few points, long labels would cover each other: number the points, key below.
    numbered = len(rows) > 3
    key = [
        f"{i + 1}: {', '.join(point_labels(row['point']))}"
        + (" [front]" if row.get("pareto") else "")
        for i, row in enumerate(rows)
    ]
    key_height = 0.15 * len(key) + 0.15 if numbered else 0.0
    figure, axes = plt.subplots(figsize=(7, 4.5 + key_height))
    cost, axis_label = COSTS[cost_name or default_cost(rows)]
    repeated = False
    for index, row in enumerate(rows):
        label = str(index + 1) if numbered else ", ".join(point_labels(row["point"]))
        for field, style in (
            ("error_unmitigated", {"facecolors": "none", "edgecolors": "grey"}),
            ("error_mitigated", {"color": "tab:blue"}),
        ):
            if row[field] is None:
                continue
            axes.scatter(row[cost], row[field], **style)
            spread_y, spread_x = _error_bar(row, field), _error_bar(row, cost)
            if spread_y is not None or spread_x is not None:
                repeated = True
                axes.errorbar(
                    row[cost],
                    row[field],
                    yerr=spread_y,
                    xerr=spread_x,
                    fmt="none",
                    ecolor=style.get("color", "grey"),
                    capsize=3,
                    linewidth=0.8,
                )
        if row["error_mitigated"] is not None:
            axes.annotate(
                label,
                (row[cost], row["error_mitigated"]),
                fontsize=7,
                xytext=(4, 4),
                textcoords="offset points",
            )
    mean = "mean " if repeated else ""
    handles = [
        axes.scatter([], [], color="tab:blue"),
        axes.scatter([], [], facecolors="none", edgecolors="grey"),
    ]
    labels = [
        f"{mean}mitigated error (labelled with its point)",
        f"{mean}unmitigated error, same point",
    ]
    on_front = sorted(
        (row[cost], row["error_mitigated"]) for row in rows if row.get("pareto") is True
    )
    if on_front:
        xs, ys = zip(*on_front)
        axes.scatter(xs, ys, s=160, facecolors="none", edgecolors="tab:red", linewidths=1.5)
        (line,) = axes.step(xs, ys, where="post", color="tab:red", linewidth=1, alpha=0.7)
        handles.append(line)
        labels.append("Pareto front: no point beats these on both (beyond the intervals)")
    axes.legend(handles=handles, labels=labels, fontsize=7)
    if repeated:
        title += "\n(means of repeated trials; bars: 95% interval)"
    modelled = cost in ("qpu_s", "queue_s") and any(
        row.get(cost.replace("_s", "_modelled")) for row in rows
    )
    axes.set_xlabel(axis_label + (", modelled" if modelled else ""))
    axes.set_ylabel("absolute error against the ideal value")
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    if numbered:
        height = 4.5 + key_height
        figure.subplots_adjust(bottom=(key_height + 0.6) / height)
        figure.text(0.02, (key_height - 0.1) / height, "\n".join(key), fontsize=7, va="top")
    return figure


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png_bytes(figure: Any) -> bytes:
    import io

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    pyplot().close(figure)
    return buffer.getvalue()


def stages_png(report: dict[str, Any]) -> bytes:
    """Each stage's own wall time (outside its nested stages, so the bars add up to the run's
    busy time) split into CPU and the rest (waiting: queue, QPU, I/O)."""
    plt = pyplot()
    stages = sorted(report["stages"].items(), key=lambda item: item[1]["own_wall_s"])[-15:]
    figure, axes = plt.subplots(figsize=(8, 0.35 * len(stages) + 1.2))
    names = [s for s, _ in stages]
    cpu = [min(t["own_cpu_s"], t["own_wall_s"]) for _, t in stages]
    rest = [max(t["own_wall_s"] - c, 0.0) for (_, t), c in zip(stages, cpu)]
    axes.barh(names, cpu, color="tab:blue", label="CPU")
    axes.barh(
        names, rest, left=cpu, color="tab:orange", label="waiting (queue, QPU, I/O, other threads)"
    )
    axes.set_xlabel("own seconds (outside nested stages; summed over the stage's tasks)")
    axes.tick_params(axis="y", labelsize=7)
    axes.legend(fontsize=7)
    axes.set_title("Stage breakdown (own time)", fontsize=10)
    figure.tight_layout()
    return png_bytes(figure)


def seconds_of(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


def iterations_png(report: dict[str, Any]) -> bytes:
    """A loop's objective (with its standard error) and cost per iteration, one above the other,
    with a dashed line where the calibration in force changed."""
    rows = report.get("iterations") or []
    plt = pyplot()
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
    index = [r["index"] for r in rows]
    valued = [r for r in rows if r["value"] is not None]
    top.errorbar(
        [r["index"] for r in valued],
        [r["value"] for r in valued],
        yerr=[r["error"] or 0.0 for r in valued],
        marker="o",
        markersize=3,
        capsize=2,
    )
    top.set_ylabel("objective")
    top.set_title("Objective and cost per iteration")
    bottom.plot(index, [r["wall_s"] for r in rows], label="wall s", marker=".")
    bottom.plot(index, [r["process_cpu_s"] or 0.0 for r in rows], label="process CPU s", marker=".")
    if any(r["qpu_s"] for r in rows):
        bottom.plot(index, [r["qpu_s"] or 0.0 for r in rows], label="QPU s", marker=".")
    bottom.set_xlabel("iteration")
    bottom.set_ylabel("seconds")
    changes = [r["index"] for r in rows if r["calibration_changed"]]
    for axis in (top, bottom):
        for number, at in enumerate(changes):
            axis.axvline(
                at - 0.5,
                color="red",
                linestyle="--",
                linewidth=1,
                label="calibration changed" if axis is bottom and not number else None,
            )
    bottom.legend(loc="upper right", fontsize="small")
    figure.tight_layout()
    return png_bytes(figure)


#: The panels of a device's calibration over time (``timeline.device_timeline``): (title, the
#: figures drawn in it, their labels, scale).
PANELS = (
    (
        "median error",
        ("two_qubit_error_median", "readout_error_median"),
        ("2-qubit gate", "readout"),
        "log",
    ),
    ("median coherence (us)", ("t1_median_s", "t2_median_s"), ("T1", "T2"), "linear"),
    ("out of service", ("faulty_qubits", "faulty_couplers"), ("qubits", "couplers"), "linear"),
)


def hardware_timeline_png(timeline: dict[str, Any]) -> bytes:
    """The figures of each snapshot as steps over time, one panel each, with the failed readings
    and, in a last panel on the same axis, each run's span and its mitigated error."""
    plt = pyplot()
    snapshots, runs = timeline["snapshots"], timeline["runs"]
    starts = [s["at"] for s in snapshots] + [r["start"] for r in runs]
    origin = min(starts) if starts else 0.0
    ends = [r["end"] or r["start"] for r in runs] + starts
    last = max(ends) if ends else origin + 1
    figure, axes = plt.subplots(len(PANELS) + 1, 1, figsize=(8, 8), sharex=True)
    times = [(s["at"] - origin) / 60 for s in snapshots]
    for axis, (title, keys, labels, scale) in zip(axes, PANELS):
        for key, label in zip(keys, labels):
            values = [s[key] for s in snapshots]
            if key.endswith("_s"):
                values = [v * 1e6 if v is not None else None for v in values]
            if any(v is not None for v in values):
                axis.step(
                    times + [(last - origin) / 60],
                    values + values[-1:],
                    where="post",
                    label=label,
                )
        for failure in timeline["failures"]:
            axis.axvline((failure["at"] - origin) / 60, color="tab:red", alpha=0.4, lw=1)
        axis.set_yscale(scale if any(s.get(keys[0]) for s in snapshots) else "linear")
        axis.set_ylabel(title, fontsize=8)
        axis.legend(fontsize=7, loc="upper left")
        axis.grid(alpha=0.3)
    runs_axis = axes[-1]
    for run in runs:
        begin, end = (run["start"] - origin) / 60, ((run["end"] or run["start"]) - origin) / 60
        value = run["error_mitigated"]
        if value is None:
            value = run["error_unmitigated"]
        if value is not None:
            runs_axis.plot([begin, max(end, begin + 1e-3)], [value, value], color="tab:blue", lw=3)
    for axis in axes:
        for at in times[1:]:
            axis.axvline(at, color="grey", ls=":", lw=0.8)
    runs_axis.set_ylabel("run's mitigated error", fontsize=8)
    runs_axis.set_xlabel("minutes since the first point (dotted: a calibration change)")
    runs_axis.grid(alpha=0.3)
    figure.suptitle(f"{timeline['device']}: calibration and runs over time", fontsize=10)
    figure.tight_layout()
    return png_bytes(figure)


def write_timeline_png(timeline: dict[str, Any], path: str | Path) -> None:
    try:
        Path(path).write_bytes(hardware_timeline_png(timeline))
    except OSError as exc:
        raise UserError(f"cannot write the plot to {path}: {exc.strerror}.") from None
