"""Batches whose serial transpile would take long are transpiled by worker processes, judged from history."""

from __future__ import annotations

import os

import pytest
from llqm_qiskit.circuits import ghz

import llqm_core as llqm
from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline, registries, run_pipeline


def config(policies: dict) -> dict:
    return {
        "circuit": {"kind": "mirror", "qubits": 12, "depth": 8, "seed": 3},
        "backend": {"name": "aer", "device": "fake_fez"},
        "transpile": {"optimization_level": 0, "seed": 7},
        "mitigation": {
            "technique": "zne",
            "zne": {"scale_factors": [1, 3, 5], "factory": "linear", "folding": "global"},
        },
        "execution": {"shots": 200, "seed": 1},
        "policies": policies,
    }


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two CPUs to run workers side by side")
def test_folded_circuits_go_to_worker_processes_when_history_says_it_pays(store_path):
    run_pipeline(
        parse_pipeline(config({"names": []})), store=store_path
    )  # history: serial transpiles
    policies = {"names": ["parallel_transpile"], "parallel_transpile": {"min_serial_s": 0.0}}
    run_id, data = run_pipeline(parse_pipeline(config(policies)), store=store_path)
    store = llqm.ProfileStore(store_path)
    (decision,) = store.decisions(run_id)
    assert decision.choice["processes"] >= 2 and decision.inputs["predicted_serial_s"] > 0
    tasks = store.tasks(run_id)
    zne = next(t for t in tasks if t.stage == "mitigate.zne")
    parallel = next(t for t in tasks if t.stage == "transpile" and t.parent_id == zne.id)
    assert parallel.metrics["transpile.processes"] == decision.choice["processes"]
    assert not [t for t in tasks if t.parent_id == parallel.id]  # the stages ran in the workers
    assert parallel.metrics["circuits"] == 3 and "fidelity.mitigated" in data["fidelity"]


def test_no_history_or_a_single_circuit_means_no_workers(store_path):
    policy = registries.create("policy", "parallel_transpile", min_serial_s=0.0)
    with llqm.run("fresh store"):
        fresh = policy.decide(circuits=[ghz(3), ghz(4)])  # nothing learnt yet
        assert not fresh.choice and "no earlier transpile task" in fresh.rationale
        single = policy.decide(circuits=[ghz(3)])
        assert not single.choice and single.rationale.startswith("kept the default because")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"max_workers": 0}, "max_workers must be a whole number of 1 or more"),
        ({"min_serial_s": -1}, "min_serial_s must be a number of seconds of 0 or more"),
    ],
)
def test_bad_parallel_options_get_one_sentence(options, message):
    with pytest.raises(UserError, match=message):
        registries.create("policy", "parallel_transpile", **options)
