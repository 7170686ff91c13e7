"""Waiting for a shared QPU: other users' load as a queue, and this process's own jobs in line.

Other users are modelled as an M/M/1 queue in front of the device: their jobs keep it busy
a fraction ``utilisation`` of the time, each lasting ``mean_job_s`` on average. A job that
arrives then waits 0 s with probability ``1 - utilisation``, and otherwise an exponential
time with mean ``mean_job_s / (1 - utilisation)`` (the M/M/1 waiting-time law; mean wait
``utilisation * mean_job_s / (1 - utilisation)``). Draws are seeded, so a run repeats.

More in docs/modules.md (``llqm_qiskit.devices.queue_model``).
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

from llqm_core.plugin import checks

#: A shared device's load by default (see above for what the figures rest on).
SHARED_UTILISATION = 0.9
SHARED_MEAN_JOB_S = 60.0


@dataclass
class QueueModel:
    utilisation: float = SHARED_UTILISATION
    mean_job_s: float = SHARED_MEAN_JOB_S
    seed: int | None = 0
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.utilisation, (int, float)) or not 0 <= self.utilisation < 1:
            raise ValueError(
                f"queue utilisation must be at least 0 and below 1, not {self.utilisation!r}."
            )
        checks.positive("queue mean_job_s", self.mean_job_s, "seconds")
        self._rng = random.Random(self.seed)

    @property
    def mean_wait_s(self) -> float:
        return self.utilisation * self.mean_job_s / (1 - self.utilisation)

    def others_wait_s(self) -> float:
        """Modelled seconds the next job waits behind other users' jobs."""
        if self._rng.random() >= self.utilisation:
            return 0.0
        return self._rng.expovariate((1 - self.utilisation) / self.mean_job_s)


class Device:
    """One modelled QPU in this process: runs one job at a time, in real (scaled) time."""

    _devices: dict[str, Device] = {}
    _devices_lock = threading.Lock()

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()

    @classmethod
    def named(cls, name: str) -> Device:
        with cls._devices_lock:
            return cls._devices.setdefault(name, cls(name))


def sleep_modelled(seconds: float, time_scale: float) -> None:
    """Spend ``seconds`` of modelled time as ``seconds * time_scale`` of real time."""
    if seconds > 0 and time_scale > 0:
        time.sleep(seconds * time_scale)
