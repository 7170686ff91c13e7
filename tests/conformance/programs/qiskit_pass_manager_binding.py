"""A pass manager of one's own and parameter binding, as Qiskit's transpiler and circuit guides
write them: ``PassManager([...])`` run on a parametrised circuit, ``assign_parameters`` for
each value, ``backend.run`` on Aer with a seed, and the statevector primitives.

llqm-expect: transpile execute
llqm-slow
"""

from qiskit import QuantumCircuit, transpile
from qiskit.circuit import Parameter
from qiskit.circuit.library import CXGate
from qiskit.primitives import StatevectorEstimator, StatevectorSampler
from qiskit.quantum_info import SparsePauliOp
from qiskit.transpiler import PassManager
from qiskit.transpiler.passes import InverseCancellation, Optimize1qGatesDecomposition
from qiskit_aer import AerSimulator

phi = Parameter("φ")
circuit = QuantumCircuit(2)
circuit.rx(phi, 0)
circuit.cx(0, 1)
circuit.cx(0, 1)
circuit.cx(0, 1)
circuit.measure_all()

simplified = PassManager([InverseCancellation([CXGate()]), Optimize1qGatesDecomposition()]).run(
    circuit
)
print("ops:", dict(simplified.count_ops()))
backend = AerSimulator(seed_simulator=5)
bound = [simplified.assign_parameters({phi: value}) for value in (0.0, 1.0, 2.0)]
job = backend.run(transpile(bound, backend, optimization_level=0, seed_transpiler=1), shots=128)
for counts in job.result().get_counts():
    print(sorted(counts.items()))

sampler = StatevectorSampler(seed=3)
print(
    "sampled:",
    sorted(sampler.run([(circuit, [1.5])], shots=64).result()[0].data.meas.get_counts().items()),
)
estimator = StatevectorEstimator()
unmeasured = circuit.remove_final_measurements(inplace=False)
print(
    "<ZZ>:",
    round(float(estimator.run([(unmeasured, SparsePauliOp("ZZ"), [0.7])]).result()[0].data.evs), 4),
)
