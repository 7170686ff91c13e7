"""Will the run fit? Each step's estimated time and peak memory, compared with the limits.

More in docs/modules.md (``llqm_core.pipeline.fit``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from ..hooks.contracts import CostModel, Estimate
from ..model.errors import UserError
from ..model.units import format_bytes, format_seconds
from ..runtime.memory import current_rss
from ..store.profile_store import ProfileStore, store_exists
from . import registries, sections

MEMORY_LIMIT_ENV = "LLQM_MEMORY_LIMIT"
HISTORY_MODEL = "cost_model"
_UNITS = {"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12}
_UNITS |= {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


@dataclass(frozen=True)
class StepEstimate:
    step: str
    wall_s: float
    peak_bytes: float  # the process's resident memory at the step's peak
    basis: str


@dataclass(frozen=True)
class Fit:
    steps: list[StepEstimate]
    memory_limit_bytes: float
    max_s: float | None

    @property
    def wall_s(self) -> float:
        return sum(s.wall_s for s in self.steps)

    @property
    def peak(self) -> StepEstimate | None:
        return max(self.steps, key=lambda s: s.peak_bytes, default=None)

    def summary(self) -> str:
        peak = self.peak
        memory = format_bytes(int(peak.peak_bytes)) if peak else "-"
        return (
            f"estimated {format_seconds(self.wall_s)} and {memory} at the peak, "
            f"of {format_bytes(int(self.memory_limit_bytes))} available"
        )


def parse_bytes(text: str, source: str) -> int:
    """``500MB``, ``2GiB`` or a number of bytes."""
    match = re.fullmatch(r"\s*([0-9.]+(?:e[0-9]+)?)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise UserError(
            f"{source}{text!r} is not an amount of memory; write bytes or a number with "
            "a unit such as 500MB or 2GiB."
        )
    return int(float(match.group(1)) * _UNITS[unit])


def memory_limit() -> int:
    """What this process may grow to: its own memory plus what the machine (or its cgroup) has
    free, lowered by ``$LLQM_MEMORY_LIMIT`` where that is set."""
    limit = psutil.virtual_memory().available + current_rss()
    cgroup = Path("/sys/fs/cgroup/memory.max")
    if cgroup.exists() and cgroup.read_text().strip().isdigit():
        limit = min(limit, int(cgroup.read_text()))
    raw = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if raw:
        limit = min(limit, parse_bytes(raw, f"{MEMORY_LIMIT_ENV}="))
    return limit


def _history(plan: dict[str, Any], store: str | None) -> tuple[dict[str, dict[str, float]], int]:
    if not store_exists(store) or HISTORY_MODEL not in registries.registered("policy"):
        return {}, 0
    model = registries.create("policy", HISTORY_MODEL)
    if not isinstance(model, CostModel):
        return {}, 0
    return model.predict(sections.plan_features(plan), ProfileStore(store, readonly=True))


def _modelled(pipeline: Any) -> tuple[dict[str, Any], list[tuple[str, Estimate]]]:
    plan: dict[str, Any] = {"backend": pipeline.backend, **pipeline.data}
    modelled: list[tuple[str, Estimate]] = []
    for step in pipeline.steps:
        answer = step.run.estimate
        if answer is None:
            continue
        try:
            found = answer(plan)
        except ValueError as exc:
            raise UserError(f"in [{step.section}]: {exc}") from None
        if found is not None:
            modelled.append((step.name, found))
    return plan, modelled


def _combined(
    modelled: list[tuple[str, Estimate]], history: dict[str, dict[str, float]], runs: int
) -> list[StepEstimate]:
    base = current_rss()
    steps = []
    for name, found in modelled:
        wall, peak, basis = found.wall_s, base + found.memory_bytes, found.basis
        known = history.get(name)
        if known is not None:
            wall, peak = known["wall_s"], max(peak, known["peak_rss_bytes"])
            basis = f"{basis}; time from {runs} earlier runs"
        steps.append(StepEstimate(name, wall, peak, basis))
    return steps


def estimate(pipeline: Any, store: str | None = None) -> list[StepEstimate]:
    """Each step's estimate, in order, for the pipeline as its file describes it."""
    plan, modelled = _modelled(pipeline)
    return _combined(modelled, *_history(plan, store))


def check_fit(
    pipeline: Any, store: str | None = None, force: bool = False, max_minutes: float | None = None
) -> Fit:
    """The run's estimates; refused with one sentence when it cannot fit, unless ``force``.

    The models alone are compared with the memory first: the history can only raise a peak,
    and a large store takes a while to read."""
    plan, modelled = _modelled(pipeline)
    limit, max_s = memory_limit(), max_minutes * 60 if max_minutes else None
    if not force:
        _refuse_memory(Fit(_combined(modelled, {}, 0), limit, max_s))
    fit = Fit(_combined(modelled, *_history(plan, store)), limit, max_s)
    if force:
        return fit
    _refuse_memory(fit)
    if fit.max_s is not None and fit.wall_s > fit.max_s:
        longest = max(fit.steps, key=lambda s: s.wall_s)
        raise UserError(
            f"refused: the run is estimated to take {format_seconds(fit.wall_s)} (step "
            f"{longest.step!r}: {format_seconds(longest.wall_s)}, {longest.basis}), more than "
            f"[run] max_minutes = {max_minutes:g}; make the run smaller, raise max_minutes, "
            "or pass --force."
        )
    return fit


def _refuse_memory(fit: Fit) -> None:
    peak = fit.peak
    if peak is not None and peak.peak_bytes > fit.memory_limit_bytes:
        raise UserError(
            f"refused: step {peak.step!r} is estimated to need "
            f"{format_bytes(int(peak.peak_bytes))} "
            f"of memory ({peak.basis}), more than the {format_bytes(int(fit.memory_limit_bytes))} "
            "available to this process; make the run smaller, or pass --force to run it anyway."
        )
