"""Benchmark circuits, sized and seeded, most with a known ideal answer to score noise against.

``generate(kind, qubits, depth=..., seed=...)`` is the one entry point a pipeline file names;
the functions behind it can be called directly too.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path

from qiskit import QuantumCircuit, qasm2, qasm3
from qiskit.circuit.library import QFTGate

from llqm_core.plugin import checks

_ONE_QUBIT_CLIFFORDS = ("h", "s", "sdg", "x", "y", "z", "sx", "sxdg")


def ghz(qubits: int, measure: bool = True) -> QuantumCircuit:
    """``(|0...0> + |1...1>)/sqrt(2)`` on a line of CNOTs: ideal outcomes are all zeros or all ones."""
    _check_width("ghz", qubits, 2)
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


def mirror(
    qubits: int, depth: int, seed: int | None = None, measure: bool = True
) -> QuantumCircuit:
    """``depth`` random Clifford layers, then their inverse: the ideal outcome is all zeros.

    Each layer is a random one-qubit Clifford on every qubit and CNOTs on neighbouring pairs
    (alternating even and odd pairs), so the circuit stays Clifford (stabilizer-simulable at
    100+ qubits) and two-qubit gates grow linearly with ``qubits * depth``."""
    _check_width("mirror", qubits, 2)
    checks.whole("depth", depth)
    rng = random.Random(seed)
    forward = QuantumCircuit(qubits)
    for layer in range(depth):
        for q in range(qubits):
            getattr(forward, rng.choice(_ONE_QUBIT_CLIFFORDS))(q)
        for q in range(layer % 2, qubits - 1, 2):
            forward.cx(q, q + 1)
        forward.barrier()
    circuit = forward.compose(forward.inverse())
    circuit.name = f"mirror_{qubits}x{depth}"
    if measure:
        circuit.measure_all()
    return circuit


def random_layered(
    qubits: int, depth: int, seed: int | None = None, measure: bool = True
) -> QuantumCircuit:
    """``depth`` layers of random single-qubit rotations and CNOTs on random disjoint pairs."""
    _check_width("random", qubits, 2)
    checks.whole("depth", depth)
    rng = random.Random(seed)
    circuit = QuantumCircuit(qubits, name=f"random_{qubits}x{depth}")
    for _ in range(depth):
        for q in range(qubits):
            circuit.u(
                rng.uniform(0, math.pi),
                rng.uniform(-math.pi, math.pi),
                rng.uniform(-math.pi, math.pi),
                q,
            )
        order = list(range(qubits))
        rng.shuffle(order)
        for a, b in zip(order[::2], order[1::2]):
            circuit.cx(a, b)
    if measure:
        circuit.measure_all()
    return circuit


def random_regular_graph(nodes: int, degree: int, seed: int | None = None) -> list[tuple[int, int]]:
    """Edges of a random ``degree``-regular simple graph (pairing model, retried until simple)."""
    if degree >= nodes or (nodes * degree) % 2:
        raise ValueError(
            f"no {degree}-regular graph on {nodes} nodes exists; need degree < nodes and nodes*degree even."
        )
    rng = random.Random(seed)
    for _ in range(1000):
        stubs = [n for n in range(nodes) for _ in range(degree)]
        rng.shuffle(stubs)
        edges = {(min(a, b), max(a, b)) for a, b in zip(stubs[::2], stubs[1::2])}
        if len(edges) == len(stubs) // 2 and all(a != b for a, b in edges):
            return sorted(edges)
    raise ValueError(
        f"could not draw a simple {degree}-regular graph on {nodes} nodes; try another seed."
    )


def qaoa_maxcut(
    qubits: int,
    layers: int = 1,
    seed: int | None = None,
    degree: int = 3,
    gamma: float = 0.4,
    beta: float = 0.3,
    measure: bool = True,
) -> QuantumCircuit:
    """QAOA for MaxCut on a random ``degree``-regular graph: ``layers`` of cost and mixer."""
    _check_width("qaoa", qubits, 3)
    checks.whole("layers", layers)
    edges = random_regular_graph(qubits, degree, seed)
    circuit = QuantumCircuit(qubits, name=f"qaoa_maxcut_{qubits}x{layers}")
    circuit.h(range(qubits))
    for _ in range(layers):
        for a, b in edges:
            circuit.rzz(2 * gamma, a, b)
        circuit.rx(2 * beta, range(qubits))
    circuit.metadata = {"graph_edges": [list(e) for e in edges]}
    if measure:
        circuit.measure_all()
    return circuit


def qft(qubits: int, measure: bool = True) -> QuantumCircuit:
    """The quantum Fourier transform on ``qubits``."""
    _check_width("qft", qubits, 1)
    circuit = QuantumCircuit(qubits, name=f"qft_{qubits}")
    circuit.append(QFTGate(qubits), range(qubits))
    circuit = circuit.decompose()
    circuit.name = f"qft_{qubits}"
    if measure:
        circuit.measure_all()
    return circuit


def w_state(qubits: int) -> QuantumCircuit:
    """The W state on ``qubits``, as a chain of controlled rotations: a non-Clifford state whose
    matrix-product form needs bond dimension 2 only, a check on MPS estimates."""
    _check_width("w_state", qubits, 1)
    circuit = QuantumCircuit(qubits, name=f"w_state_{qubits}")
    circuit.x(0)
    for k in range(qubits - 1):
        circuit.cry(2 * math.acos(math.sqrt(1 / (qubits - k))), k, k + 1)
        circuit.cx(k + 1, k)
    return circuit


def nearest_neighbour(qubits: int, gates: int) -> QuantumCircuit:
    """Exactly ``gates`` gates for transpile-scale tests: a block of ``h`` on every qubit and cx
    on even pairs, then ``sx`` on every qubit and cx on odd pairs, composed over and over, then
    the start of one more block.

    Composing a ready block keeps building 10^7 gates to seconds, where a Python-level
    ``append`` per gate would take minutes."""
    _check_width("nearest-neighbour", qubits, 2)
    checks.whole("gates", gates)
    block = QuantumCircuit(qubits)
    for parity, one_qubit in ((0, block.h), (1, block.sx)):
        one_qubit(range(qubits))
        for q in range(parity, qubits - 1, 2):
            block.cx(q, q + 1)
    circuit = QuantumCircuit(qubits, name=f"nn_{qubits}x{gates}")
    blocks, rest = divmod(gates, len(block))
    for _ in range(blocks):
        circuit.compose(block, inplace=True, copy=False)
    for instruction in block.data[:rest]:
        circuit.append(instruction, copy=False)
    return circuit


def load_qasm(path: str | Path) -> QuantumCircuit:
    """An OpenQASM 2 or 3 file, told apart by its ``OPENQASM`` header."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read QASM file {path}: {exc.strerror}.") from None
    header = next(
        (
            line.strip()
            for line in text.splitlines()
            if line.strip() and not line.strip().startswith("//")
        ),
        "",
    )
    if header.startswith("OPENQASM 2"):
        try:
            circuit = qasm2.loads(text, custom_instructions=qasm2.LEGACY_CUSTOM_INSTRUCTIONS)
        except Exception as exc:  # QASM2ParseError, from a parser of the whole language
            raise ValueError(f"{path} is not valid OpenQASM: {_said(exc)}") from None
    elif header.startswith("OPENQASM 3"):
        circuit = _load_qasm3(path, text)
    else:
        raise ValueError(f"{path} does not start with an 'OPENQASM 2' or 'OPENQASM 3' header.")
    circuit.name = path.stem
    return circuit


def _said(exc: BaseException) -> str:
    """An exception's message on one line, or its type's name where it has none."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _load_qasm3(path: Path, text: str) -> QuantumCircuit:
    """An OpenQASM 3 file by Qiskit's importer. A file the reference grammar refuses is not
    valid OpenQASM 3; anything else the importer fails on may be valid OpenQASM 3 that it does
    not support (it builds a ``QuantumCircuit`` from part of the language only: a ``for`` loop
    indexing qubits by its variable fails with a bare ``TypeError``), and is said to be so."""
    from openqasm3.parser import QASM3ParsingError  # the importer's parser, loaded with it

    try:
        return qasm3.loads(text)
    except QASM3ParsingError as exc:
        message = _said(exc) if str(exc) else _syntax_error_place(exc)
        raise ValueError(f"{path} is not valid OpenQASM 3: {message}.") from None
    except Exception as exc:  # QASM3ImporterError, or the importer's own TypeErrors
        raise ValueError(
            f"Qiskit's OpenQASM 3 importer (qiskit.qasm3.loads) could not read {path}: "
            f"{_said(exc).rstrip('.')}; the file may be valid OpenQASM 3 that the importer does "
            "not support (it reads part of the language only), so write that part in simpler "
            "terms (unroll a loop, name qubits by constant indices) or export the circuit again."
        ) from None


def _syntax_error_place(exc: BaseException) -> str:
    """Where the OpenQASM 3 grammar stopped reading, from the parser's error (it has no message)."""
    cause = exc.__cause__
    inner = cause.args[0] if cause is not None and cause.args else cause
    token = getattr(inner, "offendingToken", None)
    if token is None:
        return "the OpenQASM 3 grammar does not accept it"
    return (
        f"the OpenQASM 3 grammar does not accept {token.text!r} at line {token.line}, "
        f"column {token.column + 1}"
    )


def _check_width(kind: str, qubits: int, least: int) -> None:
    if not isinstance(qubits, int) or isinstance(qubits, bool) or qubits < least:
        raise ValueError(f"a {kind} circuit needs at least {least} qubits, not {qubits!r}.")


KINDS: dict[str, Callable[..., QuantumCircuit]] = {
    "ghz": lambda qubits, depth, seed: ghz(qubits),
    "mirror": lambda qubits, depth, seed: mirror(qubits, depth, seed),
    "random": lambda qubits, depth, seed: random_layered(qubits, depth, seed),
    "qaoa": lambda qubits, depth, seed: qaoa_maxcut(qubits, depth, seed),
    "qft": lambda qubits, depth, seed: qft(qubits),
}


def generate(kind: str, qubits: int, depth: int = 1, seed: int | None = None) -> QuantumCircuit:
    """A circuit by family name: ``ghz``, ``mirror`` (depth = Clifford layers), ``random``
    (depth = layers), ``qaoa`` (depth = QAOA layers, 3-regular graph) or ``qft``."""
    if kind not in KINDS:
        raise ValueError(
            f"unknown circuit kind {kind!r}; choose one of: {', '.join(sorted(KINDS))}."
        )
    return KINDS[kind](qubits, depth, seed)
