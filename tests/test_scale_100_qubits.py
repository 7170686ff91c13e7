"""The reference scale: 100-qubit circuits transpiled for a 156-qubit Heron r2 and run with 4,000 shots.

Seconds each with Stim, so they stay in the default run."""

from __future__ import annotations

import pytest
from llqm_qiskit import profiled_transpile
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.circuits import ghz, mirror
from llqm_qiskit.observables.expectation import ideal_outcomes

import llqm_core as llqm


@pytest.mark.parametrize(
    "circuit", [ghz(100), mirror(100, 4, seed=5)], ids=["ghz100", "mirror100x4"]
)
def test_a_100_qubit_circuit_transpiles_and_runs_4000_shots_on_the_embedded_default(
    store_path, circuit
):
    backend = AerBackend(device="fake_fez")
    with llqm.run(f"{circuit.name} at scale") as run:
        compiled = profiled_transpile(
            circuit, backend.device, optimization_level=1, seed_transpiler=7
        )
        counts = backend.execute(compiled, 4000, seed=3)
    assert sum(counts.values()) == 4000 and compiled.num_qubits == 156
    value = ideal_outcomes(circuit).expectation([counts])
    assert 0.0 <= value < 1.0  # noisy: 100 qubits on a real calibration lose most shots
    tasks = llqm.ProfileStore(store_path).tasks(run.id)
    simulate = next(t for t in tasks if t.stage == "execute.simulate")
    assert simulate.metrics["execute.method"] == "stim" and simulate.profile.wall_s < 60
    assert next(t for t in tasks if t.stage == "transpile").metrics["circuit.two_qubit_gates"] >= 99
