"""Measuring a Pauli sum by qubit-wise commuting groups against one circuit per term.

Both read the mean of the 100 stabilizers ``Z_{i-1} X_i Z_{i+1}`` of a 100-qubit cluster state
(the ring's graph state, ideal value 1) on the embedded default (fake_fez's noise, Stim), from
the same compiled circuit, at the same shots per circuit:

- baseline: every term measured by a circuit of its own (what a loop over the terms does);
- LLQM: the terms grouped (``PauliSum``: 2 bases for an even ring), one circuit per group.

Both run as one job. Prints the circuits, the wall time of execution and evaluation, the value
and its standard error for each, and the ratios:

    python bench/pauli_groups.py [--qubits 100] [--shots 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.observables.pauli import PauliSum
from qiskit import QuantumCircuit, transpile
from qiskit.quantum_info import SparsePauliOp


def cluster(qubits: int) -> tuple[QuantumCircuit, SparsePauliOp]:
    circuit = QuantumCircuit(qubits, name=f"cluster_{qubits}")
    circuit.h(range(qubits))
    for q in range(qubits):
        circuit.cz(q, (q + 1) % qubits)
    terms = [("ZXZ", [(i - 1) % qubits, i, (i + 1) % qubits], 1 / qubits) for i in range(qubits)]
    return circuit, SparsePauliOp.from_sparse_list(terms, qubits)


def measure(backend: AerBackend, compiled: QuantumCircuit, parts: list[PauliSum], shots: int):
    """One job of every part's circuits; the summed value, its error and the seconds taken."""
    started = time.perf_counter()
    circuits = [c for part in parts for c in part.measured(compiled)]
    counts = backend.execute(circuits, shots, seed=3)
    value = variance = 0.0
    start = 0
    for part in parts:
        mean, error = part.estimate(counts[start : start + len(part.groups)])
        start += len(part.groups)
        value += mean
        variance += error**2
    return len(circuits), time.perf_counter() - started, value, variance**0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--qubits", type=int, default=100)
    parser.add_argument("--shots", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    circuit, operator = cluster(args.qubits)
    backend = AerBackend(device="fake_fez")
    compiled = transpile(circuit, backend.device, optimization_level=1, seed_transpiler=7)
    per_term = [PauliSum(SparsePauliOp(p, c)) for p, c in zip(operator.paulis, operator.coeffs)]
    grouped = [PauliSum(operator)]
    rows = {}
    for name, parts in (("one circuit per term", per_term), ("grouped (LLQM)", grouped)):
        runs = [measure(backend, compiled, parts, args.shots) for _ in range(args.repeat)]
        rows[name] = (runs[0][0], statistics.median(r[1] for r in runs), runs[-1][2], runs[-1][3])
        circuits, wall, value, error = rows[name]
        print(
            f"{name:22s} circuits {circuits:4d}  wall {wall:7.2f} s  value {value:.3f} ± {error:.3f}"
        )
    base, ours = rows["one circuit per term"], rows["grouped (LLQM)"]
    print(
        f"ratio (per term / grouped): circuits {base[0] / ours[0]:.0f}x, wall {base[1] / ours[1]:.1f}x, "
        f"standard error {base[3] / ours[3]:.2f}x"
    )


if __name__ == "__main__":
    main()
