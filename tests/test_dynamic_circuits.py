"""Dynamic circuits (issue 49): mid-circuit measurements, resets and classical control, written
as Qiskit's dynamic-circuit guides write them, checked, run, mitigated and profiled.

Each pattern's answer is known: teleportation returns the state it sent, the repetition code
corrects the error it was given, iterative phase estimation reads the S gate's phase 1/4. The
runs use fake_manila (5 qubits; its target declares if_else, switch_case and for_loop) and few
shots, so each test takes seconds.
"""

from __future__ import annotations

import math

import pytest
from conftest import ROOT
from llqm_qiskit.devices.catalog import fake_device
from llqm_qiskit.devices.qpu_time import FEED_FORWARD_S, DurationTable, circuit_duration
from llqm_qiskit.devices.snapshot import hardware_snapshot
from llqm_qiskit.measurement import final_readout, shape
from qiskit import ClassicalRegister, QuantumCircuit, QuantumRegister
from test_profile_command import by_stage, plain, profiled

from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline, run_pipeline
from llqm_core.store.profile_store import ProfileStore

SHOTS = 400


def teleportation() -> QuantumCircuit:
    """Qiskit's teleportation with ``if_test``: q2 ends in q0's ry(0.7) state, undone, so
    ``out`` reads 0 in every noiseless shot."""
    qr = QuantumRegister(3, "q")
    z_bit, x_bit = ClassicalRegister(1, "z"), ClassicalRegister(1, "x")
    out = ClassicalRegister(1, "out")
    qc = QuantumCircuit(qr, z_bit, x_bit, out, name="teleport")
    qc.ry(0.7, 0)
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
    qc.ry(-0.7, 2)
    qc.measure(2, out[0])
    return qc


def repetition_cycle() -> QuantumCircuit:
    """A bit-flip repetition code's syndrome cycle: two ancillas measured and reset, the syndrome
    decoded by ``switch`` into a correction of the flipped data qubit, then the data read."""
    data, ancilla = QuantumRegister(3, "d"), QuantumRegister(2, "a")
    syndrome, out = ClassicalRegister(2, "syndrome"), ClassicalRegister(3, "out")
    qc = QuantumCircuit(data, ancilla, syndrome, out, name="repetition")
    qc.x(data[1])  # the error the cycle corrects
    qc.cx(data[0], ancilla[0])
    qc.cx(data[1], ancilla[0])
    qc.cx(data[1], ancilla[1])
    qc.cx(data[2], ancilla[1])
    qc.measure(ancilla, syndrome)
    qc.reset(ancilla)
    with qc.switch(syndrome) as case:
        with case(1):
            qc.x(data[0])
        with case(3):
            qc.x(data[1])
        with case(2):
            qc.x(data[2])
    qc.measure(data, out)
    return qc


def iterative_phase_estimation() -> QuantumCircuit:
    """Two rounds of iterative phase estimation of the S gate (phase 1/4 = binary 0.01), one
    auxiliary qubit measured, reset and phase-corrected by the bit it read."""
    qr, cr = QuantumRegister(2, "q"), ClassicalRegister(2, "c")
    qc = QuantumCircuit(qr, cr, name="ipe")
    qc.h(0)
    qc.x(1)
    qc.cp(math.pi, 0, 1)  # controlled-S^2
    qc.h(0)
    qc.measure(0, cr[0])
    qc.reset(0)
    qc.h(0)
    with qc.if_test((cr[0], 1)):
        qc.p(-math.pi / 2, 0)
    qc.cp(math.pi / 2, 0, 1)  # controlled-S
    qc.h(0)
    qc.measure(0, cr[1])
    return qc


def looped_and_nested() -> QuantumCircuit:
    """A ``for_loop`` (three flips of q0) and an ``if_else`` with another inside it."""
    qc = QuantumCircuit(3, 3, name="nested")
    with qc.for_loop(range(3)):
        qc.x(0)
    qc.measure(0, 0)
    with qc.if_test((qc.clbits[0], 1)) as otherwise:
        qc.x(1)
        with qc.if_test((qc.clbits[0], 1)):
            qc.x(2)
    with otherwise:
        qc.h(1)
    qc.measure([1, 2], [1, 2])
    return qc


def _run(circuit: QuantumCircuit, store_path, technique="none", observable=None, backend=None):
    config = {
        "circuit": {"circuit": circuit},
        "backend": {"device": "fake_manila", **(backend or {})},
        "mitigation": {"technique": technique},
        "execution": {"shots": SHOTS, "seed": 3},
    }
    if observable is not None:
        config["observable"] = observable
    run_id, data = run_pipeline(parse_pipeline(config), store=store_path)
    tasks = ProfileStore(store_path, readonly=True).tasks(run_id)
    return data, tasks


def _metrics(tasks, stage):
    return [t.metrics for t in tasks if t.stage == stage]


# ---- 1. they run, with their ideal values ---------------------------------------------------


@pytest.mark.parametrize("technique", ["none", "rem", "zne"])
def test_teleportation_returns_the_state_it_sent_under_each_technique(store_path, technique):
    data, tasks = _run(teleportation(), store_path, technique, {"register": "out"})
    assert data["observable_label"] == "P(0xx)"  # out (bit 2) reads 0
    assert data["ideal_method"] == "enumerated" and data["ideal_value"] == 1.0
    assert 0.8 < data["value"] <= 1.05 and 0.8 < data["unmitigated"] <= 1.0
    (generate,) = _metrics(tasks, "generate")
    assert generate["circuit.mid_circuit_measurements"] == 2
    assert generate["circuit.conditionals"] == 2 and generate["circuit.resets"] == 0
    if technique == "none":  # trajectories on a statevector, sharing a state until they split
        (simulate,) = _metrics(tasks, "execute.simulate")
        assert simulate["execute.method"] == "statevector"
        branched = simulate["execute.shot_branching.modelled_s"]  # taken where the model says
        plain = simulate["execute.shot_branching.plain_modelled_s"]  # it is cheaper
        assert simulate["execute.shot_branching"] is (branched < plain)
    if technique == "rem":  # the bit it corrects, and the fed-forward ones it cannot
        (calibrate,) = _metrics(tasks, "mitigate.rem.calibrate")
        assert calibrate["rem.corrected_bits"] == [2]
        assert calibrate["rem.uncorrected_fed_forward"] == 2
    if technique == "zne":  # the gates of each segment folded, never what ends a segment
        folds = {m["zne.scale_factor"]: m for m in _metrics(tasks, "mitigate.zne.fold")}
        base = folds[1]["zne.gates_per_segment"]
        assert folds[1]["zne.segments"] == len(base) > 1
        for scale in (3, 5):
            assert folds[scale]["zne.folded_per_segment"] == [(scale - 1) * n for n in base]
            assert folds[scale]["circuit.ops.if_else"] == 2
            assert folds[scale]["circuit.ops.measure"] == 3


def test_a_repetition_cycle_with_reset_and_switch_corrects_its_error(store_path):
    data, tasks = _run(repetition_cycle(), store_path, "rem", {"register": "out"})
    assert data["observable_label"] == "P(000xx)"  # the flipped qubit was corrected
    assert data["ideal_method"] == "enumerated" and data["ideal_value"] == 1.0
    assert data["value"] > 0.7  # without the switch it would read 0
    (generate,) = _metrics(tasks, "generate")
    assert generate["circuit.resets"] == 2 and generate["circuit.conditionals"] == 1
    assert generate["circuit.mid_circuit_measurements"] == 2


def test_iterative_phase_estimation_reads_the_phase_of_s(store_path):
    data, _ = _run(iterative_phase_estimation(), store_path, "zne", {"register": "c"})
    assert data["observable_label"] == "P(01)"  # c1 c0 = 01: phase 0.01 in binary
    assert data["ideal_value"] == 1.0 and data["value"] > 0.7


def test_a_for_loop_and_a_nested_if_run_and_the_default_reads_the_final_bits(store_path):
    circuit = looped_and_nested()
    assert sorted(final_readout(circuit)) == [1, 2]  # bit 0 fed a conditional
    found = shape(circuit)
    assert found.conditionals == 3 and found.mid_circuit == 1
    data, _ = _run(circuit, store_path)
    assert data["observable_label"] == "P(11x)"
    assert data["ideal_value"] == 1.0 and data["value"] > 0.8


def _copy() -> QuantumCircuit:
    """ry(t), measured, copied by a conditional X: the copy's <Z> is cos(t) exactly."""
    qc = QuantumCircuit(2, 2, name="copy")
    qc.ry(1.1, 0)
    qc.measure(0, 0)
    with qc.if_test((qc.clbits[0], 1)):
        qc.x(1)
    qc.measure(1, 1)
    return qc


def test_an_enumerated_ideal_value_is_exact(store_path):
    data, tasks = _run(_copy(), store_path, observable={"kind": "parity", "bits": [1]})
    (observed,) = _metrics(tasks, "observable")
    assert observed["ideal.method"] == "enumerated" and "ideal.stderr" not in observed
    assert data["ideal_value"] == pytest.approx(math.cos(1.1), abs=1e-9)


def test_a_sampled_ideal_value_agrees_with_the_exact_one_within_its_stated_error(
    store_path, monkeypatch
):
    monkeypatch.setattr("llqm_qiskit.observables.branches.MAX_QUBITS", 1)  # 2 qubits: sampled
    data, tasks = _run(_copy(), store_path, observable={"kind": "parity", "bits": [1]})
    (observed,) = _metrics(tasks, "observable")
    assert observed["ideal.method"] == "sampled" and observed["ideal.stderr"] <= 0.01
    assert "its branches were not enumerated: 2 qubits, over 1" in observed["ideal.reason"]
    assert abs(data["ideal_value"] - math.cos(1.1)) < 3 * observed["ideal.stderr"]


def test_the_branches_give_each_patterns_exact_outcomes():
    from llqm_qiskit.observables.branches import distribution

    assert distribution(repetition_cycle()) == pytest.approx({"00011": 1.0})  # out 000, s 11
    assert distribution(iterative_phase_estimation()) == pytest.approx({"01": 1.0})
    assert distribution(looped_and_nested()) == pytest.approx({"111": 1.0})
    teleported = distribution(teleportation())  # out 0, the two feed-forward bits uniform
    assert teleported == pytest.approx({f"0{z}{x}": 0.25 for z in "01" for x in "01"})


# ---- 2. what cannot run is refused in one sentence -------------------------------------------


def test_a_register_the_circuit_lacks_and_a_pauli_sum_are_refused():
    config = {"circuit": {"circuit": teleportation()}, "backend": {"device": "fake_manila"}}
    with pytest.raises(UserError, match=r"no classical register 'c'; its registers: z, x, out"):
        parse_pipeline(config | {"observable": {"register": "c"}})
    with pytest.raises(UserError, match="register names the classical register an outcome"):
        parse_pipeline(config | {"observable": {"kind": "parity", "bits": [0], "register": "z"}})
    with pytest.raises(UserError, match=r"has 2 conditional\(s\), so a Pauli-sum observable"):
        parse_pipeline(config | {"observable": {"kind": "pauli", "terms": [["ZII", 1.0]]}})


def test_zne_of_a_circuit_whose_two_qubit_gates_are_all_conditional_is_refused_by_the_check():
    """The check refuses what the run's folding would refuse: its two-qubit gates are inside
    a conditional block, which the folding leaves alone (docs/pipelines.md says why)."""
    qc = QuantumCircuit(3, 3, name="condcx")
    qc.h(0)
    qc.measure(0, 0)
    with qc.if_test((qc.clbits[0], 1)):
        qc.cx(1, 2)
    qc.x(1)
    qc.measure([1, 2], [1, 2])
    config = {
        "circuit": {"circuit": qc},
        "backend": {"device": "fake_manila"},
        "mitigation": {"technique": "zne"},
        "execution": {"shots": SHOTS, "seed": 3},
    }
    with pytest.raises(UserError, match=r"has none to fold, .* use another technique \(rem"):
        parse_pipeline(config)


def test_logical_pec_is_refused_naming_what_runs_and_compiled_pec_runs(store_path):
    config = {
        "circuit": {"circuit": teleportation()},
        "backend": {"device": "fake_manila"},
        "observable": {"register": "out"},
        "mitigation": {"technique": "pec", "pec": {"samples": 10}},
        "execution": {"shots": 100, "seed": 1},
    }
    with pytest.raises(
        UserError,
        match=r"has 2 mid-circuit measurements and 2 if_else; use sample = \"compiled\"",
    ):
        parse_pipeline(config)
    config["mitigation"]["pec"]["sample"] = "compiled"
    _, data = run_pipeline(parse_pipeline(config), store=store_path)
    assert math.isfinite(data["value"]) and data["ideal_value"] == 1.0


def test_a_python_circuit_on_a_device_without_if_else_is_refused():
    with pytest.raises(UserError, match=r"uses if_else, which device fake_lima does not support"):
        parse_pipeline(
            {"circuit": {"circuit": teleportation()}, "backend": {"device": "fake_lima"}}
        )


# ---- 3. profiled for what costs on hardware -------------------------------------------------


def test_the_modelled_qpu_time_waits_for_the_measurement_and_adds_feed_forward():
    """The conditional X waits for the measurement it reads (1.6 us or more on fake_manila) and
    a feed-forward latency; the same X unconditioned runs beside the measurement."""
    device = fake_device("fake_manila")
    snapshot = hardware_snapshot(device)
    conditioned, unconditioned = QuantumCircuit(2, 2), QuantumCircuit(2, 2)
    for circuit in (conditioned, unconditioned):
        circuit.sx(0)
        circuit.measure(0, 0)
    with conditioned.if_test((conditioned.clbits[0], 1)):
        conditioned.x(1)
    unconditioned.x(1)
    table = DurationTable(snapshot)
    waited = circuit_duration(conditioned, table)
    assert table.conditionals == 1
    beside = circuit_duration(unconditioned, DurationTable(snapshot))
    readout = snapshot.qubits[0].readout_duration_s
    assert waited >= beside + FEED_FORWARD_S and waited >= readout + FEED_FORWARD_S


def test_a_run_with_modelled_qpu_time_labels_the_feed_forward_it_assumed(store_path):
    _, tasks = _run(teleportation(), store_path, backend={"model_qpu_time": True})
    (execute,) = [t for t in tasks if t.stage == "execute"]
    assert execute.metrics["qpu.modelled"] is True
    assert execute.metrics["qpu.model.feed_forward_s"] == FEED_FORWARD_S
    assert execute.profile.qpu_s > 0


def test_llqm_profile_counts_a_qiskit_programs_dynamic_circuit(tmp_path, capsys):
    script = ROOT / "examples" / "programs" / "qiskit_teleportation.py"
    status, out, _, report = profiled(capsys, tmp_path / "s.sqlite", script)
    assert status == 0 and out == plain(script)
    (execute,) = by_stage(report, "execute")
    assert execute["metrics"]["circuit.conditionals"] == 2
    assert execute["metrics"]["circuit.mid_circuit_measurements"] == 2


def test_a_dynamic_circuit_takes_the_statevector_where_a_plain_one_takes_the_density_matrix():
    """Aer runs a dynamic circuit one trajectory per shot on either method (an 8-qubit one
    cost 0.29 s per shot on a density matrix): the statevector's trajectories are the cheaper."""
    from llqm_qiskit.backends.aer import choose_method

    dynamic = iterative_phase_estimation()
    plain = QuantumCircuit(2, 2)
    plain.h(0)
    plain.cp(math.pi / 2, 0, 1)
    plain.measure([0, 1], [0, 1])
    assert choose_method([plain], 10, 28, shots=4000) == "density_matrix"
    assert choose_method([dynamic], 10, 28, shots=4000) == "statevector"
