"""The paper-scale workload with LLQM against the way a user writes it today, in one run.

LLQM runs ``examples/pipelines/paper_scale.toml``: a 100-qubit mirror circuit on fake_fez,
readout mitigation and PEC with 12,000 samples whose Paulis go into the once-transpiled
circuit, all samples in one job on Stim (over 10^7 transpiled gates executed). The baseline
does the same work as Mitiq's documentation and Qiskit's tutorials write it, with the same
libraries: a readout calibration job and the unmitigated job on Aer, Mitiq's local
depolarizing representations of the logical circuit at the calibration's mean gate errors,
and ``execute_with_pec`` with an executor that transpiles each sampled circuit (optimization
level 1, on the same qubits LLQM's layout chose) and runs it on Aer's stabilizer method with
the backend's noise model (``NoiseModel.from_backend(..., thermal_relaxation=False)``: the
stabilizer method takes no relaxation). Readout correction is applied per bit in both (Mitiq's
own REM builds a 2^100 matrix).

At full size the baseline would take hours (Aer's stabilizer method spends ~50 ms per shot of
a noisy 100-qubit circuit), so it runs ``--baseline-samples`` samples and
``--baseline-shots`` shots for each of its jobs, and each part is scaled linearly to the
full size: PEC's time per sample times the samples, each job's time per shot times the
shots. Both parts are linear in what is scaled (one executor call per sample; one Aer
trajectory per shot); the fixed costs (imports, representations) are not scaled. The printed
baseline lines say what was run and what it was scaled to.

Prints, for LLQM: wall time and peak memory per stage (from the run's own profile), LLQM's
own share of the wall time (time inside LLQM's task, span, metric and store calls, plus the
CPU time of its background threads), the fidelity figures; for the baseline: each part as
run and as scaled; and the wall-time ratio (issue 19 targets: at least 50x, own share under 5%),
with the CPU-time ratio and the load average beside it: on a shared machine the two sides
run at different loads, and the CPU ratio is the steadier figure.

    python bench/paper_scale.py [--baseline-samples 20] [--baseline-shots 100] [--samples N]
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import threading
import time
import tomllib
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
from llqm_mitiq.pec.noise import calibrated_noise_levels, represent
from llqm_qiskit.observables.expectation import neighbour_parities
from mitiq.pec import execute_with_pec
from qiskit import QuantumCircuit, transpile
from qiskit_aer import AerSimulator
from qiskit_aer.noise import NoiseModel

import llqm_core
import llqm_core.plugin
from llqm_core.pipeline import parse_pipeline, run_pipeline
from llqm_core.runtime import api
from llqm_core.runtime import tasks as runtime_tasks

PIPELINE = Path(__file__).resolve().parent.parent / "examples" / "pipelines" / "paper_scale.toml"
#: LLQM's own calls: task start and end (profile, span, store row), metrics, decisions.
OWN_CALLS = [
    (api, "start_task"),
    (api, "finish_task"),
    (runtime_tasks, "begin_task"),
    (runtime_tasks, "finish_task"),
    (runtime_tasks, "_finish"),
    (api.ActiveRun, "start"),
    (api.ActiveRun, "finish"),
    (api.ActiveRun, "description"),
    (api.ActiveRun, "producers"),
    (api.ActiveRun, "record_decision"),
    (api.TaskHandle, "annotate"),
    (api.TaskHandle, "record_output"),
    (api.TaskHandle, "record_usage"),
    (api.TaskHandle, "use_hardware"),
    (api.TaskHandle, "add_dependency"),
]


class OwnTime:
    """Seconds inside LLQM's own calls (outermost only) and its background threads' CPU time."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.by_call: dict[str, float] = defaultdict(float)
        self._depth = 0
        self._threads: dict[int, float] = {}
        self._stop = threading.Event()

    def wrap(self, owner, name: str) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            if self._depth or threading.current_thread() is not threading.main_thread():
                return original(*args, **kwargs)
            self._depth += 1
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - started
                self.seconds += elapsed
                self.by_call[name] += elapsed
                self._depth -= 1

        setattr(owner, name, timed)
        if owner in (api, runtime_tasks) and name in vars(llqm_core.plugin):
            setattr(llqm_core.plugin, name, timed)  # what the plugins call

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            self._read_threads()

    def _read_threads(self) -> None:
        for thread in threading.enumerate():
            if thread.name.startswith("llqm") and thread.ident is not None:
                try:
                    clock = time.pthread_getcpuclockid(thread.ident)
                    self._threads[thread.ident] = time.clock_gettime(clock)
                except (OSError, ProcessLookupError):
                    pass  # ended since: its last reading stands

    def __enter__(self) -> OwnTime:
        for owner, name in OWN_CALLS:
            self.wrap(owner, name)
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()
        return self

    def __exit__(self, *exc) -> None:
        self._read_threads()
        self._stop.set()

    @property
    def background_s(self) -> float:
        return sum(self._threads.values())


def llqm_side(store: Path, samples: int | None) -> tuple[dict, float, OwnTime]:
    config = tomllib.loads(PIPELINE.read_text())
    if samples is not None:
        config["mitigation"]["pec"]["samples"] = samples
    pipeline = parse_pipeline(config)
    with OwnTime() as own:
        started = time.perf_counter()
        run_id, data = run_pipeline(pipeline, store=store)
        wall = time.perf_counter() - started
    return {"run_id": run_id, **data}, wall, own


def peak_rss_gib() -> float:
    """The process's peak resident memory so far (the kernel's high-water mark)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def stage_table(store: Path, run_id: str) -> list[tuple[str, int, float, float, float]]:
    """Per stage: tasks, wall and CPU seconds (summed) and peak RSS (largest), from the run's profile."""
    rows: dict[str, list] = defaultdict(lambda: [0, 0.0, 0.0, 0])
    for record in llqm_core.ProfileStore(store).tasks(run_id):
        row = rows[record.stage]
        row[0] += 1
        row[1] += record.profile.wall_s or 0.0
        row[2] += record.profile.cpu_s or 0.0
        row[3] = max(row[3], record.profile.peak_rss_bytes or 0)
    return sorted(((s, *r) for s, r in rows.items()), key=lambda r: -r[2])


def baseline(data: dict, samples: int, shots: int, full_samples: int, full_shots: int, spp: int):
    """The user's way at reduced size: seconds per part as run, and scaled to the full size."""
    from llqm_qiskit.backends.aer import AerBackend

    backend = AerBackend(device="fake_fez")
    device = backend.device
    circuit: QuantumCircuit = data["circuit"]
    compiled = data["compiled"]
    layout = list(compiled.layout.initial_index_layout(filter_ancillas=True))
    observable = neighbour_parities(circuit)
    parts: dict[str, tuple[float, float]] = {}
    cpu: dict[str, float] = {}
    clock = [time.process_time()]

    def cpu_since(name: str) -> None:
        now = time.process_time()
        cpu[name] = now - clock[0]
        clock[0] = now

    started = time.perf_counter()
    noise_model = NoiseModel.from_backend(device, thermal_relaxation=False)
    simulator = AerSimulator(method="stabilizer", noise_model=noise_model)
    parts["noise model"] = (time.perf_counter() - started, 1.0)
    cpu_since("noise model")

    def transpiled(circuits):
        return transpile(
            circuits, device, optimization_level=1, initial_layout=layout, seed_transpiler=7
        )

    def job(name, circuits, full):
        """Transpile, then run at ``shots`` and at twice that: a line through the two times
        gives the job's fixed cost and its cost per shot, scaled to ``full`` shots."""
        started = time.perf_counter()
        jobs = transpiled(circuits)
        fixed = time.perf_counter() - started
        times, counts = [], None
        for each in (shots, 2 * shots):
            started = time.perf_counter()
            counts = simulator.run(jobs, shots=each, seed_simulator=1).result().get_counts()
            times.append(time.perf_counter() - started)
        per_shot = max(0.0, (times[1] - times[0]) / shots)
        setup = max(0.0, times[0] - per_shot * shots)
        run_s = fixed + sum(times)
        parts[name] = (run_s, (fixed + setup + per_shot * full) / run_s)
        cpu_since(name)
        return counts

    zeros, ones = QuantumCircuit(circuit.num_qubits), QuantumCircuit(circuit.num_qubits)
    ones.x(range(circuit.num_qubits))
    zeros.measure_all()
    ones.measure_all()
    calibration = job("readout calibration", [zeros, ones], full_shots)
    inverse = {}
    for bit in range(circuit.num_qubits):
        p01 = sum(n for k, n in calibration[0].items() if k[::-1][bit] == "1") / (2 * shots)
        p10 = sum(n for k, n in calibration[1].items() if k[::-1][bit] == "0") / (2 * shots)
        inverse[bit] = np.linalg.inv(np.array([[1 - p01, p10], [p01, 1 - p10]]))
    unmitigated = observable.mitigated_expectation(job("unmitigated job", circuit, full_shots), {})

    started = time.perf_counter()
    levels = calibrated_noise_levels(compiled, backend.snapshot())
    representations, _ = represent(circuit, levels)
    parts["representations"] = (time.perf_counter() - started, 1.0)
    cpu_since("representations")

    executor_s = [0.0]

    def executor(sampled: QuantumCircuit) -> float:  # one sampled circuit: transpile, one job
        started = time.perf_counter()
        counts = simulator.run(transpiled(sampled), shots=spp, seed_simulator=1).result()
        value = observable.mitigated_expectation(counts.get_counts(), inverse)
        executor_s[0] += time.perf_counter() - started
        return value

    # Mitiq's sampling has a large fixed cost (it looks each gate's representation up by
    # comparing deep copies) and a cost per sample: two runs, n and 2n samples, separate them.
    mitiq_s, runs_s = [], 0.0
    for n in (samples, 2 * samples):
        executor_s[0] = 0.0
        started = time.perf_counter()
        with warnings.catch_warnings():  # measurements have no representation, on purpose
            warnings.filterwarnings("ignore", message="No representation found")
            mitigated = execute_with_pec(
                circuit,
                executor,
                representations=representations,
                num_samples=n,
                random_state=np.random.RandomState(3),
            )
        elapsed = time.perf_counter() - started
        runs_s += elapsed
        mitiq_s.append(elapsed - executor_s[0])
    per_executor = executor_s[0] / (2 * samples)
    per_sample = max(0.0, (mitiq_s[1] - mitiq_s[0]) / samples)
    fixed = max(0.0, mitiq_s[0] - per_sample * samples)
    parts["execute_with_pec"] = (
        runs_s,
        (fixed + (per_sample + per_executor) * full_samples) / runs_s,
    )
    cpu_since("execute_with_pec")
    return parts, cpu, unmitigated, float(mitigated)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-samples", type=int, default=10)
    parser.add_argument("--baseline-shots", type=int, default=100)
    parser.add_argument(
        "--samples", type=int, default=None, help="LLQM's samples (default: the file's)"
    )
    args = parser.parse_args()
    store = Path(tempfile.mkdtemp(prefix="llqm-bench-")) / "paper_scale.sqlite"

    cpu_started = time.process_time()
    data, wall, own = llqm_side(store, args.samples)
    cpu = time.process_time() - cpu_started
    print(
        f"LLQM: {PIPELINE.name}, run {data['run_id'][:12]}: wall {wall:.1f} s, "
        f"process CPU {cpu:.1f} s, peak RSS {peak_rss_gib():.2f} GiB"
    )
    print(f"  {'stage':<24}{'tasks':>6}{'wall s':>10}{'cpu s':>10}{'peak RSS GiB':>14}")
    for stage, tasks, seconds, stage_cpu, peak in stage_table(store, data["run_id"]):
        print(f"  {stage:<24}{tasks:>6}{seconds:>10.2f}{stage_cpu:>10.2f}{peak / 2**30:>14.2f}")
    own_s = own.seconds + own.background_s
    print(
        f"  LLQM's own share: {own_s:.2f} s of {wall:.1f} s = {100 * own_s / wall:.2f}% "
        f"(calls {own.seconds:.2f} s, background threads' CPU {own.background_s:.2f} s; target < 5%)"
    )
    print(
        "  own calls: "
        + ", ".join(f"{n} {s:.2f} s" for n, s in sorted(own.by_call.items(), key=lambda x: -x[1]))
    )
    records = llqm_core.ProfileStore(store).tasks(data["run_id"])
    gates = sum(
        r.metrics.get("circuit.size", 0) for r in records if r.stage == "mitigate.pec.sample"
    )
    fidelity = data["fidelity"]
    print(
        f"  transpiled gates in the sampled circuits executed: {gates:,}; "
        f"ideal {fidelity['fidelity.ideal']:.4f}, "
        f"unmitigated {fidelity['fidelity.unmitigated']:.4f}, mitigated {fidelity['fidelity.mitigated']:.4f} "
        f"(errors {fidelity['fidelity.error_unmitigated']:.4f} -> {fidelity['fidelity.error_mitigated']:.4f})"
    )

    full_samples = data["pec_samples"]
    full_shots = data["shots"]
    load_llqm = os.getloadavg()[0]
    parts, part_cpu, unmitigated, mitigated = baseline(
        data,
        args.baseline_samples,
        args.baseline_shots,
        full_samples,
        full_shots,
        data["pec_shots_per_sample"],
    )
    print(
        f"baseline (execute_with_pec, transpile per sample, Aer stabilizer + noise model), run at "
        f"{args.baseline_samples} samples and {args.baseline_shots} shots per job, scaled to "
        f"{full_samples} samples and {full_shots} shots:"
    )
    total = total_cpu = 0.0
    for name, (seconds, scale) in parts.items():
        total += seconds * scale
        total_cpu += part_cpu[name] * scale
        print(
            f"  {name:<24}{seconds:>9.2f} s run ({part_cpu[name]:.2f} s CPU)   x{scale:<8.1f}"
            f"{seconds * scale:>12.1f} s scaled"
        )
    print(
        f"  baseline at full size: {total:.0f} s ({total / 3600:.2f} h); its reduced run gave "
        f"unmitigated {unmitigated:.4f}, mitigated {mitigated:.4f}"
    )
    print(f"wall time, baseline / LLQM: {total / wall:.0f}x   (target >= 50x)")
    print(
        f"CPU time, baseline / LLQM: {total_cpu / cpu:.0f}x ({total_cpu:.0f} s scaled by the same "
        f"factors / {cpu:.1f} s); load average at the end of LLQM's run {load_llqm:.1f}, of the "
        f"baseline's {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: on a shared machine the "
        "wall ratio moves with the load, the CPU ratio much less"
    )


if __name__ == "__main__":
    main()
