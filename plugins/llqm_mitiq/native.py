"""The native gates that make a Pauli X or Z on a device: readout calibration's ``|1>`` and the
Paulis compiled PEC inserts, so that neither needs transpiling and every device runs them.

Newer IBM devices run ``x``, ``sx`` and ``rz``; older ones (fake_almaden, fake_essex, ...)
run ``u1``, ``u2`` and ``u3`` only, where an X is ``u3(pi, 0, pi)`` and a Z ``u1(pi)``
(each up to a global phase, which no count shows).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from qiskit.circuit import Gate
from qiskit.circuit.library import (
    PhaseGate,
    RZGate,
    SXGate,
    U1Gate,
    U3Gate,
    UGate,
    XGate,
)

#: Each way of making an X, in order of preference: the gates, in the order they run.
X_WAYS: tuple[tuple[Gate, ...], ...] = (
    (XGate(),),
    (SXGate(), SXGate()),
    (U3Gate(math.pi, 0, math.pi),),
    (UGate(math.pi, 0, math.pi),),
)
#: Each way of making a Z, in order of preference.
Z_WAYS: tuple[tuple[Gate, ...], ...] = (
    (RZGate(math.pi),),
    (U1Gate(math.pi),),
    (PhaseGate(math.pi),),
    (U3Gate(0, 0, math.pi),),
    (UGate(0, 0, math.pi),),
)


def target_of(device: Any) -> Any:
    """The device's Qiskit ``Target``, or None for a device without one (then ``x`` and ``rz``
    are taken as native)."""
    return getattr(device, "target", None)


def _first_way(
    ways: Sequence[tuple[Gate, ...]], target: Any, qubit: int
) -> tuple[Gate, ...] | None:
    if target is None:
        return ways[0]
    for gates in ways:
        if all(target.instruction_supported(g.name, (qubit,)) for g in gates):
            return gates
    return None


def x_gates(target: Any, qubit: int) -> tuple[Gate, ...] | None:
    """The native gates that make an X on ``qubit``, or None where none does."""
    return _first_way(X_WAYS, target, qubit)


def z_gates(target: Any, qubit: int) -> tuple[Gate, ...] | None:
    """The native gates that make a Z on ``qubit``, or None where none does."""
    return _first_way(Z_WAYS, target, qubit)


def without(ways: Sequence[tuple[Gate, ...]], target: Any, qubits: Iterable[int]) -> list[int]:
    """The qubits of ``qubits`` on which none of ``ways`` is native."""
    return [q for q in qubits if _first_way(ways, target, q) is None]


def measurable_qubits(target: Any) -> list[int]:
    """The qubits the device can measure (every qubit where ``measure`` is not tied to some)."""
    if target is None:
        return []
    qargs = (
        target.qargs_for_operation_name("measure") if "measure" in target.operation_names else None
    )
    if not qargs:
        return list(range(target.num_qubits))
    return sorted(q[0] for q in qargs)


def device_qubits(target: Any) -> list[int]:
    """Every qubit of the device (none without a target)."""
    return [] if target is None else list(range(target.num_qubits))


def named(gates: Sequence[Gate]) -> str:
    """``x``, ``sx sx`` or ``u3(pi, 0, pi)``: how a sentence names a way."""

    def one(gate: Gate) -> str:
        if not gate.params:
            return gate.name
        angles = ", ".join(
            "pi" if math.isclose(float(p), math.pi) else f"{float(p):g}" for p in gate.params
        )
        return f"{gate.name}({angles})"

    return " ".join(one(g) for g in gates)


def lacking_said(device: Any, gates: str, qubits: Sequence[int]) -> str:
    """``device 'NAME' has no native GATES on qubit 1, 2, ...`` of a refusal: the device and the
    first five qubits that lack a gate, as both techniques' refusals name them."""
    shown = ", ".join(str(q) for q in qubits[:5]) + (" ..." if len(qubits) > 5 else "")
    return f"device {getattr(device, 'name', device)!r} has no native {gates} on qubit {shown}"


def ways_said(ways: Sequence[tuple[Gate, ...]]) -> str:
    """Every way of ``ways`` named, for a refusal: ``x, sx sx, u3(pi, 0, pi) or u(pi, 0, pi)``."""
    said = [named(w) for w in ways]
    return ", ".join(said[:-1]) + " or " + said[-1]
