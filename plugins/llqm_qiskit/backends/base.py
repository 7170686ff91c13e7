"""The one interface every execution backend implements, built in or from a third party.

A backend owns a device (a Qiskit ``BackendV2`` that circuits are transpiled for), tells its
current calibration as a ``HardwareSnapshot``, and runs a job: circuits and shots in,
counts out, with the QPU and queue seconds the job cost. ``execute`` wraps a job in an
``execute`` task, so every backend is profiled the same way: the task names the snapshot it
ran against and carries ``llqm.qpu.time_s`` and ``llqm.queue.time_s``.

More in docs/modules.md (``llqm_qiskit.backends.base``).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from qiskit import QuantumCircuit
from qiskit.providers import BackendV2
from qiskit.result import Counts

import llqm_core
from llqm_core import HardwareSnapshot
from llqm_core.plugin import Estimate, ExecutingBackend, check_interval, suppressed

from ..costs import RESULT_BYTES_PER_SHOT_QUBIT
from ..devices.snapshot import backend_name, hardware_snapshot
from . import kept_counts

MAX_SHOTS = 10_000_000
QPU_S_PER_SHOT = 2.5e-4  # rep_delay (250 us by default) dominates a short circuit's shot
_ALWAYS_ALLOWED = {"barrier", "measure", "delay", "reset", "quantum_channel"}


@dataclass
class JobOutcome:
    """What a job gave back: counts per circuit, and what it cost where the backend knows."""

    counts: list[dict[str, int]]
    qpu_s: float | None = None
    queue_s: float | None = None
    metrics: dict[str, Any] = field(default_factory=dict)


def check_shots(shots: Any) -> int:
    if not isinstance(shots, int) or isinstance(shots, bool) or not 1 <= shots <= MAX_SHOTS:
        raise ValueError(f"shots must be a whole number from 1 to {MAX_SHOTS:,}, not {shots!r}.")
    return shots


class QuantumBackend(ExecutingBackend, abc.ABC):
    """Subclass and implement ``run_job``; set ``kind`` to the name you register it under."""

    kind: ClassVar[str] = "backend"
    #: Seconds between the hardware monitor's readings of ``poll_calibration`` (an option of
    #: each built-in backend: ``monitor_interval_s``).
    monitor_interval_s: float = 300.0

    def __init__(self, device: BackendV2, monitor_interval_s: float | None = None) -> None:
        self.device = device
        self._snapshot: HardwareSnapshot | None = None
        if monitor_interval_s is not None:
            self.monitor_interval_s = check_interval(monitor_interval_s)

    @property
    def device_name(self) -> str:
        return backend_name(self.device)

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.device_name}"

    @property
    def num_qubits(self) -> int:
        return self.device.num_qubits

    def snapshot(self) -> HardwareSnapshot:
        """The calibration the next job runs against (read once from the device's target)."""
        if self._snapshot is None:
            self._snapshot = hardware_snapshot(self.device)
        return self._snapshot

    @property
    def calibration_moves(self) -> bool:
        """Whether the calibration can change while a run goes on: only then does the hardware
        monitor watch the backend (a fake device's target never changes)."""
        return False

    def poll_calibration(self) -> HardwareSnapshot:
        """The calibration now, as the hardware monitor reads it on its interval (a device whose
        target never changes, such as a fake one, answers with the snapshot read once)."""
        return self.snapshot()

    def calibration_for_job(self) -> HardwareSnapshot:
        """The calibration a job now starting runs against: the one in force at submission,
        which a policy deciding just before could read too."""
        return self.snapshot()

    def job_finished(self) -> None:
        """A job of this backend ended; a backend with modelled drift lets the hours a job
        takes pass here, so that the next reading (a job's, the monitor's) sees them."""
        return None

    def estimate(
        self,
        qubits: int,
        gates: int,
        shots: int,
        circuits: int = 1,
        clifford: bool | None = None,
        bond: int | None = None,
        *,
        two_qubit_gates: int | None = None,
        model_scale: float = 1.0,
    ) -> Estimate:
        """Time and memory to execute ``circuits`` circuits here, before they exist (see
        ``llqm_core.pipeline.fit``). A QPU's: IBM's documented usage, about 2 s per job plus 250 us
        per shot, and the counts kept; simulators answer with their own model (``bond``: the
        circuit's estimated MPS bond dimension, once it is known; ``two_qubit_gates`` per
        circuit; ``model_scale``: what the backend's ``model_scale`` timed for the compiled
        circuit these circuits derive from)."""
        return Estimate(
            2.0 + circuits * shots * QPU_S_PER_SHOT,
            circuits * shots * qubits * RESULT_BYTES_PER_SHOT_QUBIT,
            f"{circuits:,} circuits x {shots:,} shots on {self.name}",
        )

    @abc.abstractmethod
    def run_job(
        self,
        circuits: list[QuantumCircuit],
        shots: int,
        seed: int | None,
        snapshot: HardwareSnapshot,
    ) -> JobOutcome:
        """Run ``circuits`` (already checked to fit the device) and return their counts."""

    def check_circuits(self, circuits: Sequence[QuantumCircuit]) -> None:
        allowed = set(self.device.target.operation_names) | _ALWAYS_ALLOWED
        for circuit in circuits:
            if not isinstance(circuit, QuantumCircuit):
                raise TypeError(f"{self.name} runs QuantumCircuits, not {type(circuit).__name__}.")
            if circuit.num_qubits > self.num_qubits:
                raise ValueError(
                    f"circuit {circuit.name!r} has {circuit.num_qubits} qubits, more than the "
                    f"{self.num_qubits} of {self.device_name}."
                )
            foreign = sorted(set(circuit.count_ops()) - allowed)
            if foreign:
                raise ValueError(
                    f"circuit {circuit.name!r} uses {', '.join(foreign)}, which {self.device_name} does not "
                    f"run (its gates: {', '.join(sorted(self.device.target.operation_names))}); "
                    "transpile it for the device first."
                )

    def execute(
        self,
        circuits: QuantumCircuit | Sequence[QuantumCircuit],
        shots: int,
        *,
        seed: int | None = None,
    ) -> dict[str, int] | list[dict[str, int]]:
        """Run one job as an ``execute`` task; counts for one circuit, or a list for a list."""
        batch = [circuits] if isinstance(circuits, QuantumCircuit) else list(circuits)
        check_shots(shots)
        if not batch:
            raise ValueError("execute needs at least one circuit.")
        self.check_circuits(batch)
        with llqm_core.task("execute", stage="execute") as handle:
            handle.add_dependency(*handle.run.producers(batch))
            snapshot = self.calibration_for_job()
            handle.use_hardware(snapshot)
            handle.annotate(
                {
                    "backend.name": self.name,
                    "backend.device": self.device_name,
                    "execute.circuits": len(batch),
                    "execute.shots": shots,
                    "result.shots": shots * len(batch),
                }
            )
            with suppressed():  # the job is this task's: instrumentors add no task of their own
                try:
                    outcome = self.run_job(batch, shots, seed, snapshot)
                finally:
                    self.job_finished()
            handle.record_usage(qpu_s=outcome.qpu_s, queue_s=outcome.queue_s)
            handle.annotate(outcome.metrics)
            counts = [
                Counts(c) for c in outcome.counts
            ]  # a dict that can be tracked: later tasks depend on this one
            kept_counts.keep(handle, counts, shots)
            output = counts[0] if isinstance(circuits, QuantumCircuit) else counts
            handle.run.note_output(output, handle.id)
        return output
