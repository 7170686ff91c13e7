"""Cheap readings of this process's memory and CPU, for the per-task hot path and the sampler.

A task is measured at its start and its end, where each system call is costly
(docs/performance.md). On Linux the resident set size is one ``pread`` of
``/proc/<pid>/statm`` on a file kept open (a forked child opens its own), the process's CPU
time is ``clock_gettime`` (``time.process_time``), and the peak RSS is ``getrusage``'s
``ru_maxrss`` (the kernel's high-water mark), read at every end and at a start only when the
last reading is old. Elsewhere psutil answers for the RSS.
"""

from __future__ import annotations

import os
import sys
import time

import psutil

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]
else:
    _getrusage, _RUSAGE_SELF = resource.getrusage, resource.RUSAGE_SELF

_monotonic, _process_time = time.monotonic, time.process_time
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
    global _reader
    _reader = None  # the child's /proc file is its own


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


#: A task's start reuses the process's last high-water mark this young instead of asking the
#: kernel again: under load ``getrusage`` is the costliest reading of a task (docs/performance.md).
HWM_REUSE_S = 0.05
_last_hwm: tuple[float, int | None] = (float("-inf"), None)  # (monotonic time, bytes)


def high_water_mark() -> int | None:
    """The highest RSS this process has had, in bytes, where the OS keeps it."""
    global _last_hwm
    if resource is None:
        return None
    hwm = _getrusage(_RUSAGE_SELF).ru_maxrss * _MAXRSS_UNIT
    _last_hwm = (_monotonic(), hwm)
    return hwm


def start_usage() -> tuple[int, float, int | None]:
    """A task's readings at its start: the RSS now, the process's CPU seconds so far (all
    threads), and its RSS high-water mark as last read, if that was within ``HWM_REUSE_S``
    (a peak that set a new high in between is then the task's own as well)."""
    rss = current_rss()
    read_at, hwm = _last_hwm
    if _monotonic() - read_at > HWM_REUSE_S:
        hwm = high_water_mark()
    return rss, _process_time(), hwm


def end_usage() -> tuple[int, float, int | None]:
    """A task's readings at its end, as ``start_usage``'s, the high-water mark read afresh."""
    return current_rss(), _process_time(), high_water_mark()
