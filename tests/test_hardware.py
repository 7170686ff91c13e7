"""Hardware snapshots: what is broken, what drifted, and the `llqm hardware` commands."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import llqm_core as llqm
from llqm_core.cli import main
from llqm_core.model import hardware


def device(
    t1_q0: float = 100e-6, cz_01: float = 0.01, readout_q2: float = 0.02, taken_at: float = 1.0
) -> llqm.HardwareSnapshot:
    return llqm.HardwareSnapshot(
        backend="toy",
        num_qubits=3,
        taken_at=taken_at,
        qubits={
            0: llqm.QubitCalibration(t1_s=t1_q0, t2_s=80e-6, readout_error=0.01),
            1: llqm.QubitCalibration(t1_s=120e-6, t2_s=90e-6, readout_error=0.02),
            2: llqm.QubitCalibration(t1_s=110e-6, t2_s=70e-6, readout_error=readout_q2),
        },
        gates=[
            llqm.GateCalibration("cz", (0, 1), error=cz_01, duration_s=8.4e-8),
            llqm.GateCalibration("cz", (1, 0), error=cz_01, duration_s=8.4e-8),
            llqm.GateCalibration("cz", (1, 2), error=0.005, duration_s=8.4e-8),
            llqm.GateCalibration("sx", (2,), error=2e-4, duration_s=3.6e-8),
        ],
    )


def test_faulty_qubits_and_couplers_are_the_out_of_service_ones():
    healthy = device()
    assert hardware.faulty_qubits(healthy) == [] and hardware.faulty_couplers(healthy) == []
    broken = device(cz_01=1.0, readout_q2=0.5)
    assert hardware.faulty_couplers(broken) == [(0, 1)]
    assert hardware.faulty_qubits(broken) == [2]
    summary = hardware.summary(broken)
    assert summary["faulty_couplers"] == [[0, 1]] and summary["fingerprint"] == broken.fingerprint
    assert summary["qubits"][0] == {
        "qubit": 0,
        "t1_s": 100e-6,
        "t2_s": 80e-6,
        "readout_error": 0.01,
        "frequency_hz": None,
        "readout_duration_s": None,
    }


def test_diff_reports_each_changed_field_and_what_broke_or_was_repaired():
    before, after = device(), device(t1_q0=50e-6, cz_01=1.0, taken_at=2.0)
    changes = hardware.diff(before, after)
    assert set(changes.qubits) == {0}
    assert changes.qubits[0]["t1_s"].relative == pytest.approx(-0.5)
    assert set(changes.gates) == {("cz", (0, 1)), ("cz", (1, 0))}
    assert changes.newly_faulty_couplers == [(0, 1)] and changes.repaired_couplers == []
    assert changes.max_relative_change("t1_s") == pytest.approx(0.5)
    assert hardware.diff(after, before).repaired_couplers == [(0, 1)]
    assert json.loads(json.dumps(changes.to_dict()))["qubits"]["0"]["t1_s"]["after"] == 50e-6
    with pytest.raises(ValueError, match="cannot compare snapshots of different backends"):
        hardware.diff(before, replace(after, backend="other"))


def test_the_error_change_on_some_qubits_ignores_the_rest_of_the_device():
    changes = hardware.diff(device(), device(cz_01=0.015, readout_q2=0.03, t1_q0=10e-6))
    assert changes.max_error_change({0, 1}) == pytest.approx(
        0.5
    )  # cz on 0-1 went from 1% to 1.5%; T1 is no error
    assert changes.max_error_change({1, 2}) == pytest.approx(
        0.5
    )  # readout of qubit 2 from 2% to 3%
    assert (
        changes.max_error_change({2}) == pytest.approx(0.5) and changes.max_error_change({1}) == 0.0
    )


def test_hardware_commands_list_show_and_diff_stored_snapshots(store_path, capsys):
    before, after = device(), device(t1_q0=60e-6, taken_at=2.0)
    with llqm.run("calibrations"):
        with llqm.task("morning") as t:
            t.use_hardware(before)
        with llqm.task("evening") as t:
            t.use_hardware(after)

    assert main(["hardware", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [row["fingerprint"] for row in listed] == [after.fingerprint, before.fingerprint]

    assert (
        main(["hardware", "show", "toy", "--json"]) == 0
    )  # a backend name means its latest snapshot
    shown = json.loads(capsys.readouterr().out)
    assert {"backend", "num_qubits", "fingerprint", "faulty_qubits", "faulty_couplers"} <= set(
        shown
    )
    assert shown["fingerprint"] == after.fingerprint and shown["qubits"][0]["t1_s"] == 60e-6

    assert main(["hardware", "diff", before.fingerprint[:8], after.fingerprint, "--json"]) == 0
    changes = json.loads(capsys.readouterr().out)
    assert list(changes["qubits"]) == ["0"] and changes["max_relative_change"][
        "t1_s"
    ] == pytest.approx(0.4)

    assert main(["hardware", "show", "nowhere"]) == 2
    assert "there is no hardware snapshot 'nowhere'" in capsys.readouterr().err


def test_hardware_show_reads_a_device_never_run_on_from_its_plugin(store_path, capsys):
    assert main(["--store", str(store_path), "hardware", "show", "fake_fez", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (
        shown["backend"] == "fake_fez"
        and shown["num_qubits"] == 156
        and shown["shown"] == "device"
        and shown["origin"].startswith("the device's own calibration")
    )
    assert [27, 28] in shown["faulty_couplers"] and [139, 155] in shown["faulty_couplers"]
    assert {"t1_s", "t2_s", "readout_error"} <= set(shown["qubits"][0])
    assert not store_path.exists()  # looking is not recording
    assert main(["--store", str(store_path), "hardware", "show", "fake_nowhere"]) == 2
    assert "No installed plugin knows a device called 'fake_nowhere'" in capsys.readouterr().err


def test_coupling_maps_draw_a_calibration_and_a_drift(store_path, tmp_path, capsys):
    from llqm_qiskit.backends.aer import AerBackend
    from llqm_qiskit.devices.drift import CalibrationDrift

    base = AerBackend(device="fake_fez").snapshot()
    moved = CalibrationDrift(seed=2, coupler_failure_rate=0.01).advance(base, 24)
    with llqm.run("snapshots"):
        with llqm.task("a") as t:
            t.use_hardware(base)
        with llqm.task("b") as t:
            t.use_hardware(moved)
    shown, drifted = tmp_path / "map.png", tmp_path / "drift.png"
    assert (
        main(["hardware", "show", base.fingerprint, "--plot", str(shown), "--field", "t1_s"]) == 0
    )
    assert (
        main(["hardware", "diff", base.fingerprint, moved.fingerprint, "--plot", str(drifted)]) == 0
    )
    for picture in (shown, drifted):
        assert picture.read_bytes()[:4] == b"\x89PNG" and picture.stat().st_size > 20_000
    capsys.readouterr()
    assert (
        main(["hardware", "show", base.fingerprint, "--plot", str(shown), "--field", "colour"]) == 2
    )
    assert "unknown calibration field 'colour'" in capsys.readouterr().err


def test_hardware_show_of_a_device_shows_its_own_calibration_even_after_a_drifted_run(
    store_path, capsys
):
    from llqm_qiskit.backends.aer import AerBackend
    from llqm_qiskit.devices.drift import CalibrationDrift

    own = AerBackend(device="fake_fez").snapshot()
    drifted = CalibrationDrift(seed=2, coupler_failure_rate=0.01).advance(own, 24)
    assert len(hardware.faulty_couplers(drifted)) > len(hardware.faulty_couplers(own))
    with llqm.run("drifting"):
        with llqm.task("job") as t:
            t.use_hardware(drifted)
    assert main(["hardware", "show", "fake_fez", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["fingerprint"] == own.fingerprint and shown["shown"] == "device"
    assert (
        len(shown["faulty_couplers"]) == len(hardware.faulty_couplers(own)) and not shown["drifted"]
    )
    assert main(["hardware", "show", "fake_fez", "--stored", "--json"]) == 0
    stored = json.loads(capsys.readouterr().out)
    assert stored["fingerprint"] == drifted.fingerprint and stored["drifted"]
    assert main(["hardware", "show", "fake_fez", "--stored"]) == 0
    text = capsys.readouterr().out
    assert "DRIFTED by LLQM's drift model" in text and "not the device's own calibration" in text
    assert main(["hardware", "show", "fake_fez"]) == 0
    assert "Shown: the device's own calibration" in capsys.readouterr().out
