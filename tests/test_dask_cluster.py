"""Dask workers on other hosts, with no path to the flow's store, profile into the flow's run.

In the slow test the scheduler and the workers are separate processes started with Dask's own
command line, each in its own folder with its own HOME; each worker plays another host
(``dask_hosts``): its own host name, and the folder holding the flow's store hidden. The fast
one sends the same rows through Dask's events from in-process workers.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
from dask_hosts import cluster, namespaces_allowed

import llqm_core as llqm

pytestmark = pytest.mark.usefixtures("prefect_server")


def _exported(files: list[Path]) -> dict[str, dict]:
    """The spans the workers exported, by span id."""
    spans = {}
    for path in files:
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            for resource in json.loads(line)["resourceSpans"]:
                for scope in resource["scopeSpans"]:
                    for span in scope["spans"]:
                        spans[span["spanId"]] = span
    return spans


def test_workers_told_the_store_is_elsewhere_send_every_task_back_through_dask(
    store_path, monkeypatch
):
    """The fast variant: the same relay through Dask's event stream, with in-process workers
    told that the store is not on their host (the slow test below makes that true)."""
    import prefect.task_engine
    from llqm_prefect import attach, dask_runs
    from prefect_dask import DaskTaskRunner
    from workflows import remote_flow

    from llqm_core.store import relay

    # In-process workers instrument this process as a worker: Prefect's engine entry points
    # are put back afterwards, so that later flows pickle them by reference to other workers.
    for name in ("run_task_sync", "run_task_async"):
        monkeypatch.setattr(prefect.task_engine, name, getattr(prefect.task_engine, name))
    monkeypatch.setattr(dask_runs.PublishedRun, "store_is_here", lambda self: False)
    delivered = []

    def deliver(store, call, record):  # the real delivery, noted
        delivered.append((call, record.id))
        relay.deliver(store, call, record)

    monkeypatch.setattr(dask_runs, "deliver", deliver)
    runner = DaskTaskRunner(
        cluster_kwargs={"n_workers": 2, "threads_per_worker": 1, "processes": False}
    )
    assert remote_flow(runner, store_path)(4) == 0 + 1 + 4 + 9
    store = llqm.ProfileStore(store_path, readonly=True)
    run = store.run()
    every = store.tasks(run.id)  # read as the flow returns: the rows came before the results
    assert all(t.status is llqm.TaskStatus.COMPLETED for t in every)
    # the cluster's start in the flow's process, each worker's (relayed), and the work
    started = sorted(t.name for t in every if t.stage == "worker.start")
    assert started == ["dask.cluster", "worker.start", "worker.start"], delivered
    tasks = [t for t in every if t.stage != "worker.start"]
    assert sorted(t.name for t in tasks) == ["crunch"] * 4 + ["gather"]
    [gather] = [t for t in tasks if t.name == "gather"]
    assert sorted(gather.depends_on) == sorted(t.id for t in tasks if t.name == "crunch")
    assert {t.trace_id for t in tasks} == {run.trace_id}
    assert all(t.parent_span_id not in (None, run.span_id) for t in tasks)
    # each task's start and end came back as Dask events
    relayed = [t for t in every if t.name != "dask.cluster"]
    assert sorted(i for call, i in delivered if call == "finish_task") == sorted(
        t.id for t in relayed
    )
    assert {i for call, i in delivered if call == "start_task"} == {t.id for t in relayed}
    # the run was withdrawn from the workers at its end
    assert not any(key[0] == run.config["prefect.flow_run_id"] for key in attach._attached)


def test_a_plain_flow_on_dask_joins_the_programs_run_as_under_llqm_profile(store_path, monkeypatch):
    """A flow without ``@profiled`` inside a program's run, with the Prefect instrumentor that
    ``llqm profile`` switches on: its run is published to the flow's Dask cluster at the first
    task, so the workers' start-up and tasks land in it, beside the cluster's start and close."""
    import prefect.task_engine
    from llqm_prefect.plugin import PrefectWhenImported
    from prefect_dask import DaskTaskRunner
    from workflows import plain_remote_flow

    for name in ("run_task_sync", "run_task_async"):  # put back after the in-process workers
        monkeypatch.setattr(prefect.task_engine, name, getattr(prefect.task_engine, name))
    original_submit = DaskTaskRunner.submit
    watcher = PrefectWhenImported()
    watcher.instrument()
    try:
        runner = DaskTaskRunner(
            cluster_kwargs={"n_workers": 2, "threads_per_worker": 1, "processes": False}
        )
        with llqm.run("program", store_path) as program:
            assert plain_remote_flow(runner)(4) == 0 + 1 + 4 + 9
    finally:
        watcher.uninstrument()
    assert DaskTaskRunner.submit is original_submit  # put back with the instrumentor
    store = llqm.ProfileStore(store_path, readonly=True)
    every = store.tasks(program.id)
    # in-process workers' threads find the program's run as the current one: their start-up
    # tasks are in the slow test (test_prefect_dask_start), where the workers are processes
    assert sorted(t.name for t in every if t.stage in ("worker.start", "worker.stop")) == [
        "dask.cluster",
        "dask.cluster.close",
    ], [t.name for t in every]
    work = [t for t in every if t.stage in ("compute", "gather")]
    assert sorted(t.name for t in work) == ["crunch"] * 4 + ["gather"]
    [gather] = [t for t in work if t.name == "gather"]
    assert sorted(gather.depends_on) == sorted(t.id for t in work if t.name == "crunch")
    [close] = [t for t in every if t.name == "dask.cluster.close"]
    assert close.start_ns >= max(t.end_ns for t in work)


def test_dask_workers_write_a_postgresql_store_themselves(postgres_cluster, monkeypatch):
    """With a database for a store, each worker process writes its tasks there: nothing comes
    back through Dask's events."""
    from llqm_prefect import dask_runs
    from prefect_dask import DaskTaskRunner
    from workflows import remote_flow

    database = postgres_cluster.new_database()
    relayed = []
    monkeypatch.setattr(dask_runs, "deliver", lambda store, call, record: relayed.append(call))
    runner = DaskTaskRunner(
        cluster_kwargs={"n_workers": 2, "threads_per_worker": 1, "processes": True}
    )
    assert remote_flow(runner, database)(4) == 0 + 1 + 4 + 9
    store = llqm.ProfileStore(database, readonly=True)
    run = store.run()
    tasks = [t for t in store.tasks(run.id) if t.name != "dask.cluster"]  # the flow's own
    assert sorted(t.name for t in tasks) == ["crunch"] * 4 + ["gather"] + ["worker.start"] * 2
    assert all(t.status is llqm.TaskStatus.COMPLETED for t in tasks)
    assert all(t.profile.pid != os.getpid() for t in tasks)  # written by the workers
    assert relayed == [] and run.status is llqm.RunStatus.COMPLETED


@pytest.mark.slow
def test_dask_workers_on_other_hosts_profile_every_task_into_the_flows_run(tmp_path):
    from distributed import Client
    from prefect_dask import DaskTaskRunner
    from workflows import remote_flow

    if not namespaces_allowed():
        pytest.skip("workers on other hosts are played by Linux namespaces, not allowed here")
    flow_dir = tmp_path / "flow"
    flow_dir.mkdir()
    store_path = flow_dir / "profiles.sqlite"
    with cluster(tmp_path / "cluster", hidden=flow_dir) as remote_cluster:
        runner = DaskTaskRunner(address=remote_cluster.address)
        assert remote_flow(runner, store_path)(4) == 0 + 1 + 4 + 9
        with Client(remote_cluster.address) as client:
            pids, hosts = client.run(os.getpid), client.run(socket.gethostname)
        store = llqm.ProfileStore(store_path, readonly=True)
        run = store.run()
        every = store.tasks(run.id)
        tasks = [t for t in every if t.stage != "worker.start"]
        deadline = time.monotonic() + 60  # the workers' exporters send within a second
        while not {t.id for t in tasks} <= set(spans := _exported(remote_cluster.spans)):
            assert time.monotonic() < deadline, "the workers' task spans were not exported"
            time.sleep(0.5)
    where = set(zip(pids.values(), hosts.values()))
    assert {host for _, host in where} == {"llqm-worker-1", "llqm-worker-2"}
    assert run.status is llqm.RunStatus.COMPLETED and run.host == socket.gethostname()
    crunched = [t for t in tasks if t.name == "crunch"]
    [gather] = [t for t in tasks if t.name == "gather"]
    assert len(crunched) == 4 and len(tasks) == 5
    # the cluster's start-up: the flow's wait for it, and each worker's readiness for the run
    started = {t.name: t for t in every if t.stage == "worker.start"}
    assert started["dask.cluster"].profile.host == socket.gethostname()
    workers_started = [t for t in every if t.name == "worker.start"]
    assert {(t.profile.pid, t.profile.host) for t in workers_started} == where
    # every task is in the run with the pid and host of the worker that ran it
    assert all((t.profile.pid, t.profile.host) in where for t in tasks)
    assert all(t.status is llqm.TaskStatus.COMPLETED and t.stage == "compute" for t in crunched)
    assert all(t.profile.cpu_s >= 0.19 for t in crunched)  # each busied its thread for 0.2 s
    assert sorted(gather.depends_on) == sorted(t.id for t in crunched)
    assert "prefect.upstream_task_runs" not in gather.metrics  # resolved where the store is
    # in the flow run's trace, each under Prefect's span of its task run
    assert {t.trace_id for t in tasks} == {run.trace_id}
    assert all(t.parent_span_id not in (None, run.span_id) for t in tasks)
    # the workers wrote no store and no journal of their own
    for home in remote_cluster.homes:
        assert not [p for p in home.rglob("*") if ".sqlite" in p.name or p.suffix == ".journal"]

    # the workers' own exporters sent each task's span in that trace, under Prefect's task span
    for t in tasks:
        span, prefect_span = spans[t.id], spans.get(t.parent_span_id)
        assert span["traceId"] == run.trace_id and span["parentSpanId"] == t.parent_span_id
        assert prefect_span is not None and prefect_span["traceId"] == run.trace_id
        assert prefect_span["name"].startswith(t.name)


KILLED_MID_TASK = """
import sys
import time

from llqm_prefect import profiled
from llqm_prefect.published import PublishedRun
from prefect import flow, task
from prefect_dask import DaskTaskRunner

PublishedRun.store_is_here = lambda self: False  # the workers relay, as on another host


@task
def linger() -> None:
    print("running", flush=True)
    time.sleep(60)


@profiled(store=sys.argv[1], artifact=False)
@flow(task_runner=DaskTaskRunner(
    cluster_kwargs={"n_workers": 1, "threads_per_worker": 1, "processes": False}
))
def killed() -> None:
    linger.submit().result()


killed()
"""


def test_a_relayed_task_running_when_the_flows_process_is_killed_shows_with_its_readings(
    tmp_path,
):
    """A worker that relays its rows sends its running tasks' readings back too: after a kill
    of the flow's process, the task it was running is in the run, running at exit, with them."""
    import signal
    import subprocess
    import sys

    from prefect.settings import PREFECT_API_URL

    store_path = tmp_path / "profiles.sqlite"
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_MID_TASK, str(store_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value()},
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "running", process.stderr.read()
        time.sleep(3)  # the worker's readings of a second at most come back meanwhile
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    store = llqm.ProfileStore(store_path, readonly=True)
    run = store.run()
    [linger] = [t for t in store.tasks(run.id) if t.name == "linger"]
    assert linger.status is llqm.TaskStatus.RUNNING_AT_EXIT
    assert linger.profile.wall_s >= 1.0 and linger.profile.peak_rss_bytes > 0
