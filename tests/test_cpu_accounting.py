"""Every second and byte accounted for: a task is charged the CPU of every thread that works for
it (Aer's pool and OpenMP threads included, on a busy machine as on an idle one), and the peak
memory of a task shorter than the sampler's interval is seen."""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, busy
from outside_cpu import cpu_between, run_watched

import llqm_core as llqm
from llqm_core.plugin import set_sample_interval
from llqm_core.runtime.high_water import high_water

linux_only = pytest.mark.skipif(
    not os.path.exists("/proc/self/stat"), reason="reads /proc as a sampler outside the process"
)

#: A 12-qubit QFT from the corpus (non-Clifford), run with the device's noise on Aer: trajectories.
NOISY_QFT = """
name = "noisy qft"
[circuit]
qasm = "{qasm}"
[backend]
name = "aer"
device = "fake_fez"
[mitigation]
technique = "none"
[execution]
shots = {shots}
seed = 3
"""


def _simulate_under_outside_sampler(tmp_path: Path, shots: int) -> tuple[llqm.TaskRecord, float]:
    pipeline = tmp_path / "noisy.toml"
    qasm = ROOT / "tests" / "data" / "corpus" / "qft_12_m_q3.qasm"
    pipeline.write_text(NOISY_QFT.format(qasm=qasm, shots=shots))
    store = tmp_path / "runs.sqlite"
    done, readings = run_watched(
        [sys.executable, "-m", "llqm_core.cli", "run", "--store", str(store), str(pipeline)],
        tmp_path / "readings.txt",
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    reader = llqm.ProfileStore(store)
    (only,) = reader.runs()
    (simulate,) = [t for t in reader.tasks(only.id) if t.stage == "execute.simulate"]
    return simulate, cpu_between(readings, simulate.start_ns, simulate.end_ns)


@linux_only
def test_a_noisy_aer_simulation_is_charged_the_cpu_the_process_spent_on_it(tmp_path):
    """Aer works in its job's pool thread and its OpenMP threads while the task's thread waits:
    the task is charged what the process spent meanwhile, read from outside the process."""
    simulate, outside = _simulate_under_outside_sampler(tmp_path, shots=300)
    profile = simulate.profile
    assert profile.cpu_scope == "process"
    assert profile.cpu_s > 20 * profile.thread_cpu_s  # the work was not the task's own thread's
    # the outside reading moves in clock ticks (10 ms) and is taken every 20 ms
    assert abs(profile.cpu_s - outside) <= 0.1 * outside + 0.06, (profile.cpu_s, outside)


def _busy_processes(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


@pytest.mark.slow
@linux_only
def test_on_a_busy_machine_the_simulation_is_still_charged_its_cpu(tmp_path):
    """Three busy processes started a minute before: the load average makes Aer use fewer
    threads (its work then runs in the job's pool thread alone), and the task keeps its CPU."""
    burners = _busy_processes(3)
    try:
        time.sleep(60)
        simulate, outside = _simulate_under_outside_sampler(tmp_path, shots=300)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    profile = simulate.profile
    assert abs(profile.cpu_s - outside) <= 0.1 * outside + 0.06, (profile.cpu_s, outside)
    assert profile.cpu_s >= 0.5 * profile.wall_s / 4  # on cpu, not waiting: a share of 4 busy


def _hash_for(seconds: float) -> float:
    """Burn CPU without the GIL (hashlib releases it on large buffers); its thread's CPU."""
    data = b"\1" * (4 << 20)
    start, cpu = time.perf_counter(), time.thread_time()
    while time.perf_counter() - start < seconds:
        hashlib.sha256(data).digest()
    return time.thread_time() - cpu


def _side_by_side(name: str, **bodies) -> dict[str, llqm.Profile]:
    """Run each body as a task of its name, each in its own thread, all starting together (the
    sampler ticking every 20 ms); the tasks' profiles by name. A body takes its task's handle."""
    set_sample_interval(0.02)
    try:
        with llqm.run(name) as run:
            together = threading.Barrier(len(bodies))

            def task(task_name: str, body) -> None:
                with llqm.run_context(run), llqm.task(task_name) as handle:
                    together.wait()
                    body(handle)

            _all_in_threads([functools.partial(task, *item) for item in bodies.items()])
    finally:
        set_sample_interval(0.2)
    return {t.name: t.profile for t in llqm.ProfileStore().tasks(run.id)}


def _all_in_threads(works) -> None:
    """Run each of ``works`` in a thread of its own, all at once, and wait for them all."""
    threads = [threading.Thread(target=work) for work in works]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _in_a_thread(work) -> None:
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()


def test_cpu_no_task_spent_goes_to_the_task_that_waited_on_it(store_path):
    """Two tasks at once: one computes in its own thread, the other waits on a thread that is no
    task's. The waiting task is charged that thread's CPU; nothing is lost or charged twice.
    Both compute without the GIL, so that neither starves the other."""
    spent: dict[str, float] = {}
    tasks = _side_by_side(
        "beside",
        computes=lambda _: spent.update(computes=_hash_for(0.6)),
        waits=lambda _: _in_a_thread(lambda: spent.update(helper=_hash_for(0.6))),
    )
    computes, waits = tasks["computes"], tasks["waits"]
    assert computes.cpu_scope == waits.cpu_scope == "shared"
    waited_share = waits.cpu_s - waits.thread_cpu_s
    computed_share = computes.cpu_s - computes.thread_cpu_s
    assert waited_share > computed_share >= 0
    assert waited_share >= 0.5 * spent["helper"]
    charged = computes.cpu_s + waits.cpu_s
    owned = computes.thread_cpu_s + waits.thread_cpu_s + spent["helper"]
    assert 0.8 * owned <= charged <= 1.1 * owned + 0.05


def test_a_pool_thread_lent_to_a_task_is_charged_to_it_and_not_shared(store_path):
    """``TaskHandle.worker``: a pool thread's work for a task beside another task is that
    task's, and the other task gets none of it."""
    spent: dict[str, float] = {}

    def lends_a_thread(handle) -> None:
        def work() -> None:
            with handle.worker():
                spent["worker"] = _hash_for(0.5)

        _in_a_thread(work)

    tasks = _side_by_side("lent", other=lambda _: time.sleep(0.6), owner=lends_a_thread)
    assert tasks["owner"].cpu_s >= spent["worker"]
    assert tasks["other"].cpu_s <= 0.25 * spent["worker"]


@pytest.mark.skipif(not high_water().available, reason="the OS keeps no resettable peak")
def test_a_peak_shorter_than_the_sampler_interval_is_seen_and_the_next_task_grows_by_nothing(
    store_path,
):
    """300 MB held for 0.05 s, in a task shorter than the sampler's interval (no reading of its
    own): its peak is at least 300 MB above its start, from the kernel's high-water mark reset
    at its start."""
    size = 300 << 20
    set_sample_interval(5.0)
    with llqm.run("short peak") as run:
        with llqm.task("before"):
            busy(0.01)
        with llqm.task("holds"):
            held = bytearray(size)
            held[::4096] = b"\1" * len(held[::4096])  # touch every page
            time.sleep(0.05)
            del held
        with llqm.task("after"):
            busy(0.01)
    set_sample_interval(0.2)
    tasks = {t.name: t.profile for t in llqm.ProfileStore(store_path).tasks(run.id)}
    holds, after = tasks["holds"], tasks["after"]
    assert holds.readings == "light+hwm"
    assert holds.peak_rss_bytes - holds.start_rss_bytes >= 300_000_000  # 300 MB
    assert holds.rss_growth_bytes < size // 10
    assert after.rss_growth_bytes > -(size // 10)
    assert after.peak_rss_bytes < holds.peak_rss_bytes  # the mark was reset at its start


@pytest.mark.skipif(not high_water().available, reason="the OS keeps no resettable peak")
def test_a_parent_keeps_the_peak_of_a_child_whose_start_reset_the_mark(store_path):
    size = 200 << 20
    with llqm.run("nested peak") as run:
        with llqm.task("parent"):
            held = bytearray(size)
            held[::4096] = b"\1" * len(held[::4096])
            del held
            with llqm.task("child"):
                busy(0.01)
    tasks = {t.name: t.profile for t in llqm.ProfileStore(store_path).tasks(run.id)}
    parent, child = tasks["parent"], tasks["child"]
    assert parent.peak_rss_bytes - parent.start_rss_bytes >= 0.95 * size
    assert child.peak_rss_bytes - child.start_rss_bytes < size // 2


def test_a_profiled_program_reads_its_own_high_water_mark_unchanged(tmp_path):
    """Under ``llqm profile`` the kernel's mark is the program's: it is never reset."""
    script = tmp_path / "peak.py"
    script.write_text(
        "import resource\n"
        "held = bytearray(200 << 20); held[::4096] = b'\\1' * len(held[::4096]); del held\n"
        "import llqm_core as llqm\n"
        "with llqm.task('after'):\n"
        "    pass\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 >= 200 << 20)\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "llqm_core.cli",
            "profile",
            "--store",
            str(tmp_path / "s.sqlite"),
            str(script),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


@pytest.mark.skipif(not high_water().available, reason="the OS keeps no resettable peak")
def test_a_program_started_by_a_bigger_one_reads_its_own_peaks(tmp_path):
    """An ``exec`` from a larger process pins ``ru_maxrss`` at that process's peak (a pipeline
    started from a big notebook kernel or test runner): its tasks' peaks are still their own."""
    parent = 400 << 20
    held = bytearray(parent)
    held[::4096] = b"\1" * len(held[::4096])  # the parent's peak, which the child inherits
    store = tmp_path / "s.sqlite"
    child = (
        "import llqm_core as llqm\n"
        f"with llqm.run('spawned', store={str(store)!r}) as run:\n"
        "    with llqm.task('holds'):\n"
        "        held = bytearray(50 << 20); held[::4096] = b'\\1' * len(held[::4096]); del held\n"
        "    with llqm.task('small'):\n"
        "        pass\n"
        "print(run.id)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    del held
    assert done.returncode == 0, done.stderr
    tasks = {t.name: t.profile for t in llqm.ProfileStore(store).tasks(done.stdout.split()[-1])}
    holds, small = tasks["holds"], tasks["small"]
    assert holds.readings.endswith("+hwm")
    assert 0.95 * (50 << 20) <= holds.peak_rss_bytes - holds.start_rss_bytes < 100 << 20
    assert small.peak_rss_bytes < parent  # not the parent's peak


def test_a_run_of_calls_detail_takes_its_tasks_memory_from_the_sampler(store_path):
    """``calls`` detail records each call's times alone: its tasks read no RSS of their own and
    leave the kernel's mark alone (``+sampled``); the default detail reads them (``+hwm``)."""
    with llqm.run("calls", detail="calls") as calls:
        with llqm.task("t"):
            pass
    with llqm.run("full") as full:
        with llqm.task("t"):
            pass
    store = llqm.ProfileStore(store_path)
    (sampled,) = store.tasks(calls.id)
    (own,) = store.tasks(full.id)
    assert sampled.profile.readings == "light+sampled"
    assert own.profile.readings == ("light+hwm" if high_water().available else "light")


def test_a_pool_thread_lent_before_a_second_task_starts_stays_its_owners(store_path):
    """A job's pool thread starts work for a task alone (the ledger follows no thread then);
    a task of another thread starts meanwhile: the work is still the first task's alone."""
    spent: dict[str, float] = {}
    lent = threading.Event()
    set_sample_interval(0.02)
    try:
        with llqm.run("lent early") as run:

            def owner() -> None:
                with llqm.run_context(run), llqm.task("owner") as handle:

                    def work() -> None:
                        with handle.worker():
                            lent.set()
                            spent["worker"] = _hash_for(0.8)

                    _in_a_thread(work)

            def other() -> None:
                lent.wait()
                time.sleep(0.1)
                with llqm.run_context(run), llqm.task("other"):
                    time.sleep(0.5)

            _all_in_threads([owner, other])
    finally:
        set_sample_interval(0.2)
    tasks = {t.name: t.profile for t in llqm.ProfileStore().tasks(run.id)}
    assert tasks["other"].cpu_scope == "shared"
    assert tasks["other"].cpu_s <= 0.25 * spent["worker"]
    assert tasks["owner"].cpu_s >= 0.9 * spent["worker"]
