"""A layout chosen once against a layout re-chosen on drift, in one run on one drifting device.

A long sweep of repeated ZNE runs of a GHZ circuit on ``aer``'s fake_fez with LLQM's seeded drift
model: at each point of the sweep ``--hours-per-point`` modelled hours pass (errors and T1/T2
walk, couplers fail at ``--failure-rate`` per coupler per hour), the hardware monitor reads the
device (a reading now, ``poll_now``, besides its own interval) and the point runs ``--repeat``
trials. Each trial runs both arms in one job, so both see the very same calibration:

- static: the ``hardware_layout`` policy's layout, chosen once on the calibration at the start;
- reactive: the same policy subscribed to the monitor (``on_hardware_change``), which re-places
  the circuit when a coupler it uses fails or its qubits' errors drift past its threshold.

ZNE folds the compiled circuit's cz gates in place (scale factors 1, 3, 5) and extrapolates
linearly; the error of a trial is ``|mitigated - 1|`` for the GHZ's ideal-outcome probability.
The bench prints, over the trials after the first coupler failure that touches the static
layout, each arm's mean mitigated error with its 95% confidence interval (Student t, from
``llqm_core.analysis.stats``), their ratio and whether the intervals overlap. Target (issue 23):
the reactive layout's error at least 2x lower, intervals that do not overlap.

A second part runs a pipeline file as a user runs it (``examples/pipelines/ghz10_drift_layout.toml``:
GHZ-10 with ZNE, ``[run] repeat = 8``, drift of 2 modelled hours per job with couplers failing
at 1% per hour) with and without its ``hardware_layout`` policy, and prints each trial's
mitigated error: the policy decides on the calibration in force at each trial (the hardware
monitor's latest reading), so each trial's error should stay near the first trial's and never
be worse than without the policy (issue 32).

    python bench/drift.py [--points 24] [--repeat 5] [--qubits 12] [--shots 2000]
    python bench/drift.py --pipeline-only      # the pipeline file's rows alone
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from llqm_mitiq.zne.combine import extrapolation
from llqm_mitiq.zne.construct import fold_gates
from llqm_qiskit import profiled_transpile
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.circuits import ghz
from llqm_qiskit.observables.expectation import ideal_outcomes

import llqm_core
from llqm_core.analysis.stats import overlap, summarize
from llqm_core.model.hardware import MONITOR_STAGE, faulty_couplers
from llqm_core.pipeline import registries
from llqm_core.pipeline.reactive import subscribe

SCALES = [1.0, 3.0, 5.0]


def couplers_of(layout: list[int]) -> set[tuple[int, int]]:
    """The couplers a GHZ chain placed on ``layout`` uses (qubit i to i + 1)."""
    return {(min(a, b), max(a, b)) for a, b in zip(layout, layout[1:])}


class Arm:
    """One way of placing the circuit, with its compiled circuit per layout and its errors."""

    def __init__(self, name: str, circuit, device, layout_of) -> None:
        self.name, self.circuit, self.device, self.layout_of = name, circuit, device, layout_of
        self._compiled: dict[tuple[int, ...], object] = {}
        self.errors: list[tuple[int, float]] = []  # (point, error)

    def folded(self) -> list:
        layout = tuple(self.layout_of())
        if layout not in self._compiled:
            self._compiled[layout] = profiled_transpile(
                self.circuit, self.device, optimization_level=1, initial_layout=list(layout)
            )
        compiled = self._compiled[layout]
        return [fold_gates(compiled, scale, {"cz"}, seed=1) for scale in SCALES]


def sweep(args: argparse.Namespace, store: Path) -> dict:
    backend = AerBackend(
        device="fake_fez",
        monitor_interval_s=args.monitor_interval,
        drift={
            "seed": args.seed,
            "hours_per_job": 0.0,
            "coupler_failure_rate": args.failure_rate,
            "error_sigma": 0.1,
            "coherence_sigma": 0.05,
        },
    )
    circuit = ghz(args.qubits)
    observable = ideal_outcomes(circuit)
    extrapolate = extrapolation("linear", None, None, len(SCALES))
    options = {"candidates": args.candidates, "drift_threshold": args.threshold}
    static_policy = registries.create("policy", "hardware_layout", **options)
    reactive_policy = registries.create("policy", "hardware_layout", **options)
    with llqm_core.run("bench drift: static against reactive layout", store=store) as run:
        monitor = run.watch_hardware(backend)
        start = backend.poll_calibration()
        chosen = static_policy.decide(circuit=circuit, snapshot=start).choice["initial_layout"]
        reactive_policy.decide(circuit=circuit, snapshot=start)
        subscribe([reactive_policy], run)
        arms = [
            Arm("static", circuit, backend.device, lambda: chosen),
            Arm("reactive", circuit, backend.device, lambda: reactive_policy.layout_for(circuit)),
        ]
        first_failure = None
        for point in range(args.points):
            if point:
                backend.drift.advance(backend.snapshot(), args.hours_per_point)
                monitor.poll_now()  # the monitor reads the device; the reactive arm may re-place
            broken = set(faulty_couplers(backend.poll_calibration()))
            if first_failure is None and couplers_of(chosen) & broken:
                first_failure = point
            for trial in range(args.repeat):
                batches = [arm.folded() for arm in arms]
                counts = backend.execute(
                    [c for batch in batches for c in batch],
                    args.shots,
                    seed=args.seed * 100_000 + point * args.repeat + trial,
                )
                for index, arm in enumerate(arms):
                    mine = counts[index * len(SCALES) : (index + 1) * len(SCALES)]
                    values = [observable.expectation([c]) for c in mine]
                    arm.errors.append((point, abs(float(extrapolate(SCALES, values)) - 1.0)))
    stored = llqm_core.ProfileStore(store)
    replaced = [
        d
        for d in stored.decisions(run.id)
        if "reacting_to" in d.inputs and d.choice.get("initial_layout")
    ]
    cost = next(t for t in stored.tasks(run.id) if t.stage == MONITOR_STAGE)
    return {
        "arms": arms,
        "first_failure": first_failure,
        "replacements": len(replaced),
        "monitor": cost.metrics,
        "wall_s": stored.run(run.id).wall_s,
    }


PIPELINE = Path(__file__).resolve().parent.parent / "examples/pipelines/ghz10_drift_layout.toml"


def pipeline_trials(store: Path, with_policy: bool) -> list[float]:
    """Each trial's mitigated error of the example file, with or without its layout policy."""
    from llqm_core.pipeline import parse_pipeline
    from llqm_core.pipeline.file import read_pipeline_file
    from llqm_core.pipeline.trials import run_trials

    config = read_pipeline_file(PIPELINE)
    if not with_policy:
        config.pop("policies")
    pipeline = parse_pipeline(config, str(PIPELINE), store=str(store))
    trials = run_trials(pipeline, store=store)
    stored = llqm_core.ProfileStore(store, readonly=True)
    errors = []
    for run_id in trials.run_ids:
        (post,) = [t for t in stored.tasks(run_id) if t.stage == "postprocess"]
        errors.append(float(post.metrics["fidelity.error_mitigated"]))
    return errors


def pipeline_rows(folder: Path) -> None:
    """The example file's trials with and without ``hardware_layout``, as a user runs them."""
    started = time.perf_counter()
    rows = {
        name: pipeline_trials(folder / f"{name}.sqlite", with_policy)
        for name, with_policy in (("no policy", False), ("hardware_layout", True))
    }
    load = os.getloadavg()
    print(
        f"{PIPELINE.name} (GHZ-10, ZNE, repeat 8, 2 modelled h per job, couplers fail at 1%/h): "
        f"{time.perf_counter() - started:.0f} s wall, load average {load[0]:.1f} on "
        f"{os.cpu_count()} CPUs"
    )
    for name, errors in rows.items():
        print(
            f"  {name:16s} mitigated error per trial: {' '.join(f'{e:.3f}' for e in errors)}  "
            f"mean {summarize(errors).mean:.3f}, worst {max(errors):.3f}"
        )
    policy, plain = rows["hardware_layout"], rows["no policy"]
    near = max(policy) <= max(3 * policy[0], policy[0] + 0.05)
    better = all(p <= n + 0.02 for p, n in zip(policy, plain))
    print(
        f"  policy: every trial near the first's ({policy[0]:.3f}): {'yes' if near else 'NO'}; "
        f"no trial worse than without it (by more than 0.02): {'yes' if better else 'NO'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--qubits", type=int, default=12)
    parser.add_argument("--shots", type=int, default=2000)
    parser.add_argument("--hours-per-point", type=float, default=4.0)
    parser.add_argument("--failure-rate", type=float, default=0.004)
    parser.add_argument("--threshold", type=float, default=0.25)
    parser.add_argument("--candidates", type=int, default=500)
    parser.add_argument("--monitor-interval", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pipeline-only", action="store_true", help="only the pipeline rows")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        pipeline_rows(Path(folder))
    if args.pipeline_only:
        return
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        result = sweep(args, Path(folder) / "drift.sqlite")
    load = os.getloadavg()
    print(
        f"{args.points} points x {args.repeat} trials, {args.qubits}-qubit GHZ, {args.shots} shots, "
        f"ZNE {SCALES} linear; {args.hours_per_point:g} modelled h per point, coupler failure rate "
        f"{args.failure_rate:g}/h, seed {args.seed}; {time.perf_counter() - started:.0f} s wall, "
        f"load average {load[0]:.1f} on {os.cpu_count()} CPUs"
    )
    monitor = result["monitor"]
    print(
        f"monitor: {monitor['monitor.readings']} readings, {monitor['monitor.changes']} changes, "
        f"{monitor['monitor.cpu_s']:.2f} s CPU ({monitor['monitor.cpu_s'] / result['wall_s']:.2%} "
        f"of the run's wall); reactive arm re-placed {result['replacements']} times"
    )
    first = result["first_failure"]
    if first is None:
        print(
            "no coupler of the layout chosen at the start failed during the sweep: nothing to compare"
        )
        raise SystemExit(1)
    print(f"first failure of a coupler on the static layout: point {first} of {args.points}")
    summaries = {}
    for arm in result["arms"]:
        before = [e for p, e in arm.errors if p < first]
        after = [e for p, e in arm.errors if p >= first]
        summaries[arm.name] = summarize(after)
        s = summaries[arm.name]
        low, high = (s.low, s.high) if s.low is not None else (s.mean, s.mean)
        prior = f"{summarize(before).mean:.4f}" if before else "-"
        print(
            f"  {arm.name:8s} mean mitigated error after: {s.mean:.4f}  95% CI [{low:.4f}, {high:.4f}]"
            f"  (n={s.n}; before the failure: {prior})"
        )
    static, reactive = summaries["static"], summaries["reactive"]
    ratio = static.mean / reactive.mean if reactive.mean else float("inf")
    apart = overlap(static, reactive) is False
    print(
        f"static / reactive error after the first failure: {ratio:.2f}x (target >= 2x); intervals "
        f"{'do not overlap' if apart else 'overlap'}; target {'met' if ratio >= 2 and apart else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
