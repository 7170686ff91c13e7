"""Readout-error mitigation as tasks gives Mitiq's own answer, helps a pipeline, prepares rem+zne,
and refuses bad options."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from llqm_mitiq.rem.combine import fit_readout
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.circuits import ghz
from llqm_qiskit.observables.expectation import parity
from mitiq import MeasurementResult, Observable, PauliString
from mitiq.rem import (
    bitstrings_to_probability_vector,
    execute_with_rem,
    generate_tensored_inverse_confusion_matrix,
    mitigate_measurements,
)
from qiskit import QuantumCircuit, transpile

import llqm_core as llqm
from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline, registries, run_pipeline

SHOTS, SEED = 4000, 17
LAYOUT = [10, 11, 12]


@pytest.fixture(scope="module")
def backend():
    return AerBackend(device="fake_fez")


class RecordingBackend:
    """The backend, with every job's circuits and counts kept for the test to redo the arithmetic."""

    def __init__(self, backend):
        self.backend, self.jobs = backend, []

    @property
    def device(self):
        return self.backend.device

    def execute(self, circuits, shots, *, seed=None):
        counts = self.backend.execute(circuits, shots, seed=seed)
        self.jobs.append((circuits, counts))
        return counts


def compile_for(backend, layout=LAYOUT):
    def compile_circuits(circuits):
        return transpile(
            list(circuits),
            backend.device,
            optimization_level=1,
            seed_transpiler=3,
            initial_layout=layout,
        )

    return compile_circuits


def bit_one_share(counts, bit):
    """P(bit reads 1), counted here independently of the plugin (Qiskit keys: bit 0 last)."""
    return sum(n for key, n in counts.items() if key.replace(" ", "")[::-1][bit] == "1") / sum(
        counts.values()
    )


@pytest.mark.parametrize("bits, pauli", [([0, 1, 2], "ZZZ"), ([0, 1], "ZZI")])
def test_rem_as_tasks_gives_mitiqs_readout_confusion_inversion(store_path, backend, bits, pauli):
    circuit = ghz(3)
    recording = RecordingBackend(backend)
    compile_circuits = compile_for(backend)
    compiled = compile_circuits([circuit])[0]
    data = {
        "circuit": circuit,
        "compiled": compiled,
        "compile": compile_circuits,
        "backend": recording,
        "observable": parity(bits),
        "shots": SHOTS,
        "seed": SEED,
        "warnings": [],
    }
    step = registries.create("stage", "mitigate.rem")
    with llqm.run("rem vs mitiq") as run:
        ours = step(data)

    # Two jobs: the calibration (|000>, |111> on the compiled circuit's physical qubits, full device width),
    # then the circuit.
    (calibration, (counts0, counts1)), (_, (counts,)) = recording.jobs
    physical = compiled.layout.final_index_layout()[
        :3
    ]  # measure_all reads virtual qubit i into bit i
    for circuit_ in calibration:
        assert circuit_.num_qubits == backend.device.num_qubits
        measured = [
            circuit_.find_bit(i.qubits[0]).index
            for i in circuit_.data
            if i.operation.name == "measure"
        ]
        assert sorted(measured) == sorted(physical)
    assert calibration[0].count_ops().get("x", 0) == 0 and calibration[1].count_ops()["x"] == 3
    assert counts is ours["counts"] and ours["circuits_executed"] == 3

    # Mitiq's REM from the same calibration: per-bit A[measured, prepared], tensored with bit 0 first.
    confusions = []
    for bit in range(3):
        e0, e1 = bit_one_share(counts0, bit), 1 - bit_one_share(counts1, bit)
        confusions.append(np.array([[1 - e0, e1], [e0, 1 - e1]]))
        assert ours["rem_inverse_confusion"][bit] == pytest.approx(
            np.linalg.inv(confusions[-1]), abs=1e-12
        )
    inverse = generate_tensored_inverse_confusion_matrix(3, confusions)
    bit0_first = {
        key.replace(" ", "")[::-1]: n for key, n in counts.items()
    }  # MeasurementResult lists qubit 0 first
    noisy = MeasurementResult.from_counts(bit0_first, qubit_indices=(0, 1, 2))
    observable = Observable(PauliString(pauli))

    # Exact: Mitiq's linear inversion A^-1 p (before it projects and resamples) read through the
    # observable's matrix.
    quasi = inverse @ bitstrings_to_probability_vector(noisy.result)
    diagonal = np.real(np.diag(observable.matrix(qubit_indices=[0, 1, 2])))
    assert ours["value"] == pytest.approx(float(diagonal @ quasi), abs=1e-9)
    assert ours["unmitigated"] == pytest.approx(
        observable._expectation_from_measurements([noisy]), abs=1e-12
    )
    assert ours["evaluate"]([counts]) == (ours["value"], ours["value_error"])

    # Mitiq's whole REM also projects A^-1 p onto the closest distribution and resamples SHOTS
    # bitstrings from it
    # (numpy's global generator): the same within sampling noise, sd <= 1/sqrt(4000) = 0.016.
    np.random.seed(5)
    mitigated = mitigate_measurements(noisy, inverse)
    theirs = float(np.real(observable._expectation_from_measurements([mitigated])))

    def executor(_) -> MeasurementResult:  # the same counts, as Mitiq's executors return them
        return noisy

    np.random.seed(5)
    via_execute = execute_with_rem(
        ghz(3, measure=False), executor, observable, inverse_confusion_matrix=inverse
    )
    assert float(np.real(via_execute)) == pytest.approx(theirs, abs=1e-12)
    assert ours["value"] == pytest.approx(theirs, abs=0.05)

    tasks = llqm.ProfileStore(store_path).tasks(run.id)
    by_stage = {t.stage: t for t in tasks}
    calibrate = by_stage["mitigate.rem.calibrate"]
    assert (
        calibrate.metrics["rem.qubits"] == list(physical)
        and calibrate.metrics["rem.calibrated_qubits"] == 3
    )
    assert [t.stage for t in tasks].count("execute") == 2


def test_rem_pipeline_reduces_the_error_and_profiles_the_calibration(tmp_path):
    pipeline = parse_pipeline(
        {
            "name": "ghz-5 rem",
            "circuit": {"kind": "ghz", "qubits": 5},
            "backend": {"name": "aer", "device": "fake_fez"},
            "transpile": {"optimization_level": 1, "seed": 11},
            "mitigation": {"technique": "rem"},
            "execution": {"shots": SHOTS, "seed": SEED},
        }
    )
    run_id, data = run_pipeline(pipeline, store=tmp_path / "p.sqlite")
    tasks = llqm.ProfileStore(tmp_path / "p.sqlite").tasks(run_id)
    stages = [t.stage for t in tasks]
    assert stages.count("mitigate.rem.calibrate") == 1 and stages.count("mitigate.rem.correct") == 1
    figures = next(t for t in tasks if t.stage == "postprocess").metrics
    assert figures["fidelity.error_mitigated"] < figures["fidelity.error_unmitigated"]

    rem_task = next(t for t in tasks if t.stage == "mitigate.rem")
    calibrate = next(t for t in tasks if t.stage == "mitigate.rem.calibrate")
    correct = next(t for t in tasks if t.stage == "mitigate.rem.correct")
    calibration_job = [t for t in tasks if t.stage == "execute" and t.parent_id == calibrate.id]
    circuit_job = [t for t in tasks if t.stage == "execute" and t.parent_id == rem_task.id]
    assert len(calibration_job) == 1 and len(circuit_job) == 1
    assert (
        calibration_job[0].profile.wall_s > 0  # a simulator's job: its time is CPU, not QPU
        and calibration_job[0].profile.qpu_s is None
        and calibration_job[0].metrics["execute.circuits"] == 2
    )
    assert calibrate.parent_id == rem_task.id and correct.parent_id == rem_task.id
    assert calibrate.id in correct.depends_on
    metrics = calibrate.metrics
    assert metrics["rem.calibrated_qubits"] == 5 and metrics["rem.calibration_shots"] == SHOTS
    assert 0 < metrics["rem.e0_mean"] <= metrics["rem.e0_max"] < 0.5
    assert 0 < metrics["rem.e1_mean"] <= metrics["rem.e1_max"] < 0.5
    assert correct.metrics["rem.mitigated"] == data["value"]
    assert correct.metrics["rem.unmitigated"] == data["unmitigated"]


def test_rem_inside_rem_zne_only_calibrates_and_zne_reads_corrected_values(tmp_path):
    pipeline = parse_pipeline(
        {
            "name": "ghz-5 rem+zne",
            "circuit": {"kind": "ghz", "qubits": 5},
            "observable": {"kind": "parity", "bits": [0, 1, 2, 3]},
            "backend": {"name": "aer", "device": "fake_fez"},
            "transpile": {"optimization_level": 0, "seed": 11},
            "mitigation": {
                "technique": "rem+zne",
                "rem": {"calibration_shots": 2000},
                "zne": {"scale_factors": [1, 3], "factory": "linear"},
            },
            "execution": {"shots": SHOTS, "seed": SEED},
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter(
            "error"
        )  # the folded circuits keep the calibrated qubits: no layout warning
        run_id, data = run_pipeline(pipeline, store=tmp_path / "p.sqlite")
    tasks = llqm.ProfileStore(tmp_path / "p.sqlite").tasks(run_id)
    stages = [t.stage for t in tasks]
    assert stages.count("mitigate.rem.calibrate") == 1 and "mitigate.rem.correct" not in stages
    assert stages.count("execute") == 2  # the calibration job and ZNE's one batched job
    calibrate = next(t for t in tasks if t.stage == "mitigate.rem.calibrate")
    assert calibrate.metrics["rem.calibration_shots"] == 2000
    values = next(t for t in tasks if t.stage == "mitigate.zne.extrapolate").metrics["zne.values"]
    corrected = parity([0, 1, 2, 3]).mitigated_expectation(
        data["counts"], data["rem_inverse_confusion"]
    )
    assert values[0] == pytest.approx(corrected, abs=1e-12)
    assert (
        values[0] != pytest.approx(data["unmitigated"], abs=1e-6)
        and values[0] > data["unmitigated"]
    )
    assert data["warnings"] == []


def test_a_circuit_compiled_onto_other_qubits_after_calibration_is_flagged(backend):
    circuit = ghz(3)
    data = {
        "circuit": circuit,
        "compiled": compile_for(backend)([circuit])[0],
        "compile": compile_for(backend, [20, 21, 22]),
        "backend": backend,
        "observable": parity([0, 1, 2]),
        "shots": 500,
        "seed": SEED,
        "warnings": [],
    }
    added = registries.create("stage", "mitigate.rem", inner=True)(data)
    assert set(added) == {"evaluate", "rem_inverse_confusion", "rem_record", "compile"}
    with pytest.warns(
        UserWarning, match="calibrated classical bit 0 on qubit 10, but circuit .* on qubit 20"
    ):
        added["compile"]([circuit])
    assert len(data["warnings"]) == 1


def test_calibration_scales_to_100_measured_qubits(backend):
    compiled = QuantumCircuit(backend.device.num_qubits, 100, name="wide")
    for bit in range(100):
        compiled.measure(bit + 50 if bit >= 50 else bit, bit)  # physical qubits 0-49 and 100-149
    data = {
        "compiled": compiled,
        "backend": backend,
        "observable": parity(list(range(100))),
        "shots": 1000,
        "seed": SEED,
        "warnings": [],
    }
    added = registries.create("stage", "mitigate.rem", calibration_shots=200, inner=True)(data)
    assert len(added["rem_inverse_confusion"]) == 100
    expected = np.prod(
        [(np.array([1.0, -1.0]) @ added["rem_inverse_confusion"][bit])[0] for bit in range(100)]
    )
    assert (
        added["evaluate"]([{"0" * 100: 1000}])[0] == pytest.approx(expected, rel=1e-9)
        and expected > 1
    )


def test_readout_no_better_than_chance_is_refused_naming_the_qubit():
    readout = {0: 7, 1: 9}
    counts0 = {"00": 300, "10": 700}  # bit 1 reads 1 70% of the time from |0>
    counts1 = {"11": 500, "01": 500}  # and 0 half of the time from |1>
    with pytest.raises(
        ValueError,
        match=r"qubit 9 \(classical bit 1\) gave P\(1\|0\) = 0.700 and P\(0\|1\) = 0.500",
    ):
        fit_readout(counts0, counts1, readout)


@pytest.mark.parametrize(
    "options, message",
    [
        (
            {"calibration_shots": 0},
            "calibration_shots must be a whole number from 1 to 10,000,000, not 0",
        ),
        (
            {"calibration_shots": "4000"},
            "calibration_shots must be a whole number from 1 to 10,000,000, not '4000'",
        ),
        ({"calibration_shots": True}, "calibration_shots must be a whole number"),
        ({"calibration_shots": 2.5}, "calibration_shots must be a whole number"),
        ({"inner": "yes"}, "inner must be true or false, not 'yes'"),
        ({"shots": 10}, "stage 'mitigate.rem' has no option 'shots'"),
    ],
)
def test_bad_rem_options_get_one_sentence(options, message):
    with pytest.raises(UserError, match=message) as caught:
        registries.create("stage", "mitigate.rem", **options)
    assert str(caught.value).count(". ") == 0 and str(caught.value).endswith(".")
