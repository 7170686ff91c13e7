"""Values are described as they are: complex expectation values, NumPy scalars and arrays,
Mitiq's ``MeasurementResult`` and batches, Qiskit's ``PrimitiveResult`` of every pub shape and
a Sampler's several classical registers; reading them never converts in a way that can fail or
warn (a program that turns warnings into errors is not changed)."""

from __future__ import annotations

import warnings

import cirq
import numpy as np
import pytest
from llqm_qiskit.metrics import describe
from mitiq import MeasurementResult, Observable, PauliString, zne
from qiskit import ClassicalRegister, QuantumCircuit, QuantumRegister
from qiskit.circuit import Parameter
from qiskit.primitives import StatevectorEstimator, StatevectorSampler
from qiskit.quantum_info import SparsePauliOp

import llqm_core
from llqm_core.model.values import number, value_metrics, values_metrics


@pytest.fixture(autouse=True)
def warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.5, 0.5),
        (np.float32(0.25), 0.25),
        (np.complex128(1.5 + 0j), 1.5 + 0j),
        (np.complex128(1.5 + 0.5j), 1.5 + 0.5j),
        (2 - 1j, 2 - 1j),
        (np.array([0.75]), 0.75),
        (np.array(3), 3.0),
        (np.array([1.0, 2.0]), None),
        (True, None),
        ("0.5", None),
    ],
)
def test_a_number_is_read_without_a_conversion_that_can_fail(value, expected):
    assert number(value) == expected and type(number(value)) is type(expected)


def test_a_complex_value_keeps_both_parts_and_other_values_are_named():
    assert value_metrics("v", np.complex128(1 - 2j)) == {"v": 1.0, "v.imag": -2.0}
    assert value_metrics("v", np.float64(0.5)) == {"v": 0.5}
    assert value_metrics("v", np.complex64(0.5)) == {"v": 0.5, "v.imag": 0.0}
    assert value_metrics("v", np.eye(2)) == {"v.kind": "ndarray"}
    assert values_metrics("vs", [1 + 0j, 0.5 + 0.5j]) == {"vs": [1.0, 0.5], "vs.imag": [0.0, 0.5]}
    assert values_metrics("vs", [np.float64(0.1), 2]) == {"vs": [0.1, 2.0]}
    assert values_metrics("vs", [0.1, None]) == {"vs.kind": "NoneType"}


def test_an_estimators_broadcast_pubs_and_a_samplers_registers_are_described():
    theta = Parameter("t")
    ansatz = QuantumCircuit(1)
    ansatz.ry(theta, 0)
    observables = [[SparsePauliOp("Z")], [SparsePauliOp("X")]]
    estimated = (
        StatevectorEstimator()
        .run([(ansatz, observables, [0.1, 0.2, 0.3]), (ansatz, SparsePauliOp("Z"), 0.4)])
        .result()
    )
    metrics = describe(estimated)
    assert metrics["result.pubs"] == 2 and metrics["result.pub_shapes"] == ["2x3", "scalar"]
    assert metrics["result.expectation_values"] == 7

    one = describe(StatevectorEstimator().run([(ansatz, SparsePauliOp("Z"), 0.4)]).result())
    assert one["result.expectation_value"] == pytest.approx(np.cos(0.4))

    q = QuantumRegister(3)
    left, right = ClassicalRegister(2, "left"), ClassicalRegister(1, "right")
    circuit = QuantumCircuit(q, left, right)
    circuit.h(0)
    circuit.measure([0, 1], left)
    circuit.measure(2, right)
    sampled = describe(StatevectorSampler(seed=1).run([circuit], shots=20).result())
    assert sampled["result.registers"] == ["left[2]", "right[1]"]
    assert sampled["result.pub_shapes"] == ["scalar"]


def test_a_mitiq_observables_complex_values_and_measurement_results_are_recorded(store_path):
    qubits = cirq.LineQubit.range(2)
    circuit = cirq.Circuit([cirq.H(qubits[0]), cirq.CNOT(*qubits)] * 3)

    def execute(circuit: cirq.Circuit) -> MeasurementResult:
        result = cirq.DensityMatrixSimulator(seed=1).run(circuit, repetitions=50)
        return MeasurementResult(np.column_stack(list(result.measurements.values())))

    obs = Observable(PauliString("ZZ"))
    with llqm_core.run("complex", store=store_path) as run:
        llqm_core.instrument_all(["mitiq"])
        try:
            value = zne.execute_with_zne(circuit, execute, observable=obs)
        finally:
            llqm_core.uninstrument_all(["mitiq"])
    assert isinstance(value, complex)
    tasks = {t.stage: t for t in llqm_core.ProfileStore(store_path).tasks(run.id)}
    extrapolated = tasks["mitigate.zne.extrapolate"].metrics
    assert extrapolated["zne.mitigated"] == pytest.approx(value.real)
    assert extrapolated["zne.mitigated.imag"] == pytest.approx(value.imag)
    assert len(extrapolated["zne.values.imag"]) == len(extrapolated["zne.values"])
    assert tasks["mitigate.zne"].metrics["fidelity.mitigated"] == pytest.approx(value.real)
    executed = tasks["execute"].metrics
    assert executed["result.shots"] == 50 and executed["result.qubits"] == 2
