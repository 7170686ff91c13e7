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


def small_file(tmp_path, qubits: int = 5) -> tuple[dict, object]:
    """A pipeline file and its config: the same work as ``small``'s runs."""
    work = small(qubits)
    path = tmp_path / "next.toml"
    path.write_text(
        f'[circuit]\nkind = "ghz"\nqubits = {qubits}\n[backend]\nname = "aer"\n'
        'device = "fake_fez"\n[transpile]\noptimization_level = 1\nseed = 7\n'
        "[execution]\nshots = 100\nseed = 1\n[policies]\nnames = []\n"
    )
    return work, path


@pytest.fixture
def covering(store_path):
    """Three runs of the file ``small_file`` writes: history that covers it."""
    for _ in range(3):
        run_pipeline(parse_pipeline(small(5)), store=store_path)
    return store_path


def test_predict_and_check_print_the_same_figures_for_one_file_and_store(
    covering, tmp_path, capsys, monkeypatch
):
    """One estimator: ``llqm predict`` is ``llqm run --check``'s estimate, figure for figure,
    with the stored runs that cover the file giving its steps' times."""
    from llqm_core.cli import main
    from llqm_core.pipeline import fit

    monkeypatch.setattr(fit, "machine_slowdown", lambda: 1.0)  # the load, read once for both
    rss = fit.current_rss()  # and the process's memory: a step's modelled peak starts from it,
    monkeypatch.setattr(
        fit, "current_rss", lambda: rss
    )  # which decides whether history's is higher
    _, path = small_file(tmp_path)
    store = ["--store", str(covering)]
    assert main([*store, "run", "--check", str(path)]) == 0  # the process's warm-ups paid
    capsys.readouterr()
    answers = []
    for command in (["run", "--check"], ["predict"]):
        assert main([*store, *command, str(path), "--json"]) == 0
        answers.append(json.loads(capsys.readouterr().out))
    checked, predicted = answers
    assert [s["step"] for s in checked["steps"]] == [s["step"] for s in predicted["steps"]]
    for a, b in zip(checked["steps"], predicted["steps"]):
        assert a["basis"] == b["basis"] and "time from 3 earlier runs" in a["basis"]
        assert a["wall_s"] == pytest.approx(b["wall_s"], rel=1e-9)
        assert a["wall_error"] == b["wall_error"] and a["peak_error"] == b["peak_error"]
        assert a["peak_bytes"] == pytest.approx(b["peak_bytes"], rel=0.05)  # the process's RSS
    assert checked["wall_s"] == pytest.approx(predicted["wall_s"], rel=1e-9)
    assert checked["wall_error"] == pytest.approx(predicted["wall_error"], rel=1e-9)
    texts = []
    for command in (["run", "--check"], ["predict"]):
        assert main([*store, *command, str(path)]) == 0
        texts.append(capsys.readouterr().out)
    for text in texts:
        assert "Estimated for" in text and "whole run" in text
    row = [line for line in texts[1].splitlines() if "whole run" in line][0]
    assert (
        row.split("│")[2:4]
        == [line for line in texts[0].splitlines() if "whole run" in line][0].split("│")[2:4]
    )  # the same wall and its error
    assert len(stored_runs(covering)) == 3  # predicting and checking run nothing


def stored_runs(path) -> list:
    return llqm.ProfileStore(path, readonly=True).runs()


def test_each_figure_has_an_expected_error_from_the_model_or_the_history(
    covering, tmp_path, capsys
):
    """Without covering history a figure carries the model's measured error; with it, the runs'
    own spread around the fit, at least the floor; the whole run's error is bounded by its
    steps'."""
    from llqm_core.cli import main
    from llqm_core.pipeline import fit

    _, path = small_file(tmp_path)
    empty = tmp_path / "empty.sqlite"
    for store, covered in ((empty, False), (covering, True)):
        assert main(["--store", str(store), "predict", str(path), "--json"]) == 0
        found = json.loads(capsys.readouterr().out)
        assert found["steps"] and found["wall_s"] > 0 and found["peak_bytes"] > 0
        for step in found["steps"]:
            assert step["wall_error"] >= 1 and step["peak_error"] >= 1
            if covered:
                assert step["wall_error"] >= fit.HISTORY_ERROR_FLOOR
            else:
                assert "earlier runs" not in step["basis"]
                assert step["wall_error"] == fit.MODELLED_WALL_ERROR
                assert step["peak_error"] == fit.MODELLED_PEAK_ERROR
        errors = [s["wall_error"] for s in found["steps"]]
        assert min(errors) <= found["wall_error"] <= max(errors)
        assert found["peak_error"] >= 1
    assert not empty.exists()  # predicting creates no store


def test_the_whole_runs_error_bounds_the_sum_of_its_steps():
    """Two steps, one of 1 s within x2 and one of 9 s within x1.25: the sum lies between
    (0.5 + 7.2) s and (2 + 11.25) s, so within x1.325 of 10 s; the peak's error is its step's
    unless another step's figure could rise above it."""
    from llqm_core.pipeline import fit

    steps = [
        fit.StepEstimate("a", 1.0, 100.0, "a", wall_error=2.0, peak_error=2.0),
        fit.StepEstimate("b", 9.0, 300.0, "b", wall_error=1.25, peak_error=1.25),
    ]
    whole = fit.Fit(steps, 1e12, None)
    assert whole.wall_error == pytest.approx(13.25 / 10)
    assert whole.peak_error == 1.25
    steps[0] = fit.StepEstimate("a", 1.0, 250.0, "a", peak_error=2.0)
    assert fit.Fit(steps, 1e12, None).peak_error == pytest.approx(500 / 300)


def test_a_warm_ups_memory_stays_on_the_peaks_that_follow_it():
    """Importing Mitiq leaves ~157 MiB resident: the step that pays it and every later one
    hold it, once; a warm-up the process has paid adds nothing."""
    from llqm_core.model.warmup import Warmup
    from llqm_core.pipeline import fit

    never = Warmup("import", "llqm_test_module_nobody_imports", 1.0, 100.0)
    paid = Warmup("import", "json", 1.0, 1000.0)
    steps = [
        fit.StepEstimate("a", 1.0, 10.0, "a"),
        fit.StepEstimate("b", 1.0, 10.0, "b", warmups=(never, paid)),
        fit.StepEstimate("c", 1.0, 10.0, "c", warmups=(never,)),
    ]
    charged = fit.Fit(fit._charge_warmups(steps, 1.0), 1e12, None)
    assert [s.peak_bytes for s in charged.steps] == [10.0, 110.0, 110.0]
    assert [s.peak_bytes for s in charged.settled().steps] == [10.0, 110.0, 110.0]


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


def small(qubits: int, **changes) -> dict:
    return config(qubits) | {"execution": {"shots": 100, "seed": 1}} | changes


def test_the_cost_model_predicts_only_from_runs_of_the_same_shape(store_path):
    """The ``cost_model`` policy (a run's own "Predicted before the run vs measured") learns
    from runs of the same shape only: a PEC run in the store lends a plain run no stage."""
    from llqm_policies.cost_model import CostModel, run_features

    from llqm_core.pipeline.shapes import run_shape

    for qubits in (3, 4, 5, 6):
        run_pipeline(parse_pipeline(small(qubits)), store=store_path)
    pec = small(3, mitigation={"technique": "pec", "pec": {"samples": 10}})
    run_pipeline(parse_pipeline(pec), store=store_path)  # another shape in the same store
    store = llqm.ProfileStore(store_path, readonly=True)
    five = next(r for r in store.runs() if r.name == "ghz-5")
    shape = run_shape(five.config, store.tasks(five.id))
    predicted = CostModel().forecast(run_features(store, five), store, shape)
    assert predicted["runs_used"] == 4 and predicted["runs_stored"] == 5
    assert not changes_work("cost_model") and changes_work("hardware_layout")
    assert shape == {"technique": "none", "backend": "aer", "observable": "default", "policies": []}
    assert not [s for s in predicted["stages"] if s.startswith("mitigate.pec")]
    execute = predicted["stages"]["execute"]
    assert execute["runs"] == 4 and {"wall_s", "cpu_s", "qpu_s", "queue_s"} <= set(execute)
    assert execute["wall_s_error"] >= 1.0  # the runs' spread around the fit
    assert not predicted["outside"] and predicted["closest"]["gates_ratio"] == 1.0
    zne = CostModel().forecast(run_features(store, five), store, shape | {"technique": "zne"})
    assert zne["note"].startswith("no comparable history: none of the 5 completed pipeline runs")
    assert not zne["stages"]


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
