"""Aer's shot branching, taken where its model says it pays: shallow noisy circuits, whose shots
share a state for most of the circuit, run it; deep ones, whose noise splits nearly every shot
(6-12x slower branched, docs/pipelines.md "Shot branching"), do not. The check's estimate and
its execution line count it as the run chooses it."""

from __future__ import annotations

from conftest import ROOT
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.circuits import load_qasm
from llqm_qiskit.costs import simulation_estimate, trajectories
from llqm_qiskit.pipeline.steps import compiled_as_run

CORPUS = ROOT / "tests" / "data" / "corpus"


def _compiled(name: str, backend: AerBackend):
    return compiled_as_run(load_qasm(CORPUS / f"{name}.qasm"), backend.device, seed=1)


def test_the_run_branches_a_shallow_wide_noisy_circuit_and_not_a_deep_one():
    backend = AerBackend(device="fake_fez", method="statevector")
    shallow = _compiled("random_12x5_m_q3", backend)  # 0.05 errors a shot expected
    deep = _compiled("qpe_8_m_q2", backend)  # 1.7 errors a shot: nearly every shot splits
    outcome = backend.simulate([shallow], 300, 1, backend.snapshot())
    assert outcome.metrics["execute.shot_branching"] is True
    assert sum(outcome.counts[0].values()) == 300
    outcome = backend.simulate([deep], 50, 1, backend.snapshot())
    assert outcome.metrics["execute.shot_branching"] is False
    assert (
        outcome.metrics["execute.shot_branching.modelled_s"]
        > 3 * outcome.metrics["execute.shot_branching.plain_modelled_s"]
    )


def test_the_check_names_the_option_and_its_modelled_gain_or_why_not():
    backend = AerBackend(device="fake_fez")
    shallow = _compiled("random_12x5_m_q3", backend)
    said = backend.plan_method(shallow, 4000)
    assert said.startswith("statevector (a trajectory per shot, since the circuit is noisy")
    assert "with Aer's shot branching, modelled" in said and "without (x" in said
    deep = _compiled("qpe_8_m_q2", backend)
    assert "without Aer's shot branching" in AerBackend(
        device="fake_fez", method="statevector"
    ).plan_method(deep, 4000)


def test_the_estimate_counts_the_saving_only_where_the_errors_are_known():
    plain = simulation_estimate("statevector", 12, 80, 4000, 1, True)
    known = simulation_estimate("statevector", 12, 80, 4000, 1, True, error_per_gate=5e-4)
    assert known.wall_s < plain.wall_s / 2 and "shot branching" in known.basis
    assert "shot branching" not in plain.basis
    # a deep circuit's noise splits the shots: the estimate keeps plain trajectories
    deep = simulation_estimate("statevector", 8, 2300, 4000, 1, True, error_per_gate=7.6e-4)
    unknown = simulation_estimate("statevector", 8, 2300, 4000, 1, True)
    assert deep.wall_s == unknown.wall_s and "shot branching" not in deep.basis


def test_branches_grow_with_the_errors_and_the_mid_circuit_measurements():
    few = trajectories(6, 200, 1000, 0.01)
    many = trajectories(6, 200, 1000, 5.0)
    assert few.branching_pays and not many.branching_pays
    assert few.plain_s == many.plain_s  # plain trajectories cost the same, whatever the noise
    measured = trajectories(6, 200, 1000, 0.01, mid_circuit=3)
    assert measured.branched_s > few.branched_s
