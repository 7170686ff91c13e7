"""The Qiskit plugin describes circuits and results, and snapshots a fake Heron r2's calibration."""

from __future__ import annotations

import pytest
from qiskit import QuantumCircuit

from llqm_qiskit import circuits

import llqm_core as llqm
from llqm_qiskit import circuit_metrics, hardware_snapshot


def ghz(n: int) -> QuantumCircuit:
    return circuits.ghz(n)


def test_circuit_metrics_count_qubits_gates_and_two_qubit_gates():
    metrics = circuit_metrics(ghz(5))
    assert metrics["circuit.qubits"] == 5
    assert metrics["circuit.two_qubit_gates"] == 4
    assert metrics["circuit.ops.cx"] == 4 and metrics["circuit.ops.h"] == 1
    assert metrics["circuit.measurements"] == 5
    assert metrics["circuit.depth"] == ghz(5).depth()


def test_a_task_returning_a_circuit_records_its_metrics_through_the_hook(store_path, fresh_plugins):
    @llqm.task(stage="generate")
    def make() -> QuantumCircuit:
        return ghz(4)

    with llqm.run("qiskit metrics") as run:
        make()
    task = llqm.ProfileStore(store_path).tasks(run.id)[0]
    assert task.metrics["circuit.qubits"] == 4 and task.metrics["circuit.two_qubit_gates"] == 3


@pytest.fixture(scope="module")
def fez():
    from qiskit_ibm_runtime.fake_provider import FakeFez

    return FakeFez()


def test_snapshot_of_fake_fez_has_its_156_qubits_and_couplers(fez):
    snapshot = hardware_snapshot(fez)
    assert snapshot.backend == "fake_fez" and snapshot.num_qubits == 156
    assert len(snapshot.qubits) == 156
    assert all(c.t1_s and c.t2_s and c.readout_error is not None for c in snapshot.qubits.values())
    cz = [g for g in snapshot.gates if g.gate == "cz"]
    assert len(cz) == 352
    assert any(g.error == 1.0 for g in cz)  # the broken couplers a hardware-aware layout must avoid
    assert snapshot.fingerprint == hardware_snapshot(fez).fingerprint


def test_ghz_builder_and_its_success_fraction():
    from llqm_qiskit import ghz_success

    assert ghz(3).count_ops()["cx"] == 2 and ghz(3).num_clbits == 3
    assert circuits.ghz(3, measure=False).num_clbits == 0
    assert ghz_success({"000": 45, "111": 45, "010": 10}) == 0.9
    with pytest.raises(ValueError, match="at least 2 qubits"):
        circuits.ghz(1)
