"""The store's connections across ``os.fork``: the fork waits for this process's threads to leave
the database, and the child starts afresh.

A child inherits every lock as it was at the fork, and only the forking thread. A lock SQLite
held inside a writer thread's commit (the file's lock mutex) stays held in the child for good,
and the child's first use of that file waits on it forever: a parallel transpile's worker
(Qiskit forks them) hung that way. Holding each connection's own lock through the fork makes
sure no thread of ours is inside the database then; a connection of this process that another
thread holds longer than ``FORK_WAIT_S`` is left as it is (the fork goes on, as it would
without LLQM).
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Protocol

#: Longest wait, per connection, for another thread to finish its database work before a fork.
FORK_WAIT_S = 10.0


class ForkAware(Protocol):
    def fork_locks(self) -> tuple[threading.Lock | threading.RLock, ...]:
        """The locks held whenever this object's threads use the database."""
        ...

    def after_fork_in_child(self) -> None:
        """Start afresh in the child: new locks; the parent's connections, rows and threads
        stay the parent's."""
        ...


_owners: weakref.WeakSet[ForkAware] = weakref.WeakSet()
_held: list[threading.Lock | threading.RLock] = []


def hold_across_forks(owner: ForkAware) -> None:
    _owners.add(owner)


def live_owners() -> list[ForkAware]:
    return list(_owners)


def _before_fork() -> None:
    for owner in list(_owners):
        for lock in owner.fork_locks():
            if lock.acquire(timeout=FORK_WAIT_S):
                _held.append(lock)


def _after_fork_in_parent() -> None:
    while _held:
        _held.pop().release()


def _after_fork_in_child() -> None:
    _held.clear()  # the child's owners make new locks: these stay held, and unused
    for owner in list(_owners):
        owner.after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )
