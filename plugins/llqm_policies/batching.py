"""``job_batching``: circuits a step would run as a job of their own ride in the next job instead.

Every job pays a fixed cost on top of its shots: IBM's per-job overhead (seconds of QPU
time) and, far larger on a shared device, a wait in the queue behind other users' jobs. A
readout calibration is two circuits of a few hundred shots: run apart, it costs a whole job;
run as the first circuits of the job that follows (the technique's own), it costs only its
shots. The decision point ``execute.batch`` is asked by a step that could defer a job; the
policy agrees when the job that follows uses the same shots, and caps the shared job at
``max_circuits`` (else the device's own limit, where it states one). Its rationale carries
what a job cost on this backend in the store's earlier runs (median queue wait and QPU
seconds), the saving the decision is expected to bring.
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

import llqm_core
from llqm_core import PolicyDecision
from llqm_core.checks import whole

NAME = "job_batching"


class JobBatching:
    decides = "execute.batch"

    def __init__(self, *, max_circuits: int | None = None, history: int = 50) -> None:
        if max_circuits is not None:
            whole("max_circuits", max_circuits)
        whole("history", history)
        self.max_circuits = max_circuits
        self.history = history

    def job_costs(self, backend_name: str) -> tuple[int, float | None, float | None]:
        """How many earlier jobs ran on ``backend_name``, and their median queue and QPU seconds."""
        active = llqm_core.current_run()
        store = active.store if active is not None else None
        if store is None:
            return 0, None, None
        queue, qpu = [], []
        for run in store.runs(limit=self.history):
            for task in store.tasks(run.id):
                if task.stage == "execute" and task.metrics.get("backend.name") == backend_name and task.end_ns:
                    if task.profile.queue_s is not None:
                        queue.append(task.profile.queue_s)
                    if task.profile.qpu_s is not None:
                        qpu.append(task.profile.qpu_s)
        jobs = max(len(queue), len(qpu))
        return jobs, (statistics.median(queue) if queue else None), (statistics.median(qpu) if qpu else None)

    def decide(self, *, circuits: Sequence[Any], shots: int, next_shots: int | None, backend: Any,
               **_: Any) -> PolicyDecision | None:
        if next_shots is not None and next_shots != shots:
            return None  # one job runs one number of shots: the circuits keep a job of their own
        limit = self.max_circuits or getattr(getattr(backend, "device", None), "max_circuits", None)
        if limit is not None and len(circuits) >= limit:
            return None
        jobs, queue_s, qpu_s = self.job_costs(backend.name)
        measured = (f"; {jobs} earlier job(s) on {backend.name} waited a median {queue_s or 0:.1f} s in the queue and "
                    f"used {qpu_s or 0:.2f} s of QPU time" if jobs else f"; no earlier job on {backend.name} measured yet")
        return PolicyDecision(
            policy=NAME, choice={"share_next_job": True, "max_circuits": limit},
            rationale=f"{len(circuits)} circuit(s) of {shots} shots go into the next job instead of one of their own"
                      + measured,
            inputs={"circuits": len(circuits), "shots": shots, "max_circuits": limit, "jobs_measured": jobs,
                    "median_queue_s": queue_s, "median_qpu_s": qpu_s},
        )
