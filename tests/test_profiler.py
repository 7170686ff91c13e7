"""The profiler measures what a task really used: CPU, memory, children, concurrency, GPU."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest
from conftest import busy

import llqm_core as llqm
import llqm_core.plugin
import llqm_core.store.writer as store_writer
from llqm_core.runtime import measure
from llqm_core.runtime.gpu import visible_devices
from llqm_core.runtime.sampler import shared_sampler


def finished(store_path, run) -> dict[str, llqm.TaskRecord]:
    return {t.name: t for t in llqm.ProfileStore(store_path).tasks(run.id)}


def test_cpu_bound_task_reports_cpu_close_to_wall_and_sleeping_task_near_zero(store_path):
    with llqm.run("cpu vs sleep") as run:
        with llqm.task("spin"):
            busy(0.3)
        with llqm.task("nap"):
            time.sleep(0.3)
    tasks = finished(store_path, run)
    spin, nap = tasks["spin"].profile, tasks["nap"].profile
    assert spin.wall_s >= 0.29
    # its 0.3 s of CPU, never more than its wall time (one thread); a busy machine stretches the
    # wall time, so the CPU's share of it is no measure
    assert spin.cpu_s >= 0.29 and spin.cpu_s <= 1.1 * spin.wall_s
    assert nap.wall_s >= 0.29
    assert nap.cpu_s < 0.05


def test_task_allocating_300_mb_reports_peak_rss_300_mb_above_its_start(store_path):
    with llqm.run("allocate") as run:
        with llqm.task("alloc"):
            block = bytearray(300 * 1024 * 1024)
            block[::4096] = b"x" * len(block[::4096])  # touch every page so it is resident
            time.sleep(
                0.5
            )  # held while the task works, as real data is (two sampler intervals and more)
            del block
    profile = finished(store_path, run)["alloc"].profile
    assert profile.peak_rss_bytes - profile.start_rss_bytes >= 300 * 1024 * 1024
    assert profile.end_rss_bytes < profile.peak_rss_bytes


def test_a_peak_below_the_process_high_and_gone_by_the_task_end_is_seen_by_the_sampler(store_path):
    def hold(megabytes: int, seconds: float) -> None:
        block = bytearray(megabytes * 1024 * 1024)
        block[::4096] = b"x" * len(block[::4096])
        time.sleep(seconds)
        del block

    llqm.plugin.set_sample_interval(0.05)
    try:
        with llqm.run("peaks") as run:
            with llqm.task("high"):
                hold(400, 0)  # the process's high-water mark is now above what follows
            # the last reading, which a task's start reuses while it is young, is then older than
            # any taken while the 400 MB were held
            time.sleep(0.15)
            with llqm.task("dip"):
                time.sleep(0.1)  # past the sampler's first tick of this task
                hold(100, 0.5)  # ten intervals: a busy machine may delay a tick or two
                time.sleep(0.1)
    finally:
        llqm.plugin.set_sample_interval(0.02)
    dip = finished(store_path, run)["dip"].profile
    assert dip.peak_rss_bytes - dip.start_rss_bytes >= 100 * 1024 * 1024
    assert dip.end_rss_bytes < dip.peak_rss_bytes - 50 * 1024 * 1024


def test_concurrent_threads_each_get_their_own_cpu_time(store_path):
    with llqm.run("threads") as run:
        started = threading.Barrier(2)

        def work(name: str, seconds: float) -> None:
            with llqm.run_context(run):
                with llqm.task(name):
                    started.wait()
                    busy(seconds)

        threads = [
            threading.Thread(target=work, args=("short", 0.1)),
            threading.Thread(target=work, args=("long", 0.3)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    tasks = finished(store_path, run)
    short, long_ = tasks["short"].profile, tasks["long"].profile
    assert short.cpu_scope == "shared" and long_.cpu_scope == "shared"
    assert 0.08 <= short.cpu_s <= 0.15
    assert 0.25 <= long_.cpu_s <= 0.4


def test_each_task_names_the_kernel_thread_it_ran_in_also_after_a_fork(store_path):
    """The thread id is asked of the kernel once per thread; a forked child's thread is another."""
    ids: dict[str, int] = {}
    with llqm.run("thread ids") as run:

        def work(name: str) -> None:
            with llqm.run_context(run):
                for i in range(2):
                    with llqm.task(f"{name}.{i}"):
                        ids[name] = threading.get_native_id()

        for name in ("a", "b"):
            thread = threading.Thread(target=work, args=(name,))
            thread.start()
            thread.join()
        with llqm.task("main"):
            pass
        read, write = os.pipe()
        child = os.fork()
        if child == 0:  # the child profiles into the same run, as a worker process does
            try:
                with llqm.task("child") as handle:
                    pass
                os.write(
                    write, f"{handle.record.profile.thread} {threading.get_native_id()}".encode()
                )
            finally:
                os._exit(0)
        os.waitpid(child, 0)
        recorded, actual = map(int, os.read(read, 64).split())
    tasks = finished(store_path, run)
    assert {tasks[f"{n}.{i}"].profile.thread for n in "ab" for i in range(2)} == set(ids.values())
    assert tasks["a.0"].profile.thread == tasks["a.1"].profile.thread == ids["a"]
    assert tasks["main"].profile.thread == threading.get_native_id()
    assert recorded == actual != threading.get_native_id()


def test_only_tasks_that_overlap_a_task_of_another_thread_count_their_thread_cpu(store_path):
    """The order is forced by events: short tasks before, during and after a long one in another thread."""
    long_started, short_done = threading.Event(), threading.Event()
    with llqm.run("overlap") as run:

        def long_task() -> None:
            with llqm.run_context(run):
                with llqm.task("long"):
                    long_started.set()
                    short_done.wait(10)

        def short_tasks(phase: str) -> None:
            for i in range(20):
                with llqm.task(f"{phase} {i}"):
                    if phase != "during":  # long enough for the process's CPU clock
                        time.sleep(measure.THREAD_SCOPE_BELOW_S)

        short_tasks("before")
        other = threading.Thread(target=long_task)
        other.start()
        long_started.wait(10)
        short_tasks("during")
        short_done.set()
        other.join()
        short_tasks("after")
    scopes = {name: task.profile.cpu_scope for name, task in finished(store_path, run).items()}
    assert scopes.pop("long") != "process"  # its thread's, and a share of the others' when long
    assert {scope for name, scope in scopes.items() if name.startswith("during")} == {"thread"}
    assert {scope for name, scope in scopes.items() if not name.startswith("during")} == {"process"}


def test_tasks_of_many_threads_at_once_all_reach_the_store_each_once(store_path, monkeypatch):
    """Threads start and end tasks while the store's writer takes running rows (no lock on the
    tasks' side)."""
    monkeypatch.setattr(store_writer, "DRAIN_INTERVAL_S", 0.01)
    monkeypatch.setattr(store_writer, "START_ROW_DELAY_S", 0.0)
    with llqm.run("crowd", store=llqm.ProfileStore(store_path)) as run:

        def work(thread: int) -> None:
            with llqm.run_context(run):
                for i in range(100):
                    with llqm.task(f"{thread}.{i}"):
                        busy(0.0005 if i % 10 else 0.02)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    tasks = llqm.ProfileStore(store_path).tasks(run.id)
    assert sorted(t.name for t in tasks) == sorted(f"{n}.{i}" for n in range(8) for i in range(100))
    assert {t.status for t in tasks} == {llqm.TaskStatus.COMPLETED}


def test_cpu_of_child_processes_the_task_waited_for_is_counted(store_path):
    with llqm.run("children") as run:
        with llqm.task("spawn"):
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass",
                ],
                check=True,
            )
    profile = finished(store_path, run)["spawn"].profile
    assert profile.children_cpu_s >= 0.3
    assert profile.cpu_s >= profile.children_cpu_s
    assert profile.thread_cpu_s < 0.2


def test_without_a_gpu_the_profile_says_so_and_nothing_fails(store_path, spans):
    with llqm.run("gpu") as run:
        with llqm.task("no gpu"):
            pass
    gpu = finished(store_path, run)["no gpu"].profile.gpu
    probe = llqm.plugin.gpu_probe()
    assert gpu.available is probe.available
    if not gpu.available:
        assert gpu.reason
        span = next(s for s in spans.get_finished_spans() if s.name == "no gpu")
        assert span.attributes["llqm.gpu.available"] is False
        assert span.attributes["llqm.gpu.unavailable_reason"] == gpu.reason


def _gpu_matmuls():
    """Work that keeps an NVIDIA GPU busy and holds 4 GiB on it, through whichever CUDA array
    library is installed (neither is an LLQM dependency); None where there is none or no GPU."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():

        def work(seconds: float) -> None:
            held = torch.empty(4 << 30, dtype=torch.uint8, device="cuda").fill_(1)
            a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                for _ in range(20):
                    a = (a @ a).clamp_(-1, 1)
                torch.cuda.synchronize()
            del held, a
            torch.cuda.empty_cache()

        return work
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no cupy, or no CUDA device it can use
        return None

    def work(seconds: float) -> None:
        held = cupy.ones(4 << 30, dtype=cupy.uint8)
        a = cupy.random.standard_normal((8192, 8192), dtype=cupy.float32)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            for _ in range(5):
                a = cupy.clip(a @ a, -1, 1)
            cupy.cuda.Device().synchronize()
        del held, a
        cupy.get_default_memory_pool().free_all_blocks()

    return work


@pytest.mark.skipif(
    not llqm.plugin.gpu_probe().available, reason="needs an NVIDIA GPU that NVML can read"
)
def test_a_task_computing_on_the_gpu_reports_its_utilisation_and_the_memory_it_held(
    store_path, spans
):
    work = _gpu_matmuls()
    if work is None:
        pytest.skip("needs torch or cupy with CUDA to put work on the GPU")
    _, used_before = llqm.plugin.gpu_probe().read()
    with llqm.run("gpu") as run:
        with llqm.task("idle"):
            time.sleep(1.2)  # NVML averages utilisation over up to a second: let the busy one pass
        with llqm.task("matmul"):
            work(1.5)
        with llqm.task("short"):
            pass
    tasks = finished(store_path, run)
    gpu, idle, short = (tasks[name].profile.gpu for name in ("matmul", "idle", "short"))
    assert (
        gpu.available and gpu.devices == llqm.plugin.gpu_probe().devices >= 1 and gpu.reason is None
    )
    assert gpu.utilization_max_pct >= 50
    assert 0 < gpu.utilization_mean_pct <= gpu.utilization_max_pct
    assert gpu.memory_peak_bytes >= used_before + (4 << 30)
    assert idle.available and idle.memory_peak_bytes < used_before + (4 << 30)
    # no reading falls within a task shorter than the sampler's interval: the profile says so
    assert short.available and short.utilization_max_pct is None and short.memory_peak_bytes is None
    assert "sampler" in short.reason
    span = next(s for s in spans.get_finished_spans() if s.name == "matmul")
    assert span.attributes["llqm.gpu.available"] is True
    assert span.attributes["llqm.gpu.utilization_max_pct"] == gpu.utilization_max_pct
    assert span.attributes["llqm.gpu.memory_peak_bytes"] == gpu.memory_peak_bytes


def test_sampler_interval_is_configurable_and_one_sampler_serves_all_tasks(store_path):
    llqm.plugin.set_sample_interval(0.005)
    try:
        with llqm.run("sampler") as run:
            with llqm.task("outer"):
                with llqm.task("inner"):
                    time.sleep(0.2)
        tasks = finished(store_path, run)
        assert tasks["inner"].profile.samples >= 10
        assert tasks["outer"].profile.samples >= tasks["inner"].profile.samples
        names = [t.name for t in threading.enumerate()]
        assert names.count("llqm-sampler") == 1
    finally:
        llqm.plugin.set_sample_interval(0.02)


def test_bad_sampling_and_export_settings_are_refused_in_one_sentence(monkeypatch):
    import pytest

    from llqm_core.runtime.sampler import interval_from_env
    from llqm_core.telemetry.tracing import export_timeout_s

    monkeypatch.setenv("LLQM_SAMPLE_INTERVAL", "fast")
    with pytest.raises(
        llqm.UserError, match=r"LLQM_SAMPLE_INTERVAL='fast' is not a number of seconds\."
    ):
        interval_from_env()
    monkeypatch.setenv("LLQM_SAMPLE_INTERVAL", "0")
    with pytest.raises(llqm.UserError, match=r"out of range; allowed is 0\.001 to 60 seconds\."):
        interval_from_env()
    with pytest.raises(llqm.UserError, match="sample interval -1 is out of range"):
        llqm.plugin.set_sample_interval(-1)
    monkeypatch.setenv("LLQM_EXPORT_TIMEOUT", "-2")
    with pytest.raises(llqm.UserError, match=r"allowed is 0 seconds or more\."):
        export_timeout_s()


def test_the_gpus_read_are_those_cuda_visible_devices_leaves_to_the_process():
    uuids = ["GPU-8932f937-d72c-4106", "GPU-8932aaaa-0000-0000", "GPU-11111111-2222-3333"]
    assert visible_devices(None, uuids) == [0, 1, 2]
    assert visible_devices("2,0", uuids) == [2, 0]
    assert visible_devices("0,2,-1,1", uuids) == [
        0,
        2,
    ]  # the list ends at the first entry naming no GPU
    assert visible_devices("0,7,1", uuids) == [0]
    assert visible_devices("GPU-1111,GPU-8932f", uuids) == [
        2,
        0,
    ]  # a unique UUID prefix names its GPU
    assert visible_devices("GPU-8932,1", uuids) == []  # an ambiguous prefix names none
    assert visible_devices("1,1", uuids) == [1]
    assert visible_devices("", uuids) == []
    assert visible_devices(" 1 , 2 ", uuids) == [1, 2]
    assert visible_devices("MIG-5c4b1b3e-0000/1/0", uuids) == [0, 1, 2]


def test_a_short_task_is_not_charged_the_cpu_of_threads_beside_it(store_path):
    """A pool's short tasks while another thread (an engine's, say) burns CPU, and short tasks of
    the main thread: a task under 10 ms is charged its own thread's CPU alone; one the GIL
    stretched past 10 ms is alone in the process and charged the process's CPU over its interval
    (docs/figures.md), never more than its wall time on the cores."""
    stop = threading.Event()

    def burner() -> None:
        while not stop.is_set():
            sum(range(10_000))

    beside = threading.Thread(target=burner)
    beside.start()
    try:
        with llqm.run("pool") as run:

            def pool_tasks() -> None:
                with llqm.run_context(run):
                    for i in range(30):
                        with llqm.task(f"pool {i}"):
                            time.sleep(0.0005)

            worker = threading.Thread(target=pool_tasks)
            worker.start()
            worker.join()
            for i in range(30):
                with llqm.task(f"main {i}"):
                    time.sleep(0.0005)
    finally:
        stop.set()
        beside.join()
    for name, task in finished(store_path, run).items():
        profile = task.profile
        if profile.wall_s < measure.THREAD_SCOPE_BELOW_S:
            assert profile.cpu_scope == "thread", name
            assert profile.cpu_s == profile.thread_cpu_s <= profile.wall_s + 0.001, name
        else:
            assert profile.cpu_scope == "process", name
            assert profile.cpu_s <= profile.wall_s * (os.cpu_count() or 1), name


def test_a_task_shorter_than_the_sampler_interval_reads_light_and_a_longer_one_full(
    store_path, spans
):
    """Short tasks take their memory from the sampler's readings and say so; their CPU is their
    thread's below 10 ms, never more than their wall time. A long task reads its own peak."""
    sampler = shared_sampler()
    before = sampler.interval_s
    llqm_core.plugin.set_sample_interval(0.05)
    try:
        with llqm.run("light and full") as run:
            for i in range(30):
                with llqm.task(f"short {i}"):
                    busy(0.001)
            with llqm.task("long"):
                held = b"\1" * (200 << 20)
                busy(0.1)
                del held
    finally:
        llqm_core.plugin.set_sample_interval(before)
    tasks = finished(store_path, run)
    long = tasks.pop("long").profile
    assert long.readings.startswith("full") and long.samples >= 2
    assert long.peak_rss_bytes >= long.start_rss_bytes + (150 << 20)
    for task in tasks.values():
        p = task.profile
        assert p.readings.startswith("light") and p.children_cpu_s == 0
        assert p.cpu_s <= p.wall_s * (os.cpu_count() or 1) + 0.001
        if p.wall_s < measure.THREAD_SCOPE_BELOW_S:  # longer ones, under load, read the process
            assert p.cpu_scope == "thread" and p.cpu_s == p.thread_cpu_s <= p.wall_s + 0.001
        assert 0 < p.start_rss_bytes <= p.peak_rss_bytes and p.end_rss_bytes <= p.peak_rss_bytes
        assert p.samples >= 1
    readings = {
        s.name: s.attributes.get("llqm.memory.readings") for s in spans.get_finished_spans()
    }
    assert readings["long"].startswith("full") and readings["short 0"].startswith("light")
