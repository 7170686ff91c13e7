"""A Qiskit Sampler run of a transpiled circuit, as Qiskit's documentation writes it."""

from qiskit import QuantumCircuit
from qiskit.transpiler import generate_preset_pass_manager
from qiskit_ibm_runtime import SamplerV2 as Sampler
from qiskit_ibm_runtime.fake_provider import FakeManilaV2

backend = FakeManilaV2()
qc = QuantumCircuit(3)
qc.h(0)
qc.cx(0, 1)
qc.cx(1, 2)
qc.measure_all()

pm = generate_preset_pass_manager(backend=backend, optimization_level=1, seed_transpiler=7)
isa_circuit = pm.run(qc)

sampler = Sampler(mode=backend)
sampler.options.simulator.seed_simulator = 11
job = sampler.run([isa_circuit], shots=1000)
result = job.result()
counts = result[0].data.meas.get_counts()
print(sorted(counts.items()))
