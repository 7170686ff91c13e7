"""ZNE of an observable, as Mitiq's guide writes it: an executor annotated ``-> MeasurementResult``
and ``zne.mitigate_executor(execute, observable=obs, scale_noise=fold_global)``.

llqm-expect: mitigate.zne mitigate.zne.fold mitigate.zne.extrapolate execute
"""

import cirq
import numpy as np
from mitiq import MeasurementResult, Observable, PauliString, zne
from mitiq.zne.scaling import fold_global

qubits = cirq.LineQubit.range(2)
circuit = cirq.Circuit(cirq.H(qubits[0]), cirq.CNOT(*qubits), cirq.rx(0.3).on(qubits[1]))
noise = cirq.depolarize(p=0.01)
rng = np.random.RandomState(7)


def execute(circuit: cirq.Circuit) -> MeasurementResult:
    result = cirq.DensityMatrixSimulator(seed=rng).run(circuit.with_noise(noise), repetitions=500)
    bitstrings = np.column_stack(list(result.measurements.values()))
    return MeasurementResult(bitstrings)


# terms that one measurement circuit reads (Mitiq 1.1 pairs several groups of several circuits wrongly)
obs = Observable(PauliString("ZZ"), PauliString("Z", coeff=-1.75))
mitigated = zne.mitigate_executor(execute, observable=obs, scale_noise=fold_global)
print(f"ZNE: {mitigated(circuit):.4f}")
