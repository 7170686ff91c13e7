"""PEC sampling the logical circuit (``sample = "logical"``): Mitiq's own sampling, as Mitiq's
``execute_with_pec`` does it, each sample fitted back on the logical circuit's registers and
transpiled with the pipeline's options afterwards.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from qiskit import QuantumCircuit

from llqm_core.plugin import suppressed

from ..execution import (
    mid_circuit_measurements,
    non_unitary_said,
    on_two_qubits,
    with_registers,
)
from .noise import physical_qubits
from .sampling import sample_indexed

if TYPE_CHECKING:  # Mitiq and Cirq are imported where PEC runs: loading the plugin takes no seconds
    from mitiq.pec.types import OperationRepresentation

#: The observable's ``readout_map``: the qubit each classical bit it reads is measured from.
ReadoutMap = Callable[[QuantumCircuit], dict[int, int]]


def _registers(circuit: QuantumCircuit) -> tuple:
    return (
        tuple((r.name, r.size) for r in circuit.qregs),
        tuple((r.name, r.size) for r in circuit.cregs),
        circuit.num_qubits,
        circuit.num_clbits,
    )


def _placement(count: int, full: int, used: list[int]) -> list[int] | None:
    """Where ``count`` bits of a sampled circuit go in the logical one: all of them in order,
    or the ``used`` ones when the sampler dropped the rest; None when neither fits."""
    if count == full:
        return list(range(full))
    return used if count == len(used) else None


def fit_to_logical(
    sampled: QuantumCircuit, logical: QuantumCircuit, readout_map: ReadoutMap
) -> QuantumCircuit:
    """A sampled circuit on the logical circuit's qubits, registers and measurements.

    Mitiq's conversions may drop idle qubits and renumber the rest, and rename or split
    registers; the counts would then not read as the observable expects. A circuit that
    kept everything is returned as it is; a narrower one is put back on the qubits the
    logical circuit uses (in order), onto the logical circuit's own registers; anything
    else that cannot be matched is an error rather than a wrong answer. ``readout_map`` is the
    observable's: which qubit each bit it reads is measured from must not change."""
    if _registers(sampled) == _registers(logical) and readout_map(sampled) == readout_map(logical):
        return sampled
    used = sorted(
        {
            logical.find_bit(q).index
            for i in logical.data
            if i.operation.name != "barrier"
            for q in i.qubits
        }
    )
    qubits = _placement(sampled.num_qubits, logical.num_qubits, used)
    if qubits is None:
        raise RuntimeError(
            f"Mitiq's sampling returned a circuit on {sampled.num_qubits} qubits for circuit "
            f"{logical.name!r} on {logical.num_qubits} ({len(used)} used), which cannot be matched."
        )
    clbits = _placement(sampled.num_clbits, logical.num_clbits, sorted(readout_map(logical)))
    if clbits is None:
        raise RuntimeError(
            f"Mitiq's sampling returned a circuit with {sampled.num_clbits} classical bits for circuit "
            f"{logical.name!r} with {logical.num_clbits}, which cannot be matched."
        )
    fitted = logical.copy_empty_like(name=sampled.name or logical.name)
    fitted.compose(sampled, qubits=qubits, clbits=clbits, inplace=True)
    if readout_map(fitted) != readout_map(logical):
        raise RuntimeError(
            f"Mitiq's sampling changed which qubit each classical bit of circuit {logical.name!r} "
            f"measures ({readout_map(fitted)} instead of {readout_map(logical)})."
        )
    return fitted


def circuit_key(circuit: QuantumCircuit) -> tuple:
    """What makes two sampled circuits the same circuit: their gates, in order, on the same bits."""

    def param(value: Any) -> Any:
        try:
            return round(float(value), 12)
        except (TypeError, ValueError):
            return str(value)

    return tuple(
        (
            i.operation.name,
            tuple(param(p) for p in i.operation.params),
            tuple(circuit.find_bit(q).index for q in i.qubits),
            tuple(circuit.find_bit(c).index for c in i.clbits),
        )
        for i in circuit.data
    )


def for_mitiq(circuit: QuantumCircuit) -> QuantumCircuit:
    """``circuit`` as PEC hands it to Mitiq: on registers, in gates of at most two qubits."""
    return with_registers(on_two_qubits(circuit))


def sample_chunk(
    circuit: QuantumCircuit,
    representations: Sequence[OperationRepresentation],
    random_state: np.random.RandomState,
    samples: int,
    readout_map: ReadoutMap,
    prepared: QuantumCircuit | None = None,
) -> tuple[list[QuantumCircuit], list[int], float]:
    """Mitiq's ``sample_circuit`` for one chunk (its representations looked up: ``sampling``),
    each circuit fitted back on the logical registers (``readout_map``: the observable's).
    ``prepared`` is ``circuit`` as Mitiq takes it (``for_mitiq``), when the caller made it once."""
    with (
        warnings.catch_warnings(),
        suppressed(),
    ):  # Mitiq's own conversions: no instrumentor's tasks
        # Measurements (and the identities Mitiq puts on idle qubits) have no representation on purpose.
        warnings.filterwarnings("ignore", message="No representation found", category=UserWarning)
        sampled, signs, norm = sample_indexed(
            prepared if prepared is not None else for_mitiq(circuit),
            representations,
            random_state=random_state,
            num_samples=samples,
        )
    fitted = [fit_to_logical(c, circuit, readout_map) for c in sampled]
    return fitted, [int(s) for s in signs], float(norm)


def placement_problems(base: QuantumCircuit, compiled: Sequence[QuantumCircuit]) -> list[str]:
    """A sentence when sampled circuits were compiled onto other physical qubits than the circuit itself."""
    expected = physical_qubits(base)
    moved = [c for c in compiled if physical_qubits(c) != expected]
    if not moved:
        return []
    return [
        f"PEC: {len(moved)} of {len(compiled)} sampled circuits were compiled onto other physical qubits "
        f"({physical_qubits(moved[0])}) than circuit {base.name!r} ({expected}), whose calibration "
        "set the noise "
        "levels; fix the layout (transpile seed, layout_method or optimization_level 0)."
    ]


def unsampleable(circuit: QuantumCircuit) -> str | None:
    """Why PEC cannot sample ``circuit`` on its logical qubits, in one sentence, or None where it
    can: Mitiq's Qiskit conversion puts back only the measurements at a circuit's end, and takes
    no classical control."""
    if not mid_circuit_measurements(circuit) and not circuit.has_control_flow_op():
        return None
    return (
        f'PEC with sample = "logical" samples through Mitiq\'s conversion, which keeps only the '
        f"measurements at a circuit's end and takes no classical control, and circuit "
        f'{circuit.name!r} has {non_unitary_said(circuit)}; use sample = "compiled", which puts '
        "its Paulis into the compiled circuit (around the gates outside conditionals)."
    )


@dataclass
class LogicalSampler:
    """Draws chunks of samples of the logical circuit from its gates' representations."""

    circuit: QuantumCircuit
    prepared: QuantumCircuit  #: the circuit as Mitiq samples it (``for_mitiq``)
    representations: list[OperationRepresentation]
    gamma: float  #: the one-norm of the circuit's representation
    random_state: np.random.RandomState
    readout_map: ReadoutMap  #: the observable's: each sample must measure the bits it reads alike
    compiled: bool = False  #: its samples are logical circuits: they are transpiled

    def sample(self, size: int) -> tuple[list[QuantumCircuit], list[int], list[tuple], float]:
        """``size`` samples, their signs, what tells them apart (``circuit_key``) and the norm."""
        circuits, signs, norm = sample_chunk(
            self.circuit,
            self.representations,
            self.random_state,
            size,
            self.readout_map,
            self.prepared,
        )
        return circuits, signs, [circuit_key(c) for c in circuits], norm
