"""LLQM's cost per task, measured against the same work called bare in the same run.

    python bench/overhead.py [--tasks 2000] [--blocks 60]

Prints microseconds per task (profiling + span + store write) on a pipeline of empty
tasks, the same without the store, and the overhead on tasks of 20 ms of CPU work.
Targets: under 300 us per task and under 2% of wall time for tasks of 20 ms or more.

The 20 ms figure alternates blocks of 5 bare calls with blocks of 5 tasks inside one open
run, and takes the median ratio: whole runs timed against each other drift on a shared
machine by more than the effect measured. LLQM's background threads (resource sampler,
store writer) run during bare blocks too, so their CPU time over the whole measurement (and
the CPU time of the run's end and the store's close, which commit the rows still queued) is
added on top (per second elapsed), as if every microsecond of it delayed the pipeline: the
bound that the target is judged on; the sum of all task blocks' time against all bare
blocks' time (the pipeline's wall time, drains and sampler ticks included, and every hiccup
of the machine) is printed below it, with LLQM's own time per task and the change in the work's
own speed inside tasks. Two kinds of work are timed: a spin on the thread's CPU clock (a
system call per turn) and plain Python arithmetic (no system calls).

How far apart two blocks can be when nothing differs between them is measured too, in the
same run: the same alternation with bare blocks on both sides. For the spin, which times
itself on its thread's CPU clock, identical blocks agree within a few hundredths of a
percent, so its ratio is the figure judged (on the path, plus the background threads).
Plain Python arithmetic runs at the speed the machine gives it at that moment: on a shared
machine identical blocks of it differ in one run by more than the target (docs/benchmarks.md
has the figures), so its figure judged is LLQM's own time per task (block time outside the
work itself, which each block times) over 20 ms, plus the background threads; its ratio is
still printed beside the identical blocks'.

By default no span exporter is configured, and LLQM then builds no task spans (nothing
would read them; ``llqm trace`` rebuilds them from the store). Two more lines time the spin
with a span exporter attached that discards what it gets: the cost of building every span
in the background, as exporting to a collector would incur before any network I/O.

Code that runs once between 20 ms of other work runs slower than the same code run back
to back (caches and branch predictors hold the other work by then). The last lines print
LLQM's cost per 20 ms task against its back-to-back cost, and the same slowdown for plain
SQLite + JSON work that is no part of LLQM (the figures measured so far: docs/benchmarks.md),
so the 20 ms figure can be read against the machine it ran on.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sqlite3
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("LLQM_EXPORTERS", "none")

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult  # noqa: E402

import llqm_core as llqm  # noqa: E402
import llqm_core.plugin  # noqa: E402

TARGET_US_PER_TASK = 300.0
TARGET_LONG_OVERHEAD = 0.02


def nothing() -> None:
    return None


def cpu_20ms() -> None:
    end = time.thread_time() + 0.02
    while time.thread_time() < end:
        pass


def python_20ms() -> Callable[[], None]:
    """Plain Python arithmetic that takes 20 ms on this machine at its fastest (more when the
    machine is slower)."""

    def loop(turns: int) -> None:
        total = 0
        for i in range(turns):
            total += i

    def seconds() -> float:
        start = time.perf_counter()
        loop(200_000)
        return time.perf_counter() - start

    turns = int(200_000 * 0.02 / min(seconds() for _ in range(5)))
    return lambda: loop(turns)


def bare(tasks: int, work: Callable[[], None]) -> float:
    start = time.perf_counter()
    for _ in range(tasks):
        work()
    return time.perf_counter() - start


def tasks_only(tasks: int, work: Callable[[], None]) -> float:
    start = time.perf_counter()
    for _ in range(tasks):
        with llqm.task("step", stage="bench"):
            work()
    return time.perf_counter() - start


def profiled(tasks: int, work: Callable[[], None], store) -> float:
    start = time.perf_counter()
    with llqm.run("overhead bench", store=store):
        tasks_only(tasks, work)
    return time.perf_counter() - start


def background_cpu_s() -> float:
    """CPU seconds used so far by LLQM's own threads (named ``llqm-...``)."""
    total = 0.0
    for thread in threading.enumerate():
        if thread.name.startswith("llqm") and thread.ident is not None:
            try:
                total += time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
            except (AttributeError, OSError):
                pass  # no per-thread clocks here (Windows), or the thread ended
    return total


class DiscardingExporter(SpanExporter):
    """A span exporter that takes every span and keeps none: the cost of spans being exported
    without the cost of a network or a file."""

    def export(self, spans) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class TimedWork:
    """The work, timing itself: the part of a block that is the work, not the calls around it."""

    def __init__(self, work: Callable[[], None]) -> None:
        self.work, self.seconds = work, 0.0

    def __call__(self) -> None:
        start = time.perf_counter()
        self.work()
        self.seconds += time.perf_counter() - start


@dataclass
class Interleaved:
    on_path: float  # median ratio of a task block to a bare block, minus 1
    background: float  # LLQM's background threads' CPU per second elapsed
    whole: float  # all task blocks' time over all bare blocks' time, minus 1
    work_change: float  # the work's own time inside tasks over its time bare, minus 1
    own_us: float  # time per task outside the work, beyond a bare call's

    @property
    def own_share(self) -> float:
        """LLQM's own time against a task of 20 ms (the work may run longer when the machine is slow)."""
        return self.own_us / 20e3


def interleaved(
    blocks: int, work: Callable[[], None], store_path: Path, as_tasks: bool = True
) -> Interleaved:
    """Alternate blocks of 5 bare calls and 5 tasks of ``work`` in one open run (or, without
    ``as_tasks``, 5 more bare calls: how far identical blocks differ).

    The run has a store of its own, closed at the end, and the CPU time of its end and of the
    close (committing the rows still queued, checkpointing the WAL) counts as background: the
    store's writer takes journaled rows every ten seconds, so part of them is left for then,
    and none is left for the next measurement."""
    ratios, tasked_s, plain_s = [], 0.0, 0.0
    work_bare, work_in_tasks = TimedWork(work), TimedWork(work)
    other = tasks_only if as_tasks else bare
    store = llqm.ProfileStore(store_path)
    with llqm.run("overhead bench, 20 ms tasks", store=store):
        cpu_before = background_cpu_s()
        for block in range(blocks):
            if block % 2:  # alternate which goes first
                plain = bare(5, work_bare)
                tasked = other(5, work_in_tasks)
            else:
                tasked = other(5, work_in_tasks)
                plain = bare(5, work_bare)
            ratios.append(tasked / plain)
            tasked_s, plain_s = tasked_s + tasked, plain_s + plain
        background = background_cpu_s() - cpu_before
        ending = time.thread_time()
    store.close()
    background += time.thread_time() - ending
    own_s = (tasked_s - work_in_tasks.seconds) - (plain_s - work_bare.seconds)
    return Interleaved(
        statistics.median(ratios) - 1,
        background / (tasked_s + plain_s),
        tasked_s / plain_s - 1,
        work_in_tasks.seconds / work_bare.seconds - 1,
        own_s / (5 * blocks) * 1e6,
    )


def reference_work(db: sqlite3.Connection) -> None:
    """Plain work of the same kind as a task's bookkeeping, written without LLQM."""
    for i in range(20):
        db.execute(
            "INSERT INTO t VALUES (?, ?)",
            (i, json.dumps({"wall_s": i * 0.5, "metrics": [1, 2, 3]})),
        )
    db.commit()


def reference_slowdown(rounds: int) -> tuple[float, float]:
    """Median microseconds of ``reference_work`` back to back, and between 20 ms of CPU work."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (a, b)")

    def timed(between: Callable[[], None]) -> float:
        times = []
        for _ in range(rounds):
            between()
            start = time.perf_counter()
            reference_work(db)
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e6

    return timed(nothing), timed(cpu_20ms)


def best_of(repeats: int, measure: Callable[[], float]) -> float:
    return min(measure() for _ in range(repeats))


def main() -> int:
    parser = argparse.ArgumentParser(description="LLQM per-task overhead against bare calls.")
    parser.add_argument("--tasks", type=int, default=2000, help="empty tasks per measurement")
    parser.add_argument(
        "--blocks", type=int, default=60, help="alternating blocks of 5 tasks of 20 ms"
    )
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        stores = (Path(scratch) / f"bench-{n}.sqlite" for n in itertools.count())
        warm_up = llqm.ProfileStore(next(stores))
        profiled(50, nothing, warm_up)  # imports, sampler thread, telemetry
        warm_up.close()

        base = best_of(args.repeats, lambda: bare(args.tasks, nothing))
        store = llqm.ProfileStore(next(stores))
        with_store = best_of(args.repeats, lambda: profiled(args.tasks, nothing, store))
        store.close()
        without_store = best_of(args.repeats, lambda: profiled(args.tasks, nothing, False))
        us_per_task = (with_store - base) / args.tasks * 1e6
        us_no_store = (without_store - base) / args.tasks * 1e6
        kinds = (("CPU-clock spin", cpu_20ms), ("Python arithmetic", python_20ms()))
        long = {name: interleaved(args.blocks, work, next(stores)) for name, work in kinds}
        identical = {
            name: interleaved(args.blocks, work, next(stores), as_tasks=False).on_path
            for name, work in kinds
        }
        llqm.configure_exporters(exporters=[DiscardingExporter()])
        exported = interleaved(args.blocks, cpu_20ms, next(stores))
        llqm.configure_exporters()

    gpu = llqm.plugin.gpu_probe()
    print(
        f"GPU: {f'{gpu.devices} device(s) read through NVML by the sampler' if gpu.available else gpu.reason}"
    )
    print(
        f"empty tasks:  bare {base / args.tasks * 1e6:8.2f} us/task, LLQM "
        f"{with_store / args.tasks * 1e6:8.1f} us/task"
    )
    print(
        f"LLQM cost per task:            {us_per_task:8.1f} us (profiling + span + store)   target "
        f"< {TARGET_US_PER_TASK:.0f} us"
    )
    print(f"LLQM cost per task, no store:  {us_no_store:8.1f} us (profiling + span)")
    spin, arithmetic = long["CPU-clock spin"], long["Python arithmetic"]
    judged = {
        "CPU-clock spin": ("path", spin.on_path),
        "Python arithmetic": ("own time", arithmetic.own_share),
    }
    for name, result in [*long.items(), ("spin, spans exported", exported)]:
        floor = (
            f" (identical bare blocks: {identical[name] * 100:+.2f}%)" if name in identical else ""
        )
        print(
            f"20 ms tasks, {name + ':':21s} {result.on_path * 100:+.2f}% on the pipeline's path{floor}"
        )
        print(
            f"   {'':21s} all blocks' wall time {result.whole * 100:+.2f}%; LLQM's own time "
            f"{result.own_us:.0f} us per "
            f"task ({result.own_share * 100:.2f}% of 20 ms); the work itself "
            f"{result.work_change * 100:+.2f}% inside tasks"
        )
        if name in judged:
            basis, share = judged[name]
            print(
                f"   {'':21s} judged: {basis} {share * 100:+.2f}% + {result.background * 100:.2f}% "
                "background threads' "
                f"CPU = {(share + result.background) * 100:+.2f}%   target < "
                f"{TARGET_LONG_OVERHEAD * 100:.0f}%"
            )
    hot_ref, cold_ref = reference_slowdown(100)
    print(
        f"LLQM cost per 20 ms task:      {spin.on_path * 20e3:8.1f} us on the path, "
        f"{spin.on_path * 20e3 / us_per_task:.1f}x its back-to-back cost"
    )
    print(
        f"machine effect, plain SQLite + JSON work (no LLQM): {hot_ref:.0f} us back to back, "
        f"{cold_ref:.0f} us "
        f"between 20 ms of CPU work ({cold_ref / hot_ref:.1f}x)"
    )
    worst = max(judged[name][1] + result.background for name, result in long.items())
    ok = us_per_task < TARGET_US_PER_TASK and worst < TARGET_LONG_OVERHEAD
    print("RESULT:", "within targets" if ok else "OUTSIDE targets")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
