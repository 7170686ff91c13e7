"""``job_batching``: circuits a step would run as a job of their own ride in the next job instead.

More in docs/modules.md (``llqm_policies.batching``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from llqm_core import PolicyDecision
from llqm_core.plugin import checks, kept_default, recent_tasks

NAME = "job_batching"


class JobBatching:
    name = NAME
    decides = "execute.batch"  # the decision point llqm_mitiq declares

    def __init__(
        self, *, max_circuits: int | None = None, max_job_s: float | None = None, history: int = 50
    ) -> None:
        if max_circuits is not None:
            checks.whole("max_circuits", max_circuits)
        if max_job_s is not None:
            checks.positive("max_job_s", max_job_s, "QPU seconds")
        checks.whole("history", history)
        self.max_circuits = max_circuits
        self.max_job_s = max_job_s
        self.history = history

    def earlier_jobs(self, backend_name: str) -> list[Any]:
        """The store's finished ``execute`` tasks on ``backend_name``, newest runs first."""
        return [
            task
            for task in recent_tasks("execute", self.history)
            if task.metrics.get("backend.name") == backend_name
        ]

    @staticmethod
    def qpu_line(jobs: list[Any]) -> tuple[float, float] | None:
        """QPU seconds of a job as ``fixed + per_circuit * circuits``, fitted on ``jobs``."""
        points = [
            (t.metrics["execute.circuits"], t.profile.qpu_s)
            for t in jobs
            if t.profile.qpu_s is not None and t.metrics.get("execute.circuits")
        ]
        if len({circuits for circuits, _ in points}) < 2:
            # one size of job measured: the fixed part and the per-circuit part cannot be told apart
            return None
        slope, intercept = statistics.linear_regression(
            [c for c, _ in points], [s for _, s in points]
        )
        return (max(intercept, 0.0), slope) if slope > 0 else None

    def decide(
        self, *, circuits: Sequence[Any], shots: int, next_shots: int | None, backend: Any, **_: Any
    ) -> PolicyDecision:
        if next_shots is not None and next_shots != shots:
            return kept_default(
                NAME,
                f"the next job runs {next_shots} shots and these circuits {shots}: "
                "one job runs one number of shots",
            )
        limit = self.max_circuits or getattr(getattr(backend, "device", None), "max_circuits", None)
        jobs = self.earlier_jobs(backend.name)
        max_job_s = self.max_job_s
        line = self.qpu_line(jobs) if max_job_s is not None else None
        if line is not None and max_job_s is not None:
            fixed, per_circuit = line
            fitting = max(0, int((max_job_s - fixed) // per_circuit))
            limit = fitting if limit is None else min(limit, fitting)
        if limit is not None and len(circuits) >= limit:
            return kept_default(
                NAME, f"{len(circuits)} circuits already fill a job (at most {limit} per job)"
            )
        queue = [t.profile.queue_s for t in jobs if t.profile.queue_s is not None]
        qpu = [t.profile.qpu_s for t in jobs if t.profile.qpu_s is not None]
        queue_s, qpu_s = (
            (statistics.median(queue) if queue else None),
            (statistics.median(qpu) if qpu else None),
        )
        measured = (
            f"; {len(jobs)} earlier job(s) on {backend.name} waited a median {queue_s or 0:.1f} s "
            "in the queue "
            f"and used {qpu_s or 0:.2f} s of QPU time"
            if jobs
            else f"; no earlier job on {backend.name} measured yet"
        )
        if line is not None:
            measured += (
                f"; measured {line[0]:.2f} s + {line[1]:.3f} s per circuit, so at most {limit} circuits "
                f"keep a job under {self.max_job_s:g} s"
            )
        return PolicyDecision(
            policy=NAME,
            choice={"share_next_job": True, "max_circuits": limit},
            rationale=(
                f"{len(circuits)} circuit(s) of {shots} shots go into the next job instead "
                "of one of their own"
            )
            + measured,
            inputs={
                "circuits": len(circuits),
                "shots": shots,
                "max_circuits": limit,
                "jobs_measured": len(jobs),
                "median_queue_s": queue_s,
                "median_qpu_s": qpu_s,
                "max_job_s": self.max_job_s,
                "job_fixed_qpu_s": line[0] if line else None,
                "qpu_s_per_circuit": line[1] if line else None,
            },
        )
