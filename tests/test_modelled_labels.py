"""Every modelled number says so wherever it is shown: a modelled QPU's QPU and queue seconds
carry "modelled" in the stage and cost tables, the HTML page, ``llqm compare`` and the sweep
table, ``modelled: true`` in JSON and ``llqm.*.modelled`` on the span;
and a prediction of a modelled figure is shown but never scored as accuracy (issue 32)."""

from __future__ import annotations

import json

import pytest

import llqm_core as llqm
from llqm_core.cli import main
from llqm_core.pipeline import parse_pipeline, run_pipeline
from llqm_core.telemetry.attributes import task_attributes

BACKEND = {"name": "modelled_qpu", "device": "fake_fez", "time_scale": 0.0}


def config(qubits: int, **changes) -> dict:
    return {
        "name": f"ghz-{qubits} modelled",
        "circuit": {"kind": "ghz", "qubits": qubits},
        "backend": BACKEND,
        "transpile": {"optimization_level": 1, "seed": 7},
        "execution": {"shots": 100, "seed": 1},
    } | changes


@pytest.fixture(scope="module")
def modelled_runs(tmp_path_factory):
    store = tmp_path_factory.mktemp("modelled") / "profiles.sqlite"
    for qubits in (3, 4, 5):
        run_pipeline(parse_pipeline(config(qubits)), store=store)
    predicting = config(4, policies={"names": ["cost_model"]})
    run_id, _ = run_pipeline(parse_pipeline(predicting), store=store)
    return store, run_id


def cli(capsys, *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out


def modelled_row(text: str, start: str) -> bool:
    """Whether a table row that starts so shows two figures labelled modelled (QPU, queue); a
    row's cells may wrap onto the line below."""
    lines = text.splitlines() + [""]
    return any(
        line.startswith(start) and (line + lines[i + 1]).count("modelled") == 2
        for i, line in enumerate(lines[:-1])
    )


def test_json_and_spans_mark_modelled_seconds(modelled_runs, capsys):
    store, run_id = modelled_runs
    report = json.loads(cli(capsys, "--store", str(store), "report", run_id, "--json"))
    execute = report["stages"]["execute"]
    assert execute["qpu_s"] > 0 and execute["queue_s"] > 0
    assert execute["qpu_modelled"] and execute["queue_modelled"] and execute["modelled"] is True
    assert not report["stages"]["transpile"]["modelled"]  # measured on the CPU
    (job,) = [t for t in report["tasks"] if t["stage"] == "execute"]
    assert job["modelled"] is True
    assert any(c["modelled"] and c["queue_modelled"] for c in report["costs"])
    (task,) = [t for t in llqm.ProfileStore(store).tasks(run_id) if t.stage == "execute"]
    attributes = task_attributes(task)
    assert attributes["llqm.qpu.modelled"] is True and attributes["llqm.queue.modelled"] is True


def test_tables_and_the_page_say_modelled(modelled_runs, capsys, tmp_path):
    store, run_id = modelled_runs
    text = cli(capsys, "--store", str(store), "report", run_id)
    assert modelled_row(text, "│ execute ")  # QPU and queue, in the stage table
    page = tmp_path / "run.html"
    cli(capsys, "--store", str(store), "report", run_id, "--html", str(page))
    html = page.read_text()
    row = html[html.index("<td>execute</td>") :]
    row = row[: row.index("</tr>")]
    assert row.count("modelled") == 2


def test_a_prediction_of_a_modelled_figure_is_not_scored(modelled_runs, capsys):
    store, run_id = modelled_runs
    report = json.loads(cli(capsys, "--store", str(store), "report", run_id, "--json"))
    rows = {row["stage"]: row for row in report["predictions"]}
    for what in ("execute (QPU)", "execute (queue)"):
        assert rows[what]["modelled"] is True and rows[what]["relative_error"] is None
    assert rows["execute"]["modelled"] is False and rows["execute"]["relative_error"] is not None
    text = cli(capsys, "--store", str(store), "report", run_id)
    assert text.count("not scored (modelled)") == 2


def test_compare_says_modelled(modelled_runs, capsys):
    store, run_id = modelled_runs
    runs = [r.id for r in llqm.ProfileStore(store).runs(limit=4)]
    compared = json.loads(cli(capsys, "--store", str(store), "compare", runs[1], runs[0], "--json"))
    assert compared["stages"]["execute"]["qpu_s"]["modelled"] is True
    assert compared["stages"]["execute"]["wall_s"].get("modelled") is None
    text = cli(capsys, "--store", str(store), "compare", runs[1], runs[0])
    assert modelled_row(text, "│ execute ")


def test_the_sweep_table_says_modelled(tmp_path, capsys):
    pipeline = tmp_path / "sweep.toml"
    pipeline.write_text(
        '[circuit]\nkind = "ghz"\nqubits = 3\n[backend]\nname = "modelled_qpu"\n'
        'device = "fake_fez"\ntime_scale = 0.0\n[transpile]\noptimization_level = 0\nseed = 7\n'
        "[execution]\nshots = 100\nseed = 1\n"
    )
    store = str(tmp_path / "sweep.sqlite")
    text = cli(capsys, "--store", store, "sweep", str(pipeline), "--grid", "execution.shots=100")
    assert modelled_row(text, "│ shots=100")
    rows = json.loads(
        cli(
            capsys,
            "--store",
            store,
            "sweep",
            str(pipeline),
            "--grid",
            "execution.shots=100",
            "--json",
        )
    )
    assert rows[0]["modelled"] is True and rows[0]["queue_modelled"] is True
