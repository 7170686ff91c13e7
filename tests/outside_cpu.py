"""A process's CPU read from outside it, as a user's ``top`` would (tests and bench/ share it):
a second interpreter polls ``/proc/PID/stat`` while the process runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_POLL = """
import os, sys, time
pid, out = int(sys.argv[1]), open(sys.argv[2], "w")
tick = os.sysconf("SC_CLK_TCK")
while True:
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        break
    out.write(f"{time.time_ns()} {(int(fields[11]) + int(fields[12])) / tick}\\n")
    out.flush()
    time.sleep(0.02)
"""


def run_watched(
    command: list[str], readings: Path, timeout: float = 600, **popen: object
) -> tuple[subprocess.CompletedProcess, list[tuple[int, float]]]:
    """Run ``command`` while an outside poller reads its CPU every 20 ms; the finished process
    and its readings (Unix nanoseconds, CPU seconds so far)."""
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
    )  # type: ignore[call-overload]
    poller = subprocess.Popen([sys.executable, "-c", _POLL, str(process.pid), str(readings)])
    out, err = process.communicate(timeout=timeout)
    poller.wait(timeout=30)
    found = [
        (int(when), float(cpu))
        for when, cpu in (line.split() for line in readings.read_text().splitlines())
    ]
    return subprocess.CompletedProcess(command, process.returncode, out, err), found


def cpu_between(readings: list[tuple[int, float]], start_ns: int, end_ns: int) -> float:
    """The process's CPU seconds between two moments (the reading just before each: the figure
    moves in clock ticks of 10 ms and is not flattered)."""

    def at(moment: int) -> float:
        before = [cpu for when, cpu in readings if when <= moment]
        return before[-1] if before else readings[0][1]

    return at(end_ns) - at(start_ns)
