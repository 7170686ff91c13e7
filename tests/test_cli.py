"""The ``llqm`` command: listings, reports, traces, plugins, and one-sentence errors."""

from __future__ import annotations

import json
import time

import pytest
from conftest import run_cli

import llqm_core as llqm
import llqm_core.plugin
from llqm_core.cli import main
from llqm_core.model.errors import LLQMWarning


@pytest.fixture
def two_runs(store_path):
    with llqm.run("first") as first:
        with llqm.task("only"):
            pass
    time.sleep(0.01)
    with llqm.run("second", config={"shots": 100}) as second:
        with llqm.task("gen", stage="generate") as gen:
            gen.annotate({"circuit.qubits": 3})
            with llqm.task("child", stage="generate.sub"):
                time.sleep(0.01)
        with llqm.task("use", stage="execute", depends_on=[gen]):
            pass
    return first, second


def cli_json(capsys, *args):
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


def test_runs_json_lists_newest_first(two_runs, capsys):
    first, second = two_runs
    runs = cli_json(capsys, "runs", "--json")
    assert [r["id"] for r in runs] == [second.id, first.id]
    assert set(runs[0]) == {"id", "name", "status", "started"}
    assert runs[0]["status"] == "completed" and runs[0]["name"] == "second"
    assert cli_json(capsys, "runs", "--json", "--limit", "1")[0]["id"] == second.id


def test_report_json_has_run_tasks_and_stage_totals(two_runs, capsys):
    _, second = two_runs
    report = cli_json(capsys, "report", "--json")
    assert report["run"]["id"] == second.id and report["run"]["trace_id"] == second.trace_id
    assert report["run"]["status"] == "completed" and report["run"]["wall_s"] > 0
    tasks = {t["name"]: t for t in report["tasks"]}
    required = {
        "id",
        "name",
        "stage",
        "status",
        "parent_id",
        "depends_on",
        "start",
        "end",
        "wall_s",
        "cpu_s",
        "peak_rss_bytes",
        "span_id",
        "metrics",
    }
    assert all(required <= set(t) for t in report["tasks"])
    assert tasks["child"]["parent_id"] == tasks["gen"]["id"]
    assert tasks["use"]["depends_on"] == [tasks["gen"]["id"]]
    assert tasks["gen"]["metrics"] == {"circuit.qubits": 3}
    assert report["stages"]["generate.sub"]["tasks"] == 1
    assert report["stages"]["generate.sub"]["wall_s"] == pytest.approx(tasks["child"]["wall_s"])
    assert set(report["stages"]["execute"]) == {
        "tasks",
        "own_wall_s",
        "own_cpu_s",
        "wall_s",
        "cpu_s",
        "qpu_s",
        "queue_s",
        "qpu_modelled",
        "queue_modelled",
        "modelled",
        "peak_rss_bytes",
    }
    names = {t["id"]: t["name"] for t in report["tasks"]}
    assert [names[i] for i in report["critical_path"]] == ["child", "use"]
    by_prefix = cli_json(capsys, "report", second.id[:8], "--json")
    assert by_prefix["run"]["id"] == second.id


def test_stage_times_name_own_and_inclusive_time_and_own_time_adds_up(two_runs, capsys):
    """A parent stage's inclusive time counts its nested stage again; own time does not, and the
    stages' own times add up to the run's busy time (the top-level tasks' time, run one by one)."""
    report = cli_json(capsys, "report", "--json")
    stages, tasks = report["stages"], {t["name"]: t for t in report["tasks"]}
    assert stages["generate"]["wall_s"] == pytest.approx(tasks["gen"]["wall_s"])
    assert stages["generate"]["own_wall_s"] == pytest.approx(
        tasks["gen"]["wall_s"] - tasks["child"]["wall_s"]
    )
    assert tasks["gen"]["own_wall_s"] == pytest.approx(stages["generate"]["own_wall_s"])
    assert sum(s["own_wall_s"] for s in stages.values()) == pytest.approx(report["run"]["busy_s"])
    assert report["run"]["busy_s"] == pytest.approx(tasks["gen"]["wall_s"] + tasks["use"]["wall_s"])
    assert report["run"]["busy_s"] <= report["run"]["wall_s"]
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    assert "own wall" in out and "wall incl. nested" in out and "do not add it up" in out


def test_the_text_report_of_a_big_run_fits_a_screen_and_tasks_lists_all(store_path):
    with llqm.run("many tasks") as run:
        for i in range(60):
            with llqm.task(f"sample {i}", stage="mitigate.pec.sample"):
                pass
        for i in range(15):
            run.record_decision(
                llqm.PolicyDecision(
                    policy="transpile_cache", choice={"hit": i}, rationale="same circuit"
                )
            )
    short = run_cli("--store", str(store_path), "report", run.id)
    assert short.returncode == 0, short.stderr
    assert len(short.stdout.splitlines()) < 60
    assert "Biggest tasks by own wall time (10 of 60; --tasks lists all)" in short.stdout
    assert "first 10 of 15" in short.stdout
    every = run_cli("--store", str(store_path), "report", run.id, "--tasks")
    assert all(f"sample {i} " in every.stdout for i in range(60))


def test_human_report_shows_the_tasks_and_stages(two_runs, capsys):
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    for text in ("second", "gen", "child", "generate.sub", "Stages", "completed"):
        assert text in out


def test_trace_writes_otlp_json_to_a_file(two_runs, tmp_path, capsys):
    out = tmp_path / "trace.json"
    assert main(["trace", "--format", "otlp-json", "-o", str(out)]) == 0
    document = json.loads(out.read_text())
    names = {s["name"] for s in document["resourceSpans"][0]["scopeSpans"][0]["spans"]}
    assert names == {"second", "gen", "child", "use"}


def test_plugins_lists_built_in_plugins_from_their_package(capsys, fresh_plugins):
    rows = {row["name"]: row for row in cli_json(capsys, "plugins", "--json")}
    assert rows["exporters"]["package"] == "llqm" and rows["exporters"]["status"] == "loaded"
    assert "llqm_register_exporters" in rows["exporters"]["hooks"]
    assert rows["qiskit"]["module"] == "llqm_qiskit.plugin"
    assert "llqm_describe_value" in rows["qiskit"]["hooks"]
    rows = {
        row["name"]: row
        for row in cli_json(capsys, "--disable-plugins", "qiskit", "plugins", "--json")
    }
    assert rows["qiskit"]["status"] == "disabled"


def test_plugins_lists_what_each_plugin_registers_by_name(capsys, fresh_plugins):
    rows = {row["name"]: row for row in cli_json(capsys, "plugins", "--json")}
    assert {"generate", "observable", "transpile"} <= set(rows["qiskit"]["registers"]["stage"])
    assert {"aer", "modelled_qpu", "ibm_runtime"} <= set(rows["qiskit"]["registers"]["backend"])
    assert "mitigate.zne" in rows["mitiq"]["registers"]["stage"]
    assert "hardware_layout" in rows["policies"]["registers"]["policy"]
    assert rows["prefect"]["registers"] == {"engine": ["prefect"]}
    assert "otlp" in rows["exporters"]["registers"]["exporter"]
    assert main(["plugins"]) == 0
    table = capsys.readouterr().out
    assert "engines: prefect" in table and "policies: budgeted_mitigation" in table


def test_a_plugin_raising_for_a_device_snapshot_gives_one_line_naming_it(
    store_path, capsys, fresh_plugins
):
    class Broken:
        @llqm.plugin.hookimpl
        def llqm_device_snapshot(self, device):
            raise RuntimeError("calibration service down")

    llqm.plugin.loaded_plugins().register(Broken(), name="broken_devices")
    with pytest.warns(LLQMWarning) as raised:  # in-process, the warnings are recorded, not shown
        assert main(["hardware", "show", "fake_atlantis"]) == 2  # no traceback: one error line
    err = capsys.readouterr().err
    named = [str(w.message) for w in raised if "broken_devices" in str(w.message)]
    assert named == [
        "llqm plugin 'broken_devices' raised in llqm_device_snapshot: "
        "RuntimeError: calibration service down"
    ]
    assert "Traceback" not in err
    # the other plugins were still asked, and none knew the device
    assert "No installed plugin knows a device called 'fake_atlantis'" in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["report", "feedface"], "there is no run with id 'feedface'"),
        (["report", "--bogus"], "unrecognized arguments: --bogus"),
        (["runs", "--limit", "0"], "'0' is not a positive whole number"),
        (["trace", "--format", "zipkin"], "invalid choice: 'zipkin'"),
        (["--plugins", "nope", "plugins"], "unknown plugin 'nope'"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["compare", "feedface", "deadbeef"], "there is no run with id 'feedface'"),
        (["trace", "feedface", "--format", "chrome"], "there is no run with id 'feedface'"),
        (
            ["report", "--html", "/nonexistent-dir/r.html"],
            "cannot write the HTML report to /nonexistent-dir/r.html",
        ),
        (
            ["trace", "-o", "/nonexistent-dir/t.json"],
            "cannot write the trace to /nonexistent-dir/t.json",
        ),
        (
            ["hardware", "show", "fake_atlantis"],
            "No installed plugin knows a device called 'fake_atlantis'",
        ),
        (["hardware", "diff", "fake_fez", "nowhere"], "there is no hardware snapshot"),
        (
            ["run", "/nonexistent/pipeline.toml"],
            "cannot read pipeline file /nonexistent/pipeline.toml",
        ),
        (["sweep", "examples/pipelines/pec_small.toml"], "llqm sweep needs at least one --grid"),
        (
            ["sweep", "examples/pipelines/pec_small.toml", "--grid", "circuit.qubits"],
            "must be KEY=V1,V2",
        ),
        (
            ["sweep", "examples/pipelines/pec_small.toml", "--grid", "execution.shots=0,10"],
            "sweep point execution.shots=0",
        ),
        (
            ["run", "examples/pipelines/pec_small.toml", "--bogus"],
            "unrecognized arguments: --bogus",
        ),
        (["--disable-plugins", "nothing", "runs"], "unknown plugin 'nothing'"),
    ],
)
def test_user_errors_print_one_sentence_and_exit_2(two_runs, capsys, args, message, fresh_plugins):
    before = _store_content()
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("llqm: error: ") and message in captured.err
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert _store_content() == before  # nothing recorded, nothing changed


def _store_content() -> list:
    store = llqm.ProfileStore(readonly=True)  # $LLQM_STORE, the test's own store
    return [
        (r.id, r.status, r.end_ns, [(t.id, t.status, t.end_ns) for t in store.tasks(r.id)])
        for r in store.runs()
    ]


def test_missing_or_corrupt_store_is_a_user_error_without_traceback_and_is_not_created(tmp_path):
    missing = tmp_path / "missing.sqlite"
    result = run_cli("--store", str(missing), "report")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "there is no profile store at" in result.stderr
    assert not missing.exists()
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_text("not a database at all")
    result = run_cli("runs", env={"LLQM_STORE": str(corrupt)})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "is not a readable LLQM profile store" in result.stderr
    assert corrupt.read_text() == "not a database at all"


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"llqm {llqm.__version__}"


def test_the_text_report_keeps_square_brackets_of_section_names(store_path, capsys):
    with pytest.raises(ValueError), llqm.run("bracketed"):
        raise ValueError("[mitigation.zne] scale_factors must rise")
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    assert "[mitigation.zne] scale_factors must rise" in out


def test_names_errors_and_warnings_with_section_names_print_as_written(store_path, capsys):
    """Rich reads ``[circuit]`` as a style and drops it unless told not to: every listing and
    report shows recorded text as it was written."""
    with pytest.raises(ValueError), llqm.run("ghz [circuit] sweep") as failed:
        with llqm.task("[transpile] step", stage="transpile") as step:
            step.annotate({"pipeline.warnings": ["[mitigation.pec] samples lowered"]})
        raise ValueError("[mitigation.zne] scale_factors must rise")
    assert main(["runs"]) == 0
    assert "ghz [circuit] sweep" in capsys.readouterr().out
    assert main(["report", "--tasks"]) == 0
    out = capsys.readouterr().out
    for written in (
        "ghz [circuit] sweep",
        "error: ValueError: [mitigation.zne] scale_factors must rise",
        "[transpile] step",
        "warning: [mitigation.pec] samples lowered",
    ):
        assert written in out
    assert main(["compare", failed.id, failed.id]) == 0
    assert "a: ghz [circuit] sweep" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("config", "noted"), [({}, True), ({"profile.program": "script.py"}, False)]
)
def test_the_note_on_trials_is_for_pipelines_not_profiled_scripts(
    store_path, capsys, config, noted
):
    with llqm.run("with figures", config=config), llqm.task("postprocess") as task:
        task.annotate({"fidelity.ideal": 1.0, "fidelity.mitigated": 0.9})
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    assert ("One trial" in out) is noted
    assert "up to 1 task at once" in out
