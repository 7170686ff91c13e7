"""Under a budget, the mitigation predicted to leave the lowest error from similar past runs is chosen,
and the report sets the prediction beside the measured error."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

import llqm_core as llqm
from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline, registries, run_pipeline


def config(mitigation: dict, policies: dict | None = None, qubits: int = 5) -> dict:
    return {
        "name": f"ghz-{qubits} {mitigation['technique']}",
        "circuit": {"kind": "ghz", "qubits": qubits},
        "backend": {"name": "aer", "device": "fake_fez"},
        "transpile": {"optimization_level": 0, "seed": 7},
        "mitigation": mitigation,
        "execution": {"shots": 1000, "seed": 1},
        "policies": policies or {"names": []},
    }


ZNE = {"technique": "zne", "zne": {"scale_factors": [1, 3, 5], "factory": "linear"}}
REM = {"technique": "rem"}
NONE = {"technique": "none"}


@pytest.fixture
def history(store_path):
    for mitigation in (NONE, REM, ZNE):
        for qubits in (4, 5):
            run_pipeline(parse_pipeline(config(mitigation, qubits=qubits)), store=store_path)
    return store_path


def errors_by_technique(store_path) -> dict[str, float]:
    store = llqm.ProfileStore(store_path, readonly=True)
    found: dict[str, list[float]] = {}
    for run in store.runs():
        report = json.loads(run_cli("--store", str(store_path), "report", run.id, "--json").stdout)
        found.setdefault(run.config["mitigation"]["technique"], []).append(
            report["fidelity"]["error_mitigated"]
        )
    return {k: sum(v) / len(v) for k, v in found.items()}


def test_the_best_affordable_technique_is_chosen_and_its_prediction_reported(history):
    best_of_all = min(errors_by_technique(history).items(), key=lambda kv: kv[1])[0]
    policies = {"names": ["budgeted_mitigation"], "budgeted_mitigation": {"budget_shots": 10_000}}
    run_id, data = run_pipeline(parse_pipeline(config(NONE, policies)), store=history)
    store = llqm.ProfileStore(history)
    (decision,) = store.decisions(run_id)
    assert decision.choice["technique"] == best_of_all
    assert any(
        t.stage == f"mitigate.{best_of_all}" for t in store.tasks(run_id)
    )  # the choice ran, not the file's
    report = json.loads(run_cli("--store", str(history), "report", run_id, "--json").stdout)
    row = next(r for r in report["predictions"] if r["stage"] == "mitigated error")
    assert row["predicted"] == pytest.approx(decision.inputs["predicted_error"])
    assert row["measured"] == pytest.approx(data["fidelity"]["fidelity.error_mitigated"])


def test_on_the_prefect_engine_the_chosen_technique_runs_as_its_own_task(prefect_server, history):
    policies = {"names": ["budgeted_mitigation"], "budgeted_mitigation": {"budget_shots": 1500}}
    run_id, _ = run_pipeline(
        parse_pipeline({**config(ZNE, policies), "run": {"engine": "prefect"}}), store=history
    )
    store = llqm.ProfileStore(history)
    (decision,) = store.decisions(run_id)
    stages = {t.stage for t in store.tasks(run_id)}
    assert (
        decision.choice["technique"] == "none" and store.run(run_id).config["engine"] == "prefect"
    )
    assert (
        "mitigate.none" in stages and "mitigate.zne" not in stages
    )  # the flow ran the choice, not the file's


def test_a_tight_budget_rules_out_the_costly_techniques(history):
    policies = {"names": ["budgeted_mitigation"], "budgeted_mitigation": {"budget_shots": 1500}}
    run_id, _ = run_pipeline(parse_pipeline(config(ZNE, policies)), store=history)
    (decision,) = llqm.ProfileStore(history).decisions(run_id)
    assert (
        decision.choice["technique"] == "none"
    )  # 1000 shots fit; REM (3000) and ZNE (3000) do not
    assert decision.inputs["predicted_shots"] <= 1500


@pytest.mark.parametrize(
    "options, message",
    [
        ({}, "needs budget_shots or budget_qpu_s"),
        ({"budget_shots": 0}, "budget_shots must be a positive number"),
        ({"budget_qpu_s": 5, "similarity": 0.5}, "similarity must be a number of 1 or more"),
    ],
)
def test_bad_budget_options_get_one_sentence(options, message):
    with pytest.raises(UserError, match=message):
        registries.create("policy", "budgeted_mitigation", **options)
