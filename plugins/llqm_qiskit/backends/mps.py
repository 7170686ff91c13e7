"""Matrix-product-state execution of wide non-Clifford circuits on the embedded default.

A statevector of more than ~30 qubits does not fit a machine, but many wide circuits are
shallow or barely entangled (W-states, QAOA at low depth, hardware-efficient ansatze with
linear entanglers), and Aer's ``matrix_product_state`` method runs them at a cost that grows
with the bond dimension rather than with ``2^n``. Before choosing it, the bond dimension is
estimated from the two-qubit gates across each cut of the logical qubit line (a compiled
circuit is read back onto its logical qubits through its layout), and the time of a noisy
run, one trajectory per shot, from a cost per gate plus ``gates * chi^3`` per shot. A circuit whose estimate
exceeds the bond-dimension limit or the time limit is refused with the estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from qiskit import QuantumCircuit

from ..costs import mps_seconds

#: Default bond-dimension limit of MPS execution (and of the MPS ideal value).
MAX_BOND = 64

#: Longest a simulated job may be estimated to take before MPS is refused for it.
MPS_MAX_JOB_S = 3600.0


def bond_estimate(circuit: QuantumCircuit, line: Sequence[int] | None = None) -> int:
    """An upper bound of the bond dimension an MPS of the circuit's state needs on the qubit
    line (``line[i]``: qubit ``i``'s place on it, by default its index): at each cut, 2 to the
    number of two-qubit gates across it, at most ``2^min(left, right)``. Shallow and
    low-entanglement circuits (W-states, QAOA at low depth, hardware-efficient ansatze with
    linear entanglers) stay small."""
    width = circuit.num_qubits
    place = list(line) if line is not None else list(range(width))
    crossings = np.zeros(max(width - 1, 0), dtype=np.int64)
    for instruction in circuit.data:
        if instruction.operation.num_qubits < 2 or instruction.operation.name == "barrier":
            continue
        qubits = [place[circuit.find_bit(q).index] for q in instruction.qubits]
        crossings[min(qubits) : max(qubits)] += 1
    best = 1
    for cut, count in enumerate(crossings):
        side = min(cut + 1, width - cut - 1)
        best = max(best, 2 ** int(min(count, side, 62)))
    return best


@dataclass(frozen=True)
class MpsPlan:
    bond: int  # the estimated bond dimension
    max_bond: int  # Aer's limit for the run
    seconds: float  # the estimated time of the job


def logical_line(circuit: QuantumCircuit) -> list[int]:
    """Each qubit's place on the logical line: a compiled circuit's physical qubits in the
    order of the logical qubits its layout put on them (ancillas after them)."""
    layout = getattr(circuit, "layout", None)
    if layout is None:
        return list(range(circuit.num_qubits))
    place = [0] * circuit.num_qubits
    for virtual, physical in enumerate(layout.initial_index_layout(filter_ancillas=False)):
        place[physical] = virtual
    return place


def plan(circuits: list[QuantumCircuit], shots: int, max_bond: int = MAX_BOND) -> MpsPlan:
    """The MPS run of ``circuits``: estimated bond dimension and time; refused in one sentence
    when the bond dimension exceeds ``max_bond`` or the job would take over ``MPS_MAX_JOB_S``."""
    bond = max(bond_estimate(c, logical_line(c)) for c in circuits)
    gates = sum(len(c.data) for c in circuits)
    seconds = mps_seconds(gates, shots, min(bond, max_bond))
    if bond > max_bond:
        raise ValueError(
            f"too entangled to simulate here: its estimated bond dimension is {bond}, above the "
            f"matrix-product-state limit mps_max_bond = {max_bond}, and a statevector does not fit"
        )
    if seconds > MPS_MAX_JOB_S:
        raise ValueError(
            f"too slow to simulate here: a matrix-product-state run at bond dimension {bond} is "
            f"estimated at {seconds:,.0f} s for {shots:,} shots (over {MPS_MAX_JOB_S:,.0f} s)"
        )
    return MpsPlan(bond, max_bond, seconds)
