"""Pauli noise from a calibration snapshot, placed in the circuit itself.

Aer's stabilizer method runs Clifford circuits of 100+ qubits, but accepts only Pauli noise,
and per-qubit errors in an Aer ``NoiseModel`` make it slow (about 50 ms per shot at 100
qubits, see FIELD_NOTES). So the noise goes into the circuit as Pauli channels right after
each gate and as bit flips right before each measurement, which runs several times faster.

More in docs/modules.md (``llqm_qiskit.devices.noise``).
"""

from __future__ import annotations

from itertools import product

from qiskit import QuantumCircuit
from qiskit_aer.noise import pauli_error

from llqm_core import HardwareSnapshot

_NOISELESS = {
    "barrier",
    "delay",
    "reset",
    "measure",
    "id",
    "rz",
}  # rz is virtual on IBM hardware: no error


def depolarizing_pauli_terms(error: float, num_qubits: int) -> list[tuple[str, float]]:
    """The twirled Pauli channel for a gate of average infidelity ``error`` on ``num_qubits`` qubits."""
    d = 2**num_qubits
    strength = min(1.0, max(0.0, error) * d / (d - 1))
    each = strength / d**2
    labels = ["".join(p) for p in product("IXYZ", repeat=num_qubits)]
    identity = "I" * num_qubits
    return [(identity, 1 - each * (d**2 - 1))] + [
        (label, each) for label in labels if label != identity
    ]


class PauliNoise:
    """The channels of one snapshot, built once per (gate, qubits) and reused."""

    def __init__(self, snapshot: HardwareSnapshot) -> None:
        self.snapshot = snapshot
        self._gate_errors = {(g.gate, g.qubits): g.error for g in snapshot.gates if g.error}
        self._channels: dict[tuple, object] = {}

    @property
    def noisy_gates(self) -> int:
        """How many (gate, qubits) of the device carry an error."""
        return len(self._gate_errors)

    def _channel(self, key: tuple, terms: list[tuple[str, float]]):
        if key not in self._channels:
            self._channels[key] = pauli_error(terms).to_instruction()
        return self._channels[key]

    def gate_terms(self, gate: str, qubits: tuple[int, ...]) -> list[tuple[str, float]] | None:
        """The Pauli channel after ``gate`` on ``qubits`` (Qiskit labels: last character on the
        first qubit)."""
        if gate in _NOISELESS:
            return None
        error = self._gate_errors.get((gate, qubits))
        return depolarizing_pauli_terms(error, len(qubits)) if error else None

    def readout_flip(self, qubit: int) -> float | None:
        """The probability that ``qubit`` reads the wrong bit."""
        calibration = self.snapshot.qubits.get(qubit)
        flip = calibration.readout_error if calibration is not None else None
        return min(flip, 0.5) if flip else None

    def after_gate(self, gate: str, qubits: tuple[int, ...]):
        terms = self.gate_terms(gate, qubits)
        return self._channel((gate, qubits), terms) if terms is not None else None

    def before_measure(self, qubit: int):
        flip = self.readout_flip(qubit)
        return (
            self._channel(("readout", qubit), [("I", 1 - flip), ("X", flip)])
            if flip is not None
            else None
        )

    def error_load(self, circuit: QuantumCircuit) -> float:
        """The errors a shot of ``circuit`` (transpiled to the device) expects from the channels
        ``apply`` writes in: each channel's chance of drawing something other than the identity,
        summed. It decides whether Aer's shot branching pays (``costs.trajectories``)."""
        load = 0.0
        for instruction in circuit.data:
            name = instruction.operation.name
            qubits = tuple(circuit.find_bit(q).index for q in instruction.qubits)
            if name == "measure":
                load += self.readout_flip(qubits[0]) or 0.0
            terms = self.gate_terms(name, qubits)
            if terms is not None:
                load += 1.0 - terms[0][1]  # the identity's is the first term
        return load

    def apply(self, circuit: QuantumCircuit) -> QuantumCircuit:
        """``circuit`` (already transpiled to the snapshot's device) with its noise written in."""
        if circuit.num_qubits > self.snapshot.num_qubits:
            raise ValueError(
                f"circuit {circuit.name!r} has {circuit.num_qubits} qubits, more than the "
                f"{self.snapshot.num_qubits} "
                f"of the calibrated device {self.snapshot.backend!r}; transpile it for that device first."
            )
        noisy = circuit.copy_empty_like(name=circuit.name)
        for instruction in circuit.data:
            name = instruction.operation.name
            qubits = tuple(circuit.find_bit(q).index for q in instruction.qubits)
            if name == "measure":
                flip = self.before_measure(qubits[0])
                if flip is not None:
                    noisy.append(flip, instruction.qubits)
            noisy.append(instruction)
            channel = self.after_gate(name, qubits)
            if channel is not None:
                noisy.append(channel, instruction.qubits)
        return noisy
