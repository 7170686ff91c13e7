"""The exact noiseless value of an observable by the cheapest method that can give it
(stabilizer, statevector, matrix product state, else unknown: docs/pipelines.md). Mitigation is
scored against it, so the method is chosen before anything heavy runs, at check time too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from qiskit import QuantumCircuit
from qiskit.quantum_info import SparsePauliOp, StabilizerState
from qiskit_aer import AerSimulator

from llqm_core.plugin import memory_limit

from ..backends.aer import is_clifford
from ..backends.mps import MAX_BOND, for_simulator, mps_log, trial_bond
from ..costs import AMPLITUDE_BYTES, MPS_S_PER_GATE_CHI3, STATEVECTOR_S_PER_GATE_AMPLITUDE
from ..measurement import CONTROL_FLOW
from . import sampled

#: Longest an ideal value may take to compute before it is left unknown.
IDEAL_MAX_S = 300.0
#: Memory headroom: a statevector may take this share of the free memory.
MEMORY_SHARE = 0.5
_NOT_UNITARY = {"measure", "reset"}


@dataclass
class IdealMethod:
    """The method chosen for an ideal value, and why: ``bond`` is the estimated bond dimension."""

    method: str
    reason: str
    bond: int | None = None


@dataclass
class Ideal:
    values: Sequence[float | None]
    method: str
    reason: str
    truncation_error: float | None = None
    bond_dimension: int | None = None
    standard_error: float | None = None  # of a sampled ideal value (a dynamic circuit's)

    def metrics(self) -> dict[str, Any]:
        found: dict[str, Any] = {"ideal.method": self.method, "ideal.reason": self.reason}
        if self.standard_error is not None:
            found["ideal.stderr"] = self.standard_error
        if self.truncation_error is not None:
            found["ideal.truncation_error"] = self.truncation_error
        if self.bond_dimension is not None:
            found["ideal.bond_dimension"] = self.bond_dimension
        return found


def unitary(circuit: QuantumCircuit) -> bool:
    """Whether the circuit (its final measurements removed) is a unitary an ideal state has."""
    return not any(
        i.operation.name in _NOT_UNITARY or i.operation.name in CONTROL_FLOW for i in circuit.data
    )


def choose(circuit: QuantumCircuit, max_bond: int = MAX_BOND) -> IdealMethod:
    """The method ``ideal_values`` will use for ``circuit`` (final measurements removed)."""
    width = circuit.num_qubits
    gates = max(len(circuit.data), 1)
    if not unitary(circuit):  # a value read off measured bits: from noiseless shots
        if sampled.method(circuit)[0] == "enumerated":
            return IdealMethod(*sampled.method(circuit))
        seconds = sampled.IDEAL_SHOTS * gates * 2.0**width * STATEVECTOR_S_PER_GATE_AMPLITUDE
        if seconds > IDEAL_MAX_S:
            return IdealMethod(
                "unknown",
                f"circuit {circuit.name!r} measures, resets or branches mid-circuit, and "
                f"{sampled.IDEAL_SHOTS:,} noiseless shots of its {width} qubits would take about "
                f"{seconds:,.0f} s, over {IDEAL_MAX_S:g} s",
            )
        return IdealMethod(*sampled.method(circuit))
    if is_clifford(circuit):
        return IdealMethod("stabilizer", f"a Clifford circuit of {width} qubits")
    memory = AMPLITUDE_BYTES * 2.0**width
    seconds = gates * 2.0**width * STATEVECTOR_S_PER_GATE_AMPLITUDE
    if memory <= MEMORY_SHARE * memory_limit() and seconds <= IDEAL_MAX_S:
        return IdealMethod("statevector", f"a statevector of {width} qubits fits in memory")
    found = trial_bond(circuit, max_bond)
    bond, truncated = found.bond, found.truncated
    chi = max_bond if truncated else bond
    if gates * chi**3 * MPS_S_PER_GATE_CHI3 > IDEAL_MAX_S:
        return IdealMethod(
            "unknown",
            f"a statevector of {width} qubits does not fit, and an MPS at bond dimension {chi} "
            f"would take longer than {IDEAL_MAX_S:g} s",
            bond,
        )
    if truncated and found.cap < max_bond:
        return IdealMethod(
            "unknown",
            f"a statevector of {width} qubits does not fit, and an MPS needs a bond dimension "
            f"over {bond}, too slow to run at the limit {max_bond}",
            bond,
        )
    exact = f"truncated at bond dimension {max_bond}" if truncated else "exact"
    return IdealMethod(
        "matrix_product_state",
        f"an MPS of bond dimension {bond} reached by a trial run ({exact})",
        bond,
    )


def ideal_values(
    circuit: QuantumCircuit, operators: Sequence[SparsePauliOp], max_bond: int = MAX_BOND
) -> Ideal:
    """The noiseless expectation of each operator (on the circuit's qubits) in the state the
    circuit (without measurements) prepares."""
    chosen = choose(circuit, max_bond)
    if chosen.method == "stabilizer":
        try:
            state = StabilizerState(circuit)
        except Exception:  # a Clifford gate StabilizerState does not take: the next method
            chosen = IdealMethod("statevector", "a Clifford circuit StabilizerState cannot read")
        else:
            values = [_stabilizer_expectation(state, op) for op in operators]
            return Ideal(list(values), chosen.method, chosen.reason)
    if chosen.method == "statevector":
        values, _ = _saved_values(circuit, operators, AerSimulator(method="statevector"))
        return Ideal(list(values), chosen.method, chosen.reason)
    if chosen.method == "matrix_product_state":
        return _mps_values(circuit, operators, max_bond, chosen)
    if chosen.method in ("sampled", "enumerated"):  # bits only: ``expectation.parity_ideals``
        return Ideal([None] * len(operators), "unknown", "operators on a dynamic circuit's state")
    return Ideal([None] * len(operators), chosen.method, chosen.reason)


def statevector_probabilities(circuit: QuantumCircuit, qubits: Sequence[int]) -> np.ndarray:
    """The probability of each outcome of ``qubits`` (index bit j is ``qubits[j]``) in the state
    the circuit prepares, by Aer's statevector: ``quantum_info.Statevector`` evolves gate by gate
    in NumPy, ten times slower (18 s for a 24-qubit W state, docs/performance.md)."""
    simulator = AerSimulator(method="statevector")
    saved = for_simulator(circuit, simulator)
    saved.save_probabilities(list(qubits), label="probabilities")
    result = _run_saved(saved, simulator, "the ideal outcomes")
    return np.asarray(result.data(0)["probabilities"])


def _saved_values(
    circuit: QuantumCircuit, operators: Sequence[SparsePauliOp], simulator: AerSimulator
) -> tuple[list[float], Any]:
    """Each operator's expectation in the circuit's state, saved by ``simulator`` in one run."""
    saved = for_simulator(circuit, simulator)
    qubits = list(range(circuit.num_qubits))
    for index, operator in enumerate(operators):
        saved.save_expectation_value(operator, qubits, label=f"ideal{index}")
    result = _run_saved(saved, simulator, "the ideal value")
    data = result.data(0)
    return [float(np.real(data[f"ideal{index}"])) for index in range(len(operators))], result


def _run_saved(saved: QuantumCircuit, simulator: AerSimulator, what: str) -> Any:
    """One run of a circuit that saves what it computes; Aer's failure is one sentence."""
    result = simulator.run(saved, shots=1).result()
    if not result.success:
        method = simulator.options.method
        raise RuntimeError(f"Aer's {method} could not compute {what}: {result.status}")
    return result


def _stabilizer_expectation(state: StabilizerState, operator: SparsePauliOp) -> float:
    return float(
        sum(
            coefficient.real * state.expectation_value(pauli)
            for pauli, coefficient in zip(operator.paulis, operator.coeffs)
        )
    )


def _mps_values(
    circuit: QuantumCircuit, operators: Sequence[SparsePauliOp], max_bond: int, chosen: IdealMethod
) -> Ideal:
    simulator = AerSimulator(
        method="matrix_product_state",
        matrix_product_state_max_bond_dimension=max_bond,
        mps_log_data=True,
    )
    values, result = _saved_values(circuit, operators, simulator)
    truncation, bond = mps_log(result)
    return Ideal(values, chosen.method, chosen.reason, truncation, bond)
