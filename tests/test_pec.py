"""Probabilistic error cancellation as tasks gives Mitiq's own estimate, runs as a profiled pipeline
with noise levels from the calibration, and refuses bad options."""

from __future__ import annotations

import math

import numpy as np
import pytest
from llqm_mitiq.pec.logical import fit_to_logical, sample_chunk
from llqm_mitiq.pec.noise import calibrated_noise_levels
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.circuits import ghz
from llqm_qiskit.measurement import readout_map
from llqm_qiskit.observables.expectation import parity
from mitiq import Executor
from mitiq.pec import (
    combine_results,
    execute_with_pec,
    represent_operation_with_local_depolarizing_noise,
    represent_operations_in_circuit_with_local_depolarizing_noise,
    sample_circuit,
)
from qiskit import QuantumCircuit

import llqm_core as llqm
from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline, registries, run_pipeline

SHOTS, SEED, SAMPLES, NOISE = 1000, 17, 30, 0.05
PER_SAMPLE = 500  # shots per sampled circuit: the baseline then runs as just 2 copies

pytestmark = pytest.mark.filterwarnings(
    "ignore:No representation found:UserWarning"
)  # Mitiq, on measurements


@pytest.fixture(scope="module")
def backend():
    return AerBackend(device="fake_fez")


@pytest.fixture(scope="module")
def setting(backend):
    """The pipeline's data for ghz(2) with a parity observable, compiled at level 0, and a Mitiq
    batched executor that runs circuits exactly as the PEC step does (same compile, backend, shots, seed)."""
    circuit, observable = ghz(2), parity([0, 1])
    with llqm.run("pec setting", store=False):
        compiled = registries.create("stage", "transpile", optimization_level=0)(
            {"backend": backend, "circuit": circuit}
        )

    def data():
        return {
            "circuit": circuit,
            "observable": observable,
            "backend": backend,
            "shots": SHOTS,
            "seed": SEED,
            "warnings": [],
            **compiled,
        }

    def executor(circuits) -> list[float]:
        counts = backend.execute(compiled["compile"](circuits), PER_SAMPLE, seed=SEED)
        return [observable.expectation([c]) for c in counts]

    return circuit, data, executor


def mitiq_executor(executor):
    return Executor(executor, max_batch_size=10_000)  # one batch, as the PEC step's one job


def test_one_chunk_gives_exactly_mitiqs_execute_with_pec(setting):
    circuit, data, executor = setting
    step = registries.create(
        "stage",
        "mitigate.pec",
        samples=SAMPLES,
        chunk_size=SAMPLES,
        noise_level=NOISE,
        seed=11,
        shots_per_sample=PER_SAMPLE,
    )
    with llqm.run("pec vs mitiq", store=False):
        ours = step(data())
    representations = represent_operations_in_circuit_with_local_depolarizing_noise(circuit, NOISE)
    theirs, details = execute_with_pec(
        circuit,
        mitiq_executor(executor),
        representations=representations,
        num_samples=SAMPLES,
        random_state=11,
        full_output=True,
    )
    assert (
        -1 in ours["pec_signs"] and 1 in ours["pec_signs"]
    )  # a real test: some samples carry a negative weight
    assert ours["pec_values"] == pytest.approx(details["measured_expectation_values"], abs=1e-12)
    assert ours["value"] == pytest.approx(theirs, abs=1e-12)
    assert ours["pec_error"] == pytest.approx(details["pec_error"], abs=1e-12)
    assert ours["pec_gamma"] == pytest.approx(
        sample_circuit(circuit, representations, num_samples=1)[2], rel=1e-12
    )
    assert ours["pec_gamma"] > 1 and ours["pec_shots_per_sample"] == PER_SAMPLE
    assert (
        ours["circuits_executed"] == SAMPLES + SHOTS // PER_SAMPLE
    )  # the baseline's copies ride in the same job
    assert sum(ours["counts"].values()) == SHOTS


def test_chunks_match_mitiqs_sampler_chunk_by_chunk_and_execute_with_pec_within_its_error(setting):
    """Mitiq samples gate by gate (all N draws of the first gate, then of the second), so chunks
    use the random stream in another order than one call: not the same samples, the same law."""
    circuit, data, executor = setting
    chunk = 12
    step = registries.create(
        "stage",
        "mitigate.pec",
        samples=SAMPLES,
        chunk_size=chunk,
        noise_level=NOISE,
        seed=11,
        shots_per_sample=PER_SAMPLE,
    )
    with llqm.run("pec chunks", store=False):
        ours = step(data())

    # Exactly: Mitiq's sampler chunk by chunk on one RandomState, one batched executor call, Mitiq's combiner.
    representations = represent_operations_in_circuit_with_local_depolarizing_noise(circuit, NOISE)
    random_state, circuits, signs = np.random.RandomState(11), [], []
    for start in range(0, SAMPLES, chunk):
        sampled, chunk_signs, norm = sample_circuit(
            circuit,
            representations,
            random_state=random_state,
            num_samples=min(chunk, SAMPLES - start),
        )
        circuits += sampled
        signs += chunk_signs
    assert ours["pec_signs"] == signs
    assert ours["value"] == pytest.approx(
        combine_results(executor(circuits), norm, signs), abs=1e-12
    )

    # Statistically: Mitiq's one-call estimate from other samples of the same distribution.
    theirs, details = execute_with_pec(
        circuit,
        mitiq_executor(executor),
        representations=representations,
        num_samples=SAMPLES,
        random_state=11,
        full_output=True,
    )
    assert abs(ours["value"] - theirs) <= 5 * math.hypot(ours["pec_error"], details["pec_error"])


def test_noise_levels_come_from_the_calibration_of_the_qubits_used(setting, backend):
    circuit, data, _ = setting
    inputs = data()
    compiled = inputs["compiled"]
    with llqm.run("pec calibrated", store=False):
        ours = registries.create("stage", "mitigate.pec", samples=5, seed=3)(inputs)
    physical = list(compiled.layout.initial_index_layout(filter_ancillas=True))
    couplers = {
        tuple(compiled.find_bit(q).index for q in i.qubits)
        for i in compiled.data
        if i.operation.name == "cz"
    }
    r2 = np.mean([backend.device.target["cz"][c].error for c in couplers])
    r1 = np.mean([backend.device.target["sx"][(q,)].error for q in physical])
    p1, p2 = 1.5 * r1, 1 - math.sqrt(1 - 1.25 * r2)
    assert 0 < p1 < p2 < 0.05
    # gamma: the product of the one-norms of Mitiq's representations of h (one qubit) and cx (two).
    h, cx = QuantumCircuit(1), QuantumCircuit(2)
    h.h(0)
    cx.cx(0, 1)
    norm = (
        represent_operation_with_local_depolarizing_noise(h, p1).norm
        * represent_operation_with_local_depolarizing_noise(cx, p2).norm
    )
    assert ours["pec_gamma"] == pytest.approx(norm, rel=1e-9)


def test_a_coupler_out_of_service_is_flagged_and_one_beyond_inversion_refused(backend):
    snapshot = backend.snapshot()
    compiled = QuantumCircuit(backend.num_qubits, name="through_27_28")
    compiled.cz(27, 28)  # cz error 1.0 on fake_fez: out of service
    with pytest.raises(
        ValueError,
        match=r"mean 2-qubit gate error 1 .* noise level of inf, which PEC cannot invert",
    ):
        calibrated_noise_levels(compiled, snapshot)
    compiled.cz(0, 1)
    levels = calibrated_noise_levels(compiled, snapshot)
    assert levels.couplers == [(0, 1), (27, 28)] and levels.gate_error_2q == pytest.approx(
        (1 + 0.0101566715843735) / 2
    )
    assert (
        len(levels.problems) == 1
        and "cz on qubits 27-28, whose calibrated error is 1 (out of service)" in levels.problems[0]
    )


def test_sampled_circuits_keep_the_logical_width_and_measurements():
    logical = QuantumCircuit(3, 3, name="idle_middle")
    logical.h(0)
    logical.cx(0, 2)
    logical.measure([0, 2], [0, 2])
    representations = represent_operations_in_circuit_with_local_depolarizing_noise(logical, 0.2)
    sampled, _, _ = sample_chunk(logical, representations, np.random.RandomState(1), 6, readout_map)
    for circuit in sampled:
        assert (
            circuit.num_qubits == 3
            and circuit.num_clbits == 3
            and readout_map(circuit) == {0: 0, 2: 2}
        )
    # What an older conversion gave: the idle qubit dropped, the rest renumbered, only the measured bits kept.
    narrow = QuantumCircuit(2, 2)
    narrow.h(0)
    narrow.cx(0, 1)
    narrow.x(1)
    narrow.measure([0, 1], [0, 1])
    fitted = fit_to_logical(narrow, logical, readout_map)
    assert (
        fitted.num_qubits == 3
        and fitted.cregs == logical.cregs
        and readout_map(fitted) == {0: 0, 2: 2}
    )
    assert [(i.operation.name, [fitted.find_bit(q).index for q in i.qubits]) for i in fitted.data][
        :3
    ] == [("h", [0]), ("cx", [0, 2]), ("x", [2])]


def test_pec_pipeline_profiles_represent_sample_and_combine(tmp_path):
    samples, chunk, shots = 50, 20, 2000
    pipeline = parse_pipeline(
        {
            "name": "ghz-2 pec",
            "circuit": {"kind": "ghz", "qubits": 2},
            "observable": {"kind": "parity", "bits": [0, 1]},
            "backend": {"name": "aer", "device": "fake_fez"},
            "transpile": {"optimization_level": 0},
            "mitigation": {"technique": "pec", "pec": {"samples": samples, "chunk_size": chunk}},
            "execution": {"shots": shots, "seed": SEED},
        }
    )
    run_id, data = run_pipeline(pipeline, store=tmp_path / "p.sqlite")
    tasks = llqm.ProfileStore(tmp_path / "p.sqlite").tasks(run_id)
    assert all(t.status.value == "completed" for t in tasks)
    stages = [t.stage for t in tasks]
    assert stages.count("mitigate.pec.represent") == 1 and stages.count("mitigate.pec.combine") == 1
    assert stages.count("mitigate.pec.sample") == math.ceil(samples / chunk)
    assert stages.count("execute") == 1  # the samples and the baseline in one job

    pec_task = next(t for t in tasks if t.stage == "mitigate.pec")
    represent = next(t for t in tasks if t.stage == "mitigate.pec.represent")
    combine = next(t for t in tasks if t.stage == "mitigate.pec.combine")
    sample_tasks = [t for t in tasks if t.stage == "mitigate.pec.sample"]
    per_sample = shots // samples
    copies = math.ceil(shots / per_sample)
    assert (
        pec_task.metrics["stage.pec_gamma"] > 1
        and combine.metrics["pec.gamma"] == pec_task.metrics["stage.pec_gamma"]
    )
    assert (
        pec_task.metrics["stage.circuits_executed"]
        == samples + copies
        == combine.metrics["pec.circuits_executed"]
    )
    assert (
        combine.metrics["pec.shots_per_sample"] == per_sample
        and combine.metrics["pec.baseline_shots"] >= shots
    )
    assert 1 <= combine.metrics["pec.distinct_circuits"] <= samples
    assert [t.metrics["pec.chunk_samples"] for t in sample_tasks] == [20, 20, 10]
    assert (
        combine.metrics["pec.value"] == data["value"]
        and combine.metrics["pec.unmitigated"] == data["unmitigated"]
    )

    # The representation's noise levels come from the calibration the task names.
    assert represent.hardware is not None and represent.metrics["pec.noise_source"] == "calibration"
    r2 = represent.metrics["pec.gate_error_2q"]
    assert represent.metrics["pec.noise_level_2q"] == pytest.approx(
        1 - math.sqrt(1 - 1.25 * r2), rel=1e-12
    )
    assert represent.metrics["pec.gamma"] == pytest.approx(combine.metrics["pec.gamma"], rel=1e-12)
    assert all(represent.id in t.depends_on for t in sample_tasks)
    transpiles = [t for t in tasks if t.stage == "transpile" and t.parent_id == pec_task.id]
    assert len(transpiles) == len(sample_tasks) and all(
        s.id in t.depends_on for s, t in zip(sample_tasks, transpiles)
    )

    figures = next(t for t in tasks if t.stage == "postprocess").metrics
    for key in (
        "fidelity.ideal",
        "fidelity.unmitigated",
        "fidelity.mitigated",
        "fidelity.error_reduction",
    ):
        assert key in figures
    assert figures["fidelity.error_mitigated"] < figures["fidelity.error_unmitigated"]
    assert data["warnings"] == []


@pytest.mark.parametrize(
    "options, message",
    [
        ({"samples": 0}, "samples must be a whole number of 1 or more, not 0."),
        ({"samples": 2.5}, "samples must be a whole number of 1 or more, not 2.5."),
        ({"samples": True}, "samples must be a whole number of 1 or more, not True."),
        ({"chunk_size": 0}, "chunk_size must be a whole number of 1 or more, not 0."),
        ({"noise_level": 0}, "noise_level must be a number above 0 and below 0.75, not 0."),
        ({"noise_level": 0.75}, "noise_level must be a number above 0 and below 0.75, not 0.75."),
        (
            {"noise_level": "0.01"},
            "noise_level must be a number above 0 and below 0.75, not '0.01'.",
        ),
        ({"seed": -1}, "seed must be a whole number of 0 or more, not -1."),
        ({"shots_per_sample": 0}, "shots_per_sample must be a whole number of 1 or more, not 0."),
        (
            {"inner": True},
            'pec executes its circuits, so it must come last in a combination such as "rem+pec".',
        ),
        ({"inner": "yes"}, "inner must be true or false, not 'yes'."),
    ],
)
def test_bad_options_are_refused_in_one_sentence(options, message):
    with pytest.raises(UserError) as caught:
        registries.create("stage", "mitigate.pec", **options)
    assert str(caught.value) == f"stage 'mitigate.pec': {message}"
    assert "\n" not in str(caught.value)


def test_pec_inside_a_combination_is_refused_when_the_file_is_read():
    with pytest.raises(
        UserError, match=r"^in \[mitigation.pec\]: stage 'mitigate.pec': pec executes its circuits"
    ):
        parse_pipeline(
            {"circuit": {"kind": "ghz", "qubits": 2}, "mitigation": {"technique": "pec+zne"}}
        )


def test_the_indexed_sampler_draws_what_mitiqs_sample_circuit_draws():
    """A circuit whose gates all differ has a representation per gate, and Mitiq's search for
    each gate's compared it with every one (a minute per chunk for a 10-qubit quantum volume):
    LLQM looks each up by its operation and lets Mitiq's ``sample_sequence`` draw, which gives
    the very circuits, signs and norm of ``sample_circuit`` from the same random state."""
    from llqm_mitiq.pec.logical import circuit_key, for_mitiq
    from llqm_mitiq.pec.noise import represent
    from llqm_mitiq.pec.sampling import sample_indexed
    from qiskit.circuit.library import quantum_volume

    circuit = for_mitiq(quantum_volume(4, seed=3).decompose(reps=2))
    circuit.measure_all()
    levels = calibrated_noise_levels(circuit, AerBackend(device="fake_fez").snapshot())
    representations, _ = represent(circuit, levels)
    assert len(representations) > 20  # a representation per distinct gate
    theirs = sample_circuit(circuit, representations, np.random.RandomState(5), 6)
    ours = sample_indexed(circuit, representations, np.random.RandomState(5), 6)
    assert [circuit_key(c) for c in ours[0]] == [circuit_key(c) for c in theirs[0]]
    assert ours[1:] == theirs[1:]
