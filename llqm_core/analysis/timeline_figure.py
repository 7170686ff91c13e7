"""The run's timeline as a picture: each task's own segments in its lane, coloured by what it
spent its time on, with the busy cores and the memory the store has beneath (matplotlib,
imported only when drawing; the HTML page embeds it as SVG whose segments carry their task's id).
"""

from __future__ import annotations

import heapq
from typing import Any

from ..model.warmup import is_warmup
from .own_segments import Span, own_segments, place_tasks
from .plots import png_bytes, pyplot, seconds_of


def _resource_lane(task: dict[str, Any]) -> str:
    if task["stage"].endswith("queue") or (task["queue_s"] and not task["qpu_s"]):
        return "queue"
    if task["qpu_s"]:
        return "qpu"
    if (task["gpu"].get("utilization_mean_pct") or 0) > 0:
        return "gpu"
    return "cpu"


#: A timeline of up to this many segments draws each as its own element, marked with its task's
#: id (``SEGMENT_ID``), and the page embeds it as SVG; more are drawn in collections, as a PNG.
MARKED_SEGMENTS = 2000
#: The id of a task's own segment in the SVG timeline: ``llqm-seg-<task id>-<n>``, n from 0.
SEGMENT_ID = "llqm-seg-"
#: Bars of one lane and colour drawn with an outline, in a timeline of collections.
OUTLINED_BARS = 300
#: Own segments narrower than this share of the run's span (below a pixel) are not drawn.
NARROWEST_SEGMENT = 1 / 4000


def timeline_png(report: dict[str, Any]) -> bytes:
    """``timeline_figure`` as PNG bytes."""
    return png_bytes(timeline_figure(report)[0])


def timeline_svg(report: dict[str, Any]) -> str | None:
    """``timeline_figure`` as an SVG element to put in a page, each own segment a group whose id
    is ``SEGMENT_ID`` + its task's id + its number; None when there are more segments than
    ``MARKED_SEGMENTS`` (``timeline_png`` draws those)."""
    import io

    plt = pyplot()
    figure, marked = timeline_figure(report)
    if not marked:
        plt.close(figure)
        return None
    buffer = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "llqm"}):
        figure.savefig(buffer, format="svg", dpi=110, metadata={"Date": None})
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _timeline_spans(
    report: dict[str, Any],
) -> tuple[list[Span], dict[str, dict[str, Any]], float]:
    """The ended tasks' intervals (seconds since the run's first task started, ``origin`` in Unix
    seconds; start to end, warm-up inside a task included) and the tasks by id."""
    ended = [t for t in report["tasks"] if t["wall_s"] is not None and t["start"] and t["end"]]
    if not ended:
        return [], {}, 0.0
    origin = min(seconds_of(t["start"]) for t in report["tasks"] if t["start"])
    spans = [
        Span(
            t["id"],
            t["parent_id"],
            seconds_of(t["start"]) - origin,
            seconds_of(t["end"]) - origin,
        )
        for t in ended
    ]
    return spans, {t["id"]: t for t in ended}, origin


def timeline_figure(report: dict[str, Any]) -> tuple[Any, bool]:
    """Every task's own time (``own_segments``: a parent's, the parts of its interval outside its
    children, hatched) as bars in lanes by resource (CPU workers, GPU, QPU, queue), coloured by
    stage family; under them the busy cores (``busy_cores_series``: needs each task's
    ``own_cpu_s``) and the memory the store has (``memory_marks``): each innermost task's
    highest RSS as a line over its interval, and the RSS read at its start and end. Returns the
    figure and whether each segment is its own element marked with its task's id."""
    plt = pyplot()
    spans, by_id, origin = _timeline_spans(report)
    if not spans:
        figure, axes = plt.subplots(figsize=(8, 1.5))
        axes.text(0.5, 0.5, "no ended tasks", ha="center")
        return figure, True
    span_s = max(s.end for s in spans) - min(s.start for s in spans)
    segments = own_segments(spans, span_s * NARROWEST_SEGMENT)
    lanes = place_tasks(spans, segments, lambda i: _resource_lane(by_id[i]))
    parents = {s.parent_id for s in spans if s.parent_id in by_id}
    order = sorted(set(lanes.values()), key=lambda name: (not name.startswith("cpu"), name))
    rows = {name: i for i, name in enumerate(order)}
    families = sorted({by_id[i]["stage"].split(".")[0] for i in lanes})
    colours = {f: plt.get_cmap("tab10")(i % 10) for i, f in enumerate(families)}
    figure, (gantt, usage) = plt.subplots(
        2,
        1,
        figsize=(10, 2.2 + 0.5 * len(rows) + 2.2),
        sharex=True,
        gridspec_kw={"height_ratios": [max(len(rows), 2), 2.4]},
    )
    marked = sum(len(segments[i]) for i in lanes) <= MARKED_SEGMENTS
    gantt.set_ylim(len(order) - 0.5, -0.5)  # the first lane on top
    gantt.set_yticks(range(len(order)), order)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()]
    labels = list(colours)
    if parents & set(lanes):
        handles.append(
            plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", hatch="////")
        )
        labels.append("a parent's own time, outside its children")
    gantt.legend(
        handles=handles,
        labels=labels,
        fontsize=8,
        loc="lower left",
        bbox_to_anchor=(0.0, 1.0),
        ncol=min(len(labels), 6),
        frameon=False,
    )
    gantt.set_title(
        f"{report['run']['name']}: each task's own time by resource", fontsize=10, pad=22
    )
    # memory lines of the innermost tasks: a task whose only children are warm-up is one
    nesting = {s.parent_id for s in spans if not is_warmup(by_id[s.id]["stage"])}
    innermost = [(by_id[s.id], s.start, lanes.get(s.id, "")) for s in spans if s.id not in nesting]
    _usage_panel(report, usage, innermost, origin)
    usage.set_xlim(min(s.start for s in spans), max(s.end for s in spans))
    figure.tight_layout()  # before the bars go in: laying out draws every artist once more
    family = {i: by_id[i]["stage"].split(".")[0] for i in lanes}
    drawn = [(i, rows[lane], colours[family[i]], i in parents) for i, lane in lanes.items()]
    _draw_segments(gantt, drawn, segments, by_id, marked, span_s)
    return figure, marked


def _draw_segments(
    gantt: Any,
    drawn: list[tuple[str, int, Any, bool]],
    segments: dict[str, list[tuple[float, float]]],
    by_id: dict[str, dict[str, Any]],
    marked: bool,
    span_s: float,
) -> None:
    """Each task's own segments (``drawn``: task id, row, colour, whether it is a parent, which
    is hatched) in the timeline's lanes, each its own rectangle with its task's id where
    ``marked``, in collections per row and look otherwise; a segment wider than 4% of the run's
    span is labelled with its stage."""
    plt = pyplot()
    bars: dict[tuple[int, Any, bool], list[tuple[float, float]]] = {}
    for task_id, row, colour, parent in drawn:
        for number, (begin, end) in enumerate(segments[task_id]):
            if marked:  # add_artist: add_patch updates the data limits, slowly, at each bar
                gantt.add_artist(
                    plt.Rectangle(
                        (begin, row - 0.4),
                        end - begin,
                        0.8,
                        facecolor=colour,
                        edgecolor="black",
                        linewidth=0.3,
                        hatch="////" if parent else None,
                        gid=f"{SEGMENT_ID}{task_id}-{number}",
                    )
                )
            else:
                bars.setdefault((row, colour, parent), []).append((begin, end - begin))
            if end - begin > 0.04 * span_s:
                gantt.text(
                    (begin + end) / 2,
                    row,
                    by_id[task_id]["stage"],
                    ha="center",
                    va="center",
                    fontsize=7,
                    clip_on=True,
                    bbox={"facecolor": "white", "alpha": 0.75, "linewidth": 0, "pad": 1},
                )
    for (row, colour, parent), spans_of in bars.items():
        gantt.broken_barh(
            spans_of,
            (row - 0.4, 0.8),
            facecolors=colour,
            edgecolor="black",
            hatch="////" if parent else None,
            # an outline apart each bar; past a few hundred in a lane the outlines are all one sees
            linewidth=0.3 if len(spans_of) <= OUTLINED_BARS else 0.0,
        )


def _usage_panel(
    report: dict[str, Any],
    usage: Any,
    innermost: list[tuple[dict[str, Any], float, str]],
    origin: float,
) -> None:
    """The busy cores (left axis, up to a little above their highest, never past the machine's
    CPUs) and the memory of the innermost tasks (right axis, MiB; ``memory_marks``)."""
    steps, cpu = busy_cores_series(report)
    label = "busy cores"
    if len(steps) > 2 * BUSY_BINS:  # a step per task start and end is a comb no one can read
        steps, cpu = binned_mean(steps, cpu, BUSY_BINS)
        label = f"busy cores (mean over each 1/{BUSY_BINS} of the run)"
    cpus = report["run"].get("cpus") or float("inf")
    usage.fill_between(steps, cpu, step="post", color="tab:blue", alpha=0.15, linewidth=0)
    usage.plot(steps, cpu, drawstyle="steps-post", color="tab:blue", label=label)
    usage.set_ylabel(
        "busy cores" if cpus == float("inf") else f"busy cores (of {cpus})",
        fontsize=8,
        color="tab:blue",
    )
    usage.set_ylim(0, min(cpus, max([*cpu, 0.8]) * 1.25))
    usage.grid(alpha=0.3)
    memory = usage.twinx()
    peaks, readings = memory_marks(innermost, origin)
    if peaks:
        memory.hlines(
            [peak for _, _, peak in peaks],
            [begin for begin, _, _ in peaks],
            [end for _, end, _ in peaks],
            color="tab:purple",
            linewidth=2,
            alpha=0.6,
            label="highest RSS while the task ran (the moment is not recorded)",
        )
    if readings:
        memory.plot(
            [at for at, _ in readings],
            [value for _, value in readings],
            linestyle="none",
            marker=".",
            markersize=4,
            color="tab:purple",
            label="RSS read at a task's start and end",
        )
    memory.set_ylabel("RSS (MiB)", fontsize=8, color="tab:purple")
    lines, names = usage.get_legend_handles_labels()
    more, more_names = memory.get_legend_handles_labels()
    usage.legend(  # above the panel, clear of its lines
        lines + more,
        names + more_names,
        fontsize=7,
        loc="lower left",
        bbox_to_anchor=(0.0, 1.0),
        ncol=3,
        frameon=False,
    )
    usage.set_xlabel("seconds since the run started")


def memory_marks(
    placed: list[tuple[dict[str, Any], float, str]], origin: float
) -> tuple[list[tuple[float, float, float]], list[tuple[float, float]]]:
    """What the timeline draws of memory, as the store has it: per task, its highest RSS over its
    whole interval (start to end, seconds since ``origin``; MiB), for the moment it was reached
    is not recorded, and the RSS read at its start and end, in time order."""
    spans, readings = [], []
    for task, start, _ in placed:
        profile = task.get("profile")
        if not profile or not task["end"]:
            continue
        end = seconds_of(task["end"]) - origin  # the interval, warm-up inside it included
        spans.append((start, end, profile["peak_rss_bytes"] / 2**20))
        readings += [(start, profile["start_rss_bytes"] / 2**20)]
        readings += [(end, profile["end_rss_bytes"] / 2**20)]
    readings.sort()
    return spans, readings


#: Bins the busy-cores curve is averaged over when it has more than twice as many steps.
BUSY_BINS = 200


def binned_mean(
    steps: list[float], values: list[float], bins: int
) -> tuple[list[float], list[float]]:
    """A step curve (``values[i]`` from ``steps[i]`` to ``steps[i + 1]``, the last value ending
    there) as its mean over ``bins`` equal bins from the first step to the last: what a curve of
    thousands of steps says at the width of a page, its area (the CPU seconds) kept."""
    first, last = steps[0], steps[-1]
    width = (last - first) / bins
    if width <= 0:
        return steps, values
    area = [0.0] * bins
    for at, until, value in zip(steps, steps[1:], values):
        low = min(int((at - first) / width), bins - 1)
        high = min(int((until - first) / width), bins - 1)
        for index in range(low, high + 1):  # the step's share of each bin it spans
            left = at if index == low else first + index * width
            right = until if index == high else first + (index + 1) * width
            if right > left:
                area[index] += value * (right - left)
    edges = [first + i * width for i in range(bins)]
    return edges + [last], [a / width for a in area] + [0.0]


def busy_cores_series(report: dict[str, Any]) -> tuple[list[float], list[float]]:
    """The busy cores over the run (seconds since its first task, a step at each own segment's
    start and end, ``own_segments``): each task adds its own CPU seconds (outside its children,
    as the run's mean busy cores counts them) spread over its own segments, so a parent's CPU
    shows where it ran and not under its children; the sum never exceeds the logical CPUs of
    the run's machine (``run.cpus``, where known)."""
    spans, by_id, _ = _timeline_spans(report)
    segments = own_segments(spans)
    pieces = []  # (begin, end, cores)
    for span in spans:
        cpu, own = by_id[span.id].get("own_cpu_s"), segments[span.id]
        length = sum(end - begin for begin, end in own)
        if cpu and length > 0:
            pieces += [(begin, end, cpu / length) for begin, end in own]
    if not pieces:
        return [], []
    pieces.sort()
    steps = sorted({begin for begin, _, _ in pieces} | {end for _, end, _ in pieces})
    cpus = report["run"].get("cpus") or float("inf")
    # One sweep over the steps: the pieces running at each are those begun and not yet ended,
    # summed in their order.
    running: dict[int, float] = {}
    ending: list[tuple[float, int]] = []
    values, following = [], 0
    for at in steps:
        while following < len(pieces) and pieces[following][0] <= at:
            _, end, cores = pieces[following]
            running[following] = cores
            heapq.heappush(ending, (end, following))
            following += 1
        while ending and ending[0][0] <= at:
            running.pop(heapq.heappop(ending)[1])
        values.append(min(sum(running.values()), cpus))
    return steps, values
