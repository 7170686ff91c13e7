"""The noisy MPS model's constants refitted to Aer on the corpus's MPS circuits (issue 33 item 4):
each file compiled as the run compiles it, its device's Pauli noise written in, and run by Aer's
``matrix_product_state`` method on one thread; the model (``costs.mps_seconds``: per gate and
shot, per qubit and shot, per two-qubit gate and shot x chi^3) fitted to the CPU seconds per
shot by non-negative least squares on relative errors, so that a short circuit weighs as much as
a long one. Prints each file's measured and modelled seconds per shot with the constants in
``costs`` and with the fitted ones, and what the check's few timed shots of the circuit
(``mps.noisy_shot_seconds``, which the check scales the model by) give against the measure::

    python bench/mps_fit.py tests/data/corpus/{qft_12_m_q3,wstate_40_q3,...}.qasm [--seconds 3]

Each file runs about ``--seconds`` of CPU (its shots chosen from a first 10-shot run). Take the
figures on a quiet machine: the constants are one idle core's CPU seconds.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from aer_methods import as_run_with_noise  # bench/aer_methods.py
from llqm_qiskit import costs
from llqm_qiskit.backends.aer import AerBackend, active_qubits
from llqm_qiskit.backends.mps import noisy_shot_seconds, trial_bond
from llqm_qiskit.devices.noise import PauliNoise
from qiskit_aer import AerSimulator
from scipy.optimize import nnls


def cpu_per_shot(noisy, shots: int) -> float:
    simulator = AerSimulator(method="matrix_product_state", max_parallel_threads=1)
    started = time.process_time()
    simulator.run(noisy, shots=shots, seed_simulator=1).result()
    return (time.process_time() - started) / shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--device", default="fake_fez")
    parser.add_argument("--seconds", type=float, default=3.0, help="CPU seconds per file")
    args = parser.parse_args()
    backend = AerBackend(device=args.device)
    noise = PauliNoise(backend.snapshot())
    print(f"load average {os.getloadavg()[0]:.1f}; device {args.device}; one thread")
    rows, measured, names, timed = [], [], [], []
    for path in args.files:
        compiled, noisy = as_run_with_noise(Path(path), backend, noise)
        gates = len(compiled.data)
        twos = sum(1 for i in compiled.data if len(i.qubits) == 2)
        qubits, bond = active_qubits(compiled), trial_bond(compiled).bond
        first = cpu_per_shot(noisy, 10)
        shots = max(10, min(4000, int(args.seconds / max(first, 1e-6))))
        per_shot = cpu_per_shot(noisy, shots)
        timed.append(noisy_shot_seconds(noisy, bond))
        rows.append((gates, qubits, twos * bond**3))
        measured.append(per_shot)
        names.append(f"{Path(path).stem} ({qubits} q, {gates} gates, {twos} 2q, chi {bond})")
        print(f"  {names[-1]}: {per_shot * 1e3:.3f} ms per shot ({shots} shots)", flush=True)
    design, target = np.array(rows, dtype=float), np.array(measured)
    fitted, _ = nnls(design / target[:, None], np.ones(len(target)))
    now = np.array(
        [costs.MPS_S_PER_GATE_SHOT, costs.MPS_S_PER_QUBIT_SHOT, costs.MPS_S_PER_TWO_QUBIT_CHI3]
    )
    print("constants: per gate and shot, per qubit and shot, per two-qubit gate x chi^3 and shot")
    print(f"  in costs: {now[0]:.3g} {now[1]:.3g} {now[2]:.3g}")
    print(f"  fitted:   {fitted[0]:.3g} {fitted[1]:.3g} {fitted[2]:.3g}")
    print(
        "model / measured, with the constants in costs and with the fitted ones; the check's"
        " few timed shots (mps.noisy_shot_seconds) / measured:"
    )
    for name, row, value, trial in zip(names, design, target, timed):
        print(f"  {name}: {row @ now / value:.2f}  {row @ fitted / value:.2f}  {trial / value:.2f}")


if __name__ == "__main__":
    main()
