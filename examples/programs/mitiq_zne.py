"""Zero-noise extrapolation with a Qiskit executor on Aer, as Mitiq's documentation writes it."""

import sys

import qiskit
from mitiq import zne
from mitiq.zne.inference import RichardsonFactory
from mitiq.zne.scaling import fold_global
from qiskit_aer import AerSimulator
from qiskit_aer.noise import NoiseModel, depolarizing_error

LEVEL = int(sys.argv[1]) if len(sys.argv) > 1 else 0

circuit = qiskit.QuantumCircuit(2)
for _ in range(5):
    circuit.cx(0, 1)
    circuit.x(0)
    circuit.x(1)

noise_model = NoiseModel()
noise_model.add_all_qubit_quantum_error(depolarizing_error(0.02, 2), ["cx"])
backend = AerSimulator(noise_model=noise_model)


def execute(circuit: qiskit.QuantumCircuit, shots: int = 2000) -> float:
    """Probability of the ground state, measured on the noisy simulator."""
    circuit = circuit.copy()
    circuit.measure_all()
    transpiled = qiskit.transpile(circuit, backend, optimization_level=LEVEL, seed_transpiler=1)
    counts = backend.run(transpiled, shots=shots, seed_simulator=5).result().get_counts()
    return counts.get("00", 0) / shots


unmitigated = execute(circuit)
factory = RichardsonFactory(scale_factors=[1.0, 3.0, 5.0])
mitigated = zne.execute_with_zne(circuit, execute, factory=factory, scale_noise=fold_global)
print(f"unmitigated {unmitigated:.4f} mitigated {mitigated:.4f}")
