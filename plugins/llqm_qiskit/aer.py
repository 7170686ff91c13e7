"""The embedded default: Aer simulating a fake IBM device, with noise from its calibration.

The noise is the snapshot's twirled Pauli channels written into each circuit (see
``noise.py``), which works on every method and keeps the stabilizer method fast. The method
follows the circuit unless one is asked for:

- up to ``exact_max_qubits`` active qubits: ``density_matrix``, exact in the noise;
- Clifford circuits of any width: ``pauli_frames`` (``frames.py``: one noiseless reference
  shot from Aer's stabilizer method, then the Pauli noise of all shots pushed through the
  circuit at once; the same distribution as Aer's stabilizer method with the noise written
  in, 50-100x faster), or ``stabilizer`` for an ideal run;
- other circuits up to ``statevector_max_qubits`` active qubits: ``statevector``, with the
  noise sampled per shot (trajectories);
- anything else is refused with the reason.

Active qubits are the ones a circuit touches: Aer leaves the idle qubits of a circuit
transpiled onto a 156-qubit device out of the simulation. The execute task shows the cost of
the choice: its ``execute.noise`` and ``execute.simulate`` children, the method, and seconds
per shot. A simulator has no queue; its QPU seconds are the simulation time Aer reports.
"""

from __future__ import annotations

import math
import time
from typing import Any

from qiskit import QuantumCircuit
from qiskit_aer import AerSimulator

import llqm_core
from llqm_core import HardwareSnapshot
from llqm_core.model.checks import flag
from llqm_core.pipeline.fit import Estimate

from . import frames
from .backend import JobOutcome, QuantumBackend
from .devices import DEFAULT_DEVICE, fake_device
from .drift import CalibrationDrift
from .estimates import simulation_estimate
from .noise import PauliNoise

METHODS = ("automatic", "density_matrix", "pauli_frames", "stabilizer", "statevector")
_CLIFFORD = {
    "cx",
    "cz",
    "cy",
    "ecr",
    "swap",
    "h",
    "s",
    "sdg",
    "x",
    "y",
    "z",
    "sx",
    "sxdg",
    "id",
    "measure",
    "barrier",
    "reset",
    "delay",
    "quantum_channel",
}
_PHASES = {"rz", "p", "u1"}


def is_clifford(circuit: QuantumCircuit) -> bool:
    """Whether the stabilizer method can run ``circuit``: Clifford gates, phases in steps of pi/2."""
    for instruction in circuit.data:
        operation = instruction.operation
        if operation.name in _CLIFFORD:
            continue
        if operation.name in _PHASES and not operation.is_parameterized():
            quarter_turns = float(operation.params[0]) / (math.pi / 2)
            if abs(quarter_turns - round(quarter_turns)) < 1e-9:
                continue
        return False
    return True


def active_qubits(circuit: QuantumCircuit) -> int:
    touched = {
        q
        for instruction in circuit.data
        if instruction.operation.name != "barrier"
        for q in instruction.qubits
    }
    return len(touched)


def choose_method(
    circuits: list[QuantumCircuit],
    exact_max_qubits: int,
    statevector_max_qubits: int,
    noisy: bool = True,
) -> str:
    width = max(active_qubits(c) for c in circuits)
    if width <= exact_max_qubits:
        return "density_matrix"
    if all(is_clifford(c) for c in circuits):
        return (
            "pauli_frames" if noisy and all(frames.supports(c) for c in circuits) else "stabilizer"
        )
    if width <= statevector_max_qubits:
        return "statevector"
    raise ValueError(
        f"a non-Clifford circuit with {width} active qubits is too wide to simulate here: the embedded default "
        f"simulates non-Clifford circuits of up to {statevector_max_qubits} qubits and Clifford circuits of any width."
    )


class AerBackend(QuantumBackend):
    """``aer``: the embedded default. Options: ``device`` (a fake backend's name, ``fake_fez``),
    ``method``, ``noise`` (False for an ideal run), ``drift`` (CalibrationDrift options)."""

    kind = "aer"

    def __init__(
        self,
        *,
        device: str = DEFAULT_DEVICE,
        method: str = "automatic",
        noise: bool = True,
        drift: dict[str, Any] | CalibrationDrift | None = None,
        exact_max_qubits: int = 10,
        statevector_max_qubits: int = 28,
    ) -> None:
        if not isinstance(method, str) or method not in METHODS:
            raise ValueError(
                f"unknown simulation method {method!r}; choose one of: {', '.join(METHODS)}."
            )
        flag("noise", noise)
        super().__init__(fake_device(device))
        self.method = method
        self.noise = noise
        self.drift = CalibrationDrift(**drift) if isinstance(drift, dict) else drift
        self.exact_max_qubits = exact_max_qubits
        self.statevector_max_qubits = statevector_max_qubits
        self._noise_models: dict[str, PauliNoise] = {}

    def estimate(
        self, qubits: int, gates: int, shots: int, circuits: int = 1, clifford: bool | None = None
    ) -> Estimate:
        """The method ``choose_method`` would take, modelled; a circuit not known to be
        non-Clifford (a QASM file before it is parsed) is taken as Clifford, the cheap case."""
        method = self.method
        if method == "automatic":
            if qubits <= self.exact_max_qubits:
                method = "density_matrix"
            elif clifford is not False:
                method = "stabilizer"
            elif qubits <= self.statevector_max_qubits:
                method = "statevector"
            else:
                raise ValueError(
                    f"a non-Clifford circuit of {qubits} qubits is too wide to simulate here: the "
                    f"embedded default simulates non-Clifford circuits of up to "
                    f"{self.statevector_max_qubits} qubits and Clifford circuits of any width."
                )
        return simulation_estimate(method, qubits, gates, shots, circuits, self.noise)

    def calibration_for_job(self) -> HardwareSnapshot:
        if self.drift is None:
            return self.snapshot()
        return self.drift.advance(self.snapshot())

    def _pauli_noise(self, snapshot: HardwareSnapshot) -> PauliNoise:
        fingerprint = snapshot.fingerprint
        if fingerprint not in self._noise_models:
            self._noise_models = {
                fingerprint: PauliNoise(snapshot)
            }  # keep one: a drifting device moves on
        return self._noise_models[fingerprint]

    def run_job(
        self,
        circuits: list[QuantumCircuit],
        shots: int,
        seed: int | None,
        snapshot: HardwareSnapshot,
    ) -> JobOutcome:
        method = self.method
        if method == "automatic":
            method = choose_method(
                circuits, self.exact_max_qubits, self.statevector_max_qubits, noisy=self.noise
            )
        if method == "pauli_frames":
            return self._sample_frames(circuits, shots, seed, snapshot)
        if self.noise:
            with llqm_core.task("noise into circuits", stage="execute.noise") as step:
                model = self._pauli_noise(snapshot)
                circuits = [model.apply(c) for c in circuits]
                step.annotate(
                    {
                        "noise.channels": sum(
                            c.count_ops().get("quantum_channel", 0) for c in circuits
                        )
                    }
                )
        with llqm_core.task("simulate", stage="execute.simulate") as step:
            started = time.perf_counter()
            result = (
                AerSimulator(method=method).run(circuits, shots=shots, seed_simulator=seed).result()
            )
            elapsed = time.perf_counter() - started
            if not result.success:
                raise RuntimeError(f"Aer failed to run the job: {result.status}")
            metrics = self._method_metrics(method, elapsed, shots * len(circuits))
            step.annotate(metrics)
        counts = [dict(result.get_counts(i)) for i in range(len(circuits))]
        return JobOutcome(counts=counts, qpu_s=float(result.time_taken), metrics=metrics)

    def _sample_frames(
        self,
        circuits: list[QuantumCircuit],
        shots: int,
        seed: int | None,
        snapshot: HardwareSnapshot,
    ) -> JobOutcome:
        with llqm_core.task("simulate", stage="execute.simulate") as step:
            started = time.perf_counter()
            model = self._pauli_noise(snapshot) if self.noise else None
            counts = [
                frames.sample_counts(c, model, shots, None if seed is None else seed + i)
                for i, c in enumerate(circuits)
            ]
            elapsed = time.perf_counter() - started
            metrics = self._method_metrics("pauli_frames", elapsed, shots * len(circuits))
            step.annotate(metrics)
        return JobOutcome(counts=counts, qpu_s=elapsed, metrics=metrics)

    def _method_metrics(self, method: str, elapsed: float, shots: int) -> dict[str, Any]:
        return {
            "execute.method": method,
            "execute.seconds_per_shot": elapsed / shots,
            "execute.noise": self.noise,
        }
