"""PEC on the compiled circuit: Paulis sampled into the transpiled circuit, no sample transpiled again.

More in docs/modules.md (``llqm_mitiq.pec.compiled``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
from qiskit import QuantumCircuit
from qiskit.circuit import CircuitInstruction
from qiskit.circuit.library import get_standard_gate_name_mapping

from ..native import X_WAYS, Z_WAYS, lacking_said, target_of, ways_said, without, x_gates, z_gates

if TYPE_CHECKING:  # Mitiq and Cirq are imported where a gate is represented, not at load
    import cirq

#: The attribute by which a sample says which gates it inserted into the compiled circuit.
_INSERTIONS = "llqm_insertions"
#: What noise.py leaves noiseless: these carry no representation.
_NOISELESS = {"barrier", "measure", "delay", "reset", "rz", "id"}


@dataclass
class Representation:
    """Mitiq's representation of one native gate on its qubits, as arrays for sampling."""

    gate: str
    qubits: tuple[int, ...]
    norm: float
    others: np.ndarray  # the terms that insert a Pauli
    chance: float  # the probability of drawing one of them
    given_other: np.ndarray  # their probabilities once one is drawn
    negative: np.ndarray  # whether each term's coefficient is negative
    paulis: list[
        list[tuple[str, int]]
    ]  # each term's Paulis: (X|Y|Z, position in the gate's qubits)


@dataclass
class CompiledRepresentation:
    """Every noisy gate occurrence of a compiled circuit and the representation it draws from."""

    compiled: QuantumCircuit
    positions: np.ndarray  # index in ``compiled.data`` of each noisy gate occurrence
    which: np.ndarray  # index in ``representations`` of each occurrence
    representations: list[Representation]
    gamma: float  # the one-norm of the whole circuit's representation
    #: each qubit's native gates for an inserted X and Z (Y is Z then X), by index in ``compiled``
    paulis: dict[int, dict[str, tuple]] = field(default_factory=dict)


def global_noise_level(error: float, arity: int) -> float:
    """Mitiq's global depolarizing level for a gate of average infidelity ``error``."""
    d = 2**arity
    return error * (d + 1) / d


@cache
def _cirq_gate(name: str, arity: int) -> cirq.Gate:
    """The Cirq gate that stands for the native gate ``name`` on ``arity`` qubits in its
    representation: its unitary (a gate with parameters at zero angles).

    Mitiq's global depolarizing representation of a gate is the gate followed by each Pauli
    on its qubits, with coefficients set by the noise level and the gate's arity alone, so it is
    the same for every gate of an arity and every angle of ``u3`` or ``rx``; only the
    Paulis and coefficients are kept. The unitary also stands for the gates Mitiq's own
    conversion gives no single Cirq gate for: ECR (a sub-circuit, whose ``gate`` is None) and
    the ``u1``/``u2``/``u3`` of older devices (refused with their parameters unbound); a
    device's gate that Qiskit does not name is the identity of its arity."""
    import cirq
    from qiskit.quantum_info import Operator

    gate = get_standard_gate_name_mapping().get(name)
    if gate is None or gate.num_qubits != arity:
        return cirq.MatrixGate(np.eye(2**arity), name=name)
    if gate.params:
        gate = type(gate)(*[0.0] * len(gate.params))
    # Qiskit orders a matrix's qubits last-first, Cirq first-first
    return cirq.MatrixGate(Operator(gate).reverse_qargs().data, name=name)


def represent_gate(gate: str, qubits: tuple[int, ...], error: float) -> Representation:
    """Mitiq's global depolarizing representation of ``gate`` on ``qubits`` at its calibrated error."""
    level = global_noise_level(error, len(qubits))
    if level >= 1 - 1 / 4 ** len(qubits):
        raise ValueError(
            f"PEC: {gate} on qubits {list(qubits)} has calibrated error {error:g} (out of service): no "
            "representation can cancel it; choose another layout (the hardware_layout policy avoids it)."
        )
    import cirq
    from mitiq.pec import represent_operation_with_global_depolarizing_noise

    ideal = cirq.Circuit(_cirq_gate(gate, len(qubits)).on(*cirq.LineQubit.range(len(qubits))))
    representation = represent_operation_with_global_depolarizing_noise(ideal, level)
    coefficients = np.array(representation.coeffs, dtype=float)
    paulis = []
    for noisy in representation.noisy_operations:
        operations = list(noisy.circuit.all_operations())
        order = list(operations[0].qubits)  # the gate's own qubits, in Qiskit's order
        paulis.append([(str(op.gate), order.index(op.qubits[0])) for op in operations[1:]])
    probabilities = np.abs(coefficients) / np.abs(coefficients).sum()
    others = np.array([i for i, p in enumerate(paulis) if p])
    chance = float(probabilities[others].sum())
    return Representation(
        gate,
        qubits,
        float(representation.norm),
        others,
        chance,
        probabilities[others] / chance,
        coefficients < 0,
        paulis,
    )


def represent_compiled(
    compiled: QuantumCircuit, snapshot, device: Any = None
) -> CompiledRepresentation:
    """A representation for every gate of ``compiled`` that the calibration gives an error, and
    the gates of ``device`` (None: ``x`` and ``rz``) that insert its Paulis on each qubit."""
    errors = {(g.gate, tuple(g.qubits)): g.error for g in snapshot.gates if g.error}
    index = {q: i for i, q in enumerate(compiled.qubits)}
    found: dict[tuple, int] = {}
    representations: list[Representation] = []
    positions, which = [], []
    for position, instruction in enumerate(compiled.data):
        if instruction.name in _NOISELESS:
            continue
        key = (instruction.name, tuple(index[q] for q in instruction.qubits))
        if key not in found:
            error = errors.get(key)
            if error is None:
                continue
            found[key] = len(representations)
            representations.append(represent_gate(*key, error))
        positions.append(position)
        which.append(found[key])
    qubits = sorted({q for r in representations for q in r.qubits})
    paulis = native_paulis(device, qubits)
    which_ = np.array(which, dtype=np.int64)
    norms = np.array([r.norm for r in representations])
    gamma = float(np.exp(np.log(norms[which_]).sum())) if len(which_) else 1.0
    return CompiledRepresentation(
        compiled, np.array(positions, dtype=np.int64), which_, representations, gamma, paulis
    )


def native_paulis(device: Any, qubits: list[int]) -> dict[int, dict[str, tuple]]:
    """For each of ``qubits``, the native gates of ``device`` that insert an X, a Z and a Y
    (``native``): ``x`` and ``rz(pi)`` on newer devices, ``u3(pi, 0, pi)`` and ``u1(pi)`` on
    those of ``u1``/``u2``/``u3``; a qubit with neither is refused (``no_paulis``)."""
    target = target_of(device)
    missing = sorted(set(without(X_WAYS, target, qubits)) | set(without(Z_WAYS, target, qubits)))
    if missing:
        raise ValueError(no_paulis(device, missing))
    paulis = {}
    for q in qubits:
        x, z = x_gates(target, q) or (), z_gates(target, q) or ()
        paulis[q] = {"X": x, "Z": z, "Y": z + x}  # Z then X: XZ, a Y up to a global phase
    return paulis


def no_paulis(device: Any, qubits: list[int]) -> str:
    """Why compiled PEC cannot insert its Paulis on ``device``'s ``qubits``."""
    return (
        'PEC with sample = "compiled" inserts Paulis as native gates, and '
        f"{lacking_said(device, 'X or Z', qubits)} "
        f"(an X is one of {ways_said(X_WAYS)}; a Z one of {ways_said(Z_WAYS)}); "
        'use sample = "logical", which transpiles each sample.'
    )


def sample_compiled(
    represented: CompiledRepresentation, rng: np.random.Generator, samples: int
) -> tuple[list[QuantumCircuit], list[int], list[tuple]]:
    """``samples`` circuits drawn from the representation, their signs, and what each inserted.

    Each gate occurrence draws a Pauli term in a sample with its representation's ``chance``:
    the number of samples that do is binomial, and which samples and which terms are drawn
    uniformly and by their probabilities: the distribution of one independent draw per
    occurrence and sample, as Mitiq's ``sample_circuit`` makes, at a cost that follows the
    Paulis drawn rather than the gates times the samples."""
    representations = represented.representations
    chances = np.array([r.chance for r in representations])[represented.which]
    drawn = rng.binomial(samples, chances)
    inserted: list[list[tuple[int, int, int]]] = [[] for _ in range(samples)]
    for occurrence in np.flatnonzero(drawn):
        count = int(drawn[occurrence])
        representation_index = int(represented.which[occurrence])
        representation = representations[representation_index]
        terms = rng.choice(representation.others, count, p=representation.given_other)
        for sample, term in zip(rng.choice(samples, count, replace=False), terms):
            inserted[sample].append(
                (int(represented.positions[occurrence]), representation_index, int(term))
            )
    compiled = represented.compiled
    circuits, signs, keys = [], [], []
    for events in inserted:
        events.sort()
        circuit = compiled.copy(name=f"{compiled.name}_pec")
        negative = 0
        insertions = []  # (after which gate of ``compiled``, the gate), in the circuit's order
        for position, representation_index, term in events:
            representation = representations[representation_index]
            negative += bool(representation.negative[term])
            for pauli, local in representation.paulis[term]:
                qubit = compiled.qubits[representation.qubits[local]]
                for gate in represented.paulis[representation.qubits[local]][pauli]:
                    insertions.append((position, CircuitInstruction(gate, (qubit,), ())))
        data = circuit.data  # Qiskit's public, checked list of the circuit's instructions
        for position, instruction in reversed(insertions):  # later first: positions hold
            data.insert(position + 1, instruction)
        # What the sample is, for an engine that converts the compiled circuit once and adds the
        # few gates inserted (Stim's, ``llqm_qiskit.backends.stim_engine``): a convention, not an import.
        setattr(circuit, _INSERTIONS, (compiled, tuple(insertions)))
        circuits.append(circuit)
        signs.append(-1 if negative % 2 else 1)
        keys.append(tuple(events))
    return circuits, signs, keys


@dataclass
class CompiledSampler:
    """Draws chunks of samples of the compiled circuit from its native gates' representations."""

    represented: CompiledRepresentation
    generator: np.random.Generator
    compiled: bool = True  #: its samples are compiled circuits: none is transpiled again

    @property
    def gamma(self) -> float:
        """The one-norm of the circuit's representation."""
        return self.represented.gamma

    def sample(self, size: int) -> tuple[list[QuantumCircuit], list[int], list[tuple], float]:
        """``size`` samples, their signs, what each inserted and the norm."""
        circuits, signs, keys = sample_compiled(self.represented, self.generator, size)
        return circuits, signs, keys, self.gamma
