"""The store's record of the tasks running now: what a kill leaves of the tasks it cut short.

Finished tasks are journaled (``journal``); a running one is not, so a process killed mid-task
would lose exactly the task that was running. The shared sampler therefore writes, at each of
its ticks, the rows of the tasks running in this process (their ids, name, stage, start, thread,
parent, and their readings so far: wall, CPU, RSS) into a small file beside the store. Each write
replaces the last one; two slots, each with a sequence number and a checksum, make a write that
a kill cuts short leave the previous one readable. A reader takes the file of a process that is
gone (``Owner.is_gone``) as the tasks it was running at its death; the next writer of the store
commits those rows and deletes the file (docs/reliability.md).
"""

from __future__ import annotations

import glob
import json
import marshal
import os
import struct
import threading
import time
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..model.records import Profile
from .journal import MARSHAL_VERSION, Owner, json_text, owner_from_header
from .row_records import SELECT_TASKS
from .schema import TASK_COLUMNS
from .seen_watch import RECORD, LastSeen, start_watch, unpack

SUFFIX = ".inflight"
#: Each of the file's two slots holds this many bytes of rows: some 400 running tasks; where they
#: do not fit, their metrics are left out, then the longest-running ones are kept.
SLOT_SIZE = 1 << 16
_SLOT_HEAD = struct.Struct("<QIIc")  # sequence number, payload length, CRC-32, kind (M or J)
_METRICS = 14  # a row's metrics (``TASK_COLUMNS``), left out where the rows do not fit
_END, _WALL, _END_RSS, _PEAK, _GROWTH, _READINGS = (
    TASK_COLUMNS.index(name)
    for name in (
        "end_ns",
        "wall_s",
        "end_rss_bytes",
        "peak_rss_bytes",
        "rss_growth_bytes",
        "readings",
    )
)
_START, _CPU, _SCOPE, _PROCESS_CPU = (
    TASK_COLUMNS.index(n) for n in ("start_ns", "cpu_s", "cpu_scope", "process_cpu_s")
)
#: Stored rows of tasks running with no reading (no end), for the caller's ``AND`` to narrow.
UNREAD_ROWS = f"{SELECT_TASKS} WHERE status = 'running' AND end_ns IS NULL"
#: How often the watch beside the file (``seen_watch``) reads its process: the sampler's default.
WATCH_INTERVAL_S = 0.2


def in_flight_pattern(store_path: Path) -> str:
    return str(store_path.with_name(glob.escape(store_path.name) + "-inflight-*" + SUFFIX))


def _payload(cpu_s: float, rows: list[list]) -> tuple[bytes, bytes]:
    """A slot's payload: the process's CPU seconds at the write, and the rows."""
    try:
        return b"M", marshal.dumps([cpu_s, rows], MARSHAL_VERSION)
    except ValueError:  # a value of a subclass of a built-in type (a metric): JSON writes its base
        return b"J", json_text([cpu_s, rows]).encode()


class InFlightFile:
    """This process's record of its running tasks for one store, replaced at each write."""

    def __init__(self, store_path: Path) -> None:
        self.path = store_path.with_name(
            f"{store_path.name}-inflight-{uuid.uuid4().hex[:16]}{SUFFIX}"
        )
        header = Owner.this_process().header_line()
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        self._header = len(header)
        os.pwrite(self._fd, header, 0)
        self._sequence = 0
        self.empty = True  # the last write held no rows
        # past both slots: when the process was last seen alive, written by a process beside it
        start_watch(str(self.path), self._header + 2 * SLOT_SIZE, WATCH_INTERVAL_S)

    def write(self, rows: list[list]) -> None:
        """Replace the file's rows with ``rows`` (the tasks running now; [] when none does).
        Raises OSError when the file cannot take them (a full disk)."""
        cpu = time.process_time()  # the process's CPU now: what the watch's later reading adds to
        kind, payload = _payload(cpu, rows)
        if len(payload) > SLOT_SIZE - _SLOT_HEAD.size:  # large metrics: the readings matter more
            rows = [[*row[:_METRICS], {}, *row[_METRICS + 1 :]] for row in rows]
            kind, payload = _payload(cpu, rows)
        while len(payload) > SLOT_SIZE - _SLOT_HEAD.size and rows:
            rows = sorted(rows, key=lambda row: row[7])[: len(rows) // 2]  # the earliest starts
            kind, payload = _payload(cpu, rows)
        self._sequence += 1
        head = _SLOT_HEAD.pack(self._sequence, len(payload), zlib.crc32(payload), kind)
        os.pwrite(self._fd, head + payload, self._header + (self._sequence % 2) * SLOT_SIZE)
        self.empty = not rows

    def remove(self) -> None:
        os.close(self._fd)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class InFlightKeeper:
    """A writer's in-flight file: made on the first rows, given up at the first error (the
    database's running rows still show the tasks), removed when the writer closes."""

    def __init__(self, store_path: Path) -> None:
        self._store_path = store_path
        self._file: InFlightFile | None | bool = None  # False: given up, or removed
        self._lock = threading.Lock()

    def record(self, rows: list[list]) -> None:
        with self._lock:
            if self._file is False or (self._file is None and not rows):
                return
            try:
                if not isinstance(self._file, InFlightFile):
                    self._file = InFlightFile(self._store_path)
                self._file.write(rows)
            except OSError:
                self._file = False

    def remove(self) -> None:
        with self._lock:
            if isinstance(self._file, InFlightFile):
                self._file.remove()
            self._file = False


@dataclass
class InFlightRecord:
    path: Path
    owner: Owner | None
    rows: list[list]
    seen: LastSeen | None = None  # what the watch beside the file last read (``seen_watch``)


def read_in_flight(store_path: Path, width: int) -> list[InFlightRecord]:
    """The running tasks that processes now gone recorded last beside the store (their rows of
    ``width`` values): what they were running when they died."""
    found = []
    for name in sorted(glob.glob(in_flight_pattern(store_path))):
        try:
            with open(name, "rb") as file:
                data = file.read(2 * SLOT_SIZE + 4096)
        except OSError:
            continue  # removed by its owner meanwhile
        end = data.find(b"\n")
        if end < 0:
            continue
        owner = owner_from_header(data[:end])
        if owner is None or not owner.is_gone():
            continue
        seen = unpack(data[end + 1 + 2 * SLOT_SIZE : end + 1 + 2 * SLOT_SIZE + RECORD.size])
        cpu, latest = _latest_rows(data, end + 1)
        rows = [row for row in latest if len(row) == width]
        if seen is not None:
            rows = [seen_until(row, seen, cpu) for row in rows]
        found.append(InFlightRecord(Path(name), owner, rows, seen))
    return found


def unread_until(row: tuple | list, seen: LastSeen) -> list | None:
    """A task the database holds as running with no reading (it started within a sampler tick
    of its process's death) carried to the moment the process was last seen: its wall time up
    to then, the process's RSS then (``readings`` ``seen``); None for one that started later."""
    start = row[_START]
    if start is None or seen.seen_ns <= start:
        return None
    profile = Profile(
        wall_s=(seen.seen_ns - start) / 1e9,
        start_rss_bytes=seen.rss_bytes,
        end_rss_bytes=seen.rss_bytes,
        peak_rss_bytes=seen.rss_bytes,
        readings="seen",
    )
    return [*row[:_END], seen.seen_ns, *row[_END + 1 : _WALL], *profile.values()]


def seen_until(row: list, seen: LastSeen, written_cpu_s: float | None = None) -> list:
    """A running task's row as its sampler last wrote it (the process's CPU then:
    ``written_cpu_s``), carried on to the moment its process was last seen alive where that is
    later: its wall time up to then, its RSS then as its last (``readings`` ends ``+seen``), and,
    for a task alone in its process (CPU scope ``process``), the process's CPU since."""
    if len(row) != len(TASK_COLUMNS) or row[_END] is None or row[_WALL] is None:
        return row
    if seen.seen_ns <= row[_END]:
        return row
    row = list(row)
    row[_WALL] += (seen.seen_ns - row[_END]) / 1e9
    row[_END] = seen.seen_ns
    row[_GROWTH] += seen.rss_bytes - row[_END_RSS]
    row[_END_RSS] = seen.rss_bytes
    row[_PEAK] = max(row[_PEAK], seen.rss_bytes)
    row[_READINGS] = f"{row[_READINGS]}+seen"
    if written_cpu_s is not None and row[_SCOPE] == "process":
        more = max(seen.cpu_s - written_cpu_s, 0.0)
        row[_CPU] += more
        row[_PROCESS_CPU] += more
    return row


def _latest_rows(data: bytes, first: int) -> tuple[float | None, list[list]]:
    """The process's CPU at the write and the rows of the slot written last whose payload is
    whole (its checksum holds)."""
    best: tuple[int, list] | None = None
    for slot in (first, first + SLOT_SIZE):
        if slot + _SLOT_HEAD.size > len(data):
            continue
        sequence, size, crc, kind = _SLOT_HEAD.unpack_from(data, slot)
        payload = data[slot + _SLOT_HEAD.size : slot + _SLOT_HEAD.size + size]
        if sequence == 0 or len(payload) != size or zlib.crc32(payload) != crc:
            continue
        try:
            rows = marshal.loads(payload) if kind == b"M" else json.loads(payload)
        except (ValueError, EOFError, TypeError):
            continue
        if isinstance(rows, list) and (best is None or sequence > best[0]):
            best = (sequence, rows)
    if best is None or len(best[1]) != 2 or not isinstance(best[1][1], list):
        return None, []
    cpu, rows = best[1]
    return cpu, [row for row in rows if isinstance(row, list)]
