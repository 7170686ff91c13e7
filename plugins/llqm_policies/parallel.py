"""``parallel_transpile``: transpile independent circuits in worker processes when it pays.

How long a batch would take serially is predicted from the store's earlier ``transpile``
tasks (their seconds per gate, median); when that exceeds ``min_serial_s`` and the batch has
more than one circuit, the batch is transpiled by ``min(circuits, max_workers, CPUs)`` worker
processes. Below it, starting processes would cost more than it saves, so the batch stays in
process, where every pass-manager stage is its own task.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from typing import Any

from llqm_core import PolicyDecision
from llqm_core.plugin import checks, kept_default, recent_tasks

NAME = "parallel_transpile"


class ParallelTranspile:
    name = NAME
    decides = "transpile.parallel"  # the decision point llqm_qiskit declares

    def __init__(
        self, *, max_workers: int | None = None, min_serial_s: float = 1.0, history: int = 50
    ) -> None:
        if max_workers is not None:
            checks.whole("max_workers", max_workers)
        self.max_workers = max_workers or os.cpu_count() or 1
        self.min_serial_s = checks.number("min_serial_s", min_serial_s, 0, "seconds")
        self.history = history

    def seconds_per_gate(self) -> float | None:
        """The median transpile seconds per input gate of the store's recent transpile tasks."""
        rates = [
            task.profile.wall_s / task.metrics["transpile.input_size"]
            for task in recent_tasks("transpile", self.history)
            if task.metrics.get("transpile.input_size")
            and "transpile.processes" not in task.metrics
        ]
        return statistics.median(rates) if rates else None

    def decide(self, *, circuits: Sequence[Any], **_: Any) -> PolicyDecision:
        if len(circuits) < 2:
            return kept_default(
                NAME, f"a batch of {len(circuits)} circuit has nothing to share out"
            )
        rate = self.seconds_per_gate()
        if rate is None:
            return kept_default(
                NAME, "the store has no earlier transpile task to predict the batch's time from"
            )
        gates = sum(len(c.data) for c in circuits)
        serial = rate * gates
        workers = min(len(circuits), self.max_workers, os.cpu_count() or 1)
        if serial < self.min_serial_s or workers < 2:
            why = (
                f"{len(circuits)} circuits of {gates} gates would take about {serial:.2f} s serially, "
                f"under min_serial_s = {self.min_serial_s:g} s"
                if workers >= 2
                else "only one worker process is available"
            )
            return kept_default(NAME, why, predicted_serial_s=serial, seconds_per_gate=rate)
        return PolicyDecision(
            policy=NAME,
            choice={"processes": workers},
            rationale=(
                f"{len(circuits)} circuits of {gates} gates would take about {serial:.2f} s serially "
                f"({rate * 1e6:.1f} us per gate, from earlier runs): {workers} worker processes"
            ),
            inputs={
                "circuits": len(circuits),
                "gates": gates,
                "seconds_per_gate": rate,
                "predicted_serial_s": serial,
            },
        )
