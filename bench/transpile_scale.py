"""LLQM's cost on a large transpile: wall time and peak memory against plain ``qiskit.transpile``.

    python bench/transpile_scale.py [--gates 10000000] [--qubits 100] [--optimization-level 1]
                                    [--repeat N] [--store PATH]

Builds a circuit of ``--gates`` gates on ``--qubits`` qubits (one-qubit gates on every qubit
and cx on neighbouring pairs, alternating even and odd pairs) and transpiles it for IBM's
156-qubit ``fake_fez`` ``--repeat`` times each way, alternating (plain, profiled, profiled,
plain, ...): with plain ``qiskit.transpile`` (the baseline, no LLQM) and with
``llqm_qiskit.profiled_transpile`` inside an LLQM run. Before each transpile the process's
freed memory is handed back to the OS (``malloc_trim``) and the kernel's high-water mark is
reset (``/proc/self/clear_refs``), so each one's peak RSS is its own.

It prints the last profiled transpile's stages (init, layout, routing, translation,
optimization, scheduling) and a total:

    wall s        the stage task's wall time (what LLQM charges to the stage)
    passes s      the sum of the stage's pass times from Qiskit's callback; the transpile
                  task's wall s minus its passes s is Qiskit's own circuit-to-DAG conversions
                  plus LLQM's stage bookkeeping
    cpu s, peak RSS MB, RSS growth MB   the stage task's profile
    size, depth, 2q gates               the circuit after the stage (depth where Qiskit measured it)

then LLQM's own thread CPU time inside the profiled transpile (its pass-manager callback and
stage markers, which open and close the stage tasks: a figure other processes do not move),
and the two ratios (profiled / plain) of wall time and of peak RSS, each the least of the
repeats (the usual estimate of a run's own cost on a shared machine: other work only ever
adds), with the medians beside them, and judges them against the target of at most 1.05.
The exit status is 1 when a ratio misses it.

Memory: at 10^7 gates the transpile peaks near 8 GB; check ``free -g`` first, or start
with ``--gates 1000000`` (about 10 s plain, 1 GB). ``--store PATH`` keeps the profiled runs
for ``llqm report --store PATH``; by default they go to a temporary file.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("LLQM_EXPORTERS", "none")

from llqm_qiskit import profiled_transpile  # noqa: E402
from llqm_qiskit.circuits import nearest_neighbour  # noqa: E402
from llqm_qiskit.transpile.stage_profiler import StageProfiler  # noqa: E402
from qiskit import transpile  # noqa: E402

import llqm_core as llqm  # noqa: E402

MB = 1024 * 1024
TARGET = 1.05
_LIBC = ctypes.CDLL("libc.so.6")


@dataclass
class Sample:
    wall_s: float
    cpu_s: float
    peak_bytes: int


def _status_kib(field: str) -> int:
    text = Path("/proc/self/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE).group(1)) * 1024


def measured(work: Callable[[], Any]) -> Sample:
    """Run ``work`` from a clean slate: freed memory returned, the high-water mark reset to now."""
    gc.collect()
    _LIBC.malloc_trim(0)
    Path("/proc/self/clear_refs").write_text("5")
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = _status_kib("VmHWM")
    del result
    return Sample(wall, cpu, peak)


OWN_CPU = [0.0]


def _counted(method: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            OWN_CPU[0] += time.thread_time() - start

    return counted


# LLQM's own work inside a transpile is its pass-manager callback and its stage markers (which
# open and close the stage tasks): their thread CPU time is a figure no other process moves.
StageProfiler.enter = _counted(StageProfiler.enter)
StageProfiler.on_pass = _counted(StageProfiler.on_pass)


def pass_seconds(metrics: dict) -> float:
    return sum(
        v for k, v in metrics.items() if k.startswith("transpile.pass.") and k.endswith(".time_s")
    )


def row(label: str, task: llqm.TaskRecord, passes: float) -> str:
    p, m = task.profile, task.metrics
    depth = m.get("circuit.depth")
    return (
        f"{label:<24} {p.wall_s:9.2f} {passes:9.2f} {p.cpu_s:9.2f} {p.peak_rss_bytes / MB:10.0f} "
        f"{p.rss_growth_bytes / MB:10.0f} {m.get('circuit.size', 0):>11,} "
        f"{'-' if depth is None else f'{depth:,}':>9} {m.get('circuit.two_qubit_gates', 0):>10,}"
    )


def ratio_line(what: str, plain: list[float], profiled: list[float], unit: str) -> bool:
    best = min(profiled) / min(plain)
    median = statistics.median(profiled) / statistics.median(plain)
    ok = best <= TARGET
    print(
        f"{what:<12} plain {min(plain):9.2f} {unit}, profiled {min(profiled):9.2f} {unit}: "
        f"ratio {best:.3f} (medians {median:.3f}) -> "
        f"{'within' if ok else 'MISSES'} the {TARGET} target"
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(
        description="Wall time and peak memory of a large profiled transpile against plain Qiskit."
    )
    parser.add_argument("--gates", type=int, default=10_000_000)
    parser.add_argument("--qubits", type=int, default=100)
    parser.add_argument("--optimization-level", type=int, default=1, choices=(0, 1, 2, 3))
    parser.add_argument(
        "--seed", type=int, default=1, help="seed_transpiler, the same for both transpiles"
    )
    parser.add_argument(
        "--repeat", type=int, default=None, help="transpiles each way (default 3; 1 above 10^6)"
    )
    parser.add_argument(
        "--store", type=Path, default=None, help="profile store to keep (default: a temporary file)"
    )
    args = parser.parse_args()
    if args.qubits < 2 or args.gates < 1:
        parser.error(
            f"need at least 2 qubits and 1 gate, not {args.qubits} qubits and {args.gates} gates"
        )
    repeat = args.repeat or (3 if args.gates <= 1_000_000 else 1)

    from qiskit_ibm_runtime.fake_provider import FakeFez

    backend = FakeFez()
    options = dict(optimization_level=args.optimization_level, seed_transpiler=args.seed)

    with tempfile.TemporaryDirectory() as scratch:
        store_path = args.store or Path(scratch) / "transpile_scale.sqlite"
        config = {"gates": args.gates, "qubits": args.qubits, **options}

        def plain() -> Sample:
            return measured(lambda: transpile(circuit, backend, **options))

        def profiled() -> Sample:
            OWN_CPU[0] = 0.0
            with llqm.run("transpile scale bench", store=store_path, config=config) as run:
                sample = measured(lambda: profiled_transpile(circuit, backend, **options))
            own.append(OWN_CPU[0])
            runs.append(run.id)
            return sample

        warm = nearest_neighbour(args.qubits, 1000)  # Qiskit's and LLQM's one-time costs
        circuit, runs, own = warm, [], []
        plain(), profiled()

        start = time.perf_counter()
        circuit = nearest_neighbour(args.qubits, args.gates)
        print(
            f"circuit: {args.qubits} qubits, {len(circuit):,} gates, "
            f"built in {time.perf_counter() - start:.2f} s; fake_fez, optimization level "
            f"{args.optimization_level}, seed {args.seed}, {repeat} transpiles each way"
        )
        samples: dict[str, list[Sample]] = {"plain": [], "profiled": []}
        for i in range(repeat):
            order = ("plain", "profiled") if i % 2 == 0 else ("profiled", "plain")
            for kind in order:
                samples[kind].append(plain() if kind == "plain" else profiled())
                s = samples[kind][-1]
                print(
                    f"  {kind:<9} {s.wall_s:8.2f} s wall, {s.cpu_s:8.2f} s cpu, "
                    f"peak RSS {s.peak_bytes / MB:8.0f} MB"
                )
        tasks = llqm.ProfileStore(store_path).tasks(runs[-1])

    parent = next(t for t in tasks if t.stage == "transpile")
    stages = [t for t in tasks if t.parent_id == parent.id]
    header = (
        f"{'stage':<24} {'wall s':>9} {'passes s':>9} {'cpu s':>9} {'peak MB':>10} "
        f"{'growth MB':>10} "
        f"{'size':>11} {'depth':>9} {'2q gates':>10}"
    )
    print()
    print(header)
    print("-" * len(header))
    for task in stages:
        print(row(task.stage, task, pass_seconds(task.metrics)))
    print("-" * len(header))
    print(row("total (transpile task)", parent, sum(pass_seconds(t.metrics) for t in stages)))
    outside = parent.profile.wall_s - sum(pass_seconds(t.metrics) for t in stages)
    print(
        f"{outside:.2f} s of the transpile task is outside Qiskit's passes "
        "(Qiskit's circuit/DAG conversions, LLQM's stage tasks)"
    )
    if args.store:
        print(f"profiles kept in {args.store}: llqm report {runs[-1][:8]} --store {args.store}")
    print()
    plain_s, profiled_s = samples["plain"], samples["profiled"]
    cpu = min(s.cpu_s for s in profiled_s) / min(s.cpu_s for s in plain_s)
    print(f"cpu time ratio (least of each): {cpu:.3f}")
    least_plain = min(s.wall_s for s in plain_s)
    print(
        f"LLQM's own thread CPU in the transpile (callback, stage tasks): {min(own[1:]):.3f} s, "
        f"{min(own[1:]) / least_plain:.2%} of the plain transpile's wall time"
    )
    ok = ratio_line("wall time", [s.wall_s for s in plain_s], [s.wall_s for s in profiled_s], "s")
    ok &= ratio_line(
        "peak RSS",
        [s.peak_bytes / MB for s in plain_s],
        [s.peak_bytes / MB for s in profiled_s],
        "MB",
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
