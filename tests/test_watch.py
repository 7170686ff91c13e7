"""``llqm watch``: a run started in another process, seen from the store as it goes (running
tasks, finished stages, the last minute, the calibration in force, warnings), until it ends;
Ctrl-C stops the watching and never the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import ROOT

import llqm_core as llqm
from llqm_core.analysis.live import WINDOW_S, live_frame, sparkline

#: A run that does some work, then holds a task open until the test creates the gate file.
WATCHED = textwrap.dedent(
    """
    import pathlib, sys, time, warnings
    import llqm_core as llqm
    from llqm_core import GateCalibration, HardwareSnapshot, QubitCalibration

    class Device:  # a calibration source as docs/architecture.md describes one
        device_name = "toy"
        monitor_interval_s = 3600.0

        def poll_calibration(self):
            return HardwareSnapshot(
                backend="toy",
                num_qubits=2,
                qubits={0: QubitCalibration(t1_s=1e-4, readout_error=0.02), 1: QubitCalibration()},
                gates=[GateCalibration("cz", (0, 1), error=0.01)],
            )

    gate = pathlib.Path(sys.argv[1])
    with llqm.run("watched run") as run:
        run.watch_hardware(Device())
        with llqm.task("prepare", stage="prepare") as prepare:
            sum(i * i for i in range(300_000))
            prepare.annotate({"pipeline.warnings": ["the folds were diluted by routing"]})
        with llqm.task("hold the line", stage="hold"):
            print("RUN", run.id, flush=True)
            while not gate.exists():
                time.sleep(0.05)
    """
)


def start_watched(tmp_path, store) -> tuple[subprocess.Popen, str, object]:
    gate = tmp_path / "gate"
    process = subprocess.Popen(
        [sys.executable, "-c", WATCHED, str(gate)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "LLQM_STORE": str(store)},
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("RUN"), line
    return process, line.split()[1], gate


def watch(store, *args: str, **options) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "llqm_core.cli", "--store", str(store), "watch", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        **options,
    )


def wait_until_it_reads(process: subprocess.Popen, store, timeout_s: float = 120.0) -> None:
    """Wait until ``process`` has the store open (Linux: its open files in /proc), however long
    a loaded machine takes to start it; elsewhere a fixed wait."""
    fds = Path(f"/proc/{process.pid}/fd")
    if not fds.is_dir():
        time.sleep(5.0)
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if any(os.path.realpath(fd) == os.path.realpath(store) for fd in fds.iterdir()):
                return
        except OSError:  # a file closed while listed
            pass
        time.sleep(0.05)
    raise AssertionError(f"the process never opened {store}")


def once(store) -> str:
    """One frame of the newest running run; empty while the store shows none yet (a PostgreSQL
    store gets the run's rows when its writer commits, within seconds)."""
    done = watch(store, "--once")
    out, err = done.communicate(timeout=60)
    assert done.returncode == 0 or "no run is running" in err, err
    return out


def test_watch_follows_a_run_of_another_process_until_it_ends(tmp_path, store_location):
    store = store_location  # an SQLite file, or a PostgreSQL database the run writes from afar
    process, run_id, gate = start_watched(tmp_path, store)
    try:
        deadline = time.monotonic() + 60
        out = once(store)  # the newest running run, by default
        while "hold the line" not in out:  # its running row is committed within seconds
            assert time.monotonic() < deadline, out
            time.sleep(0.3)
            out = once(store)
        assert f"watched run (run {run_id[:12]}): running" in out
        assert "Running now" in out and "hold" in out
        assert "prepare" in out.split("Stages finished so far")[1]
        assert "busy cores |" in out and "peak RSS   |" in out
        assert "Calibrations in force" in out and "toy" in out
        assert "warning: the folds were diluted by routing" in out

        follower = watch(store, run_id[:12], "--interval", "0.2")
        time.sleep(3.0)
        assert follower.poll() is None  # it goes on while the run does
        gate.touch()
        out, err = follower.communicate(timeout=60)
        assert follower.returncode == 0, err
        assert f"Run {run_id[:12]} completed after" in out
        assert process.wait(timeout=60) == 0
    finally:
        gate.touch()
        process.wait(timeout=60)


def test_ctrl_c_stops_the_watching_and_not_the_run(tmp_path):
    store = tmp_path / "s.sqlite"
    process, run_id, gate = start_watched(tmp_path, store)
    try:
        follower = watch(store, run_id[:10])
        wait_until_it_reads(follower, store)  # past its imports: a Ctrl-C now is the user's
        time.sleep(0.5)  # watching
        follower.send_signal(signal.SIGINT)
        out, err = follower.communicate(timeout=60)
        assert follower.returncode == 0 and "Traceback" not in err, err
        assert f"Stopped watching run {run_id[:12]}; the run goes on." in out
        assert process.poll() is None
        gate.touch()
        assert process.wait(timeout=60) == 0
        run = llqm.ProfileStore(store, readonly=True).run(run_id)
        assert run.status is llqm.RunStatus.COMPLETED
    finally:
        gate.touch()
        process.wait(timeout=60)


def test_with_no_run_running_watch_says_so_in_one_line(tmp_path):
    store = tmp_path / "s.sqlite"
    with llqm.run("done", store=store):
        pass
    done = watch(store)
    out, err = done.communicate(timeout=60)
    assert done.returncode == 2
    assert err.startswith("llqm: error: no run is running in") and err.count("\n") == 1


def test_the_last_minute_spreads_each_tasks_cpu_over_the_time_it_ran(store_path):
    with llqm.run("spread") as run:
        with llqm.task("a", stage="work"):
            end = time.thread_time() + 0.3
            while time.thread_time() < end:
                pass
    frame = live_frame(llqm.ProfileStore(store_path, readonly=True), run.id)
    cores = frame["last_minute"]["busy_cores"]
    assert len(cores) == int(WINDOW_S / frame["last_minute"]["bin_s"])
    known = [c for c in cores if c is not None]
    # 0.3 s of CPU spread over the 5 s bins it fell in
    assert sum(known) * frame["last_minute"]["bin_s"] == pytest.approx(
        frame["stages"]["work"]["own_cpu_s"]
    )
    assert frame["ended"] and frame["running"] == [] and frame["tasks"]["ended"] == 1
    assert sparkline([None, 0.0, 1.0, 2.0]) == " ▁▄█"
