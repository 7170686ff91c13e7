"""The README's main job and the Python example run end to end on the embedded default."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT, run_cli


def test_the_main_job_runs_mitigation_and_reports_its_fidelity(tmp_path):
    store = tmp_path / "main.sqlite"
    done = run_cli(
        "--store", str(store), "run", "examples/pipelines/mirror_rem_zne.toml", timeout=600
    )
    assert done.returncode == 0, done.stderr
    for heading in ("Stages", "Bottleneck:", "Cost per step", "Fidelity"):
        assert heading in done.stdout
    report = json.loads(run_cli("--store", str(store), "report", "--json").stdout)
    assert report["run"]["status"] == "completed" and not report["warnings"]
    figures = report["fidelity"]
    assert (
        figures["error_mitigated"] < figures["error_unmitigated"]
    )  # REM + ZNE helped on this circuit
    stages = {t["stage"] for t in report["tasks"]}
    assert {
        "mitigate.rem.calibrate",
        "mitigate.zne.fold",
        "mitigate.zne.extrapolate",
        "execute.simulate",
    } <= stages


def test_the_python_example_profiles_every_stage_on_fake_fez(tmp_path):
    store = tmp_path / "example.sqlite"
    result = subprocess.run(
        [
            sys.executable,
            "examples/ghz_pipeline.py",
            "--qubits",
            "6",
            "--shots",
            "500",
            "--store",
            str(store),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "P(ideal GHZ outcome)" in result.stdout

    report = json.loads(run_cli("--store", str(store), "report", "--json").stdout)
    assert report["run"]["status"] == "completed"
    tasks = {t["stage"]: t for t in report["tasks"]}
    assert {"generate", "transpile", "execute", "execute.simulate", "postprocess"} <= set(tasks)
    assert tasks["execute"]["hardware"]
    assert tasks["transpile"]["depends_on"] == [tasks["generate"]["id"]]
    assert tasks["execute"]["depends_on"] == [tasks["transpile"]["id"]]
    assert tasks["postprocess"]["depends_on"] == [tasks["execute"]["id"]]
    assert tasks["generate"]["metrics"]["circuit.qubits"] == 6
    assert tasks["transpile"]["metrics"]["circuit.qubits"] == 156  # laid out on the whole device
    assert tasks["execute"]["metrics"]["result.shots"] == 500
    assert 0.5 < tasks["postprocess"]["metrics"]["fidelity.p_ideal"] <= 1.0


def test_the_readmes_pipeline_file_is_the_main_job_and_the_readme_stays_short():
    """The README shows the main job's file as it is, and stays a first hour's reading."""
    import re
    import tomllib

    readme = (ROOT / "README.md").read_text()
    (shown,) = re.findall(r"```toml\n(.*?)```", readme, flags=re.S)
    main_job = (ROOT / "examples" / "pipelines" / "mirror_rem_zne.toml").read_text()
    assert tomllib.loads(shown) == tomllib.loads(main_job)
    assert len(readme.splitlines()) < 250
