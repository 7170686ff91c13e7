"""Readout-error mitigation as Mitiq's REM guide writes it (an inverse confusion matrix and an
executor returning ``MeasurementResult``), then REM and ZNE combined: the REM-mitigated
executor handed to ZNE.

llqm-expect: mitigate.rem mitigate.rem.correct mitigate.zne execute
llqm-slow
"""

import cirq
import numpy as np
from mitiq import MeasurementResult, Observable, PauliString, rem, zne
from mitiq.rem import generate_inverse_confusion_matrix

qubits = cirq.LineQubit.range(2)
circuit = cirq.Circuit(cirq.X(qubits[0]), cirq.CNOT(*qubits))
p0, p1 = 0.05, 0.08  # readout flips 0->1 and 1->0
rng = np.random.RandomState(3)
np.random.seed(3)  # Mitiq resamples the corrected distribution with NumPy's global generator


def noisy_readout(circuit: cirq.Circuit) -> MeasurementResult:
    result = cirq.DensityMatrixSimulator(seed=rng).run(
        circuit.with_noise(cirq.depolarize(0.005)), repetitions=2000
    )
    bits = np.column_stack(list(result.measurements.values()))
    flips = rng.random_sample(bits.shape)
    bits = np.where(bits == 0, flips < p0, flips >= p1).astype(int)
    return MeasurementResult(bits)


obs = Observable(PauliString("ZI"), PauliString("IZ"))
inverse = generate_inverse_confusion_matrix(2, p0, p1)
print(f"unmitigated: {obs.expectation(circuit, noisy_readout).real:.3f}")
value = rem.execute_with_rem(circuit, noisy_readout, obs, inverse_confusion_matrix=inverse)
print(f"REM: {value.real:.3f}")
readout_mitigated = rem.mitigate_executor(noisy_readout, inverse_confusion_matrix=inverse)
combined = zne.execute_with_zne(
    circuit, readout_mitigated, observable=obs, scale_noise=zne.scaling.fold_global
)
print(f"REM+ZNE: {combined.real:.3f}")
