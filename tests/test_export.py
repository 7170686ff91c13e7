"""``llqm export``: a run's or trial set's tasks, stages and trials as CSV, Parquet and JSON Lines,
with the documented columns."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import ROOT, busy

import llqm_core as llqm
from llqm_core.analysis.export import COLUMNS, columns_markdown
from llqm_core.analysis.tables import task_rows
from llqm_core.cli import main
from llqm_core.model.trial_keys import TRIAL_COUNT, TRIAL_INDEX, TRIAL_SEED, TRIAL_SET


@pytest.fixture
def trial_set(store_path):
    """Two trials of one set, made as ``llqm run`` with ``repeat = 2`` would record them, with
    nested tasks, a dependency and metrics whose types differ between the trials."""
    runs = []
    for index, depth in ((1, 4), (2, "deep")):
        config = {TRIAL_SET: "t0abc", TRIAL_INDEX: index, TRIAL_COUNT: 2, TRIAL_SEED: 10 + index}
        with llqm.run(f"study [trial {index}/2]", config=config) as run:
            with llqm.task("build", stage="generate") as build:
                build.annotate({"circuit.qubits": 3, "circuit.depth": depth})
                with llqm.task("inner", stage="generate.sub"):
                    busy(0.01)
            with llqm.task("job", stage="execute", depends_on=[build]) as job:
                job.record_usage(qpu_s=0.5 * index, queue_s=1.0)
                if index == 2:
                    job.annotate({"execute.shots": 100, "execute.labels": ["a", "b"]})
        runs.append(run)
    return runs


def export(capsysbinary, *args: str) -> bytes:
    assert main(["export", *args]) == 0
    return capsysbinary.readouterr().out


def test_tasks_as_csv_have_the_documented_columns_then_the_metrics(trial_set, capsysbinary):
    first, second = trial_set
    rows = list(csv.DictReader(io.StringIO(export(capsysbinary, first.id).decode())))
    documented = [c.name for c in COLUMNS["tasks"]]
    assert list(rows[0])[: len(documented)] == documented
    assert list(rows[0])[len(documented) :] == ["metrics.circuit.depth", "metrics.circuit.qubits"]
    assert [r["name"] for r in rows] == ["build", "inner", "job"]
    by_name = {r["name"]: r for r in rows}
    assert by_name["inner"]["parent_id"] == by_name["build"]["task_id"]
    assert json.loads(by_name["job"]["depends_on"]) == [by_name["build"]["task_id"]]
    assert float(by_name["job"]["qpu_s"]) == 0.5 and by_name["job"]["metrics.circuit.qubits"] == ""
    assert by_name["build"]["metrics.circuit.qubits"] == "3"
    assert float(by_name["build"]["own_wall_s"]) < float(by_name["build"]["wall_s"])
    assert by_name["build"]["gpu.available"] in ("true", "false")


def test_a_trial_sets_tasks_as_parquet_are_typed_and_cover_every_trial(trial_set, tmp_path, capsys):
    out = tmp_path / "tasks.parquet"
    assert main(["export", "t0abc", "-o", str(out)]) == 0  # the format from the suffix
    assert "Wrote 6 task rows of trial set t0abc (2 runs)" in capsys.readouterr().err
    table = pq.read_table(out)
    types = {field.name: str(field.type) for field in table.schema}
    assert types["wall_s"] == "double" and types["start_ns"] == "int64"
    assert types["depends_on"] == "list<element: string>"
    assert types["metrics.circuit.qubits"] == "int64"
    assert types["metrics.circuit.depth"] == "string"  # 4 in one trial, "deep" in the other: JSON
    assert types["metrics.execute.labels"] == "string"  # a list: JSON text
    rows = table.to_pylist()
    assert [r["run_id"] for r in rows] == [trial_set[0].id] * 3 + [trial_set[1].id] * 3
    depths = [r["metrics.circuit.depth"] for r in rows if r["name"] == "build"]
    assert [json.loads(d) for d in depths] == [4, "deep"]
    job = rows[-1]
    assert job["metrics.execute.shots"] == 100 and json.loads(job["metrics.execute.labels"]) == [
        "a",
        "b",
    ]
    assert not list(tmp_path.glob("*.partial"))


def test_jsonl_rows_are_the_reports_task_rows(trial_set, capsysbinary, store_path):
    first, _ = trial_set
    lines = export(capsysbinary, first.id, "--format", "jsonl").decode().splitlines()
    expected = task_rows(llqm.ProfileStore(store_path, readonly=True), first.id)
    assert [json.loads(line) for line in lines] == json.loads(json.dumps(expected))


def test_stages_and_trials_one_row_each(trial_set, capsysbinary, tmp_path):
    first, second = trial_set
    stages = [
        json.loads(line)
        for line in export(capsysbinary, "t0abc", "--stages", "--format", "jsonl").splitlines()
    ]
    assert [(s["trial_index"], s["stage"]) for s in stages] == [
        (i, stage) for i in (1, 2) for stage in ("generate", "generate.sub", "execute")
    ]
    assert all(list(s) == [c.name for c in COLUMNS["stages"]] for s in stages)
    generate = stages[0]
    assert generate["tasks"] == 1 and generate["own_wall_s"] < generate["wall_s"]
    assert [s["qpu_s"] for s in stages if s["stage"] == "execute"] == [0.5, 1.0]

    out = tmp_path / "trials.csv"
    assert main(["export", "t0abc", "--trials", "-o", str(out)]) == 0
    trials = list(csv.DictReader(out.open()))
    assert list(trials[0]) == [c.name for c in COLUMNS["trials"]]
    assert [(t["set"], t["index"], t["seed"], t["run_id"]) for t in trials] == [
        ("t0abc", "1", "11", first.id),
        ("t0abc", "2", "12", second.id),
    ]
    assert [float(t["qpu_s"]) for t in trials] == [0.5, 1.0]
    assert trials[0]["status"] == "completed" and trials[0]["error_mitigated"] == ""


def test_the_columns_are_documented():
    page = (ROOT / "docs" / "exports.md").read_text()
    for kind in COLUMNS:
        assert columns_markdown(kind) in page, f"docs/exports.md lacks the {kind} columns"


@pytest.mark.parametrize(
    "args, said",
    [
        (["nope"], "there is no run with id 'nope'"),
        (["--format", "xml"], "invalid choice: 'xml'"),
        (["--stages", "--trials"], "not allowed with argument"),
        (["-o", "/no/such/folder/x.csv"], "cannot write the export to /no/such/folder/x.csv"),
    ],
)
def test_bad_input_is_one_sentence_and_exit_2(trial_set, capsys, args, said):
    assert main(["export", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("llqm: error: ") and said in err and err.count("\n") == 1
    assert not Path("/no/such/folder").exists()
