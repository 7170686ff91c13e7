"""A run of many short tasks: LLQM's own memory per task, and how fast the store and report stay.

    python bench/many_tasks.py [--tasks 10000]

Prints the process's resident-memory growth over the run in bytes per task (after a warm-up
run of the same size, so imports and caches do not count), the time per task, the store's
size, and the wall time of ``llqm report --json`` on the run, against ``llqm runs --json``
(the cost of starting the command at all) as the baseline.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

import llqm_core as llqm


def one_run(count: int, store: Path) -> str:
    with llqm.run(f"{count} short tasks", store=store) as run:
        for i in range(count):
            with llqm.task(f"t{i}", stage="work") as handle:
                handle.annotate(index=i)
    return run.id


def timed(*args: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "llqm_core.cli", *args], check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    args = parser.parse_args()
    os.environ.setdefault("LLQM_EXPORTERS", "none")
    store = Path(tempfile.mkdtemp(prefix="llqm-bench-")) / "many.sqlite"
    process = psutil.Process()
    one_run(args.tasks, store)  # warm-up: imports, caches, the sampler thread
    before = process.memory_info().rss
    started = time.perf_counter()
    run_id = one_run(args.tasks, store)
    elapsed = time.perf_counter() - started
    growth = process.memory_info().rss - before
    llqm.ProfileStore(store).close()
    report_s = timed("--store", str(store), "report", run_id, "--json")
    baseline_s = timed("--store", str(store), "runs", "--json")
    print(f"{args.tasks} tasks in {elapsed:.2f} s ({elapsed / args.tasks * 1e6:.0f} us per task)")
    print(
        f"LLQM's memory growth over the second run: {growth / args.tasks:.0f} bytes per task "
        f"({growth / 2**20:.1f} MiB)"
    )
    print(f"store: {store.stat().st_size / 2**20:.1f} MiB for {2 * args.tasks} tasks")
    print(
        f"llqm report --json on the run: {report_s:.2f} s; llqm runs --json: {baseline_s:.2f} s; "
        f"ratio {report_s / baseline_s:.2f}"
    )


if __name__ == "__main__":
    main()
