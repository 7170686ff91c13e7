"""The user's own circuits and observables: OpenQASM files as benchmark suites export them
(tests/qasm/, written for these tests), Pauli-sum observables under every mitigation
technique, exact ideal values by the method that fits, and check-time refusals."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from conftest import ROOT
from llqm_qiskit.backends.mps import bond_estimate
from llqm_qiskit.observables.estimator import Estimator, estimate
from llqm_qiskit.observables.ideal import choose, ideal_values
from llqm_qiskit.observables.pauli import PauliSum, operator_from
from qiskit import QuantumCircuit, qasm2
from qiskit.quantum_info import SparsePauliOp, Statevector

from llqm_core.cli import main
from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline, run_pipeline
from llqm_core.store.profile_store import ProfileStore

QASM = ROOT / "tests" / "qasm"


def pipeline(qasm: str, observable: dict, **sections) -> dict:
    return {
        "circuit": {"qasm": str(QASM / qasm)},
        "observable": observable,
        "execution": {"shots": 2000, "seed": 5},
        **sections,
    }


def pipeline_file(tmp_path, qasm: str, terms: str):
    """A pipeline file on disk (and its store) for the CLI: the QASM file with a Pauli sum."""
    path, store = tmp_path / "p.toml", tmp_path / "s.sqlite"
    path.write_text(
        f'[circuit]\nqasm = "{QASM / qasm}"\n[observable]\nkind = "pauli"\n{terms}\n'
        f'[output]\nstore = "{store}"\n'
    )
    return path, store


def task_metrics(store_path, run_id, stage):
    tasks = ProfileStore(store_path, readonly=True).tasks(run_id)
    return [t.metrics for t in tasks if t.stage == stage]


# ---- Pauli sums: terms as Qiskit users write them, grouped, measured in their bases ----


def test_terms_sparse_terms_and_a_file_give_the_same_operator(tmp_path):
    labels = operator_from(terms=[["ZZI", 0.5], ["IXX", -1.0]])
    sparse = operator_from(sparse_terms=[["ZZ", [0, 1], 0.5], ["XX", [1, 2], -1.0]], num_qubits=3)
    # from_list: the label's last character is qubit 0; from_sparse_list names the qubits
    assert labels.equiv(SparsePauliOp.from_list([("ZZI", 0.5), ("IXX", -1.0)]))
    assert sparse.equiv(
        SparsePauliOp.from_sparse_list([("ZZ", [0, 1], 0.5), ("XX", [1, 2], -1)], 3)
    )
    path = tmp_path / "h.json"
    path.write_text(json.dumps([["ZZI", 0.5], ["IXX", -1.0]]))
    assert operator_from(file=str(path)).equiv(labels)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"terms": [["ZZ", 0.5]], "file": "h.json"}, "exactly one of terms, sparse_terms or file"),
        ({"terms": [["ZQ", 0.5]]}, "not a valid Pauli sum"),
        ({"terms": [["ZZ", [0.0, 1.0]]]}, "coefficients must be real"),
        ({"sparse_terms": [["ZZ", [0, 1], 1.0]]}, "need num_qubits"),
        ({"terms": "ZZ"}, "terms must be a non-empty list of \\[label, coefficient\\] pairs"),
    ],
)
def test_a_bad_pauli_observable_is_one_sentence(options, message):
    with pytest.raises(UserError, match=message):
        parse_pipeline(pipeline("wstate_5.qasm", {"kind": "pauli", **options}))


def test_qubit_wise_commuting_groups_are_measured_each_in_its_own_basis():
    # Exact probabilities of each basis circuit's outcomes give the exact expectation back.
    circuit = QuantumCircuit(3)
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.ry(0.7, 2)
    circuit.s(2)
    operator = SparsePauliOp.from_list([("IZZ", 0.5), ("IXX", 0.25), ("YII", -1.0), ("XII", 2.0)])
    observable = PauliSum(operator)
    assert len(observable.groups) == len(observable.measured(circuit)) == 2
    readout = []
    for measured in observable.measured(circuit):
        body = measured.remove_final_measurements(inplace=False)
        probabilities = Statevector(body).probabilities_dict()
        readout.append({key: int(round(p * 1_000_000)) for key, p in probabilities.items()})
    value, error = observable.estimate(readout)
    exact = float(np.real(Statevector(circuit).expectation_value(operator)))
    assert value == pytest.approx(exact, abs=1e-4)
    assert 0 < error < 0.01


@pytest.mark.parametrize("technique", ["none", "zne", "rem", "rem+zne", "pec", "rem+pec"])
def test_every_technique_mitigates_a_pauli_sum_with_a_standard_error(store_path, technique):
    config = pipeline(
        "wstate_5.qasm",
        {
            "kind": "pauli",
            "terms": [["ZZIII", 0.5], ["IIIXX", 0.5], ["YYIII", 0.25], ["IIZII", 1.0]],
        },
        mitigation={"technique": technique, "pec": {"samples": 40}},
    )
    run_id, data = run_pipeline(parse_pipeline(config), store=store_path)
    observable = data["observable"]
    assert len(observable.groups) == 2  # {ZZ.., ..Z.., ..XX.?} {YY...}: two bases
    circuit = QuantumCircuit.from_qasm_file(str(QASM / "wstate_5.qasm"))
    exact = float(np.real(Statevector(circuit).expectation_value(observable.operator)))
    assert data["ideal_value"] == pytest.approx(exact, abs=1e-9)
    assert data["ideal_method"] == "statevector"
    assert data["value_error"] > 0 and data["unmitigated_error"] > 0
    assert abs(data["value"] - exact) < 6 * data["value_error"] + 0.15
    (recorded,) = task_metrics(store_path, run_id, "observable")
    assert recorded["observable.groups"] == 2 and recorded["observable.shots_per_group"] == 2000
    figures = data["fidelity"]
    assert figures["fidelity.mitigated_stderr"] == pytest.approx(data["value_error"])
    executes = task_metrics(store_path, run_id, "execute")
    assert len(executes) == (2 if technique.startswith("rem") else 1)  # the groups share a job


@pytest.mark.slow  # an 8-qubit density matrix folded up to 5x: about a minute on 2 busy cores
def test_zne_on_a_pauli_sum_reduces_the_error_of_a_noisy_circuit(store_path):
    config = pipeline(
        "qftentangled_8.qasm",
        {
            "kind": "pauli",
            "sparse_terms": [["ZZ", [i, i + 1], 1.0] for i in range(7)],
            "num_qubits": 8,
        },
        mitigation={"technique": "zne"},
    )
    _, data = run_pipeline(parse_pipeline(config), store=store_path)
    figures = data["fidelity"]
    assert figures["fidelity.error_mitigated"] < figures["fidelity.error_unmitigated"]


def test_estimate_takes_qiskit_objects_and_returns_value_and_standard_error(store_path):
    circuit = QuantumCircuit(3)
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.cx(1, 2)
    observable = SparsePauliOp.from_list([("ZZI", 1.0), ("XXX", 1.0)])
    found = estimate(circuit, observable, mitigation="rem", shots=3000, seed=2, store=store_path)
    assert found.ideal == pytest.approx(2.0) and found.ideal_method == "stabilizer"
    assert found.std_error > 0 and abs(found.value - 2.0) < 0.2
    result = (
        Estimator(mitigation="none", shots=1000, seed=2, store=store_path)
        .run([(circuit, observable)])
        .result()
    )
    assert float(result[0].data.evs) == pytest.approx(1.8, abs=0.3)
    assert float(result[0].data.stds) > 0
    assert result[0].metadata["ideal"] == pytest.approx(2.0)
    recorded = ProfileStore(store_path, readonly=True).run(result[0].metadata["llqm.run_id"])
    assert recorded.status.value == "completed"


def test_an_estimator_pub_with_a_list_of_observables_runs_each(store_path):
    """Qiskit's EstimatorV2 takes (circuit, [observable, ...]): ``evs`` then has the list's
    shape, one value per observable, each an LLQM run of its own."""
    circuit = QuantumCircuit(2)
    circuit.h(0)
    circuit.cx(0, 1)
    pubs = [(circuit, [SparsePauliOp("ZZ"), "XX", {"ZI": 1.0}])]
    (result,) = Estimator(mitigation="none", shots=500, seed=3, store=store_path).run(pubs).result()
    assert result.data.evs.shape == (3,) == result.data.stds.shape
    assert result.data.evs[0] == pytest.approx(1.0, abs=0.3)  # a Bell state: <ZZ> = <XX> = 1
    assert result.data.evs[1] == pytest.approx(1.0, abs=0.3)
    assert result.data.evs[2] == pytest.approx(0.0, abs=0.3)  # and <ZI> = 0
    assert result.metadata["ideal"] == pytest.approx([1.0, 1.0, 0.0])
    runs = ProfileStore(store_path, readonly=True)
    assert {runs.run(i).status.value for i in result.metadata["llqm.run_id"]} == {"completed"}


@pytest.mark.parametrize("label", ["ZZ", "ZZZZ"])
def test_estimate_refuses_an_observable_of_another_width_as_qiskits_estimator_does(
    label, store_path
):
    """Qiskit's EstimatorV2 requires the observable's width to be the circuit's; padding a
    narrower one would measure qubits the user did not name (a logical observable beside a
    transpiled circuit)."""
    circuit = QuantumCircuit(3, name="ghz3")
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.cx(1, 2)
    sentence = (
        rf"the observable acts on {len(label)} qubits but circuit 'ghz3' has 3; as with "
        r"Qiskit's EstimatorV2 they must be equal"
    )
    with pytest.raises(ValueError, match=sentence):
        estimate(circuit, SparsePauliOp(label), shots=100, store=store_path)
    good = (circuit, SparsePauliOp("ZZZ"))
    with pytest.raises(ValueError, match=sentence):  # refused before the first pub runs
        Estimator(shots=100, store=store_path).run([good, (circuit, SparsePauliOp(label))])
    assert not store_path.exists() or not ProfileStore(store_path, readonly=True).runs()


def test_an_estimator_option_it_does_not_have_is_named_when_it_is_made():
    with pytest.raises(
        TypeError, match=r"Estimator has no option 'shotz'; its options are: mitigation, "
    ):
        Estimator(shotz=100)


# ---- any OpenQASM file: with or without measurements ----


def test_a_file_without_measurements_is_measured_for_an_outcome_observable(store_path):
    run_id, data = run_pipeline(
        parse_pipeline(pipeline("wstate_5.qasm", {"kind": "neighbour_parities"})), store=store_path
    )
    assert any("measures nothing" in w for w in data["warnings"])
    (generated,) = task_metrics(store_path, run_id, "generate")
    assert generated["circuit.measures_nothing"] is True
    assert data["ideal_value"] is not None and data["fidelity"]["fidelity.unmitigated"] > 0


def test_deutsch_jozsa_with_its_own_measurements_scores_its_ideal_outcome(store_path):
    _, data = run_pipeline(
        parse_pipeline(pipeline("dj_6.qasm", {"kind": "ideal_outcomes"})), store=store_path
    )
    assert data["ideal_value"] == pytest.approx(1.0)
    assert data["fidelity"]["fidelity.unmitigated"] > 0.7


def test_a_mid_circuit_measurement_runs_for_outcomes_and_is_refused_for_a_pauli_sum(store_path):
    _, data = run_pipeline(
        parse_pipeline(pipeline("midcircuit_3.qasm", {"kind": "parity", "bits": [1, 2]})),
        store=store_path,
    )
    # q1 and q2 stay correlated: the ideal parity is 1, exact from the circuit's two branches
    assert data["ideal_method"] == "enumerated" and data["ideal_value"] == pytest.approx(1.0)
    assert data["fidelity"]["fidelity.unmitigated"] > 0.5
    with pytest.raises(UserError, match="measures in the middle"):
        parse_pipeline(pipeline("midcircuit_3.qasm", {"kind": "pauli", "terms": [["ZZI", 1.0]]}))


def test_classical_control_runs_and_its_ideal_value_is_enumerated(store_path):
    """``if(c==1) x q[1]`` copies the random bit c[0] into c[1]: the parity of both is 1."""
    _, data = run_pipeline(
        parse_pipeline(pipeline("classical_control_2.qasm", {"kind": "parity", "bits": [0, 1]})),
        store=store_path,
    )
    assert data["ideal_method"] == "enumerated" and data["ideal_value"] == pytest.approx(1.0)
    assert 0.8 < data["value"] <= 1.0
    with pytest.raises(UserError, match="Pauli-sum observable cannot be measured after it"):
        parse_pipeline(
            pipeline("classical_control_2.qasm", {"kind": "pauli", "terms": [["ZZ", 1]]})
        )


def test_an_observable_wider_than_the_circuit_is_refused_at_check_time():
    with pytest.raises(UserError, match="acts on 6 qubits, more than the 5"):
        parse_pipeline(pipeline("wstate_5.qasm", {"kind": "pauli", "terms": [["ZZZZZZ", 1.0]]}))


def test_check_says_the_ideal_and_simulation_methods_and_records_nothing(tmp_path, capsys):
    path, store = pipeline_file(
        tmp_path,
        "vqe_hea_40.qasm",
        'sparse_terms = [["Z", [0], 1.0], ["ZZ", [19, 20], 1.0]]\nnum_qubits = 40',
    )
    assert main(["run", "--check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "ideal value: matrix_product_state" in out
    assert re.search(
        r"execution: matrix_product_state \(bond dimension \d+ reached by a trial run", out
    )
    assert not store.exists()


def test_a_circuit_no_method_can_run_is_refused_at_check_time_with_the_estimate(tmp_path):
    from test_corpus import brickwork

    config = {
        "circuit": {"circuit": brickwork(36, 16)},
        "observable": {"kind": "pauli", "operator": SparsePauliOp("Z" * 36)},
    }
    with pytest.raises(UserError, match="trial run reached bond dimension 64, the matrix-product"):
        parse_pipeline(config)


def test_qasm_and_observable_files_are_read_relative_to_the_pipeline_file(
    tmp_path, monkeypatch, capsys
):
    """``llqm run dir/x.toml`` from elsewhere reads ``dir/c.qasm``; an absolute path is kept."""
    directory = tmp_path / "dir"
    directory.mkdir()
    (directory / "c.qasm").write_text((QASM / "qaoa_12.qasm").read_text())
    (directory / "h.json").write_text((QASM / "qaoa_12_cost.json").read_text())
    path = directory / "x.toml"
    path.write_text(
        '[circuit]\nqasm = "c.qasm"\n[observable]\nkind = "pauli"\nfile = "h.json"\n'
        f'[output]\nstore = "{tmp_path / "s.sqlite"}"\n'
    )
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--check", "dir/x.toml"]) == 0
    assert "qubit-wise commuting group(s)" in capsys.readouterr().out
    absolute = path.read_text().replace('"c.qasm"', f'"{QASM / "wstate_5.qasm"}"')
    path.write_text(absolute.replace('file = "h.json"', 'terms = [["ZZZZZ", 1.0]]'))
    assert main(["run", "--check", "dir/x.toml"]) == 0
    capsys.readouterr()
    (directory / "c.qasm").rename(tmp_path / "c.qasm")  # in the working directory only
    path.write_text(path.read_text().replace(str(QASM / "wstate_5.qasm"), "c.qasm"))
    assert main(["run", "--check", "dir/x.toml"]) == 2
    assert "cannot read QASM file dir/c.qasm: No such file" in capsys.readouterr().err


def _executions(parsed) -> list:
    return [s for s in parsed.fit.steps if "matrix product state" in s.basis]


def test_the_fit_of_a_parsed_wide_circuit_uses_its_own_bond_dimension(store_path):
    """The estimate before parsing models an MPS at the limit; once the circuit is known, the
    fit uses the bond dimension of the circuit the run executes (8 for the ansatz compiled, 2
    for its logical circuit), the one the execution line says."""
    config = pipeline(
        "vqe_hea_40.qasm",
        {"kind": "pauli", "sparse_terms": [["Z", [0], 1.0]], "num_qubits": 40},
        backend={"name": "aer", "mps_max_bond": 64},
    )
    parsed = parse_pipeline(config, store=str(store_path))
    (execution,) = _executions(parsed)
    (line,) = [n for n in parsed.notes if n.startswith("execution:")]
    bond = int(line.split("bond dimension ")[1].split()[0])
    assert bond < 64 and f"bond dimension estimated at {bond}" in execution.basis
    at_limit = parsed.backend.estimate(40, 1000, 2000, clifford=False)
    at_own = parsed.backend.estimate(40, 1000, 2000, clifford=False, bond=2)
    assert at_own.wall_s * 10 < at_limit.wall_s and at_own.memory_bytes * 10 < at_limit.memory_bytes
    assert execution.wall_s < at_limit.wall_s


def test_a_parsed_circuit_beyond_the_time_limit_is_still_refused_with_its_estimate(store_path):
    circuit = "\n".join(
        ["OPENQASM 2.0;", 'include "qelib1.inc";', "qreg q[36];"]
        + [f"ry(0.3) q[{q}];" for q in range(36)]
        + [f"cx q[{q}],q[{35 - q}];" for _ in range(6) for q in range(18)]
    )
    path = store_path.parent / "entangled_36.qasm"
    path.write_text(circuit + "\n")
    config = {
        "circuit": {"qasm": str(path)},
        "observable": {"kind": "pauli", "terms": [["Z" * 36, 1.0]]},
        "execution": {"shots": 1_000_000, "seed": 5},  # over a minute on 16 threads too
        "run": {"max_minutes": 1},
    }
    with pytest.raises(
        UserError,
        match="refused: .*bond dimension estimated at \\d+(, on \\d+ threads)?\\).*max_minutes",
    ):
        parse_pipeline(config, store=str(store_path))


# ---- ideal values: stabilizer at any width, statevector, MPS with truncation, or unknown ----


def test_a_100_qubit_graph_state_has_a_stabilizer_ideal_value(store_path):
    config = pipeline(
        "graphstate_100.qasm",
        {
            "kind": "pauli",
            "sparse_terms": [["XZ", [0, 1], 0.5], ["ZXZ", [0, 1, 2], 0.5]],
            "num_qubits": 100,
        },
    )
    _, data = run_pipeline(parse_pipeline(config), store=store_path)
    # X0 Z1 Z99 and Z0 X1 Z2 are the ring's stabilizers: <.> = 1 each; X0 Z1 alone is 0
    assert data["ideal_method"] == "stabilizer" and data["ideal_value"] == pytest.approx(0.5)
    assert 0.2 < data["value"] < 0.8


def test_a_40_qubit_ansatz_gets_an_mps_ideal_value_and_runs_on_mps(store_path):
    config = pipeline(
        "vqe_hea_40.qasm",
        {
            "kind": "pauli",
            "sparse_terms": [["ZZ", [i, i + 1], 1 / 39] for i in range(39)],
            "num_qubits": 40,
        },
        execution={"shots": 200, "seed": 1},
    )
    run_id, data = run_pipeline(parse_pipeline(config), store=store_path)
    assert data["ideal_method"] == "matrix_product_state" and data["ideal_value"] is not None
    (recorded,) = task_metrics(store_path, run_id, "observable")
    assert recorded["ideal.truncation_error"] == 0.0 and recorded["ideal.bond_dimension"] <= 8
    simulated = task_metrics(store_path, run_id, "execute.simulate")
    assert simulated[0]["execute.method"] == "matrix_product_state"
    assert simulated[0]["execute.bond_dimension_estimate"] <= 8


def test_mps_ideal_values_match_the_statevector_and_report_truncation():
    circuit = QuantumCircuit(12)
    for layer in range(4):
        for q in range(12):
            circuit.ry(0.3 * q + layer, q)
        for q in range(layer % 2, 11, 2):
            circuit.cx(q, q + 1)
    operator = SparsePauliOp.from_sparse_list([("ZZ", [i, i + 1], 1.0) for i in range(11)], 12)
    exact = float(np.real(Statevector(circuit).expectation_value(operator)))
    from llqm_qiskit.observables.ideal import IdealMethod, _mps_values

    full = _mps_values(circuit, [operator], 64, IdealMethod("matrix_product_state", "test"))
    assert full.values[0] == pytest.approx(exact, abs=1e-9) and full.truncation_error == 0.0
    cut = _mps_values(circuit, [operator], 2, IdealMethod("matrix_product_state", "test"))
    assert cut.truncation_error > 0 and cut.bond_dimension == 2
    assert bond_estimate(circuit) <= 16


def test_an_unknown_ideal_value_leaves_the_values_without_errors(store_path, monkeypatch):
    # its branches are not enumerated (a state of over 0 qubits), and noiseless shots of it
    # would take longer than the limit: none are run
    monkeypatch.setattr("llqm_qiskit.observables.branches.MAX_QUBITS", 0)
    monkeypatch.setattr("llqm_qiskit.observables.ideal.IDEAL_MAX_S", 1e-6)
    _, data = run_pipeline(
        parse_pipeline(pipeline("midcircuit_3.qasm", {"kind": "parity", "bits": [2]})),
        store=store_path,
    )
    figures = data["fidelity"]
    assert figures["fidelity.ideal_method"] == "unknown"
    assert "fidelity.unmitigated" in figures and "fidelity.error_unmitigated" not in figures
    assert main(["--store", str(store_path), "report"]) == 0


def test_choose_prefers_stabilizer_then_statevector_then_mps():
    clifford = QuantumCircuit(150)
    clifford.h(0)
    for q in range(149):
        clifford.cx(q, q + 1)
    assert choose(clifford).method == "stabilizer"
    small = QuantumCircuit(4)
    small.ry(0.2, 0)
    assert choose(small).method == "statevector"
    wide = QuantumCircuit(60)
    wide.ry(0.2, range(60))
    wide.cx(0, 1)
    assert choose(wide).method == "matrix_product_state"
    assert ideal_values(small, [SparsePauliOp("IIIZ")]).values[0] == pytest.approx(np.cos(0.2))


@pytest.mark.parametrize(("qubits", "method"), [(24, "statevector"), (32, "matrix_product_state")])
def test_ideal_outcomes_of_a_wide_w_state_come_from_aer(qubits, method):
    """A statevector while it fits (Aer's: quantum_info's took 18 s at 24 qubits), then
    matrix product states."""
    from llqm_qiskit.observables.expectation import _unitary_part, ideal_outcomes, support_method

    circuit = QuantumCircuit(qubits, name=f"w{qubits}")
    circuit.x(0)
    for k in range(qubits - 1):  # the W state's ladder, as wstate_5.qasm writes it
        circuit.cry(2 * np.arccos(np.sqrt(1 / (qubits - k))), k, k + 1)
        circuit.cx(k + 1, k)
    circuit.measure_all()
    assert support_method(_unitary_part(circuit)[0]) == method
    observable = ideal_outcomes(circuit)
    assert len(observable.terms) == qubits  # one excitation on each qubit
    assert observable.ideal == pytest.approx(1.0, abs=1e-9)


def test_a_parsed_non_clifford_file_is_estimated_again_and_refused_when_too_slow(tmp_path):
    from test_corpus import brickwork

    circuit = brickwork(24, 12)  # entangled past what a matrix product state runs cheaply
    circuit.name = "ansatz_24"
    circuit.measure_all()
    path = tmp_path / "ansatz_24.qasm"
    path.write_text(qasm2.dumps(circuit))
    config = {
        "circuit": {"qasm": str(path)},
        "observable": {"kind": "neighbour_parities"},
        "run": {"max_minutes": 1},
    }
    # from its header it could be Clifford (cheap); parsed, it is a noisy simulation of 24 qubits
    with pytest.raises(
        UserError, match="estimated to take .*(statevector|matrix product state) of 24 qubits"
    ):
        parse_pipeline(config)


def test_the_cli_refuses_a_file_the_check_refuses_in_one_line_and_records_nothing(tmp_path, capsys):
    path, store = pipeline_file(tmp_path, "midcircuit_3.qasm", 'terms = [["ZZZ", 1.0]]')
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "llqm: error: in [observable]: circuit 'midcircuit_3'"
    )
    assert "Traceback" not in err[0] and not store.exists()


def test_a_file_without_a_seed_is_compiled_alike_at_every_check():
    """``--check`` and a later run of the file plan and run one compiled circuit (a seed drawn
    per process once routed one 16-qubit circuit onto 18 qubits, then onto 20: 4x the time)."""
    file = {
        "circuit": {"qasm": str(ROOT / "tests" / "data" / "corpus" / "qaoa_p1_10_q3.qasm")},
        "backend": {"name": "aer", "device": "fake_fez"},
    }
    planned = set()
    for _ in range(3):
        steps = parse_pipeline(file).fit.steps
        planned.add(next(s.basis for s in steps if s.step == "transpile"))
    assert len(planned) == 1 and "(compiled by the check)" in planned.pop()
