"""Where a simulation's time goes (issue 33 item 4): Aer timed directly on the circuit the run
executes, for each method it could take and each thread count, beside the estimate's model.

Each OpenQASM file is compiled as the run compiles it (``compiled_as_run``, seed 1), its
device's Pauli noise written in (``PauliNoise``), and run by Aer with ``--shots`` shots on each
method of ``--methods`` at each of ``--threads`` (0: Aer's own choice, every core). Prints the
active qubits, the noisy circuit's instructions, CPU and wall seconds of each run, and the
model's CPU seconds for the method (``simulation_estimate``, one core). A method too large for
the machine (a density matrix beyond ``--max-dm`` qubits) is left out::

    python bench/aer_methods.py tests/data/corpus/qpe_8_m_q2.qasm --methods density_matrix \
        --threads 0,1
    python bench/aer_methods.py tests/data/corpus/qft_12_m_q3.qasm --shots 200 \
        --methods matrix_product_state,statevector

``--branching`` times the statevector twice more, with Aer's shot branching
(``shot_branching_enable``, and with ``shot_branching_sampling_enable``) beside it, each row
with the model's seconds for trajectories plain and branched (``costs.trajectories``: the
execute step's choice, said in the last column): what a dynamic circuit's trajectories (one
per shot) or a noisy one's save or lose::

    python bench/aer_methods.py tests/data/corpus/repcode_5_m_q2.qasm --methods statevector \
        --branching --shots 2000

``--binding N`` times Aer's batched parameter binding instead of the files: an ansatz from
``qiskit.circuit.library`` (``--ansatz``, ``--qubits``, ``--reps``) compiled once with its
parameters, the device's noise written in, run for N random parameter sets as N bound circuits
(what a stage submitting many circuits that differ only in their angles would send) and as the
one parameterized circuit with N ``parameter_binds``, each on the statevector with the
execute step's choice of shot branching (the N circuits' time counts their binding, ~0.5 ms
each), each mode timed twice (in the order ABBA); it checks that each set's mean Hamming weight
agrees between the two within shot noise and prints the CPU ratio::

    python bench/aer_methods.py --binding 32 --ansatz real_amplitudes --qubits 10 --shots 500

Timings on a shared machine: the CPU column moves less with the load than the wall column;
two threads on a machine whose other core is busy pay at every gate (docs/pipelines.md).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.backends.methods import SHOT_BRANCHING, active_qubits, job_trajectories
from llqm_qiskit.backends.mps import trial_bond
from llqm_qiskit.circuits import load_qasm
from llqm_qiskit.costs import simulation_estimate
from llqm_qiskit.devices.noise import PauliNoise
from llqm_qiskit.pipeline.steps import compiled_as_run
from qiskit import QuantumCircuit
from qiskit.circuit import library
from qiskit.result import Result
from qiskit_aer import AerSimulator

#: Aer's shot branching: the shots share one state until a measurement or noise draw splits them
#: (with sampling too: the execute step's choice for a dynamic circuit, ``SHOT_BRANCHING``).
BRANCHING = {"shot_branching_enable": True}
BRANCH_SAMPLING = SHOT_BRANCHING

#: The parameterized ansätze ``--binding`` builds, by their function's name in the library.
ANSATZE = ("real_amplitudes", "efficient_su2", "pauli_two_design")


def as_run_with_noise(path: Path, backend: AerBackend, noise: PauliNoise):
    """The OpenQASM file's circuit (measured, where it measures nothing) compiled as the run
    compiles it, and that with the device's noise written in."""
    circuit = load_qasm(path)
    if not circuit.num_clbits:
        circuit.measure_all()
    compiled = compiled_as_run(circuit, backend.device, seed=1)
    return compiled, noise.apply(compiled)


def mean_weights(result: Result, shots: int) -> list[tuple[float, float]]:
    """Each experiment's mean Hamming weight over its shots, with its standard error: what the
    two ways of running a batch must agree on within shot noise."""
    found = []
    for index in range(len(result.results)):
        weights = [(key.count("1"), count) for key, count in result.get_counts(index).items()]
        mean = sum(w * c for w, c in weights) / shots
        spread = sum((w - mean) ** 2 * c for w, c in weights) / max(shots - 1, 1)
        found.append((mean, (spread / shots) ** 0.5))
    return found


def bench_binding(args: argparse.Namespace, backend: AerBackend, noise: PauliNoise) -> None:
    """N bound copies of a noisy parameterized ansatz run as N circuits, against the one
    circuit with N parameter binds: the same instructions, Aer's work apart from the binding."""
    ansatz = getattr(library, args.ansatz)(args.qubits, reps=args.reps)
    ansatz.measure_all()
    compiled = compiled_as_run(ansatz, backend.device, seed=1)
    noisy = noise.apply(compiled)
    parameters = list(noisy.parameters)
    rng = numpy.random.default_rng(1)
    values = rng.uniform(0, 2 * numpy.pi, (args.binding, len(parameters)))
    cost = job_trajectories([compiled], args.shots, [noise.error_load(compiled)], [len(noisy.data)])
    options = {"max_parallel_threads": 1} | (SHOT_BRANCHING if cost.branching_pays else {})
    simulator = AerSimulator(method="statevector", **options)
    print(
        f"{args.ansatz}({args.qubits}, reps={args.reps}): {len(parameters)} parameters, "
        f"{len(compiled.data)} compiled gates, {len(noisy.data)} instructions with the noise, "
        f"{args.binding} parameter sets; shot branching "
        f"{'on' if cost.branching_pays else 'off'} (the execute step's choice)"
    )

    def timed(run) -> tuple[Result, float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        result = run()
        return result, time.process_time() - cpu, time.perf_counter() - wall

    def as_circuits() -> Result:
        bound: list[QuantumCircuit] = [
            noisy.assign_parameters(dict(zip(parameters, row))) for row in values
        ]
        return simulator.run(bound, shots=args.shots, seed_simulator=1).result()

    def as_binds() -> Result:
        binds = [{p: list(values[:, i]) for i, p in enumerate(parameters)}]
        return simulator.run(
            noisy, shots=args.shots, seed_simulator=1, parameter_binds=binds
        ).result()

    simulator.run(noisy.assign_parameters(values[0]), shots=1).result()  # Aer's first call
    modes = {"N bound circuits": as_circuits, "1 circuit, N binds": as_binds}
    cpu = dict.fromkeys(modes, 0.0)
    found: dict[str, Result] = {}
    for label in [*modes, *reversed(modes)]:  # each mode once before and once after the other
        result, spent, wall = timed(modes[label])
        cpu[label] += spent
        found[label] = result
        print(f"  {label:20s} cpu {spent:8.3f} s  wall {wall:8.3f} s", flush=True)
    circuits, binds = (found[label] for label in modes)
    scores = [
        abs(a - b) / max((sa**2 + sb**2) ** 0.5, 1e-12)
        for (a, sa), (b, sb) in zip(
            mean_weights(circuits, args.shots), mean_weights(binds, args.shots)
        )
    ]
    same = sum(circuits.get_counts(i) == binds.get_counts(i) for i in range(args.binding))
    verdict = "agree within shot noise" if max(scores) < 4 else "DISAGREE beyond shot noise"
    base, batched = cpu.values()
    print(
        f"  mean Hamming weight per set: largest difference {max(scores):.2f} standard errors "
        f"({verdict}; {same} of {args.binding} sets' counts identical); "
        f"binds / circuits CPU {batched / base:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--device", default="fake_fez")
    parser.add_argument("--shots", type=int, default=4000)
    parser.add_argument("--methods", default="density_matrix,statevector,matrix_product_state")
    parser.add_argument("--threads", default="1", help="comma-separated; 0: Aer's own choice")
    parser.add_argument("--max-dm", type=int, default=12, help="widest density matrix run")
    parser.add_argument("--branching", action="store_true", help="statevector with shot branching")
    parser.add_argument("--binding", type=int, default=0, help="N parameter sets: batched binding")
    parser.add_argument("--ansatz", default="real_amplitudes", choices=ANSATZE)
    parser.add_argument("--qubits", type=int, default=10, help="the ansatz's width (--binding)")
    parser.add_argument("--reps", type=int, default=2, help="the ansatz's repetitions (--binding)")
    args = parser.parse_args()
    if not args.files and not args.binding:
        parser.error("give OpenQASM files to time, or --binding N for N parameter sets.")
    backend = AerBackend(device=args.device)
    noise = PauliNoise(backend.snapshot())
    print(f"load average {os.getloadavg()[0]:.1f}; {args.shots} shots; device {args.device}")
    if args.binding:
        bench_binding(args, backend, noise)
    for path in args.files:
        compiled, noisy = as_run_with_noise(Path(path), backend, noise)
        width = active_qubits(compiled)
        bond = trial_bond(compiled).bond
        print(
            f"{Path(path).stem}: {width} active qubits, {len(compiled.data)} compiled gates, "
            f"{len(noisy.data)} instructions with the noise, trial bond dimension {bond}"
        )
        for method in args.methods.split(","):
            if method == "density_matrix" and width > args.max_dm:
                continue
            model = simulation_estimate(
                method, width, len(compiled.data), args.shots, 1, True, bond, bond_known=True
            )
            variants = [("", {})]
            chosen = ""
            if args.branching and method == "statevector":
                variants += [(" +branching", BRANCHING), (" +branch-sampling", BRANCH_SAMPLING)]
                cost = job_trajectories(
                    [compiled], args.shots, [noise.error_load(compiled)], [len(noisy.data)]
                )
                chosen = "  chosen: " + ("branching" if cost.branching_pays else "plain")
            for threads in (int(t) for t in args.threads.split(",")):
                for label, options in variants:
                    simulator = AerSimulator(method=method, max_parallel_threads=threads, **options)
                    wall, cpu = time.perf_counter(), time.process_time()
                    simulator.run(noisy, shots=args.shots, seed_simulator=1).result()
                    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                    modelled = model.wall_s
                    if chosen:  # the trajectories' model, plain or branched as the row runs
                        modelled = cost.branched_s if options else cost.plain_s
                    print(
                        f"  {method + label:38s} threads {threads or 'all':>3}  cpu {cpu:8.3f} s"
                        f"  wall {wall:8.3f} s  model {modelled:8.3f} s{chosen}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
