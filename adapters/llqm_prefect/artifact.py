"""The profile summary that a profiled flow run leaves in Prefect's UI, as markdown."""

from __future__ import annotations

from typing import Any

from llqm_core.plugin import (
    FIDELITY_FIGURES,
    STAGE_COLUMNS,
    bottleneck_sentence,
    stage_rows,
    stages_caption,
)

#: The most tasks the artifact lists (those with the most own time): a page of 10^5 rows is
#: what Prefect's UI cannot show.
ARTIFACT_TASKS = 200


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value).replace("|", "\\|")


def _tasks_caption(report: dict[str, Any]) -> list[str]:
    """A sentence when the listing is cut, saying which tasks it keeps."""
    listed, count = len(report["tasks"]), report.get("task_count", len(report["tasks"]))
    if listed >= count:
        return []
    return [f"The {listed} tasks with the most own wall time, of {count}.", ""]


def profile_markdown(report: dict[str, Any]) -> str:
    run = report["run"]
    lines = [
        f"# LLQM profile: {run['name']}",
        "",
        f"Run `{run['id']}`, status **{run['status']}**, wall {_cell(run['wall_s'])} s, trace "
        f"`{run['trace_id']}`.",
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
        stages_caption(report) + ".",
        "",
        "| " + " | ".join(STAGE_COLUMNS) + " |",
        "|---|" + "---:|" * (len(STAGE_COLUMNS) - 1),
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in stage_rows(report)]
    lines += [
        "",
        "## Tasks",
        "",
        *_tasks_caption(report),
        "| task | stage | status | wall s | cpu s | peak RSS MiB | error |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for task in report["tasks"]:
        peak = None if task["peak_rss_bytes"] is None else task["peak_rss_bytes"] / 2**20
        lines.append(
            f"| {_cell(task['name'])} | {_cell(task['stage'])} | {_cell(task['status'])} | "
            f"{_cell(task['wall_s'])} "
            f"| {_cell(task['cpu_s'])} | {_cell(peak)} | {_cell(task['error'])} |"
        )
    return "\n".join(lines) + "\n"
