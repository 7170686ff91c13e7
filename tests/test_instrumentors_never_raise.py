"""An instrumentor never raises into the program it watches: with every way LLQM records what a
call did (its metrics, descriptions, outputs) made to fail, a program under ``llqm profile``
prints what it prints alone and exits as it does alone; the failures are told on the tasks."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_profile_command import plain

from llqm_core import ProfileStore
from llqm_core.analysis.report import build_report
from llqm_core.cli import main
from llqm_core.runtime.active_run import ActiveRun
from llqm_core.runtime.tasks import TaskHandle

PROGRAMS = Path(__file__).resolve().parent / "conformance" / "programs"


def injected(*args: object, **kwargs: object) -> None:
    raise RuntimeError("injected into LLQM's record path")


@pytest.fixture
def failing_records(monkeypatch):
    """Every describe/record path of every instrumentor fails."""
    for name in ("annotate", "annotate_numbers", "describe", "record_output"):
        monkeypatch.setattr(TaskHandle, name, injected)
    monkeypatch.setattr(ActiveRun, "note_output", injected)


@pytest.mark.parametrize(
    "program",
    [
        pytest.param("mitiq_zne_observable.py", id="mitiq-zne"),
        pytest.param("mitiq_pec_observable_strict.py", id="mitiq-pec", marks=pytest.mark.slow),
        pytest.param("mitiq_rem_and_combined.py", id="mitiq-rem", marks=pytest.mark.slow),
        pytest.param("qiskit_sampler_registers.py", id="qiskit-sampler"),
        pytest.param("qiskit_pass_manager_binding.py", id="qiskit-transpile-run"),
        pytest.param("prefect_flow_features.py", id="prefect", marks=pytest.mark.slow),
    ],
)
def test_a_failing_record_path_leaves_the_program_as_it_is(
    program, tmp_path, capsys, failing_records
):
    script = PROGRAMS / program
    expected = plain(script)  # no run is current: nothing is recorded, nothing fails
    capsys.readouterr()
    status = main(["profile", "--store", str(tmp_path / "p.sqlite"), str(script)])
    out = capsys.readouterr().out
    assert status == 0 and out == expected
    report = build_report(ProfileStore(tmp_path / "p.sqlite", readonly=True))
    assert report["tasks"], "the calls are still tasks"
    told = [w for t in report["tasks"] for w in t["metrics"].get("pipeline.warnings", [])]
    assert any("injected into LLQM's record path" in w for w in told)
