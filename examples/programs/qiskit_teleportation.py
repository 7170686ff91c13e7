"""Quantum teleportation with feed-forward (``if_test``), as Qiskit's dynamic-circuit guide
writes it, run by SamplerV2 on a fake device whose target declares ``if_else``."""

from qiskit import ClassicalRegister, QuantumCircuit, QuantumRegister
from qiskit.transpiler import generate_preset_pass_manager
from qiskit_ibm_runtime import SamplerV2 as Sampler
from qiskit_ibm_runtime.fake_provider import FakeManilaV2

backend = FakeManilaV2()
qr = QuantumRegister(3, "q")
z_bit, x_bit, out = (
    ClassicalRegister(1, "z"),
    ClassicalRegister(1, "x"),
    ClassicalRegister(1, "out"),
)
qc = QuantumCircuit(qr, z_bit, x_bit, out)
qc.ry(0.7, 0)  # the state to teleport
qc.h(1)
qc.cx(1, 2)
qc.cx(0, 1)
qc.h(0)
qc.measure(0, z_bit[0])
qc.measure(1, x_bit[0])
with qc.if_test((x_bit, 1)):
    qc.x(2)
with qc.if_test((z_bit, 1)):
    qc.z(2)
qc.ry(-0.7, 2)  # undo the preparation: q2 reads 0 when the state arrived
qc.measure(2, out[0])

pm = generate_preset_pass_manager(backend=backend, optimization_level=1, seed_transpiler=7)
isa_circuit = pm.run(qc)

sampler = Sampler(mode=backend)
sampler.options.simulator.seed_simulator = 11
result = sampler.run([isa_circuit], shots=500).result()
counts = result[0].data.out.get_counts()
print(sorted(counts.items()))
