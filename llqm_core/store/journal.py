"""The store's journal of finished tasks: one append per task instead of an SQLite commit.

An append survives a kill of the process just as a commit does, at a fraction of its cost on
the task's path (docs/performance.md); the store's writer thread moves journaled rows into
SQLite in batches and empties the journal once all of it is committed.

Each writing process has its own journal file beside the store, named
``<store>-journal-<random>.journal``: a first line (JSON) saying which process owns it, then
one frame per finished task: a kind byte, the payload's length and the row, in ``marshal``
format, or as JSON for a row that holds a value marshal refuses (a subclass of str or float,
such as ``numpy.str_``). A frame cut short by a kill is ignored. Readers merge every journal
into what SQLite holds, so a task shows in reports the moment it finishes; a writer that opens
the store folds the journals of processes that are gone into SQLite and deletes them.
"""

from __future__ import annotations

import glob
import json
import marshal
import os
import socket
import struct
import uuid
from dataclasses import dataclass
from pathlib import Path

import psutil

SUFFIX = ".journal"
MARSHAL_VERSION = 4  # readable by every Python 3.4+, whichever Python writes the journal
_FRAME = struct.Struct("<cI")  # kind (b"M" marshal, b"J" JSON), payload length
#: Compact JSON, any value by its str() if JSON has no type for it: the store's text columns and
#: frames marshal refuses. One encoder object: ``json.dumps`` would build one per call.
json_text = json.JSONEncoder(separators=(",", ":"), default=str).encode


def journal_pattern(store_path: Path) -> str:
    return str(store_path.with_name(glob.escape(store_path.name) + "-journal-*" + SUFFIX))


def encode_row(row: list) -> bytes:
    """One row as a journal frame."""
    try:
        kind, payload = b"M", marshal.dumps(row, MARSHAL_VERSION)
    except ValueError:  # a value of a subclass of a built-in type: JSON writes it as its base type
        kind, payload = b"J", json_text(row).encode()
    return _FRAME.pack(kind, len(payload)) + payload


def _decode_frames(data: bytes) -> list:
    rows, offset = [], 0
    while offset + _FRAME.size <= len(data):
        kind, size = _FRAME.unpack_from(data, offset)
        start, offset = offset + _FRAME.size, offset + _FRAME.size + size
        if offset > len(data):
            break  # the last frame was cut short
        try:
            rows.append(
                marshal.loads(data[start:offset])
                if kind == b"M"
                else json.loads(data[start:offset])
            )
        except (ValueError, EOFError, TypeError):
            continue
    return rows


@dataclass(frozen=True)
class Owner:
    """The process that writes a journal (or ran a run): where and since when, to tell it is gone."""

    host: str
    pid: int
    process_started: float | None

    @classmethod
    def this_process(cls) -> Owner:
        me = psutil.Process()
        return cls(socket.gethostname(), me.pid, me.create_time())

    def is_gone(self) -> bool:
        """True when the process no longer exists on this host (a reused pid counts as gone);
        False while it runs, or when it ran on another host, where nothing can be told."""
        if self.host != socket.gethostname():
            return False
        try:
            process = psutil.Process(self.pid)
            if (
                self.process_started is not None
                and abs(process.create_time() - self.process_started) > 1.0
            ):
                return True
            return process.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True
        except psutil.Error:
            return False


class TaskJournal:
    """This process's journal for one store: created at the first finished task."""

    def __init__(self, store_path: Path) -> None:
        self.path = store_path.with_name(
            f"{store_path.name}-journal-{uuid.uuid4().hex[:16]}{SUFFIX}"
        )
        owner = Owner.this_process()
        header = (
            json.dumps(
                {"host": owner.host, "pid": owner.pid, "process_started": owner.process_started}
            )
            + "\n"
        ).encode()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        self._header_size = len(header)
        self._write(header)
        self.holds_rows = False

    def _write(self, data: bytes) -> None:
        written = os.write(self._fd, data)
        while written < len(data):  # a short write (a full disk, a signal) leaves the rest to write
            data = data[written:]
            written = os.write(self._fd, data)

    def append(self, frame: bytes) -> None:
        """Keep one row (a frame from ``encode_row``); raises OSError when the file cannot take it."""
        written = os.write(self._fd, frame)
        if written < len(frame):
            self._write(frame[written:])
        self.holds_rows = True

    def clear(self) -> None:
        """Forget every row: call only once all of them are committed to SQLite."""
        if self.holds_rows:
            try:
                os.ftruncate(self._fd, self._header_size)
            except OSError:
                return  # the rows stay; committing them again changes nothing
            self.holds_rows = False

    def remove(self) -> None:
        os.close(self._fd)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


@dataclass
class JournalFile:
    path: Path
    owner: Owner | None
    rows: list[list]


def read_journals(store_path: Path, width: int) -> list[JournalFile]:
    """Every journal beside the store, with its complete rows of ``width`` values (a row still
    being written, or one of another shape, is skipped)."""
    found = []
    for name in sorted(glob.glob(journal_pattern(store_path))):
        try:
            with open(name, "rb") as file:
                data = file.read()
        except OSError:
            continue  # removed by its owner meanwhile: its rows are in SQLite
        header_end = data.find(b"\n")
        if header_end < 0:
            continue
        rows = [
            row
            for row in _decode_frames(data[header_end + 1 :])
            if isinstance(row, list) and len(row) == width
        ]
        found.append(JournalFile(Path(name), _owner(data[:header_end]), rows))
    return found


def _owner(line: bytes) -> Owner | None:
    try:
        header = json.loads(line)
        return Owner(str(header["host"]), int(header["pid"]), header.get("process_started"))
    except (ValueError, KeyError, TypeError):
        return None
