"""The cost model predicts each stage from stored runs, and the report sets its prediction beside
the measurement."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

import llqm_core as llqm
from llqm_core.pipeline import parse_pipeline, run_pipeline


def config(qubits: int, policies: list[str] | None = None) -> dict:
    return {
        "name": f"ghz-{qubits}",
        "circuit": {"kind": "ghz", "qubits": qubits},
        "backend": {"name": "aer", "device": "fake_fez"},
        "transpile": {"optimization_level": 1, "seed": 7},
        "execution": {"shots": 300, "seed": 1},
        "policies": {"names": policies or []},
    }


@pytest.fixture
def history(store_path):
    for qubits in (12, 16, 20, 24, 28):
        run_pipeline(parse_pipeline(config(qubits)), store=store_path)
    return store_path


def test_predict_estimates_each_stage_from_the_stored_runs(history, tmp_path):
    pipeline = tmp_path / "next.toml"
    pipeline.write_text(
        '[circuit]\nkind = "ghz"\nqubits = 22\n[transpile]\noptimization_level = 1\nseed = 7\n'
        "[execution]\nshots = 300\n"
    )
    done = run_cli("--store", str(history), "predict", str(pipeline), "--json")
    assert done.returncode == 0, done.stderr
    predicted = json.loads(done.stdout)
    assert predicted["runs_used"] == 5 and predicted["features"]["circuit.qubits"] == 22
    stages = predicted["stages"]
    assert {"generate", "transpile", "mitigate.none", "execute"} <= set(stages)
    assert all(s["wall_s"] >= 0 and s["peak_rss_bytes"] > 0 for s in stages.values())
    store = llqm.ProfileStore(history, readonly=True)
    measured = [
        t.profile.wall_s
        for r in store.runs()
        for t in store.tasks(r.id)
        if t.stage == "mitigate.none"
    ]
    assert (
        min(measured) / 3 < stages["mitigate.none"]["wall_s"] < 3 * max(measured)
    )  # in the range it learnt from
    assert len(store.runs()) == 5  # predicting runs nothing


def test_a_pipeline_with_the_cost_model_reports_prediction_error(history):
    run_id, _ = run_pipeline(parse_pipeline(config(18, ["cost_model"])), store=history)
    report = json.loads(run_cli("--store", str(history), "report", run_id, "--json").stdout)
    (decision,) = report["decisions"]
    assert decision["policy"] == "cost_model" and decision["inputs"]["runs_used"] == 5
    rows = {row["stage"]: row for row in report["predictions"]}
    assert rows["transpile"]["measured"] > 0 and rows["transpile"]["relative_error"] is not None
    assert (
        "Predicted before the run vs measured"
        in run_cli("--store", str(history), "report", run_id).stdout
    )


def test_predicting_without_history_or_with_a_policy_that_cannot_is_refused(store_path, tmp_path):
    pipeline = tmp_path / "p.toml"
    pipeline.write_text('[circuit]\nkind = "ghz"\nqubits = 4\n')
    run_pipeline(
        parse_pipeline({"circuit": {"kind": "ghz", "qubits": 3}, "execution": {"shots": 10}}),
        store=store_path,
    )
    wrong = run_cli(
        "--store", str(store_path), "predict", str(pipeline), "--model", "hardware_layout"
    )
    assert wrong.returncode == 2 and "does not predict costs" in wrong.stderr
    empty = tmp_path / "empty.sqlite"
    llqm.ProfileStore(empty).close()
    none = run_cli("--store", str(empty), "predict", str(pipeline))
    assert none.returncode == 2 and "no completed pipeline runs to learn from" in none.stderr
