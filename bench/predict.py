"""Cost prediction: how close ``cost_model``'s stage times come on runs it was not fitted on.

Runs the same ZNE pipeline (GHZ on fake_fez, embedded default) at a range of sizes, fits the
model on every other run and predicts the stage times of the runs in between, then prints the
median relative error over the top-level stages that took at least 5 ms:

    python bench/predict.py [--sizes 12,16,...] [--shots 2000]

Target (issue #6): median relative error under 25%. A warm-up run first, not used, so that
imports and first-call costs do not count as a stage's time.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from llqm_policies.predict import CostModel, run_features

import llqm_core
from llqm_core.pipeline import parse_pipeline, run_pipeline

MIN_STAGE_S = 0.005


def config(qubits: int, shots: int) -> dict:
    return {
        "name": f"ghz-{qubits} zne",
        "circuit": {"kind": "ghz", "qubits": qubits},
        "backend": {"name": "aer", "device": "fake_fez"},
        "transpile": {"optimization_level": 1, "seed": 7},
        "mitigation": {
            "technique": "zne",
            "zne": {"scale_factors": [1, 3, 5], "factory": "linear"},
        },
        "execution": {"shots": shots, "seed": 1},
        "policies": {"names": ["fold_after_transpile"]},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(q) for q in range(12, 100, 6)))
    parser.add_argument("--shots", type=int, default=2000)
    args = parser.parse_args()
    sizes = [int(q) for q in args.sizes.split(",")]
    scratch = Path(tempfile.mkdtemp(prefix="llqm-bench-"))
    run_pipeline(parse_pipeline(config(sizes[0], args.shots)), store=scratch / "warmup.sqlite")
    path = scratch / "history.sqlite"
    runs = [run_pipeline(parse_pipeline(config(q, args.shots)), store=path)[0] for q in sizes]
    store = llqm_core.ProfileStore(path)
    held_out = set(runs[1::2])
    model = CostModel(min_runs=3)
    errors = []
    for run_id in runs[1::2]:
        run = store.run(run_id)
        predicted, used = model.predict(run_features(store, run), store, exclude=held_out)
        measured: dict[str, float] = {}
        for task in store.tasks(run_id):
            if task.parent_id is None and task.end_ns is not None:
                measured[task.stage] = measured.get(task.stage, 0.0) + task.profile.wall_s
        for stage, actual in measured.items():
            if actual >= MIN_STAGE_S and stage in predicted:
                error = abs(predicted[stage]["wall_s"] - actual) / actual
                errors.append(error)
                print(
                    f"{run.name:14s} {stage:14s} predicted {predicted[stage]['wall_s']:7.3f} s  "
                    f"measured {actual:7.3f} s"
                    f"  error {error * 100:5.1f}%"
                )
    print(f"fitted on {len(runs) - len(held_out)} runs, predicted {len(held_out)} others")
    print(
        f"median relative error of predicted stage times: {statistics.median(errors) * 100:.1f}%   "
        "(target < 25%)"
    )


if __name__ == "__main__":
    main()
