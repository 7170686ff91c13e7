"""Qiskit's SamplerV2 on Aer, as Qiskit's primitives guide writes it: a circuit transpiled by a
preset pass manager, measured into two classical registers, sampled with a fixed seed.

llqm-expect: transpile execute
"""

from qiskit import ClassicalRegister, QuantumCircuit, QuantumRegister
from qiskit.transpiler import generate_preset_pass_manager
from qiskit_aer import AerSimulator
from qiskit_aer.primitives import SamplerV2

qubits = QuantumRegister(3, "q")
left, right = ClassicalRegister(2, "left"), ClassicalRegister(1, "right")
circuit = QuantumCircuit(qubits, left, right)
circuit.h(0)
circuit.cx(0, 1)
circuit.cx(1, 2)
circuit.measure([0, 1], left)
circuit.measure(2, right)

backend = AerSimulator(seed_simulator=42)
isa_circuit = generate_preset_pass_manager(optimization_level=1, backend=backend).run(circuit)
sampler = SamplerV2(seed=42)
result = sampler.run([isa_circuit], shots=256).result()
data = result[0].data
print("left:", sorted(data.left.get_counts().items()))
print("right:", sorted(data.right.get_counts().items()))
