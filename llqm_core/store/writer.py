"""Writing into the store off the tasks' path: the journal, the background commits, fork and exit.

A task's start queues its running row; its end appends its finished row to this process's
journal (``journal``) before the task returns, so a kill keeps it. One writer thread per store
commits both to the database in batches (within ``DRAIN_INTERVAL_S`` after a quiet spell, every
``FINISHED_ROWS_WAIT_S`` while tasks keep ending) and checkpoints SQLite's WAL. Runs, snapshots and
decisions are few: each is committed at once, with whatever rows are queued.
"""

from __future__ import annotations

import atexit
import enum
import functools
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from ..model.errors import StoreError, warn
from ..model.records import (
    CachedValue,
    HardwareSnapshot,
    KeptResult,
    LaterPayload,
    PolicyDecision,
    RunRecord,
    TaskRow,
)
from . import record_statements as rows
from .backend import StoreBackend
from .disk_full import full_sentence, is_full_os_error, no_room_at
from .forking import hold_across_forks
from .in_flight import InFlightKeeper
from .journal import TaskJournal, decode_frame, encode_row, start_frame
from .leftovers import FoldingLeftovers
from .queued import QueuedRows
from .reconnect import Reconnecting
from .schema import stored_row
from .task_rows import finished_row, running_row

CHECKPOINT_INTERVAL_S = 2.0
START_ROW_DELAY_S = 0.05
DRAIN_INTERVAL_S = 2.0
#: While tasks keep ending, their journaled rows wait this long between commits to the database:
#: fewer, larger commits cost the writer less per row (docs/performance.md).
FINISHED_ROWS_WAIT_S = 10.0
#: More finished rows than this are committed at once: bounded memory and commit size.
MAX_QUEUED_ROWS = 1000


class WriterState(enum.Enum):
    """What the writer does with what it is handed; it only ever moves down this list."""

    WRITING = "writing"  # rows go to the journal and the database
    FAILED = "failed"  # the database refused a write: warned once, the pipeline goes on without the store
    CLOSED = "closed"  # queued rows committed at close; nothing more is taken


class StoreWriter(Reconnecting, FoldingLeftovers):
    """This process's writing half of one store.

    Threads: ``start_task`` and ``finish_task`` run in any task's thread and touch only the
    queue, under ``_queue_lock``, held for moments and never while the database works. Everything that
    uses the connection holds ``_lock``. ``_woken`` is read without a lock on the tasks' path: a
    stale read costs one extra ``Event.set``, never a lost row (the writer clears it before it
    takes the queue)."""

    def __init__(self, backend: StoreBackend, conn: Any) -> None:
        self.backend = backend
        self.state = WriterState.WRITING
        self._journal_warned = False
        self._start_afresh()
        self._conn = conn
        _writers.add(self)
        hold_across_forks(self)

    def _start_afresh(self) -> None:
        """The per-process half: what a forked child must not share with its parent."""
        self._lock = threading.RLock()
        self._queue_lock = threading.Lock()
        self._owns_conn = True  # False in a forked child until it connects on its own
        self._pending: dict[str, TaskRow] = {}  # started tasks whose running row is not written
        # Finished tasks not yet in the database: their journal frames as they ended here (bytes,
        # which the garbage collector does not track: docs/performance.md), or the rows of a
        # dead process's journal.
        self._finished: list[bytes | list] = []
        self._journal: TaskJournal | None = None
        # The tasks running now, as the sampler last wrote them (``in_flight``); False once it
        # failed (a full disk): the tasks' starts are still kept by the database's running rows.
        self._in_flight = InFlightKeeper(self.backend.journal_base)
        # Kept device results (``save_result``) waiting for the writer's next commit.
        self._queued = QueuedRows()
        self._wake = threading.Event()  # rows are queued: commit them within DRAIN_INTERVAL_S
        self._woken = False  # set with ``_wake`` by a task, reset by the writer thread
        self._hurry = threading.Event()  # commit now: many rows queued, or the store is closing
        self._dirty = False  # commits since the last checkpoint (the writer thread's own)
        self._thread: threading.Thread | None = None
        self._checkpoint_lock = threading.Lock()  # held while the thread's own connection works
        self._closing = threading.Event()  # ends the thread's wait between reconnection tries
        self._outage, self._unsent = None, []  # a lost connection (``reconnect``)

    def _accepting(self) -> bool:
        return self.state is WriterState.WRITING

    def fork_locks(self) -> tuple[threading.RLock, threading.Lock]:
        return self._lock, self._checkpoint_lock

    def after_fork_in_child(self) -> None:
        """The parent's rows, journal, thread and connection stay the parent's."""
        self._start_afresh()
        if self.state is WriterState.CLOSED:
            return
        failures: tuple[type[BaseException], ...] = (StoreError, *self.backend.errors)
        try:
            self._conn = self.backend.connect_writer()
        except failures:
            self._owns_conn = False  # the parent's: closing it would end the parent's session
            self.state = WriterState.FAILED

    # -- what tasks and runs hand over --------------------------------------------------

    def start_task(self, task: TaskRow) -> None:
        """Journal the task's start (a kill, or native code keeping the GIL from this thread,
        keeps it) and queue its running row, which the writer thread commits within
        ``DRAIN_INTERVAL_S``, without a commit on the task's own path."""
        frame = start_frame(task)
        with self._queue_lock:
            self._pending[task.id] = task
            self._append(frame)
        if not self._woken:
            self._wake_thread()

    def finish_task(self, task: TaskRow) -> None:
        """Keep the ended task with its profile before the task returns: one append to this
        process's journal, committed to the database by the writer thread."""
        frame = encode_row(finished_row(task))
        with self._queue_lock:
            self._pending.pop(task.id, None)  # the finished row supersedes the running one
            self._finished.append(frame)
            journaled = self._append(frame)
            queued = len(self._finished)
        if not journaled:
            self._write(None, ())  # no journal: commit now, as the guarantee asks
            return
        if not self._woken:
            self._wake_thread()
        if queued >= MAX_QUEUED_ROWS and not self._hurry.is_set():
            self._hurry.set()

    def _append(self, frame: bytes) -> bool:
        """Append to this process's journal, made at the first frame. Hold ``_queue_lock``."""
        try:
            if self._journal is None:
                self._journal = TaskJournal(self.backend.journal_base)
            self._journal.append(frame)
            return True
        except OSError as exc:
            self._journal_broken(exc)
            return False

    def record_in_flight(self, rows: list[list]) -> None:
        """Replace the record of this process's running tasks with ``rows`` (their stored rows
        so far, ``in_flight``): the sampler's thread calls it at each tick while tasks run."""
        if self.state is not WriterState.CLOSED:
            self._in_flight.record(rows)

    def insert_run(self, run: RunRecord) -> None:
        self._write(*rows.run_insert(run))

    def finish_run(self, run: RunRecord) -> None:
        self._write(*rows.run_finish(run))

    def save_snapshot(self, snapshot: HardwareSnapshot) -> str:
        self._write(*rows.snapshot_insert(self.backend, snapshot))
        return snapshot.fingerprint

    def save_hardware_change(
        self,
        backend: str,
        fingerprint: str | None,
        seen_at: float,
        run_id: str | None,
        error: str | None = None,
    ) -> None:
        self._write(*rows.hardware_change_insert(backend, fingerprint, seen_at, run_id, error))

    def save_decision(self, decision: PolicyDecision) -> None:
        self._write(*rows.decision_insert(decision))

    def save_result(self, result: KeptResult, later: LaterPayload | None = None) -> None:
        """Queue a kept result for the writer's next commit (within ``DRAIN_INTERVAL_S``, and at
        the run's end): a transaction per job on the job's own thread cost more than its task.
        ``later`` makes its data and raw size then, on the writer's thread (None: nothing kept)."""
        self._queue(lambda queued: queued.result(result, later))

    def keep_cached(self, value: CachedValue, max_bytes: int) -> None:
        """Queue a cache entry; its namespace is then cut to ``max_bytes`` (``store.cached``)."""
        self._queue(lambda queued: queued.keep_cached(value, max_bytes))

    def use_cached(self, namespace: str, keys: list[str], at: float) -> None:
        """Queue the marks that a look-up used these cache entries at ``at``."""
        self._queue(lambda queued: queued.use_cached(namespace, keys, at))

    def _queue(self, add: Callable[[QueuedRows], int]) -> None:
        """Queue rows for the writer's next commit (``queued``); many results hurry it."""
        with self._queue_lock:
            waiting = add(self._queued)
        if not self._woken:
            self._wake_thread()
        if waiting >= MAX_QUEUED_ROWS and not self._hurry.is_set():
            self._hurry.set()

    def close(self) -> None:
        """Commit what is queued, fold the WAL into the database file and close it, so that the
        store is one self-contained file again (a copy of it alone holds every run). A database
        that stopped answering is waited for ``CLOSE_WAIT_S`` at most (``reconnect``)."""
        if self.state is WriterState.CLOSED:
            return
        self._last_commit()
        with self._lock:
            self.state = WriterState.CLOSED
        self._wake.set()
        self._hurry.set()
        self._closing.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self._in_flight.remove()
        with self._lock:
            if self._journal is not None and not self._journal.holds_rows:
                self._journal.remove()  # one that still holds rows is left for the next writer
                self._journal = None
            if self._owns_conn:
                self.backend.checkpoint(self._conn, final=True)
            self.backend.close(self._conn, self._owns_conn)

    # -- committing ---------------------------------------------------------------------

    def _guarded(self, commit) -> None:
        """Run a commit; a failure warns once and the pipeline goes on without the store, except
        a lost connection: rows stay queued (and journaled) while the writer's thread connects
        again (``reconnect``)."""
        if not self._accepting() or self._outage is not None:
            return
        try:
            commit()
            self._dirty = True
        except self.backend.errors as exc:
            if self.backend.connection_lost(self._conn):
                self._lost()
                return
            self.state = WriterState.FAILED
            try:
                self.backend.rollback(self._conn)
            except self.backend.errors:
                pass  # the connection is gone: there is nothing to undo
            full = self.backend.full_disk(exc)
            if full is not None:
                self._warn_full(full, journal_works=not self._journal_warned)
                return
            warn(
                f"profiles are no longer being kept in {self.backend.name}: "
                f"{self.backend.describe_error(exc)}",
                stacklevel=4,
            )

    def _warn_full(self, why: str, journal_works: bool) -> None:
        """The one sentence a full disk gets (``disk_full``); the store takes nothing more."""
        self.state = WriterState.FAILED if self.state is WriterState.WRITING else self.state
        self._journal_warned = True  # no second warning when the journal fills too
        journal = self._journal.path if self._journal is not None else None
        warn(full_sentence(self.backend.name, why, journal, journal_works), stacklevel=5)

    def _take_queued(
        self, started_by_ns: int | None, take_finished: bool
    ) -> tuple[list[TaskRow], list[bytes | list]]:
        """Take the running rows of tasks started by ``started_by_ns`` (all when None) and, when
        ``take_finished`` or any running row is taken, every finished row."""
        with self._queue_lock:
            running = [
                task
                for task in self._pending.values()
                if started_by_ns is None or task.start_ns <= started_by_ns
            ]
            for task in running:
                del self._pending[task.id]
            finished: list[bytes | list] = []
            if take_finished or running:
                finished, self._finished = self._finished, []
        return running, finished

    def _commit_all(self, sql: str | None = None, params: tuple = ()) -> None:
        """One statement (if any) and every queued row, committed together. Hold ``_lock``."""
        self._commit(*self._take_queued(None, True), sql, params)

    def _commit_due(self, started_by_ns: int, rows_due: bool) -> None:
        """The thread's round: the running rows of tasks started by ``started_by_ns``, and the
        finished rows when ``rows_due`` or anything else is committed. Hold ``_lock``."""
        self._commit(*self._take_queued(started_by_ns, rows_due), None, ())

    def _commit(
        self,
        running: list[TaskRow],
        finished: list[bytes | list],
        sql: str | None,
        params: tuple,
    ) -> None:
        """One transaction; then the journal is emptied if no task finished meanwhile. Queued
        kept results follow, after the rows of the tasks they belong to."""
        try:
            if finished or running:
                self.backend.commit_rows(
                    self._conn,
                    sql,
                    params,
                    [running_row(task) for task in running],
                    [stored_row(decode_frame(r) if isinstance(r, bytes) else r) for r in finished],
                )
            elif sql is not None:
                self.backend.execute(self._conn, sql, params)
        except self.backend.errors:
            self._put_back(running, finished, sql, params)
            raise
        if finished or running:
            with self._queue_lock:
                if not self._finished and self._journal is not None:
                    self._journal.clear()  # then the starts of tasks whose rows wait still
                    for task in self._pending.values():
                        self._append(start_frame(task))
        self._commit_results()

    def _commit_results(self) -> None:
        """Commit the queued kept results and cache entries (``queued``). Hold ``_lock``."""
        with self._queue_lock:
            queued, self._queued = self._queued, QueuedRows()
        try:
            queued.commit(self.backend, self._conn)
        except self.backend.errors:
            with self._queue_lock:  # what was not committed goes first next time
                self._queued = queued.followed_by(self._queued)
            raise

    def _journal_broken(self, exc: OSError) -> None:
        if self._journal_warned:
            return
        if is_full_os_error(exc):  # committing each task instead would fill the same disk
            why = no_room_at(self.backend.journal_base) or exc.strerror or "no room"
            self._warn_full(why, journal_works=False)
            return
        if not self._journal_warned:
            self._journal_warned = True
            warn(
                f"the journal of {self.backend.name} cannot be written ({exc.strerror}); each task "
                "is committed to the store as it ends instead, which is slower.",
                stacklevel=3,
            )

    # -- the writer thread --------------------------------------------------------------

    def _wake_thread(self) -> None:
        """Have the thread commit within ``DRAIN_INTERVAL_S``: called while ``_woken`` is False."""
        if self._thread is None:
            with self._lock:
                self._start_thread()
        self._woken = True
        self._wake.set()

    def _start_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._thread_loop, name="llqm-store-writer", daemon=True
            )
            self._thread.start()

    def _thread_loop(self) -> None:
        """Commit queued rows and checkpoint (SQLite's WAL), off the tasks' path.

        Woken by a task's start or end, it waits ``DRAIN_INTERVAL_S`` first (less when
        ``MAX_QUEUED_ROWS`` wait, or the store closes), so that one commit takes every row of
        that while. Journaled rows, which readers merge in anyway, are taken once per
        ``FINISHED_ROWS_WAIT_S`` at most, unless a commit happens anyway. Start rows wait until
        their task has run ``START_ROW_DELAY_S``: a shorter task's finish row replaces its start
        row. Checkpoints run here so that none falls on a commit a task waits for."""
        with self._checkpoint_lock:
            checkpoints = self.backend.connect_housekeeping()
        last_checkpoint = time.monotonic()
        rows_due_at = 0.0  # from when journaled rows are committed again
        try:
            while self.state is not WriterState.CLOSED:
                self._wake.wait(CHECKPOINT_INTERVAL_S)
                hurried = self._hurry.wait(DRAIN_INTERVAL_S)
                outage = self._outage
                if outage is not None and not (outage.due() and self._reconnect()):
                    self._closing.wait(max(0.0, outage.retry_at - time.monotonic()))
                    continue  # rows stay queued, and journaled, until the database answers
                self._wake.clear()
                # before taking the queue: a row queued after this wakes us again
                self._woken = False
                self._hurry.clear()
                with self._lock:
                    if self.state is WriterState.CLOSED:
                        break
                    rows_due = hurried or time.monotonic() >= rows_due_at
                    started_by_ns = time.time_ns() - int(START_ROW_DELAY_S * 1e9)
                    self._guarded(functools.partial(self._commit_due, started_by_ns, rows_due))
                    if rows_due:
                        rows_due_at = time.monotonic() + FINISHED_ROWS_WAIT_S
                    if self._pending or self._finished:
                        self._wake.set()  # rows too young or not due yet: look again after the interval
                if (
                    checkpoints is not None
                    and self._dirty
                    and time.monotonic() - last_checkpoint >= CHECKPOINT_INTERVAL_S
                ):
                    self._dirty = False
                    last_checkpoint = time.monotonic()
                    with self._checkpoint_lock:
                        self.backend.checkpoint(checkpoints, final=False)
        finally:
            if checkpoints is not None:
                with self._checkpoint_lock:
                    checkpoints.close()


_writers: weakref.WeakSet[StoreWriter] = weakref.WeakSet()


@atexit.register
def _close_writers() -> None:
    for writer in list(_writers):
        try:  # at exit, a store that cannot close cleanly is left to its database's recovery
            writer.close()
        except Exception:
            pass
