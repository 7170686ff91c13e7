"""A database store that stops answering mid-run (a PostgreSQL server restarted): the writer
tries again with doubling waits, off the tasks' path, while finished tasks wait in the journal.

A run's start and end, snapshots and decisions that did not reach the database wait in memory
in order and go first once it answers. A server still down when the store closes leaves them in
the journal as statement frames beside the tasks' rows; ``llqm store load`` (or any llqm that
opens the store for writing) commits both once it answers again.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model.errors import StoreError, warn
from ..model.records import TaskRow
from .backend import StoreBackend
from .journal import TaskJournal, statement_frame
from .queued import QueuedRows

#: After a lost connection, the writer's thread tries again after this long, doubling the wait
#: after each failed try up to ``RECONNECT_MAX_S``: a restart is seen within seconds, a server
#: that stays down costs one failed connect every ``RECONNECT_MAX_S``.
RECONNECT_FIRST_S = 1.0
RECONNECT_MAX_S = 15.0
#: A store that closes while its database does not answer waits this long at most for it (the
#: run's end is held up by no more), then leaves what it could not commit in the journal.
CLOSE_WAIT_S = 10.0


class Outage:
    """A lost connection: when it was lost and when to try connecting again."""

    def __init__(self) -> None:
        self.since = time.monotonic()
        self.wait = RECONNECT_FIRST_S
        self.retry_at = self.since + self.wait

    def due(self) -> bool:
        return time.monotonic() >= self.retry_at

    def failed(self) -> None:
        """One more try failed: the next waits twice as long, up to ``RECONNECT_MAX_S``."""
        self.wait = min(self.wait * 2, RECONNECT_MAX_S)
        self.retry_at = time.monotonic() + self.wait


def load_command(store: str) -> str:
    """The command that commits a store's waiting journals: ``store`` named without a password
    (libpq then takes it from ``PGPASSWORD`` or ``~/.pgpass``, or the user adds it)."""
    return f"llqm store load --store {store}"


def still_down_sentence(store: str, journal: Path | None, end_kept: bool, results_lost: int) -> str:
    """The one warning of a store that closes while its database does not answer: where what
    it did not get waits (``journal``; None: nowhere), and what loads it later."""
    if journal is None:
        kept = "what it had not committed could not be journaled and is lost"
    else:
        but = "" if end_kept else ", except the run's end, which the journal could not take"
        kept = (
            f"what it had not committed (finished tasks, the run's end) waits in the journal "
            f"{journal}{but}; once the database answers, `{load_command(store)}` commits it "
            "(as does the next llqm that opens the store for writing)"
        )
    lost = f"; {results_lost} kept device results are lost" if results_lost else ""
    return f"{store} did not answer again before the run ended: {kept}{lost}."


def journal_statements(journal: TaskJournal, statements: list[tuple[str, tuple]]) -> bool:
    """Append the statements the database did not get to ``journal``, in order; False when the
    journal cannot take them."""
    try:
        for sql, params in statements:
            journal.append(statement_frame(sql, params))
    except OSError:
        return False
    return True


class Reconnecting:
    """The half of ``StoreWriter`` that outlives a lost connection.

    ``_outage`` is set and cleared under ``_queue_lock`` and read without it on the way in; the
    statements the database did not get wait in ``_unsent``, in order, under ``_queue_lock``
    too. Connecting again never holds ``_lock``: tasks and the program never wait for it."""

    backend: StoreBackend
    _lock: threading.RLock
    _queue_lock: threading.Lock
    _conn: Any
    _owns_conn: bool
    _outage: Outage | None
    _unsent: list[tuple[str, tuple]]
    _finished: list[bytes | list]
    _pending: dict[str, Any]
    _journal: TaskJournal | None
    _journal_warned: bool
    _queued: QueuedRows
    _wake: threading.Event

    if TYPE_CHECKING:  # the writer's own (``StoreWriter``)

        def _accepting(self) -> bool: ...  # whether the store still takes rows
        def _guarded(self, commit: Callable[[], None]) -> None: ...
        def _commit_all(self, sql: str | None = None, params: tuple = ()) -> None: ...
        def _start_thread(self) -> None: ...

    def _write(self, sql: str | None, params: tuple) -> None:
        """Commit one statement now, with every queued row; while the database does not answer,
        the statement waits for it (``reconnect``) and the caller does not."""
        if self._outage is not None and self._kept_unsent(sql, params):
            return
        with self._lock:
            if self._outage is not None and self._kept_unsent(sql, params):
                return
            self._guarded(functools.partial(self._commit_all, sql, params))
            self._start_thread()

    def _kept_unsent(self, sql: str | None, params: tuple) -> bool:
        """Queue ``sql`` to go first once the database answers again; False if it does now."""
        with self._queue_lock:
            if self._outage is None:
                return False
            if sql is not None:
                self._unsent.append((sql, params))
        return True

    def _lost(self) -> None:
        """The database stopped answering (a server restart): connect again with backoff."""
        with self._queue_lock:
            self._outage = Outage()
        self._wake.set()

    def _reconnect(self, timeout_s: float | None = None) -> bool:
        """Connect again, without ``_lock`` (tasks and the program never wait for it), then send
        the statements that waited, in order; False while the database does not answer."""
        failures: tuple[type[BaseException], ...] = (StoreError, *self.backend.errors)
        try:
            conn = self.backend.connect_writer(timeout_s)
        except failures:
            if (outage := self._outage) is not None:
                outage.failed()
            return False
        with self._lock:
            if self._outage is None or not self._accepting():
                self.backend.close(conn)  # another thread connected first, or the store closed
                return self._outage is None
            try:
                self.backend.close(self._conn, self._owns_conn)
            except self.backend.errors:
                pass  # the old connection is gone already
            self._conn, self._owns_conn = conn, True
            with self._queue_lock:  # a statement queued from now on takes ``_lock`` and waits
                self._outage = None
                unsent, self._unsent = self._unsent, []
            self._guarded(functools.partial(self._send, unsent))
            return self._outage is None

    def _send(self, statements: list[tuple[str, tuple]]) -> None:
        """Statements that waited for the database, in order; those a failure leaves go back."""
        for done, (sql, params) in enumerate(statements):
            try:
                self.backend.execute(self._conn, sql, params)
            except self.backend.errors:
                with self._queue_lock:
                    self._unsent[:0] = statements[done:]
                raise

    def _last_commit(self) -> None:
        """At close, commit what is queued; a database that does not answer is waited for
        ``CLOSE_WAIT_S`` at most, then what it did not get stays in the journal."""
        deadline = time.monotonic() + CLOSE_WAIT_S
        while True:
            while (outage := self._outage) is not None and self._accepting():
                left = deadline - time.monotonic()
                if left <= 0 or self._reconnect(left):
                    break
                time.sleep(max(0.0, min(outage.wait, deadline - time.monotonic())))
            with self._lock:
                self._guarded(self._commit_all)
                if self._outage is None or not self._accepting():
                    return  # committed, or the store stopped taking rows (a full disk)
                if time.monotonic() >= deadline:
                    self._keep_for_later()
                    return

    def _keep_for_later(self) -> None:
        """The database still does not answer at close: the statements it did not get join the
        tasks' rows in the journal, and one warning says where they wait and what loads them."""
        with self._queue_lock:
            unsent, self._unsent = self._unsent, []
            results = len(self._queued.results)
            try:
                if unsent and self._journal is None and not self._journal_warned:
                    self._journal = TaskJournal(self.backend.journal_base)
            except OSError:
                pass
            journal = self._journal
            end_kept = journal is not None and journal_statements(journal, unsent)
            waiting = journal.path if journal is not None and journal.holds_rows else None
        warn(still_down_sentence(self.backend.name, waiting, end_kept, results), stacklevel=4)

    def _put_back(
        self, running: list[TaskRow], finished: list[bytes | list], sql: str | None, params: tuple
    ) -> None:
        """Queue again what a failed commit took, for the first commit after a reconnection;
        committing any of it twice keeps one row (``commit_rows`` replaces by id)."""
        with self._queue_lock:
            for task in running:
                self._pending.setdefault(task.id, task)
            self._finished[:0] = finished
            if sql is not None:
                self._unsent.append((sql, params))
