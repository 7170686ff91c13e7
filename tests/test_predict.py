"""The cost model predicts each stage from stored runs, and the report sets its prediction beside
the measurement."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

import llqm_core as llqm
from llqm_core.analysis.report import build_report
from llqm_core.pipeline import parse_pipeline, run_pipeline
from llqm_core.pipeline.shapes import changes_work


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


def small(qubits: int, **changes) -> dict:
    return config(qubits) | {"execution": {"shots": 100, "seed": 1}} | changes


def test_predictions_come_only_from_runs_of_the_same_shape(store_path, tmp_path, capsys):
    from llqm_core.cli import main

    for qubits in (3, 4, 5, 6):
        run_pipeline(parse_pipeline(small(qubits)), store=store_path)
    pec = small(3, mitigation={"technique": "pec", "pec": {"samples": 10}})
    run_pipeline(parse_pipeline(pec), store=store_path)  # another shape in the same store
    plain = tmp_path / "plain.toml"
    plain.write_text(
        '[circuit]\nkind = "ghz"\nqubits = 5\n[transpile]\noptimization_level = 1\nseed = 7\n'
        "[execution]\nshots = 100\n"
    )
    assert main(["--store", str(store_path), "predict", str(plain), "--json"]) == 0
    predicted = json.loads(capsys.readouterr().out)
    assert predicted["runs_used"] == 4 and predicted["runs_stored"] == 5
    assert not changes_work("cost_model") and changes_work("hardware_layout")
    assert predicted["shape"] == {
        "technique": "none",
        "backend": "aer",
        "observable": "default",
        "policies": [],
    }
    assert not [s for s in predicted["stages"] if s.startswith("mitigate.pec")]
    execute = predicted["stages"]["execute"]
    assert execute["runs"] == 4 and {"wall_s", "cpu_s", "qpu_s", "queue_s"} <= set(execute)
    assert not predicted["outside"] and predicted["closest"]["gates_ratio"] == 1.0
    assert main(["--store", str(store_path), "predict", str(plain)]) == 0
    text = capsys.readouterr().out
    assert "Predicted from 4 earlier runs of the same shape" in text and "How close:" in text

    zne = tmp_path / "zne.toml"
    zne.write_text(plain.read_text() + '[mitigation]\ntechnique = "zne"\n')
    assert main(["--store", str(store_path), "predict", str(zne)]) == 0
    answer = capsys.readouterr().out
    assert "no comparable history: none of the 5 completed pipeline runs" in answer
    assert "mitigate.pec" not in answer and "execute" not in answer


def test_on_a_modelled_qpu_qpu_and_queue_seconds_are_predicted(store_path):
    backend = {"name": "modelled_qpu", "device": "fake_fez", "time_scale": 0.0}
    for qubits in (3, 4, 5, 6):
        run_pipeline(parse_pipeline(small(qubits, backend=backend)), store=store_path)
    predicting = small(5, backend=backend, policies={"names": ["cost_model"]})
    run_id, _ = run_pipeline(parse_pipeline(predicting), store=store_path)
    store = llqm.ProfileStore(store_path)
    (decision,) = store.decisions(run_id)
    execute = decision.choice["stages"]["execute"]
    assert execute["qpu_s"] > 2.0 and execute["queue_s"] > 0  # one job: IBM's 2 s overhead
    assert decision.inputs["runs_used"] == 4 and "same shape" in decision.rationale
    report = build_report(store, run_id)
    rows = {row["stage"] for row in report["predictions"]}
    assert {"execute", "execute (QPU)", "execute (queue)"} <= rows
