"""Transpile and run 100 small circuits: the workload of bench/instrument_overhead.py."""

from qiskit import QuantumCircuit, transpile
from qiskit_aer import AerSimulator
from qiskit_ibm_runtime.fake_provider import FakeManilaV2


def transpile_and_run(i: int, backend, simulator) -> int:
    """One circuit of the loop: the bench also times them one by one."""
    circuit = QuantumCircuit(3)
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.cx(1, 2)
    circuit.rz(0.1 * i, 2)
    circuit.measure_all()
    compiled = transpile(circuit, backend, optimization_level=1, seed_transpiler=i)
    counts = simulator.run(compiled, shots=100, seed_simulator=i).result().get_counts()
    return counts.get("000", 0)


if __name__ == "__main__":
    backend = FakeManilaV2()
    simulator = AerSimulator()
    total = 0
    for i in range(100):
        total += transpile_and_run(i, backend, simulator)
    print(total)
