"""PEC with LLQM against Mitiq's ``execute_with_pec``, the same samples, side by side in one run.

Both mitigate the same small circuit (a GHZ on fake_fez, parity of its first two bits) on the
embedded default, with the same representations (from the calibration), the same number of
samples and the same shots per sampled circuit:

- baseline: ``execute_with_pec`` with an executor that transpiles each sampled circuit and runs
  it as its own job (the usual way);
- LLQM: the ``pec`` pipeline with the ``transpile_cache`` policy: samples drawn in chunks,
  each distinct circuit transpiled once, all of them in one job.

Prints each wall time, estimate and error, and the wall-time ratio (issue #6 target: at least
1.5x less wall time):

    python bench/pec.py [--qubits 3] [--samples 200] [--shots-per-sample 50]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from llqm_mitiq.pec.noise import calibrated_noise_levels, represent
from llqm_policies.cache import clear as clear_cache
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.circuits import ghz
from llqm_qiskit.observables.expectation import ideal_parity, parity
from mitiq.pec import execute_with_pec
from qiskit import transpile

import llqm_core
from llqm_core.pipeline import parse_pipeline, run_pipeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, default=3)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--shots-per-sample", type=int, default=50)
    args = parser.parse_args()
    store = Path(tempfile.mkdtemp(prefix="llqm-bench-")) / "pec.sqlite"
    bits = [0, 1]
    config = {
        "name": f"pec ghz-{args.qubits}",
        "circuit": {"kind": "ghz", "qubits": args.qubits},
        "observable": {"kind": "parity", "bits": bits},
        "backend": {"name": "aer", "device": "fake_fez"},
        "transpile": {"optimization_level": 0, "layout_method": "sabre", "seed": 7},
        "mitigation": {
            "technique": "pec",
            "pec": {"samples": args.samples, "seed": 11, "shots_per_sample": args.shots_per_sample},
        },
        "execution": {"shots": args.samples * args.shots_per_sample, "seed": 1},
        "policies": {"names": ["transpile_cache"]},
    }
    run_pipeline(
        parse_pipeline(config | {"name": "warm-up"}), store=store
    )  # imports and first calls
    clear_cache()  # the timed run starts with an empty transpile cache
    started = time.perf_counter()
    run_id, data = run_pipeline(parse_pipeline(config), store=store)
    ours_s = time.perf_counter() - started

    backend = AerBackend(device="fake_fez")
    circuit = ghz(args.qubits)
    observable = parity(bits)
    started = time.perf_counter()
    compiled = transpile(
        circuit, backend.device, optimization_level=0, layout_method="sabre", seed_transpiler=7
    )
    representations, _ = represent(circuit, calibrated_noise_levels(compiled, backend.snapshot()))
    layout = compiled.layout.initial_index_layout(filter_ancillas=True)

    def executor(sampled) -> float:  # one sampled circuit: one transpile, one job
        job = transpile(
            sampled, backend.device, optimization_level=0, initial_layout=layout, seed_transpiler=7
        )
        return observable.expectation([backend.execute(job, args.shots_per_sample, seed=1)])

    with llqm_core.run("pec baseline: execute_with_pec", store=store):
        theirs = execute_with_pec(
            circuit,
            executor,
            representations=representations,
            num_samples=args.samples,
            random_state=np.random.RandomState(11),
        )
    theirs_s = time.perf_counter() - started
    ideal = ideal_parity(circuit, bits)
    print(
        f"execute_with_pec  wall {theirs_s:6.2f} s   estimate {theirs:.4f}   error {abs(theirs - ideal):.4f}"
    )
    print(
        f"LLQM pipeline     wall {ours_s:6.2f} s   estimate {data['value']:.4f}   error "
        f"{abs(data['value'] - ideal):.4f}"
        f"   run {run_id[:12]}"
    )
    print(f"wall time, baseline / LLQM: {theirs_s / ours_s:.1f}x   (target >= 1.5x)")


if __name__ == "__main__":
    main()
