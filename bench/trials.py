"""Repeated trials: what ``[run] repeat = N`` costs over N plain runs, what reading a trial set
costs over reading its runs one by one, and whether its 95% intervals cover 95% of the time.

    python bench/trials.py [--repeat 8] [--qubits 4] [--shots 1000] [--rounds 2]

In one process, after a warm-up run that is not counted: N plain ``run_pipeline`` calls of a
ZNE pipeline against one ``run_trials`` of the same pipeline with repeat N (alternating, the
faster round of each kept), and N ``build_report`` calls against one ``trials_report`` of the
set. Then the set's mitigated error as mean and 95% interval, and the interval's coverage of a
known mean over 4,000 samples of 4 normal draws (Student's t should give 0.95).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import llqm_core
from llqm_core.analysis.report import build_report
from llqm_core.analysis.stats import summarize
from llqm_core.analysis.trial_report import find_trials, trials_report
from llqm_core.pipeline import parse_pipeline, run_pipeline
from llqm_core.pipeline.trials import run_trials


def config(qubits: int, shots: int, repeat: int) -> dict:
    return {
        "name": f"ghz-{qubits} zne",
        "circuit": {"kind": "ghz", "qubits": qubits},
        "backend": {"name": "aer", "device": "fake_fez"},
        "transpile": {"optimization_level": 0, "seed": 7},
        "mitigation": {"technique": "zne", "zne": {"scale_factors": [1, 3], "factory": "linear"}},
        "execution": {"shots": shots, "seed": 1},
        "run": {"repeat": repeat},
    }


def timed(work) -> tuple[float, object]:
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def coverage(samples: int = 4000, n: int = 4, seed: int = 1) -> float:
    """The share of 95% intervals of ``n`` normal draws that hold the true mean (0)."""
    rng = random.Random(seed)
    held = 0
    for _ in range(samples):
        s = summarize([rng.gauss(0.0, 1.0) for _ in range(n)])
        held += s.low <= 0.0 <= s.high
    return held / samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=8)
    parser.add_argument("--qubits", type=int, default=4)
    parser.add_argument("--shots", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    store = Path(tempfile.mkdtemp(prefix="llqm-bench-trials-")) / "profiles.sqlite"
    pipeline = parse_pipeline(config(args.qubits, args.shots, args.repeat), store=str(store))
    run_pipeline(pipeline, store=store)  # warm-up: imports, the device, first calls

    plain_s, trials_s, plain_ids, trial_set = [], [], [], None
    for _ in range(args.rounds):
        seconds, ids = timed(
            lambda: [run_pipeline(pipeline, store=store)[0] for _ in range(args.repeat)]
        )
        plain_s.append(seconds)
        plain_ids = ids
        seconds, trial_set = timed(lambda: run_trials(pipeline, store=store))
        trials_s.append(seconds)
    assert trial_set is not None and trial_set.id is not None
    reader = llqm_core.ProfileStore(store, readonly=True)
    per_run_s, _ = timed(lambda: [build_report(reader, r) for r in plain_ids])
    set_s, report = timed(lambda: trials_report(reader, find_trials(reader, trial_set.id)))

    print(f"{args.repeat} trials of a {args.qubits}-qubit ZNE pipeline, {args.shots} shots")
    print(
        f"  run:    {args.repeat} plain runs {min(plain_s):.2f} s, repeat = {args.repeat} "
        f"{min(trials_s):.2f} s, ratio {min(trials_s) / min(plain_s):.2f}"
    )
    print(
        f"  report: {args.repeat} run reports {per_run_s:.2f} s, one trial-set report "
        f"{set_s:.2f} s, ratio {set_s / per_run_s:.2f}"
    )
    error = report["fidelity"]["error_mitigated"]
    first = summarize(
        [
            r["error_mitigated"]
            for r in report["trials"]["runs"][:3]
            if r["error_mitigated"] is not None
        ]
    )
    low, high = error["ci95"]
    print(
        f"  mitigated error {error['mean']:.4f}, sd {error['sd']:.4f}, 95% interval "
        f"{low:.4f} to {high:.4f} (half-width {(high - low) / 2:.4f}; "
        f"from the first 3 trials: {first.half_width or 0:.4f})"
    )
    plain_errors = [build_report(reader, r)["fidelity"].get("error_mitigated") for r in plain_ids]
    print(
        f"  the {len(plain_errors)} plain runs (the file's one seed) gave "
        f"{len(set(plain_errors))} distinct mitigated error(s), mean {statistics.fmean(plain_errors):.4f}"
    )
    print(f"  coverage of the 95% interval on 4,000 samples of 4 normal draws: {coverage():.3f}")


if __name__ == "__main__":
    main()
