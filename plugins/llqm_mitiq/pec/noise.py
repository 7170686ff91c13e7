"""PEC's noise model from the calibration: the local depolarizing levels its gates' errors imply
on the qubits a compiled circuit uses, and Mitiq's representations at those levels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from qiskit import QuantumCircuit

if TYPE_CHECKING:  # Mitiq and Cirq are imported where PEC runs: loading the plugin takes no seconds
    from mitiq.pec.types import OperationRepresentation

#: Mitiq's local depolarizing representation needs ``4p/3 < 1``.
MAX_NOISE_LEVEL = 0.75
#: The preferred one-qubit gate whose calibrated error stands for one-qubit gates.
ONE_QUBIT_GATES = ("sx", "x")
_NOT_GATES = {"barrier", "measure", "delay", "reset"}


@dataclass
class NoiseLevels:
    """Mitiq noise levels by gate arity, and the calibration figures they came from."""

    one_qubit: float
    two_qubit: float
    source: str  # "option" or "calibration"
    gate_error_1q: float | None = None
    gate_error_2q: float | None = None
    qubits: list[int] = field(default_factory=list)
    couplers: list[tuple[int, int]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def for_arity(self, qubits: int) -> float:
        return self.one_qubit if qubits == 1 else self.two_qubit

    def metrics(self) -> dict[str, Any]:
        metrics: dict[str, Any] = {
            "pec.noise_level_1q": self.one_qubit,
            "pec.noise_level_2q": self.two_qubit,
            "pec.noise_source": self.source,
        }
        if self.gate_error_1q is not None:
            metrics["pec.gate_error_1q"] = self.gate_error_1q
        if self.gate_error_2q is not None:
            metrics["pec.gate_error_2q"] = self.gate_error_2q
        if self.qubits:
            metrics["pec.physical_qubits"] = list(self.qubits)
        if self.couplers:
            metrics["pec.couplers"] = [f"{a}-{b}" for a, b in self.couplers]
        return metrics


def one_qubit_level(error: float) -> float:
    """Mitiq's local depolarizing level for a one-qubit gate of average infidelity ``error``."""
    return 1.5 * error


def two_qubit_level(error: float) -> float:
    """Mitiq's local depolarizing level (per qubit) with the process fidelity of a two-qubit
    depolarizing gate of average infidelity ``error``; infinite when nothing that strong is local."""
    remaining = 1.0 - 1.25 * error
    return 1.0 - math.sqrt(remaining) if remaining > 0 else math.inf


def physical_qubits(compiled: QuantumCircuit) -> list[int]:
    """The physical qubit of each logical qubit (from ``compiled.layout``), or the touched ones
    without a layout."""
    layout = getattr(compiled, "layout", None)
    if layout is not None:
        return list(layout.initial_index_layout(filter_ancillas=True))
    return sorted(
        {
            compiled.find_bit(q).index
            for i in compiled.data
            if i.operation.name not in _NOT_GATES
            for q in i.qubits
        }
    )


def calibrated_noise_levels(compiled: QuantumCircuit, snapshot: Any) -> NoiseLevels:
    """Noise levels for the logical gates from the calibration of what ``compiled`` runs on."""
    errors = {(g.gate, tuple(g.qubits)): g.error for g in snapshot.gates}
    used_2q: dict[tuple[str, tuple[int, ...]], float] = {}
    for instruction in compiled.data:
        operation = instruction.operation
        if operation.num_qubits == 2 and operation.name not in _NOT_GATES:
            pair = tuple(compiled.find_bit(q).index for q in instruction.qubits)
            error = errors.get((operation.name, pair))
            if error is not None:
                used_2q[(operation.name, pair)] = error
    problems = [
        f"PEC: circuit {compiled.name!r} uses {gate} on qubits {q[0]}-{q[1]}, whose calibrated error is "
        f"{error:g} (out of service): no noise model can cancel that; choose another layout."
        for (gate, q), error in sorted(used_2q.items())
        if error >= 1.0
    ]
    r2 = float(np.mean(list(used_2q.values()))) if used_2q else None
    qubits = physical_qubits(compiled)
    r1 = None
    for gate in ONE_QUBIT_GATES:
        found = [errors[(gate, (q,))] for q in qubits if errors.get((gate, (q,))) is not None]
        if found:
            r1 = float(np.mean(found))
            break
    p1 = one_qubit_level(r1) if r1 is not None else 0.0
    p2 = two_qubit_level(r2) if r2 is not None else 0.0
    for arity, level, error in ((1, p1, r1), (2, p2, r2)):
        if not level < MAX_NOISE_LEVEL:
            raise ValueError(
                f"the calibration's mean {arity}-qubit gate error {error:g} on the qubits circuit "
                f"{compiled.name!r} uses gives a local depolarizing noise level of {level:g}, which PEC "
                f"cannot invert (it needs less than {MAX_NOISE_LEVEL}); choose better qubits or "
                "give noise_level."
            )
    couplers = sorted({(q[0], q[1]) for _, q in used_2q})
    return NoiseLevels(p1, p2, "calibration", r1, r2, qubits, couplers, problems)


def represent(
    circuit: QuantumCircuit, levels: NoiseLevels
) -> tuple[list[OperationRepresentation], float]:
    """Mitiq's local depolarizing representation of each distinct gate of ``circuit``, and the
    one-norm of the whole circuit's representation (gamma, the product over its gates)."""
    import cirq
    from mitiq.interface import convert_to_mitiq
    from mitiq.pec import represent_operation_with_local_depolarizing_noise

    converted, _ = convert_to_mitiq(circuit)
    by_operation: dict[Any, OperationRepresentation] = {}
    gamma = 1.0
    for operation in converted.all_operations():
        if cirq.is_measurement(operation):
            continue
        if operation not in by_operation:
            if len(operation.qubits) > 2:
                said = str(operation)  # a block of gates prints as a whole diagram
                raise ValueError(
                    f"PEC represents one- and two-qubit gates, and circuit {circuit.name!r} has "
                    f"{said if chr(10) not in said else 'a block of gates'} on "
                    f"{len(operation.qubits)} qubits with no definition in smaller gates; "
                    "decompose it first."
                )
            by_operation[operation] = represent_operation_with_local_depolarizing_noise(
                cirq.Circuit(operation), levels.for_arity(len(operation.qubits))
            )
        gamma *= by_operation[operation].norm
    return list(by_operation.values()), gamma
