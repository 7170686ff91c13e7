"""Where the circuit will sit, said when the file is checked: a layout policy that moves it off
the transpiler's placement, and the couplers it would use that the calibration in force marks
out of service (a two-qubit gate there fails: its error is 1).

More in docs/pipelines.md ("Checked first").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from qiskit import QuantumCircuit

from llqm_core.plugin import calibration_in_force, faulty_couplers, foresee

from .decision_points import LAYOUT

#: Above this share of the couplers a circuit would use out of service, the check warns.
OUT_OF_SERVICE_SHARE = 0.10
#: A circuit the check does not compile anyway (a Clifford one) is compiled to find its
#: couplers up to this many gates (what that compile takes: docs/pipelines.md); a larger one is not.
COMPILE_TO_CHECK_GATES = 20_000
#: How many out-of-service couplers the warning names.
NAMED = 5


def couplers(compiled: QuantumCircuit) -> set[tuple[int, int]]:
    """The physical qubit pairs (lower first) a compiled circuit's two-qubit gates act on."""
    found = set()
    for instruction in compiled.data:
        if instruction.operation.num_qubits == 2 and instruction.operation.name != "barrier":
            a, b = (compiled.find_bit(q).index for q in instruction.qubits)
            found.add((min(a, b), max(a, b)))
    return found


def placed_couplers(circuit: QuantumCircuit, layout: list[int]) -> set[tuple[int, int]]:
    """The couplers a circuit uses on ``layout`` (virtual qubit i on physical ``layout[i]``):
    its two-qubit gates' pairs, mapped, which is exact for a SWAP-free layout (the layout
    policy's)."""
    found = set()
    for instruction in circuit.data:
        if instruction.operation.num_qubits == 2 and instruction.operation.name != "barrier":
            a, b = (layout[circuit.find_bit(q).index] for q in instruction.qubits)
            found.add((min(a, b), max(a, b)))
    return found


def placement_notes(
    circuit: QuantumCircuit,
    context: dict[str, Any],
    compile_as_run: Callable[[QuantumCircuit], QuantumCircuit],
    compiled_anyway: bool,
) -> list[str]:
    """What the check says of the circuit's placement: the layout policy's move, if it makes
    one, and a warning when more than ``OUT_OF_SERVICE_SHARE`` of the couplers the circuit
    would use are out of service in the calibration in force. ``compile_as_run`` compiles as
    the run will without a layout policy; the check does so anyway where ``compiled_anyway``
    (a non-Clifford circuit), else only up to ``COMPILE_TO_CHECK_GATES``."""
    backend = context["backend"]
    snapshot = calibration_in_force(backend)
    if snapshot is None:
        return []
    notes = []
    small = sum(circuit.count_ops().values()) <= COMPILE_TO_CHECK_GATES
    default = compile_as_run(circuit) if small or compiled_anyway else None
    moved = foresee(
        context, LAYOUT, circuit=circuit, snapshot=snapshot, device=getattr(backend, "device", None)
    )
    if moved is not None and "initial_layout" in moved.choice:
        layout = list(moved.choice["initial_layout"])
        was = (
            default.layout.initial_index_layout(filter_ancillas=True)
            if default is not None and default.layout is not None
            else None
        )
        notes.append(
            f"policy {moved.policy} will place the circuit on physical qubits "
            f"{_qubits(layout)}"
            + (f" instead of {_qubits(was)}" if was else "")
            + f" (the transpiler's placement): {moved.rationale}"
        )
        used = placed_couplers(circuit, layout)
    elif default is not None:
        used = couplers(default)
    else:
        return notes
    broken = sorted(used & set(faulty_couplers(snapshot)))
    if used and len(broken) > OUT_OF_SERVICE_SHARE * len(used):
        named = ", ".join(f"{a}-{b}" for a, b in broken[:NAMED])
        more = f" and {len(broken) - NAMED} more" if len(broken) > NAMED else ""
        notes.append(
            f"warning: {len(broken)} of the {len(used)} couplers the circuit would use "
            f"({len(broken) / len(used):.0%}) are out of service in the calibration in force "
            f"({snapshot.backend}, {snapshot.fingerprint}): {named}{more}; their two-qubit gates "
            'fail; add "hardware_layout" to [policies] names to place the circuit around them.'
        )
    return notes


def _qubits(layout: list[int]) -> str:
    """A layout in a few words: its first qubits, and how many more."""
    shown = ", ".join(str(q) for q in layout[:8])
    return f"[{shown}{', ...' if len(layout) > 8 else ''}]"
