"""``llqm run`` on the ``prefect`` engine prints what LLQM means to print, on a user's plain shell."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT

PIPELINE = """
name = "ghz 2 on prefect"
[circuit]
kind = "ghz"
qubits = 2
[backend]
name = "aer"
[transpile]
optimization_level = 0
seed = 7
[execution]
shots = 200
seed = 1
[run]
engine = "prefect"
"""


@pytest.mark.slow  # Prefect's temporary server on a new database: 30-90 s on 2 cores
def test_a_prefect_engine_run_leaves_standard_error_clean(tmp_path):
    """No Prefect server tracebacks ("database is locked", the telemetry heartbeat) and no Prefect
    log lines: only LLQM's progress bar, even though the shell sets no Prefect variable."""
    pipeline = tmp_path / "prefect.toml"
    pipeline.write_text(PIPELINE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")  # a first use: a new server database
    done = subprocess.run(  # not conftest's run_cli: it passes the tests' Prefect settings on
        [sys.executable, "-m", "llqm_core.cli", "--store", str(tmp_path / "s.sqlite")]
        + ["run", str(pipeline)],
        capture_output=True,
        text=True,
        timeout=400,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "Fidelity" in done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert all("ghz 2 on prefect" in line for line in lines), done.stderr  # the progress bar
