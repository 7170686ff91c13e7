"""What a kind of database gives the store: the one interface SQLite and PostgreSQL implement.

``ProfileStore`` (``profile_store``) is what the rest of LLQM uses; it keeps a run through a
``StoreWriter`` and answers queries through a ``StoreReader``, and both speak to the database
only through a ``StoreBackend``: how to create, check and migrate the schema, connect, query,
commit a batch of rows in one transaction, and where this machine keeps the store's journals.
The SQL they send is written once, with ``?`` placeholders, and the backend adapts it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .schema import TASK_COLUMNS

TASK_INSERT = f"INSERT INTO tasks ({', '.join(TASK_COLUMNS)}) VALUES "
ONE_TASK_ROW = f"({','.join('?' * len(TASK_COLUMNS))})"

Row = Mapping[str, Any]


class StoreBackend(ABC):
    """One store of one kind. ``location`` reopens it (an SQLite path or a PostgreSQL URL, which
    may hold a password); ``name`` is how messages name it, never with a password."""

    location: str
    name: str
    #: Journals of this store on this machine are named after this path (``journal``).
    journal_base: Path
    #: The driver's exceptions: a write that raises one of these stops the store, not the run.
    errors: tuple[type[BaseException], ...]
    #: The SQL of the larger of two values, and of "equal, or both NULL" (``store.aggregates``).
    greatest = "MAX"
    same_value = "IS"

    @abstractmethod
    def prepare(self, readonly: bool) -> None:
        """Make sure the store exists with the current schema (a reader never creates one);
        raise ``StoreError`` with one sentence when it cannot be used."""

    @abstractmethod
    def exists(self) -> bool:
        """Whether a store is there to read (it may still be refused); creates nothing."""

    @abstractmethod
    def connect(self, readonly: bool) -> Any:
        """A new connection, usable from any thread (callers serialise their use of it)."""

    @abstractmethod
    def connect_writer(self, timeout_s: float | None = None) -> Any:
        """The connection a writer commits through, each statement on its own unless in
        ``commit_rows``; ``timeout_s`` bounds the wait for a database server to answer."""

    def connect_housekeeping(self) -> Any:
        """A connection for ``checkpoint`` in the writer's thread; None where none is needed."""
        return None

    @abstractmethod
    def write_briefly(self, sql: str, params: Sequence[Any] = ()) -> bool:
        """Run one statement on a connection of its own that waits for a lock only briefly;
        False (and nothing changed) where it could not: a read-only store, a busy writer."""

    @abstractmethod
    def query(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """The rows of one query, each readable by column name."""

    @abstractmethod
    def query_tuples(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """The rows of one query as plain tuples, in the order the query names the columns."""

    @abstractmethod
    def execute(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> None:
        """One statement, committed at once."""

    @abstractmethod
    def execute_many(self, conn: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One statement for each of ``rows``, committed together in one transaction."""

    @abstractmethod
    def commit_rows(
        self,
        conn: Any,
        sql: str | None,
        params: Sequence[Any],
        running: list[tuple],
        finished: list[list],
    ) -> None:
        """One transaction: the statement (if any), the running tasks' rows (never over a row
        already there) and the finished tasks' rows (``stored_row`` form, replacing any)."""

    @abstractmethod
    def insert_ignoring_duplicates(self, table: str, columns: Sequence[str]) -> str:
        """An INSERT of one row that leaves an existing row of the same key alone."""

    @abstractmethod
    def json_equals(self, column: str, key: str) -> tuple[str, Any]:
        """A condition that the JSON text in ``column`` has ``key`` equal to the next parameter:
        the SQL (one ``?`` for the value) and the key as the parameter that comes first."""

    def rollback(self, conn: Any) -> None:
        """Undo a transaction a failed write left open."""
        return None

    def checkpoint(self, conn: Any, final: bool) -> None:
        """Housekeeping off the tasks' path (SQLite folds its WAL); ``final`` at close."""
        return None

    def close(self, conn: Any, owned_by_this_process: bool = True) -> None:
        """Close a connection; one a forked child inherited is left to its parent."""
        if owned_by_this_process:
            conn.close()

    def describe_error(self, exc: BaseException) -> str:
        """The driver's message for a user, without the store's secrets."""
        return str(exc)

    def connection_lost(self, conn: Any) -> bool:
        """Whether ``conn`` is gone (its database server restarted or stopped), so that
        connecting again may work (``store.reconnect``); never for a file."""
        return False

    def full_disk(self, exc: BaseException) -> str | None:
        """Why the database refused a write for want of room (``store.disk_full``), in words;
        None for any other failure."""
        return None
