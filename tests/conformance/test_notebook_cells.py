"""The conformance programs in a ``%%llqm`` notebook cell: the cell prints what the program
prints run bare, before the run's own display, and the run holds the tasks the program's calls
make (tests/test_notebook.py shows the magic itself)."""

from __future__ import annotations

import contextlib
import io
import sys
import warnings
from pathlib import Path

import pytest
from test_programs import PROGRAMS, Program, run

from llqm_core import ProfileStore, RunStatus

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from test_notebook import loaded_shell  # noqa: E402


@pytest.mark.parametrize(
    "name",
    [
        "mitiq_zne_observable.py",
        "qiskit_sampler_registers.py",
        pytest.param("mitiq_pec_observable_strict.py", marks=pytest.mark.slow),
    ],
)
def test_a_program_in_a_cell_prints_what_it_prints_bare(name, tmp_path):
    program = Program.read(PROGRAMS / name)
    bare = run([sys.executable, name], PROGRAMS)
    shell = loaded_shell()
    out = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(out):
        shell.run_cell_magic(
            "llqm", f"--store {tmp_path / 'cell.sqlite'}", program.path.read_text()
        )
    assert out.getvalue().startswith(bare.out)
    assert out.getvalue()[len(bare.out) :].startswith("<llqm_core.runtime.active_run.ActiveRun")
    store = ProfileStore(tmp_path / "cell.sqlite", readonly=True)
    cell_run = store.run()
    assert cell_run.status is RunStatus.COMPLETED
    stages = {t.stage for t in store.tasks(cell_run.id)}
    assert set(program.expect) <= stages
