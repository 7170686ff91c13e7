"""Domain metrics of Qiskit objects, named as the span schema expects (``circuit.*``, ``result.*``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from qiskit import QuantumCircuit
from qiskit.circuit.library import get_standard_gate_name_mapping
from qiskit.converters import circuit_to_dag, dag_to_circuit
from qiskit.dagcircuit import DAGCircuit
from qiskit.primitives import PrimitiveResult
from qiskit.result import Counts, Result

from llqm_core.plugin import value_metrics

from .measurement import CONTROL_FLOW
from .measurement import shape as measurement_shape

#: Above this many instructions the depth is taken on a DAG (Rust) instead of walking the circuit in Python.
DAG_DEPTH_THRESHOLD = 20_000
STANDARD_GATES = get_standard_gate_name_mapping()
#: Operations that make a circuit dynamic where they appear.
DYNAMIC_OPS = CONTROL_FLOW | {"reset"}
#: A dynamic circuit's counts, summed over the circuits of a job.
DYNAMIC_COUNTS = ("circuit.mid_circuit_measurements", "circuit.resets", "circuit.conditionals")


def _depth(circuit: QuantumCircuit) -> int:
    if len(circuit.data) <= DAG_DEPTH_THRESHOLD:
        return circuit.depth()
    return circuit_to_dag(circuit, copy_operations=False).depth()  # ~8x faster at 10^6 gates


def circuit_metrics(circuit: QuantumCircuit, *, depth: bool = True) -> dict[str, Any]:
    """Size, depth, and gate counts of a circuit; two-qubit gates are what noise and routing cost.

    Counted without walking the instructions in Python, so that describing a 10^6-gate
    circuit costs well under a second: ``circuit.two_qubit_gates`` is Qiskit's count of
    gates on two or more qubits (after transpiling for IBM devices, exactly the two-qubit ones).

    Args:
        circuit: the circuit.
        depth: compute its depth (seconds on a circuit of 10^6 gates); False leaves it out.
    """
    ops = circuit.count_ops()
    metrics: dict[str, Any] = {
        "circuit.name": circuit.name,
        "circuit.qubits": circuit.num_qubits,
        "circuit.clbits": circuit.num_clbits,
        "circuit.size": sum(ops.values()) - int(ops.get("barrier", 0)),
        "circuit.two_qubit_gates": circuit.num_nonlocal_gates(),
        "circuit.measurements": int(ops.get("measure", 0)),
    }
    if depth:
        metrics["circuit.depth"] = _depth(circuit)
    for name, count in ops.items():
        metrics[f"circuit.ops.{name}"] = int(count)
    # a dynamic circuit's mid-circuit measurements, resets and conditionals: a walk over the
    # circuit, so only where it has resets or control flow, or is small enough to walk quickly
    if set(ops) & DYNAMIC_OPS or (ops.get("measure") and len(circuit.data) <= DAG_DEPTH_THRESHOLD):
        found = measurement_shape(circuit)
        if found.dynamic:
            metrics |= found.metrics()
    return metrics


def batch_metrics(circuits: list[QuantumCircuit]) -> dict[str, Any]:
    """Several circuits' metrics together; the depth is their largest circuit's (a depth is a
    walk over the circuit: for PEC's thousands of samples it would cost more than the job)."""
    each = [circuit_metrics(c, depth=False) for c in circuits]
    largest = max(range(len(each)), key=lambda i: each[i]["circuit.size"])
    return combined(each) | {"circuit.depth": _depth(circuits[largest])}


def dag_metrics(
    dag: DAGCircuit, widths: dict[str, int], depth: int | None, *, counts: bool = True
) -> dict[str, Any]:
    """The metrics of ``circuit_metrics`` from what a DAG keeps (its size and operation counts),
    without a walk: ``depth`` is given when known, else left out. ``widths`` caches each
    operation name's number of qubits; ``counts`` adds the ``circuit.ops.*`` counts."""
    ops = dag.count_ops(recurse=False)
    two_qubit_gates = 0
    for name, n in ops.items():
        width = _WIDTHS.get(name)
        if width is None:
            width = widths.get(name)
            if width is None:
                width = widths[name] = _width(dag, name)
        if width > 1:
            two_qubit_gates += n
    metrics: dict[str, Any] = {
        "circuit.qubits": dag.num_qubits(),
        "circuit.size": sum(ops.values()) - int(ops.get("barrier", 0)),
        "circuit.two_qubit_gates": two_qubit_gates,
    }
    if depth is not None:
        metrics["circuit.depth"] = depth
    if counts:
        metrics |= {
            "circuit.name": dag.name or "",
            "circuit.clbits": dag.num_clbits(),
            "circuit.measurements": int(ops.get("measure", 0)),
        }
        if set(ops) & DYNAMIC_OPS:  # a dynamic circuit's counts need a walk: only then
            found = measurement_shape(dag_to_circuit(dag, copy_operations=False))
            metrics |= found.metrics()
        for name, n in ops.items():
            key = _OP_KEYS.get(name)
            if key is None:
                key = _OP_KEYS[name] = f"circuit.ops.{name}"
            metrics[key] = int(n)
    return metrics


#: Each standard gate's number of qubits, and a barrier's 0 (a directive, never counted as a
#: gate), made once: a transpile's output is described from its DAG at every transpile.
_WIDTHS = {name: gate.num_qubits for name, gate in STANDARD_GATES.items()} | {"barrier": 0}
#: Per operation name, its ``circuit.ops.*`` metric's name.
_OP_KEYS: dict[str, str] = {}


def _width(dag: DAGCircuit, name: str) -> int:
    """How many qubits operation ``name`` acts on: Qiskit's standard gates by name, any other
    from its first node in the DAG."""
    if name == "barrier":  # a directive, of any width: never counted as a gate
        return 0
    standard = STANDARD_GATES.get(name)
    if standard is not None:
        return standard.num_qubits
    return len(next(node for node in dag.topological_op_nodes() if node.name == name).qargs)


def combined(each: list[dict[str, Any]]) -> dict[str, Any]:
    """The metrics of several circuits together: the widest, the deepest, and the gates summed."""
    metrics = {
        "circuits": len(each),
        "circuit.qubits": max(m["circuit.qubits"] for m in each),
        "circuit.size": sum(m["circuit.size"] for m in each),
        "circuit.two_qubit_gates": sum(m["circuit.two_qubit_gates"] for m in each),
    }
    if all("circuit.depth" in m for m in each):
        metrics["circuit.depth"] = max(m["circuit.depth"] for m in each)
    for name in DYNAMIC_COUNTS:
        if any(name in m for m in each):
            metrics[name] = sum(m.get(name, 0) for m in each)
    return metrics


def _counts_metrics(counts: dict[str, int]) -> dict[str, Any]:
    return {"result.shots": int(sum(counts.values())), "result.outcomes": len(counts)}


def result_report(result: Result) -> dict[str, int | float]:
    """What a backend's ``Result`` says of its own run: its shots and the backend's seconds (a
    simulator's own time). Read at either detail (``model.detail``): it is the job's report, not
    a description of a value."""
    report: dict[str, int | float] = {}
    shots = sum(int(getattr(r, "shots", 0) or 0) for r in result.results)
    if shots:
        report["result.shots"] = shots
    time_taken = getattr(result, "time_taken", None)
    if time_taken is not None:
        report["result.backend_time_s"] = float(time_taken)
    return report


def describe(value: Any) -> dict[str, Any] | None:
    """The metrics of a Qiskit value, or None when the value is not one this plugin knows."""
    if isinstance(value, QuantumCircuit):
        return circuit_metrics(value)
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, QuantumCircuit) for v in value)
    ):
        return batch_metrics(list(value))
    if isinstance(value, Counts):
        return _counts_metrics(value)
    if isinstance(value, Result):
        return {
            "result.experiments": len(value.results),
            "result.success": bool(value.success),
        } | result_report(value)
    if isinstance(value, PrimitiveResult):
        return primitive_metrics(value)
    return None


def primitive_metrics(result: PrimitiveResult) -> dict[str, Any]:
    """What a primitive's result holds, whatever its pubs' shapes: the shape of each pub's data
    (``2x3`` for three parameter sets broadcast against two observables, ``scalar`` for one),
    how many expectation values in all (and the value itself where there is one), and the
    classical registers a Sampler's pubs measured, with their bits. Nothing is converted that
    could fail: a field of a kind not known here is left out."""
    shapes: list[str] = []
    registers: dict[str, int] = {}
    values: list[Any] = []
    for pub in result:
        data = pub.data
        shapes.append("x".join(str(n) for n in getattr(data, "shape", ())) or "scalar")
        keys = data.keys() if callable(getattr(data, "keys", None)) else ()
        for name in keys:
            field = data[name]
            if name == "evs":
                values.extend(np.asarray(field).ravel().tolist())
            elif isinstance(getattr(field, "num_bits", None), int):
                registers[str(name)] = field.num_bits
    metrics: dict[str, Any] = {"result.pubs": len(result), "result.pub_shapes": shapes}
    if values:
        metrics["result.expectation_values"] = len(values)
        if len(values) == 1:
            metrics |= value_metrics("result.expectation_value", values[0])
    if registers:
        metrics["result.registers"] = [f"{name}[{bits}]" for name, bits in registers.items()]
    return metrics
