"""One background sampler per process, shared by every task that is running.

A thread per task would multiply the sampling cost by the concurrency; instead each
running task registers a ``Watch`` and the single sampler thread folds every reading into
all watches. The thread sleeps (no readings, no CPU) while no task is running.
"""

from __future__ import annotations

import os
import threading
import time

import psutil

from .errors import UserError
from .gpu import gpu_probe

DEFAULT_INTERVAL_S = 0.02
INTERVAL_ENV = "LLQM_SAMPLE_INTERVAL"


def checked_interval(value: float, source: str = "sample interval") -> float:
    if not 0.001 <= value <= 60:
        raise UserError(f"{source} {value!r} is out of range; allowed is 0.001 to 60 seconds.")
    return value


def interval_from_env() -> float:
    raw = os.environ.get(INTERVAL_ENV)
    if raw is None:
        return DEFAULT_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        raise UserError(f"{INTERVAL_ENV}={raw!r} is not a number; give the sampling interval in seconds, e.g. 0.02.") from None
    return checked_interval(value, INTERVAL_ENV)


class Watch:
    """The extremes one task saw while it ran."""

    __slots__ = ("max_rss", "samples", "gpu_util_max", "gpu_util_sum", "gpu_readings", "gpu_memory_max")

    def __init__(self) -> None:
        self.max_rss = 0
        self.samples = 0
        self.gpu_util_max: float | None = None
        self.gpu_util_sum = 0.0
        self.gpu_readings = 0
        self.gpu_memory_max: int | None = None

    def fold(self, rss: int, gpu: tuple[float, int] | None) -> None:
        self.samples += 1
        if rss > self.max_rss:
            self.max_rss = rss
        if gpu is not None:
            util, memory = gpu
            self.gpu_readings += 1
            self.gpu_util_sum += util
            self.gpu_util_max = util if self.gpu_util_max is None else max(self.gpu_util_max, util)
            self.gpu_memory_max = memory if self.gpu_memory_max is None else max(self.gpu_memory_max, memory)


class ResourceSampler:
    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self._process = psutil.Process()
        self.gpu = gpu_probe()
        self._watches: set[Watch] = set()
        self._lock = threading.Lock()
        self._busy = threading.Event()
        self._thread: threading.Thread | None = None

    def read(self) -> tuple[int, tuple[float, int] | None]:
        return self._process.memory_info().rss, self.gpu.read()

    def watch(self) -> Watch:
        watch = Watch()
        with self._lock:
            self._watches.add(watch)
            self._busy.set()
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="llqm-sampler", daemon=True)
                self._thread.start()
        return watch

    def unwatch(self, watch: Watch) -> None:
        with self._lock:
            self._watches.discard(watch)
            if not self._watches:
                self._busy.clear()

    def _loop(self) -> None:
        while True:
            self._busy.wait()
            try:
                rss, gpu = self.read()
            except psutil.Error:
                rss, gpu = 0, None
            with self._lock:
                for watch in self._watches:
                    watch.fold(rss, gpu)
            time.sleep(self.interval_s)


_sampler: ResourceSampler | None = None
_sampler_pid: int | None = None
_sampler_lock = threading.Lock()


def shared_sampler() -> ResourceSampler:
    """This process's sampler; a forked child gets its own (threads do not survive a fork)."""
    global _sampler, _sampler_pid
    with _sampler_lock:
        if _sampler is None or _sampler_pid != os.getpid():
            _sampler = ResourceSampler(interval_from_env())
            _sampler_pid = os.getpid()
        return _sampler


def set_sample_interval(seconds: float) -> None:
    """Change the shared sampler's interval; takes effect at its next reading."""
    shared_sampler().interval_s = checked_interval(seconds)
