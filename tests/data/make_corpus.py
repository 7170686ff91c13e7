"""Write the corpus of user circuits that ``tests/test_corpus.py`` checks and runs.

OpenQASM 2 and 3 files, as a user exports them from Qiskit's circuit library or writes them
by hand: QFT and entangled QFT, QAOA on random and sparse graphs, EfficientSU2 and
RealAmplitudes with random parameters, Grover, phase and amplitude estimation, quantum volume,
IQP, random circuits, GHZ, W and graph states, Bernstein-Vazirani, Deutsch-Jozsa and hidden
shift, from 4 to 100 qubits, some with final measurements and some without. Every file is
seeded, so running the script again writes the same files::

    python tests/data/make_corpus.py          # writes tests/data/corpus/*.qasm

The files are in the repository; the script is how they were made and how to make more.
Three dynamic circuits were written by hand beside them and are not written by the script:
``teleport_3_m_q3.qasm`` (OpenQASM 3 ``if (m[1]) { ... }``), ``repcode_5_m_q2.qasm``
(OpenQASM 2 ``if(s0==1)`` and resets) and ``ipe_2_m_q3.qasm`` (a reset and a conditional
phase).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
from llqm_qiskit.circuits import w_state
from qiskit import QuantumCircuit, qasm2, qasm3, transpile
from qiskit.circuit.library import (
    QFTGate,
    efficient_su2,
    grover_operator,
    phase_estimation,
    qaoa_ansatz,
    quantum_volume,
    random_iqp,
    real_amplitudes,
)
from qiskit.circuit.random import random_circuit
from qiskit.quantum_info import SparsePauliOp

HERE = Path(__file__).parent / "corpus"
#: Gates both OpenQASM 2's qelib1.inc and OpenQASM 3's stdgates.inc define.
BASIS = ["rx", "ry", "rz", "h", "x", "s", "sdg", "t", "tdg", "sx", "cx", "cz", "cp", "swap"]


def _bound(circuit: QuantumCircuit, seed: int) -> QuantumCircuit:
    """A parameterised ansatz with random parameters, as a user would export one."""
    rng = np.random.default_rng(seed)
    return circuit.assign_parameters(rng.uniform(-math.pi, math.pi, circuit.num_parameters))


def qft(n: int) -> QuantumCircuit:
    circuit = QuantumCircuit(n)
    circuit.x(range(0, n, 3))  # a basis state in, a phase pattern out
    circuit.append(QFTGate(n), range(n))
    return circuit


def qft_entangled(n: int) -> QuantumCircuit:
    circuit = QuantumCircuit(n)
    circuit.h(0)
    for q in range(n - 1):
        circuit.cx(q, q + 1)
    circuit.append(QFTGate(n), range(n))
    return circuit


def _random_graph(n: int, degree: int, seed: int) -> list[tuple[int, int]]:
    """A random graph of about ``degree`` edges per node (pairs of a shuffled ring's ends)."""
    rng = random.Random(seed)
    edges: set[tuple[int, int]] = set()
    for _ in range(degree // 2 + 1):
        order = list(range(n))
        rng.shuffle(order)
        for a, b in zip(order, order[1:]):
            edges.add((min(a, b), max(a, b)))
    return sorted(edges)[: n * degree // 2]


def qaoa(n: int, layers: int, edges: list[tuple[int, int]], seed: int) -> QuantumCircuit:
    cost = SparsePauliOp.from_sparse_list([("ZZ", list(e), 1.0) for e in edges], n)
    return _bound(qaoa_ansatz(cost, reps=layers), seed)


def ring(n: int) -> list[tuple[int, int]]:
    return [(q, q + 1) for q in range(n - 1)] + [(0, n - 1)]


def grover(n: int, marked: str) -> QuantumCircuit:
    oracle = QuantumCircuit(n)
    zeros = [q for q, bit in enumerate(reversed(marked)) if bit == "0"]
    if zeros:
        oracle.x(zeros)
    oracle.h(n - 1)
    oracle.mcx(list(range(n - 1)), n - 1)
    oracle.h(n - 1)
    if zeros:
        oracle.x(zeros)
    circuit = QuantumCircuit(n)
    circuit.h(range(n))
    step = grover_operator(oracle)
    for _ in range(int(math.pi / 4 * math.sqrt(2**n))):
        circuit.compose(step, inplace=True)
    return circuit


def qpe(evaluation: int, phase: float) -> QuantumCircuit:
    unitary = QuantumCircuit(1)
    unitary.p(2 * math.pi * phase, 0)
    circuit = QuantumCircuit(evaluation + 1)
    circuit.x(evaluation)
    circuit.compose(phase_estimation(evaluation, unitary), inplace=True)
    return circuit


def amplitude_estimation(evaluation: int, probability: float) -> QuantumCircuit:
    """Canonical amplitude estimation: phase estimation of the Grover operator of
    ``A = ry(2 asin(sqrt(p)))`` on one qubit."""
    prepare = QuantumCircuit(1)
    prepare.ry(2 * math.asin(math.sqrt(probability)), 0)
    oracle = QuantumCircuit(1)
    oracle.z(0)
    circuit = QuantumCircuit(evaluation + 1)
    circuit.compose(prepare, [evaluation], inplace=True)
    circuit.compose(phase_estimation(evaluation, grover_operator(oracle, prepare)), inplace=True)
    return circuit


def iqp(n: int, seed: int) -> QuantumCircuit:
    return random_iqp(n, seed=seed)


def random_gates(n: int, depth: int, seed: int) -> QuantumCircuit:
    return random_circuit(n, depth, max_operands=2, seed=seed)


def ghz(n: int) -> QuantumCircuit:
    circuit = QuantumCircuit(n)
    circuit.h(0)
    for q in range(n - 1):
        circuit.cx(q, q + 1)
    return circuit


def graph(n: int, degree: int, seed: int) -> QuantumCircuit:
    circuit = QuantumCircuit(n)
    circuit.h(range(n))
    for a, b in _random_graph(n, degree, seed):
        circuit.cz(a, b)
    return circuit


def bernstein_vazirani(n: int, seed: int) -> QuantumCircuit:
    """``n - 1`` input qubits and the oracle's ancilla; the secret is read off the inputs."""
    secret = random.Random(seed).getrandbits(n - 1) | 1
    circuit = QuantumCircuit(n)
    circuit.x(n - 1)
    circuit.h(range(n))
    for q in range(n - 1):
        if secret >> q & 1:
            circuit.cx(q, n - 1)
    circuit.h(range(n - 1))
    return circuit


def deutsch_jozsa(n: int, seed: int) -> QuantumCircuit:
    """A balanced oracle (parity of a random subset of the inputs)."""
    rng = random.Random(seed)
    circuit = QuantumCircuit(n)
    circuit.x(n - 1)
    circuit.h(range(n))
    for q in range(n - 1):
        if rng.random() < 0.5 or q == 0:
            circuit.cx(q, n - 1)
    circuit.h(range(n - 1))
    return circuit


def hidden_shift(n: int, seed: int) -> QuantumCircuit:
    """The hidden shift of the inner-product bent function on ``n`` (even) qubits: the
    noiseless outcome is the shift itself."""
    rng = random.Random(seed)
    shift = [rng.randrange(2) for _ in range(n - 1)] + [1]
    half = n // 2
    circuit = QuantumCircuit(n)
    circuit.h(range(n))
    circuit.x([q for q in range(n) if shift[q]])
    for q in range(half):
        circuit.cz(q, q + half)
    circuit.x([q for q in range(n) if shift[q]])
    circuit.h(range(n))
    for q in range(half):
        circuit.cz(q, q + half)
    circuit.h(range(n))
    return circuit


#: name -> how the circuit is made. The name carries the family and the width.
FAMILIES: dict[str, Callable[[], QuantumCircuit]] = {
    "qft_5": lambda: qft(5),
    "qft_12": lambda: qft(12),
    "qft_30": lambda: qft(30),
    "qftentangled_6": lambda: qft_entangled(6),
    "qftentangled_14": lambda: qft_entangled(14),
    "qaoa_p1_10": lambda: qaoa(10, 1, _random_graph(10, 3, 1), 1),
    "qaoa_p2_16": lambda: qaoa(16, 2, _random_graph(16, 3, 2), 2),
    "qaoa_p1_ring_40": lambda: qaoa(40, 1, ring(40), 3),
    "qaoa_p2_ring_32": lambda: qaoa(32, 2, ring(32), 4),
    "qaoa_p1_100": lambda: qaoa(100, 1, _random_graph(100, 3, 5), 5),
    "efficientsu2_6": lambda: _bound(efficient_su2(6, reps=2), 6),
    "efficientsu2_20": lambda: _bound(efficient_su2(20, reps=1, entanglement="linear"), 7),
    "efficientsu2_40": lambda: _bound(efficient_su2(40, reps=1, entanglement="linear"), 8),
    "realamplitudes_12": lambda: _bound(real_amplitudes(12, reps=2), 9),
    "realamplitudes_60": lambda: _bound(real_amplitudes(60, reps=1, entanglement="linear"), 10),
    "grover_4": lambda: grover(4, "1011"),
    "grover_6": lambda: grover(6, "100110"),
    "qpe_5": lambda: qpe(4, 5 / 16),
    "qpe_8": lambda: qpe(7, 0.3),
    "ae_5": lambda: amplitude_estimation(4, 0.25),
    "ae_7": lambda: amplitude_estimation(6, 0.3),
    "qv_5": lambda: quantum_volume(5, seed=11),
    "qv_10": lambda: quantum_volume(10, seed=12),
    "qv_40": lambda: quantum_volume(40, seed=13),
    "iqp_6": lambda: iqp(6, 14),
    "iqp_12": lambda: iqp(12, 15),
    "random_6x4": lambda: random_gates(6, 4, 16),
    "random_12x5": lambda: random_gates(12, 5, 17),
    "random_40x3": lambda: random_gates(40, 3, 18),
    "random_100x1": lambda: random_gates(100, 1, 19),
    "ghz_8": lambda: ghz(8),
    "ghz_50": lambda: ghz(50),
    "ghz_100": lambda: ghz(100),
    "wstate_5": lambda: w_state(5),
    "wstate_16": lambda: w_state(16),
    "wstate_40": lambda: w_state(40),
    "wstate_100": lambda: w_state(100),
    "graphstate_10": lambda: graph(10, 3, 20),
    "graphstate_60": lambda: graph(60, 2, 21),
    "bv_8": lambda: bernstein_vazirani(8, 22),
    "bv_40": lambda: bernstein_vazirani(40, 23),
    "bv_100": lambda: bernstein_vazirani(100, 24),
    "dj_6": lambda: deutsch_jozsa(6, 25),
    "dj_30": lambda: deutsch_jozsa(30, 26),
    "hiddenshift_6": lambda: hidden_shift(6, 27),
    "hiddenshift_20": lambda: hidden_shift(20, 28),
}


def written(name: str, circuit: QuantumCircuit, index: int) -> tuple[str, str]:
    """The file's name and text: every other file in OpenQASM 3, every third without final
    measurements (as the exporter left them, for the executor to add)."""
    flat = transpile(circuit, basis_gates=BASIS, optimization_level=0)
    if index % 3 != 2:
        flat.measure_all()
    version = 3 if index % 2 else 2
    text = qasm3.dumps(flat) if version == 3 else qasm2.dumps(flat)
    measured = "" if index % 3 == 2 else "_m"
    return f"{name}{measured}_q{version}.qasm", text + "\n"


def main() -> None:
    HERE.mkdir(parents=True, exist_ok=True)
    for old in HERE.glob("*.qasm"):
        old.unlink()
    for index, (name, make) in enumerate(FAMILIES.items()):
        filename, text = written(name, make(), index)
        (HERE / filename).write_text(text)
        print(filename)


if __name__ == "__main__":
    main()
