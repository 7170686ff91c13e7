"""Transpile and run 100 small circuits: the workload of bench/instrument_overhead.py."""

from qiskit import QuantumCircuit, transpile
from qiskit_aer import AerSimulator
from qiskit_ibm_runtime.fake_provider import FakeManilaV2


def circuit(i: int) -> QuantumCircuit:
    """The loop's ``i``-th circuit: a 3-qubit GHZ with one rotation, measured."""
    made = QuantumCircuit(3)
    made.h(0)
    made.cx(0, 1)
    made.cx(1, 2)
    made.rz(0.1 * i, 2)
    made.measure_all()
    return made


def transpile_and_run(i: int, backend, simulator) -> int:
    """One circuit of the loop: the bench also times them one by one."""
    compiled = transpile(circuit(i), backend, optimization_level=1, seed_transpiler=i)
    counts = simulator.run(compiled, shots=100, seed_simulator=i).result().get_counts()
    return counts.get("000", 0)


def run_with_pass_manager(i: int, pass_manager, simulator) -> int:
    """One circuit as Qiskit's documentation does it: one ``generate_preset_pass_manager`` for
    the loop, ``pm.run`` per circuit."""
    compiled = pass_manager.run(circuit(i))
    counts = simulator.run(compiled, shots=100, seed_simulator=i).result().get_counts()
    return counts.get("000", 0)


if __name__ == "__main__":
    backend = FakeManilaV2()
    simulator = AerSimulator()
    total = 0
    for i in range(100):
        total += transpile_and_run(i, backend, simulator)
    print(total)
