"""A small profiled pipeline on the embedded default: a GHZ circuit on a fake IBM Heron r2.

Generate -> transpile (a task per pass-manager stage) -> execute (Aer's stabilizer method,
Pauli noise from the backend's calibration written into the circuit) -> postprocess, each
step an LLQM task. Run it, then look at the profile:

    python examples/ghz_pipeline.py --qubits 20 --shots 4000
    llqm report
"""

from __future__ import annotations

import argparse

from qiskit import QuantumCircuit
from qiskit_aer import AerSimulator
from qiskit_ibm_runtime import fake_provider

import llqm_core as llqm
from llqm_qiskit import ghz, ghz_success, hardware_snapshot, profiled_transpile
from llqm_qiskit.noise import PauliNoise

BACKENDS = {"fake_fez": "FakeFez", "fake_marrakesh": "FakeMarrakesh", "fake_kingston": "FakeKingston"}


@llqm.task(stage="generate")
def build_ghz(qubits: int) -> QuantumCircuit:
    return ghz(qubits)


@llqm.task(stage="execute")
def execute(circuit: QuantumCircuit, noise: PauliNoise, shots: int, seed: int) -> dict[str, int]:
    noisy = noise.apply(circuit)
    llqm.annotate({"noise.channels": noisy.count_ops().get("quantum_channel", 0)})
    result = AerSimulator(method="stabilizer").run(noisy, shots=shots, seed_simulator=seed).result()
    llqm.current_task().describe(result)
    llqm.annotate({"execute.method": result.results[0].metadata.get("method", "unknown")})
    return result.get_counts()


@llqm.task(stage="postprocess")
def ideal_probability(counts: dict[str, int]) -> float:
    probability = ghz_success(counts)
    llqm.annotate({"fidelity.p_ideal": probability, "result.shots": sum(counts.values())})
    return probability


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, default=20)
    parser.add_argument("--shots", type=int, default=4000)
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="fake_fez")
    parser.add_argument("--optimization-level", type=int, choices=[0, 1], default=1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--store", default=None, help="profile store (default: $LLQM_STORE or ~/.local/share/llqm)")
    args = parser.parse_args()
    backend = getattr(fake_provider, BACKENDS[args.backend])()
    if not 2 <= args.qubits <= backend.num_qubits:
        parser.error(f"--qubits must be between 2 and {backend.num_qubits} for {args.backend}")

    with llqm.run(f"ghz-{args.qubits} on {args.backend}", store=args.store, config=vars(args)) as run:
        with llqm.task("calibration snapshot", stage="backend.snapshot") as t:
            snapshot = hardware_snapshot(backend)
            t.use_hardware(snapshot)
        with llqm.task("noise model", stage="backend.noise_model") as t:
            # Pauli channels from the calibration, written into the circuit: fast on the stabilizer method.
            noise = PauliNoise(snapshot)
            t.annotate({"noise.gates_with_error": noise.noisy_gates})
        circuit = build_ghz(args.qubits)
        # A "transpile" task with one child task per pass-manager stage (transpile.layout, ...).
        compiled = profiled_transpile(circuit, backend, optimization_level=args.optimization_level, seed_transpiler=args.seed)
        counts = execute(compiled, noise, args.shots, args.seed)
        probability = ideal_probability(counts)
    print(f"P(ideal GHZ outcome) = {probability:.3f} on {args.backend}; run {run.id}")
    print("See the profile with: llqm report" + (f" --store {args.store}" if args.store else ""))


if __name__ == "__main__":
    main()
