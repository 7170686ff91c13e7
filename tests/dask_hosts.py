"""A Dask cluster of separate processes whose workers play other hosts (tests and bench/ share it).

The scheduler and the workers are started with Dask's own command line, each in its own
folder with its own HOME. With ``other_hosts`` each worker runs in Linux namespaces that make
it another host as far as it can tell: its own host name, and the folder holding the flow's
store hidden under an empty file system.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent
#: Dask's command line (``dask scheduler``, ``dask worker``), run by this interpreter.
DASK = [sys.executable, "-m", "dask"]
NAMESPACES = ["unshare", "--user", "--map-root-user", "--uts", "--mount"]
#: In the worker's namespaces: take the host name "$0", hide the folder "$1", start the worker.
AS_ANOTHER_HOST = (
    'hostname "$0" && mount -t tmpfs hidden "$1" && '
    'exec "$2" -m dask worker "$3" --name "$0" --nthreads 1 --no-dashboard'
)


def namespaces_allowed() -> bool:
    """Whether this machine lets an unprivileged process play another host (user namespaces)."""
    if shutil.which("unshare") is None:
        return False
    return subprocess.run([*NAMESPACES, "true"], capture_output=True).returncode == 0


@dataclass
class Cluster:
    address: str
    homes: list[Path]  # each worker's folder and HOME
    spans: list[Path]  # each worker's exported spans (OTLP/JSON lines)


def _wait_for(path: Path, processes: list[subprocess.Popen], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if any(p.poll() is not None for p in processes):
            raise RuntimeError("a Dask process exited as it started")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear within {timeout} s")
        time.sleep(0.2)


@contextmanager
def cluster(
    root: Path, hidden: Path, workers: int = 2, other_hosts: bool = True, timeout: float = 180
) -> Iterator[Cluster]:
    """A scheduler and ``workers`` single-threaded workers, in folders under ``root``; with
    ``other_hosts`` the workers are named ``llqm-worker-N`` and cannot see ``hidden``."""
    base_env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(TESTS),  # the flows' tasks (workflows.py), as a cluster installs them
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "LLQM_EXPORTERS": "none",
    }
    processes: list[subprocess.Popen] = []
    scheduler_dir = root / "scheduler"
    scheduler_dir.mkdir(parents=True)
    scheduler_file = scheduler_dir / "scheduler.json"
    try:
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
        _wait_for(scheduler_file, processes, timeout)
        time.sleep(0.5)  # written as the scheduler starts listening: let it finish
        address = json.loads(scheduler_file.read_text())["address"]
        homes, spans = [], []
        for index in range(1, workers + 1):
            home = root / f"worker-{index}"
            home.mkdir()
            homes.append(home)
            spans.append(home / "spans.jsonl")
            env = {
                **base_env,
                "HOME": str(home),
                "LLQM_EXPORTERS": "jsonfile",
                "LLQM_SPANS_FILE": str(spans[-1]),
            }
            name = f"llqm-worker-{index}"
            command = (
                [*NAMESPACES, "sh", "-c", AS_ANOTHER_HOST, name, str(hidden), sys.executable]
                if other_hosts
                else [*DASK, "worker", "--name", name, "--nthreads", "1", "--no-dashboard"]
            )
            with open(home / "worker.log", "w") as log:
                processes.append(
                    subprocess.Popen([*command, address], cwd=home, env=env, stdout=log, stderr=log)
                )
        from distributed import Client

        with Client(address, timeout=timeout) as client:
            client.wait_for_workers(workers, timeout=timeout)
        yield Cluster(address, homes, spans)
    finally:
        for process in reversed(processes):
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
