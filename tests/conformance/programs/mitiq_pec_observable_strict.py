"""PEC of an observable with a ``-> MeasurementResult`` executor, in a program that turns warnings
into errors as test suites do (``warnings.simplefilter("error")``).

llqm-expect: mitigate.pec mitigate.pec.sample mitigate.pec.combine execute
llqm-slow
"""

import warnings

import cirq
import numpy as np
from mitiq import MeasurementResult, Observable, PauliString, pec
from mitiq.pec.representations.depolarizing import (
    represent_operations_in_circuit_with_local_depolarizing_noise,
)

qubits = cirq.LineQubit.range(2)
circuit = cirq.Circuit(cirq.H(qubits[0]), cirq.CNOT(*qubits))
noise_level = 0.01
representations = represent_operations_in_circuit_with_local_depolarizing_noise(
    circuit, noise_level
)
rng = np.random.RandomState(11)


def execute(circuit: cirq.Circuit) -> MeasurementResult:
    noisy = circuit.with_noise(cirq.depolarize(noise_level))
    result = cirq.DensityMatrixSimulator(seed=rng).run(noisy, repetitions=200)
    return MeasurementResult(np.column_stack(list(result.measurements.values())))


warnings.simplefilter("error")
obs = Observable(PauliString("ZZ"))
value = pec.execute_with_pec(
    circuit,
    execute,
    observable=obs,
    representations=representations,
    num_samples=20,
    random_state=5,
)
print(f"PEC: {value:.4f}")
