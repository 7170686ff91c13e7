"""Transpile in a thread of its own and in a thread pool, as a program that overlaps work does."""

import threading
from concurrent.futures import ThreadPoolExecutor

from qiskit import QuantumCircuit, transpile
from qiskit_ibm_runtime.fake_provider import FakeManilaV2

backend = FakeManilaV2()


def bell(index: int) -> QuantumCircuit:
    circuit = QuantumCircuit(2, name=f"bell{index}")
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.measure_all()
    return circuit


sizes = {}


def compile_one(index: int) -> int:
    sizes[index] = transpile(
        bell(index), backend, optimization_level=1, seed_transpiler=index
    ).size()
    return sizes[index]


worker = threading.Thread(target=compile_one, args=(0,))
worker.start()
worker.join()
with ThreadPoolExecutor(max_workers=2) as pool:
    list(pool.map(compile_one, [1, 2, 3]))
print(sorted(sizes.items()))
