"""Cheap readings of this process's memory, for the per-task hot path and the sampler.

On Linux the resident set size is one ``pread`` of ``/proc/<pid>/statm`` on a file kept
open, and the peak (``ru_maxrss``, the kernel's high-water mark) is one ``getrusage``;
both cost a few microseconds and, unlike opening files, hand the GIL over only once.
Elsewhere psutil answers.
"""

from __future__ import annotations

import os
import sys

import psutil

try:
    import resource
except ImportError:  # Windows
    resource = None

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_MAXRSS_UNIT = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux


class _Reader:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self.fd: int | None = None
        try:
            self.fd = os.open(f"/proc/{self.pid}/statm", os.O_RDONLY)
        except OSError:
            self.process = psutil.Process(self.pid)

    def rss(self) -> int:
        if self.fd is not None:
            return int(os.pread(self.fd, 128, 0).split()[1]) * _PAGE_SIZE
        return self.process.memory_info().rss


_reader: _Reader | None = None


def current_rss() -> int:
    """Resident set size of this process in bytes (a forked child reads its own)."""
    global _reader
    if _reader is None or _reader.pid != os.getpid():
        _reader = _Reader()
    return _reader.rss()


def peak_rss() -> int | None:
    """The process's highest resident set size so far in bytes, where the OS keeps it."""
    if resource is None:
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * _MAXRSS_UNIT
