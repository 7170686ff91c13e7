"""The profiler never changes the program it profiles: programs written as Mitiq's, Qiskit's and
Prefect's documentation writes them, each run as ``python program.py`` and as
``llqm profile program.py``, must print the same, exit the same, and write nothing more on
standard error than LLQM's report; the profile must hold the tasks their calls make.

Each program says in its docstring what it expects:
``llqm-expect: STAGE ...`` (stages the profile must hold), ``llqm-args: ...`` (its arguments),
``llqm-slow`` (left to ``-m slow``), ``llqm-stderr: varies`` (its own standard error differs
from run to run, as Prefect's logs do: only LLQM's part of it is checked).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from llqm_core import ProfileStore
from llqm_core.analysis.report import build_report

PROGRAMS = Path(__file__).resolve().parent / "programs"


@dataclass
class Program:
    path: Path
    expect: list[str]
    args: list[str]
    slow: bool
    stderr_varies: bool

    @classmethod
    def read(cls, path: Path) -> Program:
        text = path.read_text()

        def field(name: str) -> list[str] | None:
            found = re.search(rf"^{name}:(.*)$", text, re.MULTILINE)
            return found.group(1).split() if found else None

        return cls(
            path,
            field("llqm-expect") or [],
            field("llqm-args") or [],
            re.search(r"^llqm-slow$", text, re.MULTILINE) is not None,
            (field("llqm-stderr") or []) == ["varies"],
        )


def programs() -> list:
    found = [Program.read(p) for p in sorted(PROGRAMS.glob("*.py"))]
    return [
        pytest.param(p, id=p.path.stem, marks=[pytest.mark.slow] if p.slow else []) for p in found
    ]


def llqm_command() -> list[str]:
    """``llqm`` as a user runs it: the installed command, else the module."""
    found = shutil.which("llqm") or str(Path(sys.executable).with_name("llqm"))
    return [found] if Path(found).exists() else [sys.executable, "-m", "llqm_core.cli"]


@dataclass
class Ran:
    status: int
    out: str
    err: str


def run(command: list[str], cwd: Path) -> Ran:
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")  # a busy machine
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    return Ran(done.returncode, done.stdout, done.stderr)


def bare_and_profiled(program: Program, store: Path) -> tuple[Ran, Ran]:
    name = program.path.name
    bare = run([sys.executable, name, *program.args], program.path.parent)
    profiled = run(
        [*llqm_command(), "profile", "--store", str(store), name, *program.args],
        program.path.parent,
    )
    return bare, profiled


def llqm_part(program: Program, bare: Ran, profiled: Ran) -> str:
    """What LLQM added to the program's standard error: its report, from its first line on."""
    start = profiled.err.find(f"profile {program.path.name}  run ")
    assert start >= 0, f"no LLQM report on standard error:\n{profiled.err[-3000:]}"
    if not program.stderr_varies:
        assert profiled.err[:start] == bare.err, "the program's own standard error changed"
    return profiled.err[start:]


@pytest.mark.parametrize("program", programs())
def test_a_documented_program_runs_as_it_does_bare(program: Program, tmp_path: Path) -> None:
    store = tmp_path / "profile.sqlite"
    bare, profiled = bare_and_profiled(program, store)
    assert profiled.out == bare.out, f"standard output changed; stderr:\n{profiled.err[-3000:]}"
    assert profiled.status == bare.status
    added = llqm_part(program, bare, profiled)
    assert "Traceback" not in added and "llqm: warning" not in added
    if program.expect:
        report = build_report(ProfileStore(store, readonly=True))
        stages = {t["stage"] for t in report["tasks"]}
        missing = [s for s in program.expect if s not in stages]
        assert not missing, f"the profile lacks {missing}; it holds {sorted(stages)}"
