"""The ``sample.basic`` backend: noiseless runs on Qiskit's own ``BasicSimulator``.

It subclasses ``llqm_qiskit.backends.base.QuantumBackend``, the one interface LLQM's backends
implement: the base class owns ``device`` (the ``BackendV2`` circuits are transpiled for),
reads the device's ``Target`` into a ``HardwareSnapshot`` (``snapshot()``), checks circuits
and wraps every job in an ``execute`` task with the snapshot, ``backend.name`` and the
QPU/queue seconds. A subclass sets ``kind`` and implements ``run_job``.

The device here is ``GenericBackendV2``: a small made-up device with a seeded, made-up
calibration, so the snapshot and the transpile are the same from run to run. The simulator
ignores that calibration (a noiseless run); its QPU seconds are the simulation time and it
has no queue.
"""

from __future__ import annotations

import time

from llqm_qiskit.backends.base import JobOutcome, QuantumBackend
from qiskit import QuantumCircuit
from qiskit.providers.basic_provider import BasicSimulator
from qiskit.providers.fake_provider import GenericBackendV2

from llqm_core import HardwareSnapshot

MAX_QUBITS = getattr(BasicSimulator, "MAX_QUBITS_STATEVECTOR", 24)


class BasicBackend(QuantumBackend):
    """``sample.basic``: options ``num_qubits`` (of the generic device, 2 to 24; default 5) and
    ``device_seed`` (the seed of its made-up calibration; default 0)."""

    kind = "sample.basic"

    def __init__(self, *, num_qubits: int = 5, device_seed: int = 0) -> None:
        if (
            isinstance(num_qubits, bool)
            or not isinstance(num_qubits, int)
            or not 2 <= num_qubits <= MAX_QUBITS
        ):
            raise ValueError(
                f"num_qubits must be a whole number from 2 to {MAX_QUBITS}, not {num_qubits!r}."
            )
        if isinstance(device_seed, bool) or not isinstance(device_seed, int) or device_seed < 0:
            raise ValueError(
                f"device_seed must be a whole number of 0 or more, not {device_seed!r}."
            )
        super().__init__(GenericBackendV2(num_qubits=num_qubits, seed=device_seed))
        self.simulator = BasicSimulator()

    def run_job(
        self,
        circuits: list[QuantumCircuit],
        shots: int,
        seed: int | None,
        snapshot: HardwareSnapshot,
    ) -> JobOutcome:
        started = time.perf_counter()
        result = self.simulator.run(circuits, shots=shots, seed_simulator=seed).result()
        elapsed = time.perf_counter() - started
        if not result.success:
            raise RuntimeError(f"BasicSimulator failed to run the job: {result.status}")
        simulated_s = float(result.time_taken) if result.time_taken is not None else elapsed
        counts = [dict(result.get_counts(i)) for i in range(len(circuits))]
        return JobOutcome(
            counts=counts,
            queue_s=0.0,  # a simulator's seconds are CPU time, not QPU seconds: no qpu_s
            metrics={
                "execute.simulator": self.simulator.name,
                "execute.noise": False,
                "execute.seconds_per_shot": simulated_s / (shots * len(circuits)),
            },
        )
