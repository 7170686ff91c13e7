"""Readout-error mitigation with an inverse confusion matrix, as Mitiq's documentation writes it."""

import numpy as np
import qiskit
from mitiq import MeasurementResult, Observable, PauliString, rem
from qiskit_aer import AerSimulator
from qiskit_aer.noise import NoiseModel, ReadoutError

P_FLIP = 0.1
np.random.seed(1)  # Mitiq samples the corrected bitstrings with NumPy's global generator

circuit = qiskit.QuantumCircuit(2)
circuit.x(0)
circuit.x(1)
circuit.x(0)
circuit.x(1)

noise_model = NoiseModel()
noise_model.add_all_qubit_readout_error(ReadoutError([[1 - P_FLIP, P_FLIP], [P_FLIP, 1 - P_FLIP]]))
backend = AerSimulator(noise_model=noise_model)


def execute(circuit: qiskit.QuantumCircuit) -> MeasurementResult:
    # Mitiq adds the measurements the observable needs
    counts = backend.run(circuit, shots=4000, seed_simulator=3).result().get_counts()
    # Mitiq's bitstrings put qubit 0 first; Qiskit's keys put it last
    return MeasurementResult.from_counts({key[::-1]: n for key, n in counts.items()})


observable = Observable(PauliString("ZI"), PauliString("IZ"))
icm = rem.generate_inverse_confusion_matrix(2, P_FLIP, P_FLIP)
unmitigated = Observable(PauliString("ZI"), PauliString("IZ")).expectation(circuit, execute)
mitigated = rem.execute_with_rem(circuit, execute, observable, inverse_confusion_matrix=icm)
print(f"unmitigated {unmitigated.real:.4f} mitigated {mitigated.real:.4f}")
