"""Transpile in child processes: a forked multiprocessing pool, and a fresh Python interpreter."""

import multiprocessing
import subprocess
import sys

from qiskit import QuantumCircuit, transpile
from qiskit_ibm_runtime.fake_provider import FakeManilaV2


def compile_ghz(qubits: int) -> int:
    circuit = QuantumCircuit(qubits)
    circuit.h(0)
    for qubit in range(qubits - 1):
        circuit.cx(qubit, qubit + 1)
    circuit.measure_all()
    compiled = transpile(circuit, FakeManilaV2(), optimization_level=1, seed_transpiler=qubits)
    return compiled.num_nonlocal_gates()


if __name__ == "__main__":
    if sys.argv[1:] == ["child"]:
        print(compile_ghz(4))
        sys.exit(0)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        print(pool.map(compile_ghz, [2, 3]))
    child = subprocess.run(
        [sys.executable, __file__, "child"], capture_output=True, text=True, check=True
    )
    print(child.stdout.strip())
