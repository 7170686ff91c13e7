"""Is every second of CPU charged to a task? The process's CPU, read from outside it (as ``top``
reads it), beside the sum of its tasks' own CPU, for runs of five kinds:

    python bench/cpu_accounting.py [--only NAME ...] [--keep DIR]

- ``main job``: ``llqm run examples/pipelines/mirror_rem_zne.toml`` (README's);
- ``noisy 14q ZNE``: a 14-qubit non-Clifford corpus circuit with ZNE on Aer's statevector
  trajectories, the device's noise;
- ``MPS``: ``llqm run examples/pipelines/hea40_mps.toml``;
- ``Prefect threads``: a ``@profiled`` flow whose Aer simulations run at once on Prefect's
  thread pool;
- ``llqm profile``: a Qiskit script of noisy Aer simulations, unmodified.

For each: the run's wall time; the process's CPU between the run's start and end, and while
any of its tasks ran, each less its warm-up's (first imports, left out of every task by design);
the tasks' own CPU added up (``llqm report --json``'s stages); and their share of the CPU while
tasks ran (the program's own code between recorded calls is no task's: the report names it
"not in any task"). Target (issue 46 item 8): at least 95% in each. The figures go in
docs/benchmarks.md with the machine's load (``uptime``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from outside_cpu import cpu_between, run_watched  # noqa: E402

import llqm_core as llqm  # noqa: E402

NOISY_ZNE = """
name = "noisy 14q zne"
[circuit]
qasm = "{root}/tests/data/corpus/qftentangled_14_m_q2.qasm"
[backend]
name = "aer"
device = "fake_fez"
[mitigation]
technique = "zne"
[mitigation.zne]
scale_factors = [1, 3]
folding = "after_transpile"
[execution]
shots = 400
seed = 5
"""

PREFECT_FLOW = """
from llqm_prefect import profiled
from prefect import flow, task
from prefect.task_runners import ThreadPoolTaskRunner
from qiskit import transpile
from qiskit.circuit.library import QFT
from qiskit_aer import AerSimulator
from qiskit_aer.noise import NoiseModel
from qiskit_ibm_runtime.fake_provider import FakeFez


@task(tags=["llqm.stage:execute"])
def simulate(seed: int) -> dict:
    backend = FakeFez()
    circuit = QFT(11).decompose()
    circuit.measure_all()
    compiled = transpile(circuit, backend, seed_transpiler=seed, optimization_level=1)
    simulator = AerSimulator(noise_model=NoiseModel.from_backend(backend), seed_simulator=seed)
    return simulator.run(compiled, shots=200).result().get_counts()


@profiled
@flow(task_runner=ThreadPoolTaskRunner(max_workers=2))
def two_at_once() -> None:
    for future in [simulate.submit(seed) for seed in (1, 2, 3, 4)]:
        future.result()


two_at_once()
"""

QISKIT_SCRIPT = """
from qiskit import transpile
from qiskit.circuit.library import QFT
from qiskit_aer import AerSimulator
from qiskit_aer.noise import NoiseModel
from qiskit_ibm_runtime.fake_provider import FakeFez

backend = FakeFez()
simulator = AerSimulator(noise_model=NoiseModel.from_backend(backend), seed_simulator=7)
for width in (10, 11, 12):
    circuit = QFT(width).decompose()
    circuit.measure_all()
    compiled = transpile(circuit, backend, seed_transpiler=7)
    print(width, len(simulator.run(compiled, shots=300).result().get_counts()))
"""


def workloads(scratch: Path) -> dict[str, tuple[list[str], Path]]:
    """Each run's command and its store."""
    (scratch / "noisy.toml").write_text(NOISY_ZNE.format(root=ROOT))
    (scratch / "flow.py").write_text(textwrap.dedent(PREFECT_FLOW))
    (scratch / "script.py").write_text(textwrap.dedent(QISKIT_SCRIPT))
    llqm_cli = [sys.executable, "-m", "llqm_core.cli"]

    def run(name: str, file: Path) -> tuple[list[str], Path]:
        store = scratch / f"{name}.sqlite"
        return [*llqm_cli, "run", "--store", str(store), str(file)], store

    found = {
        "main job": run("main", ROOT / "examples" / "pipelines" / "mirror_rem_zne.toml"),
        "noisy 14q ZNE": run("noisy", scratch / "noisy.toml"),
        "MPS": run("mps", ROOT / "examples" / "pipelines" / "hea40_mps.toml"),
        "Prefect threads": ([sys.executable, str(scratch / "flow.py")], scratch / "flow.sqlite"),
    }
    store = scratch / "profile.sqlite"
    found["llqm profile"] = (
        [*llqm_cli, "profile", "--store", str(store), str(scratch / "script.py")],
        store,
    )
    return found


def measure(name: str, command: list[str], store: Path, scratch: Path) -> dict[str, float]:
    env = {**os.environ, "LLQM_STORE": str(store)}
    done, readings = run_watched(command, scratch / f"{store.stem}.cpu", cwd=ROOT, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr[-2000:]}")
    reader = llqm.ProfileStore(store)
    run = reader.runs()[0]
    report = json.loads(
        subprocess.run(
            [sys.executable, "-m", "llqm_core.cli", "report", "--store", str(store), "--json"],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
    )
    warm = (report.get("warmup") or {}).get("cpu_s", 0.0)
    whole = cpu_between(readings, run.start_ns, run.end_ns or run.start_ns) - warm
    spans = sorted((t.start_ns, t.end_ns) for t in reader.tasks(run.id) if t.end_ns is not None)
    in_tasks = -warm
    reach = None
    for start, end in spans:  # the union of the tasks' intervals
        if reach is None or start > reach[1]:
            if reach is not None:
                in_tasks += cpu_between(readings, *reach)
            reach = [start, end]
        else:
            reach[1] = max(reach[1], end)
    if reach is not None:
        in_tasks += cpu_between(readings, *reach)
    tasks = sum(stage["own_cpu_s"] for stage in report["stages"].values())
    return {
        "wall_s": report["run"]["wall_s"],
        "process_cpu_s": whole,
        "in_tasks_cpu_s": in_tasks,
        "tasks_cpu_s": tasks,
        "share": tasks / in_tasks if in_tasks > 0 else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="run only these (names as printed)")
    parser.add_argument("--keep", type=Path, help="keep the stores in this folder")
    options = parser.parse_args()
    scratch = options.keep or Path(tempfile.mkdtemp(prefix="llqm-cpu-accounting-"))
    scratch.mkdir(parents=True, exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(
        f"{'run':<18} {'wall':>8} {'process CPU':>12} {'while tasks ran':>16} {'tasks CPU':>10} "
        f"{'share':>7}"
    )
    for name, (command, store) in workloads(scratch).items():
        if options.only and name not in options.only:
            continue
        found = measure(name, command, store, scratch)
        print(
            f"{name:<18} {found['wall_s']:>7.2f}s {found['process_cpu_s']:>11.2f}s "
            f"{found['in_tasks_cpu_s']:>15.2f}s {found['tasks_cpu_s']:>9.2f}s "
            f"{found['share']:>6.1%}",
            flush=True,
        )
    print(f"load average {os.getloadavg()[0]:.2f} (target: share >= 95% in each row)")


if __name__ == "__main__":
    main()
