"""``llqm export`` streams its rows: its peak memory against the report's, on one large run.

    python bench/export_rows.py [--tasks 100000]

Records a run of ``--tasks`` short tasks (each with two metrics), then runs, each in a fresh
process, ``llqm export RUN -o FILE`` as CSV, Parquet and JSON Lines, and, as the baseline that
holds every row at once, ``llqm report RUN --jsonl`` (the same rows, built as a list) and
``llqm report RUN --json``. Prints each one's wall time and peak resident memory (the kernel's
high-water mark of the child process), and the ratio of each export's to the baseline's.
Both sides read the run's task records into memory first; what streaming saves is the rows.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import llqm_core as llqm


def one_run(count: int, store: Path) -> str:
    with llqm.run(f"{count} short tasks", store=store) as run:
        for i in range(count):
            with llqm.task(f"t{i}", stage=f"work.{i % 7}") as handle:
                handle.annotate({"index": i, "label": f"item {i}"})
    return run.id


#: Runs one ``llqm`` command and prints its own peak RSS (kB) on standard error at the end.
_CHILD = (
    "import resource, sys\n"
    "from llqm_core.cli import main\n"
    "status = main(sys.argv[1:])\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(status)\n"
)


def measured(*args: str) -> tuple[float, int]:
    """Wall seconds and peak RSS bytes of one ``llqm`` command in a fresh process."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - started
    return wall, int(done.stderr.split()[-1]) * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        store = Path(scratch) / "bench.sqlite"
        started = time.perf_counter()
        run_id = one_run(args.tasks, store)
        print(f"recorded {args.tasks} tasks in {time.perf_counter() - started:.1f} s")
        results = {}
        for name, command in (
            ("export csv", ["export", run_id, "-o", f"{scratch}/t.csv"]),
            ("export parquet", ["export", run_id, "-o", f"{scratch}/t.parquet"]),
            ("export jsonl", ["export", run_id, "-o", f"{scratch}/t.jsonl"]),
            ("report --jsonl (baseline)", ["report", run_id, "--jsonl"]),
            ("report --json", ["report", run_id, "--json"]),
        ):
            results[name] = measured("--store", str(store), *command)
            wall, peak = results[name]
            print(f"{name:28s} {wall:6.1f} s  peak RSS {peak / 2**20:7.1f} MiB")
        _, baseline = results["report --jsonl (baseline)"]
        for name in ("export csv", "export parquet", "export jsonl"):
            print(f"{name}: peak RSS {results[name][1] / baseline:.2f}x the baseline's")


if __name__ == "__main__":
    main()
