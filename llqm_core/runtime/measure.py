"""Measuring one task from inside its own process.

More in docs/modules.md (``llqm_core.runtime.measure``).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..model.records import Profile
from .high_water import high_water
from .memory import current_rss, last_usage, read_usage
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


#: A task reuses the process's last reading of children's CPU if it is younger than this many of
#: the sampler's intervals (the sampler reads once an interval while tasks run).
READING_AGE_INTERVALS = 2.0
#: A task shorter than this is charged its own thread's CPU (and its workers'): LLQM's own threads
#: (a store commit, a sampler tick) take a few milliseconds at a time, which a 1 ms task of the
#: process's CPU would be charged.
THREAD_SCOPE_BELOW_S = 0.01
_CPUS = os.cpu_count() or 1
EXACT_PEAKS_ENV = "LLQM_EXACT_PEAKS"


class PeakSetting:
    """Whether a task's start resets the kernel's high-water mark, so that its end reads the
    exact peak of however short a task (``ResourceSampler.reset_peak``). On for code that runs
    under LLQM's own API; off while LLQM watches a program it did not write (``llqm profile``,
    the ``%%llqm`` cell), since that program reading its own ``ru_maxrss`` would read the reset
    mark (docs/profiling.md, "Memory"). ``LLQM_EXACT_PEAKS=1`` or ``0`` decides everywhere."""

    def __init__(self) -> None:
        chosen = os.environ.get(EXACT_PEAKS_ENV, "").strip()
        self.forced = chosen in ("0", "1")
        self.on = chosen != "0"
        self._watching = 0

    @contextmanager
    def watching_a_program(self) -> Iterator[None]:
        """LLQM watches a program it did not write: its high-water mark is its own meanwhile."""
        self._watching += 1
        self.on = self.forced and self.on
        try:
            yield
        finally:
            self._watching -= 1
            if self._watching == 0 and not self.forced:
                self.on = True


exact_peaks = PeakSetting()


class _WarmupSpent(threading.local):
    """Wall and thread CPU seconds of the warm-ups (``runtime.warmup``) run so far in this thread:
    a task reads them at its start and end, and leaves what grew in between out of its own time."""

    wall = 0.0
    cpu = 0.0
    rss = 0  # bytes the warm-ups' imports and first calls grew the process by


warmup_spent = _WarmupSpent()


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
        "_start_share",
        "start_rss",
        "_exact_peak",
        "_fresh",
        "warmup_wall_s",
        "warmup_cpu_s",
    )

    def __init__(self) -> None:
        self.begin()

    def begin(self, fresh: bool = True) -> None:
        """Take the start readings: the last thing a task's start does, so that LLQM's own
        bookkeeping is not measured. ``fresh``: the task's own RSS at its start and end, and its
        exact peak where allowed; else (a run of ``calls`` detail, ``model.detail``) the
        sampler's last readings, as a task's times alone need (``readings`` ends in ``+sampled``)."""
        self._sampler = sampler = shared_sampler()
        self._start = last_usage(sampler.interval_s * READING_AGE_INTERVALS)
        self._fresh = fresh
        rss = sampler.reset_peak() if fresh and exact_peaks.on else None  # the peak since now
        self._exact_peak = rss is not None
        if rss is None:
            rss = current_rss() if fresh else self._start.rss
        self.start_rss = rss
        Watch.__init__(self, _get_ident(), rss)
        sampler.watch(self)
        self._start_share = sampler.shares.totals.get(self.thread, 0.0)
        self._start_process_cpu = _process_time()
        self._start_warmup = (warmup_spent.wall, warmup_spent.cpu, warmup_spent.rss)
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

    def so_far(self, rss: int) -> tuple:
        """The task's readings so far, taken by the sampler's thread while it runs, as its
        profile's values (``PROFILE_VALUE_NAMES``): wall and CPU since its start (the process's
        CPU while it ran alone, else its thread's at the sampler's last tick and its share of
        the rest), ``rss`` as its end and the highest reading as its peak. What a kill leaves of
        the task (``store.in_flight``): its ``readings`` say "last reading"."""
        sampler = self._sampler
        wall = _perf_counter() - self._start_wall
        process_cpu = _process_time() - self._start_process_cpu
        thread_cpu = sampler.shares.thread_cpu(self.thread)
        thread_cpu = 0.0 if thread_cpu is None else max(thread_cpu - self._start_thread_cpu, 0.0)
        if self.concurrent:
            scope = "shared"
            shared = sampler.shares.totals.get(self.thread, 0.0) - self._start_share
            cpu = min(thread_cpu + max(shared, 0.0), wall * _CPUS)
        else:
            scope, cpu = "process", min(process_cpu, wall * _CPUS)
        peak = max(self.max_rss, rss)
        measured = (wall, cpu, scope, thread_cpu, process_cpu, 0.0, rss, peak, rss - self.start_rss)
        return self._as_profile_values(measured, self.samples, None, None, "last reading")

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
        if light:  # children's CPU not read (0)
            end = last_usage(sampler.interval_s * READING_AGE_INTERVALS)
            children_cpu = 0.0
        else:
            end = read_usage()
            children_cpu = (end.times.children_user - start.times.children_user) + (
                end.times.children_system - start.times.children_system
            )
        end_rss = current_rss() if light and self._fresh else end.rss
        warm_wall = warmup_spent.wall - self._start_warmup[0]
        growth = end_rss - self.start_rss
        # a warm-up ran inside the task, in its thread: not the task's own time or memory (a task
        # that ends in another thread than it started in reads another thread's count: none of it)
        if warm_wall > 0 and _get_ident() == self.thread:
            growth -= warmup_spent.rss - self._start_warmup[2]
            warm_cpu = warmup_spent.cpu - self._start_warmup[1]
            self.warmup_wall_s, self.warmup_cpu_s = warm_wall, warm_cpu
            wall = max(wall - warm_wall, 0.0)
            thread_cpu = max(thread_cpu - warm_cpu, 0.0)
            process_cpu = max(process_cpu - warm_cpu, 0.0)
        shared = sampler.shares.totals.get(self.thread, 0.0) - self._start_share
        sampler.unwatch(self)
        peak = max(self.max_rss, end_rss)  # the end reading is the task's last sample
        if self._exact_peak:  # the mark was reset at or after this task's start
            peak = max(peak, high_water().mark())
        elif not light and end.hwm is not None and start.hwm is not None and end.hwm > start.hwm:
            peak = max(peak, end.hwm)
        worked = sum(workers.values()) if workers else 0.0
        if wall < THREAD_SCOPE_BELOW_S:
            scope, cpu = "thread", thread_cpu + worked + children_cpu
        elif self.concurrent:  # its thread's CPU, its lent threads' and its share of the rest
            scope = "shared"
            cpu = min(thread_cpu + max(shared, 0.0), wall * _CPUS) + children_cpu
        else:  # alone: every thread of the process worked while it ran, for it
            scope = "process"
            cpu = min(max(process_cpu, thread_cpu), wall * _CPUS) + children_cpu
        measured = (wall, cpu, scope, thread_cpu, process_cpu, children_cpu, end_rss, peak, growth)
        samples = self.samples if light else self.samples + 1
        readings = ("light" if light else "full") + (
            "+hwm" if self._exact_peak else "" if self._fresh else "+sampled"
        )
        return self._as_profile_values(measured, samples, qpu_s, queue_s, readings)

    def _as_profile_values(
        self,
        measured: tuple[float, float, str, float, float, float, int, int, int],
        samples: int,
        qpu_s: float | None,
        queue_s: float | None,
        readings: str,
    ) -> tuple:
        """The profile's values in ``PROFILE_VALUE_NAMES`` order: ``measured`` is (wall, CPU,
        its scope, thread CPU, process CPU, children's CPU, end RSS, peak, growth)."""
        wall, cpu, scope, thread_cpu, process_cpu, children_cpu, end_rss, peak, growth = measured
        sampler = self._sampler
        return (
            wall,
            cpu,
            scope,
            thread_cpu,
            process_cpu,
            children_cpu,
            self.start_rss,
            end_rss,
            peak,
            growth,
            samples,
            qpu_s,
            queue_s,
            sampler.pid,
            HOST,
            self.thread,
            readings,
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
