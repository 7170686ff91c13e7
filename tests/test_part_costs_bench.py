"""bench/part_costs.py runs as its docs give it: each part left out in turn, paired against LLQM
whole, and a part it does not know named in one sentence (the bench that decides what to cut
must not rot as the parts it replaces are renamed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "part_costs.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", LLQM_EXPORTERS="none")
    return subprocess.run(
        [sys.executable, str(BENCH), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_every_part_is_left_out_and_paired_against_llqm_whole():
    done = _run("--pairs", "2")
    assert done.returncode == 0, done.stderr
    lines = [line.strip() for line in done.stdout.splitlines()]
    for part in (
        "nothing left out",
        "store writes of tasks",
        "journaled task starts",
        "readings",
        "pool threads' charge",
        "ledger of lent threads",
        "outputs and producers",
        "execute call's description",
    ):
        assert any(line.startswith(part) and "us a circuit" in line for line in lines), part


@pytest.mark.slow
def test_an_unknown_part_is_named_with_the_parts_there_are():
    done = _run("--parts", "readings,the kitchen sink")
    assert done.returncode == 2
    assert "unknown part(s) ['the kitchen sink']" in done.stderr
    assert "store writes of tasks" in done.stderr and "Traceback" not in done.stderr
