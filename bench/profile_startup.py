"""What ``llqm profile`` costs a program that does not use Mitiq: the whole command, imports
included, against the bare script.

    python bench/profile_startup.py [--pairs 3] [--script examples/programs/hundred_circuits.py]

``python SCRIPT`` and ``llqm profile --store TMP SCRIPT`` run as fresh processes, in turns whose
order alternates (most of the difference is imports, which only a fresh interpreter pays). It
prints each pair's wall seconds, the median ratio, and the Mitiq and Cirq modules that one more
profiled run imported (``-X importtime``): none, since the Mitiq instrumentor waits for the
program to import Mitiq (issue 21 item 4). The load average is printed: on a shared VM judge
the wall figures by it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "LLQM_EXPORTERS": os.environ.get("LLQM_EXPORTERS", "none")}


def seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=ENV, cwd=ROOT)
    return time.perf_counter() - started


def imported(command: list[str], prefixes: tuple[str, ...]) -> list[str]:
    """The modules whose top-level name is one of ``prefixes`` that ``command`` imported."""
    done = subprocess.run(
        [command[0], "-X", "importtime", *command[1:]],
        check=True,
        capture_output=True,
        text=True,
        env=ENV,
        cwd=ROOT,
    )
    names = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()]
    return [n for n in names if n.split(".")[0] in prefixes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--script", default="examples/programs/hundred_circuits.py")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as folder:
        store = str(Path(folder) / "s.sqlite")
        bare = [sys.executable, args.script]
        profiled = [sys.executable, "-m", "llqm_core.cli", "profile", "--store", store, args.script]
        ratios = []
        for index in range(args.pairs):
            if index % 2:
                b, a = seconds(profiled), seconds(bare)
            else:
                a, b = seconds(bare), seconds(profiled)
            ratios.append(b / a)
            print(f"pair {index + 1}: bare {a:.2f} s, llqm profile {b:.2f} s: {b / a:.2f}x")
        print(f"median ratio llqm profile / bare: {statistics.median(ratios):.2f}x")
        found = imported(profiled, ("mitiq", "cirq"))
        print(f"Mitiq and Cirq modules imported by llqm profile: {len(found)}")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
