"""What keeping a finished task costs on its path: an append into the memory-mapped journal
against the ``pwrite`` a journal whose file cannot be mapped makes.

    python bench/journal_append.py [--rounds 11] [--appends 300] [--in-place 6]

Two frames, each the finished row of a real task: an empty task's and one carrying 120 numeric
metrics (an instrumented transpile's per-pass figures). Each is appended back to back, and
between bits of other work (8 MiB of fresh memory filled, as a task's own work leaves the
caches cold, which is where a task's end runs). Blocks of appends alternate between the two
kinds of journal in one process, each block ending with the ``clear`` a commit makes; the
figures are the medians over the rounds of each block's mean time per append, and the ratio
is write / mmap (above 1: the mapped journal is cheaper). A last line times a fresh journal:
its creation (a process's first finished task pays it) and its first appends, after other
work, into pages the file has not used yet.

``--in-place N`` times the appends where they happen: N runs of each kind, alternating, of the
script ``bench/instrument_overhead.py`` profiles (100 small circuits transpiled and run on
Aer, ``llqm profile``'s instrumentors on, a fresh store each run), each append timed inside
the store's writer; printed are the medians over the runs of each run's median and mean (the
mean counts the journal's creation on the first task).
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LLQM_EXPORTERS", "none")

import llqm_core as llqm  # noqa: E402
from llqm_core.store import writer  # noqa: E402
from llqm_core.store.journal import TaskJournal, encode_row  # noqa: E402
from llqm_core.store.task_rows import finished_row  # noqa: E402


def task_frame(metrics: int) -> bytes:
    """The journal frame of a real finished task with ``metrics`` numeric metrics."""
    with llqm.run("frames", store=None):
        with llqm.task("transpile", stage="compile") as handle:
            handle.annotate_numbers({f"pass_{i}_s": i * 1e-4 for i in range(metrics)})
    return encode_row(finished_row(handle.record))


def other_work() -> None:
    bytearray(8 << 20)


def block(journal: TaskJournal, frame: bytes, appends: int, between) -> float:
    """Mean microseconds per append over ``appends`` appends, then the commit's clear."""
    total = 0
    for _ in range(appends):
        if between is not None:
            between()
        started = time.perf_counter_ns()
        journal.append(frame)
        total += time.perf_counter_ns() - started
    journal.clear()
    return total / appends / 1000


class TimedJournal(TaskJournal):
    """The store writer's journal, each append's nanoseconds kept in ``times``."""

    times: list[int] = []

    def append(self, frame: bytes) -> None:
        started = time.perf_counter_ns()
        super().append(frame)
        self.times.append(time.perf_counter_ns() - started)


def in_place(runs: int) -> None:
    from instrument_overhead import instrumented, script  # Qiskit and Aer: only when asked

    script()  # imports and first-call caches, before anything is timed
    per_run: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for run in range(runs):
        for mapped in (True, False) if run % 2 == 0 else (False, True):
            writer.TaskJournal = functools.partial(TimedJournal, mapped=mapped)
            TimedJournal.times = []
            store = Path(tempfile.mkdtemp(prefix="llqm-bench-")) / "in_place.sqlite"
            instrumented(script, store)()
            times = TimedJournal.times
            per_run[mapped].append((statistics.median(times), statistics.mean(times)))
    writer.TaskJournal = TaskJournal
    (mapped_median, mapped_mean), (written_median, written_mean) = (
        [statistics.median(run) / 1000 for run in zip(*per_run[mapped])] for mapped in (True, False)
    )
    print(
        f"in place, the 100-circuit script ({len(TimedJournal.times)} appends a run, {runs} runs "
        f"each): mmap median {mapped_median:.1f} us (mean {mapped_mean:.1f}), write median "
        f"{written_median:.1f} us (mean {written_mean:.1f}) per append; write / mmap "
        f"{written_median / mapped_median:.1f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--appends", type=int, default=300, help="appends per block")
    parser.add_argument(
        "--in-place", type=int, default=0, metavar="N", help="runs of the 100-circuit script"
    )
    args = parser.parse_args()
    store = Path(tempfile.mkdtemp(prefix="llqm-bench-")) / "journal.sqlite"
    journals = {"mmap": TaskJournal(store), "write": TaskJournal(store, mapped=False)}
    for metrics, what in ((0, "an empty task"), (120, "a task with 120 metrics")):
        frame = task_frame(metrics)
        for between, where in ((None, "back to back"), (other_work, "after 8 MiB of other work")):
            means: dict[str, list[float]] = {kind: [] for kind in journals}
            for _ in range(args.rounds):
                for kind, journal in journals.items():
                    means[kind].append(block(journal, frame, args.appends, between))
            mapped, written = (statistics.median(means[kind]) for kind in ("mmap", "write"))
            print(
                f"{len(frame):>5}-byte frame ({what}), {where}: mmap {mapped:.2f} us, "
                f"write {written:.2f} us per append; write / mmap {written / mapped:.1f}x"
            )
    for journal in journals.values():
        journal.remove()
    fresh: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for _ in range(args.rounds):
        for mapped in (True, False):
            started = time.perf_counter_ns()
            journal = TaskJournal(store, mapped=mapped)
            created_us = (time.perf_counter_ns() - started) / 1000
            fresh[mapped].append((created_us, block(journal, frame, args.appends, other_work)))
            journal.remove()
    (mapped_new, mapped_first), (written_new, written_first) = (
        [statistics.median(times) for times in zip(*fresh[mapped])] for mapped in (True, False)
    )
    print(
        f"a fresh journal: created in {mapped_new:.0f} us (mmap) / {written_new:.0f} us (write); "
        f"its first {args.appends} appends of the last frame after other work: mmap "
        f"{mapped_first:.2f} us, write {written_first:.2f} us; write / mmap "
        f"{written_first / mapped_first:.1f}x"
    )
    if args.in_place:
        in_place(args.in_place)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
