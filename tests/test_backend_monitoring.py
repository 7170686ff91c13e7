"""What the Qiskit backends tell the hardware monitor: a simulated device drifts with the wall
clock between jobs, a fake one never moves, and an IBM device is re-read only when its
properties' ``last_update_date`` moved (qiskit-ibm-runtime's own IBMBackend reading the service's
documented payloads; a stand-in answers for the network)."""

from __future__ import annotations

import copy
import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import qiskit_ibm_runtime.fake_provider.backends.fez as fake_fez_module
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.backends.ibm import IBMRuntimeBackend, read_calibration
from qiskit_ibm_runtime.ibm_backend import IBMBackend
from qiskit_ibm_runtime.utils.backend_decoder import configuration_from_server_data

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


#: The payloads of IBM's ``GET /backends/{name}/configuration`` and ``.../properties`` for
#: ibm_fez, as qiskit-ibm-runtime ships them for its fake backend (``conf_fez.json``,
#: ``props_fez.json``).
FEZ_PAYLOADS = Path(fake_fez_module.__file__).parent


class ServiceClient:
    """Stands in for the network only: it answers qiskit-ibm-runtime's API client calls with
    the documented payloads, the properties' ``last_update_date`` and qubit 0's T1 as the
    service would send them after a recalibration. Everything else is the real ``IBMBackend``:
    its ``properties(refresh=True)``, ``refresh()`` and target, decoded by the runtime's own
    ``properties_from_server_data`` (``BackendProperties.from_dict``)."""

    def __init__(self) -> None:
        self.configuration = json.loads((FEZ_PAYLOADS / "conf_fez.json").read_text())
        self.properties = json.loads((FEZ_PAYLOADS / "props_fez.json").read_text())
        self.calibrated("2026-12-01T08:00:00Z", t1_us=48.0)
        self.configuration_reads = 0

    def calibrated(self, when: str, t1_us: float) -> None:
        self.properties["last_update_date"] = when
        t1 = next(p for p in self.properties["qubits"][0] if p["name"] == "T1")
        t1.update(value=t1_us, date=when)

    def backend_properties(self, name, datetime=None, calibration_id=None) -> dict:
        assert name == "ibm_fez" and datetime is None
        return copy.deepcopy(self.properties)

    def backend_configuration(self, name, refresh=False, calibration_id=None) -> dict:
        self.configuration_reads += 1
        return copy.deepcopy(self.configuration)

    def _get_api_client(self, instance=None) -> ServiceClient:  # as QiskitRuntimeService has it
        return self


def test_an_ibm_device_is_read_again_only_when_its_calibration_date_moved():
    client = ServiceClient()
    configuration = configuration_from_server_data(copy.deepcopy(client.configuration))
    device = IBMBackend(configuration, client, client)
    first = read_calibration(device, None)
    assert first.extra["last_update_date"] == "2026-12-01T08:00:00Z"
    assert client.configuration_reads == 1 and first.num_qubits == 156
    assert first.qubits[0].t1_s == pytest.approx(48e-6)
    assert read_calibration(device, first) is first and client.configuration_reads == 1
    client.calibrated(datetime(2026, 12, 1, 9, 30, tzinfo=UTC).isoformat(), t1_us=95.0)
    later = read_calibration(device, first)
    assert client.configuration_reads == 2 and later.fingerprint != first.fingerprint
    assert later.extra["last_update_date"] == "2026-12-01T09:30:00Z"
    assert later.qubits[0].t1_s == pytest.approx(95e-6)  # the new calibration, parsed
