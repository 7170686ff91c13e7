"""``modelled_qpu``: the embedded simulation, timed and queued as a real QPU would be.

The counts come from the same Aer simulation as ``aer``. What changes is the cost: the job's
QPU seconds follow IBM's usage estimate from the calibration's gate durations and the shots
(``qpu_time.py``), and before it runs the job waits in a modelled queue, behind other users
and behind this process's own jobs (``queue_model.py``). Both waits happen for real, scaled
by ``time_scale`` (real seconds per modelled second), so a pipeline that submits many small
jobs is measurably slower than one that batches them; the profile records modelled seconds:
``llqm.qpu.time_s`` and ``llqm.queue.time_s`` on the execute task, whose ``execute.queue``
child is the wait itself.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence
from typing import Any

from qiskit import QuantumCircuit

import llqm_core
from llqm_core import HardwareSnapshot
from llqm_core.plugin import checks

from ..devices.qpu_time import QpuTimeModel
from ..devices.queue_model import (
    SHARED_MEAN_JOB_S,
    SHARED_UTILISATION,
    Device,
    QueueModel,
    sleep_modelled,
)
from .aer import AerBackend
from .base import JobOutcome


def keyword_signature(
    base: type, init: Callable[..., None], leave_out: Sequence[str] = ()
) -> inspect.Signature:
    """The keyword options of ``init`` followed by those of ``base`` that it passes on through
    ``**``, as one signature: what the registry checks a file's options against."""
    own = [p for p in inspect.signature(init).parameters.values() if p.kind is p.KEYWORD_ONLY]
    named = {p.name for p in own} | set(leave_out)
    passed = [
        p
        for p in inspect.signature(base).parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.name not in named
    ]
    return inspect.Signature(passed + own)


class ModelledQPU(AerBackend):
    """Options of ``aer`` plus the usage model (``job_overhead_s``, ``rep_delay_s``), the queue
    (``queue_utilisation``, default 0.9, and ``queue_mean_job_s``, default 60: a shared device, see
    ``queue_model.py``; ``queue_seed``), ``time_scale``, and
    ``timeout_s``: a job still queued after that many modelled seconds fails with TimeoutError;
    ``monitor_interval_s`` as for ``aer``."""

    kind = "modelled_qpu"

    def __init__(
        self,
        *,
        job_overhead_s: float = 2.0,
        rep_delay_s: float = 250e-6,
        queue_utilisation: float = SHARED_UTILISATION,
        queue_mean_job_s: float = SHARED_MEAN_JOB_S,
        queue_seed: int | None = 0,
        time_scale: float = 0.01,
        timeout_s: float | None = None,
        **aer_options: Any,
    ) -> None:
        super().__init__(**aer_options)
        if timeout_s is not None:
            checks.positive("timeout_s", timeout_s, "modelled seconds")
        self.timeout_s = timeout_s
        if (
            not isinstance(time_scale, (int, float))
            or isinstance(time_scale, bool)
            or not 0 <= time_scale <= 1
        ):
            raise ValueError(
                "time_scale must be a number from 0 to 1 (real seconds per modelled second), not "
                f"{time_scale!r}."
            )
        self.usage = QpuTimeModel(job_overhead_s=job_overhead_s, rep_delay_s=rep_delay_s)
        self.queue = QueueModel(
            utilisation=queue_utilisation, mean_job_s=queue_mean_job_s, seed=queue_seed
        )
        self.time_scale = float(time_scale)
        self.modelled_device = Device.named(self.name)

    def _wait_in_queue(self) -> float:
        """Wait behind other users, then for the device itself; returns modelled seconds waited."""
        with llqm_core.task("queue", stage="execute.queue") as waiting:
            others = self.queue.others_wait_s()
            if self.timeout_s is not None and others > self.timeout_s:
                sleep_modelled(self.timeout_s, self.time_scale)
                waiting.annotate({"queue.others_s": self.timeout_s, "queue.timed_out": True})
                raise TimeoutError(
                    f"the job waited {self.timeout_s:g} s in the queue of {self.name} without starting "
                    f"(timeout_s; {others:.0f} s of other users' jobs were ahead of it)."
                )
            sleep_modelled(others, self.time_scale)
            own = 0.0
            if not self.modelled_device.lock.acquire(
                blocking=False
            ):  # another job of ours holds the device
                started = time.monotonic()
                self.modelled_device.lock.acquire()
                own = (time.monotonic() - started) / self.time_scale if self.time_scale else 0.0
            waiting.annotate(
                {
                    "queue.others_s": others,
                    "queue.own_jobs_s": own,
                    "queue.utilisation": self.queue.utilisation,
                }
            )
        return others + own

    def run_job(
        self,
        circuits: list[QuantumCircuit],
        shots: int,
        seed: int | None,
        snapshot: HardwareSnapshot,
    ) -> JobOutcome:
        qpu_s, durations, unknown = self.usage.job_seconds(circuits, shots, snapshot)
        queue_s = self._wait_in_queue()
        try:
            started = time.monotonic()
            outcome = self.simulate(circuits, shots, seed, snapshot)
            sleep_modelled(
                qpu_s - (time.monotonic() - started) / self.time_scale if self.time_scale else 0.0,
                self.time_scale,
            )
        finally:
            self.modelled_device.lock.release()
        outcome.metrics |= {
            "qpu.modelled": True,
            "queue.modelled": True,  # the queue is modelled too (queue_model.py)
            "qpu.model.job_overhead_s": self.usage.job_overhead_s,
            "qpu.model.rep_delay_s": self.usage.rep_delay_s,
            "qpu.model.circuit_duration_s": max(durations),
            "qpu.model.unknown_durations": unknown,
            "qpu.model.feed_forward_s": self.usage.feed_forward_s,
            "qpu.model.time_scale": self.time_scale,
        }
        return JobOutcome(
            counts=outcome.counts, qpu_s=qpu_s, queue_s=queue_s, metrics=outcome.metrics
        )


#: A pipeline file's options are checked against ``aer``'s (declared once, in ``AerBackend``)
#: and the usage and queue models' own; ``model_qpu_time`` is left out, as a modelled QPU always
#: models its QPU seconds.
ModelledQPU.__signature__ = keyword_signature(  # type: ignore[attr-defined]
    AerBackend, ModelledQPU.__init__, leave_out=("model_qpu_time",)
)
