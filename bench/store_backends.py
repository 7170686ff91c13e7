"""SQLite and PostgreSQL stores side by side, in one run: cost per task, many writers, reports.

    python bench/store_backends.py [--tasks 10000] [--writers 8] [--writer-tasks 2000]
                                   [--report-tasks 100000] [--url postgresql://...]

Starts a throwaway PostgreSQL server on loopback (tests/postgres_server.py; or uses ``--url``,
a database of its own), then measures with each store:

1. the time per task of ``--tasks`` short tasks in one process, on the task's path (what the
   loop of tasks takes), in ``--rounds`` turns that alternate between the stores (the median
   turn is kept), and the close that commits what is still queued;
2. ``--writers`` processes writing ``--writer-tasks`` tasks each into one store at once: the
   wall time and whether every task of every run is in the store (none lost);
3. ``llqm report --json`` on a run of ``--report-tasks`` tasks (the least of two, alternating),
   against ``llqm runs --json`` (the cost of starting the command at all) as the baseline.

Prints each figure for both stores and the ratio PostgreSQL / SQLite; the target is a ratio
within 2x per task (the journal keeps the network off the task's path) and no task lost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from many_tasks import timed  # noqa: E402  (the wall time of one llqm command)
from postgres_server import Cluster, why_unavailable  # noqa: E402

import llqm_core as llqm  # noqa: E402

WRITER = textwrap.dedent(
    """
    import os, sys, time
    import llqm_core as llqm
    store, number, count, ready = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    with llqm.run("warm-up", store=False):  # imports and plugins, which are not the store's cost
        with llqm.task("warm-up"):
            pass
    open(f"{ready}-{number}", "w").close()  # ready: wait for the others, then start together
    while not os.path.exists(f"{ready}-go"):
        time.sleep(0.01)
    with llqm.run("writer " + number, store=store):
        for i in range(count):
            with llqm.task(f"t{i}", stage="work") as handle:
                handle.annotate(index=i)
    """
)


def tasks_per_second(store: str, count: int) -> tuple[float, float, str]:
    """Seconds per task on the task's path, seconds to close the store, and the run's id."""
    writing = llqm.ProfileStore(store)
    with llqm.run(f"{count} short tasks", store=writing) as run:
        started = time.perf_counter()
        for i in range(count):
            with llqm.task(f"t{i}", stage="work") as handle:
                handle.annotate(index=i)
        per_task = (time.perf_counter() - started) / count
    started = time.perf_counter()
    writing.close()
    return per_task, time.perf_counter() - started, run.id


def concurrent_writers(store: str, writers: int, count: int) -> tuple[float, int, int]:
    """Wall time of ``writers`` processes writing at once, from the moment all of them have
    loaded llqm and its plugins to the last one's exit; tasks expected and found in the store."""
    ready = tempfile.mktemp(prefix="llqm-writers-")
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, store, str(n), str(count), ready])
        for n in range(writers)
    ]
    while not all(os.path.exists(f"{ready}-{n}") for n in range(writers)):
        time.sleep(0.01)
    started = time.perf_counter()
    open(f"{ready}-go", "w").close()
    if [p.wait() for p in procs].count(0) != writers:
        sys.exit("store_backends: a writer process failed (its error is above)")
    wall = time.perf_counter() - started
    reader = llqm.ProfileStore(store, readonly=True)
    runs = [r for r in reader.runs() if r.name.startswith("writer ")]
    found = sum(len(reader.tasks(r.id)) for r in runs)
    return wall, writers * count, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5, help="turns the stores take at --tasks")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--writer-tasks", type=int, default=2_000)
    parser.add_argument("--report-tasks", type=int, default=100_000)
    parser.add_argument(
        "--url", default=None, help="an empty PostgreSQL database (default: a throwaway server)"
    )
    args = parser.parse_args()
    os.environ.setdefault("LLQM_EXPORTERS", "none")
    scratch = Path(tempfile.mkdtemp(prefix="llqm-bench-"))
    os.environ.setdefault("XDG_DATA_HOME", str(scratch / "data"))  # the database's journals
    cluster = None
    if args.url is None:
        reason = why_unavailable()
        if reason is not None:
            sys.exit(f"store_backends: no PostgreSQL to measure: {reason}")
        cluster = Cluster()
    try:
        database = (lambda: args.url) if cluster is None else cluster.new_database
        kinds = {
            "sqlite": lambda name: str(scratch / f"{name}.sqlite"),
            "postgres": lambda name: database(),
        }
        tasks_per_second(kinds["sqlite"]("warm-up"), 500)  # imports, plugins, the sampler
        # The machine's load changes over minutes: the stores take turns, and the median of the
        # turns (per task) or the least (a report) is kept, so both see the same conditions.
        stores = {kind: new_store("tasks") for kind, new_store in kinds.items()}
        turns: dict[str, list[tuple[float, float]]] = {kind: [] for kind in kinds}
        for _ in range(args.rounds):
            for kind, store in stores.items():
                per_task, close_s, _ = tasks_per_second(store, args.tasks // args.rounds)
                turns[kind].append((per_task, close_s))
        writers = {
            kind: concurrent_writers(new_store("writers"), args.writers, args.writer_tasks)
            for kind, new_store in kinds.items()
        }
        big = {kind: new_store("report") for kind, new_store in kinds.items()}
        big_runs = {
            kind: tasks_per_second(store, args.report_tasks)[2] for kind, store in big.items()
        }
        reports: dict[str, list[float]] = {kind: [] for kind in kinds}
        baselines: dict[str, list[float]] = {kind: [] for kind in kinds}
        for _ in range(2):
            for kind, store in big.items():
                reports[kind].append(timed("--store", store, "report", big_runs[kind], "--json"))
                baselines[kind].append(timed("--store", store, "runs", "--json"))
        figures: dict[str, dict[str, float]] = {}
        for kind in kinds:
            per_task = statistics.median(t for t, _ in turns[kind])
            close_s = max(c for _, c in turns[kind])
            wall, expected, found = writers[kind]
            report_s, baseline_s = min(reports[kind]), min(baselines[kind])
            figures[kind] = {
                "per_task_us": per_task * 1e6,
                "writers_s": wall,
                "lost": expected - found,
                "report_s": report_s,
            }
            print(
                f"{kind:8s}  {per_task * 1e6:6.1f} us per task (median of {args.rounds} turns of "
                f"{args.tasks // args.rounds} tasks; close at most {close_s:.2f} s)  |  "
                f"{args.writers} writers x {args.writer_tasks} tasks: {wall:.1f} s, "
                f"{expected - found} of {expected} lost  |  report of {args.report_tasks} tasks: "
                f"{report_s:.1f} s ({report_s / baseline_s:.1f}x `llqm runs`, {baseline_s:.1f} s)",
                flush=True,
            )
        sqlite, postgres = figures["sqlite"], figures["postgres"]
        print(
            f"PostgreSQL / SQLite: {postgres['per_task_us'] / sqlite['per_task_us']:.2f}x per "
            f"task (target: within 2x), {postgres['writers_s'] / sqlite['writers_s']:.2f}x with "
            f"{args.writers} writers, {postgres['report_s'] / sqlite['report_s']:.2f}x per report; "
            f"tasks lost: {int(sqlite['lost'])} (SQLite), {int(postgres['lost'])} (PostgreSQL)"
        )
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
