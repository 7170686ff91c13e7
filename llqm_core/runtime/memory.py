"""Cheap readings of this process's memory and CPU, for the per-task hot path and the sampler.

A task is measured at its start and its end, where each system call is costly
(docs/performance.md), so each reading is one call that answers as much as it can. On Linux
the resident set size is one ``pread`` of ``/proc/<pid>/statm`` on a file kept open (a
forked child opens its own); ``getrusage`` gives the process's CPU time and its peak RSS
(``ru_maxrss``, the kernel's high-water mark) at once. Elsewhere psutil and
``time.process_time`` answer.
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


def usage() -> tuple[int, float, int | None]:
    """The resident set size now, the CPU seconds so far (all threads) and the highest RSS where
    the OS keeps it, in bytes: a task's reading at its start and at its end, in one call (the
    statm read is repeated here rather than called: once at each task's start and end)."""
    reader = _reader
    if reader is not None and reader.fd is not None:
        rss = int(os.pread(reader.fd, 128, 0).split()[1]) * _PAGE_SIZE
    else:
        rss = current_rss()
    if resource is None:
        return rss, time.process_time(), None
    rusage = _getrusage(_RUSAGE_SELF)
    return rss, rusage.ru_utime + rusage.ru_stime, rusage.ru_maxrss * _MAXRSS_UNIT
