"""What a device can run beyond gates, as its target declares it.

Gates are translated onto any device by the transpile step; what translation cannot supply is
an operation the device itself must carry out: a measurement (mid-circuit or final), a reset,
or classical control (``if_else``, ``for_loop``, ``switch_case``, ``while_loop``). An IBM
device's ``Target`` names the ones it supports (a fake backend's declares ``if_else``,
``for_loop`` and ``switch_case`` but not ``while_loop``), so a circuit needing another is
refused when the file is checked rather than by the service after it queued.
"""

from __future__ import annotations

from qiskit import QuantumCircuit
from qiskit.transpiler import Target

#: Operations that no gate translation can stand in for.
DEVICE_OPERATIONS = (
    "measure",
    "reset",
    "if_else",
    "for_loop",
    "switch_case",
    "while_loop",
    "box",
)


def needed_operations(circuit: QuantumCircuit) -> set[str]:
    """The device operations the circuit uses, inside control-flow blocks too."""
    found: set[str] = set()
    for instruction in circuit.data:
        operation = instruction.operation
        if operation.name in DEVICE_OPERATIONS:
            found.add(operation.name)
        for block in getattr(operation, "blocks", ()):
            found |= needed_operations(block)
    return found


#: Devices whose targets are looked at, smallest first, to name those that would run a circuit.
CANDIDATES = ("fake_manila", "fake_jakarta", "fake_algiers", "fake_fez", "fake_marrakesh")


def devices_declaring(operations: set[str], qubits: int) -> list[str]:
    """The fake devices among ``CANDIDATES`` of at least ``qubits`` qubits whose targets declare
    every one of ``operations`` (qiskit-ibm-runtime's Heron and Eagle devices declare
    ``if_else``, ``switch_case`` and ``for_loop``; the older Falcons none of them)."""
    from .catalog import fake_device  # the catalog imports the fake provider: only to refuse

    found = []
    for name in CANDIDATES:
        target = fake_device(name).target
        if target.num_qubits >= qubits and operations <= set(target.operation_names):
            found.append(name)
    return found


def refuse_unsupported(circuit: QuantumCircuit, target: Target, device: str) -> None:
    """One sentence naming what the circuit needs and the device's target does not declare,
    and devices that declare it."""
    missing = sorted(needed_operations(circuit) - set(target.operation_names))
    if missing:
        declared = sorted(set(DEVICE_OPERATIONS) & set(target.operation_names))
        others = devices_declaring(set(missing), circuit.num_qubits)
        instead = (
            f"run it on a device that declares {'them' if len(missing) > 1 else 'it'} "
            f"([backend] device = one of {', '.join(others)})"
            if others
            else "run it on a device that declares them, or remove them"
        )
        raise ValueError(
            f"circuit {circuit.name!r} uses {', '.join(missing)}, which device {device} does not "
            f"support (its target declares {', '.join(declared) or 'none of them'}); "
            f"{instead}."
        )
