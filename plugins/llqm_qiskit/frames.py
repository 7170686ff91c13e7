"""Pauli-frame sampling: Clifford circuits with Pauli noise at thousands of shots per millisecond.

Aer's stabilizer method draws the noise and re-runs the whole tableau for every shot, about
1 ms per shot for a few hundred gates, so a 100-qubit ZNE run spends minutes there. For a
Clifford circuit whose noise is Pauli (the twirled model of ``noise.py``) there is an exact
shortcut, the frame simulation of Gidney's Stim:

1. One noiseless reference shot, from Aer's stabilizer method.
2. For all shots at once, a *Pauli frame* per qubit (an X bit and a Z bit per shot) is
   pushed through the circuit: each Clifford gate conjugates it (H swaps X and Z, S adds X
   to Z, CZ and CX spread bits between their qubits), and each noise channel XORs in a
   Pauli drawn for each shot. Frames start with random Z bits, which do nothing to |0> but
   make every measurement whose outcome is random come out uniformly at random.
3. A measured bit is the reference bit XOR the frame's X bit there (and a readout flip).

The samples follow exactly the distribution of the noisy circuit (signs of Paulis do not
matter for measurement statistics). Shots are processed in chunks so memory stays small.
Supported: the Clifford gates of IBM's Heron devices and more (``cz``, ``cx``, ``swap``, ``h``,
``s``, ``sdg``, ``sx``, ``sxdg``, ``x``, ``y``, ``z``, ``id``, ``rz`` in steps of pi/2),
``measure``, ``reset``, ``barrier``, ``delay``; ``supports`` says whether a circuit qualifies.
"""

from __future__ import annotations

import math

import numpy as np
from qiskit import QuantumCircuit
from qiskit_aer import AerSimulator

from .noise import PauliNoise

CHUNK_SHOTS = 50_000
_SELF = {"x", "y", "z", "id", "barrier", "delay"}  # Paulis and no-ops leave a frame as it is
_PHASE = {"s", "sdg"}
_ROOT_X = {"sx", "sxdg"}
_TWO = {"cz", "cx", "swap"}
_SUPPORTED = _SELF | _PHASE | _ROOT_X | _TWO | {"h", "rz", "measure", "reset"}


def _quarter_turns(angle: float) -> int | None:
    turns = angle / (math.pi / 2)
    return round(turns) % 4 if abs(turns - round(turns)) < 1e-9 else None


def supports(circuit: QuantumCircuit) -> bool:
    """Whether the frame sampler can run ``circuit``: supported Clifford operations only."""
    for instruction in circuit.data:
        operation = instruction.operation
        if operation.name not in _SUPPORTED:
            return False
        if operation.name == "rz" and (
            operation.is_parameterized() or _quarter_turns(float(operation.params[0])) is None
        ):
            return False
    return True


class _Sampler:
    """Draws a Pauli per shot from a channel's terms and returns its X and Z bits per qubit."""

    def __init__(self, terms: list[tuple[str, float]]) -> None:
        labels = [label for label, _ in terms]
        self.probabilities = np.array([p for _, p in terms], dtype=float)
        self.probabilities /= self.probabilities.sum()
        width = len(labels[0])
        # position i of the qubit list is the label's character -1-i (Qiskit's order)
        self.x = np.array(
            [[label[-1 - i] in "XY" for i in range(width)] for label in labels], dtype=bool
        )
        self.z = np.array(
            [[label[-1 - i] in "ZY" for i in range(width)] for label in labels], dtype=bool
        )
        self.cumulative = np.cumsum(self.probabilities)

    def draw(self, rng: np.random.Generator, shots: int) -> tuple[np.ndarray, np.ndarray]:
        picks = np.searchsorted(
            self.cumulative, rng.random(shots) * self.cumulative[-1], side="right"
        )
        picks = np.minimum(picks, len(self.probabilities) - 1)
        return self.x[picks].T, self.z[picks].T  # (qubits of the gate, shots)


def _snapped(circuit: QuantumCircuit) -> QuantumCircuit:
    """``circuit`` with its ``rz`` angles set to exact multiples of pi/2 (Aer's stabilizer
    method refuses angles a rounding error away from them, as folded or inverted circuits have)."""
    if all(_is_exact_turn(instruction.operation) for instruction in circuit.data):
        return circuit  # transpiled circuits usually are: no copy of 10^4 instructions
    snapped = circuit.copy_empty_like()
    for instruction in circuit.data:
        if instruction.operation.name == "rz":
            snapped.rz(
                _quarter_turns(float(instruction.operation.params[0])) * math.pi / 2,
                instruction.qubits[0],
            )
        else:
            snapped._append(instruction)  # Qiskit's fast path: the bits are the circuit's own
    return snapped


def _is_exact_turn(operation) -> bool:
    if operation.name != "rz":
        return True
    angle = float(operation.params[0])
    return angle == round(angle / (math.pi / 2)) * (math.pi / 2)


def _reference_shot(circuit: QuantumCircuit, seed: int | None) -> np.ndarray:
    """One noiseless outcome of ``circuit`` from Aer's stabilizer method, bit 0 first."""
    result = (
        AerSimulator(method="stabilizer")
        .run(_snapped(circuit), shots=1, memory=True, seed_simulator=seed)
        .result()
    )
    key = result.get_memory(0)[0].replace(" ", "")
    return np.array([c == "1" for c in reversed(key)], dtype=bool)


def sample_counts(
    circuit: QuantumCircuit, noise: PauliNoise | None, shots: int, seed: int | None = None
) -> dict[str, int]:
    """Counts of ``shots`` runs of ``circuit`` under ``noise``, keyed as Qiskit keys them."""
    if not supports(circuit):
        raise ValueError(
            f"circuit {circuit.name!r} is not a Clifford circuit of supported gates; the Pauli-frame "
            "sampler cannot run it."
        )
    reference = _reference_shot(circuit, seed)
    rng = np.random.default_rng(seed)
    index = {qubit: i for i, qubit in enumerate(circuit.qubits)}
    clbit_index = {clbit: i for i, clbit in enumerate(circuit.clbits)}
    plan = []  # (name, qubit indices, clbit index, channel sampler, readout flip, quarter turns)
    samplers: dict[tuple, _Sampler] = {}
    for instruction in circuit.data:
        name = instruction.operation.name
        qubits = tuple(index[q] for q in instruction.qubits)
        if name in ("barrier", "delay"):
            continue
        turns = _quarter_turns(float(instruction.operation.params[0])) if name == "rz" else None
        clbit = clbit_index[instruction.clbits[0]] if name == "measure" else None
        flip = noise.readout_flip(qubits[0]) if noise is not None and name == "measure" else None
        channel = None
        if noise is not None:
            terms = noise.gate_terms(name, qubits)
            if terms is not None:
                if (name, qubits) not in samplers:
                    samplers[name, qubits] = _Sampler(terms)
                channel = samplers[name, qubits]
        plan.append((name, qubits, clbit, channel, flip, turns))
    records = []
    for start in range(0, shots, CHUNK_SHOTS):
        records.append(
            _run_chunk(
                plan,
                circuit.num_qubits,
                circuit.num_clbits,
                reference,
                min(CHUNK_SHOTS, shots - start),
                rng,
            )
        )
    return _counts(np.concatenate(records, axis=1), circuit)


def _run_chunk(
    plan: list,
    num_qubits: int,
    num_clbits: int,
    reference: np.ndarray,
    shots: int,
    rng: np.random.Generator,
) -> np.ndarray:
    x = np.zeros((num_qubits, shots), dtype=bool)
    z = rng.random((num_qubits, shots)) < 0.5  # Z on |0> is harmless; it randomises random outcomes
    record = np.repeat(reference[:, None], shots, axis=1)
    for name, qubits, clbit, channel, flip, turns in plan:
        if name == "h":
            q = qubits[0]
            x[q], z[q] = z[q].copy(), x[q].copy()
        elif name in _PHASE or (name == "rz" and turns % 2 == 1):
            z[qubits[0]] ^= x[qubits[0]]
        elif name in _ROOT_X:
            x[qubits[0]] ^= z[qubits[0]]
        elif name == "cz":
            a, b = qubits
            z[a] ^= x[b]
            z[b] ^= x[a]
        elif name == "cx":
            control, target = qubits
            x[target] ^= x[control]
            z[control] ^= z[target]
        elif name == "swap":
            a, b = qubits
            x[[a, b]] = x[[b, a]]
            z[[a, b]] = z[[b, a]]
        elif name == "measure":
            q = qubits[0]
            bits = record[clbit] ^ x[q]
            if flip:
                bits ^= rng.random(shots) < flip
            record[clbit] = bits
            z[q] = rng.random(shots) < 0.5  # the measured state is Z-stabilised again
        elif name == "reset":
            q = qubits[0]
            x[q] = False
            z[q] = rng.random(shots) < 0.5
        if channel is not None:
            flips_x, flips_z = channel.draw(rng, shots)
            for position, q in enumerate(qubits):
                x[q] ^= flips_x[position]
                z[q] ^= flips_z[position]
    return record


def _counts(record: np.ndarray, circuit: QuantumCircuit) -> dict[str, int]:
    """Qiskit's count keys: registers last-first, space-separated, each with its bit 0 last."""
    positions = {clbit: i for i, clbit in enumerate(circuit.clbits)}
    registers = [[positions[bit] for bit in register] for register in circuit.cregs] or [
        list(range(len(positions)))
    ]
    rows = np.concatenate([record[list(reversed(bits))] for bits in reversed(registers)], axis=0).T
    widths = [len(bits) for bits in reversed(registers)]
    packed = np.packbits(rows, axis=1)
    unique, counts = np.unique(packed, axis=0, return_counts=True)
    keys = {}
    total_bits = rows.shape[1]
    for row, count in zip(unique, counts):
        bits = "".join("1" if b else "0" for b in np.unpackbits(row)[:total_bits])
        parts, start = [], 0
        for width in widths:
            parts.append(bits[start : start + width])
            start += width
        keys[" ".join(parts)] = int(count)
    return keys
