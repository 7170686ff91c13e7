"""Measuring one task from inside its own process.

More in docs/modules.md (``llqm_core.runtime.measure``).
"""

from __future__ import annotations

import os
import socket
import threading
import time

from ..model.records import Profile
from .memory import last_usage, read_usage
from .sampler import Watch, shared_sampler
from .thread_ids import native_thread_id

HOST = socket.gethostname()


# The kernel's thread id, not ``threading.get_ident``: Python reuses an ident as soon as its thread
# has ended, which would join two worker threads into one on the critical path.
_perf_counter, _thread_time, _process_time, _get_ident = (
    time.perf_counter,
    time.thread_time,
    time.process_time,
    native_thread_id,
)


#: A task reuses the process's last reading of memory and children's CPU if it is younger than this
#: many of the sampler's intervals (the sampler reads once an interval while tasks run).
READING_AGE_INTERVALS = 2.0
#: A task shorter than this is charged its own thread's CPU: where the process's CPU clock moves
#: a scheduler tick (1-10 ms) at a time, 0.2-1 ms tasks read 5-10 ms of other threads' CPU.
THREAD_SCOPE_BELOW_S = 0.01
_CPUS = os.cpu_count() or 1
_NOT_MAIN: dict[int, float] = {}  # a task of another thread than the main one: thread CPU only


class _OtherThreads:
    """The CPU clocks of the process's Python threads other than the main thread and LLQM's own
    (named ``llqm-...``): an engine's, a pool's, the program's. A main-thread task is charged the
    process's CPU less theirs, which leaves its own thread and the helper threads of its native
    libraries (Aer's OpenMP pool, not Python threads). The list is made again only when the
    number of threads changes, so a program without such threads reads nothing."""

    def __init__(self) -> None:
        self.count = -1
        self.clocks: list[tuple[int, int]] = []  # (thread ident, CPU clock id)

    def read(self) -> dict[int, float] | None:
        """Each such thread's CPU seconds so far; None when there are none."""
        count = len(_running) if _running is not None else threading.active_count()
        if count != self.count:
            current = threading.current_thread()
            self.clocks = []
            for thread in threading.enumerate():
                if thread is current or thread.name.startswith(LLQM_THREAD_PREFIX):
                    continue
                try:
                    self.clocks.append((thread.ident, time.pthread_getcpuclockid(thread.ident)))  # type: ignore[arg-type]
                except (OSError, TypeError, AttributeError):
                    continue  # ended meanwhile, or a platform without thread clocks
            self.count = count
        if not self.clocks:
            return None
        found = {}
        for ident, clock in self.clocks:
            try:
                found[ident] = time.clock_gettime(clock)
            except OSError:  # ended since the list was made
                self.count = -1
        return found


_other_threads = _OtherThreads()
#: The interpreter's table of started threads, whose size changes as one starts or ends: read
#: without ``threading.active_count``'s lock at every main-thread task's start (that function
#: where a Python lacks the table).
_running: dict | None = getattr(threading, "_active", None)
#: The main thread's kernel id, asked once per process (a forked child's main thread is new).
_main_thread_id: list[int | None] = [None]


def _main_id() -> int | None:
    found = _main_thread_id[0] = threading.main_thread().native_id
    return found


def _others_cpu(start: dict[int, float] | None, workers: dict[int, float] | None) -> float:
    """What the other Python threads (``_OtherThreads``) used since ``start`` was read, but for
    the ``workers`` that did the task's own work."""
    now = _other_threads.read()
    if not now:
        return 0.0
    start, workers = start or {}, workers or {}
    return sum(cpu - start.get(ident, 0.0) for ident, cpu in now.items() if ident not in workers)


#: The names of LLQM's own threads start so (the sampler, the store's writer, the span builder).
LLQM_THREAD_PREFIX = "llqm-"


class _WarmupSpent(threading.local):
    """Wall and thread CPU seconds of the warm-ups (``runtime.warmup``) run so far in this thread:
    a task reads them at its start and end, and leaves what grew in between out of its own time."""

    wall = 0.0
    cpu = 0.0


warmup_spent = _WarmupSpent()


def _forget_in_child() -> None:
    _other_threads.count = -1  # the parent's threads are not the child's
    _main_thread_id[0] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


class Measurement(Watch):
    """Started at a task's start, stopped at its end: the result is the task's profile.

    It is the ``Watch`` the shared sampler folds its readings into meanwhile, and a task's
    handle is one (``runtime.tasks``): one object per task, not three. ``Measurement()`` alone
    measures a stretch of code that is no task (a warm-up, a re-analysis)."""

    __slots__ = (
        "_sampler",
        "_start",
        "_start_process_cpu",
        "_start_thread_cpu",
        "_start_wall",
        "_start_warmup",
        "_start_others",
        "warmup_wall_s",
        "warmup_cpu_s",
    )

    def __init__(self) -> None:
        self.begin()

    def begin(self) -> None:
        """Take the start readings: the last thing a task's start does, so that LLQM's own
        bookkeeping is not measured."""
        self._sampler = sampler = shared_sampler()
        self._start = start = last_usage(sampler.interval_s * READING_AGE_INTERVALS)
        Watch.__init__(self, _get_ident(), start.rss)
        sampler.watch(self)
        self._start_process_cpu = _process_time()
        self._start_warmup = (warmup_spent.wall, warmup_spent.cpu)
        # the other Python threads' CPU, for a main-thread task charged the process's CPU
        main = self.thread == (_main_thread_id[0] or _main_id())
        self._start_others = _other_threads.read() if main else _NOT_MAIN
        self.warmup_wall_s = self.warmup_cpu_s = 0.0  # left out of the profile, set by ``stop``
        self._start_thread_cpu = _thread_time()
        self._start_wall = _perf_counter()

    def elapsed_s(self) -> float:
        """Wall seconds since the task's start on the clock of its profile's ``wall_s``: a part
        of the task timed so (a transpile's setup) never comes out longer than the whole. Warm-up
        in the task's thread since its start (``runtime.warmup``) is left out, as from the whole."""
        elapsed = _perf_counter() - self._start_wall
        if _get_ident() == self.thread:
            elapsed -= warmup_spent.wall - self._start_warmup[0]
        return max(elapsed, 0.0)

    def stop(self, qpu_s: float | None = None, queue_s: float | None = None) -> Profile:
        """The task's profile, with the QPU and queue seconds that backends reported for it."""
        return Profile.from_values(self.stop_values(qpu_s, queue_s))

    def stop_values(
        self,
        qpu_s: float | None = None,
        queue_s: float | None = None,
        workers: dict[int, float] | None = None,
    ) -> tuple:
        """``stop``'s profile as its values alone (``Profile.values``), which is what a task's
        journal frame keeps: no ``Profile`` is made on the task's path. ``workers``: the CPU
        seconds other threads spent on the task's work, by thread (``record_worker_cpu``)."""
        wall = _perf_counter() - self._start_wall
        thread_cpu = _thread_time() - self._start_thread_cpu
        process_cpu = _process_time() - self._start_process_cpu
        sampler = self._sampler
        start = self._start
        light = wall < sampler.interval_s
        if light:  # memory as the sampler last read it; children's CPU not read (0)
            end = last_usage(sampler.interval_s * READING_AGE_INTERVALS)
            children_cpu = 0.0
        else:
            end = read_usage()
            children_cpu = (end.times.children_user - start.times.children_user) + (
                end.times.children_system - start.times.children_system
            )
        warm_wall = warmup_spent.wall - self._start_warmup[0]
        # a warm-up ran inside the task, in its thread: not the task's own time (a task that
        # ends in another thread than it started in reads another thread's count: none of it)
        if warm_wall > 0 and _get_ident() == self.thread:
            warm_cpu = warmup_spent.cpu - self._start_warmup[1]
            self.warmup_wall_s, self.warmup_cpu_s = warm_wall, warm_cpu
            wall = max(wall - warm_wall, 0.0)
            thread_cpu = max(thread_cpu - warm_cpu, 0.0)
            process_cpu = max(process_cpu - warm_cpu, 0.0)
        sampler.unwatch(self)
        end_rss = end.rss
        peak = max(self.max_rss, end_rss)  # the end reading is the task's last sample
        if not light and end.hwm is not None and start.hwm is not None and end.hwm > start.hwm:
            peak = max(peak, end.hwm)
        others = self._start_others
        if self.concurrent or wall < THREAD_SCOPE_BELOW_S or others is _NOT_MAIN:
            scope, cpu = "thread", thread_cpu + children_cpu
            if workers:
                cpu += sum(workers.values())
        else:  # the process's, less its other Python threads' but its workers': its native
            # libraries' helpers count (a worker that has ended is in the process's CPU anyway)
            process_cpu -= _others_cpu(others, workers)
            scope = "process"
            cpu = min(max(process_cpu, thread_cpu), wall * _CPUS) + children_cpu
        # in ``PROFILE_VALUE_NAMES`` order
        return (
            wall,
            cpu,
            scope,
            thread_cpu,
            process_cpu,
            children_cpu,
            start.rss,
            end_rss,
            peak,
            end_rss - start.rss,
            self.samples if light else self.samples + 1,
            qpu_s,
            queue_s,
            sampler.pid,
            HOST,
            self.thread,
            "light" if light else "full",
        ) + (self._gpu_values() if sampler.gpu.available else sampler.gpu.unavailable_values)

    def _gpu_values(self) -> tuple:
        """What the sampler read of an available GPU while the task ran, as ``GpuProfile``'s
        values."""
        probe = self._sampler.gpu
        if not self.gpu_readings:
            return probe.not_sampled.values()
        return (
            True,
            None,
            probe.devices,
            self.gpu_util_max,
            self.gpu_util_sum / self.gpu_readings,
            self.gpu_memory_max,
        )
