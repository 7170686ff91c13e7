"""The embedded default and the modelled QPU: right answers, honest costs, clear refusals."""

from __future__ import annotations

import threading

import pytest
from llqm_qiskit.backends.aer import AerBackend, choose_method, is_clifford
from llqm_qiskit.backends.modelled import ModelledQPU
from llqm_qiskit.circuits import ghz, ghz_success
from llqm_qiskit.devices.drift import CalibrationDrift
from llqm_qiskit.devices.qpu_time import DurationTable, QpuTimeModel, circuit_duration
from llqm_qiskit.devices.queue_model import QueueModel
from qiskit import QuantumCircuit, transpile

import llqm_core as llqm
from llqm_core.model.errors import UserError
from llqm_core.pipeline import registries


@pytest.fixture(scope="module")
def ghz5(fez):
    return transpile(ghz(5), fez, optimization_level=1, seed_transpiler=3)


def tasks_by_stage(store_path, run_id):
    found = {}
    for task in llqm.ProfileStore(store_path).tasks(run_id):
        found.setdefault(task.stage, []).append(task)
    return found


def test_backends_are_found_by_registered_name_with_their_options(store_path):
    backend = registries.create("backend", "aer", device="fake_kingston", noise=False)
    assert backend.name == "aer:fake_kingston" and backend.num_qubits == 156
    with pytest.raises(
        UserError, match="unknown backend 'qpu9'; registered backend names are: .*aer.*modelled_qpu"
    ):
        registries.create("backend", "qpu9")
    with pytest.raises(
        UserError, match="backend 'aer' has no option 'shots'; its options are: device, method"
    ):
        registries.create("backend", "aer", shots=10)
    with pytest.raises(UserError, match="unknown device 'fake_nowhere'.*fake_fez"):
        registries.create("backend", "aer", device="fake_nowhere")
    with pytest.raises(UserError, match="unknown simulation method 'exact'"):
        registries.create("backend", "aer", method="exact")


def test_the_modelled_qpu_takes_every_option_of_aer_and_its_own_models():
    """``aer``'s simulation options are declared once and serve ``modelled_qpu`` too; a file's
    unknown option is still one sentence naming both sets."""
    backend = registries.create(
        "backend", "modelled_qpu", device="fake_kingston", mps_max_bond=16, time_scale=0.0
    )
    assert backend.name == "modelled_qpu:fake_kingston" and backend.mps_max_bond == 16
    with pytest.raises(
        UserError,
        match="backend 'modelled_qpu' has no option 'model_qpu_time'; its options are: device, "
        "method, .*mps_max_bond, .*job_overhead_s, .*timeout_s.",
    ):
        registries.create("backend", "modelled_qpu", model_qpu_time=True)
    with pytest.raises(UserError, match="backend 'modelled_qpu': mps_max_bond must be"):
        registries.create("backend", "modelled_qpu", mps_max_bond=0)


def test_the_embedded_default_runs_a_noisy_ghz_and_profiles_the_job(store_path, ghz5):
    backend = AerBackend(device="fake_fez", method="density_matrix")  # Aer, noise written in
    with llqm.run("aer ghz") as run:
        counts = backend.execute(ghz5, shots=2000, seed=11)
        with llqm.task("read counts", stage="postprocess") as reader:
            reader.add_dependency(*run.producers([counts]))
    assert sum(counts.values()) == 2000
    assert 0.8 < ghz_success(counts) < 0.999  # noisy, but mostly right
    stages = tasks_by_stage(store_path, run.id)
    execute = stages["execute"][0]
    assert execute.hardware == backend.snapshot().fingerprint
    assert stages["postprocess"][0].depends_on == [execute.id]  # the counts lead back to the job
    assert execute.metrics["execute.method"] == "density_matrix"
    assert (
        execute.metrics["backend.name"] == "aer:fake_fez"
        and execute.metrics["result.shots"] == 2000
    )
    # a simulator's seconds are CPU time, never QPU seconds (they are the simulate task's)
    assert execute.profile.qpu_s is None and execute.profile.queue_s is None
    assert stages["execute.simulate"][0].profile.cpu_s > 0
    assert {t.parent_id for t in stages["execute.noise"] + stages["execute.simulate"]} == {
        execute.id
    }
    assert stages["execute.noise"][0].metrics["noise.channels"] > 0


def test_seeded_runs_repeat_and_noise_can_be_switched_off(ghz5):
    backend = AerBackend(device="fake_fez")
    assert backend.execute(ghz5, 500, seed=5) == backend.execute(ghz5, 500, seed=5)
    ideal = AerBackend(device="fake_fez", noise=False).execute(ghz5, 500, seed=5)
    assert set(ideal) == {"00000", "11111"}


def test_the_method_follows_the_circuit(fez):
    wide_clifford = transpile(ghz(30), fez, optimization_level=1, seed_transpiler=1)
    assert is_clifford(wide_clifford)
    assert choose_method([wide_clifford], exact_max_qubits=10, statevector_max_qubits=28) == "stim"
    assert choose_method([wide_clifford], 10, 28, noisy=False) == "stabilizer"
    rotation = QuantumCircuit(12)
    rotation.rx(0.3, range(12))
    assert not is_clifford(rotation)
    assert choose_method([rotation], 10, 28) == "statevector"
    # narrow: a density matrix, exact in the noise, unless Stim samples the same distribution
    narrow_clifford = transpile(ghz(6), fez, optimization_level=1, seed_transpiler=1)
    assert choose_method([narrow_clifford], 10, 28) == "stim"
    assert choose_method([narrow_clifford], 10, 28, noisy=False) == "density_matrix"
    narrow = QuantumCircuit(8)
    narrow.rx(0.3, range(8))
    narrow.cx(range(7), range(1, 8))
    assert choose_method([narrow], 10, 28, shots=4000) == "density_matrix"
    # PEC's samples of 40 shots: 40 trajectories each cost far less than a 4^8 density matrix
    samples = [narrow.copy() for _ in range(100)]
    assert choose_method(samples, 10, 28, shots=40) == "statevector"
    assert choose_method(samples, 10, 28, noisy=False, shots=40) == "density_matrix"
    with pytest.raises(ValueError, match="cannot be simulated here.*up to 8 qubits"):
        choose_method([rotation], 10 - 5, 8)


def test_bad_jobs_are_refused_with_one_sentence(ghz5):
    backend = AerBackend(device="fake_fez")
    with pytest.raises(
        ValueError, match=r"shots must be a whole number from 1 to 10,000,000, not -5"
    ):
        backend.execute(ghz5, -5)
    with pytest.raises(ValueError, match="uses cx, h, which fake_fez does not run.*transpile it"):
        backend.execute(ghz(3), 10)
    with pytest.raises(ValueError, match="has 157 qubits, more than the 156 of fake_fez"):
        backend.execute(QuantumCircuit(157), 10)


def test_circuit_duration_is_its_scheduled_length(fez):
    snapshot = AerBackend(device="fake_fez").snapshot()
    table = DurationTable(snapshot)
    circuit = QuantumCircuit(156)
    circuit.sx(0)
    circuit.sx(0)
    circuit.sx(1)  # runs alongside the first sx
    circuit.rz(0.5, 0)  # virtual: no time
    circuit.measure_all()
    sx = fez.target["sx"][(0,)].duration
    measure = max(fez.target["measure"][(q,)].duration for q in (0, 1))
    assert circuit_duration(circuit, table) == pytest.approx(2 * sx + measure)
    model = QpuTimeModel(job_overhead_s=2.0, rep_delay_s=250e-6)
    total, each, unknown = model.job_seconds([circuit, circuit], 1000, snapshot)
    assert unknown == 0 and total == pytest.approx(2.0 + 2 * 1000 * (250e-6 + each[0]))
    with pytest.raises(ValueError, match="rep_delay_s must be a number of seconds of 0 or more"):
        QpuTimeModel(rep_delay_s=-1)


def test_aer_can_record_the_modelled_device_time_of_a_job_labelled_as_modelled(store_path, ghz5):
    from rich.console import Console

    from llqm_core.analysis.report import build_report
    from llqm_core.analysis.report_console import render_report
    from llqm_core.analysis.summary import step_costs

    backend = AerBackend(device="fake_fez", model_qpu_time=True)
    with llqm.run("modelled time") as run:
        with llqm.task("run it", stage="step"):
            backend.execute(ghz5, 100, seed=1)
    execute = tasks_by_stage(store_path, run.id)["execute"][0]
    assert execute.metrics["qpu.modelled"] is True
    assert execute.profile.qpu_s == pytest.approx(
        QpuTimeModel().job_seconds([ghz5], 100, backend.snapshot())[0]
    )
    (cost,) = step_costs(llqm.ProfileStore(store_path).tasks(run.id))
    assert cost["qpu_modelled"] and cost["qpu_s"] > 2.0
    console = Console(record=True, width=200)
    render_report(build_report(llqm.ProfileStore(store_path), run.id), console, tasks=False)
    assert " modelled" in console.export_text()


def test_the_modelled_qpu_charges_modelled_time_and_batching_pays_the_overhead_once(
    store_path, ghz5
):
    backend = ModelledQPU(device="fake_fez", time_scale=0.001, queue_utilisation=0.0)
    with llqm.run("modelled") as run:
        backend.execute([ghz5, ghz5], shots=100, seed=1)
        backend.execute(ghz5, shots=100, seed=1)
        backend.execute(ghz5, shots=100, seed=1)
    batched, single, _ = tasks_by_stage(store_path, run.id)["execute"]
    assert single.profile.qpu_s == pytest.approx(
        2.0 + 100 * (250e-6 + single.metrics["qpu.model.circuit_duration_s"])
    )
    assert batched.profile.qpu_s < 2 * single.profile.qpu_s - 1.9  # one overhead instead of two
    assert batched.profile.queue_s == 0.0  # nobody else on the device
    assert single.profile.wall_s >= single.profile.qpu_s * 0.001  # the device was held for real


def test_queue_waits_follow_the_load_and_repeat_with_the_seed():
    idle = QueueModel(utilisation=0.0, seed=1)
    assert [idle.others_wait_s() for _ in range(50)] == [0.0] * 50
    draws = QueueModel(utilisation=0.8, mean_job_s=10, seed=4)
    waits = [draws.others_wait_s() for _ in range(4000)]
    again = QueueModel(utilisation=0.8, mean_job_s=10, seed=4)
    assert [again.others_wait_s() for _ in range(5)] == waits[:5]
    assert sum(waits) / len(waits) == pytest.approx(
        draws.mean_wait_s, rel=0.15
    )  # 0.8 * 10 / 0.2 = 40 s
    assert 0.15 < sum(w == 0 for w in waits) / len(waits) < 0.25  # idle with probability 1 - 0.8
    with pytest.raises(ValueError, match="utilisation must be at least 0 and below 1"):
        QueueModel(utilisation=1.0)


def test_the_default_queue_is_a_shared_device_where_most_jobs_wait_minutes():
    shared = QueueModel()
    waits = [shared.others_wait_s() for _ in range(4000)]
    assert 0.85 < sum(w > 0 for w in waits) / len(waits) < 0.95  # 9 jobs in 10 wait
    assert 6 * 60 < sum(waits) / len(waits) < 12 * 60  # 9 minutes on average
    assert QueueModel().others_wait_s() > 0  # the seeded first job (the examples' one job) waits
    assert ModelledQPU(device="fake_fez").queue.mean_wait_s == pytest.approx(540.0)


def test_jobs_of_one_process_queue_for_the_modelled_device(store_path, ghz5):
    backend = ModelledQPU(
        device="fake_marrakesh", job_overhead_s=100.0, time_scale=0.01, queue_utilisation=0.0
    )  # each job holds it 1 s: on a busy machine a thread may start a few tenths late
    compiled = transpile(ghz(5), backend.device, optimization_level=1, seed_transpiler=3)
    together = threading.Barrier(2)

    def submit(run):
        with llqm.run_context(run):
            together.wait()
            backend.execute(compiled, 10)

    with llqm.run("two at once") as run:
        workers = [threading.Thread(target=submit, args=(run,)) for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    queued = sorted(t.profile.queue_s for t in tasks_by_stage(store_path, run.id)["execute"])
    assert (
        queued[0] < 1.0 and queued[1] > 10.0
    )  # the second waited for the first's 100 modelled seconds, less how late it came


def test_drift_is_seeded_moves_the_calibration_and_fails_couplers():
    base = AerBackend(device="fake_fez").snapshot()
    first, second = CalibrationDrift(seed=3), CalibrationDrift(seed=3)
    assert first.advance(base, 5).fingerprint == second.advance(base, 5).fingerprint
    moved = CalibrationDrift(seed=3).advance(base, 24)
    assert moved.fingerprint != base.fingerprint and moved.extra["drift"]["elapsed_h"] == 24
    assert moved.qubits[0].t1_s != base.qubits[0].t1_s
    assert all(c.readout_error is None or c.readout_error <= 0.5 for c in moved.qubits.values())
    broken = CalibrationDrift(seed=1, coupler_failure_rate=0.05).advance(
        base, 10
    )  # ~40% of couplers fail
    failed = [g for g in broken.gates if len(g.qubits) == 2 and g.error == 1.0]
    assert len(failed) > 2 * len([g for g in base.gates if len(g.qubits) == 2 and g.error == 1.0])
    with pytest.raises(ValueError, match="drift error_sigma must be a number of 0 or more"):
        CalibrationDrift(error_sigma=-0.1)


def test_what_is_out_of_service_stays_out_whatever_the_walk():
    """Couplers out of service before any drift (cz error 1.0 on the device), and those the
    model fails, stay out at every later reading: the walk never brings them back below 1.0."""
    from llqm_core.model.hardware import faulty_couplers, faulty_qubits

    base = AerBackend(device="fake_fez").snapshot()
    out = set(faulty_couplers(base))
    assert out  # every fake Heron has couplers out of service
    for seed in range(4):
        drift = CalibrationDrift(seed=seed, coupler_failure_rate=0.01)
        seen = set(out)
        dead = set(faulty_qubits(base))
        for _ in range(6):
            now = drift.advance(base, 2)
            assert seen <= set(faulty_couplers(now)), seed
            assert dead <= set(faulty_qubits(now)), seed
            seen = set(faulty_couplers(now))
            dead = set(faulty_qubits(now))


def test_a_drifting_backend_names_a_new_snapshot_per_job(store_path, ghz5):
    backend = AerBackend(device="fake_fez", drift={"seed": 2, "hours_per_job": 6})
    with llqm.run("drifting") as run:
        backend.execute(ghz5, 100, seed=1)
        backend.execute(ghz5, 100, seed=1)
    first, second = tasks_by_stage(store_path, run.id)["execute"]
    assert first.hardware != second.hardware
    store = llqm.ProfileStore(store_path)
    # a job runs on the calibration in force when submitted; its own hours pass as it runs
    assert store.snapshot(first.hardware).extra["drift"]["elapsed_h"] == 0
    assert store.snapshot(second.hardware).extra["drift"]["elapsed_h"] == 6


def test_an_unknown_device_names_the_closest_ones_not_every_device():
    from llqm_qiskit.devices.catalog import fake_device

    with pytest.raises(ValueError, match="unknown device 'fake_fezz'") as raised:
        fake_device("fake_fezz")
    message = str(raised.value)
    assert "closest: fake_fez" in message and "fake_manila" not in message and len(message) < 400
