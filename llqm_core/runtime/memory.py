"""Cheap readings of this process's memory and children's CPU, for the sampler and long tasks.

Each system call is costly on a task's path (docs/performance.md), so the process keeps its last
reading: the sampler takes one at each tick while tasks run, a task that ran longer than the
sampler's interval at its end; a task's start and a light task (``runtime.measure``) reuse it.
On Linux the resident set size is one ``pread`` of ``/proc/<pid>/statm`` on a file kept open (a
forked child opens its own), the peak RSS is ``getrusage``'s ``ru_maxrss`` (the kernel's
high-water mark) and the children's CPU ``os.times``. Elsewhere psutil answers for the RSS.
"""

from __future__ import annotations

import os
import sys
import time
from typing import NamedTuple

import psutil

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]
else:
    _getrusage, _RUSAGE_SELF = resource.getrusage, resource.RUSAGE_SELF

_monotonic, _times = time.monotonic, os.times
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_MAXRSS_UNIT = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux


class _Reader:
    def __init__(self) -> None:
        pid = os.getpid()
        self.fd: int | None = None
        try:
            self.fd = os.open(f"/proc/{pid}/statm", os.O_RDONLY)
        except OSError:
            self.process = psutil.Process(pid)


_reader: _Reader | None = None


def _renew_in_child() -> None:
    global _reader, _last_reading
    _reader = None  # the child's /proc file is its own
    _last_reading = None  # and so are its memory and children


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_in_child)


def current_rss() -> int:
    """Resident set size of this process in bytes (a forked child reads its own)."""
    global _reader
    reader = _reader
    if reader is None:
        reader = _reader = _Reader()
    if reader.fd is not None:
        return int(os.pread(reader.fd, 128, 0).split()[1]) * _PAGE_SIZE
    return reader.process.memory_info().rss


def high_water_mark() -> int | None:
    """The highest RSS this process has had, in bytes, where the OS keeps it."""
    if resource is None:
        return None
    return _getrusage(_RUSAGE_SELF).ru_maxrss * _MAXRSS_UNIT


class Reading(NamedTuple):
    """The process's memory and children's CPU at one moment (``monotonic`` seconds)."""

    at: float
    rss: int
    hwm: int | None
    times: os.times_result


_last_reading: Reading | None = None


def read_usage() -> Reading:
    """Read the RSS, high-water mark and children's CPU now, and keep them as the process's last
    reading (the sampler's ticks and long tasks' ends take it; light tasks reuse it)."""
    global _last_reading
    reading = _last_reading = Reading(_monotonic(), current_rss(), high_water_mark(), _times())
    return reading


def last_usage(max_age_s: float) -> Reading:
    """The process's last reading if it is younger than ``max_age_s``, else a new one."""
    reading = _last_reading
    if reading is None or _monotonic() - reading.at > max_age_s:
        return read_usage()
    return reading
