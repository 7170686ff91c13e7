"""job_batching: a readout calibration rides in the technique's own job instead of a job of its own."""

from __future__ import annotations

import pytest
from llqm_mitiq.shared_job import SharedJob
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.circuits import ghz
from qiskit import transpile

import llqm_core as llqm
from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline, run_pipeline


def pipeline(technique: str, policies: list[str], **rem: int) -> dict:
    return {
        "name": f"{technique} {policies}",
        "circuit": {"kind": "ghz", "qubits": 5},
        "observable": {"kind": "parity", "bits": [0, 1, 2, 3]},
        "backend": {
            "name": "modelled_qpu",
            "device": "fake_fez",
            "time_scale": 0.001,
            "queue_seed": 3,
            "queue_utilisation": 0.5,
            "queue_mean_job_s": 30.0,
        },
        "transpile": {"optimization_level": 0, "seed": 11},
        "mitigation": {
            "technique": technique,
            "rem": rem,
            "zne": {"scale_factors": [1, 3], "factory": "linear"},
        },
        "execution": {"shots": 2000, "seed": 5},
        "policies": {"names": policies},
    }


def jobs_of(store_path, run_id) -> list:
    return [t for t in llqm.ProfileStore(store_path).tasks(run_id) if t.stage == "execute"]


@pytest.mark.parametrize("technique", ["rem", "rem+zne"])
def test_the_calibration_shares_the_next_job_and_saves_its_overhead(store_path, technique):
    apart_id, apart = run_pipeline(parse_pipeline(pipeline(technique, [])), store=store_path)
    shared_id, shared = run_pipeline(
        parse_pipeline(pipeline(technique, ["job_batching"])), store=store_path
    )
    apart_jobs, shared_jobs = jobs_of(store_path, apart_id), jobs_of(store_path, shared_id)
    assert len(apart_jobs) == 2 and len(shared_jobs) == 1
    assert (
        shared_jobs[0].metrics["execute.circuits"]
        == apart_jobs[0].metrics["execute.circuits"] + apart_jobs[1].metrics["execute.circuits"]
    )
    # one job's fixed overhead (2 s on the modelled Heron) is saved, the shots cost the same
    assert sum(t.profile.qpu_s for t in apart_jobs) - shared_jobs[0].profile.qpu_s == pytest.approx(
        2.0, abs=0.01
    )
    assert (
        shared["fidelity"]["fidelity.error_mitigated"]
        < shared["fidelity"]["fidelity.error_unmitigated"]
    )
    tasks = llqm.ProfileStore(store_path).tasks(shared_id)
    fit = next(t for t in tasks if t.name == "calibrate (fit from the shared job)")
    assert fit.metrics["rem.calibrated_qubits"] == 5 and shared_jobs[0].id in fit.depends_on
    decision = next(
        d for d in llqm.ProfileStore(store_path).decisions(shared_id) if d.policy == "job_batching"
    )
    assert (
        decision.choice["share_next_job"] and decision.inputs["jobs_measured"] == 2
    )  # the first run's two jobs
    assert "earlier job(s) on modelled_qpu:fake_fez waited a median" in decision.rationale


def test_a_job_time_limit_caps_the_shared_job_by_the_measured_qpu_seconds_per_circuit(store_path):
    run_pipeline(
        parse_pipeline(pipeline("rem", [])), store=store_path
    )  # jobs of 2 and 1 circuits: 2 s + ~0.5 s each
    store = llqm.ProfileStore(store_path)

    def run_with_limit(max_job_s: float) -> tuple[int, list]:
        config = pipeline("rem", ["job_batching"])
        config["policies"]["job_batching"] = {"max_job_s": max_job_s}
        run_id, _ = run_pipeline(parse_pipeline(config), store=store_path)
        return len(jobs_of(store_path, run_id)), store.decisions(run_id)

    jobs, decisions = run_with_limit(3.2)  # room for 2 circuits: the calibration alone fills it
    assert jobs == 2 and [d.choice for d in decisions] == [{}]
    assert "2 circuits already fill a job (at most 2 per job)" in decisions[0].rationale
    jobs, (decision,) = run_with_limit(3.7)  # room for 3: calibration and circuit share one job
    assert jobs == 1 and decision.choice["max_circuits"] == 3
    assert decision.inputs["job_fixed_qpu_s"] == pytest.approx(2.0, abs=0.05)
    assert decision.inputs["qpu_s_per_circuit"] == pytest.approx(0.5, abs=0.05)
    assert "at most 3 circuits keep a job under 3.7 s" in decision.rationale


def test_calibration_shots_other_than_the_jobs_keep_a_job_of_their_own(store_path):
    run_id, _ = run_pipeline(
        parse_pipeline(pipeline("rem+zne", ["job_batching"], calibration_shots=500)),
        store=store_path,
    )
    assert len(jobs_of(store_path, run_id)) == 2
    (kept,) = [
        d for d in llqm.ProfileStore(store_path).decisions(run_id) if d.policy == "job_batching"
    ]
    assert kept.choice == {} and "one job runs one number of shots" in kept.rationale


def test_a_shared_job_hands_each_party_its_own_counts(store_path):
    backend = AerBackend(device="fake_fez")
    circuits = transpile([ghz(2), ghz(3)], backend.device, optimization_level=1, seed_transpiler=1)
    received = []
    shared = SharedJob(backend)
    shared.defer([circuits[0]], 300, 1, received.extend)
    with llqm.run("shared job"):
        counts = shared.execute(circuits[1], 300, seed=2)
    assert len(received) == 1 and set(received[0]) <= {"00", "01", "10", "11"}
    assert set(counts) <= {format(i, "03b") for i in range(8)} and sum(counts.values()) == 300
    assert shared.pending == 0 and shared.device is backend.device


def test_a_job_over_the_circuit_limit_runs_the_deferred_circuits_apart(store_path):
    backend = AerBackend(device="fake_fez")
    circuit = transpile(ghz(2), backend.device, optimization_level=1, seed_transpiler=1)
    received = []
    shared = SharedJob(backend, max_circuits=2)
    shared.defer([circuit, circuit], 100, 1, received.extend)
    with llqm.run("over the limit") as run:
        shared.execute([circuit], 100, seed=2)
    jobs = [t for t in llqm.ProfileStore(store_path).tasks(run.id) if t.stage == "execute"]
    assert len(received) == 2 and [j.metrics["execute.circuits"] for j in jobs] == [2, 1]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"max_circuits": 0}, "max_circuits must be a whole number of 1 or more, not 0"),
        ({"history": "all"}, "history must be a whole number of 1 or more, not 'all'"),
        ({"max_job_s": 0}, "max_job_s must be a positive number of QPU seconds, not 0"),
    ],
)
def test_bad_batching_options_get_one_sentence(options, message):
    with pytest.raises(UserError, match=message):
        parse_pipeline(
            {
                **pipeline("rem", ["job_batching"]),
                "policies": {"names": ["job_batching"], "job_batching": options},
            }
        )
