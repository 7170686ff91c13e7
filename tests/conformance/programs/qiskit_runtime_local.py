"""qiskit-ibm-runtime's local testing mode, as its guide writes it: SamplerV2 and EstimatorV2
with a fake backend as their mode, inside a Batch, with options set on the primitive.

llqm-expect: transpile execute
llqm-slow
"""

from qiskit import QuantumCircuit
from qiskit.quantum_info import SparsePauliOp
from qiskit.transpiler import generate_preset_pass_manager
from qiskit_ibm_runtime import Batch, EstimatorV2, SamplerV2
from qiskit_ibm_runtime.fake_provider import FakeManilaV2

backend = FakeManilaV2()
circuit = QuantumCircuit(2)
circuit.h(0)
circuit.cx(0, 1)
measured = circuit.measure_all(inplace=False)
pass_manager = generate_preset_pass_manager(
    optimization_level=1, backend=backend, seed_transpiler=1
)
isa_measured, isa = pass_manager.run([measured, circuit])

with Batch(backend=backend) as batch:
    sampler = SamplerV2(mode=batch)
    sampler.options.default_shots = 200
    sampler.options.simulator.seed_simulator = 11
    counts = sampler.run([isa_measured]).result()[0].data.meas.get_counts()
    estimator = EstimatorV2(mode=batch)
    estimator.options.default_shots = 400
    estimator.options.simulator.seed_simulator = 11
    observable = SparsePauliOp("ZZ").apply_layout(isa.layout)
    value = estimator.run([(isa, observable)]).result()[0].data.evs
print("counts:", sorted(counts.items()))
print(f"<ZZ>: {float(value):.3f}")
