"""A profiled GHZ pipeline written in plain Python, on the embedded default.

Generate -> transpile (a task per pass-manager stage) -> execute (the ``aer`` backend: noise
from fake_fez's calibration) -> postprocess, each an LLQM task, without a pipeline file or a
workflow engine. Run it, then look at the profile:

    python examples/ghz_pipeline.py --qubits 20 --shots 4000
    llqm report
"""

from __future__ import annotations

import argparse

from llqm_qiskit import profiled_transpile
from llqm_qiskit.circuits import ghz, ghz_success
from llqm_qiskit.devices.catalog import HERON_R2
from qiskit import QuantumCircuit

import llqm_core as llqm
from llqm_core.pipeline import registries


@llqm.task(stage="generate")
def build_ghz(qubits: int) -> QuantumCircuit:
    return ghz(qubits)


@llqm.task(stage="postprocess")
def ideal_probability(counts: dict[str, int]) -> float:
    probability = ghz_success(counts)
    llqm.annotate({"fidelity.p_ideal": probability})
    return probability


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, default=20)
    parser.add_argument("--shots", type=int, default=4000)
    parser.add_argument("--device", choices=HERON_R2, default="fake_fez")
    parser.add_argument("--optimization-level", type=int, choices=[0, 1, 2, 3], default=1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--store", default=None, help="profile store (default: $LLQM_STORE or ~/.local/share/llqm)"
    )
    args = parser.parse_args()
    backend = registries.create(
        "backend", "aer", device=args.device
    )  # as a pipeline file would name it
    if not 2 <= args.qubits <= backend.num_qubits:
        parser.error(f"--qubits must be between 2 and {backend.num_qubits} for {args.device}")

    with llqm.run(
        f"ghz-{args.qubits} on {args.device}", store=args.store, config=vars(args)
    ) as run:
        circuit = build_ghz(args.qubits)
        compiled = profiled_transpile(
            circuit,
            backend.device,
            optimization_level=args.optimization_level,
            seed_transpiler=args.seed,
        )
        counts = backend.execute(
            compiled, args.shots, seed=args.seed
        )  # an "execute" task with its snapshot
        probability = ideal_probability(counts)
    print(f"P(ideal GHZ outcome) = {probability:.3f} on {args.device}; run {run.id}")
    print("See the profile with: llqm report" + (f" --store {args.store}" if args.store else ""))


if __name__ == "__main__":
    main()
