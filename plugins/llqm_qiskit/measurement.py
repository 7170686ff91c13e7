"""What a user's circuit measures, and the circuit an observable needs from it.

An outcome observable (``ideal_outcomes``, ``parity``, ``neighbour_parities``) of a circuit that
measures nothing gets it measured on every qubit, with a warning; a Pauli sum measures in its
own bases, so it gets the circuit without its final measurements. A dynamic circuit (measurements
in the middle, resets, ``if_else``, ``switch_case``, ``for_loop``) runs as written: an outcome
observable reads its final bits (``final_readout``) or a register the file names, and a Pauli
sum, whose basis changes would follow what it did with its bits, is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from qiskit import QuantumCircuit

CONTROL_FLOW = {"if_else", "while_loop", "for_loop", "switch_case", "box"}


@dataclass(frozen=True)
class MeasurementShape:
    """What a circuit measures and how much of it is dynamic: ``mid_circuit`` counts the
    measurements another operation on their qubit follows or a conditional reads, ``resets``
    and ``conditionals`` the resets and control-flow operations (inside blocks too, once per
    appearance in the circuit, not per iteration)."""

    measurements: int
    mid_circuit: int
    resets: int = 0
    conditionals: int = 0

    @property
    def classical_control(self) -> bool:
        return self.conditionals > 0

    @property
    def dynamic(self) -> bool:
        return bool(self.mid_circuit or self.resets or self.conditionals)

    def metrics(self) -> dict[str, int]:
        """The counts as a task's metrics (``circuit.*``)."""
        return {
            "circuit.measurements": self.measurements,
            "circuit.mid_circuit_measurements": self.mid_circuit,
            "circuit.resets": self.resets,
            "circuit.conditionals": self.conditionals,
        }


def shape(circuit: QuantumCircuit) -> MeasurementShape:
    """Count the circuit's measurements, those in the middle of it, its resets and its
    conditionals (control-flow operations, whose blocks are counted too)."""
    measurements = mid = resets = conditionals = 0
    pending: dict[int, int] = {}  # qubit -> clbit of its last measurement, nothing after it yet
    for instruction in circuit.data:
        operation = instruction.operation
        qubits = [circuit.find_bit(q).index for q in instruction.qubits]
        if operation.name == "barrier":
            continue
        if operation.name in CONTROL_FLOW:
            conditionals += 1
            for block in operation.blocks:
                inner = shape(block)
                measurements += inner.measurements
                mid += inner.mid_circuit
                resets += inner.resets
                conditionals += inner.conditionals
            read = {circuit.find_bit(c).index for c in instruction.clbits}
        else:
            read = set()
        for qubit in qubits:  # an operation after a measurement on its qubit: that one was mid
            if qubit in pending:
                mid += 1
                del pending[qubit]
        for qubit, clbit in list(pending.items()):  # a measured bit a conditional reads
            if clbit in read:
                mid += 1
                del pending[qubit]
        if operation.name == "measure":
            measurements += 1
            pending[qubits[0]] = circuit.find_bit(instruction.clbits[0]).index
        elif operation.name == "reset":
            resets += 1
    return MeasurementShape(measurements, mid, resets, conditionals)


def final_readout(circuit: QuantumCircuit) -> dict[int, int]:
    """For each classical bit a final measurement writes, the qubit it reads: the bit's last
    write, a measurement that no operation on its qubit follows and no conditional reads. In a
    circuit that only measures at the end these are all its measured bits (``readout_map``); in
    a dynamic one they leave out the syndromes, the feed-forward bits and whatever a later
    measurement or a control-flow block writes again."""
    readout: dict[int, int] = {}
    for instruction in circuit.data:
        operation = instruction.operation
        qubits = {circuit.find_bit(q).index for q in instruction.qubits}
        clbits = {circuit.find_bit(c).index for c in instruction.clbits}
        if operation.name == "barrier":
            continue
        if operation.name == "measure":
            (bit,) = clbits
            readout = {b: q for b, q in readout.items() if q not in qubits and b != bit}
            readout[bit] = next(iter(qubits))
            continue
        readout = {b: q for b, q in readout.items() if q not in qubits and b not in clbits}
    return readout


def outcome_readout(circuit: QuantumCircuit, register: str | None = None) -> dict[int, int]:
    """The bits an outcome observable reads, each with the qubit it measures: those of the
    classical ``register`` named in the file, else the circuit's final measurements (all its
    measured bits, but in a dynamic circuit the syndromes and feed-forward bits)."""
    if register is None:
        return final_readout(circuit)
    named = {r.name: r for r in circuit.cregs}
    if register not in named:
        raise ValueError(
            f"circuit {circuit.name!r} has no classical register {register!r}; its registers: "
            f"{', '.join(named) or 'none'}."
        )
    bits = {circuit.find_bit(b).index for b in named[register]}
    found = {b: q for b, q in readout_map(circuit).items() if b in bits}
    if not found:
        raise ValueError(
            f"classical register {register!r} of circuit {circuit.name!r} is never measured "
            "into; name a register its measurements write."
        )
    return found


def _refuse_for_pauli_sum(circuit: QuantumCircuit) -> None:
    """A Pauli sum measures in its own bases after the circuit: refused on a dynamic circuit."""
    found = shape(circuit)
    if found.classical_control or found.resets:
        what = (
            f"{found.conditionals} conditional(s)"
            if found.classical_control
            else f"{found.resets} reset(s)"
        )
        raise ValueError(
            f"circuit {circuit.name!r} has {what}, so a Pauli-sum observable cannot be measured "
            "after it (its basis changes would follow what the circuit does with its measured "
            'bits); use an outcome observable (kind = "parity", "neighbour_parities" or the '
            'default, which read its final measurements or [observable] register = "NAME").'
        )


def for_outcomes(circuit: QuantumCircuit) -> tuple[QuantumCircuit, str | None]:
    """The circuit an outcome observable reads: itself, or measured on every qubit when it
    measures nothing (and the sentence that says so)."""
    if shape(circuit).measurements:
        return circuit, None
    measured = circuit.copy()
    measured.measure_all()
    return measured, (
        f"circuit {circuit.name!r} measures nothing: every one of its {circuit.num_qubits} qubits "
        "was measured at the end for the outcome observable."
    )


def without_measurements(circuit: QuantumCircuit) -> QuantumCircuit:
    """The circuit with its final measurements and classical bits removed, for an observable
    that measures in its own bases; mid-circuit measurements are refused."""
    _refuse_for_pauli_sum(circuit)
    found = shape(circuit)
    if found.mid_circuit:
        raise ValueError(
            f"circuit {circuit.name!r} measures in the middle ({found.mid_circuit} measurement(s) "
            "followed by more gates), so a Pauli-sum observable cannot be measured after it; use "
            "an outcome observable (parity, neighbour_parities) or remove them."
        )
    body = circuit.remove_final_measurements(inplace=False)
    if body.num_clbits or body.cregs:
        bare = QuantumCircuit(*body.qregs, name=body.name, global_phase=body.global_phase)
        if len(bare.qubits) != len(body.qubits):  # qubits without a register
            bare = QuantumCircuit(body.num_qubits, name=body.name, global_phase=body.global_phase)
        for instruction in body.data:
            bare.append(
                instruction.operation,
                [bare.qubits[body.find_bit(q).index] for q in instruction.qubits],
            )
        body = bare
    body.metadata = dict(circuit.metadata or {})
    return body


def readout_map(circuit: QuantumCircuit) -> dict[int, int]:
    """For each classical bit the circuit measures into, the qubit it reads (a bit measured more
    than once keeps its last measurement, the one its counts show)."""
    readout = {}
    for instruction in circuit.data:
        if instruction.operation.name == "measure":
            readout[circuit.find_bit(instruction.clbits[0]).index] = circuit.find_bit(
                instruction.qubits[0]
            ).index
    return readout
