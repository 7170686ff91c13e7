"""The Prefect adapter: a profiled flow's task runs become LLQM tasks in the flow run's trace."""

from __future__ import annotations

import json
import os

import pytest
from conftest import busy
from llqm_prefect import PrefectInstrumentor, profiled
from llqm_qiskit import circuits
from prefect import flow, task
from qiskit import QuantumCircuit

import llqm_core as llqm
from llqm_core.analysis.report import build_report

pytestmark = pytest.mark.usefixtures("prefect_server")


@task(tags=["llqm.stage:generate"])
def make_ghz(n: int) -> QuantumCircuit:
    return circuits.ghz(n, measure=False)


@task
def count_gates(circuit: QuantumCircuit) -> int:
    return circuit.size()


ATTEMPTS = {"n": 0}


@task(retries=2, retry_delay_seconds=0)
def flaky(x: int) -> int:
    ATTEMPTS["n"] += 1
    if ATTEMPTS["n"] == 1:
        raise RuntimeError("transient backend error")
    return x + 1


@task
def square(x: int) -> int:
    return x * x


@flow
def inner(x: int) -> int:
    return square(x)


@profiled(stages={"count_gates": "postprocess", "square": "compute"})
@flow
def pipeline(n: int = 4) -> int:
    circuit = make_ghz.submit(n)
    gates = count_gates(circuit)
    bumped = flaky(gates)
    squares = [f.result() for f in square.map([1, 2, 3])]
    return inner(bumped) + sum(squares)


def run_tasks(store_path):
    store = llqm.ProfileStore(store_path)
    run = store.run()
    return run, store.tasks(run.id)


def test_every_task_run_of_a_profiled_flow_is_an_llqm_task(store_path, spans):
    ATTEMPTS["n"] = 0
    assert pipeline(4) == (4 + 1) ** 2 + 14  # 4 gates, +1, squared in the subflow; plus 1 + 4 + 9
    run, tasks = run_tasks(store_path)
    assert run.status is llqm.RunStatus.COMPLETED and run.name.startswith("pipeline/")
    assert run.config["engine"] == "prefect" and run.config["prefect.flow_run_id"]
    names = [t.name for t in tasks]
    assert names.count("square") == 4  # three mapped, one in the subflow
    by_name = {t.name: t for t in tasks}

    make, count = by_name["make_ghz"], by_name["count_gates"]
    assert (
        make.stage == "generate"
        and count.stage == "postprocess"
        and by_name["square"].stage == "compute"
    )
    assert make.metrics["circuit.qubits"] == 4 and make.metrics["circuit.two_qubit_gates"] == 3
    assert count.depends_on == [make.id]  # a future passed to a task
    assert all(t.profile.wall_s > 0 and t.span_id for t in tasks)

    attempts = [t for t in tasks if t.name == "flaky"]
    assert [(t.metrics["prefect.attempt"], t.status) for t in attempts] == [
        (1, llqm.TaskStatus.FAILED),
        (2, llqm.TaskStatus.COMPLETED),
    ]
    assert "transient backend error" in attempts[0].error
    assert attempts[0].metrics["prefect.task_run_id"] == attempts[1].metrics["prefect.task_run_id"]


def test_llqm_spans_sit_under_prefect_spans_in_the_flow_run_trace(store_path, spans):
    ATTEMPTS["n"] = 0
    pipeline(3)
    run, tasks = run_tasks(store_path)
    finished = spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in finished}
    llqm_spans = [s for s in finished if "llqm.task.id" in (s.attributes or {})]
    assert len(llqm_spans) == len(tasks)
    assert {format(s.context.trace_id, "032x") for s in finished} == {run.trace_id}
    flow_span = by_id[
        int(run.span_id, 16)
    ]  # the run is Prefect's flow run span, not a duplicate of it
    assert flow_span.attributes["llqm.run.id"] == run.id
    for span in llqm_spans:
        parent = by_id[span.parent.span_id]  # no orphans: the parent was exported too
        assert "llqm.task.id" not in parent.attributes
        assert parent.attributes["prefect.run.id"] == span.attributes["llqm.prefect.task_run_id"]
    assert not [s for s in finished if s.name == run.name]


def test_a_failing_task_fails_its_llqm_task_and_run_and_keeps_what_ran_before(store_path):
    @task
    def fine() -> int:
        return 1

    @task
    def broken(x: int) -> int:
        raise ValueError("calibration out of range")

    @profiled
    @flow
    def failing() -> int:
        return broken(fine())

    with pytest.raises(ValueError, match="calibration out of range"):
        failing()
    run, tasks = run_tasks(store_path)
    assert run.status is llqm.RunStatus.FAILED and "calibration out of range" in run.error
    assert [(t.name, t.status) for t in tasks] == [
        ("fine", llqm.TaskStatus.COMPLETED),
        ("broken", llqm.TaskStatus.FAILED),
    ]
    assert tasks[1].error_type == "ValueError"


def test_tasks_running_in_parallel_threads_each_report_their_own_cpu(store_path):
    @task
    def spin(seconds: float) -> float:
        busy(seconds)
        return seconds

    @profiled
    @flow
    def parallel() -> list[float]:
        futures = [spin.submit(0.4), spin.submit(0.4)]
        return [f.result() for f in futures]

    parallel()
    _, tasks = run_tasks(store_path)
    assert len(tasks) == 2
    assert (
        tasks[0].start_ns < tasks[1].end_ns and tasks[1].start_ns < tasks[0].end_ns
    )  # they overlapped
    for t in tasks:  # each its own thread's CPU and a share of what no task's thread spent
        assert t.profile.cpu_scope == "shared"
        assert 0.35 <= t.profile.cpu_s <= 0.55


def test_async_flows_and_tasks_are_profiled(store_path):
    @task
    async def wait(x: int) -> int:
        return x

    @profiled
    @flow
    async def asynchronous() -> int:
        return await wait(5)

    import asyncio

    assert asyncio.run(asynchronous()) == 5
    _, tasks = run_tasks(store_path)
    assert [t.name for t in tasks] == ["wait"]


def test_the_profile_summary_is_published_as_a_prefect_artifact(store_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    ATTEMPTS["n"] = 0
    pipeline(3)
    run, _ = run_tasks(store_path)
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["llqm-profile"]))
        )
    mine = [a for a in artifacts if str(a.flow_run_id) == run.config["prefect.flow_run_id"]]
    assert len(mine) == 1
    assert run.id in mine[0].data and "| make_ghz | generate | completed |" in mine[0].data


def test_flows_without_the_decorator_are_left_alone(store_path):
    @flow
    def plain() -> int:
        return square(3)

    assert plain() == 9
    assert not store_path.exists() or not llqm.ProfileStore(store_path).runs()


def test_instrumentation_is_symmetrical_and_idempotent():
    import prefect.task_engine

    instrumentor = PrefectInstrumentor()
    instrumentor.instrument()
    patched = prefect.task_engine.call_with_parameters
    instrumentor.instrument()
    assert prefect.task_engine.call_with_parameters is patched and instrumentor.is_instrumented
    instrumentor.uninstrument()
    instrumentor.uninstrument()
    assert not instrumentor.is_instrumented
    assert not getattr(prefect.task_engine.call_with_parameters, "_llqm_instrumented", False)
    instrumentor.instrument()


def test_profiled_refuses_anything_but_a_prefect_flow():
    with pytest.raises(TypeError, match="@profiled goes above Prefect's @flow"):
        profiled(lambda: None)


def check_distributed_run(store_path, workers=0):
    """``workers``: the Dask workers whose start-up is in the run (none for a process pool)."""
    run, every = run_tasks(store_path)
    started = [t for t in every if t.stage == "worker.start"]
    tasks = [t for t in every if t.stage != "worker.start"]
    # on Dask, the cluster's start as the flow waited for it, and each worker's for the run
    expected = ["dask.cluster", *["worker.start"] * workers] if workers else []
    assert sorted(t.name for t in started) == expected
    assert run.status is llqm.RunStatus.COMPLETED
    crunched = [t for t in tasks if t.name == "crunch"]
    gather = next(t for t in tasks if t.name == "gather")
    assert len(crunched) == 4 and all(t.stage == "compute" for t in crunched)
    assert all(t.profile.pid != os.getpid() for t in crunched)  # profiled in the worker that ran it
    assert len({t.profile.pid for t in crunched}) in (1, 2)  # one or both of the two workers
    assert all(0.15 <= t.profile.cpu_s <= 0.4 for t in crunched)
    assert {t.trace_id for t in tasks} == {run.trace_id}  # one trace
    assert all(
        t.parent_span_id not in (None, run.span_id) for t in tasks
    )  # under Prefect's task spans
    assert sorted(gather.depends_on) == sorted(t.id for t in crunched)


def test_process_pool_workers_profile_their_tasks_into_the_same_run(store_location):
    """Each worker process writes into the store itself: the file, or the database."""
    from prefect.task_runners import ProcessPoolTaskRunner
    from workflows import distributed_flow

    pool = ProcessPoolTaskRunner(max_workers=2)
    assert distributed_flow(pool, store_location)(4) == 0 + 1 + 4 + 9
    check_distributed_run(store_location)


def test_dask_local_cluster_workers_profile_their_tasks_into_the_same_run(store_path):
    from prefect_dask import DaskTaskRunner
    from workflows import distributed_flow

    runner = DaskTaskRunner(
        cluster_kwargs={"n_workers": 2, "threads_per_worker": 1, "processes": True}
    )
    assert distributed_flow(runner, store_path)(4) == 0 + 1 + 4 + 9
    check_distributed_run(store_path, workers=2)


def test_the_prefect_example_flow_profiles_each_quantum_stage(store_path):
    import importlib.util

    from conftest import ROOT

    spec = importlib.util.spec_from_file_location(
        "prefect_ghz_flow", ROOT / "examples" / "prefect_ghz_flow.py"
    )
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    fractions = example.ghz_on_fez([3, 5], shots=300)
    assert set(fractions) == {3, 5} and all(0.5 < f <= 1.0 for f in fractions.values())
    _, tasks = run_tasks(store_path)
    stages = {}
    for t in tasks:
        stages.setdefault(t.stage, []).append(t)
    # the Qiskit instrumentor puts each transpile under its Prefect task, with its stages
    assert {s: len(ts) for s, ts in stages.items() if not s.startswith("transpile.")} == {
        "generate": 2,
        "transpile": 2,
        "execute": 2,
        "postprocess": 2,
    }
    names = ("init", "layout", "routing", "translation", "optimization", "scheduling")
    for transpile in stages["transpile"]:
        inner = [t.stage for t in tasks if t.parent_id == transpile.id]
        # as tasks, or as seconds on the transpile task where it took under 50 ms
        assert inner == [f"transpile.{s}" for s in names] or (
            not inner and "transpile.stage.init.time_s" in transpile.metrics
        )
    assert all(t.metrics["circuit.qubits"] == 156 for t in stages["transpile"])
    by_id = {t.id: t for t in tasks}
    for t in stages["postprocess"]:
        assert [by_id[d].stage for d in t.depends_on] == ["execute"]


@pytest.mark.slow  # a Dask cluster of its own (20-30 s); the local-cluster test stays in the default run
def test_an_existing_dask_cluster_given_by_address_works_the_same_way(store_path):
    from distributed import LocalCluster
    from prefect_dask import DaskTaskRunner
    from workflows import distributed_flow

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        runner = DaskTaskRunner(address=cluster.scheduler_address)
        assert distributed_flow(runner, store_path)(4) == 0 + 1 + 4 + 9
    check_distributed_run(store_path, workers=2)


def test_a_pipeline_file_runs_as_a_profiled_prefect_flow(store_path):
    from llqm_core.pipeline import parse_pipeline, run_pipeline

    pipeline = parse_pipeline(
        {
            "name": "ghz 3 on prefect",
            "circuit": {"kind": "ghz", "qubits": 3},
            "backend": {"name": "aer", "device": "fake_fez"},
            "transpile": {"optimization_level": 0, "seed": 7},
            "mitigation": {
                "technique": "zne",
                "zne": {"scale_factors": [1, 3], "factory": "linear"},
            },
            "execution": {"shots": 500, "seed": 2},
            "run": {"engine": "prefect"},
        }
    )
    steps_seen = []
    run_id, data = run_pipeline(
        pipeline, store=store_path, on_step=lambda i, n, name: steps_seen.append(name)
    )
    store = llqm.ProfileStore(store_path)
    run = store.run(run_id)
    assert (
        run.status.value == "completed"
        and run.config["engine"] == "prefect"
        and run.config["prefect.flow_run_id"]
    )
    tasks = store.tasks(run_id)
    tops = [t for t in tasks if t.parent_id is None]
    assert [t.stage for t in tops] == [
        "generate",
        "observable",
        "transpile",
        "mitigate.zne",
        "postprocess",
    ]
    zne = tops[3]
    assert {t.stage for t in tasks if t.parent_id == zne.id} >= {
        "mitigate.zne.fold",
        "execute",
        "mitigate.zne.extrapolate",
    }
    assert (
        tops[-1].metrics["fidelity.ideal"] == pytest.approx(1.0)
        and "fidelity.mitigated" in tops[-1].metrics
    )
    assert steps_seen == [*(s.name for s in pipeline.steps), "done"]
    assert data["fidelity"]["fidelity.mitigated"] == tops[-1].metrics["fidelity.mitigated"]


@pytest.mark.slow  # a Dask cluster of its own (20-30 s); the local-cluster test stays in the default run
def test_a_dask_worker_that_dies_mid_task_leaves_the_run_failed_and_the_finished_tasks_kept(
    store_path,
):
    import dask
    from prefect_dask import DaskTaskRunner
    from workflows import dying_worker_flow

    runner = DaskTaskRunner(
        cluster_kwargs={"n_workers": 1, "threads_per_worker": 1, "processes": True}
    )
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        pytest.raises(BaseException),  # noqa: B017 (Dask's error type differs between releases)
    ):
        dying_worker_flow(runner, store_path)(4)  # Dask gives up after the first worker death
    store = llqm.ProfileStore(store_path)
    run = store.runs()[0]
    assert run.status in (llqm.RunStatus.FAILED, llqm.RunStatus.INTERRUPTED)
    tasks = store.tasks(run.id)
    finished = [
        t for t in tasks if t.status is llqm.TaskStatus.COMPLETED and t.stage != "worker.start"
    ]
    assert len(finished) >= 3 and all(
        t.profile.pid != os.getpid() and t.profile.wall_s > 0 for t in finished
    )
    assert all(
        t.status is not llqm.TaskStatus.RUNNING for t in tasks
    )  # the one that died does not read running


SECRET = "artifacttoken-0123456789abcdef"


@task
def connect(note: str) -> str:
    llqm.annotate(note=note, api_token=SECRET)
    return "connected"


@task
def refused() -> None:
    raise PermissionError(f"token {SECRET} was refused")


def test_a_token_never_reaches_the_prefect_artifact(store_path, monkeypatch):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from llqm_core.model import secrets

    monkeypatch.setenv("QISKIT_IBM_TOKEN", SECRET)
    monkeypatch.setattr(secrets, "_env_secrets", None)  # read the environment again

    @profiled
    @flow
    def uses_a_token() -> str:
        refused(return_state=True)  # fails, and the flow goes on
        return connect(f"signed in with {SECRET}")

    uses_a_token()
    run = llqm.ProfileStore(store_path).run()
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["llqm-profile"]))
        )
    (mine,) = [a for a in artifacts if str(a.flow_run_id) == run.config["prefect.flow_run_id"]]
    assert run.id in mine.data and "connect" in mine.data
    assert (
        "PermissionError: token [redacted] was refused" in mine.data
    )  # the error is shown, the token is not
    assert SECRET not in mine.data
    assert SECRET not in json.dumps(build_report(llqm.ProfileStore(store_path), run.id))


def test_task_runs_served_from_prefects_cache_stay_in_the_profile_as_cached(store_path):
    """The same flow twice with ``cache_policy=INPUTS``: the second run's cached task runs are
    LLQM tasks with status ``cached``, no cost, the cache key and the task that computed the
    result, in their place among the dependencies; the report counts what the cache saved."""
    import uuid

    from prefect.cache_policies import INPUTS, NO_CACHE

    @task(cache_policy=INPUTS)  # salt: keys no other test (or session, in this PREFECT_HOME) shares
    def load(salt: str, n: int) -> tuple[str, list[int]]:
        busy(0.05)
        return salt, list(range(n))

    @task(cache_policy=INPUTS)
    def double(loaded: tuple[str, list[int]]) -> list[int]:
        busy(0.05)
        return [2 * v for v in loaded[1]]

    @task(cache_policy=NO_CACHE)
    def total(values: list[int]) -> int:
        return sum(values)

    @profiled
    @flow
    def cached_flow(salt: str) -> int:
        return total(double(load(salt, 5)))

    salt = uuid.uuid4().hex
    assert cached_flow(salt) == cached_flow(salt) == 20
    store = llqm.ProfileStore(store_path)
    first, second = sorted(store.runs(), key=lambda r: r.start_ns)
    ran = {t.name: t for t in store.tasks(first.id)}
    served = {t.name: t for t in store.tasks(second.id)}
    assert set(served) == {"load", "double", "total"}
    assert {n: t.status.value for n, t in served.items()} == {
        "load": "cached",
        "double": "cached",
        "total": "completed",
    }
    for name in ("load", "double"):
        cached, source = served[name], ran[name]
        assert cached.profile.wall_s == 0 and cached.profile.cpu_s == 0
        assert cached.metrics["cache.key"] == source.metrics["cache.key"]
        assert cached.metrics["cache.source_run"] == first.id
        assert cached.metrics["cache.source_task"] == source.id
        assert cached.metrics["cache.saved_wall_s"] == pytest.approx(source.profile.wall_s)
    assert served["double"].depends_on == [served["load"].id]
    assert served["total"].depends_on == [served["double"].id]
    report = build_report(store, second.id)
    assert report["cache"] == {
        "cached_tasks": 2,
        "with_known_source": 2,
        "saved_wall_s": pytest.approx(ran["load"].profile.wall_s + ran["double"].profile.wall_s),
        "saved_cpu_s": pytest.approx(ran["load"].profile.cpu_s + ran["double"].profile.cpu_s),
    }
    assert build_report(store, first.id)["cache"] is None
