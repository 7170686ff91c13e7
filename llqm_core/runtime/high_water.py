"""The process's resettable peak resident memory (Linux: the kernel's high-water mark).

Writing ``5`` to ``/proc/self/clear_refs`` resets the mark to the RSS now; ``getrusage``'s
``ru_maxrss`` reads it cheaply, unless an ``exec`` from a larger process pinned ``ru_maxrss`` at
that process's peak (a program spawned by a big Jupyter kernel or test runner), where
``VmHWM`` of ``/proc/self/status`` is read instead (docs/profiling.md, ``peak_rss_bytes``).
"""

from __future__ import annotations

import os
import sys

from .memory import current_rss, high_water_mark
from .per_process import PerProcess

#: ``ru_maxrss`` this far above the RSS right after a reset is another process's peak, pinned.
PINNED_ABOVE_BYTES = 4 << 20


class HighWater:
    """One process's mark: ``available`` is False where it cannot be reset, once found out."""

    def __init__(self) -> None:
        self.available = sys.platform.startswith("linux") and high_water_mark() is not None
        self._clear_refs: int | None = None
        self._status: int | None = None  # /proc/self/status, read where ru_maxrss is pinned
        self._checked = False

    def reset(self) -> int | None:
        """Reset the mark to the RSS now and return that RSS (None where it cannot be reset)."""
        if not self.available:
            return None
        try:
            if self._clear_refs is None:
                self._clear_refs = os.open("/proc/self/clear_refs", os.O_WRONLY)
            os.write(self._clear_refs, b"5")
            if not self._checked:
                self._check_pinned()
            return self.mark()
        except OSError:
            self.available = False
            return None

    def mark(self) -> int:
        """The highest RSS since the last reset, in bytes."""
        if self._status is None:
            return high_water_mark() or 0  # ``ru_maxrss``: never None where a reset is available
        data = os.pread(self._status, 4096, 0)
        at = data.index(b"VmHWM:") + 6
        return int(data[at : data.index(b"kB", at)]) * 1024

    def _check_pinned(self) -> None:
        """Once: does ``ru_maxrss`` follow the reset, or did an ``exec`` pin it above us?"""
        self._checked = True
        if self.mark() > current_rss() + PINNED_ABOVE_BYTES:
            self._status = os.open("/proc/self/status", os.O_RDONLY)


high_water = PerProcess(HighWater).get
