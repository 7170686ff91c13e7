"""Dask workers on other hosts, with no path to the flow's store, profile into the flow's run.

The scheduler and the workers are separate processes started with Dask's own command line, each
in its own folder with its own HOME. Each worker runs in Linux namespaces that make it another
host as far as it can tell: its own host name, and the folder holding the flow's store hidden
under an empty file system.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT

import llqm_core as llqm

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server")]

#: Dask's command line (``dask scheduler``, ``dask worker``), run by this interpreter.
DASK = [sys.executable, "-m", "dask"]
NAMESPACES = ["unshare", "--user", "--map-root-user", "--uts", "--mount"]
#: In the worker's namespaces: take the host name "$0", hide the folder "$1", start the worker.
AS_ANOTHER_HOST = (
    'hostname "$0" && mount -t tmpfs hidden "$1" && '
    'exec "$2" -m dask worker "$3" --name "$0" --nthreads 1 --no-dashboard'
)


def _namespaces_allowed() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run([*NAMESPACES, "true"], capture_output=True).returncode == 0


@dataclass
class RemoteCluster:
    address: str
    flow_dir: Path  # where the flow keeps its store: the workers cannot see it
    homes: list[Path]
    spans: list[Path]  # each worker's exported spans


def _wait_for(path: Path, processes: list[subprocess.Popen], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert all(p.poll() is None for p in processes), "a Dask process exited at start"
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.2)


@pytest.fixture
def remote_cluster(tmp_path):
    if not _namespaces_allowed():
        pytest.skip("workers on other hosts are played by Linux namespaces, not allowed here")
    flow_dir = tmp_path / "flow"
    flow_dir.mkdir()
    base_env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(
            ROOT / "tests"
        ),  # the flow's tasks (workflows.py), as a cluster installs them
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "LLQM_EXPORTERS": "none",
    }
    processes: list[subprocess.Popen] = []
    scheduler_dir = tmp_path / "scheduler"
    scheduler_dir.mkdir()
    scheduler_file = scheduler_dir / "scheduler.json"
    processes.append(
        subprocess.Popen(
            [*DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard"]
            + ["--scheduler-file", str(scheduler_file)],
            cwd=scheduler_dir,
            env={**base_env, "HOME": str(scheduler_dir)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )
    try:
        _wait_for(scheduler_file, processes)
        time.sleep(0.5)  # the file is written in one go, but give it a moment to be complete
        address = json.loads(scheduler_file.read_text())["address"]
        homes, spans = [], []
        for index in (1, 2):
            home = tmp_path / f"worker-{index}"
            home.mkdir()
            homes.append(home)
            spans.append(home / "spans.jsonl")
            env = {
                **base_env,
                "HOME": str(home),
                "LLQM_EXPORTERS": "jsonfile",
                "LLQM_SPANS_FILE": str(spans[-1]),
            }
            processes.append(
                subprocess.Popen(
                    [*NAMESPACES, "sh", "-c", AS_ANOTHER_HOST, f"llqm-worker-{index}"]
                    + [str(flow_dir), sys.executable, address],
                    cwd=home,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=open(home / "worker.log", "w"),
                )
            )
        from distributed import Client

        with Client(address, timeout=120) as client:
            client.wait_for_workers(2, timeout=180)
        yield RemoteCluster(address, flow_dir, homes, spans)
    finally:
        for process in reversed(processes):
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


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


def test_dask_workers_on_other_hosts_profile_every_task_into_the_flows_run(remote_cluster):
    from distributed import Client
    from prefect_dask import DaskTaskRunner
    from workflows import remote_flow

    store_path = remote_cluster.flow_dir / "profiles.sqlite"
    runner = DaskTaskRunner(address=remote_cluster.address)
    assert remote_flow(runner, store_path)(4) == 0 + 1 + 4 + 9

    with Client(remote_cluster.address) as client:
        where = set(zip(client.run(os.getpid).values(), client.run(socket.gethostname).values()))
    assert {host for _, host in where} == {"llqm-worker-1", "llqm-worker-2"}
    store = llqm.ProfileStore(store_path, readonly=True)
    run = store.run()
    tasks = store.tasks(run.id)
    assert run.status is llqm.RunStatus.COMPLETED and run.host == socket.gethostname()
    crunched = [t for t in tasks if t.name == "crunch"]
    [gather] = [t for t in tasks if t.name == "gather"]
    assert len(crunched) == 4 and len(tasks) == 5
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
    deadline = time.monotonic() + 60
    while not {t.id for t in tasks} <= set(spans := _exported(remote_cluster.spans)):
        assert time.monotonic() < deadline, "the workers' task spans were not exported"
        time.sleep(0.5)
    for t in tasks:
        span, prefect_span = spans[t.id], spans.get(t.parent_span_id)
        assert span["traceId"] == run.trace_id and span["parentSpanId"] == t.parent_span_id
        assert prefect_span is not None and prefect_span["traceId"] == run.trace_id
        assert prefect_span["name"].startswith(t.name)
