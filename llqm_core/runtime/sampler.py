"""One background sampler per process, shared by every task that is running.

A thread per task would multiply the sampling cost by the concurrency; instead each
running task registers a ``Watch`` and the single sampler thread folds every reading into
all watches. Each tick's reading is also the process's last (``runtime.memory``): the memory of
tasks shorter than the interval, which read none of their own. The thread parks (no readings, no
CPU) once no task has run for a second.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from ..model.memory_limits import OUT_OF_MEMORY, RSS_CURVE, limit_text
from ..model.settings import seconds_from_env, seconds_in_range
from .cpu_shares import CpuShares
from .flight import FlightRecorder
from .gpu import gpu_probe
from .high_water import high_water
from .memory import read_usage
from .per_process import PerProcess

#: Each tick costs CPU (docs/performance.md); the kernel's high-water mark catches new highs anyway.
DEFAULT_INTERVAL_S = 0.2
INTERVAL_ENV = "LLQM_SAMPLE_INTERVAL"
IDLE_PARK_S = 1.0
MIN_INTERVAL_S, MAX_INTERVAL_S = 0.001, 60.0


def interval_from_env() -> float:
    return seconds_from_env(INTERVAL_ENV, DEFAULT_INTERVAL_S, MIN_INTERVAL_S, MAX_INTERVAL_S)


class Watch:
    """The extremes one task saw while it ran, and whether a task in another thread ran meanwhile."""

    __slots__ = (
        "thread",
        "concurrent",
        "max_rss",
        "samples",
        "gpu_util_max",
        "gpu_util_sum",
        "gpu_readings",
        "gpu_memory_max",
    )

    def __init__(self, thread: int, rss: int) -> None:
        self.thread = thread
        self.concurrent = False
        self.max_rss = rss  # the task's reading at its start is its first sample
        self.samples = 1
        self.gpu_util_max: float | None = None
        self.gpu_util_sum = 0.0
        self.gpu_readings = 0
        self.gpu_memory_max: int | None = None

    def fold(self, rss: int, gpu: tuple[float, int] | None) -> None:
        self.samples += 1
        if rss > self.max_rss:
            self.max_rss = rss
        if gpu is None:
            return
        util, memory = gpu
        self.gpu_readings += 1
        self.gpu_util_sum += util
        self.gpu_util_max = util if self.gpu_util_max is None else max(self.gpu_util_max, util)
        self.gpu_memory_max = (
            memory if self.gpu_memory_max is None else max(self.gpu_memory_max, memory)
        )


class ResourceSampler:
    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.pid = (
            os.getpid()
        )  # a forked child makes a sampler of its own: every task's end names its process
        self.gpu = gpu_probe()
        self._watches: set[Watch] = set()
        self.shares = (
            CpuShares()
        )  # the CPU no task's thread spent, shared among tasks beside each other
        self._lock = threading.Lock()
        self._busy = threading.Event()
        self._ticking = False  # the event's state, read under the lock at every task's start
        self._thread: threading.Thread | None = None
        self.flight = FlightRecorder()  # the running tasks' rows, beside their stores, each tick

    def watch(self, watch: Watch) -> None:
        """Fold readings into ``watch`` (made by the task's own thread, from its first reading) until
        ``unwatch``; watches of tasks in other threads at the same time are marked ``concurrent``.

        Tasks in several threads and the sampler's thread share the set: each takes the lock."""
        with self._lock:
            watches = self._watches
            watches.add(watch)
            self.shares.enter(watch.thread)
            if len(watches) > 1:
                for other in watches:
                    if other.thread != watch.thread:
                        other.concurrent = watch.concurrent = True
            ticking = self._ticking
        if not ticking:
            self._start_ticking()

    def _start_ticking(self) -> None:
        with self._lock:
            self._ticking = True
            self._busy.set()
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="llqm-sampler", daemon=True)
                self._thread.start()

    def unwatch(self, watch: Watch) -> None:
        """Stop watching. A reading the thread took before may still be folded in meanwhile: it
        only raises maxima the task's own end reading has seen or would have."""
        with self._lock:
            if watch in self._watches:
                self._watches.discard(watch)
                self.shares.leave(watch.thread)

    def lend(self, thread: int, owner: int, now: float) -> None:
        """The calling thread (kernel id ``thread``, its CPU clock at ``now``) starts work for a
        task of thread ``owner``: its CPU is that thread's tasks' (``TaskHandle.worker``), not
        shared out as no task's."""
        with self._lock:
            self.shares.lend(thread, owner, now)

    def give_back(self, thread: int, now: float) -> None:
        """The calling thread's work for another thread's task ends, its CPU clock at ``now``."""
        with self._lock:
            self.shares.give_back(thread, now)

    def reset_peak(self) -> int | None:
        """Fold the kernel's high-water mark into every running task, then reset it to the
        current RSS: a task starting now reads, at its end, the highest RSS since its own start,
        however short the peak (``runtime.measure``). Returns the RSS the mark was reset to,
        None where it cannot be (the caller reads the RSS then)."""
        marks = high_water()
        if not marks.available:
            return None
        with self._lock:
            if self._watches:
                mark = marks.mark()
                for watch in self._watches:
                    if mark > watch.max_rss:
                        watch.max_rss = mark
            return marks.reset()

    def _loop(self) -> None:
        """Tick while tasks come and go; park only after ``IDLE_PARK_S`` without any, so short
        tasks in a row do not wake the thread once each (docs/performance.md)."""
        idle_s = 0.0
        busy = self._busy
        while True:
            if not busy.is_set():  # parked: wait for the next task rather than tick for nothing
                busy.wait()
            time.sleep(self.interval_s)
            with self._lock:
                watches = tuple(self._watches)
                self.shares.tick()
                if not watches:
                    idle_s += self.interval_s
                    if idle_s >= IDLE_PARK_S:  # ``watch`` reads ``_ticking`` under this lock
                        self._ticking = False
                        self._busy.clear()
                        idle_s = 0.0
            if not watches:
                if idle_s <= self.interval_s:  # the first idle tick: no task runs now
                    self._record_flight(watches, 0)
                continue
            idle_s = 0.0
            try:
                rss = read_usage().rss
                gpu = self.gpu.read() if self.gpu.available else None
            except OSError:
                continue
            for watch in watches:
                watch.fold(rss, gpu)
            self._record_flight(watches, rss)

    def _record_flight(self, watches: tuple[Watch, ...], rss: int) -> None:
        """The running tasks' rows beside their stores (``runtime.flight``); a failure there
        never stops the sampling."""
        try:
            self.flight.record(watches, rss)
        except Exception:  # noqa: BLE001 - the sampler must outlive any store's trouble
            pass


def out_of_memory_metrics(task_id: str, start_ns: int) -> dict[str, Any]:
    """What a task that ran out of memory (a ``MemoryError``: an allocation the OS refused) keeps
    of it: the limits in force (``memory.out_of_memory``) and its RSS curve up to the end."""
    curve = shared_sampler().flight.curve(task_id)
    try:
        curve.append([round((time.time_ns() - start_ns) / 1e9, 3), read_usage().rss])
    except OSError:
        pass
    return {OUT_OF_MEMORY: limit_text(), RSS_CURVE: curve}


#: This process's sampler (a forked child starts its own: threads do not survive a fork).
shared_sampler = PerProcess(lambda: ResourceSampler(interval_from_env())).get


def set_sample_interval(seconds: float) -> None:
    """Change the shared sampler's interval; takes effect at its next reading.

    Args:
        seconds: between two readings of the process's memory and CPU, above 0.
    """
    shared_sampler().interval_s = seconds_in_range(
        seconds, "sample interval", MIN_INTERVAL_S, MAX_INTERVAL_S
    )
