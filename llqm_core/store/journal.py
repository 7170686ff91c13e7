"""The store's journal of finished tasks: one append per task instead of an SQLite commit.

An append survives a kill of the process just as a commit does, at a fraction of its cost on
the task's path (docs/performance.md); the store's writer thread moves journaled rows into
SQLite in batches and empties the journal once all of it is committed.

More in docs/modules.md (``llqm_core.store.journal``).
"""

from __future__ import annotations

import errno
import glob
import json
import marshal
import os
import socket
import struct
import sys
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import psutil

try:
    import mmap
except ImportError:  # a platform without it: frames are written with pwrite
    mmap = None  # type: ignore[assignment]
if mmap is not None and not hasattr(mmap, "MAP_SHARED"):  # Windows maps by other means
    mmap = None  # type: ignore[assignment]

SUFFIX = ".journal"
MARSHAL_VERSION = 4  # readable by every Python 3.4+, whichever Python writes the journal
_FRAME = struct.Struct("<cI")  # kind (b"M" marshal, b"J" JSON), payload length
_END = b"\0"  # the kind byte after the last frame: the mapped file's unused tail is zeros
#: A journal's file is this large at first, then doubled when a frame does not fit: one
#: ``pwrite`` of zeros per 64 KiB and one ``mmap`` per step, no system call per task.
FIRST_SIZE = 1 << 20
_READ_STEP = 1 << 16  # a reader reads a journal in steps this large, to the end of its frames
#: The mapped pages past the last frame are made writable this far ahead, in one system call
#: (``madvise(MADV_POPULATE_WRITE)``, Linux 5.14+): else the first write to each page of a
#: shared mapping is a page fault on the task's path (docs/performance.md).
POPULATE_AHEAD = 1 << 18
_POPULATE_WRITE: int | None = getattr(mmap, "MADV_POPULATE_WRITE", None)
if _POPULATE_WRITE is None and mmap is not None and sys.platform == "linux":
    _POPULATE_WRITE = 23  # the kernel's value, which Pythons before 3.13 do not name
#: Compact JSON, any value by its str() if JSON has no type for it: the store's text columns and
#: frames marshal refuses. One encoder object: ``json.dumps`` would build one per call.
json_text = json.JSONEncoder(separators=(",", ":"), default=str).encode


def row_json(value: list | dict) -> str:
    """``json_text`` of a decoded journal row's list or dict (built-in types only), written by
    orjson in a fraction of the time; the same values read back (the text may spell a float or a
    non-ASCII letter otherwise). Where orjson would write something else (``null`` for a NaN or
    an infinity) or refuses (an int beyond 64 bits), ``json_text`` writes it."""
    try:
        out = orjson.dumps(value)
    except orjson.JSONEncodeError:
        return json_text(value)
    return json_text(value) if b"null" in out else out.decode()


def journal_pattern(store_path: Path) -> str:
    return str(store_path.with_name(glob.escape(store_path.name) + "-journal-*" + SUFFIX))


def encode_row(row: list | dict | tuple) -> bytes:
    """One row as a journal frame (or a statement, ``statement_frame``)."""
    try:
        kind, payload = b"M", marshal.dumps(row, MARSHAL_VERSION)
    except ValueError:  # a value of a subclass of a built-in type: JSON writes it as its base type
        kind, payload = b"J", json_text(row).encode()
    return _FRAME.pack(kind, len(payload)) + payload


def _read_to_end_of_frames(file: BinaryIO) -> bytearray:
    """The file up to the zero kind byte that ends its frames, or to its end: a mapped journal's
    unused tail (a MiB or more) is not read."""
    data = bytearray(file.read(_READ_STEP))
    offset = data.find(b"\n") + 1  # the frames start after the header line
    while offset:
        while offset + _FRAME.size <= len(data):
            kind, size = _FRAME.unpack_from(data, offset)
            if kind == _END:
                return data
            offset += _FRAME.size + size
        more = file.read(max(_READ_STEP, offset + _FRAME.size - len(data)))
        if not more:
            break
        data += more
    return data


def _decode_frames(data: bytearray, offset: int) -> list:
    rows = []
    while offset + _FRAME.size <= len(data):
        kind, size = _FRAME.unpack_from(data, offset)
        if kind == _END:
            break  # the unused tail, or a frame whose copy a kill cut short
        start, offset = offset + _FRAME.size, offset + _FRAME.size + size
        if offset > len(data):
            break  # the last frame was cut short
        try:
            rows.append(_decode_payload(kind, data[start:offset]))
        except (ValueError, EOFError, TypeError):
            continue
    return rows


def _decode_payload(kind: bytes, payload: bytes | bytearray) -> list:
    return marshal.loads(payload) if kind == b"M" else json.loads(payload)


def decode_frame(frame: bytes) -> list:
    """The row that ``encode_row`` made ``frame`` of."""
    kind, _ = _FRAME.unpack_from(frame)
    return _decode_payload(kind, frame[_FRAME.size :])


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

    def header_line(self) -> bytes:
        """The first line of a file this process writes beside a store (``owner_from_header``)."""
        return (
            json.dumps(
                {"host": self.host, "pid": self.pid, "process_started": self.process_started}
            )
            + "\n"
        ).encode()

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
    """This process's journal for one store: created at the first finished task.

    ``mapped=False`` writes every frame with ``pwrite``, as a journal whose file cannot be
    mapped does (``bench/journal_append.py`` compares the two)."""

    def __init__(self, store_path: Path, mapped: bool = True) -> None:
        self.path = store_path.with_name(
            f"{store_path.name}-journal-{uuid.uuid4().hex[:16]}{SUFFIX}"
        )
        header = Owner.this_process().header_line()
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        self._end = 0  # where the next frame goes
        self._write(header)
        self._header_size = self._end
        self._map: mmap.mmap | None = None
        self._size = 0  # of the mapping
        self._populated = 0  # the mapping is writable without a fault up to here
        self._inherited = False  # True in a forked child: the file is the parent's
        self.holds_rows = False
        if mapped:
            self._map_file(FIRST_SIZE)
        _journals.add(self)

    def _map_file(self, size: int) -> None:
        """Extend the file to ``size`` bytes with zeros and map all of it; where the system or the
        filesystem refuses, frames are written with ``pwrite`` from then on."""
        if self._map is not None:
            self._map.close()
            self._map = None
        if mmap is None:
            return
        start = self._size or self._end
        try:
            # Written, not just sized: the disk space is taken now (a full disk fails here, not
            # as a SIGBUS on a later copy) and the pages are cached, mapped without a fault each.
            if not _write_zeros(self._fd, start, size):
                return
            self._map = mmap.mmap(
                self._fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE
            )
            self._size = size
            self._populated = 0
        except (OSError, ValueError):
            self._map = None

    def _write(self, data: bytes) -> None:
        """Write ``data`` where the frames end, with as many ``pwrite`` as it takes (a short write:
        a full disk, a signal); on failure the next frame goes to the same place."""
        view, offset = memoryview(data), self._end
        while view:
            written = os.pwrite(self._fd, view, offset)
            view, offset = view[written:], offset + written
        self._end = offset

    def append(self, frame: bytes) -> None:
        """Keep one row (a frame from ``encode_row``); raises OSError when the file cannot take it."""
        start = self._end
        end = start + len(frame)
        mapped = self._map
        if mapped is None or end >= self._size:  # keep a zero kind byte after the last frame
            self._append_unmapped(frame)
            return
        mapped[start + 1 : end] = frame[1:]  # the length and payload before the kind byte
        mapped[start] = frame[0]
        self._end = end
        self.holds_rows = True
        if end > self._populated:
            self._populate_from(end)

    def _populate_from(self, end: int) -> None:
        """Make the next ``POPULATE_AHEAD`` bytes of the mapping from ``end`` on writable now;
        where the system cannot, pages fault on first write as before."""
        global _POPULATE_WRITE
        stop = min(self._size, end + POPULATE_AHEAD)
        self._populated = stop  # where it fails, not asked again for these pages
        if _POPULATE_WRITE is None or self._map is None:
            return
        start = end - end % mmap.PAGESIZE
        try:
            self._map.madvise(_POPULATE_WRITE, start, stop - start)
        except (OSError, ValueError):  # a kernel older than 5.14: never asked again
            _POPULATE_WRITE = None

    def _append_unmapped(self, frame: bytes) -> None:
        """A frame past the mapping's end (it grows, doubling), or for a file that is not mapped."""
        if self._inherited:
            raise OSError(errno.EBADF, "this journal belongs to the process that forked this one")
        if self._map is not None:
            size = 2 * self._size
            while size <= self._end + len(frame):
                size *= 2
            self._map_file(size)
            if self._map is not None:
                self.append(frame)
                return
        self._write(frame)
        self.holds_rows = True

    def clear(self) -> None:
        """Forget every row: call only once all of them are committed to SQLite."""
        if not self.holds_rows:
            return
        first = self._header_size
        if self._map is not None:
            self._map[first] = 0  # readers stop here from now on
            self._map[first + 1 : self._end] = bytes(self._end - first - 1)
        else:
            try:
                os.ftruncate(self._fd, first)
            except OSError:
                return  # the rows stay; committing them again changes nothing
        self._end = first
        self._populated = 0  # written back meanwhile, a page faults again on its next write
        self.holds_rows = False

    def remove(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
        os.close(self._fd)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def _leave_to_parent(self) -> None:
        """In a forked child: the mapping and the file stay the parent's alone."""
        self._inherited = True
        if self._map is not None:
            self._map.close()
            self._map = None


def _write_zeros(fd: int, start: int, end: int) -> bool:
    """Zeros from ``start`` to ``end`` of the file, a 64 KiB block at a time: a buffer as large
    as the whole step would be fresh memory, a page fault per page on the task that grows the
    journal. False on a short write (a full disk)."""
    zeros = _ZEROS
    while start < end:
        size = min(len(zeros), end - start)
        if os.pwrite(fd, zeros[:size] if size < len(zeros) else zeros, start) < size:
            return False
        start += size
    return True


_ZEROS = bytes(1 << 16)
_journals: weakref.WeakSet[TaskJournal] = weakref.WeakSet()


def _leave_journals_to_parent() -> None:
    for journal in list(_journals):
        journal._leave_to_parent()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_leave_journals_to_parent)


#: The key of a frame that holds a statement the database did not get (a dict: the SQL under
#: this key, its ``params`` beside it; ``store.reconnect``) rather than a task's row (a list).
STATEMENT_KEY = "statement"


#: A task's start as its frame keeps it (a tuple, where rows are lists and statements dicts).
START_FIELDS = (
    "id", "run_id", "name", "stage", "parent_id", "depends_on", "start_ns", "trace_id", "span_id",
    "parent_span_id",
)  # fmt: skip


def start_frame(task: Any) -> bytes:
    """A started task's frame (``START_FIELDS``): what a kill within seconds of its start, or
    native code that keeps the GIL from the writer, would otherwise lose of it."""
    return encode_row(
        (task.id, task.run_id, task.name, task.stage, task.parent_id, task.depends_on,
         task.start_ns, task.trace_id, task.span_id, task.parent_span_id)
    )  # fmt: skip


def started_row(frame: tuple, width: int) -> list:
    """A start frame as a running task's row of ``width`` values (``TASK_COLUMNS``: the record's
    sixteen fields, then its profile, none of it measured yet)."""
    (task_id, run_id, name, stage, parent, depends, start, trace, span, parent_span) = frame
    return [
        task_id, run_id, name, stage, "running", parent, depends, start, None, trace, span,
        parent_span, None, None, {}, None, *([None] * (width - 16)),
    ]  # fmt: skip


def statement_frame(sql: str, params: tuple | list) -> bytes:
    return encode_row({STATEMENT_KEY: sql, "params": list(params)})


@dataclass
class JournalFile:
    path: Path
    owner: Owner | None
    rows: list[list]
    #: Statements (SQL, parameters) the database did not get, in order (``store.reconnect``).
    statements: list[tuple[str, list]] = field(default_factory=list)


def read_journals(
    store_path: Path, width: int, older: Callable[[list], list | None] | None = None
) -> list[JournalFile]:
    """Every journal beside the store, with its complete rows of ``width`` values; a row of
    another width is what ``older`` makes of it (an older llqm's row), or skipped (a row still
    being written, or ``older`` gives None)."""
    found = []
    for name in sorted(glob.glob(journal_pattern(store_path))):
        try:
            with open(name, "rb") as file:
                data = _read_to_end_of_frames(file)
        except OSError:
            continue  # removed by its owner meanwhile: its rows are in SQLite
        header_end = data.find(b"\n")
        if header_end < 0:
            continue
        rows, statements = [], []
        for row in _decode_frames(data, header_end + 1):
            if isinstance(row, dict) and isinstance(row.get(STATEMENT_KEY), str):
                statements.append((row[STATEMENT_KEY], list(row.get("params") or ())))
            if isinstance(row, tuple) and len(row) == len(START_FIELDS):
                row = started_row(row, width)
            if not isinstance(row, list):
                continue
            if len(row) != width:
                row = older(row) if older is not None else None
            if row is not None:
                rows.append(row)
        owner = owner_from_header(data[:header_end])
        rows = list({row[0]: row for row in rows}.values())  # a task's end over its start
        found.append(JournalFile(Path(name), owner, rows, statements))
    return found


def owner_from_header(line: bytes | bytearray) -> Owner | None:
    """The owner a file's first line names (``Owner.header_line``); None if it names none."""
    try:
        header = json.loads(line)
        return Owner(str(header["host"]), int(header["pid"]), header.get("process_started"))
    except (ValueError, KeyError, TypeError):
        return None
