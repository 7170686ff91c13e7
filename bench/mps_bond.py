"""Matrix-product-state bond dimensions: what the check estimates against what Aer reaches.

For each circuit of a family (hardware-efficient ansatze, W states, QAOA at p = 1 and 2 on
sparse graphs, random circuits of depth 1 to 5), compiled for fake_fez and folded as ZNE
folds it (after transpiling, scale factors 1, 3 and 5), the bond dimension Aer's MPS reaches
on the folded circuits (a noiseless run and a few trajectories with the device's Pauli noise,
capped far above the limit, read from Aer's MPS log; a noisy log Aer garbles is skipped) is
compared with two estimates made from
the logical circuit: the check's trial run (``mps.trial_bond``, one noiseless trajectory) and
the structural bound it replaced (2 to the two-qubit gates across the worst cut). Prints each
ratio estimate / reached; the target (issue 33) is the trial within 4x for every circuit::

    python bench/mps_bond.py [--widths 16,24,40] [--shots 3]
"""

from __future__ import annotations

import argparse
import math
import random

from llqm_mitiq.zne import fold_gates
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.backends.mps import bond_estimate, mps_log, trial_bond
from llqm_qiskit.circuits import w_state
from llqm_qiskit.devices.noise import PauliNoise
from qiskit import QuantumCircuit, transpile
from qiskit.circuit.library import efficient_su2, qaoa_ansatz
from qiskit.quantum_info import SparsePauliOp
from qiskit_aer import AerSimulator

CAP = 512


def hea(n: int, reps: int, seed: int) -> QuantumCircuit:
    ansatz = efficient_su2(n, reps=reps, entanglement="linear")
    rng = random.Random(seed)
    return ansatz.assign_parameters([rng.uniform(-math.pi, math.pi) for _ in ansatz.parameters])


def qaoa(n: int, layers: int, degree: int, seed: int) -> QuantumCircuit:
    """QAOA for MaxCut on a ring (degree 2) or a ring with random chords (degree 3)."""
    rng = random.Random(seed)
    edges = {(q, (q + 1) % n) for q in range(n)}
    if degree > 2:
        order = list(range(n))
        rng.shuffle(order)
        edges |= {tuple(sorted(pair)) for pair in zip(order[::2], order[1::2])}
    cost = SparsePauliOp.from_sparse_list([("ZZ", list(e), 1.0) for e in sorted(edges)], n)
    ansatz = qaoa_ansatz(cost, reps=layers)
    return ansatz.assign_parameters([rng.uniform(0, math.pi) for _ in ansatz.parameters])


def random_depth(n: int, depth: int, seed: int) -> QuantumCircuit:
    """``depth`` layers of random one-qubit rotations and CNOTs on random disjoint pairs."""
    rng = random.Random(seed)
    circuit = QuantumCircuit(n)
    for _ in range(depth):
        for q in range(n):
            circuit.u(rng.uniform(0, math.pi), rng.uniform(-3, 3), rng.uniform(-3, 3), q)
        order = list(range(n))
        rng.shuffle(order)
        for a, b in zip(order[::2], order[1::2]):
            circuit.cx(a, b)
    return circuit


def family(widths: list[int]) -> list[tuple[str, QuantumCircuit]]:
    found = []
    for n in widths:
        found += [(f"hea reps 1, {n} q", hea(n, 1, n)), (f"hea reps 2, {n} q", hea(n, 2, n))]
        found += [(f"w state, {n} q", w_state(n))]
        found += [(f"qaoa p=1 ring, {n} q", qaoa(n, 1, 2, n))]
        found += [(f"qaoa p=2 ring, {n} q", qaoa(n, 2, 2, n))]
        found += [(f"qaoa p=1 3-regular, {n} q", qaoa(n, 1, 3, n))]
        found += [(f"random depth {d}, {n} q", random_depth(n, d, d)) for d in (1, 3, 5)]
    return found


def reached(circuits: list[QuantumCircuit], noise: PauliNoise, shots: int) -> int:
    """The largest bond dimension Aer's MPS reaches over noisy trajectories of ``circuits``."""
    simulator = AerSimulator(
        method="matrix_product_state",
        matrix_product_state_max_bond_dimension=CAP,
        mps_log_data=True,
    )
    best = 1
    for circuit in circuits:
        for noisy in (False, True):
            try:
                run = noise.apply(circuit) if noisy else circuit
                result = simulator.run(run, shots=shots, seed_simulator=1).result()
            except UnicodeDecodeError:  # Aer 0.18 garbles the log of some noisy runs
                continue
            found = mps_log(result)[1]
            if found <= CAP:  # a garbled log reads numbers no run can reach: left out
                best = max(best, found)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="16,24,40")
    parser.add_argument("--shots", type=int, default=3)
    args = parser.parse_args()
    backend = AerBackend(device="fake_fez")
    noise = PauliNoise(backend.snapshot())
    print(
        f"{'circuit':28s} {'reached':>8s} {'trial':>6s} {'ratio':>6s} {'bound':>14s} {'ratio':>10s}"
    )
    ratios = []
    for name, circuit in family([int(w) for w in args.widths.split(",")]):
        compiled = transpile(circuit.measure_all(inplace=False), backend.device, seed_transpiler=1)
        folds = [fold_gates(compiled, scale, {"cz"}, seed=1) for scale in (1, 3, 5)]
        actual = reached(folds, noise, args.shots)
        trial = trial_bond(circuit, 64)
        bound = bond_estimate(circuit)
        ratio = trial.bond / actual
        ratios.append(ratio)
        print(
            f"{name:28s} {actual:8d} {trial.bond:5d}{'+' if trial.truncated else ' '} "
            f"{ratio:6.2f} {bound:14,d} {bound / actual:10.3g}"
        )
    worst = max(max(ratios), 1 / min(ratios))
    print(
        f"trial / reached from {min(ratios):.2f} to {max(ratios):.2f} over {len(ratios)} circuits "
        f"(worst factor {worst:.2f}; target within 4); '+' marks a trial truncated at 64"
    )


if __name__ == "__main__":
    main()
