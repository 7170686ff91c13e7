"""Cost prediction: how close ``cost_model``'s stage times come on runs it was not fitted on,
in a store that holds several kinds of pipeline.

The store gets runs of four shapes: ZNE on GHZ circuits (fold after transpile) at a range of
sizes, unmitigated GHZ runs, REM on mirror circuits and PEC on small GHZ circuits. Every other
ZNE and unmitigated run is held out; the model, fitted on the rest, predicts the held-out
runs' top-level stages that took at least 5 ms, first from runs of the same shape (what
``llqm predict`` does) and then, for comparison, from every run in the store (what it did
before: other pipelines' stages mixed in). A stage predicted that the run did not have (a
borrowed ``mitigate.pec`` for a ZNE run) counts as a 100% error, as does one it had that was
not predicted. Prints the median relative error of each:

    python bench/predict.py [--sizes 12,18,...] [--shots 2000]

Target (issue 22): median relative error under 25% with shapes kept apart. A warm-up run
first, not used, so that imports and first-call costs do not count as a stage's time.

``--files`` (issues 33 and 46) asks another question: how close is what ``llqm run --check``
(and ``llqm predict``, the same estimator) predicts for a whole run to the run's measured wall
time and peak memory, as a user meets it (a fresh process per run, so warm-ups count)? Each
file runs twice into its own throwaway store (never the user's: a file's ``[output]`` is
dropped): the first check has no history, the second has the first run's. One line per file:
the predicted wall with its expected error and the factor the check applied for the machine's
load, the measured wall, their ratio; the predicted peak memory with its expected error, the
run's peak resident memory (``VmHWM`` reset at the run's start), their ratio; the run's
process CPU seconds and the load average; then the ratios with history. A summary gives the
share of runs within 2x and 3x (wall) and within 2x (peak memory), and how many lay within
their stated errors. Targets (issue 46): wall within 2x for 90% and within 3x for all, peak
memory within 2x, over every file of examples/pipelines and of the corpus (run with
``[mitigation] technique = "zne"`` and nothing else) that runs in under 2 minutes
(``--every --timeout 120``; a run over the cap is listed, not counted). ``--steps`` adds each
step's predicted and measured seconds (warm-ups included, and the run's time outside its
steps); ``--history-max S`` runs a file the second time only if its first run took at most S
seconds::

    python bench/predict.py --every --timeout 120 --history-max 20
    python bench/predict.py --all-examples --steps
    python bench/predict.py --corpus zne --timeout 150
    python bench/predict.py --files examples/pipelines/pec_small.toml tests/data/corpus/qpe_5_q3.qasm
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from llqm_policies.cost_model import CostModel, run_features

import llqm_core
from llqm_core.model.warmup import LEFT_OUT_WALL
from llqm_core.pipeline import parse_pipeline, run_pipeline
from llqm_core.pipeline.shapes import describe, run_shape

MIN_STAGE_S = 0.005
ROOT = Path(__file__).resolve().parent.parent


def config(kind: str, qubits: int, shots: int, mitigation: dict, policies: list[str]) -> dict:
    return {
        "name": f"{kind}-{qubits} {mitigation['technique']}",
        "circuit": {"kind": kind, "qubits": qubits, "depth": 2, "seed": 3},
        "backend": {"name": "aer", "device": "fake_fez"},
        "transpile": {"optimization_level": 1, "seed": 7},
        "mitigation": mitigation,
        "execution": {"shots": shots, "seed": 1},
        "policies": {"names": policies},
    }


ZNE = {"technique": "zne", "zne": {"scale_factors": [1, 3, 5], "factory": "linear"}}


def pipelines(sizes: list[int], shots: int) -> list[tuple[str, dict]]:
    """(kind of pipeline, config) for every run of the store, the held-out kinds first."""
    runs = [("zne", config("ghz", q, shots, ZNE, ["fold_after_transpile"])) for q in sizes]
    runs += [("none", config("ghz", q, shots, {"technique": "none"}, [])) for q in sizes[::2]]
    runs += [("rem", config("mirror", q, shots, {"technique": "rem"}, [])) for q in (8, 12, 16)]
    pec = {"technique": "pec", "pec": {"samples": 50}}
    runs += [("pec", config("ghz", q, shots, pec, [])) for q in (3, 4)]
    return runs


def corpus_pipeline(qasm: Path, technique: str) -> dict:
    """A new user's pipeline file for an OpenQASM file: the circuit, the backend, a technique."""
    return {
        "circuit": {"qasm": str(qasm.resolve())},
        "backend": {"name": "aer", "device": "fake_fez"},
        "mitigation": {"technique": technique},
    }


def measured_steps(store: str, run_ids: list[str]) -> dict[str, float]:
    """Each step's measured wall time, its warm-ups included: the run's top-level tasks of that
    stage, over its trials."""
    found: dict[str, float] = {}
    profiles = llqm_core.ProfileStore(store, readonly=True)
    for run_id in run_ids:
        for task in profiles.tasks(run_id):
            if task.parent_id is None and task.end_ns is not None:
                warm = task.metrics.get(LEFT_OUT_WALL, 0.0)  # its warm-ups, left out of wall_s
                found[task.stage] = found.get(task.stage, 0.0) + task.profile.wall_s + warm
    return found


def one_run(path: str, store: str, technique: str) -> None:
    """In a fresh process, as ``llqm run`` meets it: check the file (its predicted wall time,
    times its trials), run it, print both with each step's figures, the run's CPU time and
    the machine's load."""
    from llqm_core.model.errors import UserError
    from llqm_core.pipeline.file import read_pipeline_file
    from llqm_core.pipeline.trials import run_trials

    source = Path(path)
    try:
        if source.suffix == ".toml":
            config, base = read_pipeline_file(source), source.parent
            config.pop("output", None)  # never the file's own store
        else:
            config, base = corpus_pipeline(source, technique), source.parent
        pipeline = parse_pipeline(config, str(source), store=store, base=base)
    except UserError as exc:
        print(json.dumps({"refused": str(exc)}))
        return
    fit = pipeline.fit
    steps = fit.steps if fit else []
    predicted = fit.trials_s(pipeline.repeat) if fit else 0.0
    print(json.dumps({"checked": predicted}), flush=True)  # what a run over the cap predicted
    load = os.getloadavg()[0]
    exact = reset_peak()
    started, cpu = time.perf_counter(), time.process_time()
    trials = run_trials(pipeline, store=store)
    measured, cpu = time.perf_counter() - started, time.process_time() - cpu
    found = {
        "predicted": predicted,
        "wall_error": fit.wall_error if fit else None,
        "predicted_peak": fit.peak.peak_bytes if fit and fit.peak else None,
        "peak_error": fit.peak_error if fit else None,
        "measured_peak": peak_rss(),
        "peak_exact": exact,
        "slowdown": fit.slowdown if fit else 1.0,
        "measured": measured,
        "cpu": cpu,
        "load": (load + os.getloadavg()[0]) / 2,
        "predicted_steps": {s.step: pipeline.repeat * s.wall_s for s in steps},
        "measured_steps": measured_steps(store, trials.run_ids),
    }
    print(json.dumps(found))


def reset_peak() -> bool:
    """Start the process's peak resident memory afresh (Linux: ``5`` to ``/proc/self/clear_refs``
    resets ``VmHWM``), so the run's peak is not the check's; False where it cannot."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss() -> float:
    """The process's peak resident memory since ``reset_peak`` (``VmHWM``; elsewhere the
    process's whole peak, ``ru_maxrss``)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def run_child(path: str, store: str, technique: str, timeout: float) -> dict:
    try:
        child = subprocess.run(
            [sys.executable, __file__, "--one", path, store, technique],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        said = [json.loads(ln) for ln in out.splitlines() if ln.startswith('{"checked"')]
        predicted = f"predicted {said[0]['checked']:.1f} s, " if said else ""
        return {"failed": f"{predicted}measured over the {timeout:g} s cap"}
    lines = [ln for ln in child.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if lines else {"failed": child.stderr.strip()[-300:]}


def step_lines(result: dict) -> None:
    """Each step's predicted and measured wall time, the steps the estimate lacks included."""
    predicted, measured = result["predicted_steps"], result["measured_steps"]
    measured = measured | {"(outside steps)": result["measured"] - sum(measured.values())}
    for step in list(predicted) + [s for s in measured if s not in predicted]:
        guess, actual = predicted.get(step), measured.get(step)
        guess_text = f"{guess:8.3f} s" if guess is not None else "  (none)  "
        actual_text = f"{actual:8.3f} s" if actual is not None else "  (none)  "
        print(f"    {step:32s} {guess_text} {actual_text}")


def files(
    paths: list[str], technique: str, timeout: float, steps: bool, history_max: float = 1e9
) -> None:
    """Each file twice into its own throwaway store: the first check has no history, the
    second has the first run's."""
    scratch = Path(tempfile.mkdtemp(prefix="llqm-bench-files-"))
    ratios: dict[str, list[tuple[float, float]]] = {"no history": [], "history": []}
    stated: dict[str, list[bool]] = {"no history": [], "history": []}
    skipped: list[str] = []
    print(
        "wall: the check's estimate (its expected error as xF) against the run's wall; x load: "
        "the factor the check applied for the machine's load; peak: the check's peak memory "
        "against the run's peak resident memory (VmHWM reset at the run's start); ratio: "
        "predicted / measured; cpu: the run's process CPU seconds; load: the 1-minute load "
        "average over the run"
    )
    print(
        f"{'file':32s} {'wall pred':>9s} {'(err)':>6s} {'x load':>6s} {'measured':>9s} "
        f"{'ratio':>6s} {'peak pred':>9s} {'(err)':>5s} {'measured':>9s} {'ratio':>6s} "
        f"{'cpu':>7s} {'load':>5s}   with history: wall ratio, peak ratio"
    )
    for number, path in enumerate(paths):
        store = str(scratch / f"{number}.sqlite")
        first = run_child(path, store, technique, timeout)
        again = "measured" in first and first["measured"] <= history_max
        second = run_child(path, store, technique, timeout) if again else {}
        name = Path(path).name
        if "measured" not in first:
            reason = first.get("refused") or first.get("failed", "")
            label = "refused" if "refused" in first else "not counted"
            skipped.append(name)
            print(f"{name:32s} {label}: {reason[:150]}", flush=True)
            continue
        cells = []
        for label, result in zip(ratios, (first, second)):
            if "measured" not in result:
                continue
            wall = result["predicted"] / result["measured"]
            peak = (result["predicted_peak"] or 0.0) / max(result["measured_peak"], 1.0)
            ratios[label].append((wall, peak))
            cells.append((wall, peak))
            stated[label].append(
                _within(wall, result["wall_error"]) and _within(peak, result["peak_error"])
            )
        later = (
            f"{cells[1][0]:6.2f} {cells[1][1]:6.2f}  (error x{second['wall_error']:.2g} / "
            f"x{second['peak_error']:.2g})"
            if "measured" in second
            else second.get("failed", "not run again (--history-max)")[:60]
        )
        mib = 2**20
        print(
            f"{name:32s} {first['predicted']:7.2f} s {'x' + format(first['wall_error'], '.2g'):>6s} "
            f"{first['slowdown']:6.1f} {first['measured']:7.2f} s {cells[0][0]:6.2f} "
            f"{first['predicted_peak'] / mib:5.0f} MiB {'x' + format(first['peak_error'], '.2g'):>5s} "
            f"{first['measured_peak'] / mib:5.0f} MiB {cells[0][1]:6.2f} "
            f"{first['cpu']:5.1f} s {first['load']:5.1f}   {later}",
            flush=True,
        )
        if steps:
            step_lines(first)
    for label, found in ratios.items():
        if not found:
            continue
        walls, peaks = [w for w, _ in found], [p for _, p in found]
        print(
            f"{label}, {len(found)} runs: wall within 2x {_share(walls, 2)}, within 3x "
            f"{_share(walls, 3)} (ratio {min(walls):.2f}-{max(walls):.2f}); peak memory within "
            f"2x {_share(peaks, 2)} (ratio {min(peaks):.2f}-{max(peaks):.2f}); both within their "
            f"stated error: {sum(stated[label])} of {len(stated[label])}"
        )
    if skipped:
        print(f"not counted (refused, failed or over the cap): {', '.join(skipped)}")


def _within(ratio: float, error: float | None) -> bool:
    return error is not None and 1 / error <= ratio <= error


def _share(found: list[float], factor: float) -> str:
    inside = sum(1 for r in found if 1 / factor <= r <= factor)
    return f"{inside} of {len(found)} ({100 * inside / len(found):.0f}%)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(q) for q in range(12, 100, 6)))
    parser.add_argument("--shots", type=int, default=2000)
    parser.add_argument("--files", nargs="+", help="pipeline or OpenQASM files: whole-run ratios")
    parser.add_argument(
        "--all-examples", action="store_true", help="every file of examples/pipelines"
    )
    parser.add_argument(
        "--corpus",
        nargs="?",
        const="zne",
        metavar="TECHNIQUE",
        help="every file of tests/data/corpus, run with this technique (default zne)",
    )
    parser.add_argument(
        "--every",
        action="store_true",
        help="every example pipeline and every corpus file (issue 46: --timeout 120 keeps those "
        "that run in under 2 minutes)",
    )
    parser.add_argument("--technique", default="zne", help="for OpenQASM files (default zne)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run (cap)")
    parser.add_argument("--steps", action="store_true", help="each step's figures as well")
    parser.add_argument(
        "--history-max",
        type=float,
        default=1e9,
        help="run a file again with history only if its first run took at most this (seconds)",
    )
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one_run(*args.one)
        return
    paths = list(args.files or [])
    if args.all_examples or args.every:
        paths += sorted(str(p) for p in (ROOT / "examples" / "pipelines").glob("*.toml"))
    if args.corpus or args.every:
        paths += sorted(str(p) for p in (ROOT / "tests" / "data" / "corpus").glob("*.qasm"))
    if paths:
        files(paths, args.corpus or args.technique, args.timeout, args.steps, args.history_max)
        return
    sizes = [int(q) for q in args.sizes.split(",")]
    scratch = Path(tempfile.mkdtemp(prefix="llqm-bench-"))
    warmup = config("ghz", sizes[0], args.shots, ZNE, ["fold_after_transpile"])
    run_pipeline(parse_pipeline(warmup), store=scratch / "warmup.sqlite")
    path = scratch / "history.sqlite"
    runs: dict[str, list[str]] = {}
    for kind, pipeline in pipelines(sizes, args.shots):
        runs.setdefault(kind, []).append(run_pipeline(parse_pipeline(pipeline), store=path)[0])
    store = llqm_core.ProfileStore(path)
    held_out = {run_id for kind in ("zne", "none") for run_id in runs[kind][1::2]}
    model = CostModel(min_runs=3)
    steps = {  # the stages pipeline steps have: a prediction of one a run lacks was borrowed
        t.stage for r in store.runs() for t in store.tasks(r.id) if t.parent_id is None
    }
    errors: dict[str, list[float]] = {"same shape": [], "all runs mixed": []}
    for run_id in sorted(held_out, key=lambda r: store.run(r).start_ns):
        run = store.run(run_id)
        shape = run_shape(run.config, store.tasks(run_id))
        measured: dict[str, float] = {}
        for task in store.tasks(run_id):
            if task.parent_id is None and task.end_ns is not None:
                measured[task.stage] = measured.get(task.stage, 0.0) + task.profile.wall_s
        for label, wanted in (("same shape", shape), ("all runs mixed", None)):
            predicted, used = model.predict(
                run_features(store, run), store, exclude=held_out, shape=wanted
            )
            borrowed = (set(predicted) & steps) - set(measured)
            errors[label] += [1.0] * len(borrowed)
            if label == "same shape" and borrowed:
                print(f"{run.name:18s} borrowed: {', '.join(sorted(borrowed))}")
            for stage, actual in measured.items():
                if actual < MIN_STAGE_S:
                    continue
                guess = predicted.get(stage, {}).get("wall_s", 0.0)  # a stage not predicted: 100%
                error = abs(guess - actual) / actual
                errors[label].append(error)
                if label == "same shape":
                    print(
                        f"{run.name:18s} {stage:16s} predicted {guess:7.3f} s  measured {actual:7.3f} s"
                        f"  error {error * 100:5.1f}%  ({used} runs of {describe(shape)})"
                    )
    print(
        f"store: {sum(len(r) for r in runs.values())} runs "
        f"({', '.join(f'{len(r)} {k}' for k, r in runs.items())}), {len(held_out)} held out"
    )
    for label, found in errors.items():
        print(
            f"median relative error of predicted stage times, {label}: "
            f"{statistics.median(found) * 100:.1f}%"
            + ("   (target < 25%)" if label == "same shape" else "")
        )


if __name__ == "__main__":
    main()
