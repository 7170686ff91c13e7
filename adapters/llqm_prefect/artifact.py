"""The profile summary that a profiled flow run leaves in Prefect's UI, as markdown."""

from __future__ import annotations

from typing import Any

from llqm_core.analysis.report import bottleneck_sentence
from llqm_core.analysis.summary import FIDELITY_FIGURES


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value).replace("|", "\\|")


def profile_markdown(report: dict[str, Any]) -> str:
    run = report["run"]
    lines = [
        f"# LLQM profile: {run['name']}",
        "",
        f"Run `{run['id']}`, status **{run['status']}**, wall {_cell(run['wall_s'])} s, trace `{run['trace_id']}`.",
        "",
    ]
    sentence = bottleneck_sentence(report, lambda text: f"**{_cell(text)}**")
    if sentence:
        lines += [sentence + ".", ""]
    figures = report.get("fidelity") or {}
    if figures:
        keys = [k for k in FIDELITY_FIGURES if k in figures]
        lines += [
            "| " + " | ".join(keys) + " |",
            "|" + "---:|" * len(keys),
            "| " + " | ".join(_cell(figures[k]) for k in keys) + " |",
            "",
        ]
    lines += [
        "## Stages",
        "",
        "| stage | tasks | wall s | cpu s |",
        "|---|---:|---:|---:|",
    ]
    for stage, totals in sorted(report["stages"].items(), key=lambda item: -item[1]["wall_s"]):
        lines.append(
            f"| {_cell(stage)} | {totals['tasks']} | {_cell(totals['wall_s'])} | {_cell(totals['cpu_s'])} |"
        )
    lines += [
        "",
        "## Tasks",
        "",
        "| task | stage | status | wall s | cpu s | peak RSS MiB | error |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for task in report["tasks"]:
        peak = None if task["peak_rss_bytes"] is None else task["peak_rss_bytes"] / 2**20
        lines.append(
            f"| {_cell(task['name'])} | {_cell(task['stage'])} | {_cell(task['status'])} | {_cell(task['wall_s'])} "
            f"| {_cell(task['cpu_s'])} | {_cell(peak)} | {_cell(task['error'])} |"
        )
    return "\n".join(lines) + "\n"
