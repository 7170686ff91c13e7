"""Measuring one task from inside its own process.

Wall and CPU time are read at start and end; peak RSS comes from the shared sampler and
from the kernel's high-water mark (``ru_maxrss``), which catches a peak that fell between
two samples whenever it set a new high for the process.
"""

from __future__ import annotations

import os
import socket
import time

from .memory import cpu_and_peak, current_rss, process_id
from .model import GpuProfile, Profile
from .sampler import shared_sampler

HOST = socket.gethostname()


class Measurement:
    """Start it, run the task, stop it: the result is the task's ``Profile``."""

    def start(self) -> "Measurement":
        self._sampler = shared_sampler()
        self._watch = self._sampler.watch()
        self._start_rss = current_rss()
        self._watch.fold(self._start_rss, self._sampler.gpu.read())
        self._start_process_cpu, self._start_hwm = cpu_and_peak()
        self._start_times = os.times()
        self._start_thread_cpu = time.thread_time()
        self._start_wall = time.perf_counter()
        return self

    def stop(self) -> Profile:
        wall = time.perf_counter() - self._start_wall
        thread_cpu = time.thread_time() - self._start_thread_cpu
        end_process_cpu, end_hwm = cpu_and_peak()
        process_cpu = end_process_cpu - self._start_process_cpu
        end_times = os.times()
        end_rss = current_rss()
        self._sampler.unwatch(self._watch)
        self._watch.fold(end_rss, self._sampler.gpu.read())
        start = self._start_times
        children_cpu = (end_times.children_user - start.children_user) + (
            end_times.children_system - start.children_system
        )
        peak = self._watch.max_rss
        if end_hwm is not None and self._start_hwm is not None and end_hwm > self._start_hwm:
            peak = max(peak, end_hwm)
        if self._watch.concurrent:
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
            samples=self._watch.samples,
            gpu=self._gpu_profile(),
            pid=process_id(),
            host=HOST,
        )

    def _gpu_profile(self) -> GpuProfile:
        probe = self._sampler.gpu
        if not probe.available:
            return probe.unavailable
        w = self._watch
        return GpuProfile(
            available=True,
            devices=probe.devices,
            utilization_max_pct=w.gpu_util_max,
            utilization_mean_pct=(w.gpu_util_sum / w.gpu_readings) if w.gpu_readings else None,
            memory_peak_bytes=w.gpu_memory_max,
        )
