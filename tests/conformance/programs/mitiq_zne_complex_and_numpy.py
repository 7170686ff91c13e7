"""ZNE with executors that return what NumPy and Mitiq hand out: a complex expectation value
(``Observable.expectation`` of a density matrix), a NumPy float, and a density matrix with an
``Observable`` (Mitiq's ``-> np.ndarray`` executors).

llqm-expect: mitigate.zne mitigate.zne.fold mitigate.zne.extrapolate execute
llqm-slow
"""

import cirq
import numpy as np
from mitiq import Observable, PauliString, zne
from mitiq.zne.scaling import fold_global

qubits = cirq.LineQubit.range(2)
circuit = cirq.Circuit(
    [cirq.rx(0.4).on(qubits[0]), cirq.CNOT(*qubits), cirq.ry(0.3).on(qubits[1])] * 2
)
obs = Observable(PauliString("ZZ"), PauliString("XX", coeff=0.5))


def density_matrix(circuit: cirq.Circuit) -> np.ndarray:
    noisy = circuit.with_noise(cirq.depolarize(p=0.02))
    return cirq.DensityMatrixSimulator().simulate(noisy).final_density_matrix


def complex_execute(circuit):  # untyped, as Mitiq reads a float executor
    return complex(obs._expectation_from_density_matrix(density_matrix(circuit)))


def numpy_execute(circuit: cirq.Circuit) -> float:
    return np.float64(density_matrix(circuit)[0, 0].real)


def matrix_execute(circuit: cirq.Circuit) -> np.ndarray:
    return density_matrix(circuit)


print(f"complex: {zne.execute_with_zne(circuit, complex_execute, scale_noise=fold_global):.4f}")
print(f"numpy: {zne.execute_with_zne(circuit, numpy_execute, scale_noise=fold_global):.4f}")
from_matrix = zne.execute_with_zne(circuit, matrix_execute, observable=obs, scale_noise=fold_global)
print(f"density matrix: {from_matrix:.4f}")
