"""Clifford data regression, digital dynamical decoupling and layerwise Richardson
extrapolation, as Mitiq's guides write them, with a density-matrix executor.

llqm-expect: mitigate.cdr mitigate.ddd mitigate.lre execute
llqm-slow
"""

import cirq
import numpy as np
from mitiq import Observable, PauliString, cdr, ddd, lre

qubits = cirq.LineQubit.range(2)
circuit = cirq.Circuit(
    cirq.H(qubits[0]),
    cirq.CNOT(*qubits),
    cirq.rz(0.3).on(qubits[0]),
    cirq.I(qubits[1]),
    cirq.I(qubits[1]),
    cirq.CNOT(*qubits),
    cirq.rx(0.7).on(qubits[1]),
)


def execute(circuit: cirq.Circuit, noise_level: float = 0.03) -> float:
    noisy = circuit.with_noise(cirq.amplitude_damp(noise_level))
    rho = cirq.DensityMatrixSimulator().simulate(noisy).final_density_matrix
    return float(rho[0, 0].real)


def simulate(circuit: cirq.Circuit) -> np.ndarray:
    return cirq.DensityMatrixSimulator().simulate(circuit).final_density_matrix


def noisy_density_matrix(circuit: cirq.Circuit) -> np.ndarray:
    return simulate(circuit.with_noise(cirq.depolarize(0.03)))


obs = Observable(PauliString("ZZ"))
cdr_value = cdr.execute_with_cdr(
    circuit,
    noisy_density_matrix,
    observable=obs,
    simulator=simulate,
    num_training_circuits=6,
    seed=1,
)
print(f"CDR: {cdr_value.real:.4f}")
print(f"DDD: {ddd.execute_with_ddd(circuit, execute, rule=ddd.rules.xx):.4f}")
print(f"LRE: {lre.execute_with_lre(circuit, execute, degree=2, fold_multiplier=2):.4f}")
