"""A pipeline on a device that drifts with the wall clock: the monitor keeps each calibration it
sees, the report and its HTML page show the ones in force during the run, and ``llqm hardware
timeline`` puts them beside the run and its mitigated error."""

from __future__ import annotations

import json
import time

import pytest
from conftest import run_cli

import llqm_core as llqm
from llqm_core.analysis.html_report import html_report
from llqm_core.analysis.report import analyse_run
from llqm_core.cli import main
from llqm_core.cli.hardware import parse_since
from llqm_core.model.errors import UserError
from llqm_core.model.hardware import MONITOR_STAGE
from llqm_core.pipeline import parse_pipeline, run_pipeline
from llqm_core.runtime.monitor import HardwareMonitor

DRIFTING = {
    "name": "ghz-4 zne on a drifting device",
    "circuit": {"kind": "ghz", "qubits": 4},
    "backend": {
        "name": "aer",
        "device": "fake_fez",
        "monitor_interval_s": 0.05,
        "drift": {"seed": 3, "hours_per_job": 0, "hours_per_second": 20},
    },
    "transpile": {"optimization_level": 0, "seed": 7},
    "mitigation": {"technique": "zne", "zne": {"scale_factors": [1, 3], "factory": "linear"}},
    "execution": {"shots": 500, "seed": 1},
}


@pytest.fixture(scope="module")
def drifted_run(tmp_path_factory):
    """A run on a drifting device whose monitor saw at least two calibrations: a fast machine
    can finish the run inside one interval, so as the run closes the monitor reads again, until
    the drift has moved the calibration on."""
    path = tmp_path_factory.mktemp("drift") / "profiles.sqlite"
    stop = HardwareMonitor.stop

    def read_until_it_moved_then_stop(monitor: HardwareMonitor):
        deadline = time.monotonic() + 30
        while monitor.cost.changes < 2 and time.monotonic() < deadline:
            time.sleep(DRIFTING["backend"]["monitor_interval_s"])
            monitor.poll_now()
        return stop(monitor)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(HardwareMonitor, "stop", read_until_it_moved_then_stop)
        run_id, _ = run_pipeline(parse_pipeline(DRIFTING), store=path)
    return path, run_id


def test_the_monitor_keeps_every_calibration_it_saw_during_the_run(drifted_run):
    path, run_id = drifted_run
    store = llqm.ProfileStore(path)
    changes = [row for row in store.hardware_changes("fake_fez") if row[2] == run_id]
    assert len(changes) >= 2 and len({fp for _, fp, _, _ in changes}) == len(changes)
    tasks = store.tasks(run_id)
    steps = [t for t in tasks if t.parent_id is None and t.stage != MONITOR_STAGE]
    assert all(t.metrics.get("hardware.in_force") for t in steps)
    (monitor,) = [t for t in tasks if t.stage == MONITOR_STAGE]
    assert monitor.metrics["monitor.changes"] == len(changes)
    assert monitor.metrics["monitor.readings"] >= len(changes)


def test_the_report_and_its_page_show_the_calibrations_in_force(drifted_run):
    path, run_id = drifted_run
    report, tasks, _ = analyse_run(llqm.ProfileStore(path), run_id)
    assert len(report["hardware"]) >= 2
    assert [h["at"] for h in report["hardware"]] == sorted(h["at"] for h in report["hardware"])
    assert all(h["backend"] == "fake_fez" and h["t1_median_s"] > 0 for h in report["hardware"])
    page = html_report(report, tasks)
    assert "Calibrations in force during the run" in page
    assert report["hardware"][-1]["fingerprint"] in page


def test_the_timeline_puts_the_run_beside_the_calibrations(drifted_run, tmp_path):
    path, run_id = drifted_run
    picture = tmp_path / "timeline.png"
    shown = run_cli(
        "hardware", "timeline", "fake_fez", "--store", str(path), "--json", "--plot", str(picture)
    )
    assert shown.returncode == 0, shown.stderr
    timeline = json.loads(shown.stdout)
    assert len(timeline["snapshots"]) >= 2
    (run,) = [r for r in timeline["runs"] if r["run"] == run_id]
    assert run["error_mitigated"] is not None and run["start"] <= timeline["snapshots"][-1]["at"]
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"Wrote the timeline of fake_fez to {picture}" in shown.stderr  # where it went
    again = tmp_path / "again.png"
    table = run_cli(
        "hardware",
        "timeline",
        "fake_fez",
        "--store",
        str(path),
        "--since",
        "1h",
        "--plot",
        str(again),
    )
    assert table.returncode == 0 and "Calibrations of fake_fez" in table.stdout
    assert f"Wrote the timeline of fake_fez to {again}" in table.stdout.replace("\n", "")
    unknown = run_cli("hardware", "timeline", "fake_nowhere", "--store", str(path))
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert "holds no snapshot of a device called 'fake_nowhere'" in unknown.stderr


def test_since_reads_a_time_or_a_duration_and_refuses_anything_else():
    assert parse_since("90m", now=10_000.0) == 10_000.0 - 5400
    assert parse_since("2026-12-01T00:00") == parse_since("2026-12-01T00:00+00:00")
    with pytest.raises(UserError, match="--since 'yesterday' is neither an ISO time"):
        parse_since("yesterday")


def test_watch_refuses_an_unknown_device_and_a_bad_interval(tmp_path):
    store = str(tmp_path / "w.sqlite")
    unknown = run_cli("hardware", "watch", "fake_nowhere", "--store", store, "--duration", "1")
    assert unknown.returncode == 2 and "no installed plugin knows a device" in unknown.stderr
    bad = run_cli("hardware", "watch", "fake_fez", "--interval", "0", "--store", store)
    assert bad.returncode == 2 and "--interval must be a number of seconds" in bad.stderr


def test_watch_keeps_each_calibration_of_the_device_and_its_own_cost(tmp_path, capsys):
    store = tmp_path / "watch.sqlite"
    argv = ["hardware", "watch", "fake_fez", "--interval", "0.1", "--duration", "0.5"]
    assert main([*argv, "--store", str(store)]) == 0
    said = capsys.readouterr().out
    assert "watching fake_fez every 0.1 s" in said and "1 calibrations seen, 0 failures" in said
    kept = llqm.ProfileStore(store)
    assert len(kept.hardware_changes("fake_fez")) == 1  # a fake device never changes
    (run,) = kept.runs()
    (monitor,) = [t for t in kept.tasks(run.id) if t.stage == MONITOR_STAGE]
    assert monitor.metrics["monitor.readings"] >= 2
