"""Readout calibration in a job of its own against riding in the technique's job (``job_batching``).

Runs the same ``rem+zne`` pipeline (a 12-qubit mirror circuit, fold after transpile) on the
modelled QPU of fake_fez, whose queue is half busy with other users' 30 s jobs, with and
without the ``job_batching`` policy, ``--repeat`` times each with a different queue draw,
and prints the medians of jobs, modelled QPU and queue seconds and mitigated error, with
the ratios:

    python bench/batching.py [--repeat 5] [--time-scale 0.001]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import llqm_core
from llqm_core.pipeline import parse_pipeline, run_pipeline


def run_once(
    policies: list[str], queue_seed: int, time_scale: float, store: Path
) -> dict[str, float]:
    config = {
        "name": f"rem+zne, policies {policies}",
        "circuit": {"kind": "mirror", "qubits": 12, "depth": 4, "seed": 11},
        "observable": {"kind": "neighbour_parities"},
        "backend": {
            "name": "modelled_qpu",
            "device": "fake_fez",
            "time_scale": time_scale,
            "queue_seed": queue_seed,
            "queue_utilisation": 0.5,
            "queue_mean_job_s": 30.0,
        },
        "transpile": {"optimization_level": 1, "seed": 7},
        "mitigation": {
            "technique": "rem+zne",
            "zne": {"scale_factors": [1, 3, 5], "factory": "linear"},
        },
        "execution": {"shots": 4000, "seed": 3},
        "policies": {"names": ["fold_after_transpile", *policies]},
    }
    run_id, data = run_pipeline(parse_pipeline(config), store=store)
    jobs = [t for t in llqm_core.ProfileStore(store).tasks(run_id) if t.stage == "execute"]
    return {
        "jobs": len(jobs),
        "qpu_s": sum(t.profile.qpu_s or 0 for t in jobs),
        "queue_s": sum(t.profile.queue_s or 0 for t in jobs),
        "error": data["fidelity"]["fidelity.error_mitigated"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--time-scale",
        type=float,
        default=0.001,
        help="real seconds per modelled second of waiting",
    )
    args = parser.parse_args()
    store = Path(tempfile.mkdtemp(prefix="llqm-bench-")) / "batching.sqlite"
    rows = {label: [] for label in ("apart", "shared")}
    for seed in range(1, args.repeat + 1):
        rows["apart"].append(run_once([], seed, args.time_scale, store))
        rows["shared"].append(run_once(["job_batching"], seed, args.time_scale, store))
    medians = {
        label: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        for label, runs in rows.items()
    }
    for label, row in medians.items():
        print(
            f"calibration {label:6s}  jobs {row['jobs']:.0f}   QPU {row['qpu_s']:6.2f} s   queue "
            f"{row['queue_s']:7.1f} s   "
            f"mitigated error {row['error']:.4f}"
        )
    apart, shared = medians["apart"], medians["shared"]
    print(f"modelled QPU, apart / shared:   {apart['qpu_s'] / shared['qpu_s']:.2f}x")
    print(
        f"queue wait, apart / shared:     {apart['queue_s'] / max(shared['queue_s'], 1e-9):.2f}x   "
        f"(medians of {args.repeat} queue draws)"
    )


if __name__ == "__main__":
    main()
