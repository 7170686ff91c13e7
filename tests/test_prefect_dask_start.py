"""A profiled flow on a two-process ``LocalCluster``, as prefect-dask's documentation writes it:
its workers use the flow's Prefect server (none of their own, no traceback), and their start-up
is in the run as tasks (``worker.start``), so that the run's tasks cover its wall time."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import llqm_core as llqm
from llqm_core.plugin import build_report

FLOW = """
import sys
import time

from prefect import flow, task
from prefect_dask import DaskTaskRunner

from llqm_prefect import profiled


@task
def shout(number: int) -> int:
    time.sleep(3.0)  # Prefect's own work per task run (~0.3 s on 2 busy cores) is in no task
    return number


@profiled(store=sys.argv[1])
@flow(task_runner=DaskTaskRunner(cluster_kwargs={"n_workers": 2, "processes": True}))
def count_to(highest_number: int) -> int:
    return sum(future.result() for future in [shout.submit(n) for n in range(highest_number)])


if __name__ == "__main__":
    print(count_to(6))
"""


def _published(api_url: str, host: str):
    from llqm_prefect.published import PublishedRun

    run = llqm.RunRecord("r", "run", llqm.RunStatus.RUNNING, 0, "0" * 32, "0" * 16)
    return PublishedRun(run, "flow-run", "/nowhere.sqlite", host, "topic", api_url)


def test_a_worker_uses_the_flows_prefect_api_where_it_can_reach_it(monkeypatch):
    import socket

    from llqm_prefect.dask_worker import share_flow_api, stop_sharing

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    here = _published("http://127.0.0.1:8123/api/", socket.gethostname())
    assert share_flow_api(here) and os.environ["PREFECT_API_URL"] == "http://127.0.0.1:8123/api/"
    stop_sharing(here)  # the run is withdrawn: the worker's environment is as it was
    assert "PREFECT_API_URL" not in os.environ
    # a temporary server on another host listens on its loopback: that worker starts its own
    assert not share_flow_api(_published("http://127.0.0.1:8123/api/", "another-host"))
    assert "PREFECT_API_URL" not in os.environ
    assert share_flow_api(_published("http://prefect.lab:4200/api", "another-host"))
    # a worker with an API of its own keeps it
    monkeypatch.setenv("PREFECT_API_URL", "http://mine:4200/api")
    assert not share_flow_api(here) and os.environ["PREFECT_API_URL"] == "http://mine:4200/api"


def test_a_plain_flows_task_runs_join_the_run_published_for_their_flow_run(tmp_path, monkeypatch):
    """In a Dask worker, a plain flow (no ``@profiled`` options) has its task runs profiled
    only where a run was published for its flow run: the program's run under ``llqm profile``,
    which is not a flow run's, joined with the store itself where the worker sees it."""
    import socket

    from llqm_prefect import published
    from llqm_prefect.published import (
        PublishedRun,
        joined_run,
        publish_here,
        published_options,
        withdraw_here,
    )

    monkeypatch.setattr(published, "_published", {})
    monkeypatch.setattr(published, "_in_dask_worker", False)
    store_path = tmp_path / "profiles.sqlite"
    with llqm.run("program", store_path) as program:
        assert published_options("flow-run") is None and joined_run("flow-run") is None
        here = PublishedRun(
            program.record, "flow-run", str(store_path), socket.gethostname(), "topic"
        )
        publish_here(here, worker=None)
        assert published_options("flow-run") == {
            "store": str(store_path),
            "stages": {},
            "instrument": True,
        }
        assert published_options("another-flow-run") is None
        joined = joined_run("flow-run")
        assert joined is not None and joined.id == program.id
        assert joined.store is not None and joined.store.location == str(store_path)
        withdraw_here("flow-run")
        assert published_options("flow-run") is None


def test_worker_processes_started_during_a_flow_inherit_its_api(monkeypatch):
    from llqm_prefect.server import api_shared_with_children

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with api_shared_with_children("http://127.0.0.1:8123/api/"):
        child = subprocess.run(
            [sys.executable, "-c", "import os; print(os.environ['PREFECT_API_URL'])"],
            capture_output=True,
            text=True,
            check=True,
        )
    assert child.stdout.strip() == "http://127.0.0.1:8123/api/"
    assert "PREFECT_API_URL" not in os.environ


def _run_quietly(tmp_path, command: list[str]) -> subprocess.CompletedProcess:
    """``command`` in a fresh process as from a plain shell (no PREFECT_* variables) on a new
    Prefect home (a first use: a new server database); it must print 15 and no traceback."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=400, env=env, cwd=tmp_path
    )
    assert done.returncode == 0 and done.stdout.split()[:1] == ["15"], done.stderr
    # Dask itself may log a CommClosedError as the cluster closes (without LLQM too: 1 flow in
    # 4 on 2 busy cores); any other traceback is a failure
    assert done.stderr.count("Traceback") == done.stderr.count(
        "distributed.comm.core.CommClosedError"
    ), done.stderr
    assert "database is locked" not in done.stderr, done.stderr
    assert done.stderr.count("Starting temporary server") == 1, done.stderr  # the flow's alone
    return done


def _workers_started_then_worked(run, tasks, task_name: str) -> None:
    """Two ``worker.start`` tasks, one per worker process started for the run, each using the
    flow's Prefect API, and the flow's tasks on those workers after their start-up."""
    workers = [t for t in tasks if t.name == "worker.start"]
    work = [t for t in tasks if t.name == task_name]
    assert len(workers) == 2 and len({t.profile.pid for t in workers}) == 2
    assert all(t.metrics["prefect.api_shared"] for t in workers)
    # each worker process started for the run: its start-up began after the run's
    assert all(run.start_ns <= t.start_ns < t.end_ns for t in workers)
    assert all(t.profile.cpu_s > 0 for t in workers)
    assert len(work) == 6 and {t.profile.pid for t in work} <= {t.profile.pid for t in workers}
    assert run.pid not in {t.profile.pid for t in work}
    ready = {t.profile.pid: t.end_ns for t in workers}
    assert all(t.start_ns >= ready[t.profile.pid] for t in work)


@pytest.mark.slow  # Prefect's temporary server on a new database, and a cluster: 30-90 s
def test_a_two_process_local_cluster_flow_is_quiet_and_its_tasks_cover_the_run(tmp_path):
    script = tmp_path / "count_to.py"
    script.write_text(FLOW)
    store_path = tmp_path / "profiles.sqlite"
    _run_quietly(tmp_path, [sys.executable, str(script), str(store_path)])
    store = llqm.ProfileStore(store_path, readonly=True)
    run = store.run()
    tasks = store.tasks(run.id)
    [cluster] = [t for t in tasks if t.name == "dask.cluster"]
    assert cluster.profile.pid == run.pid and cluster.start_ns == run.start_ns
    _workers_started_then_worked(run, tasks, "shout")
    report = build_report(store, run.id)
    assert report["no_task"]["share"] <= 0.10, report["no_task"]


PLAIN_FLOW = """
import time

from prefect import flow, task
from prefect_dask import DaskTaskRunner


@task
def shout(number: int) -> int:
    # Prefect's own work (its flow run's set-up, ~0.3 s per task run on 2 busy cores) is in no
    # task: some 2.5 s of a run, 7.5% of one with 5 s tasks; 8 s tasks leave a margin for load
    time.sleep(8.0)
    return number


@flow(task_runner=DaskTaskRunner(cluster_kwargs={"n_workers": 2, "processes": True}))
def count_to(highest_number: int) -> int:
    return sum(future.result() for future in [shout.submit(n) for n in range(highest_number)])


if __name__ == "__main__":
    print(count_to(6))
"""


@pytest.mark.slow  # as above, under llqm profile
def test_a_plain_local_cluster_flow_under_llqm_profile_is_quiet_and_covered(tmp_path):
    """prefect-dask's own example, no LLQM in it, run by ``llqm profile``: its workers join the
    program's run and use the flow's Prefect server, and the run's tasks (Prefect's import and
    its server's start as warm-up, the cluster's start and close, the workers' start-up, the
    flow's tasks) cover at least 90% of its wall time."""
    script = tmp_path / "count_to.py"
    script.write_text(PLAIN_FLOW)
    store_path = tmp_path / "profiles.sqlite"
    profile = [sys.executable, "-m", "llqm_core.cli", "profile", "--store", str(store_path)]
    _run_quietly(tmp_path, [*profile, str(script)])
    store = llqm.ProfileStore(store_path, readonly=True)
    run = store.run()
    tasks = store.tasks(run.id)
    names = [t.name for t in tasks]
    assert {"import prefect", "prefect.server.start"} <= set(names)
    [cluster] = [t for t in tasks if t.name == "dask.cluster"]
    [close] = [t for t in tasks if t.name == "dask.cluster.close"]
    assert cluster.profile.pid == close.profile.pid == run.pid
    _workers_started_then_worked(run, tasks, "shout")
    assert cluster.start_ns < min(t.start_ns for t in tasks if t.name == "worker.start")
    assert close.start_ns >= max(t.end_ns for t in tasks if t.name == "shout")
    report = build_report(store, run.id)
    run_wall_s = (run.end_ns - run.start_ns) / 1e9
    assert report["no_task"]["wall_s"] <= 0.10 * run_wall_s, report["no_task"]
