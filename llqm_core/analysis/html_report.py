"""One self-contained HTML file per run: the report's tables and pictures, readable offline.

Pictures are PNGs embedded as data URIs, the timeline inline SVG, and the styles are inline, so
the file can be mailed or archived alone. A few lines of script count the pictures the browser
actually decoded (``<body data-figures="N">``) and write on each of the timeline's segments
(``timeline_figure.SEGMENT_ID``) the width in pixels the browser drew it at (``data-drawn-width``), which
is what the tests check in a real browser.
"""

from __future__ import annotations

import base64
import heapq
import html
from typing import Any

from ..model.modelled import with_word
from ..model.records import TaskRecord
from ..model.units import format_bytes, format_seconds, iso_time
from ..model.visible import MERGED_BUSY, MERGED_TASKS, visible_tasks
from .iterations import ITERATION_COLUMNS, iteration_rows
from .kept import kept_sentence
from .plots import iterations_png, stages_png
from .report import task_entry
from .report_words import (
    COST_COLUMNS,
    STAGE_COLUMNS,
    bottleneck_sentence,
    cache_sentence,
    choice_text,
    detail_sentence,
    fidelity_text,
    format_number,
    format_qpu,
    no_task_sentence,
    single_trial_sentence,
    stage_rows,
    stages_caption,
    transpiled_text,
    warmup_sentence,
)
from .summary import FIDELITY_FIGURES, exclusive_times
from .timeline_figure import timeline_png, timeline_svg
from .trial_report import trials_closing, trials_heading, trials_tables

MAX_TASK_ROWS = 500
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
.warning { color: #a05a00; } .failed { color: #b00020; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
.timeline svg { max-width: 100%; height: auto; border: 1px solid #ddd; margin: 0.5em 0; }
"""
_SCRIPT = """
window.addEventListener("load", () => {
  const decoded = Array.from(document.images).filter(i => i.complete && i.naturalWidth > 0).length;
  document.body.dataset.figures = String(decoded);
  for (const segment of document.querySelectorAll('svg [id^="llqm-seg-"]')) {
    segment.dataset.drawnWidth = segment.getBoundingClientRect().width.toFixed(2);
  }
});
"""


def _table(caption: str, header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><caption>{html.escape(caption)}</caption><tr>{head}</tr>{body}</table>"


def _image(png: bytes, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def timeline_part(report: dict[str, Any]) -> str:
    """The run's timeline (``timeline_figure.timeline_figure``): inline SVG whose segments carry their
    tasks' ids, or a PNG where it has too many segments to mark each."""
    svg = timeline_svg(report)
    if svg is None:
        return _image(timeline_png(report), "timeline of the run's tasks")
    return f'<div class="timeline" role="img" aria-label="timeline of the run\'s tasks">{svg}</div>'


def _microseconds(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.1f} us"


def html_report(
    report: dict[str, Any],
    tasks: list[TaskRecord],
    own: dict[str, tuple[float, float]] | None = None,
) -> str:
    """The page of a run's report; ``tasks`` are the run's tasks (``analyse_run``'s), drawn in its
    timeline (too many too short ones merged, as the page then says: ``visible_tasks``), and
    ``own`` their own (wall, CPU) seconds (``analyse_run``'s; found from ``tasks`` if not given)."""
    return _page(report["run"]["name"], report_parts(report, tasks, own=own))


def drawn_entries(
    tasks: list[TaskRecord], own: dict[str, tuple[float, float]]
) -> list[dict[str, Any]]:
    """The timeline's tasks as entries with their own seconds, which its busy-cores line reads
    (``timeline_figure.busy_cores_series``): a merged bar's are its tasks' (innermost: all their own)."""
    entries = []
    for task in tasks:
        times = own.get(task.id)
        if times is None and MERGED_TASKS in task.metrics:
            times = (float(task.metrics[MERGED_BUSY]), task.profile.cpu_s)
        entries.append(task_entry(task, times))
    return entries


def report_parts(
    report: dict[str, Any],
    tasks: list[TaskRecord],
    max_tasks: int = MAX_TASK_ROWS,
    own: dict[str, tuple[float, float]] | None = None,
) -> list[str]:
    """The page's pieces, in order: heading, sentences, tables and pictures; the task table
    lists at most ``max_tasks``, those with the most own wall time when it cuts (in start order).
    ``own`` is ``exclusive_times(tasks)`` when the caller has it (``analyse_run``)."""
    run = report["run"]
    drawn, merged = visible_tasks(tasks, run["wall_s"])
    parts = [
        f"<h1>{html.escape(run['name'])}</h1>",
        f'<p id="run">run <code>{run["id"]}</code>, <b class="{run["status"]}">{run["status"]}</b>, started '
        f"{run['started']}, wall {format_seconds(run['wall_s'])}, trace <code>{run['trace_id']}</code></p>",
    ]
    if run.get("error"):
        parts.append(f'<p class="failed">error: {html.escape(run["error"])}</p>')
    detail = detail_sentence(report)
    if detail:
        parts.append(f'<p id="detail">{html.escape(detail)}.</p>')
    sentence = bottleneck_sentence(report, lambda text: f"<b>{html.escape(text)}</b>")
    if sentence:
        parts.append(f'<p id="bottleneck">{sentence}.</p>')
    outside = no_task_sentence(report, lambda text: f"<b>{html.escape(text)}</b>")
    if outside:
        parts.append(f'<p id="no-task">{outside}.</p>')
    warm = warmup_sentence(report)
    if warm:
        parts.append(f'<p id="warmup">{html.escape(warm)}.</p>')
    cached = cache_sentence(report)
    if cached:
        parts.append(f'<p id="cache">{html.escape(cached)}.</p>')
    kept = kept_sentence(report)
    if kept:
        parts.append(f'<p id="results">{html.escape(kept)}.</p>')
    figures = report.get("fidelity") or {}
    if figures:
        parts.append(
            _table(
                "Fidelity",
                list(FIDELITY_FIGURES),
                [[fidelity_text(figures, k) for k in FIDELITY_FIGURES]],
            )
        )
        parts.append(f'<p id="trials">{html.escape(single_trial_sentence(report))}</p>')
    parts.append(
        _table(
            "Cost per step",
            list(COST_COLUMNS),
            [
                [
                    c["stage"],
                    format_seconds(c["wall_s"]),
                    format_seconds(c["cpu_s"]),
                    c["circuits"],
                    transpiled_text(c),
                    c["shots"],
                    format_qpu(c["qpu_s"], c.get("qpu_modelled", False)),
                    with_word(format_seconds(c["queue_s"]), c.get("queue_modelled", False)),
                    format_bytes(c["peak_rss_bytes"]),
                ]
                for c in report.get("costs", [])
            ],
        )
    )
    if report.get("hardware"):
        parts.append(
            _table(
                "Calibrations in force during the run",
                ["in force from", "device", "snapshot", "2q err", "readout err", "T1", "T2", "out"],
                [
                    [
                        iso_time(int(h["at"] * 1e9)),
                        h["backend"],
                        h["fingerprint"],
                        format_number(h["two_qubit_error_median"]),
                        format_number(h["readout_error_median"]),
                        _microseconds(h["t1_median_s"]),
                        _microseconds(h["t2_median_s"]),
                        f"{h['faulty_qubits']} qubits, {h['faulty_couplers']} couplers",
                    ]
                    for h in report["hardware"]
                ],
            )
        )
    if report.get("iterations"):
        parts.append(_image(iterations_png(report), "objective and cost per iteration"))
        parts.append(_table("Iterations", list(ITERATION_COLUMNS), iteration_rows(report)))
    own = exclusive_times(tasks) if own is None else own
    drawn_report = report | {"tasks": drawn_entries(drawn, own)}
    parts.append(timeline_part(drawn_report))
    if merged:
        parts.append(f'<p id="merged">In the timeline, {html.escape(merged["note"])}.</p>')
    parts.append(_image(stages_png(report), "stage breakdown"))
    parts.append(_table(stages_caption(report), list(STAGE_COLUMNS), stage_rows(report)))
    if report.get("decisions"):
        parts.append(
            _table(
                "Policy decisions",
                ["policy", "choice", "rationale"],
                [
                    [
                        d["policy"],
                        choice_text(d["choice"]),
                        d["rationale"],
                    ]
                    for d in report["decisions"]
                ],
            )
        )
    for warning in report.get("warnings", []):
        parts.append(f'<p class="warning">warning: {html.escape(warning)}</p>')
    listed = report["tasks"]
    if len(listed) > max_tasks:
        biggest = heapq.nlargest(max_tasks, listed, key=lambda t: t.get("own_wall_s") or 0.0)
        listed = sorted(biggest, key=lambda t: t["start"] or "")
    count = report.get("task_count", len(report["tasks"]))
    parts.append(
        _table(
            f"Tasks ({len(listed)} of {count}"
            + (", those with the most own wall time)" if len(listed) < count else ")"),
            ["task", "stage", "status", "wall", "cpu", "peak RSS", "QPU", "queue"],
            [
                [
                    t["name"],
                    t["stage"],
                    t["status"],
                    format_seconds(t["wall_s"]),
                    format_seconds(t["cpu_s"]),
                    format_bytes(t["peak_rss_bytes"]),
                    format_seconds(t["qpu_s"]),
                    format_seconds(t["queue_s"]),
                ]
                for t in listed
            ],
        )
    )
    return parts


def _page(title: str, parts: list[str]) -> str:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>LLQM: {html.escape(title)}'
        f'</title><style>{_STYLE}</style></head><body data-figures="0">{"".join(parts)}'
        f"<script>{_SCRIPT}</script></body></html>"
    )


def trials_html(report: dict[str, Any]) -> str:
    """A trial set's report (``trials.trials_report``) as one self-contained page: each trial,
    and every figure that varies between them as mean, sd and 95% interval."""
    return _page(report["trials"]["name"], trials_parts(report))


def trials_parts(report: dict[str, Any]) -> list[str]:
    """The pieces of a trial set's page, in order."""
    parts = [
        f"<h1>{html.escape(report['trials']['name'])}</h1>",
        f'<p id="trials">{html.escape(trials_heading(report))}.</p>',
    ]
    parts += [_table(caption, header, rows) for caption, header, rows in trials_tables(report)]
    parts += [f"<p>{html.escape(line)}.</p>" for line in trials_closing(report)]
    return parts
