"""ZNE with each of Mitiq's noise-scaling methods and each factory, as Mitiq's ZNE guide writes
it: a density-matrix executor returning a float, ``zne.execute_with_zne(circuit, execute,
factory=..., scale_noise=...)``.

llqm-expect: mitigate.zne mitigate.zne.fold mitigate.zne.extrapolate execute
llqm-slow
"""

import cirq
from mitiq import zne
from mitiq.zne.inference import (
    AdaExpFactory,
    ExpFactory,
    LinearFactory,
    PolyExpFactory,
    PolyFactory,
    RichardsonFactory,
)
from mitiq.zne.scaling import (
    fold_all,
    fold_gates_at_random,
    fold_global,
    insert_id_layers,
)

qubits = cirq.LineQubit.range(2)
circuit = cirq.Circuit([cirq.X(qubits[0]), cirq.CNOT(*qubits), cirq.Y(qubits[1])] * 4)


def execute(circuit: cirq.Circuit, noise_level: float = 0.02) -> float:
    """The probability of the ground state, with depolarizing noise after each moment."""
    noisy = circuit.with_noise(cirq.depolarize(p=noise_level))
    rho = cirq.DensityMatrixSimulator().simulate(noisy).final_density_matrix
    return float(rho[0, 0].real)


print(f"unmitigated: {execute(circuit):.4f}")


def fold_gates_at_random_seeded(circuit: cirq.Circuit, scale_factor: float) -> cirq.Circuit:
    return fold_gates_at_random(circuit, scale_factor, seed=1)


for scale in (fold_global, fold_gates_at_random_seeded, fold_all, insert_id_layers):
    value = zne.execute_with_zne(
        circuit, execute, factory=RichardsonFactory([1.0, 3.0, 5.0]), scale_noise=scale
    )
    print(f"{scale.__name__}: {value:.4f}")
factories = [
    LinearFactory([1.0, 3.0]),
    PolyFactory([1.0, 2.0, 3.0], order=2),
    ExpFactory([1.0, 2.0, 3.0], asymptote=0.25),
    PolyExpFactory([1.0, 2.0, 3.0], order=1, asymptote=0.25),
    AdaExpFactory(steps=4, asymptote=0.25),
]
for factory in factories:
    value = zne.execute_with_zne(circuit, execute, factory=factory, scale_noise=fold_global)
    print(f"{type(factory).__name__}: {value:.4f}")
