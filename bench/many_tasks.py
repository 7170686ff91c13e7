"""Runs of many short tasks: LLQM's own memory per task, and how fast the commands stay on a big store.

    python bench/many_tasks.py [--tasks 10000]
    python bench/many_tasks.py --store /tmp/million.sqlite [--total 1000000] [--big 200000]
    python bench/many_tasks.py --store postgres [--total 1000000] [--big 200000]
    python bench/many_tasks.py --scaling 10000

The first form prints the process's resident-memory growth over a run in bytes per task (after
a warm-up run of the same size, so imports and caches do not count), the time per task, and
the wall time of ``llqm report --json`` on the run against ``llqm runs --json``.

The second form fills a store (once: a store that already holds the runs is reused) with
``--total`` tasks written by ``--processes`` processes at once: two of them write one run of
``--big`` tasks each (a campaign of batches of 99 circuits: the pair ``llqm compare`` takes),
the others runs of 1,000 tasks each. It checks that no task was lost, then times each command
on the first big run (wall and CPU seconds, the command's peak resident memory and the machine's
load, against its target), first with no kept analysis of the runs and then reading the one the
first command kept (``(kept)``), a first ``llqm compare`` both ways (``LLQM_SIDE_BY_SIDE``: in
one process, and two runs analysed side by side; the CPU counts both processes), and checks
that the HTML and Chrome trace it wrote parse. The load is the one-minute average before each
command. ``postgres`` starts a throwaway PostgreSQL server (tests/postgres_server.py) for the run.

The third form writes runs of N and 4N tasks and prints how much longer each command takes on
the larger one (CPU seconds: steadier than wall time on a shared machine): about 4x (or less,
with the command's start-up) is linear; 16x is quadratic.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil

import llqm_core as llqm

#: Circuits per batch in a big run: a campaign of batches, each of this many circuits.
BATCH = 99
WRITER = textwrap.dedent(
    """
    import os, sys
    os.environ["LLQM_EXPORTERS"] = "none"
    import llqm_core as llqm
    store, number, big, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    if big:
        with llqm.run(f"campaign {number}", store=store):
            with llqm.task("campaign", stage="campaign"):
                for b in range(big // 100):
                    with llqm.task(f"batch {b}", stage="batch"):
                        for i in range(99):
                            with llqm.task(f"c{i}", stage="circuit") as handle:
                                handle.annotate(index=i)
    for r in range(runs):
        with llqm.run(f"writer {number} run {r}", store=store):
            for i in range(1000):
                with llqm.task(f"t{i}", stage="work") as handle:
                    handle.annotate(index=i)
    """
)
#: (what, the command's arguments after the store, wall target in seconds, memory target in
#: bytes, whether the run's kept analyses are forgotten first: a first report analyses the run)
COMMANDS = (
    ("llqm runs", ("runs",), 1.0, None, False),
    ("llqm report RUN", ("report", "{run}"), 5.0, 2**30, True),
    ("llqm report RUN (kept)", ("report", "{run}"), 5.0, 2**30, False),
    ("llqm report RUN --json", ("report", "{run}", "--json"), 10.0, None, True),
    ("llqm report RUN --json (kept)", ("report", "{run}", "--json"), 10.0, None, False),
    (
        "llqm report RUN --html",
        ("report", "{run}", "--html", "{dir}/report.html"),
        30.0,
        None,
        False,
    ),
    (
        "llqm trace RUN --format chrome",
        ("trace", "{run}", "--format", "chrome", "-o", "{dir}/trace.json"),
        30.0,
        None,
        False,
    ),
    ("llqm compare RUN OTHER", ("compare", "{run}", "{other}"), 5.0, None, True),
    ("llqm compare RUN OTHER (kept)", ("compare", "{run}", "{other}"), 5.0, None, False),
    # the two ways a first compare analyses the pair, whatever the machine's load
    ("compare, one process", ("compare", "{run}", "{other}"), 5.0, None, "0"),
    ("compare, side by side", ("compare", "{run}", "{other}"), 5.0, None, "1"),
)
#: A command whose last field is a text runs with ``LLQM_SIDE_BY_SIDE`` set to it, the kept
#: analyses forgotten first (``llqm_core.analysis.side_by_side``).
SIDE_BY_SIDE = "LLQM_SIDE_BY_SIDE"


def forget_analyses(location: str) -> None:
    """Drop the store's kept analyses (``store.analyses``), so the next command analyses anew."""
    if location.startswith("postgres"):
        import psycopg

        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute("DELETE FROM analyses")
        return
    import sqlite3

    with sqlite3.connect(location) as conn:
        conn.execute("DELETE FROM analyses")
    conn.close()


def one_run(count: int, store: Path | str) -> str:
    with llqm.run(f"{count} short tasks", store=store) as run:
        for i in range(count):
            with llqm.task(f"t{i}", stage="work") as handle:
                handle.annotate(index=i)
    return run.id


def measured(store: str, *args: str) -> tuple[float, float, int]:
    """The wall seconds, CPU seconds and peak resident bytes of one llqm command on ``store``."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "llqm_core.cli", "--store", store, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"llqm {' '.join(args)} failed: {process.stderr.read().decode()}")
    process.stderr.close()
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def timed(*args: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "llqm_core.cli", *args], check=True, capture_output=True)
    return time.perf_counter() - started


def per_task(count: int) -> None:
    os.environ.setdefault("LLQM_EXPORTERS", "none")
    store = Path(tempfile.mkdtemp(prefix="llqm-bench-")) / "many.sqlite"
    process = psutil.Process()
    one_run(count, store)  # warm-up: imports, caches, the sampler thread
    before = process.memory_info().rss
    started = time.perf_counter()
    run_id = one_run(count, store)
    elapsed = time.perf_counter() - started
    growth = process.memory_info().rss - before
    llqm.ProfileStore(store).close()
    report_s = timed("--store", str(store), "report", run_id, "--json")
    baseline_s = timed("--store", str(store), "runs", "--json")
    print(f"{count} tasks in {elapsed:.2f} s ({elapsed / count * 1e6:.0f} us per task)")
    print(
        f"LLQM's memory growth over the second run: {growth / count:.0f} bytes per task "
        f"({growth / 2**20:.1f} MiB)"
    )
    print(f"store: {store.stat().st_size / 2**20:.1f} MiB for {2 * count} tasks")
    print(
        f"llqm report --json on the run: {report_s:.2f} s; llqm runs --json: {baseline_s:.2f} s; "
        f"ratio {report_s / baseline_s:.2f}"
    )


def fill(store: str, total: int, big: int, processes: int) -> None:
    """``total`` tasks written by ``processes`` processes at once (see the module's docstring)."""
    rest = (total - 2 * big) // 1000
    shares = [rest // (processes - 2) + (i < rest % (processes - 2)) for i in range(processes - 2)]
    script = Path(tempfile.mkdtemp(prefix="llqm-bench-")) / "writer.py"
    script.write_text(WRITER)
    started = time.perf_counter()
    writers = [
        subprocess.Popen([sys.executable, str(script), store, str(i), str(big), "0"])
        for i in range(2)
    ] + [
        subprocess.Popen([sys.executable, str(script), store, str(i + 2), "0", str(share)])
        for i, share in enumerate(shares)
    ]
    for writer in writers:
        if writer.wait() != 0:
            raise SystemExit("a writing process failed")
    print(
        f"wrote {2 * (big // 100 * 100 + 1) + 1000 * sum(shares)} tasks with {processes} processes "
        f"at once in {time.perf_counter() - started:.0f} s"
    )


def counted(store: str) -> tuple[int, int]:
    """(runs, tasks) the store holds."""
    opened = llqm.ProfileStore(store, readonly=True)
    runs = opened.runs()
    found = len(runs), sum(opened.count_tasks(run.id) for run in runs)
    opened.close()
    return found


def big_store(location: str, total: int, big: int, processes: int) -> None:
    os.environ["LLQM_EXPORTERS"] = "none"
    llqm.ProfileStore(location).close()  # creates an empty store; keeps a filled one
    runs, tasks = counted(location)
    if tasks < total:
        fill(location, total, big, processes)
        runs, tasks = counted(location)
    expected = 2 * (big // 100 * 100 + 1) + 1000 * ((total - 2 * big) // 1000)
    print(f"store: {runs} runs, {tasks} tasks ({'none lost' if tasks >= expected else 'LOST'})")
    opened = llqm.ProfileStore(location, readonly=True)
    campaigns = [run for run in opened.runs() if run.name.startswith("campaign ")][:2]
    sizes = [opened.count_tasks(run.id) for run in campaigns]
    opened.close()
    print(f"runs measured: {campaigns[0].id} ({sizes[0]} tasks), {campaigns[1].id} ({sizes[1]})")
    folder = tempfile.mkdtemp(prefix="llqm-bench-")
    fields = {"run": campaigns[0].id, "other": campaigns[1].id, "dir": folder}
    print(f"{'':34} {'wall':>8} {'CPU':>8} {'peak RSS':>10}  load (1 min)  target")
    for what, args, wall_target, memory_target, fresh in COMMANDS:
        if fresh:
            forget_analyses(location)
        os.environ.pop(SIDE_BY_SIDE, None)
        if isinstance(fresh, str):
            os.environ[SIDE_BY_SIDE] = fresh
        load = os.getloadavg()[0]
        wall, cpu, peak = measured(location, *(arg.format(**fields) for arg in args))
        verdict = "ok" if cpu < wall_target else "OVER"
        memory = f", < {memory_target / 2**20:.0f} MiB" if memory_target else ""
        print(
            f"{what:34} {wall:6.2f} s {cpu:6.2f} s {peak / 2**20:6.0f} MiB  "
            f"{load:5.1f}         < {wall_target:.0f} s{memory}: CPU {verdict}"
        )
    os.environ.pop(SIDE_BY_SIDE, None)
    document = json.loads(Path(folder, "trace.json").read_text())
    print(
        f"chrome trace: {len(document['traceEvents'])} events, "
        f"{Path(folder, 'trace.json').stat().st_size / 2**20:.1f} MiB; "
        f"HTML {Path(folder, 'report.html').stat().st_size / 2**20:.1f} MiB in {folder}"
    )


def scaling(count: int) -> None:
    """Each command's wall time on runs of ``count`` and ``4 * count`` tasks, and their ratio."""
    os.environ["LLQM_EXPORTERS"] = "none"
    store = str(Path(tempfile.mkdtemp(prefix="llqm-bench-")) / "scaling.sqlite")
    subprocess.run([sys.executable, "-c", WRITER, store, "0", str(count), "0"], check=True)
    subprocess.run([sys.executable, "-c", WRITER, store, "1", str(4 * count), "0"], check=True)
    opened = llqm.ProfileStore(store, readonly=True)
    large, small = sorted(opened.runs()[:2], key=lambda run: -opened.count_tasks(run.id))
    opened.close()
    folder = tempfile.mkdtemp(prefix="llqm-bench-")
    for what, args, *_ in COMMANDS[1:7:2] + COMMANDS[6:7]:
        seconds = []
        for run in (small, large):
            fields = {"run": run.id, "other": run.id, "dir": folder}
            forget_analyses(store)  # each analysed anew
            seconds.append(measured(store, *(a.format(**fields) for a in args))[1])
        print(
            f"{what:32} CPU: {count} tasks {seconds[0]:.2f} s, {4 * count} tasks {seconds[1]:.2f} s: "
            f"{seconds[1] / seconds[0]:.1f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--store", help="a store to fill and measure: a path, or 'postgres'")
    parser.add_argument("--total", type=int, default=1_000_000)
    parser.add_argument("--big", type=int, default=200_000)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--scaling", type=int, metavar="N")
    args = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if args.scaling:
        scaling(args.scaling)
    elif args.store == "postgres":
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from postgres_server import Cluster

        cluster = Cluster()
        try:
            big_store(cluster.new_database(), args.total, args.big, args.processes)
        finally:
            cluster.stop()
    elif args.store:
        big_store(args.store, args.total, args.big, args.processes)
    else:
        per_task(args.tasks)


if __name__ == "__main__":
    main()
