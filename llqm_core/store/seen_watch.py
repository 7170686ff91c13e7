"""The moment a process was last seen alive, kept by a small process beside it.

The sampler, a thread of the watched process, cannot tick while native code holds the GIL (a
100-qubit transpile at level 3 holds it for seconds). Run as a script by a Python of its own
(``python -I -S seen_watch.py PID START_TICKS FILE OFFSET INTERVAL_S``), this reads the
process's RSS and CPU from ``/proc`` at that interval into its in-flight file, with the moment;
once the process is gone it writes by when it died, and ends, as it does when the file is
removed (the run ended). Readers carry the running tasks on to that moment (docs/reliability.md).
"""

from __future__ import annotations

import os
import struct
import sys
import time
import zlib
from typing import NamedTuple

#: magic, last seen (epoch ns), died by (epoch ns, 0 while alive), RSS bytes, CPU ns, CRC-32
RECORD = struct.Struct("<8sQQQQI")
MAGIC = b"llqmseen"


class LastSeen(NamedTuple):
    """What the watch last read of its process: when, its RSS and CPU, and by when it had died
    (None where the watch did not see it die: a watch killed with it, as by a cgroup's kill)."""

    seen_ns: int
    died_by_ns: int | None
    rss_bytes: int
    cpu_s: float


def pack(seen_ns: int, died_by_ns: int, rss: int, cpu_ns: int) -> bytes:
    body = RECORD.pack(MAGIC, seen_ns, died_by_ns, rss, cpu_ns, 0)[:-4]
    return body + struct.pack("<I", zlib.crc32(body))


def unpack(data: bytes) -> LastSeen | None:
    """The record in ``data`` (``RECORD.size`` bytes), None where there is none whole."""
    if len(data) < RECORD.size:
        return None
    magic, seen, died, rss, cpu_ns, crc = RECORD.unpack_from(data)
    if magic != MAGIC or zlib.crc32(data[: RECORD.size - 4]) != crc:
        return None
    return LastSeen(seen, died or None, rss, cpu_ns / 1e9)


def process_start_ticks(pid: int) -> bytes | None:
    """The process's start in clock ticks since boot (``/proc/PID/stat``'s 22nd field): with the
    pid, it names the process, whatever pid the system reuses later; None without ``/proc``."""
    fields = _stat_fields(pid)
    return None if fields is None else fields[19]


def _stat_fields(pid: int) -> list[bytes] | None:
    """``/proc/PID/stat``'s fields after the command name (the state first)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def watch(pid: int, started: bytes, path: str, offset: int, interval_s: float) -> None:
    """Write what is read of process ``pid`` into ``path`` at ``offset`` every ``interval_s``
    until it is gone (then by when it died) or the file is removed."""
    ticks, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    fd = os.open(path, os.O_WRONLY)
    seen = None
    while True:
        fields = _stat_fields(pid)
        now = time.time_ns()
        if fields is None or fields[19] != started or fields[0] in (b"Z", b"X"):
            if seen is not None:
                os.pwrite(fd, pack(seen[0], now, seen[1], seen[2]), offset)
            return
        if os.fstat(fd).st_nlink == 0:
            return
        cpu_ns = (int(fields[11]) + int(fields[12])) * 1_000_000_000 // ticks
        seen = (now, int(fields[21]) * page, cpu_ns)
        os.pwrite(fd, pack(now, 0, seen[1], cpu_ns), offset)
        time.sleep(interval_s)


def start_watch(path: str, offset: int, interval_s: float) -> bool:
    """Start the watch of this process over its in-flight file ``path`` (called by the thread
    that made the file, never on a task's path); False where it cannot be (no ``/proc``, no
    shell or Python to start)."""
    import subprocess

    started = process_start_ticks(os.getpid())
    if started is None or not sys.executable or not os.path.exists(_SHELL):
        return False
    args = [sys.executable, __file__, str(os.getpid()), started.decode(), path, str(offset)]
    try:
        # The shell starts the watch in the background and ends at once: the watch is no child
        # of this process, so its CPU is never a task's (children's CPU) and the program's own
        # ``os.wait()`` never meets it; only the shell's millisecond is this process's.
        shell = subprocess.Popen(
            [_SHELL, "-c", _DETACHED, *args, str(interval_s)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C at the terminal is the program's alone
        )
        return shell.wait(timeout=10) == 0
    except (OSError, subprocess.SubprocessError):
        return False


_SHELL = "/bin/sh"
#: ``sh -c`` runs this with the Python first (``$0``) and the watch's arguments after it.
_DETACHED = 'exec 0</dev/null 1>/dev/null 2>&1; "$0" -I -S "$@" &'


def main(argv: list[str]) -> None:
    pid, started, path, offset, interval_s = argv[1:6]
    watch(int(pid), started.encode(), path, int(offset), float(interval_s))


if __name__ == "__main__":
    main(sys.argv)
