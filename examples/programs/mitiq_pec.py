"""Probabilistic error cancellation with Mitiq's representations, as Mitiq's documentation writes it."""

import qiskit
from mitiq import pec
from mitiq.pec.representations.depolarizing import (
    represent_operations_in_circuit_with_local_depolarizing_noise,
)
from qiskit_aer import AerSimulator
from qiskit_aer.noise import NoiseModel, depolarizing_error

NOISE_LEVEL = 0.02

circuit = qiskit.QuantumCircuit(2)
circuit.h(0)
circuit.cx(0, 1)
circuit.h(0)
circuit.h(1)

noise_model = NoiseModel()
noise_model.add_all_qubit_quantum_error(
    depolarizing_error(4 * NOISE_LEVEL / 3, 1), ["h", "x", "y", "z"]
)
noise_model.add_all_qubit_quantum_error(
    depolarizing_error(4 * NOISE_LEVEL / 3, 1).tensor(depolarizing_error(4 * NOISE_LEVEL / 3, 1)),
    ["cx"],
)
backend = AerSimulator(method="density_matrix", noise_model=noise_model)


def execute(circuit: qiskit.QuantumCircuit) -> float:
    """Probability of 00, exactly, from the noisy density matrix."""
    circuit = circuit.copy()
    circuit.save_probabilities_dict()
    transpiled = qiskit.transpile(circuit, backend, optimization_level=0)
    probabilities = backend.run(transpiled).result().data()["probabilities"]
    return probabilities.get(0, 0.0)


representations = represent_operations_in_circuit_with_local_depolarizing_noise(
    circuit, NOISE_LEVEL
)
mitigated = pec.execute_with_pec(
    circuit, execute, representations=representations, num_samples=20, random_state=7
)
print(f"unmitigated {execute(circuit):.4f} mitigated {mitigated:.4f}")
