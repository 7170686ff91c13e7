"""ZNE through Mitiq's decorator, with a batched executor (``-> list[float]``) as Mitiq's
executors guide writes one: Mitiq hands it every folded circuit at once.

llqm-expect: mitigate.zne mitigate.zne.fold mitigate.zne.extrapolate execute
"""

import cirq
from mitiq import zne

qubits = cirq.LineQubit.range(2)
circuit = cirq.Circuit([cirq.H(qubits[0]), cirq.CNOT(*qubits), cirq.H(qubits[0])] * 2)


def ground_state_probability(circuit: cirq.Circuit) -> float:
    noisy = circuit.with_noise(cirq.depolarize(p=0.02))
    rho = cirq.DensityMatrixSimulator().simulate(noisy).final_density_matrix
    return float(rho[0, 0].real)


def batched_execute(circuits: list[cirq.Circuit]) -> list[float]:
    return [ground_state_probability(c) for c in circuits]


@zne.zne_decorator(scale_noise=zne.scaling.fold_global)
def mitigated(circuit: cirq.Circuit) -> float:
    return ground_state_probability(circuit)


print(f"decorated: {mitigated(circuit):.4f}")
batched = zne.execute_with_zne(circuit, batched_execute, scale_noise=zne.scaling.fold_global)
print(f"batched: {batched:.4f}")
