"""Time and peak memory of a large transpile, per pass-manager stage, against plain Qiskit.

    python bench/transpile_scale.py [--gates 10000000] [--qubits 100] [--optimization-level 1]
                                    [--store PATH]

Builds a circuit of ``--gates`` gates on ``--qubits`` qubits (one-qubit gates on every qubit
and cx on neighbouring pairs, alternating even and odd pairs), transpiles it for IBM's
156-qubit ``fake_fez`` first with plain ``qiskit.transpile`` (the baseline, no LLQM), then
with ``llqm_qiskit.profiled_transpile`` inside an LLQM run, and prints one row per stage
(init, layout, routing, translation, optimization, scheduling) and a total:

    wall s        the stage task's wall time (what LLQM charges to the stage)
    passes s      the sum of the stage's pass times from Qiskit's callback; wall s minus
                  passes s is what LLQM's stage bookkeeping (circuit metrics) cost there
    cpu s, peak RSS MB, RSS growth MB   the stage task's profile
    size, depth, 2q gates               the circuit after the stage

then ``LLQM overhead ratio: X.XX (profiled / plain wall time)``.

Memory: at 10^7 gates the transpile peaks near 8 GB; check ``free -g`` first, or start
with ``--gates 1000000`` (about 15 s plain, 1 GB). The plain baseline runs first, so the
kernel's high-water mark is already set when the profiled stages run: their peaks then
come from LLQM's sampler (every ``LLQM_SAMPLE_INTERVAL`` s). ``--store PATH`` keeps the
run for ``llqm report --store PATH``; by default it goes to a temporary file.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LLQM_EXPORTERS", "none")

from llqm_qiskit import profiled_transpile  # noqa: E402
from llqm_qiskit.circuits import nearest_neighbour  # noqa: E402
from qiskit import transpile  # noqa: E402

import llqm_core as llqm  # noqa: E402

MB = 1024 * 1024


def max_rss_mb() -> float:
    """The process's kernel high-water mark of resident memory (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pass_seconds(metrics: dict) -> float:
    return sum(
        v for k, v in metrics.items() if k.startswith("transpile.pass.") and k.endswith(".time_s")
    )


def row(label: str, task: llqm.TaskRecord, passes: float) -> str:
    p, m = task.profile, task.metrics
    return (
        f"{label:<24} {p.wall_s:9.2f} {passes:9.2f} {p.cpu_s:9.2f} {p.peak_rss_bytes / MB:10.0f} "
        f"{p.rss_growth_bytes / MB:10.0f} {m.get('circuit.size', 0):>11,} {m.get('circuit.depth', 0):>9,} "
        f"{m.get('circuit.two_qubit_gates', 0):>10,}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description="Per-stage time and peak memory of a large profiled transpile."
    )
    parser.add_argument("--gates", type=int, default=10_000_000)
    parser.add_argument("--qubits", type=int, default=100)
    parser.add_argument("--optimization-level", type=int, default=1, choices=(0, 1, 2, 3))
    parser.add_argument(
        "--seed", type=int, default=1, help="seed_transpiler, the same for both transpiles"
    )
    parser.add_argument(
        "--store", type=Path, default=None, help="profile store to keep (default: a temporary file)"
    )
    args = parser.parse_args()
    if args.qubits < 2 or args.gates < 1:
        parser.error(
            f"need at least 2 qubits and 1 gate, not {args.qubits} qubits and {args.gates} gates"
        )

    from qiskit_ibm_runtime.fake_provider import FakeFez

    backend = FakeFez()
    options = dict(optimization_level=args.optimization_level, seed_transpiler=args.seed)
    transpile(
        nearest_neighbour(args.qubits, 1000), backend, **options
    )  # warm up: Qiskit's one-time costs

    start = time.perf_counter()
    circuit = nearest_neighbour(args.qubits, args.gates)
    print(
        f"circuit: {args.qubits} qubits, {len(circuit):,} gates, built in "
        f"{time.perf_counter() - start:.2f} s; "
        f"fake_fez, optimization level {args.optimization_level}, seed {args.seed}"
    )

    start = time.perf_counter()
    plain_out = transpile(circuit, backend, **options)
    plain = time.perf_counter() - start
    plain_size = len(plain_out)
    del plain_out
    print(
        f"plain qiskit.transpile: {plain:.2f} s, {plain_size:,} instructions out, process peak RSS "
        f"{max_rss_mb():.0f} MB"
    )

    with tempfile.TemporaryDirectory() as scratch:
        store_path = args.store or Path(scratch) / "transpile_scale.sqlite"
        config = {"gates": args.gates, "qubits": args.qubits, **options}
        with llqm.run("transpile scale bench", store=store_path, config=config) as run:
            start = time.perf_counter()
            profiled_transpile(circuit, backend, **options)
            profiled = time.perf_counter() - start
        tasks = llqm.ProfileStore(store_path).tasks(run.id)

    parent = next(t for t in tasks if t.stage == "transpile")
    stages = [t for t in tasks if t.parent_id == parent.id]
    header = (
        f"{'stage':<24} {'wall s':>9} {'passes s':>9} {'cpu s':>9} {'peak MB':>10} {'growth MB':>10} "
        f"{'size':>11} {'depth':>9} {'2q gates':>10}"
    )
    print()
    print(header)
    print("-" * len(header))
    for task in stages:
        print(row(task.stage, task, pass_seconds(task.metrics)))
    print("-" * len(header))
    print(row("total (transpile task)", parent, sum(pass_seconds(t.metrics) for t in stages)))
    print()
    outside = parent.profile.wall_s - sum(pass_seconds(t.metrics) for t in stages)
    print(
        f"profiled_transpile: {profiled:.2f} s, process peak RSS {max_rss_mb():.0f} MB; "
        f"{outside:.2f} s of the transpile task is outside Qiskit's passes (LLQM's circuit metrics, markers)"
    )
    if args.store:
        print(f"profile kept in {args.store}: llqm report {run.id[:8]} --store {args.store}")
    print(f"LLQM overhead ratio: {profiled / plain:.2f} (profiled / plain wall time)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
