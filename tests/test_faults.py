"""Faults survived: what ran before a failure, an abrupt exit or a failing backend job is kept, and
says what happened."""

from __future__ import annotations

import textwrap

import pytest
from conftest import run_cli, run_python
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.circuits import random_layered
from qiskit import transpile

import llqm_core as llqm
from llqm_core.pipeline import PipelineFailed, parse_pipeline, run_pipeline


def test_a_task_process_that_exits_abruptly_leaves_its_run_interrupted_and_earlier_tasks_kept(
    tmp_path,
):
    path = tmp_path / "exit.sqlite"
    result = run_python(
        textwrap.dedent(f"""
        import os
        import llqm_core as llqm
        with llqm.run("dies", store={str(path)!r}):
            for i in range(3):
                with llqm.task(f"done {{i}}", stage="work"):
                    pass
            with llqm.task("in flight", stage="work"):
                os._exit(3)
    """)
    )
    assert result.returncode == 3
    store = llqm.ProfileStore(path, readonly=True)
    run = store.runs()[0]
    assert run.status is llqm.RunStatus.INTERRUPTED
    tasks = {t.name: t for t in store.tasks(run.id)}
    assert all(tasks[f"done {i}"].status is llqm.TaskStatus.COMPLETED for i in range(3))
    assert all(tasks[f"done {i}"].profile.wall_s > 0 for i in range(3))


def test_a_failing_backend_job_fails_its_execute_task_and_the_run(store_path):
    backend = AerBackend(device="fake_fez", method="stabilizer")  # forced: it cannot run rotations
    compiled = transpile(
        random_layered(3, 2, seed=1), backend.device, optimization_level=1, seed_transpiler=1
    )
    with pytest.raises(RuntimeError, match="Aer failed to run the job"):
        with llqm.run("job fails") as run:
            with llqm.task("prepare", stage="generate"):
                pass
            backend.execute(compiled, 100, seed=1)
    store = llqm.ProfileStore(store_path)
    assert store.run(run.id).status is llqm.RunStatus.FAILED
    tasks = {t.stage: t for t in store.tasks(run.id)}
    assert tasks["generate"].status is llqm.TaskStatus.COMPLETED
    assert (
        tasks["execute"].status is llqm.TaskStatus.FAILED and "Aer failed" in tasks["execute"].error
    )
    assert tasks["execute.simulate"].status is llqm.TaskStatus.FAILED
    assert tasks["execute"].hardware  # it still names the calibration it was sent against


def test_a_failing_pipeline_step_is_reported_with_its_run_and_the_cli_exits_1(tmp_path, store_path):
    config = {
        "name": "bound to fail",
        "circuit": {"kind": "random", "qubits": 3, "depth": 2, "seed": 1},
        "observable": {"kind": "parity", "bits": [0]},
        "backend": {"name": "aer", "device": "fake_fez", "method": "stabilizer"},
        "transpile": {"optimization_level": 1, "seed": 1},
        "execution": {"shots": 100, "seed": 1},
    }
    with pytest.raises(PipelineFailed) as failed:
        run_pipeline(parse_pipeline(config), store=store_path)
    assert failed.value.step == "mitigate.none" and failed.value.run_id
    store = llqm.ProfileStore(store_path)
    assert store.run(failed.value.run_id).status is llqm.RunStatus.FAILED
    done_steps = [
        t.stage
        for t in store.tasks(failed.value.run_id)
        if t.parent_id is None and t.status.value == "completed"
    ]
    assert done_steps == ["generate", "observable", "transpile"]
    path = tmp_path / "fails.toml"
    path.write_text(
        '[circuit]\nkind = "random"\nqubits = 3\ndepth = 2\nseed = 1\n[observable]\nkind = "parity"\n'
        'bits = [0]\n[backend]\nname = "aer"\nmethod = "stabilizer"\n[execution]\nshots = 100\n'
    )
    cli = run_cli("--store", str(tmp_path / "cli.sqlite"), "run", str(path))
    assert cli.returncode == 1 and "Traceback" not in cli.stderr
    assert (
        "the pipeline failed in step mitigate.none: RuntimeError: Aer failed to run the job"
        in cli.stderr
    )
    assert "is in the store as failed" in cli.stderr


def test_a_failing_extra_stage_fails_only_its_own_task(store_path, fresh_plugins):
    from llqm_core.plugin import hookimpl, loaded_plugins

    class Flaky:
        @hookimpl
        def llqm_register_stages(self, register):
            def broken(*, threshold: float = 0.5):
                def step(data):
                    raise ZeroDivisionError("the analysis divided by zero")

                return step

            register("flaky.analysis", broken)

    loaded_plugins().register(Flaky(), name="flaky")
    run_id, data = run_pipeline(
        parse_pipeline(
            {
                "circuit": {"kind": "ghz", "qubits": 3},
                "execution": {"shots": 200, "seed": 1},
                "stages": [{"name": "flaky.analysis"}],
            }
        ),
        store=store_path,
    )
    store = llqm.ProfileStore(store_path)
    assert store.run(run_id).status is llqm.RunStatus.COMPLETED
    tasks = {t.stage: t for t in store.tasks(run_id)}
    assert tasks["flaky.analysis"].status is llqm.TaskStatus.FAILED
    assert "divided by zero" in tasks["flaky.analysis"].error
    assert tasks["postprocess"].status is llqm.TaskStatus.COMPLETED
    assert any(
        "stage 'flaky.analysis' (stages #1) failed and was skipped" in w for w in data["warnings"]
    )


def test_a_job_that_times_out_in_the_queue_fails_its_task_and_keeps_the_rest(store_path):
    from llqm_qiskit.backends.modelled import ModelledQPU

    backend = ModelledQPU(
        device="fake_fez",
        queue_utilisation=0.95,
        queue_mean_job_s=600.0,
        queue_seed=2,
        time_scale=0.0001,
        timeout_s=60.0,
    )
    compiled = transpile(
        random_layered(3, 1, seed=1), backend.device, optimization_level=1, seed_transpiler=1
    )
    with llqm.run("impatient"):
        with llqm.task("prepare", stage="generate"):
            pass
        outcomes = []
        for _ in range(6):  # some jobs find the device free, the others time out in the queue
            try:
                backend.execute(compiled, 10, seed=1)
                outcomes.append("ran")
            except TimeoutError as exc:
                assert "waited 60 s in the queue of modelled_qpu:fake_fez" in str(exc)
                outcomes.append("timed out")
    assert "timed out" in outcomes
    tasks = llqm.ProfileStore(store_path).tasks(llqm.ProfileStore(store_path).runs()[0].id)
    failed = [t for t in tasks if t.stage == "execute" and t.status is llqm.TaskStatus.FAILED]
    assert len(failed) == outcomes.count("timed out") and all(
        "TimeoutError" == t.error_type for t in failed
    )
    queued = [t for t in tasks if t.stage == "execute.queue" and t.metrics.get("queue.timed_out")]
    assert len(queued) == len(failed)
    assert next(t for t in tasks if t.stage == "generate").status is llqm.TaskStatus.COMPLETED
