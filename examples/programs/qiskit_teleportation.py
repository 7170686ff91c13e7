"""Quantum teleportation with feed-forward (``if_test``), as Qiskit's dynamic-circuit guide
writes it, run by SamplerV2 on a fake device whose target declares ``if_else``."""

from qiskit import QuantumCircuit
from qiskit.transpiler import generate_preset_pass_manager
from qiskit_ibm_runtime import SamplerV2 as Sampler
from qiskit_ibm_runtime.fake_provider import FakeManilaV2

backend = FakeManilaV2()
qc = QuantumCircuit(3, 3)  # bits 0 and 1 carry the feed-forward, bit 2 the result
qc.ry(0.7, 0)  # the state to teleport
qc.h(1)
qc.cx(1, 2)
qc.cx(0, 1)
qc.h(0)
qc.measure([0, 1], [0, 1])
with qc.if_test((qc.clbits[1], 1)):
    qc.x(2)
with qc.if_test((qc.clbits[0], 1)):
    qc.z(2)
qc.ry(-0.7, 2)  # undo the preparation: q2 reads 0 when the state arrived
qc.measure(2, 2)

pm = generate_preset_pass_manager(backend=backend, optimization_level=1, seed_transpiler=7)
isa_circuit = pm.run(qc)

sampler = Sampler(mode=backend)
sampler.options.simulator.seed_simulator = 11
result = sampler.run([isa_circuit], shots=500).result()
counts = result[0].data.c.get_counts()
print(sorted(counts.items()))
