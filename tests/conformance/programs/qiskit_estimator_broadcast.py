"""Qiskit's EstimatorV2 on Aer with a parametrised circuit, as Qiskit's primitives guide writes
it: several observables broadcast against an array of parameter values in one pub, and a
second pub with a single observable.

llqm-expect: transpile execute
llqm-slow
"""

import numpy as np
from qiskit import QuantumCircuit
from qiskit.circuit import Parameter
from qiskit.quantum_info import SparsePauliOp
from qiskit.transpiler import generate_preset_pass_manager
from qiskit_aer import AerSimulator
from qiskit_aer.primitives import EstimatorV2

theta = Parameter("θ")
circuit = QuantumCircuit(2)
circuit.h(0)
circuit.cx(0, 1)
circuit.ry(theta, 0)

backend = AerSimulator()
isa = generate_preset_pass_manager(optimization_level=1, backend=backend).run(circuit)
observables = [
    [SparsePauliOp("ZZ").apply_layout(isa.layout)],
    [SparsePauliOp("XX").apply_layout(isa.layout)],
    [SparsePauliOp.from_list([("IY", 0.5), ("ZI", 1.0)]).apply_layout(isa.layout)],
]  # shape (3, 1), broadcast against the parameter values' (4,) to (3, 4)
values = np.linspace(0, np.pi, 4)
estimator = EstimatorV2(options={"run_options": {"seed_simulator": 7}, "default_precision": 0.02})
result = estimator.run([(isa, observables, values), (isa, observables[0][0], [0.3])]).result()
print("shape:", result[0].data.evs.shape)
print("evs:", np.round(result[0].data.evs, 2).tolist())
print("one:", np.round(result[1].data.evs, 2).tolist())
