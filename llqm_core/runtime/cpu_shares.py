"""The CPU of threads that run no task, shared among the tasks that ran beside each other.

A task alone in its process is charged the process's CPU (``runtime.measure``). Beside tasks of
other threads, a task is charged its own thread's CPU, that of threads lent to it
(``TaskHandle.worker``, credited to its thread whole), and a share of the rest, split at each
sampler tick among the task threads by how long each waited, neither on a CPU nor ready for one
(docs/figures.md, "CPU of threads no task owns"). Per-thread CPU comes from
``/proc/self/task/TID/schedstat``; where it is missing the ledger shares nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

_thread_time, _process_time = time.thread_time, time.process_time


class ThreadClocks:
    """Any thread's CPU seconds, and seconds it waited runnable for a CPU, by its kernel id, from
    its ``schedstat`` file kept open."""

    def __init__(self) -> None:
        self._files: dict[int, int] = {}
        self.available = os.path.exists(f"/proc/self/task/{os.getpid()}/schedstat")

    def read(self, tid: int) -> tuple[float, float] | None:
        fd = self._files.get(tid)
        try:
            if fd is None:
                fd = self._files[tid] = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
            on_cpu, runnable = os.pread(fd, 64, 0).split()[:2]
            return int(on_cpu) / 1e9, int(runnable) / 1e9
        except (OSError, ValueError, IndexError):  # the thread has ended
            self.close(tid)
            return None

    def close(self, tid: int) -> None:
        fd = self._files.pop(tid, None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def keep_only(self, tids: Iterable[int]) -> None:
        for tid in set(self._files) - set(tids):
            self.close(tid)


class CpuShares:
    """The running total of unowned CPU seconds credited to each task thread.

    The sampler calls ``tick`` under its lock; task threads call ``enter`` and ``leave`` under
    the same lock as their first task starts and their last ends, and ``lend``/``give_back``
    around work they do for a task in another thread."""

    def __init__(self) -> None:
        self.clocks = ThreadClocks()
        self.totals: dict[int, float] = {}  # per task thread: unowned CPU shared to it so far
        self._tasks: dict[int, int] = {}  # per task thread: its tasks running now (nesting)
        self._lent: dict[int, int] = {}  # thread working for a task of another thread: that thread
        #: each tracked thread's CPU and runnable seconds at the last tick (runnable unknown until
        #: the first tick reads its ``schedstat``: a task's start reads only its own CPU clock)
        self._last: dict[int, tuple[float, float | None]] = {}
        self._settled = 0.0  # owned CPU of threads that left the ledger since the last tick
        self._last_process: float | None = None
        self._last_tick: float | None = None

    def enter(self, tid: int) -> None:
        """A task starts in ``tid`` (the calling thread). The ledger follows threads only once
        tasks of two threads run: a task alone is charged the process's CPU and needs none."""
        count = self._tasks.get(tid, 0)
        self._tasks[tid] = count + 1
        if count > 0:
            return
        if self._last_process is not None:
            self._track(tid)
        elif len(self._tasks) > 1:
            self._start_following(tid)

    def leave(self, tid: int) -> None:
        """A task of ``tid`` (the calling thread) ends."""
        count = self._tasks.get(tid, 0) - 1
        if count > 0:
            self._tasks[tid] = count
            return
        self._tasks.pop(tid, None)
        if tid not in self._lent:
            self._untrack(tid)
        if not self._tasks:  # no task runs: the next one starts a new stretch
            self._last_process = self._last_tick = None
            self._settled = 0.0
            self.totals.clear()

    def lend(self, tid: int, owner: int, now: float) -> None:
        """The calling thread ``tid`` starts work for a task of thread ``owner``, its CPU clock
        at ``now`` (read by the caller, which times the work as well)."""
        if tid not in self._lent and tid not in self._tasks:
            self._lent[tid] = owner
            self._last[tid] = (now, None)

    def give_back(self, tid: int, now: float) -> None:
        """The calling thread ``tid`` ends its work for another thread's task, its CPU clock at
        ``now``: its CPU since the last tick goes to that thread's total."""
        owner = self._lent.pop(tid, None)
        last = self._last.pop(tid, None)
        if owner is not None and last is not None:
            spent = max(now - last[0], 0.0)
            self._settled += spent
            self.totals[owner] = self.totals.get(owner, 0.0) + spent

    def thread_cpu(self, tid: int) -> float | None:
        """Thread ``tid``'s CPU seconds at the last tick (or its first task's start), read now for
        a thread the ledger does not follow; None where it cannot be read."""
        last = self._last.get(tid)
        if last is not None:
            return last[0]
        read = self.clocks.read(tid) if self.clocks.available else None
        return None if read is None else read[0]

    def _track(self, tid: int) -> None:
        self._last[tid] = (_thread_time(), None)  # the caller is thread ``tid``

    def _start_following(self, tid: int) -> None:
        """Tasks of a second thread start: follow every task thread from now on (the others'
        CPU from their ``schedstat``, read from this thread)."""
        self._last_process, self._last_tick = _process_time(), time.monotonic()
        self._settled = 0.0
        for other in self._tasks:
            if other != tid and other not in self._last:
                read = self.clocks.read(other)
                if read is not None:
                    self._last[other] = (read[0], None)
        self._track(tid)

    def _untrack(self, tid: int) -> None:
        last = self._last.pop(tid, None)
        if last is not None:  # its CPU since the last tick was its own, not unowned
            self._settled += max(_thread_time() - last[0], 0.0)

    def tick(self) -> None:
        """Share the unowned CPU since the last tick among the task threads."""
        if self._last_process is None or not self._tasks or not self.clocks.available:
            self.clocks.keep_only((*self._tasks, *self._last))  # ``thread_cpu``'s reads
            return
        process, now = _process_time(), time.monotonic()
        elapsed = now - (self._last_tick or now)
        owned, idle = self._settled, {}
        for tid, (last_cpu, last_runnable) in list(self._last.items()):
            read = self.clocks.read(tid)
            if read is None:
                continue
            cpu, runnable = read
            spent = max(cpu - last_cpu, 0.0)
            self._last[tid] = read
            owned += spent
            owner = self._lent.get(tid)
            if owner is not None:
                self.totals[owner] = self.totals.get(owner, 0.0) + spent
            elif tid in self._tasks:
                ready = 0.0 if last_runnable is None else max(runnable - last_runnable, 0.0)
                idle[tid] = max(elapsed - spent - ready, 0.0)
        self.clocks.keep_only(self._last)
        unowned = process - self._last_process - owned
        self._last_process, self._last_tick, self._settled = process, now, 0.0
        if unowned <= 0 or not idle:
            return
        waited = sum(idle.values())
        for tid, off_cpu in idle.items():
            share = unowned * off_cpu / waited if waited > 0 else unowned / len(idle)
            self.totals[tid] = self.totals.get(tid, 0.0) + share
