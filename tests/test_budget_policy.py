"""Under a budget, the mitigation predicted to leave the lowest error from similar past runs is chosen,
and the report sets the prediction beside the measured error."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

import llqm_core as llqm
from llqm_core.model.errors import LLQMWarning, UserError
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
    decision, review = store.decisions(run_id)
    assert decision.choice["technique"] == best_of_all
    assert review.choice == {"budget": "met"} and "the run kept its budget" in review.rationale
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
    decision, _ = store.decisions(run_id)
    stages = {t.stage for t in store.tasks(run_id)}
    assert (
        decision.choice["technique"] == "none" and store.run(run_id).config["engine"] == "prefect"
    )
    assert (
        "mitigate.none" in stages and "mitigate.zne" not in stages
    )  # the flow ran the choice, not the file's


def replacing(pipeline) -> list[str]:
    """The check's notes that say the budget policy will replace the file's mitigation."""
    return [n for n in pipeline.notes if n.startswith("policy budgeted_mitigation will replace")]


def test_a_tight_budget_rules_out_the_costly_techniques(history):
    policies = {"names": ["budgeted_mitigation"], "budgeted_mitigation": {"budget_shots": 1500}}
    pipeline = parse_pipeline(config(ZNE, policies), store=str(history))
    (said,) = replacing(pipeline)  # llqm run --check says so before anything runs
    assert said.startswith(
        "policy budgeted_mitigation will replace [mitigation] technique = 'zne' with 'none'"
    )
    run_id, _ = run_pipeline(pipeline, store=history)
    decision, _ = llqm.ProfileStore(history).decisions(run_id)
    assert (
        decision.choice["technique"] == "none"
    )  # 1000 shots fit; REM (3000) and ZNE (3000) do not
    assert decision.inputs["predicted_shots"] <= 1500


def budgeted(options: dict) -> dict:
    return {"names": ["budgeted_mitigation"], "budgeted_mitigation": options}


def test_a_budget_the_run_itself_cannot_fit_is_refused_when_the_file_is_checked():
    with pytest.raises(
        UserError, match=r"unmitigated execution alone takes 1,000 shots .* over budget_shots = 800"
    ):
        parse_pipeline(config(ZNE, budgeted({"budget_shots": 800})))
    parse_pipeline(config(ZNE, budgeted({"budget_shots": 800, "on_overspend": "warn"})))


def test_with_nothing_affordable_known_an_over_budget_mitigation_is_not_run(store_path):
    """ZNE's three scale factors at 1,000 shots plan 3,000 shots: over 2,500, with no history;
    the check says so, and says nothing of a file whose mitigation fits."""
    pipeline = parse_pipeline(config(ZNE, budgeted({"budget_shots": 2500})), store=str(store_path))
    (said,) = replacing(pipeline)
    assert "with 'none'" in said and "500 over budget_shots = 2,500" in said
    assert not store_path.exists()  # the check stored nothing
    fits = parse_pipeline(config(ZNE, budgeted({"budget_shots": 3000})), store=str(store_path))
    assert not replacing(fits)
    run_id, data = run_pipeline(pipeline, store=store_path)
    store = llqm.ProfileStore(store_path)
    chosen, review = store.decisions(run_id)
    assert chosen.choice["technique"] == "none"
    assert (
        "the file's zne would spend 3,000 shots, 500 over budget_shots = 2,500" in chosen.rationale
    )
    assert review.choice == {"budget": "met"} and review.inputs["spent_shots"] == 1000
    stages = {t.stage for t in store.tasks(run_id)}
    assert "mitigate.none" in stages and "mitigate.zne" not in stages
    assert {"policy.budgeted_mitigation"} <= stages and not data["warnings"]


def test_overspending_on_request_runs_with_a_warning_saying_by_how_much(store_path):
    options = {"budget_shots": 2500, "on_overspend": "warn"}
    with pytest.warns(LLQMWarning, match="budget exceeded: 3,000 shots spent, 500 \\(20%\\) over"):
        run_id, _ = run_pipeline(parse_pipeline(config(ZNE, budgeted(options))), store=store_path)
    report = json.loads(run_cli("--store", str(store_path), "report", run_id, "--json").stdout)
    assert any("500 (20%) over budget_shots = 2,500" in w for w in report["warnings"])
    kept, review = report["decisions"]
    assert kept["choice"] == {} and "it runs anyway" in kept["rationale"]
    assert review["choice"] == {"budget": "exceeded"} and review["inputs"]["spent_shots"] == 3000


@pytest.mark.parametrize(
    "options, message",
    [
        ({}, "needs budget_shots or budget_qpu_s"),
        ({"budget_shots": 0}, "budget_shots must be a positive number"),
        ({"budget_qpu_s": 5, "similarity": 0.5}, "similarity must be a number of 1 or more"),
        ({"budget_shots": 5, "on_overspend": "yes"}, "on_overspend must be one of: refuse, warn"),
    ],
)
def test_bad_budget_options_get_one_sentence(options, message):
    with pytest.raises(UserError, match=message):
        registries.create("policy", "budgeted_mitigation", **options)


#: ZZ and XX on the same qubits do not commute qubit-wise: two groups, two circuits per execution.
TWO_BASES = {"kind": "pauli", "terms": [["IIIZZ", 1.0], ["IIIXX", 0.5]]}


def test_a_pauli_sum_counts_every_group_s_circuit_in_the_planned_shots(store_path):
    """ZNE's 3 scale factors at 1,000 shots in 2 bases plan 6,000 shots: over 4,000, so the run
    goes unmitigated and spends 2,000 (both bases), within the budget."""
    run_id, _ = run_pipeline(
        parse_pipeline({**config(ZNE, budgeted({"budget_shots": 4000})), "observable": TWO_BASES}),
        store=store_path,
    )
    chosen, review = llqm.ProfileStore(store_path).decisions(run_id)
    assert chosen.inputs["planned_shots"] == 6000 and chosen.choice["technique"] == "none"
    assert "the file's zne would spend 6,000 shots" in chosen.rationale
    assert review.choice == {"budget": "met"} and review.inputs["spent_shots"] == 2000


def test_a_pauli_sum_s_bases_count_when_the_file_is_checked():
    with pytest.raises(UserError, match=r"unmitigated execution alone takes 2,000 shots"):
        parse_pipeline({**config(NONE, budgeted({"budget_shots": 1500})), "observable": TWO_BASES})
    parse_pipeline({**config(NONE, budgeted({"budget_shots": 1500}))})
