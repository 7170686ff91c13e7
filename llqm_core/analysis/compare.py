"""Two runs of a pipeline side by side: what changed per stage, and in the error.

The runs may differ by policy, backend, calibration or code; the comparison is by stage name,
so a stage only one run has shows with nothing on the other side.
"""

from __future__ import annotations

from typing import Any

from ..store.profile_store import ProfileStore
from .report import build_report
from .summary import FIDELITY_FIGURES

STAGE_FIELDS = ("tasks", "wall_s", "cpu_s", "qpu_s", "queue_s", "peak_rss_bytes")


def _change(before: Any, after: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"a": before, "b": after}
    if isinstance(before, (int, float)) and isinstance(after, (int, float)):
        entry["difference"] = after - before
        entry["ratio"] = after / before if before else None
    return entry


def compare_runs(store: ProfileStore, run_a: str, run_b: str) -> dict[str, Any]:
    """Per-stage and fidelity differences between two stored runs (b against a)."""
    a, b = build_report(store, run_a), build_report(store, run_b)
    stages = {}
    for stage in sorted(set(a["stages"]) | set(b["stages"])):
        left, right = a["stages"].get(stage, {}), b["stages"].get(stage, {})
        stages[stage] = {
            field: _change(left.get(field), right.get(field)) for field in STAGE_FIELDS
        }
    fidelity = {
        field: _change(a["fidelity"].get(field), b["fidelity"].get(field))
        for field in FIDELITY_FIGURES
        if field in a["fidelity"] or field in b["fidelity"]
    }
    return {
        "a": {
            "id": a["run"]["id"],
            "name": a["run"]["name"],
            "wall_s": a["run"]["wall_s"],
            "bottleneck": a["bottleneck"],
        },
        "b": {
            "id": b["run"]["id"],
            "name": b["run"]["name"],
            "wall_s": b["run"]["wall_s"],
            "bottleneck": b["bottleneck"],
        },
        "wall_s": _change(a["run"]["wall_s"], b["run"]["wall_s"]),
        "stages": stages,
        "fidelity": fidelity,
        "decisions": {
            "a": [d["policy"] for d in a["decisions"]],
            "b": [d["policy"] for d in b["decisions"]],
        },
    }
