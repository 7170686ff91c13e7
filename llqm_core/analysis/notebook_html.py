"""What runs, trial sets, comparisons and sweeps show in a notebook cell (``_repr_html_``).

The same pieces as the HTML report's page (``html_report``), as one self-contained fragment:
styles scoped to the fragment (a notebook's own styles stay as they were), pictures as data URIs,
no script, and a width that fits a cell. The task table shows the biggest tasks only, as the
text report does; ``llqm report RUN --html FILE`` has them all.
"""

from __future__ import annotations

import html
from typing import Any

from ..model.records import TaskRecord
from ..model.units import format_bytes, format_seconds
from .compare import change_text, wall_words
from .html_report import _image, _table, report_parts, trials_parts
from .plots import sweep_png
from .report_words import format_number
from .tradeoffs import COSTS, point_labels
from .trial_report import format_summary

#: Tasks in a cell's task table (the biggest by own time).
CELL_TASK_ROWS = 10
_CELL_STYLE = """
.llqm-cell { font-family: system-ui, sans-serif; max-width: 960px; color: #222; }
.llqm-cell h1 { font-size: 1.2em; margin: 0.3em 0; }
.llqm-cell table { border-collapse: collapse; margin: 0.4em 0 1em; font-size: 0.82em; }
.llqm-cell th, .llqm-cell td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }
.llqm-cell th:first-child, .llqm-cell td:first-child { text-align: left; }
.llqm-cell caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
.llqm-cell .warning { color: #a05a00; } .llqm-cell .failed { color: #b00020; }
.llqm-cell img { max-width: 100%; border: 1px solid #ddd; margin: 0.3em 0; }
.llqm-cell .timeline svg { max-width: 100%; height: auto; border: 1px solid #ddd; margin: 0.3em 0; }
.llqm-cell .front { font-weight: bold; }
"""


def fragment(parts: list[str]) -> str:
    """Pieces of a page as one notebook cell's output."""
    return f'<div class="llqm-cell"><style>{_CELL_STYLE}</style>{"".join(parts)}</div>'


def run_html(
    report: dict[str, Any],
    tasks: list[TaskRecord],
    own: dict[str, tuple[float, float]] | None = None,
) -> str:
    """A run's report, its tasks and their own seconds (``report.analyse_run``'s) in a cell."""
    return fragment(report_parts(report, tasks, max_tasks=CELL_TASK_ROWS, own=own))


def trials_cell_html(report: dict[str, Any]) -> str:
    """A trial set's report (``trials.trials_report``) in a cell."""
    return fragment(trials_parts(report))


def _change_cell(entry: dict[str, Any], show: Any) -> str:
    return change_text(entry, show, "→")


def comparison_html(result: dict[str, Any]) -> str:
    """Two runs or trial sets side by side (``compare.compare_runs``) in a cell."""
    parts = ["<h1>Comparison, a → b</h1>"]
    for side in ("a", "b"):
        shown = result[side]
        trials = "one trial" if shown["trials"] == 1 else f"{shown['trials']} trials"
        parts.append(
            f"<p>{side}: <b>{html.escape(shown['name'])}</b> (<code>{shown['id'][:17]}</code>), "
            f"{trials}, {wall_words(shown)}, decisions "
            f"{html.escape(', '.join(result['decisions'][side]) or 'none')}</p>"
        )
    parts.append(
        _table(
            "Per stage, a → b",
            ["stage", "wall", "cpu", "QPU", "queue", "peak RSS"],
            [
                [
                    stage,
                    _change_cell(fields["wall_s"], format_seconds),
                    _change_cell(fields["cpu_s"], format_seconds),
                    _change_cell(fields["qpu_s"], format_seconds),
                    _change_cell(fields["queue_s"], format_seconds),
                    _change_cell(fields["peak_rss_bytes"], format_bytes),
                ]
                for stage, fields in result["stages"].items()
            ],
        )
    )
    if result["fidelity"]:
        parts.append(
            _table(
                "Fidelity, a → b",
                ["figure", "a", "b", "difference", "95% interval", "beyond spread"],
                [
                    [
                        name,
                        format_number(entry["a"]),
                        format_number(entry["b"]),
                        format_number(entry.get("difference")),
                        "-"
                        if entry.get("ci95") is None
                        else f"{entry['ci95'][0]:.4g} to {entry['ci95'][1]:.4g}",
                        {True: "yes", False: "no", None: "unknown (one trial)"}[
                            entry.get("beyond_spread")
                        ],
                    ]
                    for name, entry in result["fidelity"].items()
                ],
            )
        )
    return fragment(parts)


def sweep_html(rows: list[dict[str, Any]], title: str, cost: str) -> str:
    """A sweep's points (``pipeline.sweep.point_summary`` rows, repeated and marked by
    ``tradeoffs.mark_front``) in a cell: the plot with its front, and the table."""
    parts = [f"<h1>{html.escape(title)}</h1>", _image(sweep_png(rows, title, cost), title)]
    parts.append(
        _table(
            f"Points (front: on the Pareto front of mitigated error against {COSTS[cost][1]})",
            ["point", "front", "error mitigated", "error unmitigated", "shots", "QPU", "wall"],
            [
                [
                    ", ".join(point_labels(row["point"])),
                    "yes" if row.get("pareto") else "",
                    format_summary(row["spread"]["error_mitigated"]),
                    format_summary(row["spread"]["error_unmitigated"]),
                    str(row["shots"]),
                    format_summary(row["spread"]["qpu_s"], format_seconds, True)
                    + (" modelled" if row["qpu_s"] and row["qpu_modelled"] else ""),
                    format_summary(row["spread"]["wall_s"], format_seconds),
                ]
                for row in rows
            ],
        )
    )
    return fragment(parts)
