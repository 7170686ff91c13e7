"""A short transpile's passes are kept as raw facts on its task and counted into its metrics off
the calling thread (``llqm_core.model.counted_steps``): what is stored, recovered after a kill
and put on spans is what counting them at once gave."""

from __future__ import annotations

import json
import os
import sqlite3
import textwrap

import pytest
from conftest import run_python
from qiskit import QuantumCircuit
from qiskit.transpiler import generate_preset_pass_manager
from qiskit_ibm_runtime.fake_provider import FakeFez, FakeManilaV2

import llqm_core
from llqm_core import ProfileStore
from llqm_core.model.counted_steps import STEPS, counted
from llqm_core.runtime.instrumentation import instrument_all, uninstrument_all

#: Past this a transpile's stages become tasks of their own: these transpiles stay short
#: however long a busy machine makes them (0.05 s in ``stage_profiler``).
SHORT_HOWEVER_SLOW = (
    "import llqm_qiskit.transpile.stage_profiler as p; p.STAGE_TASKS_AFTER_S = 3600.0"
)


@pytest.fixture(autouse=True)
def short_however_slow(monkeypatch):
    from llqm_qiskit.transpile import stage_profiler

    monkeypatch.setattr(stage_profiler, "STAGE_TASKS_AFTER_S", 3600.0)


@pytest.fixture
def instrumented():
    instrument_all()
    yield
    uninstrument_all()


def circuit(qubits: int) -> QuantumCircuit:
    made = QuantumCircuit(qubits)
    made.h(0)
    for q in range(1, qubits):
        made.cx(q - 1, q)
    made.rz(0.3, qubits - 1)
    made.measure_all()
    return made


@pytest.mark.parametrize("backend, level", [(FakeManilaV2, 1), (FakeFez, 2), (FakeFez, 3)])
def test_passes_counted_later_are_what_counting_them_at_once_gave(backend, level):
    """The old path (each pass counted into its stage as the run ends) and the deferred one, on
    the same passes of a real transpile: the same metrics, in the same order."""
    from llqm_qiskit.transpile.stage_profiler import StageProfiler, pass_metrics

    pass_manager = generate_preset_pass_manager(level, backend(), seed_transpiler=7)
    with llqm_core.run("facts") as run:
        handle = llqm_core.plugin.start_task("transpile", run=run)
        deferred = StageProfiler(handle, depths=False)
        assert deferred.follow(pass_manager)
        pass_manager.run(circuit(4), callback=deferred.on_followed_pass)
        ran = list(deferred.ran)
        deferred.finish_followed()
        (facts,) = handle.record.metrics[STEPS]
        at_once = StageProfiler(handle, depths=False)
        at_once.follow(pass_manager)
        at_once.began, at_once.ran, at_once.property_set = (
            deferred.began,
            ran,
            deferred.property_set,
        )
        at_once._count_followed(one_count=True)
        passes = at_once.passes
        at_once._end_timed(facts[4])  # the clock the deferred run's last stage ended at
        at_once._in_stage_order()
        expected = pass_metrics(passes)
        for stage in at_once.timed:
            expected[f"transpile.stage.{stage.name}.time_s"] = stage.wall
        assert deferred.final_dag is not None and deferred.depth == at_once.depth
        llqm_core.plugin.finish_task(handle)
    got = counted(handle.record.metrics)
    assert list(got.items()) == list(expected.items())
    assert [k for k in got if k.startswith("transpile.stage.")] == [
        f"transpile.stage.{s}.time_s" for s in pass_manager.stages
    ]


def test_a_short_transpile_is_stored_with_its_passes_counted(instrumented, tmp_path):
    """Two circuits in one ``transpile`` call: their passes add up on the one task, which is
    stored with the counts and never with the raw facts."""
    import qiskit

    with llqm_core.run("stored", store=tmp_path / "s.sqlite") as run:
        qiskit.transpile([circuit(3), circuit(5)], FakeManilaV2(), seed_transpiler=2)
        one = qiskit.transpile(circuit(3), FakeManilaV2(), seed_transpiler=2)
    assert one.count_ops()
    first, second = ProfileStore(tmp_path / "s.sqlite", readonly=True).tasks(run.id)
    assert STEPS not in first.metrics and STEPS not in second.metrics
    assert first.metrics["transpile.passes"] == 2 * second.metrics["transpile.passes"] > 0
    calls = {k: v for k, v in second.metrics.items() if k.endswith(".calls")}
    assert {k: first.metrics[k] for k in calls} == {k: 2 * v for k, v in calls.items()}
    assert second.metrics["circuit.size"] == one.size()


def test_a_transpile_whose_frame_is_json_is_stored_with_its_passes_counted(instrumented, tmp_path):
    """A metric of a subclass of a built-in type (here a ``str`` subclass) makes the task's
    journal frame JSON, whose runs of passes read back as lists: they are counted all the same,
    into the metrics a marshal frame gives."""
    import qiskit

    class Label(str):
        pass

    with llqm_core.run("json frame", store=tmp_path / "s.sqlite") as run:
        for label in ("plain", Label("subclass")):
            with llqm_core.task("transpile", stage="transpile") as task:
                task.annotate(note=label)
                qiskit.transpile(circuit(3), FakeManilaV2(), seed_transpiler=2)
    plain, subclass = ProfileStore(tmp_path / "s.sqlite", readonly=True).tasks(run.id)
    assert subclass.metrics["note"] == "subclass" and STEPS not in subclass.metrics
    assert subclass.metrics["transpile.passes"] == plain.metrics["transpile.passes"] > 0
    assert {k for k in subclass.metrics if k.startswith("transpile.pass.")} == {
        k for k in plain.metrics if k.startswith("transpile.pass.")
    }


def test_a_transpile_killed_before_its_commit_is_recovered_with_its_passes_counted(tmp_path):
    """The journal keeps the raw facts; a reader and the next writer count them alike."""
    store = str(tmp_path / "s.sqlite")
    code = textwrap.dedent(
        f"""
        import os, signal
        import llqm_core
        {SHORT_HOWEVER_SLOW}
        from llqm_core.runtime.instrumentation import instrument_all
        instrument_all()
        from qiskit import QuantumCircuit
        from qiskit.transpiler import generate_preset_pass_manager
        from qiskit_ibm_runtime.fake_provider import FakeManilaV2
        pm = generate_preset_pass_manager(1, FakeManilaV2(), seed_transpiler=1)
        bell = QuantumCircuit(2)
        bell.h(0)
        bell.cx(0, 1)
        with llqm_core.run("doomed", store={store!r}):
            pm.run(bell)
            pm.run(bell)
            os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    assert run_python(code).returncode == -9
    reader = ProfileStore(store, readonly=True)
    read = reader.tasks(reader.run().id)
    assert [t.stage for t in read] == ["transpile", "transpile"]
    for task in read:
        assert STEPS not in task.metrics and task.metrics["transpile.passes"] > 0
        assert task.metrics["transpile.pass.BasisTranslator.calls"] >= 1
    ProfileStore(store)  # the next writer commits the dead process's journal
    rows = sqlite3.connect(store).execute("SELECT metrics FROM tasks ORDER BY start_ns").fetchall()
    assert [json.loads(m) for (m,) in rows] == [t.metrics for t in read]
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".journal")]
