"""Pictures of what a table cannot show at a glance (matplotlib, imported only when drawing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import UserError


def sweep_plot(rows: list[dict[str, Any]], path: str | Path, title: str) -> Path:
    """Error against cost for each point of a sweep: mitigated (filled) and unmitigated (hollow)
    errors against the shots each point spent, one labelled marker per point."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for row in rows:
        label = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in row["point"].items())
        if row["error_unmitigated"] is not None:
            axes.scatter(row["shots"], row["error_unmitigated"], facecolors="none", edgecolors="grey")
        if row["error_mitigated"] is not None:
            axes.scatter(row["shots"], row["error_mitigated"])
            axes.annotate(label, (row["shots"], row["error_mitigated"]), fontsize=7, xytext=(4, 4), textcoords="offset points")
    axes.set_xlabel("shots spent (all circuits)")
    axes.set_ylabel("absolute error against the ideal value")
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    path = Path(path)
    try:
        figure.savefig(path, dpi=120)
    except OSError as exc:
        raise UserError(f"cannot write the plot to {path}: {exc.strerror}.") from None
    finally:
        plt.close(figure)
    return path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(figure: Any) -> bytes:
    import io

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    _pyplot().close(figure)
    return buffer.getvalue()


def timeline_png(report: dict[str, Any]) -> bytes:
    """The run's tasks as bars in lanes (Gantt), coloured by stage family, with the resident
    memory each task saw (start, peak, end) plotted under it."""
    from .chrome_trace import QUEUE_LANE

    plt = _pyplot()
    tasks = [t for t in report["tasks"] if t["wall_s"] is not None]
    if not tasks:
        figure, axes = plt.subplots(figsize=(8, 1.5))
        axes.text(0.5, 0.5, "no ended tasks", ha="center")
        return _png(figure)
    origin = min(_seconds_of(t["start"]) for t in tasks)
    depth = _depth_map(report["tasks"])
    families = sorted({t["stage"].split(".")[0] for t in tasks})
    colours = {f: plt.get_cmap("tab10")(i % 10) for i, f in enumerate(families)}
    figure, (gantt, memory) = plt.subplots(2, 1, figsize=(10, 5.5), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    rows = max(depth.values()) + 2
    for task in tasks:
        start = _seconds_of(task["start"]) - origin
        row = rows - 1 if task["stage"].endswith(QUEUE_LANE) else depth[task["id"]]
        gantt.barh(row, task["wall_s"], left=start, height=0.8, color=colours[task["stage"].split(".")[0]],
                   edgecolor="black", linewidth=0.3)
        if task["wall_s"] > 0.04 * (report["run"]["wall_s"] or 1):
            gantt.text(start + task["wall_s"] / 2, row, task["stage"], ha="center", va="center", fontsize=6, clip_on=True)
    gantt.set_yticks(range(rows), [f"depth {d}" for d in range(rows - 1)] + ["queue"])
    gantt.invert_yaxis()
    gantt.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()], labels=list(colours),
                 fontsize=7, loc="lower right", ncol=min(len(colours), 6))
    gantt.set_title(f"{report['run']['name']}: tasks over time", fontsize=10)
    points = sorted((_seconds_of(t["start"]) - origin + offset * t["wall_s"], value / 2**20)
                    for t in tasks for offset, value in ((0, t["profile"]["start_rss_bytes"]),
                                                         (0.5, t["profile"]["peak_rss_bytes"]),
                                                         (1, t["profile"]["end_rss_bytes"])))
    memory.plot([p[0] for p in points], [p[1] for p in points], drawstyle="steps-post", color="tab:purple")
    memory.set_ylabel("RSS (MiB)", fontsize=8)
    memory.set_xlabel("seconds since the run started")
    figure.tight_layout()
    return _png(figure)


def stages_png(report: dict[str, Any]) -> bytes:
    """Each stage's summed wall time split into CPU and the rest (waiting: queue, QPU, I/O)."""
    plt = _pyplot()
    stages = sorted(report["stages"].items(), key=lambda item: item[1]["wall_s"])[-15:]
    figure, axes = plt.subplots(figsize=(8, 0.35 * len(stages) + 1.2))
    names = [s for s, _ in stages]
    cpu = [min(t["cpu_s"], t["wall_s"]) for _, t in stages]
    rest = [max(t["wall_s"] - c, 0.0) for (_, t), c in zip(stages, cpu)]
    axes.barh(names, cpu, color="tab:blue", label="CPU")
    axes.barh(names, rest, left=cpu, color="tab:orange", label="waiting (queue, QPU, I/O, other threads)")
    axes.set_xlabel("seconds (summed over the stage's tasks)")
    axes.tick_params(axis="y", labelsize=7)
    axes.legend(fontsize=7)
    axes.set_title("Stage breakdown", fontsize=10)
    figure.tight_layout()
    return _png(figure)


def _seconds_of(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


def _depth_map(tasks: list[dict[str, Any]]) -> dict[str, int]:
    parents = {t["id"]: t["parent_id"] for t in tasks}
    depths = {}
    for task_id in parents:
        depth, node = 0, parents[task_id]
        while node is not None and node in parents and depth < 32:
            depth, node = depth + 1, parents[node]
        depths[task_id] = depth
    return depths
