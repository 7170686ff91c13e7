"""What the Qiskit backends tell the hardware monitor: a simulated device drifts with the wall
clock between jobs, a fake one never moves, and an IBM device is re-read only when its
properties' ``last_update_date`` moved (the service's documented payload, never the network)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from llqm_qiskit.aer import AerBackend
from llqm_qiskit.devices import fake_device
from llqm_qiskit.ibm import IBMRuntimeBackend, read_calibration

from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline


def test_a_simulated_device_drifts_with_the_wall_clock_between_jobs():
    still = AerBackend(device="fake_fez", drift={"seed": 1})
    assert still.poll_calibration().fingerprint == still.poll_calibration().fingerprint
    moving = AerBackend(device="fake_fez", drift={"seed": 1, "hours_per_second": 100})
    first = moving.poll_calibration()
    time.sleep(0.05)
    second = moving.poll_calibration()
    assert first.fingerprint != second.fingerprint
    assert second.extra["drift"]["elapsed_h"] > first.extra["drift"]["elapsed_h"] > 0
    assert moving.calibration_moves and still.calibration_moves
    assert not AerBackend(device="fake_fez").calibration_moves


def test_a_local_ibm_device_never_moves_and_a_bad_interval_is_one_sentence():
    local = IBMRuntimeBackend(local=True, device="fake_fez")
    assert not local.calibration_moves and local.monitor_interval_s == 300
    assert local.poll_calibration() is local.snapshot()
    config = {
        "circuit": {"kind": "ghz", "qubits": 3},
        "backend": {"name": "aer", "monitor_interval_s": -1},
    }
    with pytest.raises(
        UserError,
        match=r"backend .aer.: monitor_interval_s must be a number of seconds of at least 0.01, not -1",
    ):
        parse_pipeline(config)


class Properties:
    def __init__(self, updated: str) -> None:
        self.last_update_date = updated


class Device:
    """A device as qiskit-ibm-runtime's IBMBackend presents it: ``properties(refresh=True)``
    fetches the properties (their ``last_update_date`` as the service sends it), ``refresh()``
    fetches configuration and target again."""

    def __init__(self) -> None:
        self._fake = fake_device("fake_fez")
        self.updated = "2026-12-01T08:00:00Z"
        self.refreshes = 0
        self.name = "ibm_fez"

    @property
    def target(self):
        return self._fake.target

    def properties(self, refresh: bool = False):
        assert refresh, "the monitor must ask the service again"
        return Properties(self.updated)

    def refresh(self) -> None:
        self.refreshes += 1


def test_an_ibm_device_is_read_again_only_when_its_calibration_date_moved():
    device = Device()
    first = read_calibration(device, None)
    assert device.refreshes == 1 and first.extra["last_update_date"] == "2026-12-01T08:00:00Z"
    assert read_calibration(device, first) is first and device.refreshes == 1
    device.updated = datetime(2026, 12, 1, 9, 30, tzinfo=UTC).isoformat()
    later = read_calibration(device, first)
    assert device.refreshes == 2 and later.fingerprint != first.fingerprint
    assert later.extra["last_update_date"] == "2026-12-01T09:30:00Z"
