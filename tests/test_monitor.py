"""The hardware monitor: snapshots kept only on change, tasks that know the calibration in force,
a source that fails or hangs recorded once while the run goes on, and its own cost as a task."""

from __future__ import annotations

import threading
import time
import warnings

import pytest

import llqm_core as llqm
from llqm_core import GateCalibration, HardwareSnapshot, QubitCalibration
from llqm_core.analysis.summary import critical_path
from llqm_core.cli import main
from llqm_core.model.errors import LLQMWarning
from llqm_core.model.hardware import MONITOR_STAGE, HardwareChange
from llqm_core.runtime.monitor import HardwareMonitor, check_interval


def calibration(readout: float, backend: str = "toy") -> HardwareSnapshot:
    return HardwareSnapshot(
        backend=backend,
        num_qubits=2,
        qubits={0: QubitCalibration(t1_s=1e-4, readout_error=readout), 1: QubitCalibration()},
        gates=[GateCalibration("cz", (0, 1), error=0.01)],
    )


class Toy:
    """A source whose calibration the test sets; ``fail`` makes readings raise, ``hang`` block."""

    def __init__(self, name: str = "toy", interval_s: float = 3600.0) -> None:
        self.device_name = name
        self.monitor_interval_s = interval_s
        self.snapshot = calibration(0.01, name)
        self.readings = 0
        self.fail: Exception | None = None
        self.hang = threading.Event()
        self.hang.set()

    def poll_calibration(self) -> HardwareSnapshot:
        self.readings += 1
        self.hang.wait()
        if self.fail is not None:
            raise self.fail
        return self.snapshot


def wait_until(condition, timeout_s: float = 30.0) -> None:
    """Wait for ``condition()`` to hold, polling: a loaded machine is slow, never wrong."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"still not true after {timeout_s} s"
        time.sleep(0.01)


def test_a_snapshot_is_kept_only_when_the_fingerprint_changes(store_path):
    toy = Toy()
    with llqm.run("watched") as run:
        monitor = run.watch_hardware(toy)
        monitor.poll_now()
        monitor.poll_now()  # the same calibration three times: one snapshot
        toy.snapshot = calibration(0.02)
        monitor.poll_now()
        monitor.poll_now()
    store = llqm.ProfileStore(store_path)
    changes = store.hardware_changes("toy")
    assert [fp for _, fp, _, _ in changes] == [
        calibration(0.01).fingerprint,
        calibration(0.02).fingerprint,
    ]
    assert all(run_id == run.id and error is None for _, _, run_id, error in changes)
    assert changes[0][0] < changes[1][0]
    assert {fp for fp, _, _ in store.snapshots("toy")} == {fp for _, fp, _, _ in changes}


def test_a_task_that_straddles_a_change_records_both(store_path):
    toy = Toy()
    first, second = calibration(0.01).fingerprint, calibration(0.03).fingerprint
    with llqm.run("straddled") as run:
        monitor = run.watch_hardware(toy)
        with llqm.task("before") as before:
            pass
        with llqm.task("straddles") as straddles:
            toy.snapshot = calibration(0.03)
            monitor.poll_now()
        with llqm.task("after") as after:
            pass
    tasks = {t.name: t for t in llqm.ProfileStore(store_path).tasks(run.id)}
    assert tasks["before"].metrics["hardware.in_force"] == [first]
    assert "hardware.changed_during" not in tasks["before"].metrics
    assert tasks["straddles"].metrics["hardware.in_force"] == [first]
    assert tasks["straddles"].metrics["hardware.changed_during"] == [second]
    assert tasks["after"].metrics["hardware.in_force"] == [second]
    assert before.id and straddles.id and after.id


def test_a_source_that_raises_is_recorded_once_and_the_run_goes_on(store_path):
    toy = Toy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with llqm.run("failing source") as run:
            monitor = run.watch_hardware(toy)
            toy.fail = ConnectionError("service unreachable")
            for _ in range(3):
                monitor.poll_now()
            with llqm.task("goes on") as going:
                going.annotate(done=True)
            toy.fail = None
            toy.snapshot = calibration(0.05)
            monitor.poll_now()
    store = llqm.ProfileStore(store_path)
    failures = [row for row in store.hardware_changes("toy") if row[3] is not None]
    assert len(failures) == 1
    assert "ConnectionError: service unreachable" in failures[0][3]
    assert store.run(run.id).status.value == "completed"
    said = [str(w.message) for w in caught if issubclass(w.category, LLQMWarning)]
    assert len(said) == 1 and "could not read the calibration of toy" in said[0]
    assert store.hardware_changes("toy")[-1][1] == calibration(0.05).fingerprint
    cost = next(t for t in store.tasks(run.id) if t.stage == MONITOR_STAGE).metrics
    assert cost["monitor.failures"] == 1 and cost["monitor.readings"] == 5


def test_a_reading_that_hangs_times_out_once_and_the_run_goes_on(store_path):
    toy = Toy()
    with llqm.run("hanging source") as run:
        monitor = run.watch_hardware(toy)
        monitor.timeout_s = 0.2
        toy.hang.clear()  # the next reading blocks until the test lets it go
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LLQMWarning)
            monitor.poll_now()
            monitor.poll_now()  # a new reading hangs as well: still one failure
        with llqm.task("goes on"):
            pass
        toy.hang.set()
    store = llqm.ProfileStore(store_path)
    failures = [row for row in store.hardware_changes("toy") if row[3] is not None]
    assert len(failures) == 1 and "timeout" in failures[0][3]
    assert store.run(run.id).status.value == "completed"
    assert [t.name for t in store.tasks(run.id) if t.name == "goes on"] == ["goes on"]


def test_the_monitor_reads_on_its_interval_and_tells_subscribers(store_path):
    toy = Toy(interval_s=0.05)
    seen: list[HardwareChange] = []
    with llqm.run("interval") as run:
        monitor = run.watch_hardware(toy)
        monitor.subscribe(seen.append)
        wait_until(lambda: toy.readings >= 3)  # the first at watch, the others on the interval
        toy.snapshot = calibration(0.04)
        wait_until(lambda: bool(seen))
    assert len(seen) == 1
    assert (
        seen[0].before is not None and seen[0].before.fingerprint == calibration(0.01).fingerprint
    )
    assert seen[0].after.fingerprint == calibration(0.04).fingerprint


def test_the_monitor_is_a_task_of_its_own_kind_off_the_critical_path(store_path):
    toy = Toy()
    with llqm.run("costed") as run:
        run.watch_hardware(toy)
        with llqm.task("work"):
            pass
    store = llqm.ProfileStore(store_path)
    tasks = store.tasks(run.id)
    monitor = next(t for t in tasks if t.stage == MONITOR_STAGE)
    assert monitor.metrics["monitor.readings"] == 1 and monitor.metrics["monitor.changes"] == 1
    assert monitor.profile.cpu_s >= 0 and monitor.profile.cpu_scope == "thread"
    assert monitor.id not in {t.id for t in critical_path(tasks)}


def test_a_later_watch_of_an_unchanged_device_keeps_no_new_snapshot(store_path):
    for name in ("first", "second"):
        with llqm.run(name) as run:
            run.watch_hardware(Toy())
            with llqm.task("work"):
                pass
    store = llqm.ProfileStore(store_path)
    assert len(store.hardware_changes("toy")) == 1
    work = next(t for t in store.tasks(run.id) if t.name == "work")
    assert work.metrics["hardware.in_force"] == [calibration(0.01).fingerprint]


def test_an_interval_that_is_not_a_positive_number_is_refused():
    with pytest.raises(ValueError, match="monitor_interval_s must be a number of seconds"):
        check_interval("often")
    with pytest.raises(ValueError, match="at least 0.01"):
        check_interval(0)
    assert HardwareMonitor(None, None).current("nothing") is None


def test_the_timeline_prints_a_failed_readings_error_whole(store_path, capsys):
    """A reading's error naming a table ("[backend] ...") is shown as written, not as markup."""
    toy = Toy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with llqm.run("failing source") as run:
            monitor = run.watch_hardware(toy)
            monitor.poll_now()
            toy.fail = ValueError("[backend] token refused")
            monitor.poll_now()
    assert main(["--store", str(store_path), "hardware", "timeline", "toy"]) == 0
    assert "ValueError: [backend] token refused" in capsys.readouterr().out
