"""What a run kept of what its devices returned, as the report tells it (``docs/results.md``)."""

from __future__ import annotations

from typing import Any

from ..model.records import KeptResult, TaskRecord
from ..model.units import format_bytes

#: Rows of the results table that are the run's own bookkeeping, not a device's output.
BOOKKEEPING_KINDS = ("llqm.iteration",)


def kept_summary(results: list[KeptResult], tasks: list[TaskRecord]) -> dict[str, Any]:
    """Counts and sizes of the kept results by kind, and what the run's cap left out."""
    kinds: dict[str, dict[str, int]] = {}
    for result in results:
        if result.kind in BOOKKEEPING_KINDS:
            continue
        entry = kinds.setdefault(result.kind, {"count": 0, "stored_bytes": 0, "raw_bytes": 0})
        entry["count"] += 1
        entry["stored_bytes"] += result.meta.get("stored_bytes", len(result.data))
        entry["raw_bytes"] += result.raw_bytes
    not_kept = sum(int(t.metrics.get("results.not_kept_bytes", 0)) for t in tasks)
    return {
        "kinds": kinds,
        "count": sum(e["count"] for e in kinds.values()),
        "stored_bytes": sum(e["stored_bytes"] for e in kinds.values()),
        "raw_bytes": sum(e["raw_bytes"] for e in kinds.values()),
        "not_kept_bytes": not_kept,
        "keep_s": sum(float(t.metrics.get("results.keep_s", 0.0)) for t in tasks),
    }


def kept_sentence(report: dict[str, Any]) -> str | None:
    """What the run kept, in one sentence; None when it kept nothing and left nothing out."""
    kept = report.get("results")
    if not kept or not (kept["count"] or kept["not_kept_bytes"]):
        return None
    parts = ", ".join(f"{e['count']} {kind}" for kind, e in sorted(kept["kinds"].items()))
    sentence = (
        f"Results kept: {kept['count']} ({parts}), {format_bytes(kept['stored_bytes'])} in the "
        f"store ({format_bytes(kept['raw_bytes'])} before compression)"
    )
    if any(kind.endswith(".analysis") for kind in kept["kinds"]):
        sentence += "; `llqm reanalyze` computes the values again from them"
    if kept["not_kept_bytes"]:
        sentence += (
            f"; {format_bytes(kept['not_kept_bytes'])} more were not kept: over the run's "
            "keep_results cap"
        )
    return sentence


#: The configuration key of a run computed again from another's kept results (``llqm reanalyze``).
DERIVED_FROM = "derived_from"


def derived_sentence(report: dict[str, Any]) -> str | None:
    """For a re-analysis, which run it was computed from and with what; None for any other run."""
    config = report["run"].get("config") or {}
    source = config.get(DERIVED_FROM)
    if not source:
        return None
    settings = config.get("reanalysis.settings") or {}
    given = ", ".join(f"{k}={v}" for k, v in settings.items()) or "its own options"
    return (
        f"Re-analysis of run {source[:12]} from its kept results with {given}: no job ran, "
        "and none of that run's costs are counted here"
    )
