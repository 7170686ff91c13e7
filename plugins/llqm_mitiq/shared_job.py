"""Circuits that ride along in the next job: fewer backend jobs, so less per-job overhead and queue.

More in docs/modules.md (``llqm_mitiq.shared_job``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import llqm_core


@dataclass
class _Deferred:
    circuits: list[Any]
    shots: int
    seed: int | None
    on_counts: Callable[[list[dict[str, int]]], None]


class SharedJob:
    def __init__(self, backend: Any, *, max_circuits: int | None = None) -> None:
        self.backend = backend
        self.max_circuits = max_circuits
        self._deferred: list[_Deferred] = []

    def __getattr__(self, name: str) -> Any:
        if name == "backend":  # not set yet (a copy being unpickled): no endless lookup
            raise AttributeError(name)
        return getattr(self.backend, name)

    @property
    def pending(self) -> int:
        """Circuits waiting for the next job."""
        return sum(len(d.circuits) for d in self._deferred)

    def defer(
        self,
        circuits: Sequence[Any],
        shots: int,
        seed: int | None,
        on_counts: Callable[[list[dict[str, int]]], None],
    ) -> None:
        self._deferred.append(_Deferred(list(circuits), shots, seed, on_counts))

    def execute(self, circuits: Any, shots: int, *, seed: int | None = None) -> Any:
        single = not isinstance(circuits, (list, tuple))
        own = [circuits] if single else list(circuits)
        riders = [d for d in self._deferred if self._fits(d, shots, len(own))]
        for alone in [d for d in self._deferred if d not in riders]:
            self._run_alone(alone, shots, len(own))
        self._deferred = []
        if not riders:
            return self.backend.execute(circuits, shots, seed=seed)
        batch = [c for d in riders for c in d.circuits] + own
        counts = self.backend.execute(batch, shots, seed=seed)
        start = 0
        for rider in riders:
            rider.on_counts(counts[start : start + len(rider.circuits)])
            start += len(rider.circuits)
        return counts[start] if single else counts[start:]

    def _fits(self, deferred: _Deferred, shots: int, own: int) -> bool:
        total = self.pending + own
        return deferred.shots == shots and (self.max_circuits is None or total <= self.max_circuits)

    def _run_alone(self, deferred: _Deferred, shots: int, own: int) -> None:
        reason = (
            f"{deferred.shots} shots against the job's {shots}"
            if deferred.shots != shots
            else f"{self.pending + own} circuits, more than the {self.max_circuits} a job takes"
        )
        counts = self.backend.execute(deferred.circuits, deferred.shots, seed=deferred.seed)
        if (task := llqm_core.current_task()) is not None:
            task.annotate({"execute.shared_job_refused": reason})
        deferred.on_counts(counts)
