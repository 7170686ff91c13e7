"""One value per process, made on first use; a forked child makes its own.

Threads, open files and library sessions do not cross a fork: the sampler's thread, NVML's
handles. Each such value is kept here rather than in a module global with its own lock and
its own fork hook.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerProcess(Generic[T]):
    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._value: T | None = None
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._value = None
        self._lock = threading.Lock()  # another thread may have held it at the fork

    def get(self) -> T:
        """This process's value (without the lock once it exists: every task's start asks)."""
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._make()
                value = self._value
        return value
