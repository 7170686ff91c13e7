"""The Qiskit plugin describes circuits and results, and snapshots a fake Heron r2's calibration."""

from __future__ import annotations

import pytest
from llqm_qiskit import circuit_metrics, circuits, hardware_snapshot
from qiskit import QuantumCircuit

import llqm_core as llqm


def ghz(n: int) -> QuantumCircuit:
    return circuits.ghz(n)


def test_circuit_metrics_count_qubits_gates_and_two_qubit_gates():
    metrics = circuit_metrics(ghz(5))
    assert metrics["circuit.qubits"] == 5
    assert metrics["circuit.two_qubit_gates"] == 4
    assert metrics["circuit.ops.cx"] == 4 and metrics["circuit.ops.h"] == 1
    assert metrics["circuit.measurements"] == 5
    assert metrics["circuit.depth"] == ghz(5).depth()


def test_a_task_returning_a_circuit_records_its_metrics_through_the_hook(store_path, fresh_plugins):
    @llqm.task(stage="generate")
    def make() -> QuantumCircuit:
        return ghz(4)

    with llqm.run("qiskit metrics") as run:
        make()
    task = llqm.ProfileStore(store_path).tasks(run.id)[0]
    assert task.metrics["circuit.qubits"] == 4 and task.metrics["circuit.two_qubit_gates"] == 3


def test_snapshot_of_fake_fez_has_its_156_qubits_and_couplers(fez):
    snapshot = hardware_snapshot(fez)
    assert snapshot.backend == "fake_fez" and snapshot.num_qubits == 156
    assert len(snapshot.qubits) == 156
    assert all(c.t1_s and c.t2_s and c.readout_error is not None for c in snapshot.qubits.values())
    cz = [g for g in snapshot.gates if g.gate == "cz"]
    assert len(cz) == 352
    assert any(g.error == 1.0 for g in cz)  # the broken couplers a hardware-aware layout must avoid
    assert snapshot.fingerprint == hardware_snapshot(fez).fingerprint


def test_ghz_builder_and_its_success_fraction():
    from llqm_qiskit.circuits import ghz_success

    assert ghz(3).count_ops()["cx"] == 2 and ghz(3).num_clbits == 3
    assert circuits.ghz(3, measure=False).num_clbits == 0
    assert ghz_success({"000": 45, "111": 45, "010": 10}) == 0.9
    with pytest.raises(ValueError, match="at least 2 qubits"):
        circuits.ghz(1)


def test_transpile_is_profiled_stage_by_stage_with_pass_times(store_path, fez):
    from llqm_qiskit import profiled_transpile

    with llqm.run("transpile stages") as run:
        compiled = profiled_transpile(
            ghz(12), fez, optimization_level=1, seed_transpiler=5, stage_tasks=True
        )
    assert compiled.num_qubits == 156 and set(compiled.count_ops()) <= {
        "cz",
        "rz",
        "sx",
        "x",
        "measure",
        "barrier",
    }
    tasks = llqm.ProfileStore(store_path).tasks(run.id)
    parent = tasks[0]
    assert parent.stage == "transpile" and parent.metrics["transpile.optimization_level"] == 1
    stages = [t for t in tasks[1:]]
    assert [t.stage for t in stages] == [
        f"transpile.{s}"
        for s in ("init", "layout", "routing", "translation", "optimization", "scheduling")
    ]
    assert all(t.parent_id == parent.id for t in stages)
    assert sum(t.profile.wall_s for t in stages) <= parent.profile.wall_s
    layout = next(t for t in stages if t.stage == "transpile.layout")
    assert layout.metrics["circuit.qubits"] == 156  # after layout the circuit spans the device
    translation = next(t for t in stages if t.stage == "transpile.translation")
    assert translation.metrics["transpile.pass.BasisTranslator.calls"] == 1
    assert translation.metrics["transpile.pass.BasisTranslator.time_s"] > 0
    assert stages[-1].metrics["circuit.two_qubit_gates"] == compiled.count_ops().get("cz", 0)


def test_a_short_transpile_keeps_its_stages_as_seconds_on_the_transpile_task(store_path, fez):
    """Six stage tasks would cost a tenth of a small circuit's transpile: its stages are timed."""
    from llqm_qiskit import profiled_transpile

    with llqm.run("short transpile") as run:
        profiled_transpile(ghz(5), fez, optimization_level=1, seed_transpiler=1)
    (parent,) = llqm.ProfileStore(store_path).tasks(run.id)
    stages = ("init", "layout", "routing", "translation", "optimization", "scheduling")
    seconds = [parent.metrics[f"transpile.stage.{s}.time_s"] for s in stages]
    assert all(s >= 0 for s in seconds) and 0 < sum(seconds) <= parent.profile.wall_s
    # its calls in translation and in the optimization loop, added up
    assert parent.metrics["transpile.pass.BasisTranslator.calls"] >= 1
    assert 0 < parent.metrics["transpile.pass.BasisTranslator.time_s"] < sum(seconds)
    assert parent.metrics["transpile.passes"] >= len(stages)


def test_a_transpile_that_turns_out_long_records_the_stages_it_timed_as_tasks(
    store_path, fez, monkeypatch
):
    """A stage is a task once the circuit is large: the stages timed before it become tasks too."""
    from llqm_qiskit import profiled_transpile
    from llqm_qiskit.transpile import stage_profiler

    # ghz(12) has 25 operations; translation into cz, rz and sx makes it larger than 40
    monkeypatch.setattr(stage_profiler, "STAGE_TASKS_MIN_OPS", 40)
    with llqm.run("growing transpile") as run:
        profiled_transpile(ghz(12), fez, optimization_level=1, seed_transpiler=5)
    parent, *stages = llqm.ProfileStore(store_path).tasks(run.id)
    assert [t.stage for t in stages] == [
        f"transpile.{s}"
        for s in ("init", "layout", "routing", "translation", "optimization", "scheduling")
    ]
    assert all(t.parent_id == parent.id for t in stages)
    assert all(a.end_ns <= b.start_ns for a, b in zip(stages, stages[1:]))
    translation = stages[3]
    assert translation.profile.samples == 0  # timed by the clock, not measured live
    assert translation.metrics["transpile.pass.BasisTranslator.calls"] == 1
    assert stages[4].profile.samples >= 1 and "circuit.size" in stages[4].metrics
    assert "transpile.stage.init.time_s" not in parent.metrics


def test_transpiling_again_runs_the_same_passes_and_leaves_the_pass_manager_as_it_was(
    store_path, fez, monkeypatch
):
    """The stage markers go into a copy: Qiskit's ``+`` once grew the user's pass manager (and a
    shared marker) by the passes of every transpile."""
    from llqm_qiskit import profiled_transpile
    from llqm_qiskit.transpile import stage_profiler
    from qiskit.transpiler.preset_passmanagers import generate_preset_pass_manager

    # passes counted on the transpile task, however long a busy machine makes it run
    monkeypatch.setattr(stage_profiler, "STAGE_TASKS_AFTER_S", 60.0)
    pass_manager = generate_preset_pass_manager(1, fez, seed_transpiler=1)
    sizes = {s: len(getattr(pass_manager, s) or ()) for s in pass_manager.expanded_stages}
    with llqm.run("again") as run:
        for _ in range(3):
            profiled_transpile(ghz(4), pass_manager=pass_manager)
    tasks = llqm.ProfileStore(store_path).tasks(run.id)
    passes = [t.metrics["transpile.passes"] for t in tasks if t.stage == "transpile"]
    assert len(passes) == 3 and len(set(passes)) == 1
    assert sizes == {s: len(getattr(pass_manager, s) or ()) for s in pass_manager.expanded_stages}


def test_transpile_refuses_bad_options_in_one_sentence(fez):
    from llqm_qiskit import profiled_transpile

    with pytest.raises(
        ValueError, match="optimization_level 4 is not allowed; use one of 0, 1, 2, 3."
    ):
        profiled_transpile(ghz(3), fez, optimization_level=4)
    with pytest.raises(ValueError, match="has 200 qubits, more than the 156 of backend 'fake_fez'"):
        profiled_transpile(QuantumCircuit(200, name="wide"), fez)


def test_fake_fez_faulty_couplers_are_found_from_its_calibration(fez):
    from llqm_core.model import hardware

    couplers = hardware.faulty_couplers(hardware_snapshot(fez))
    assert {(27, 28), (31, 32), (32, 33), (68, 69), (80, 81), (106, 107), (139, 155)} <= set(
        couplers
    )


def test_every_pass_records_its_time_and_the_circuit_it_left(store_path, fez):
    from llqm_qiskit import profiled_transpile

    with llqm.run("per pass") as run:
        profiled_transpile(
            ghz(5), fez, optimization_level=1, seed_transpiler=1, depths=True, stage_tasks=True
        )
    stages = {t.stage: t for t in llqm.ProfileStore(store_path).tasks(run.id)}
    translation = stages["transpile.translation"].metrics
    assert translation["transpile.pass.BasisTranslator.calls"] == 1
    assert translation["transpile.pass.BasisTranslator.time_s"] > 0
    assert (
        translation["transpile.pass.BasisTranslator.size_after"] > ghz(5).size()
    )  # cx became cz and single-qubit gates
    assert translation["transpile.pass.BasisTranslator.depth_after"] >= 5
    assert translation["circuit.depth"] == translation["transpile.pass.BasisTranslator.depth_after"]


@pytest.mark.parametrize("level", [0, 1])
def test_depth_is_what_qiskit_measured_unless_depths_are_asked_for(store_path, fez, level):
    """No DAG walk by default: the depth is Qiskit's own (levels 1-3 measure it while optimizing)."""
    from llqm_qiskit import profiled_transpile
    from qiskit.converters import circuit_to_dag

    for depths in (False, True):
        with llqm.run("depths") as run:
            compiled = profiled_transpile(
                circuits.mirror(6, 3, seed=2),
                fez,
                optimization_level=level,
                seed_transpiler=1,
                depths=depths,
                stage_tasks=True,
            )
        tasks = llqm.ProfileStore(store_path).tasks(run.id)
        parent, stages = tasks[0], {t.stage: t.metrics for t in tasks[1:]}
        expected = circuit_metrics(compiled)
        for key in ("circuit.size", "circuit.two_qubit_gates", "circuit.measurements"):
            assert parent.metrics[key] == expected[key], key
        assert parent.metrics["circuit.ops.cz"] == expected["circuit.ops.cz"]
        assert not depths or all("circuit.depth" in m for m in stages.values())
        assert not depths or "transpile.pass.BasisTranslator.depth_after" in str(stages)
        if depths or level > 0:
            # Qiskit's DAG depth, which counts barriers (QuantumCircuit.depth leaves them out)
            assert parent.metrics["circuit.depth"] == circuit_to_dag(compiled).depth()
        else:
            assert "circuit.depth" not in parent.metrics
            assert "depth_after" not in str(stages)


def test_the_marked_pass_manager_runs_every_pass_of_the_users_with_a_marker_per_stage(fez):
    """The stage profiler sets Qiskit's private ``PassManager._tasks``: Qiskit's public flow
    controller must then run the user's passes, in order, each stage behind its marker."""
    from llqm_qiskit.transpile import stage_markers
    from qiskit.transpiler.preset_passmanagers import generate_preset_pass_manager

    staged = generate_preset_pass_manager(optimization_level=1, backend=fez, seed_transpiler=5)
    marked = stage_markers.with_markers(staged)
    ran = list(marked.to_flow_controller().tasks)
    markers = [t.stage for t in ran if isinstance(t, stage_markers.StageMarker)]
    assert markers == [*staged.stages, None]
    users = [t for t in ran if not isinstance(t, stage_markers.StageMarker)]
    assert users == list(staged.to_flow_controller().tasks)


def test_a_qiskit_without_pass_manager_tasks_is_refused_in_one_clear_error(fez, monkeypatch):
    """Should Qiskit drop ``_tasks``, the profiler says so instead of transpiling nothing."""
    from llqm_qiskit.transpile import stage_markers
    from qiskit.transpiler.preset_passmanagers import generate_preset_pass_manager

    class Renamed(stage_markers.PassManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            del self._tasks

    monkeypatch.setattr(stage_markers, "PassManager", Renamed)
    staged = generate_preset_pass_manager(optimization_level=0, backend=fez)
    with pytest.raises(RuntimeError, match=r"needs PassManager\._tasks"):
        stage_markers.with_markers(staged)


def test_a_dags_metrics_are_the_circuits_with_gates_qiskit_does_not_name():
    """``dag_metrics`` (a transpile's output, described from its DAG) counts two-qubit gates by
    each operation's width: Qiskit's standard gates from a table made once, any other gate from
    the DAG, and a barrier never; the figures match ``circuit_metrics`` of the same circuit."""
    from llqm_qiskit.metrics import dag_metrics
    from qiskit.circuit import Gate
    from qiskit.converters import circuit_to_dag

    circuit = QuantumCircuit(4, 2)
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.append(Gate("mix", 2, []), [1, 2])
    circuit.append(Gate("mix3", 3, []), [0, 1, 3])
    circuit.append(Gate("spin", 1, []), [3])
    circuit.barrier()
    circuit.measure([0, 1], [0, 1])
    widths: dict[str, int] = {}
    found = dag_metrics(circuit_to_dag(circuit), widths, None)
    expected = circuit_metrics(circuit, depth=False)
    assert found == expected
    assert found["circuit.two_qubit_gates"] == 3 and widths == {"mix": 2, "mix3": 3, "spin": 1}
