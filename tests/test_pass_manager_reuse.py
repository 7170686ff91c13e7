"""One pass manager run per circuit (Qiskit's documented pattern): its stages are found once, and
found again when the pass manager changes, so every pass is still counted in its stage."""

from __future__ import annotations

import pytest
from qiskit import QuantumCircuit
from qiskit.transpiler import PassManager, generate_preset_pass_manager
from qiskit.transpiler.passes import CountOpsLongestPath, NumTensorFactors, RemoveBarriers
from qiskit_ibm_runtime.fake_provider import FakeManilaV2

import llqm_core
from llqm_core import ProfileStore
from llqm_core.runtime.instrumentation import instrument_all, uninstrument_all


@pytest.fixture
def walks(monkeypatch):
    """Each walk of a pass manager's stages, counted (the real walk runs); transpiles stay short
    tasks however busy the machine, so their passes are counted on the transpile task."""
    from llqm_qiskit.transpile import stage_markers, stage_profiler

    monkeypatch.setattr(stage_profiler, "STAGE_TASKS_AFTER_S", 60.0)

    counted: list[int] = []
    walk = stage_markers._walk

    def counting(outline):
        counted.append(len(outline))
        return walk(outline)

    monkeypatch.setattr(stage_markers, "_walk", counting)
    instrument_all()
    yield counted
    uninstrument_all()


def ghz(i: int) -> QuantumCircuit:
    circuit = QuantumCircuit(3)
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.cx(1, 2)
    circuit.rz(0.1 * i, 2)
    circuit.measure_all()
    return circuit


def transpile_tasks(store, run_id):
    return [t for t in ProfileStore(store, readonly=True).tasks(run_id) if t.stage == "transpile"]


def calls(task) -> dict[str, int]:
    return {k: v for k, v in task.metrics.items() if k.endswith(".calls")}


def test_a_pass_manager_run_for_each_circuit_is_walked_once(walks, tmp_path):
    """Reused, the pass manager's stages are found once, and every circuit's transpile counts
    the passes a pass manager of its own (walked for it) counts."""
    pass_manager = generate_preset_pass_manager(1, FakeManilaV2(), seed_transpiler=3)
    store = tmp_path / "s.sqlite"
    with llqm_core.run("reused", store=store) as run:
        for i in range(4):
            pass_manager.run(ghz(i))
        assert len(walks) == 1
        for i in range(4):
            generate_preset_pass_manager(1, FakeManilaV2(), seed_transpiler=3).run(ghz(i))
    assert len(walks) == 5
    tasks = transpile_tasks(store, run.id)
    reused, own = tasks[:4], tasks[4:]
    for task in reused:
        assert {f"transpile.stage.{s}.time_s" for s in pass_manager.stages} <= set(task.metrics)
        assert task.metrics["transpile.pass.BasisTranslator.calls"] >= 1
    assert [calls(t) for t in reused] == [calls(t) for t in own]
    assert [t.metrics["transpile.passes"] for t in reused] == [
        t.metrics["transpile.passes"] for t in own
    ]


def test_a_changed_pass_manager_is_walked_again_and_its_new_passes_counted(walks, tmp_path):
    pass_manager = generate_preset_pass_manager(1, FakeManilaV2(), seed_transpiler=3)
    store = tmp_path / "s.sqlite"
    with llqm_core.run("changed", store=store) as run:
        pass_manager.run(ghz(1))
        pass_manager.run(ghz(1))
        assert len(walks) == 1
        pass_manager.init.append(RemoveBarriers())  # a pass added to a stage's own pass manager
        pass_manager.run(ghz(1))
        assert len(walks) == 2
        pass_manager.post_optimization = PassManager(
            [CountOpsLongestPath(), NumTensorFactors()]
        )  # a stage's slot set
        pass_manager.run(ghz(1))
        pass_manager.run(ghz(1))
    assert len(walks) == 3
    before, _, added, slot, again = transpile_tasks(store, run.id)
    assert "transpile.pass.RemoveBarriers.calls" not in before.metrics
    assert added.metrics["transpile.pass.RemoveBarriers.calls"] == 1
    assert added.metrics["transpile.passes"] == before.metrics["transpile.passes"] + 1
    for task in (slot, again):
        assert task.metrics["transpile.pass.CountOpsLongestPath.calls"] == 1
        assert task.metrics["transpile.pass.NumTensorFactors.calls"] == 1
        # the slot replaced the preset's post_optimization passes (none at level 1): two more
        assert task.metrics["transpile.passes"] == added.metrics["transpile.passes"] + 2


def test_a_new_pass_manager_for_each_transpile_is_walked_each_time(walks, tmp_path):
    from qiskit import transpile

    with llqm_core.run("transpile", store=tmp_path / "s.sqlite"):
        for i in range(3):
            transpile(ghz(i), FakeManilaV2(), optimization_level=1, seed_transpiler=i)
    assert len(walks) == 3
