"""Inputs nobody tuned the estimates on (issue 33 item 4): Qiskit circuit-library families at two
widths each, exported as a user would (OpenQASM 2 of the circuit decomposed twice, or OpenQASM 3
of it as built), each with a pipeline file per technique on one of three fake devices.

Writes ``FAMILY_WIDTH.qasm`` and ``FAMILY_WIDTH_DEVICE_TECHNIQUE.toml`` into the directory;
then ``bench/predict.py`` gives each file's predicted / measured ratio::

    python bench/library_inputs.py /tmp/library
    python bench/predict.py --files /tmp/library/*.toml --timeout 120 --history-max 0
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from llqm_qiskit.circuits import load_qasm
from qiskit import QuantumCircuit, qasm2, qasm3
from qiskit.circuit.library import (
    efficient_su2,
    excitation_preserving,
    qaoa_ansatz,
    quantum_volume,
    real_amplitudes,
)
from qiskit.quantum_info import SparsePauliOp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "data"))
from make_corpus import grover  # noqa: E402  (the corpus's Grover: one builder of it)

TECHNIQUES = ("zne", "pec", "rem", "none")
DEVICES = ("fake_torino", "fake_sherbrooke", "fake_manila")  # manila: 5 qubits


def ring_qaoa(qubits: int) -> QuantumCircuit:
    edges = [("ZZ", [i, (i + 1) % qubits], 1.0) for i in range(qubits)]
    return qaoa_ansatz(SparsePauliOp.from_sparse_list(edges, qubits), reps=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    args.directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    families = {
        "realamp": (lambda n: real_amplitudes(n, reps=2), (4, 12)),
        "esu2": (lambda n: efficient_su2(n, reps=1), (5, 16)),
        "excpres": (lambda n: excitation_preserving(n, reps=1), (4, 8)),
        "qaoaring": (ring_qaoa, (5, 14)),
        "qv": (lambda n: quantum_volume(n, seed=int(rng.integers(1000))), (4, 7)),
        "grover": (lambda n: grover(n, "".join(map(str, rng.integers(0, 2, n)))), (3, 5)),
    }
    number = 0
    for family, (make, widths) in families.items():
        for width in widths:
            circuit = make(width)
            if circuit.num_parameters:
                values = rng.uniform(0, 2 * np.pi, circuit.num_parameters)
                circuit = circuit.assign_parameters(values)
            circuit.measure_all()
            path = args.directory / f"{family}_{width}.qasm"
            path.write_text(
                qasm3.dumps(circuit) if number % 2 else qasm2.dumps(circuit.decompose(reps=2))
            )
            load_qasm(path)  # as the pipeline will read it
            device = DEVICES[number % 3] if width <= 5 else DEVICES[number % 2]
            number += 1
            for technique in TECHNIQUES:
                (args.directory / f"{path.stem}_{device}_{technique}.toml").write_text(
                    f'[circuit]\nqasm = "{path.resolve()}"\n[backend]\nname = "aer"\n'
                    f'device = "{device}"\n[mitigation]\ntechnique = "{technique}"\n'
                )
            print(f"{path.name}: {width} qubits, {device}")


if __name__ == "__main__":
    main()
