"""Observables a pipeline scores: exact ideal values and expectations read from counts."""

from __future__ import annotations

import pytest
from llqm_qiskit.circuits import ghz, mirror
from llqm_qiskit.observables.expectation import ideal_parities, neighbour_parities
from qiskit import QuantumCircuit

from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline, run_pipeline


def test_neighbour_parities_of_ghz_and_mirror_circuits_are_ideally_one():
    for circuit in (ghz(100), mirror(100, 3, seed=2)):
        observable = neighbour_parities(circuit)
        assert observable.ideal == pytest.approx(1.0)
        assert len(observable.terms) == 99


def test_neighbour_parities_read_the_mean_zz_from_counts():
    circuit = QuantumCircuit(3, 3)
    circuit.measure(range(3), range(3))
    observable = neighbour_parities(circuit)
    # "011": bit 0 = 1, bit 1 = 1, bit 2 = 0 -> Z0Z1 = +1, Z1Z2 = -1; "000": both +1
    assert observable.expectation([{"011": 1, "000": 1}]) == pytest.approx(0.5)
    assert observable.expectation([{"101": 4}]) == pytest.approx(-1.0)


def test_ideal_parities_of_a_product_state_follow_each_bit():
    circuit = QuantumCircuit(3, 3)
    circuit.x(1)
    circuit.h(2)
    circuit.measure(range(3), range(3))
    assert ideal_parities(circuit, [[0], [1], [0, 1], [2]]) == pytest.approx([1.0, -1.0, -1.0, 0.0])


def test_a_circuit_measuring_one_bit_has_no_neighbour_parities():
    circuit = QuantumCircuit(2, 1)
    circuit.measure(0, 0)
    with pytest.raises(ValueError, match="measures 1 bit"):
        neighbour_parities(circuit)


def test_a_pipeline_scores_neighbour_parities_and_refuses_bits_for_them(store_path):
    config = {
        "circuit": {"kind": "ghz", "qubits": 6},
        "observable": {"kind": "neighbour_parities"},
        "execution": {"shots": 2000, "seed": 3},
    }
    _, data = run_pipeline(parse_pipeline(config), store=store_path)
    assert data["ideal_value"] == pytest.approx(1.0)
    assert 0.5 < data["fidelity"]["fidelity.unmitigated"] < 1.0
    with pytest.raises(
        UserError, match="bits belongs to the parity observable; neighbour_parities takes no bits"
    ):
        parse_pipeline({**config, "observable": {"kind": "neighbour_parities", "bits": [0, 1]}})


def test_an_observable_says_which_qubit_each_bit_it_reads_measures_after_routing():
    """``Observable.readout_map`` is what readout calibration corrects: the qubit each bit of
    the circuits measuring the observable reads, for a Pauli sum (every group alike) and an
    outcome observable, on a circuit placed and routed away from qubits 0-3."""
    from llqm_qiskit.measurement import readout_map
    from llqm_qiskit.observables.expectation import parity
    from llqm_qiskit.observables.pauli import PauliSum
    from qiskit import transpile
    from qiskit.quantum_info import SparsePauliOp
    from qiskit_ibm_runtime.fake_provider import FakeFez

    circuit = QuantumCircuit(4)
    circuit.h(0)
    circuit.cx(0, 3)
    circuit.cx(1, 2)
    circuit.cx(0, 2)
    placed = {"optimization_level": 1, "initial_layout": [40, 13, 77, 5], "seed_transpiler": 3}
    compiled = transpile(circuit, FakeFez(), **placed)
    pauli = PauliSum(SparsePauliOp(["ZZII", "XXII", "IIYY", "ZIZI"]))
    expected = pauli.readout_map(compiled)
    assert sorted(expected) == [0, 1, 2, 3] and set(expected.values()) != {0, 1, 2, 3}
    assert all(readout_map(measuring) == expected for measuring in pauli.measured(compiled))
    measured = transpile(circuit.measure_all(inplace=False), FakeFez(), **placed)
    outcome = parity([0, 1, 2, 3])
    assert outcome.readout_map(measured) == readout_map(outcome.measured(measured)[0])
