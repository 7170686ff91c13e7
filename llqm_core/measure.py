"""Measuring one task from inside its own process.

Wall and CPU time are read at start and end; peak RSS comes from the shared sampler and
from the kernel's high-water mark (``ru_maxrss``), which catches a peak that fell between
two samples whenever it set a new high for the process.
"""

from __future__ import annotations

import os
import socket
import time

from .memory import process_id, usage
from .model import GpuProfile, Profile
from .sampler import shared_sampler

HOST = socket.gethostname()


_perf_counter, _thread_time, _times = time.perf_counter, time.thread_time, os.times


class Measurement:
    """Start it, run the task, stop it: the result is the task's ``Profile``."""

    __slots__ = ("_sampler", "_watch", "_start_rss", "_start_process_cpu", "_start_hwm", "_start_times",
                 "_start_thread_cpu", "_start_wall")

    def start(self) -> "Measurement":
        self._sampler = sampler = shared_sampler()
        self._start_rss, self._start_process_cpu, self._start_hwm = usage()
        self._watch = sampler.watch(self._start_rss, sampler.gpu.read() if sampler.gpu.available else None)
        self._start_times = _times()
        self._start_thread_cpu = _thread_time()
        self._start_wall = _perf_counter()
        return self

    def stop(self, qpu_s: float | None = None, queue_s: float | None = None) -> Profile:
        """The task's profile, with the QPU and queue seconds that backends reported for it."""
        wall = _perf_counter() - self._start_wall
        thread_cpu = _thread_time() - self._start_thread_cpu
        end_rss, end_process_cpu, end_hwm = usage()
        process_cpu = end_process_cpu - self._start_process_cpu
        end_times = _times()
        sampler, watch = self._sampler, self._watch
        sampler.unwatch(watch)
        if sampler.gpu.available:
            watch.fold_gpu(sampler.gpu.read())
        start = self._start_times
        children_cpu = (end_times.children_user - start.children_user) + (
            end_times.children_system - start.children_system
        )
        peak = max(watch.max_rss, end_rss)  # the end reading is the task's last sample
        if end_hwm is not None and self._start_hwm is not None and end_hwm > self._start_hwm:
            peak = max(peak, end_hwm)
        if watch.concurrent:
            scope, cpu = "thread", thread_cpu + children_cpu
        else:
            scope, cpu = "process", process_cpu + children_cpu
        return Profile(
            wall_s=wall,
            cpu_s=cpu,
            cpu_scope=scope,
            thread_cpu_s=thread_cpu,
            process_cpu_s=process_cpu,
            children_cpu_s=children_cpu,
            start_rss_bytes=self._start_rss,
            end_rss_bytes=end_rss,
            peak_rss_bytes=peak,
            rss_growth_bytes=end_rss - self._start_rss,
            samples=watch.samples + 1,
            qpu_s=qpu_s,
            queue_s=queue_s,
            pid=process_id(),
            host=HOST,
            gpu=self._gpu_profile() if sampler.gpu.available else sampler.gpu.unavailable,
        )

    def _gpu_profile(self) -> GpuProfile:
        probe = self._sampler.gpu
        w = self._watch
        return GpuProfile(
            available=True,
            devices=probe.devices,
            utilization_max_pct=w.gpu_util_max,
            utilization_mean_pct=(w.gpu_util_sum / w.gpu_readings) if w.gpu_readings else None,
            memory_peak_bytes=w.gpu_memory_max,
        )
