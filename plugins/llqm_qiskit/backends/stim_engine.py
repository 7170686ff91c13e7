"""Stim: the engine for Clifford circuits with Pauli noise.

More in docs/modules.md (``llqm_qiskit.backends.stim_engine``).
"""

from __future__ import annotations

import math
import weakref
from collections import OrderedDict
from itertools import product

import numpy as np
import stim
from qiskit import QuantumCircuit

from ..devices.noise import PauliNoise

CACHE_SIZE = 256
TEXT_CACHE_SIZE = 16
_GATES = {
    "cz": "CZ",
    "cx": "CX",
    "cy": "CY",
    "swap": "SWAP",
    "h": "H",
    "s": "S",
    "sdg": "S_DAG",
    "sx": "SQRT_X",
    "sxdg": "SQRT_X_DAG",
    "x": "X",
    "y": "Y",
    "z": "Z",
    "reset": "R",
}
_PHASES = {"rz", "p", "u1"}
_QUARTER_TURNS = ("", "S", "Z", "S_DAG")  # rz(k pi/2) up to a global phase
_SILENT = {"barrier", "delay", "id"}
SUPPORTED = frozenset(_GATES) | _PHASES | _SILENT | {"measure"}
_CACHE: OrderedDict[tuple, tuple] = OrderedDict()
#: The attribute by which a circuit says it is another with gates inserted (``convert``).
INSERTIONS = "llqm_insertions"
_TEXTS: dict[tuple, dict] = {}


def supports(circuit: QuantumCircuit) -> bool:
    """Whether every operation of ``circuit`` has a Stim equivalent (phases must also be
    multiples of pi/2: ``aer.is_clifford`` checks the angles)."""
    return set(circuit.count_ops()) <= SUPPORTED


def _channel(terms: list[tuple[str, float]], targets: str) -> str:
    """A Pauli channel given as Qiskit terms (last character on the first qubit) in Stim's
    words: ``DEPOLARIZE1/2`` when every non-identity Pauli is equally likely (the twirled
    model of ``noise.py``: shorter to write and parse), else ``PAULI_CHANNEL_1/2``, whose
    arguments run IX, IY, IZ, XI, ... with the first character on the first target."""
    width = len(terms[0][0])
    probabilities = dict(terms)
    # Stim's label "AB" (A on the first target) is Qiskit's "BA".
    listed = [probabilities.get("".join(p)[::-1], 0.0) for p in product("IXYZ", repeat=width)][1:]
    if max(listed) == min(listed):
        return f"DEPOLARIZE{width}({sum(listed)!r}) {targets}\n"
    return f"PAULI_CHANNEL_{width}({','.join(map(repr, listed))}) {targets}\n"


def _quarter_turns(angle: float) -> int:
    turns = angle / (math.pi / 2)
    if abs(turns - round(turns)) > 1e-9:
        raise ValueError(f"rz({angle}) is not a Clifford phase; Stim runs Clifford circuits only.")
    return round(turns) % 4


def _text(key: tuple, index: dict, noise: PauliNoise | None) -> str:
    """One distinct (gate, qubits[, angle]) as Stim text: the gate, then its noise."""
    name, qubits = key[0], tuple(index[q] for q in key[1])
    targets = " ".join(map(str, qubits))
    if name in _SILENT:
        return ""
    if name == "measure":
        flip = noise.readout_flip(qubits[0]) if noise is not None else None
        return f"M({flip!r}) {targets}\n" if flip else f"M {targets}\n"
    if name in _PHASES:
        gate = _QUARTER_TURNS[_quarter_turns(float(key[2]))]
        return f"{gate} {targets}\n" if gate else ""
    terms = noise.gate_terms(name, qubits) if noise is not None else None
    return f"{_GATES[name]} {targets}\n" + (_channel(terms, targets) if terms else "")


def _texts(circuit: QuantumCircuit, noise: PauliNoise | None) -> dict:
    """The Stim text of each (gate, qubits) seen so far on circuits of these qubits under this
    noise, shared by them all (PEC's samples, ZNE's folds: the same gates over and over)."""
    key = (tuple(circuit.qubits), None if noise is None else noise.snapshot.fingerprint)
    texts = _TEXTS.get(key)
    if texts is None:
        texts = _TEXTS[key] = {"index": {q: i for i, q in enumerate(circuit.qubits)}}
        while len(_TEXTS) > TEXT_CACHE_SIZE:
            _TEXTS.pop(next(iter(_TEXTS)))
    return texts


def _line(instruction, texts: dict, noise: PauliNoise | None) -> str:
    """The Stim text of one instruction (its gate and noise), from ``texts`` where seen before."""
    name = instruction.name
    operation = (
        (name, instruction.qubits, instruction.params[0])
        if name in _PHASES
        else (name, instruction.qubits)
    )
    text = texts.get(operation)
    if text is None:
        text = texts[operation] = _text(operation, texts["index"], noise)
    return text


def _lines(circuit: QuantumCircuit, noise: PauliNoise | None) -> tuple[list[str], np.ndarray]:
    """Each instruction's Stim text, and for each classical bit the index of the measurement
    that last wrote it (-1: never written)."""
    if not supports(circuit):
        unsupported = sorted(set(circuit.count_ops()) - SUPPORTED)
        raise ValueError(
            f"circuit {circuit.name!r} uses {', '.join(unsupported)}, which Stim does not run; "
            "Stim runs Clifford circuits of the gates in stim_engine.SUPPORTED."
        )
    texts = _texts(circuit, noise)
    clbits = {c: i for i, c in enumerate(circuit.clbits)}
    lines = []
    last_write = np.full(circuit.num_clbits, -1, dtype=np.int64)
    measurements = 0
    for instruction in circuit.data:
        if instruction.name == "measure":
            last_write[clbits[instruction.clbits[0]]] = measurements
            measurements += 1
        lines.append(_line(instruction, texts, noise))
    return lines, last_write


def _derived_lines(
    circuit: QuantumCircuit, noise: PauliNoise | None
) -> tuple[list[str], np.ndarray] | None:
    """The lines of a circuit made by inserting gates into another (``INSERTIONS``), from the
    other's lines (converted once); None when it does not say so, or does not add up."""
    derived = getattr(circuit, INSERTIONS, None)
    if derived is None:
        return None
    base, inserted = derived
    if len(circuit.data) != len(base.data) + len(inserted) or any(
        i.name not in _GATES and i.name not in _PHASES for _, i in inserted
    ):
        return None  # changed since, or inserts a measurement: converted as it is
    key = ("lines", id(base), len(base.data), None if noise is None else noise.snapshot.fingerprint)
    cached = _CACHE.get(key)
    if cached is None or cached[0]() is not base:
        cached = _CACHE[key] = (weakref.ref(base), *_lines(base, noise))
    _CACHE.move_to_end(key)
    base_lines, last_write = cached[1], cached[2]
    texts = _texts(base, noise)
    lines, start = [], 0
    for after, instruction in inserted:  # in the order of the circuit
        lines += base_lines[start : after + 1]
        lines.append(_line(instruction, texts, noise))
        start = after + 1
    lines += base_lines[start:]
    return lines, last_write


def convert(
    circuit: QuantumCircuit, noise: PauliNoise | None
) -> tuple[stim.Circuit, np.ndarray, np.ndarray]:
    """``circuit`` with ``noise`` as a Stim circuit, its noiseless reference sample, and for
    each classical bit the index of the measurement that last wrote it (-1: never written),
    cached per circuit and noise."""
    key = (id(circuit), len(circuit.data), None if noise is None else noise.snapshot.fingerprint)
    cached = _CACHE.get(key)
    if cached is not None and cached[0]() is circuit:
        _CACHE.move_to_end(key)
        return cached[1:]
    lines, last_write = _derived_lines(circuit, noise) or _lines(circuit, noise)
    converted = stim.Circuit("".join(lines))
    reference = converted.reference_sample(bit_packed=True)  # the tableau run: once per circuit
    _CACHE[key] = (weakref.ref(circuit), converted, reference, last_write)
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return converted, reference, last_write


def sample_counts(
    circuit: QuantumCircuit, noise: PauliNoise | None, shots: int, seed: int | None = None
) -> dict[str, int]:
    """Counts of ``shots`` runs of ``circuit`` under ``noise``, keyed as Qiskit keys them."""
    converted, reference, last_write = convert(circuit, noise)
    sampler = converted.compile_sampler(seed=seed, reference_sample=reference)
    measured = sampler.sample(shots)  # (shots, measurements)
    record = np.zeros((circuit.num_clbits, shots), dtype=bool)
    written = last_write >= 0
    record[written] = measured[:, last_write[written]].T
    return counts_of(record, circuit)


def counts_of(record: np.ndarray, circuit: QuantumCircuit) -> dict[str, int]:
    """Qiskit's count keys for a (clbits, shots) record: registers last-first, space-separated,
    each with its bit 0 last."""
    positions = {clbit: i for i, clbit in enumerate(circuit.clbits)}
    registers = [[positions[bit] for bit in register] for register in circuit.cregs] or [
        list(range(len(positions)))
    ]
    rows = np.concatenate([record[list(reversed(bits))] for bits in reversed(registers)], axis=0).T
    widths = [len(bits) for bits in reversed(registers)]
    unique, counts = np.unique(np.packbits(rows, axis=1), axis=0, return_counts=True)
    characters = np.unpackbits(unique, axis=1)[:, : rows.shape[1]] + ord("0")
    keys = {}
    for row, count in zip(characters, counts):
        bits = row.tobytes().decode()
        parts, start = [], 0
        for width in widths:
            parts.append(bits[start : start + width])
            start += width
        keys[" ".join(parts)] = int(count)
    return keys
