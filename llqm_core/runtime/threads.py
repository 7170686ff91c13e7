"""Threads that a profiled program starts carry its run, as OpenTelemetry's threading
instrumentation carries the trace context.

A thread starts with an empty context: the run current in the thread that started it is not
current there, so instrumented calls in it would be left unprofiled. While ``carried()`` is on
(``llqm profile`` switches it on for the program), ``Thread.start`` runs the new thread in a copy
of the starting thread's context, and ``ThreadPoolExecutor.submit`` runs each function in a
copy of the submitting thread's: the run is current there, and the task current where the
thread was started (or the function submitted) is the parent of the tasks it opens.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_holders = 0
_originals: dict[tuple[type, str], Any] = {}


def _start(original: Callable[..., Any]) -> Callable[..., Any]:
    def start(self: threading.Thread) -> None:
        context = contextvars.copy_context()
        run = self.run
        self.run = lambda: context.run(run)  # type: ignore[method-assign]
        original(self)

    return start


def _submit(original: Callable[..., Any]) -> Callable[..., Any]:
    def submit(self: ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any):
        return original(self, contextvars.copy_context().run, fn, *args, **kwargs)

    return submit


_PATCHES: tuple[tuple[type, str, Callable[..., Any]], ...] = (
    (threading.Thread, "start", _start),
    (ThreadPoolExecutor, "submit", _submit),
)


@contextmanager
def carried() -> Iterator[None]:
    """Threads started, and functions submitted to thread pools, inside the block run in a copy of
    their starter's context. Blocks may overlap (runs in threads): the last to end restores
    ``Thread.start`` and ``ThreadPoolExecutor.submit``."""
    global _holders
    with _lock:
        if _holders == 0:
            for owner, name, wrap in _PATCHES:
                _originals[owner, name] = original = vars(owner)[name]
                setattr(owner, name, wrap(original))
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                for (owner, name), original in _originals.items():
                    setattr(owner, name, original)
                _originals.clear()
