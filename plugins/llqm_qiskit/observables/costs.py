"""What the ``observable`` step will cost, estimated before it runs: its ideal value, by the
method ``ideal.choose`` would take for a circuit of the plan's size, and a Pauli sum's grouping.

The figures are CPU seconds of one core (where they were measured: docs/pipelines.md, "How long
it will take").
"""

from __future__ import annotations

from typing import Any

from llqm_core.plugin import Estimate, memory_limit

from ..costs import AMPLITUDE_BYTES, MPS_S_PER_GATE_CHI3, STATEVECTOR_S_PER_GATE_AMPLITUDE
from .ideal import IDEAL_MAX_S, MEMORY_SHARE

#: One ideal-value computation whatever its size: a simulator built and called, the state read.
IDEAL_FIXED_S = 0.01
#: A stabilizer state updated by a gate, per qubit of the tableau.
STABILIZER_S_PER_GATE_QUBIT = 2e-6
#: A Pauli term read from a stabilizer state, per qubit squared (Qiskit's expectation_value).
STABILIZER_S_PER_TERM_QUBIT2 = 1e-7
#: Grouping a Pauli sum into qubit-wise commuting groups, per term.
GROUPING_S_PER_TERM = 1e-4


def ideal_seconds(plan: dict[str, Any], max_bond: int, terms: int = 1) -> tuple[float, float, str]:
    """Seconds, bytes and the method of an ideal value of ``terms`` Pauli terms on the plan's
    circuit: a stabilizer state (Clifford, or not known to be otherwise), a statevector where it
    fits, else an MPS at the circuit's estimated bond dimension (the limit where not known)."""
    qubits, gates = plan.get("qubits", 0), max(plan.get("gates", 0), 1)
    if plan.get("clifford") is not False:
        seconds = gates * qubits * STABILIZER_S_PER_GATE_QUBIT
        return seconds + terms * qubits**2 * STABILIZER_S_PER_TERM_QUBIT2, 0.0, "stabilizer"
    amplitudes = 2.0**qubits  # a statevector where ``ideal.choose`` takes one
    seconds = gates * amplitudes * STATEVECTOR_S_PER_GATE_AMPLITUDE
    if amplitudes * AMPLITUDE_BYTES <= MEMORY_SHARE * memory_limit() and seconds <= IDEAL_MAX_S:
        return seconds, amplitudes * AMPLITUDE_BYTES, "statevector"
    bond = min(plan.get("bond") or max_bond, max_bond)
    seconds = gates * bond**3 * MPS_S_PER_GATE_CHI3
    return seconds, qubits * bond**2 * AMPLITUDE_BYTES * 4, f"an MPS of bond dimension {bond}"


def observable_estimate(plan: dict[str, Any], max_bond: int, terms: int | None = None) -> Estimate:
    """The ``observable`` step: its ideal value, and for a Pauli sum of ``terms`` terms their
    grouping. An outcome observable (``terms`` None) reads the ideal state once."""
    seconds, memory, method = ideal_seconds(plan, max_bond, terms or 1)
    grouping = (terms or 0) * GROUPING_S_PER_TERM
    what = f"{terms:,} Pauli term(s)" if terms else "the ideal outcomes"
    return Estimate(
        IDEAL_FIXED_S + seconds + grouping, memory, f"the ideal value of {what} by {method}"
    )
