"""QAOA for MaxCut on a 10-node graph, a SciPy optimiser, and ZNE on each evaluation (Mitiq).

Written as Qiskit's and Mitiq's documentation write it: a QAOA ansatz, an executor that runs a
circuit on a noisy Aer simulator and returns the expected cut, ``execute_with_zne`` at each
evaluation of the objective, and ``scipy.optimize.minimize``. One line is LLQM's:
``llqm.iteration(value=..., parameters=...)`` marks the end of each evaluation, since the
evaluation runs three jobs (one per scale factor) and nothing in them says where an iteration
ends. Run it under ``llqm profile`` to see the iterations in the report:

    llqm profile examples/programs/qaoa_zne_loop.py [MAXITER] [--html qaoa.html before the script]
"""

import sys

import numpy as np
import qiskit
from mitiq import zne
from mitiq.zne.inference import RichardsonFactory
from mitiq.zne.scaling import fold_gates_at_random
from qiskit.circuit.library import QAOAAnsatz
from qiskit.quantum_info import SparsePauliOp
from qiskit_aer import AerSimulator
from qiskit_aer.noise import NoiseModel, depolarizing_error
from scipy.optimize import minimize

import llqm_core as llqm

MAXITER = int(sys.argv[1]) if len(sys.argv) > 1 else 12
NODES = 10
SHOTS = 1000

rng = np.random.default_rng(7)
edges = [(i, (i + 1) % NODES) for i in range(NODES)] + [(0, 5), (2, 7), (3, 8)]
cost = SparsePauliOp.from_sparse_list([("ZZ", [a, b], 0.5) for a, b in edges], NODES)

noise_model = NoiseModel()
noise_model.add_all_qubit_quantum_error(depolarizing_error(0.01, 2), ["cx"])
noise_model.add_all_qubit_quantum_error(depolarizing_error(0.001, 1), ["rz", "sx", "x", "h"])
backend = AerSimulator(noise_model=noise_model)
ansatz = qiskit.transpile(
    QAOAAnsatz(cost, reps=1), basis_gates=["cx", "rz", "sx", "x", "h"], optimization_level=1
)


def cut_energy(counts: dict[str, int]) -> float:
    """The cost operator's expectation from counts: 0.5 * <Z_a Z_b> summed over the edges."""
    total = 0.0
    for key, n in counts.items():
        bits = key[::-1]
        total += n * sum(0.5 * (1 if bits[a] == bits[b] else -1) for a, b in edges)
    return total / sum(counts.values())


def executor(circuit: qiskit.QuantumCircuit) -> float:
    measured = circuit.copy()
    measured.measure_all()
    compiled = qiskit.transpile(measured, backend, optimization_level=0)
    counts = backend.run(compiled, shots=SHOTS, seed_simulator=11).result().get_counts()
    return cut_energy(counts)


def objective(parameters: np.ndarray) -> float:
    bound = ansatz.assign_parameters(parameters)
    energy = zne.execute_with_zne(
        bound,
        executor,
        factory=RichardsonFactory(scale_factors=[1.0, 2.0, 3.0]),
        scale_noise=lambda c, s: fold_gates_at_random(c, s, seed=3),
    )
    llqm.iteration(value=energy, parameters=parameters)
    return energy


start = rng.uniform(0, np.pi, ansatz.num_parameters)
found = minimize(objective, start, method="COBYLA", options={"maxiter": MAXITER})
print(f"QAOA on {NODES} nodes: energy {found.fun:.4f} after {found.nfev} evaluations")
