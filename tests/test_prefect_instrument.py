"""Inside a ``@profiled`` Prefect flow the instrumentors are on: a task's transpile shows its stages."""

from __future__ import annotations

import os
import textwrap

import pytest
from conftest import run_cli
from llqm_prefect import profiled
from prefect import flow, task
from qiskit import QuantumCircuit, transpile
from qiskit_ibm_runtime.fake_provider import FakeManilaV2

import llqm_core as llqm
from llqm_core.runtime.instrumentation import instrumentors, uninstrument_all

pytestmark = pytest.mark.usefixtures("prefect_server")


@task
def compile_bell() -> int:
    circuit = QuantumCircuit(2)
    circuit.h(0)
    circuit.cx(0, 1)
    return transpile(circuit, FakeManilaV2(), optimization_level=1, seed_transpiler=1).size()


@profiled
@flow
def instrumented() -> int:
    return compile_bell()


@profiled(instrument=False)
@flow
def left_alone() -> int:
    return compile_bell()


def stages(store_path) -> dict[str, tuple[str | None, dict]]:
    store = llqm.ProfileStore(store_path, readonly=True)
    tasks = store.tasks(store.run().id)
    names = {t.id: t.stage for t in tasks}
    return {t.stage: (names.get(t.parent_id), t.metrics) for t in tasks}


def test_a_task_that_transpiles_shows_the_stages_under_it(store_path, monkeypatch):
    from llqm_qiskit.transpile import stage_profiler

    # A Bell pair's transpile is short, even when a busy machine stretches it past 50 ms: its
    # stages are seconds on the transpile task.
    monkeypatch.setattr(stage_profiler, "STAGE_TASKS_AFTER_S", 60.0)
    uninstrument_all()
    try:
        assert instrumented() > 0
        found = stages(store_path)
        parent, metrics = found["transpile"]
        assert parent == "compile_bell"
        assert metrics["transpile.stage.routing.time_s"] >= 0
        assert metrics["transpile.pass.BasisTranslator.calls"] >= 1
    finally:
        uninstrument_all()


def test_an_option_leaves_the_instrumentors_off(store_path):
    uninstrument_all()
    assert left_alone() > 0
    assert set(stages(store_path)) == {"compile_bell"}
    assert not instrumentors()["qiskit"].is_instrumented


def test_llqm_profile_of_a_plain_flow_records_its_task_runs(tmp_path):
    """A flow as Prefect's docs write it, no ``@profiled``: under ``llqm profile`` its task runs
    are tasks, with the Qiskit calls inside them beneath (they were missing: only the
    transpiles showed, and a slow task of the program's own code not at all)."""
    from prefect.settings import PREFECT_API_URL

    script = tmp_path / "ghz_flow.py"
    script.write_text(
        textwrap.dedent(
            """
            from prefect import flow, task
            from qiskit import QuantumCircuit, transpile
            from qiskit_ibm_runtime.fake_provider import FakeManilaV2


            @task
            def build(n: int) -> QuantumCircuit:
                circuit = QuantumCircuit(n)
                circuit.h(0)
                for i in range(n - 1):
                    circuit.cx(i, i + 1)
                return circuit


            @task
            def compile_for_manila(circuit: QuantumCircuit) -> int:
                return transpile(circuit, FakeManilaV2(), seed_transpiler=1).size()


            @flow
            def ghz_sizes(sizes: list[int]) -> list[int]:
                return compile_for_manila.map(build.map(sizes)).result()


            if __name__ == "__main__":
                print(ghz_sizes([2, 3]))
            """
        )
    )
    store = tmp_path / "s.sqlite"
    result = run_cli(
        "--store",
        str(store),
        "profile",
        str(script),
        env={"PREFECT_API_URL": str(PREFECT_API_URL.value())},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    found = llqm.ProfileStore(store, readonly=True)
    tasks = found.tasks(found.run().id)
    names = {t.id: t.name for t in tasks}
    assert sorted(t.name for t in tasks if t.name in ("build", "compile_for_manila")) == [
        "build",
        "build",
        "compile_for_manila",
        "compile_for_manila",
    ]
    assert sorted(names.get(t.parent_id) for t in tasks if t.stage == "transpile") == [
        "compile_for_manila",
        "compile_for_manila",
    ]


def test_llqm_profile_quiets_the_temporary_prefect_server_of_a_plain_flow(monkeypatch):
    """Under ``llqm profile`` a plain flow's temporary server (and its workers') runs without
    Prefect's analytics, whose heartbeat printed "database is locked" tracebacks, as a
    ``@profiled`` flow's does; a variable the user set wins, and a server of theirs is left be."""
    from llqm_prefect.plugin import PrefectWhenImported

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.delenv("PREFECT_SERVER_ANALYTICS_ENABLED", raising=False)
    watcher = PrefectWhenImported()
    watcher.instrument()
    watcher.uninstrument()
    assert os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    monkeypatch.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "true")
    watcher.instrument()
    watcher.uninstrument()
    assert os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] == "true"
