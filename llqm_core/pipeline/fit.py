"""Will the run fit? Each step's estimated time and peak memory, compared with the limits.

More in docs/modules.md (``llqm_core.pipeline.fit``).
"""

from __future__ import annotations

import math
import os
import re
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psutil

from ..hooks.contracts import CostModel, Estimate
from ..model.errors import UserError
from ..model.units import format_bytes, format_seconds
from ..model.warmup import Warmup
from ..runtime.memory import current_rss
from ..runtime.warmup import paid
from ..store.profile_store import ProfileStore, store_exists
from . import registries, sections
from .shapes import pipeline_shape

MEMORY_LIMIT_ENV = "LLQM_MEMORY_LIMIT"
HISTORY_MODEL = "cost_model"
_UNITS = {"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12}
_UNITS |= {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}

#: How far a modelled figure may lie from the measurement, as a factor either way, from
#: ``bench/predict.py --every`` on every example and corpus file that runs in under 2 minutes,
#: without history (docs/benchmarks.md, "One estimator"): wall 0.44-1.64x of 41 runs at load
#: 4.7-12.6 (x3, the target, kept: the load moves it most), peak memory 0.78-0.99x.
MODELLED_WALL_ERROR = 3.0
MODELLED_PEAK_ERROR = 1.5
#: The least a figure from history can be off: what two runs of one file differ by on a shared
#: machine (docs/pipelines.md, "Expected errors"); the runs' own spread widens it.
HISTORY_ERROR_FLOOR = 1.25


@dataclass(frozen=True)
class StepEstimate:
    step: str
    wall_s: float  # its work and the warm-ups charged to it, at the machine's load
    peak_bytes: float  # the process's resident memory at the step's peak
    basis: str
    warmup_s: float = 0.0  # the part of wall_s that is warm-up, paid once per process
    warmups: tuple[Warmup, ...] = ()  # the one-time costs it needs, paid already or not
    warmup_bytes: float = 0.0  # the part of peak_bytes that warm-ups not paid yet leave resident
    #: a peak measured by earlier runs, which holds what their warm-ups left resident already
    peak_measured: bool = False
    #: the expected error of ``wall_s`` and ``peak_bytes``: a factor either way (x2: from half
    #: to twice the figure), from the model's measured spread or the history's
    wall_error: float = MODELLED_WALL_ERROR
    peak_error: float = MODELLED_PEAK_ERROR

    def figures(self) -> dict[str, Any]:
        """The step's figures as ``llqm predict --json`` and ``llqm run --check --json`` give them."""
        return {
            "step": self.step,
            "wall_s": self.wall_s,
            "wall_error": self.wall_error,
            "warmup_s": self.warmup_s,
            "peak_bytes": self.peak_bytes,
            "peak_error": self.peak_error,
            "basis": self.basis,
        }


@dataclass(frozen=True)
class Fit:
    steps: list[StepEstimate]
    memory_limit_bytes: float
    max_s: float | None
    slowdown: float = 1.0  # the machine's load when estimated (``machine_slowdown``)

    @property
    def wall_s(self) -> float:
        return sum(s.wall_s for s in self.steps)

    def trials_s(self, trials: int) -> float:
        """``[run] repeat = trials`` in one process: the warm-ups are paid by the first only."""
        return self.wall_s + (trials - 1) * sum(s.wall_s - s.warmup_s for s in self.steps)

    def settled(self) -> Fit:
        """The fit with the warm-ups charged again: those the check itself has paid since it
        estimated (a pass manager built to inspect the circuit) are no longer the run's."""
        steps = [
            replace(
                s,
                wall_s=s.wall_s - s.warmup_s,
                warmup_s=0.0,
                peak_bytes=s.peak_bytes - s.warmup_bytes,
                warmup_bytes=0.0,
            )
            for s in self.steps
        ]
        return replace(self, steps=_charge_warmups(steps, self.slowdown))

    @property
    def peak(self) -> StepEstimate | None:
        return max(self.steps, key=lambda s: s.peak_bytes, default=None)

    @property
    def wall_error(self) -> float:
        """The whole run's expected error, a factor either way, from its steps': a sum of
        figures each within its factor lies within these bounds (a small step's wide error
        moves the sum little)."""
        total = self.wall_s
        if total <= 0:
            return max((s.wall_error for s in self.steps), default=1.0)
        high = sum(s.wall_s * s.wall_error for s in self.steps) / total
        low = total / sum(s.wall_s / s.wall_error for s in self.steps)
        errors = [s.wall_error for s in self.steps]  # within theirs, rounding aside
        return min(max(high, low, min(errors)), max(errors))

    @property
    def peak_error(self) -> float:
        """The peak's expected error: the peak step's, or more where another step's figure
        could, within its own error, rise above it."""
        peak = self.peak
        if peak is None or peak.peak_bytes <= 0:
            return 1.0
        above = max(s.peak_bytes * s.peak_error for s in self.steps) / peak.peak_bytes
        return max(peak.peak_error, above)

    def figures(self) -> dict[str, Any]:
        """The whole estimate as data: what ``llqm predict --json`` and ``llqm run --check
        --json`` print, the same for one file and store."""
        peak = self.peak
        return {
            "wall_s": self.wall_s,
            "wall_error": self.wall_error,
            "peak_bytes": peak.peak_bytes if peak else None,
            "peak_error": self.peak_error,
            "peak_step": peak.step if peak else None,
            "memory_limit_bytes": self.memory_limit_bytes,
            "max_s": self.max_s,
            "slowdown": self.slowdown,
            "steps": [s.figures() for s in self.steps],
        }

    def summary(self) -> str:
        peak = self.peak
        memory = (
            f"{format_bytes(int(peak.peak_bytes))} (within {error_text(self.peak_error)})"
            if peak
            else "-"
        )
        busy = f", x{self.slowdown:.1f} for the machine's load" if self.slowdown > 1.05 else ""
        return (
            f"estimated {format_seconds(self.wall_s)} (within {error_text(self.wall_error)}){busy} "
            f"and {memory} at the peak, of {format_bytes(int(self.memory_limit_bytes))} available"
        )


def error_text(factor: float) -> str:
    """An expected error in words: ``x1.5`` (from the figure over 1.5 to 1.5 times it)."""
    return f"x{factor:.2g}"


#: What a run costs outside its steps' own work, whatever they are: the run opened and closed in
#: the store, its tasks and figures written, the monitor's readings (CPU seconds; the measurement
#: in docs/pipelines.md, "Will it fit"); charged to ``postprocess``, its last step.
RUN_OVERHEAD_S = 0.05


def run_overhead(plan: dict[str, Any]) -> Estimate:
    return Estimate(RUN_OVERHEAD_S, 0.0, "the run's figures and its record in the store")


#: How long the check samples this machine's speed, and for how long a sample stands.
SAMPLE_S = 0.2
SAMPLES = 5
SAMPLE_KEPT_S = 10.0
_sampled: list[tuple[float, float]] = []  # (when, slowdown) of the last sample


def machine_slowdown() -> float:
    """How much longer than on a quiet machine CPU-bound work takes now, at least 1: the
    geometric mean of two readings, each of which errs alone. The 1-minute load average over
    the cores counts runnable threads, niced ones too; a short busy loop's wall time over its
    CPU time sees the share the scheduler gives now, but only for a moment (docs/pipelines.md,
    "How long it will take"). Sampled once per ``SAMPLE_KEPT_S``."""
    now = time.monotonic()
    if _sampled and now - _sampled[0][0] < SAMPLE_KEPT_S:
        return _sampled[0][1]
    shares = []
    for _ in range(SAMPLES):  # the median of a few: one can fall in a stall of the whole machine
        wall, cpu = time.perf_counter(), time.thread_time()
        while time.perf_counter() - wall < SAMPLE_S / SAMPLES:
            pass
        shares.append((time.thread_time() - cpu) / (time.perf_counter() - wall))
    sampled = 1.0 / max(statistics.median(shares), 0.01)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    loaded = os.getloadavg()[0] / max(cores, 1)
    # a fair share is at least 1 / (loaded + 1) of a core: a lower reading is a stall of the
    # whole machine, or this process niced (docs/pipelines.md, "How long it will take")
    sampled = min(sampled, loaded + 1.0)
    slowdown = math.sqrt(max(1.0, sampled) * max(1.0, loaded))
    _sampled[:] = [(now, slowdown)]
    return slowdown


def _charge_warmups(steps: list[StepEstimate], slowdown: float) -> list[StepEstimate]:
    """Each warm-up not paid yet goes to the first step that needs it, once; what it leaves
    resident (an import's modules) stays on that step's peak and every later one's."""
    seen: set[tuple[str, str]] = set()
    charged = []
    held = 0.0
    for step in steps:
        due = 0.0
        for cost in step.warmups:
            if (cost.kind, cost.key) not in seen and not paid(cost):
                due += cost.seconds * slowdown
                held += cost.memory_bytes
            seen.add((cost.kind, cost.key))
        charged.append(
            replace(
                step,
                wall_s=step.wall_s + due,
                warmup_s=due,
                peak_bytes=step.peak_bytes + (0.0 if step.peak_measured else held),
                warmup_bytes=0.0 if step.peak_measured else held,
            )
        )
    return charged


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


def _history(
    pipeline: Any, plan: dict[str, Any], store: str | None
) -> tuple[dict[str, dict[str, float]], int]:
    if not store_exists(store) or HISTORY_MODEL not in registries.registered("policy"):
        return {}, 0
    model = registries.create("policy", HISTORY_MODEL)
    if not isinstance(model, CostModel):
        return {}, 0
    shape = pipeline_shape(pipeline.config, [step.name for step in pipeline.steps])
    return model.predict_covered(
        sections.plan_features(plan), ProfileStore(store, readonly=True), shape, pipeline.config
    )


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
    modelled: list[tuple[str, Estimate]],
    history: dict[str, dict[str, float]],
    runs: int,
    slowdown: float = 1.0,
) -> list[StepEstimate]:
    """The models' figures (times the machine's load), a step's time from the history where it
    has one (measured as it was, warm-ups left out) and its peak where the history's is higher,
    each with its expected error, and the warm-ups still to pay."""
    base = current_rss()
    steps = []
    for name, found in modelled:
        wall, peak, basis = found.wall_s * slowdown, base + found.memory_bytes, found.basis
        wall_error, peak_error, measured = MODELLED_WALL_ERROR, MODELLED_PEAK_ERROR, False
        known = history.get(name)
        if known is not None:
            wall, basis = known["wall_s"], f"{basis}; time from {runs} earlier runs"
            wall_error = _history_error(known.get("wall_s_error"), wall_error)
            measured = known["peak_rss_bytes"] > peak
            if measured:
                peak = known["peak_rss_bytes"]
                peak_error = _history_error(known.get("peak_rss_bytes_error"), peak_error)
        steps.append(
            StepEstimate(
                name,
                wall,
                peak,
                basis,
                warmups=found.warmups,
                wall_error=wall_error,
                peak_error=peak_error,
                peak_measured=measured,
            )
        )
    return _charge_warmups(steps, slowdown)


def _history_error(spread: float | None, modelled: float) -> float:
    """A figure from history is off by its runs' spread around the fit, at least the floor; with
    too few runs to show a spread, by the model's error."""
    return modelled if spread is None else max(HISTORY_ERROR_FLOOR, spread)


def estimate(pipeline: Any, store: str | None = None) -> list[StepEstimate]:
    """Each step's estimate, in order, for the pipeline as its file describes it."""
    plan, modelled = _modelled(pipeline)
    return _combined(modelled, *_history(pipeline, plan, store))


class TooLong(UserError):
    """A run refused for its time (``[run] max_minutes``), with the fit it was refused on: the
    file's check names, after it, the changes that would cut it (``cheaper``)."""

    def __init__(self, message: str, fit: Fit) -> None:
        super().__init__(message)
        self.fit = fit


def plan(pipeline: Any) -> dict[str, Any]:
    """What the steps' estimates put in the plan: the circuit's size, compiled and planned."""
    return _modelled(pipeline)[0]


def refit(pipeline: Any, store: str | None, like: Fit) -> Fit:
    """A changed pipeline estimated as ``like`` was: the same machine load and limits, its
    own models and the history that covers it, less the warm-ups paid since."""
    found, modelled = _modelled(pipeline)
    steps = _combined(modelled, *_history(pipeline, found, store), like.slowdown)
    return Fit(steps, like.memory_limit_bytes, like.max_s, like.slowdown).settled()


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
    slowdown = machine_slowdown()
    fit = Fit(
        _combined(modelled, *_history(pipeline, plan, store), slowdown), limit, max_s, slowdown
    )
    if force:
        return fit
    _refuse_memory(fit)
    if fit.max_s is not None and fit.wall_s > fit.max_s:
        longest = max(fit.steps, key=lambda s: s.wall_s)
        raise TooLong(
            f"refused: the run is estimated to take {format_seconds(fit.wall_s)} (step "
            f"{longest.step!r}: {format_seconds(longest.wall_s)}, {longest.basis}), more than "
            f"[run] max_minutes = {max_minutes:g}; make the run smaller, raise max_minutes, "
            "or pass --force.",
            fit,
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
