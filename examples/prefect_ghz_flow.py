"""A Prefect flow of GHZ circuits on a fake IBM Heron r2, profiled by one decorator.

    python examples/prefect_ghz_flow.py                      # thread pool, Prefect's ephemeral server
    python examples/prefect_ghz_flow.py --dask 2             # a local Dask cluster of 2 worker processes
    python examples/prefect_ghz_flow.py --dask-address tcp://scheduler:8786   # an existing Dask cluster
    llqm report

Nothing in the tasks knows about LLQM: ``@profiled`` above ``@flow`` makes every task run a
profiled LLQM task (stages from the ``llqm.stage:`` tags), in the flow run's trace.
"""

from __future__ import annotations

import argparse

from llqm_prefect import profiled
from llqm_qiskit.circuits import ghz, ghz_success
from prefect import flow, task
from qiskit import QuantumCircuit, transpile
from qiskit_aer import AerSimulator
from qiskit_aer.noise import NoiseModel
from qiskit_ibm_runtime.fake_provider import FakeFez


@task(tags=["llqm.stage:generate"])
def build_ghz(qubits: int) -> QuantumCircuit:
    return ghz(qubits)


@task(tags=["llqm.stage:transpile"])
def transpile_for_fez(circuit: QuantumCircuit, seed: int) -> QuantumCircuit:
    return transpile(circuit, backend=FakeFez(), optimization_level=1, seed_transpiler=seed)


@task(tags=["llqm.stage:execute"])
def run_noisy(circuit: QuantumCircuit, shots: int, seed: int) -> dict[str, int]:
    # Pauli noise from the calibration (no thermal relaxation) keeps Clifford circuits on the
    # stabilizer method.
    simulator = AerSimulator(
        noise_model=NoiseModel.from_backend(FakeFez(), thermal_relaxation=False)
    )
    return simulator.run(circuit, shots=shots, seed_simulator=seed).result().get_counts()


@task(tags=["llqm.stage:postprocess"])
def ideal_fraction(counts: dict[str, int]) -> float:
    return ghz_success(counts)


@profiled
@flow(log_prints=True)
def ghz_on_fez(sizes: list[int], shots: int = 2000, seed: int = 11) -> dict[int, float]:
    circuits = build_ghz.map(sizes)
    compiled = transpile_for_fez.map(circuits, seed=seed)
    counts = run_noisy.map(compiled, shots=shots, seed=seed)
    fractions = ideal_fraction.map(counts)
    result = {n: f.result() for n, f in zip(sizes, fractions)}
    for n, value in result.items():
        print(f"GHZ-{n}: P(ideal) = {value:.3f}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 12])
    parser.add_argument("--shots", type=int, default=2000)
    parser.add_argument(
        "--dask",
        type=int,
        metavar="WORKERS",
        help="run tasks on a local Dask cluster of WORKERS processes",
    )
    parser.add_argument(
        "--dask-address", help="run tasks on an existing Dask cluster (its scheduler address)"
    )
    args = parser.parse_args()
    pipeline = ghz_on_fez
    if args.dask or args.dask_address:
        from prefect_dask import DaskTaskRunner

        runner = (
            DaskTaskRunner(address=args.dask_address)
            if args.dask_address
            else DaskTaskRunner(
                cluster_kwargs={"n_workers": args.dask, "threads_per_worker": 1, "processes": True}
            )
        )
        pipeline = ghz_on_fez.with_options(task_runner=runner)
    pipeline(args.sizes, shots=args.shots)


if __name__ == "__main__":
    main()
