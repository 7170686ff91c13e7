"""The kernel's id of the calling thread, asked of the kernel once per thread.

``threading.get_native_id`` is a ``gettid`` system call each time (glibc does not cache it),
and every task's start names its thread: the id is kept in thread-local storage instead. A
forked child's thread has a new id, so the child starts with empty storage.
"""

from __future__ import annotations

import os
import threading

_ids = threading.local()


def native_thread_id() -> int:
    """The calling thread's kernel id (the one ``threading.get_native_id`` gives)."""
    try:
        return _ids.value
    except AttributeError:
        _ids.value = value = threading.get_native_id()
        return value


def _forget_in_child() -> None:
    global _ids
    _ids = threading.local()  # the forking thread's storage survives the fork, its id does not


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
