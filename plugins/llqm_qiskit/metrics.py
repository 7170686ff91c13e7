"""Domain metrics of Qiskit objects, named as the span schema expects (``circuit.*``, ``result.*``)."""

from __future__ import annotations

from typing import Any

from qiskit import QuantumCircuit
from qiskit.converters import circuit_to_dag
from qiskit.primitives import PrimitiveResult
from qiskit.result import Counts, Result

#: Above this many instructions the depth is taken on a DAG (Rust) instead of walking the circuit in Python.
DAG_DEPTH_THRESHOLD = 20_000


def _depth(circuit: QuantumCircuit) -> int:
    if len(circuit.data) <= DAG_DEPTH_THRESHOLD:
        return circuit.depth()
    return circuit_to_dag(circuit, copy_operations=False).depth()  # ~8x faster at 10^6 gates


def circuit_metrics(circuit: QuantumCircuit) -> dict[str, Any]:
    """Size, depth, and gate counts of a circuit; two-qubit gates are what noise and routing cost.

    Counted without walking the instructions in Python, so that describing a 10^6-gate
    circuit costs well under a second: ``circuit.two_qubit_gates`` is Qiskit's count of
    gates on two or more qubits (after transpiling for IBM devices, exactly the two-qubit ones).
    """
    ops = circuit.count_ops()
    metrics: dict[str, Any] = {
        "circuit.name": circuit.name,
        "circuit.qubits": circuit.num_qubits,
        "circuit.clbits": circuit.num_clbits,
        "circuit.size": sum(ops.values()) - int(ops.get("barrier", 0)),
        "circuit.depth": _depth(circuit),
        "circuit.two_qubit_gates": circuit.num_nonlocal_gates(),
        "circuit.measurements": int(ops.get("measure", 0)),
    }
    for name, count in ops.items():
        metrics[f"circuit.ops.{name}"] = int(count)
    return metrics


def _circuits_metrics(circuits: list[QuantumCircuit]) -> dict[str, Any]:
    """Totals over a batch from Qiskit's own counts; the depth is its largest circuit's (a depth
    is a walk over the circuit: for PEC's thousands of samples it would cost more than the job)."""
    ops = [c.count_ops() for c in circuits]
    sizes = [sum(o.values()) - int(o.get("barrier", 0)) for o in ops]
    largest = circuits[sizes.index(max(sizes))]
    return {
        "circuits": len(circuits),
        "circuit.qubits": max(c.num_qubits for c in circuits),
        "circuit.size": sum(sizes),
        "circuit.depth": _depth(largest),
        "circuit.two_qubit_gates": sum(c.num_nonlocal_gates() for c in circuits),
    }


def _counts_metrics(counts: dict[str, int]) -> dict[str, Any]:
    return {"result.shots": int(sum(counts.values())), "result.outcomes": len(counts)}


def describe(value: Any) -> dict[str, Any] | None:
    """The metrics of a Qiskit value, or None when the value is not one this plugin knows."""
    if isinstance(value, QuantumCircuit):
        return circuit_metrics(value)
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, QuantumCircuit) for v in value)
    ):
        return _circuits_metrics(list(value))
    if isinstance(value, Counts):
        return _counts_metrics(value)
    if isinstance(value, Result):
        metrics: dict[str, Any] = {
            "result.experiments": len(value.results),
            "result.success": bool(value.success),
        }
        shots = sum(int(getattr(r, "shots", 0) or 0) for r in value.results)
        if shots:
            metrics["result.shots"] = shots
        time_taken = getattr(value, "time_taken", None)
        if time_taken is not None:
            metrics["result.backend_time_s"] = float(time_taken)
        return metrics
    if isinstance(value, PrimitiveResult):
        return {"result.pubs": len(value)}
    return None
