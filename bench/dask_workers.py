"""What profiling costs a Prefect flow's tasks on Dask workers, writing the store or relaying to it.

    python bench/dask_workers.py [--tasks 200] [--repeats 3]

Starts a Dask scheduler and two single-threaded workers as separate processes twice: on this
host, where the workers write the flow's SQLite store themselves, and as other hosts (Linux
namespaces, as tests/test_dask_cluster.py does), where they cannot see it and their rows come
back to the flow's process as Dask events. On each cluster it alternates the bare flow and the
profiled one, each submitting ``--tasks`` tasks of 5 ms of CPU, and prints the median wall
time per task of each and the ratio profiled / bare. Target: relaying costs the flow no more
per task than writing the store (the ratios within 5% of each other).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LLQM_EXPORTERS", "none")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from dask_hosts import cluster, namespaces_allowed  # noqa: E402
from llqm_prefect import profiled  # noqa: E402
from prefect import flow, task  # noqa: E402
from prefect_dask import DaskTaskRunner  # noqa: E402

import llqm_core as llqm  # noqa: E402

TARGET = 0.05


@task
def work(i: int) -> int:
    end = time.thread_time() + 0.005
    while time.thread_time() < end:
        pass
    return i


def submit_all(n: int) -> int:
    return sum(future.result() for future in work.map(list(range(n))))


def timed(pipeline, n: int) -> float:
    start = time.perf_counter()
    pipeline(n)
    return (time.perf_counter() - start) / n


def measure(address: str, store: Path, tasks: int, repeats: int) -> list[tuple[float, float]]:
    """(bare, profiled) seconds per task, alternating, on the cluster at ``address``."""
    bare_flow = flow(name="bare", task_runner=DaskTaskRunner(address=address))(submit_all)
    profiled_flow = profiled(store=store, artifact=False)(
        flow(name="profiled", task_runner=DaskTaskRunner(address=address))(submit_all)
    )
    timed(bare_flow, 4)  # workers import Prefect and LLQM once
    timed(profiled_flow, 4)
    pairs = [(timed(bare_flow, tasks), timed(profiled_flow, tasks)) for _ in range(repeats)]
    run = llqm.ProfileStore(store, readonly=True).run()
    kept = len(llqm.ProfileStore(store, readonly=True).tasks(run.id))
    if kept != tasks:
        raise SystemExit(f"the last profiled run kept {kept} of its {tasks} tasks")
    return pairs


def main() -> int:
    parser = argparse.ArgumentParser(description="Profiling's cost on Dask workers.")
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not namespaces_allowed():
        print("this machine does not allow user namespaces: no worker can play another host")
        return 2
    from prefect.testing.utilities import prefect_test_harness

    ratios = {}
    with tempfile.TemporaryDirectory() as scratch, prefect_test_harness(180):
        root = Path(scratch)
        for mode, other_hosts in (("writing the store", False), ("relaying", True)):
            flow_dir = root / mode / "flow"
            flow_dir.mkdir(parents=True)
            with cluster(root / mode / "cluster", flow_dir, other_hosts=other_hosts) as running:
                pairs = measure(
                    running.address, flow_dir / "profiles.sqlite", args.tasks, args.repeats
                )
            bare = statistics.median(b for b, _ in pairs)
            llqm_s = statistics.median(p for _, p in pairs)
            ratios[mode] = statistics.median(p / b for b, p in pairs)
            print(
                f"workers {mode}: bare {bare * 1000:.1f} ms per task, profiled "
                f"{llqm_s * 1000:.1f} ms per task, ratio {ratios[mode]:.3f}"
            )
    difference = ratios["relaying"] / ratios["writing the store"] - 1
    print(
        f"relaying vs writing the store: {difference * 100:+.1f}% per task   "
        f"target < {TARGET * 100:.0f}%"
    )
    print("RESULT:", "within target" if difference < TARGET else "OUTSIDE target")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
