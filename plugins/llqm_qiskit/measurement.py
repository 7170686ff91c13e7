"""What a user's circuit measures, and the circuit an observable needs from it.

Benchmark suites and users' own OpenQASM files often leave measurement to the executor. An
observable read from outcomes (``ideal_outcomes``, ``parity``, ``neighbour_parities``) gets a
circuit that measures nothing measured on every qubit, with a warning; a Pauli sum measures in
its own bases, so it gets the circuit without its final measurements. What neither can use is
refused when the file is checked: classical control (``if``, ``c_if``, loops), which the noise
model and the simulators' samplers here do not carry through, and, for a Pauli sum,
measurements in the middle of the circuit, which its basis changes would come after.
"""

from __future__ import annotations

from dataclasses import dataclass

from qiskit import QuantumCircuit

_CONTROL_FLOW = {"if_else", "while_loop", "for_loop", "switch_case", "box"}


@dataclass(frozen=True)
class MeasurementShape:
    measurements: int
    mid_circuit: int  # measurements followed by another operation on their qubit
    classical_control: bool


def shape(circuit: QuantumCircuit) -> MeasurementShape:
    """Count the circuit's measurements, those in the middle of it, and look for classical control."""
    measurements = mid = 0
    measured: set[int] = set()
    control = False
    for instruction in circuit.data:
        operation = instruction.operation
        qubits = {circuit.find_bit(q).index for q in instruction.qubits}
        if operation.name in _CONTROL_FLOW or getattr(operation, "condition", None) is not None:
            control = True
        if operation.name == "measure":
            measurements += 1
            mid += len(qubits & measured)  # measured again: the earlier one was mid-circuit
            measured |= qubits
        elif operation.name != "barrier" and qubits & measured:
            mid += len(qubits & measured)
            measured -= qubits
    return MeasurementShape(measurements, mid, control)


def refuse_classical_control(circuit: QuantumCircuit) -> None:
    if shape(circuit).classical_control:
        raise ValueError(
            f"circuit {circuit.name!r} uses classical control (if/c_if or a loop on measured bits), "
            "which the noise model and samplers here cannot run; run it with each conditioned gate "
            "controlled by the measured qubit instead and every measurement at the end (deferred "
            "measurement), or without the classical control."
        )


def for_outcomes(circuit: QuantumCircuit) -> tuple[QuantumCircuit, str | None]:
    """The circuit an outcome observable reads: itself, or measured on every qubit when it
    measures nothing (and the sentence that says so)."""
    refuse_classical_control(circuit)
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
    refuse_classical_control(circuit)
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
