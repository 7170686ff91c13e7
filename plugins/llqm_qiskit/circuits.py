"""Benchmark circuits whose ideal outcome is known, so that noise and mitigation can be scored."""

from __future__ import annotations

from qiskit import QuantumCircuit


def ghz(qubits: int, measure: bool = True) -> QuantumCircuit:
    """``(|0...0> + |1...1>)/sqrt(2)`` on a line of CNOTs: ideal outcomes are all zeros or all ones."""
    if qubits < 2:
        raise ValueError(f"a GHZ circuit needs at least 2 qubits, not {qubits}.")
    circuit = QuantumCircuit(qubits, name=f"ghz_{qubits}")
    circuit.h(0)
    for q in range(1, qubits):
        circuit.cx(q - 1, q)
    if measure:
        circuit.measure_all()
    return circuit


def ghz_success(counts: dict[str, int]) -> float:
    """Fraction of shots that gave one of the two ideal GHZ outcomes."""
    width = len(next(iter(counts)))
    return (counts.get("0" * width, 0) + counts.get("1" * width, 0)) / sum(counts.values())
