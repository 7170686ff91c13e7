"""Inside a ``@profiled`` Prefect flow the instrumentors are on: a task's transpile shows its stages."""

from __future__ import annotations

import pytest
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
