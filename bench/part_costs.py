"""What each part of LLQM's work costs a circuit in place: one part left out at a time, paired
circuit by circuit against LLQM whole, in one process.

    OMP_WAIT_POLICY=PASSIVE PYTHONHASHSEED=0 python bench/part_costs.py [--pairs 2000]
        [--workload pass-manager] [--detail calls] [--device fake_fez] [--parts store,readings]

``bench/instrument_overhead.py --per-circuit`` gives LLQM's whole extra time a circuit, and
``--breakdown`` splits it with every variant interleaved in one run: a few hundred circuits
each, whose paired medians move by 50-70 us between two variants that differ in nothing. Here
each part gets a run of its own with two variants alone (LLQM whole, and LLQM with the part
left out), ``--pairs`` rounds of one circuit each in a random order, one untimed circuit after
every switch (replacing a method invalidates the interpreter's specialised bytecode in the code
that calls it). The median of the per-round differences then resolves about 10 us (2,000
pairs); the first line, "nothing left out", is that resolution measured (the same code on both
sides). An analysis only: parts are replaced inside this process, never in LLQM itself, and a
part left out changes what is recorded (``store writes``: nothing is kept). Figures and what
they decided: docs/performance.md ("Where a recorded call's time goes, in one process").
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LLQM_EXPORTERS", "none")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import instrument_overhead  # noqa: E402  (bench/instrument_overhead.py)

import llqm_core  # noqa: E402
from llqm_core.model.detail import LEVELS  # noqa: E402
from llqm_core.runtime.instrumentation import instrument_all, uninstrument_all  # noqa: E402

Replacements = list[tuple[object, str, object]]


def _clock_only_charge() -> Replacements:
    """A pool thread's charge as its two clock reads and the task's sum alone: without the
    ledger of lent threads (``CpuShares.lend``/``give_back`` under the sampler's lock)."""
    from llqm_core.runtime import tasks

    clock = time.thread_time

    def enter(self) -> None:
        self.start = clock()

    def exit_(self, *_: object) -> None:
        self.task.record_worker_cpu(clock() - self.start)

    return [(tasks.WorkerCharge, "__enter__", enter), (tasks.WorkerCharge, "__exit__", exit_)]


def _unjournaled_start(self, task) -> None:
    """``StoreWriter.start_task`` as it was before issue 47 journaled a task's start: the running
    row queued for the writer thread's next commit alone."""
    with self._queue_lock:
        self._pending[task.id] = task
    if not self._woken:
        self._wake_thread()


def _parts() -> dict[str, Replacements]:
    """Each part as the replacements that leave it out, by label."""
    from llqm_qiskit.instrument import QiskitInstrumentor

    from llqm_core.runtime import measure
    from llqm_core.runtime.active_run import ActiveRun
    from llqm_core.runtime.sampler import ResourceSampler
    from llqm_core.store.writer import StoreWriter

    whole = instrument_overhead._left_out()
    return {
        "nothing left out": [],
        "store writes of tasks": whole["store writes of tasks"],
        "journaled task starts": [(StoreWriter, "start_task", _unjournaled_start)],
        "readings": whole["readings"],
        "readings' CPU clocks": [
            (measure, "_thread_time", time.perf_counter),
            (measure, "_process_time", time.perf_counter),
        ],
        "sampler's watch of each task": [
            (ResourceSampler, "watch", lambda self, watch: None),
            (ResourceSampler, "unwatch", lambda self, watch: None),
        ],
        "pool threads' charge": whole["pool threads' charge"],
        "ledger of lent threads": _clock_only_charge(),
        "outputs and producers": [
            (ActiveRun, "note_output", lambda self, value, task_id: None),
            (ActiveRun, "producers", lambda self, value: []),
        ],
        "execute call's description": [
            (QiskitInstrumentor, "_describe_call", lambda self, *args: None)
        ],
    }


def paired_cost(one, replaced: Replacements, pairs: int, seed: int) -> tuple[list[float], float]:
    """Per round, the circuit's time with LLQM whole less its time with the part left out (what
    the part costs), and the median circuit with LLQM whole."""
    order = random.Random(seed)
    timed: dict[bool, list[float]] = {False: [], True: []}
    was = None
    for i in range(pairs):
        for left_out in order.sample([False, True], 2):
            with instrument_overhead._replaced(replaced if left_out else []):
                if left_out != was:
                    one(i)  # untimed: the switch's cost falls on this circuit
                    was = left_out
                started = time.perf_counter()
                one(i)
                timed[left_out].append(time.perf_counter() - started)
    costs = [whole - out for whole, out in zip(timed[False], timed[True])]
    return costs, statistics.median(timed[False])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000, help="rounds per part")
    parser.add_argument("--workload", default="pass-manager", choices=instrument_overhead.WORKLOADS)
    parser.add_argument("--detail", default="calls", choices=LEVELS, help="the run's detail")
    parser.add_argument("--device", default="fake_fez")
    parser.add_argument("--parts", default="", help="comma-separated labels (default: all)")
    args = parser.parse_args()
    parts = _parts()
    chosen = [p.strip() for p in args.parts.split(",") if p.strip()] or list(parts)
    unknown = sorted(set(chosen) - set(parts))
    if unknown:
        parser.error(f"unknown part(s) {unknown}; the parts are: {', '.join(parts)}.")
    one = instrument_overhead._workload(args.workload, args.device)
    for i in range(20):
        one(i)
    store = Path(tempfile.mkdtemp(prefix="llqm-part-costs-")) / "profiles.sqlite"
    print(
        f"{args.workload} on {args.device}, detail {args.detail}, {args.pairs} pairs a part; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}, "
        f"PYTHONHASHSEED={os.environ.get('PYTHONHASHSEED', '(unset)')}"
    )
    with llqm_core.run("part costs", store=store, detail=args.detail):
        instrument_all()
        try:
            for i in range(50):
                one(i)
            for seed, label in enumerate(chosen):
                costs, whole = paired_cost(one, parts[label], args.pairs, seed)
                low, high = instrument_overhead.median_interval(costs)
                print(
                    f"  {label:<30} {statistics.median(costs) * 1e6:+7.1f} us a circuit "
                    f"(95% interval {low * 1e6:+.1f}..{high * 1e6:+.1f}; "
                    f"circuit with LLQM whole {whole * 1e3:.2f} ms)",
                    flush=True,
                )
        finally:
            uninstrument_all()
    print("(what each part costs: LLQM whole less LLQM without it, median of paired rounds)")


if __name__ == "__main__":
    main()
