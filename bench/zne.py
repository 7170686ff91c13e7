"""ZNE with LLQM's policies against ZNE as users write it today, side by side in one run.

Both run a 100-qubit circuit (a GHZ, or a mirror circuit of ``--depth`` Clifford layers and
their inverse) on the modelled QPU of fake_fez (QPU seconds from the calibration
and IBM's per-job overhead, a queue half-busy with other users' 30 s jobs, waits scaled by
``--time-scale``), with the same scale factors, extrapolation and observable (by default the mean ZZ of
neighbouring qubits, ideal 1):

- baseline: Mitiq's ``execute_with_zne`` with an executor that transpiles each folded circuit
  (``qiskit.transpile`` at optimization level 0, as Mitiq's Qiskit examples do: level 1 and up
  cancel the folds, so the noise is not scaled at all; ``--baseline-level`` shows that) and runs
  it as its own job;
- LLQM: the pipeline with the ``hardware_layout`` and ``fold_after_transpile`` policies: one
  transpile, the two-qubit gates folded in place, all folded circuits in one job.

Prints wall time, modelled QPU and queue seconds and mitigated error of each, and the ratios
(issue #6 targets: at least 5x less wall time, at least 3x less modelled QPU time, mitigated
error no worse):

    python bench/zne.py [--circuit ghz] [--qubits 100] [--shots 1000] [--scale-factors 1,2,3,4,5] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from llqm_qiskit.backends.modelled import ModelledQPU
from llqm_qiskit.circuits import generate
from llqm_qiskit.observables.expectation import ideal_outcomes, neighbour_parities
from mitiq.zne import execute_with_zne
from mitiq.zne.inference import LinearFactory
from mitiq.zne.scaling import fold_global
from qiskit import transpile

import llqm_core
from llqm_core.pipeline import parse_pipeline, run_pipeline

OBSERVABLES = {"neighbour_parities": neighbour_parities, "ideal_outcomes": ideal_outcomes}
QUEUE = {"queue_utilisation": 0.5, "queue_mean_job_s": 30.0}


def baseline(args: argparse.Namespace, scales: list[float], store: Path, queue_seed: int) -> dict:
    backend = ModelledQPU(
        device="fake_fez", time_scale=args.time_scale, queue_seed=queue_seed, **QUEUE
    )
    shots = args.shots
    started = time.perf_counter()
    circuit = generate(args.circuit, args.qubits, args.depth, seed=5)
    observable = OBSERVABLES[args.observable](circuit)

    def executor(folded) -> float:  # one circuit, one transpile, one job: the usual way
        compiled = transpile(
            folded, backend.device, optimization_level=args.baseline_level, seed_transpiler=7
        )
        return observable.expectation([backend.execute(compiled, shots, seed=1)])

    with llqm_core.run("zne baseline: execute_with_zne", store=store) as run:
        value = execute_with_zne(
            circuit, executor, factory=LinearFactory(scales), scale_noise=fold_global
        )
    wall = time.perf_counter() - started
    tasks = llqm_core.ProfileStore(store).tasks(run.id)
    return {
        "wall_s": wall,
        "qpu_s": sum(t.profile.qpu_s or 0 for t in tasks),
        "queue_s": sum(t.profile.queue_s or 0 for t in tasks),
        "error": abs(value - observable.ideal),
        "jobs": sum(t.stage == "execute" for t in tasks),
    }


def with_policies(
    args: argparse.Namespace, scales: list[float], store: Path, queue_seed: int
) -> dict:
    config = {
        "name": "zne with LLQM policies",
        "circuit": {"kind": args.circuit, "qubits": args.qubits, "depth": args.depth, "seed": 5},
        "backend": {
            "name": "modelled_qpu",
            "device": "fake_fez",
            "time_scale": args.time_scale,
            "queue_seed": queue_seed,
            **QUEUE,
        },
        "observable": {"kind": args.observable},
        "transpile": {"optimization_level": 1, "seed": 7},
        "mitigation": {"technique": "zne", "zne": {"scale_factors": scales, "factory": "linear"}},
        "execution": {"shots": args.shots, "seed": 1},
        "policies": {
            "names": ["hardware_layout", "fold_after_transpile"],
            "hardware_layout": {"candidates": 500},
        },
    }
    pipeline = parse_pipeline(config)
    started = time.perf_counter()
    run_id, data = run_pipeline(pipeline, store=store)
    wall = time.perf_counter() - started
    tasks = llqm_core.ProfileStore(store).tasks(run_id)
    return {
        "wall_s": wall,
        "qpu_s": sum(t.profile.qpu_s or 0 for t in tasks),
        "queue_s": sum(t.profile.queue_s or 0 for t in tasks),
        "error": data["fidelity"]["fidelity.error_mitigated"],
        "jobs": sum(t.stage == "execute" for t in tasks),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--circuit", choices=["ghz", "mirror"], default="ghz")
    parser.add_argument("--qubits", type=int, default=100)
    parser.add_argument(
        "--depth", type=int, default=10, help="Clifford layers of the mirror circuit"
    )
    parser.add_argument("--shots", type=int, default=1000)
    parser.add_argument(
        "--observable",
        choices=sorted(OBSERVABLES),
        default="neighbour_parities",
        help="what both measure (at 100 qubits the ideal outcome's probability is near 0)",
    )
    parser.add_argument(
        "--baseline-level",
        type=int,
        choices=[0, 1, 2, 3],
        default=0,
        help="the baseline executor's optimization level (1 and up cancel Mitiq's folds)",
    )
    parser.add_argument("--scale-factors", default="1,2,3,4,5")
    parser.add_argument(
        "--repeat", type=int, default=3, help="pairs of runs (queue draws differ between pairs)"
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        default=0.01,
        help="real seconds per modelled second of QPU and queue",
    )
    args = parser.parse_args()
    scales = [float(s) for s in args.scale_factors.split(",")]
    store = Path(tempfile.mkdtemp(prefix="llqm-bench-")) / "zne.sqlite"
    parse_pipeline(
        {"circuit": {"kind": "ghz", "qubits": 3}}
    )  # load plugins and the device before timing
    pairs = [
        (with_policies(args, scales, store, seed), baseline(args, scales, store, seed))
        for seed in range(1, args.repeat + 1)
    ]

    def median(rows: list[dict], key: str) -> float:
        return statistics.median(row[key] for row in rows)

    ours = {
        key: median([p[0] for p in pairs], key)
        for key in ("wall_s", "qpu_s", "queue_s", "error", "jobs")
    }
    theirs = {
        key: median([p[1] for p in pairs], key)
        for key in ("wall_s", "qpu_s", "queue_s", "error", "jobs")
    }
    print(f"medians of {args.repeat} pairs of runs, scale factors {scales}, {args.shots} shots:")
    for label, row in (("execute_with_zne", theirs), ("LLQM + policies", ours)):
        print(
            f"{label:17s} wall {row['wall_s']:7.2f} s   QPU {row['qpu_s']:7.2f} s   queue "
            f"{row['queue_s']:7.1f} s   "
            f"jobs {row['jobs']:.0f}   mitigated error {row['error']:.4f}"
        )
    print(
        f"wall time, baseline / LLQM:     {theirs['wall_s'] / ours['wall_s']:.1f}x   (target >= 5x)"
    )
    print(
        f"modelled QPU, baseline / LLQM:  {theirs['qpu_s'] / ours['qpu_s']:.1f}x   (target >= 3x)"
    )
    print(
        f"mitigated error, LLQM vs baseline: {ours['error']:.4f} vs {theirs['error']:.4f}   "
        "(target: no worse)"
    )


if __name__ == "__main__":
    main()
