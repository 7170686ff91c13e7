"""Instrumentors: OpenTelemetry's contract (symmetric, idempotent, versions checked, no behaviour change)."""

from __future__ import annotations

import json
import textwrap
import time
import types

import pytest
import qiskit
from conftest import run_python
from qiskit import QuantumCircuit, transpile
from qiskit.circuit.library import CXGate
from qiskit.providers.basic_provider import BasicSimulator
from qiskit.transpiler import PassManager, generate_preset_pass_manager
from qiskit.transpiler.exceptions import TranspilerError
from qiskit.transpiler.passes import InverseCancellation
from qiskit_ibm_runtime.fake_provider import FakeManilaV2

import llqm_core
import llqm_core.plugin
from llqm_core import ProfileStore
from llqm_core.plugin import hookimpl
from llqm_core.runtime.instrumentation import (
    Instrumentor,
    instrument_all,
    instrumentors,
    uninstrument_all,
)

_MISSING = object()


def bell() -> QuantumCircuit:
    circuit = QuantumCircuit(2)
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.measure_all()
    return circuit


def held(owner, attribute):
    """The attribute as its owner holds it (a class's own dict entry, or a module's attribute)."""
    return (
        vars(owner).get(attribute, _MISSING)
        if isinstance(owner, type)
        else getattr(owner, attribute)
    )


def plain_and_profiled(work, store):
    """``work()`` with the instrumentors off, then on inside a run: both results and the run's tasks."""
    uninstrument_all()
    plain = work()
    instrument_all()
    with llqm_core.run("both ways", store=store) as run:
        profiled = work()
    return plain, profiled, ProfileStore(store, readonly=True).tasks(run.id)


@pytest.fixture
def instrumented():
    """Every installed instrumentor on for the test, off afterwards."""
    instrument_all()
    yield instrumentors()
    uninstrument_all()


def test_uninstrument_restores_every_patched_attribute_and_both_are_idempotent(tmp_path):
    import mitiq.zne  # imported before instrument(): patched at once

    found = instrumentors()
    assert {"qiskit", "mitiq"} <= set(found)
    with llqm_core.run("contract", store=tmp_path / "s.sqlite"):
        instrument_all()
        instrument_all()  # a second switch-on changes nothing
        patches = [p for i in found.values() for p in i._patches]
        BasicSimulator().run(transpile(bell(), BasicSimulator()), shots=10).result()
        patches = [p for i in found.values() for p in i._patches]  # with the job class's result
    assert len({(id(o), a) for o, a, _ in patches}) == len(patches)
    assert any(a == "result" for _, a, _ in patches)
    assert any(o is mitiq.zne and a == "execute_with_zne" for o, a, _ in patches)
    replaced = [(owner, attribute, held(owner, attribute)) for owner, attribute, _ in patches]
    uninstrument_all()
    uninstrument_all()
    for (owner, attribute, original), (_, _, wrapper) in zip(patches, replaced):
        assert held(owner, attribute) is original, f"{owner}.{attribute} not restored"
        assert wrapper is not original
    assert not any(i.is_instrumented for i in found.values())


def test_calls_outside_a_run_are_left_alone(instrumented, store_path):
    compiled = transpile(bell(), FakeManilaV2(), optimization_level=1, seed_transpiler=3)
    assert compiled.num_nonlocal_gates() == 1
    assert not store_path.exists()  # no implicit run was opened


def test_same_results_return_types_property_set_and_callbacks(instrumented, tmp_path):
    backend = FakeManilaV2()

    def compile_all(pm):
        passes = []
        single = pm.run(
            bell(), callback=lambda **kw: passes.append((kw["pass_"].name(), kw["count"]))
        )
        listed = pm.run([bell()])
        return single, listed, dict(pm.property_set), passes

    plain = compile_all(generate_preset_pass_manager(1, backend, seed_transpiler=5))
    with llqm_core.run("same", store=tmp_path / "s.sqlite") as run:
        profiled = compile_all(generate_preset_pass_manager(1, backend, seed_transpiler=5))
    assert profiled[0] == plain[0] and isinstance(profiled[0], QuantumCircuit)
    assert isinstance(profiled[1], list) and profiled[1] == plain[1]
    assert profiled[2].keys() == plain[2].keys() and profiled[2]["layout"] == plain[2]["layout"]
    assert profiled[3] == plain[3]  # the user's callback sees the passes it saw, counted alike
    tasks = ProfileStore(tmp_path / "s.sqlite", readonly=True).tasks(run.id)
    assert [t.stage for t in tasks].count("transpile") == 2


def dynamic(repeats: int) -> QuantumCircuit:
    """A circuit with classical control flow (mid-circuit measurement, ``if_test``), as
    Qiskit's dynamic-circuit tutorials build it; ``repeats`` Bell pairs before it."""
    circuit = QuantumCircuit(2, 2)
    for _ in range(repeats):
        circuit.h(0)
        circuit.cx(0, 1)
    circuit.measure(0, 0)
    with circuit.if_test((circuit.clbits[0], 1)):
        circuit.x(1)
    circuit.measure(1, 1)
    return circuit


@pytest.mark.parametrize("repeats", [1, 1500], ids=["small", "over the stage-task size"])
def test_circuits_with_control_flow_transpile_as_they_do_without_llqm(
    instrumented, tmp_path, repeats
):
    """A DAG with control flow refuses ``size()`` without ``recurse``: the profiler's reading of
    it once made every such transpile fail under ``llqm profile``."""
    backend = FakeManilaV2()

    def work():
        pass_manager = generate_preset_pass_manager(1, backend, seed_transpiler=2)
        seen: list[str] = []
        return (
            pass_manager.run(dynamic(repeats)),
            pass_manager.run(dynamic(repeats), callback=lambda **kw: seen.append(kw["count"])),
            transpile(dynamic(repeats), backend, seed_transpiler=2),
            PassManager([InverseCancellation([CXGate()])]).run(dynamic(repeats)),
            len(seen),
        )

    plain, profiled, tasks = plain_and_profiled(work, tmp_path / "s.sqlite")
    assert profiled == plain and profiled[0].count_ops()["if_else"] == 1
    transpiles = [t for t in tasks if t.stage == "transpile"]
    assert len(transpiles) == 4 and all(t.status == "completed" for t in tasks)
    assert all(t.metrics["circuit.size"] > 0 for t in transpiles)


def test_an_unstaged_pass_manager_records_its_passes_on_the_transpile_task(instrumented, tmp_path):
    circuit = QuantumCircuit(2)
    circuit.cx(0, 1)
    circuit.cx(0, 1)
    with llqm_core.run("flat", store=tmp_path / "s.sqlite") as run:
        out = PassManager([InverseCancellation([CXGate()])]).run(circuit)
    assert out.size() == 0
    (task,) = ProfileStore(tmp_path / "s.sqlite", readonly=True).tasks(run.id)
    assert task.metrics["transpile.pass.InverseCancellation.calls"] == 1
    assert task.metrics["circuit.size"] == 0


def test_a_transpile_call_is_one_task_from_its_start_with_the_pass_manager_it_built(
    instrumented, tmp_path
):
    """``qiskit.transpile`` spends most of a small circuit's time building its preset pass
    manager: the task spans the whole call and says how long that took (called through the
    module, as a script run by ``llqm profile`` finds it: this file imported it before)."""
    with llqm_core.run("whole call", store=tmp_path / "s.sqlite") as run:
        qiskit.transpile(bell(), FakeManilaV2(), optimization_level=1, seed_transpiler=3)
    (task,) = ProfileStore(tmp_path / "s.sqlite", readonly=True).tasks(run.id)
    stages = sum(v for k, v in task.metrics.items() if k.startswith("transpile.stage."))
    assert task.stage == "transpile" and task.metrics["transpile.optimization_level"] == 1
    assert 0 < task.metrics["transpile.setup_s"] < task.profile.wall_s
    assert task.metrics["transpile.setup_s"] + stages <= task.profile.wall_s


def test_a_small_circuits_transpile_that_runs_long_keeps_its_stages_as_tasks(
    instrumented, tmp_path, monkeypatch
):
    """Told apart by their passes (no markers), the stages of a long transpile still become
    tasks, in the pass manager's order, one after another under the ``transpile`` task."""
    from llqm_qiskit.transpile import stage_profiler

    monkeypatch.setattr(stage_profiler, "STAGE_TASKS_AFTER_S", 0.0)
    pass_manager = generate_preset_pass_manager(1, FakeManilaV2(), seed_transpiler=4)
    with llqm_core.run("long", store=tmp_path / "s.sqlite") as run:
        compiled = pass_manager.run(bell())
    parent, *stages = ProfileStore(tmp_path / "s.sqlite", readonly=True).tasks(run.id)
    assert compiled.num_nonlocal_gates() == 1
    assert [t.stage for t in stages] == [f"transpile.{s}" for s in pass_manager.stages]
    assert all(t.parent_id == parent.id for t in stages)
    assert all(a.end_ns <= b.start_ns for a, b in zip(stages, stages[1:]))
    translation = stages[list(pass_manager.stages).index("translation")]
    assert translation.metrics["transpile.pass.BasisTranslator.calls"] == 1
    assert "transpile.stage.translation.time_s" not in parent.metrics


def test_a_short_transpile_puts_on_its_task_what_its_stage_tasks_would_hold(
    instrumented, tmp_path, monkeypatch
):
    """A short transpile's passes and stages are counted straight onto the ``transpile`` task,
    a long one's into stage tasks: the same transpile gives the same passes either way."""
    from llqm_qiskit.transpile import stage_profiler

    def profiled(after_s: float, name: str):
        monkeypatch.setattr(stage_profiler, "STAGE_TASKS_AFTER_S", after_s)
        pass_manager = generate_preset_pass_manager(1, FakeManilaV2(), seed_transpiler=4)
        with llqm_core.run(name, store=tmp_path / "s.sqlite") as run:
            pass_manager.run(bell())
        return pass_manager, ProfileStore(tmp_path / "s.sqlite", readonly=True).tasks(run.id)

    pass_manager, (short,) = profiled(60.0, "short")
    _, (parent, *stages) = profiled(0.0, "long")
    per_stage = [
        k.removeprefix("transpile.stage.").removesuffix(".time_s")
        for k in short.metrics
        if k.startswith("transpile.stage.")
    ]
    assert per_stage == list(pass_manager.stages)  # every stage, in order, 0 s if it ran nothing
    stage_seconds = sum(short.metrics[f"transpile.stage.{s}.time_s"] for s in per_stage)
    assert 0 < stage_seconds <= short.profile.wall_s

    def calls(metrics):
        return {k: v for k, v in metrics.items() if k.endswith(".calls")}

    summed: dict[str, int] = {}
    for stage in stages:
        for key, count in calls(stage.metrics).items():
            summed[key] = summed.get(key, 0) + count
    assert calls(short.metrics) == summed and summed
    assert short.metrics["transpile.passes"] == sum(summed.values())
    assert short.metrics["circuit.size"] == parent.metrics["circuit.size"]


def test_passes_hidden_in_an_unknown_controller_are_still_timed_by_stage(instrumented, tmp_path):
    """A flow controller that does not show its passes where Qiskit's own do: the stages cannot
    be told apart by their passes, so they are marked, and nothing goes unrecorded."""
    from qiskit.passmanager.base_tasks import BaseController
    from qiskit.transpiler import StagedPassManager

    class Opaque(BaseController):
        def __init__(self, passes):
            super().__init__()
            self._hidden = list(passes)

        def iter_tasks(self, state):
            for task in self._hidden:  # noqa: UP028 (Qiskit sends the state in)
                yield task

    circuit = QuantumCircuit(2)
    circuit.cx(0, 1)
    circuit.cx(0, 1)
    only = PassManager([Opaque([InverseCancellation([CXGate()])])])
    with llqm_core.run("opaque", store=tmp_path / "s.sqlite") as run:
        out = StagedPassManager(stages=["only"], only=only).run(circuit)
    assert out.size() == 0
    (task,) = ProfileStore(tmp_path / "s.sqlite", readonly=True).tasks(run.id)
    assert task.metrics["transpile.pass.InverseCancellation.calls"] == 1
    assert task.metrics["transpile.stage.only.time_s"] > 0


def test_the_same_exception_and_a_failed_task(instrumented, tmp_path):
    def error():  # the basis translation stage finds no way to make a cx from rz alone
        with pytest.raises(TranspilerError) as caught:
            transpile(bell(), basis_gates=["rz"])
        return str(caught.value)

    plain, profiled, tasks = plain_and_profiled(error, tmp_path / "s.sqlite")
    assert profiled == plain
    (failed,) = [t for t in tasks if t.status.value == "failed"]
    # a short transpile times its stages on the transpile task, and names the one that raised
    assert failed.stage == "transpile"
    assert failed.metrics["transpile.failed_stage"] == "translation"


@pytest.mark.parametrize("detail", ["full", "calls"])
def test_an_execute_task_spans_submit_to_result(instrumented, tmp_path, detail):
    """At either detail: the job's own report (its shots, the simulator's seconds) is kept."""
    backend = BasicSimulator()
    with llqm_core.run("async", store=tmp_path / "s.sqlite", detail=detail) as run:
        job = backend.run(transpile(bell(), backend), shots=64, seed_simulator=1)
        with llqm_core.task("meanwhile", stage="postprocess"):
            pass
        counts = job.result().get_counts()
        job.result()  # read again: nothing more recorded
    assert sum(counts.values()) == 64
    tasks = {t.stage: t for t in ProfileStore(tmp_path / "s.sqlite", readonly=True).tasks(run.id)}
    execute, meanwhile = tasks["execute"], tasks["postprocess"]
    assert execute.start_ns < meanwhile.start_ns and meanwhile.end_ns < execute.end_ns
    assert execute.metrics["result.shots"] == 64 and execute.depends_on == [tasks["transpile"].id]
    assert execute.metrics["result.backend_time_s"] >= 0


def busy_circuit(width: int, layers: int) -> QuantumCircuit:
    circuit = QuantumCircuit(width)
    for layer in range(layers):
        for qubit in range(width):
            circuit.rx(0.1 * (qubit + layer), qubit)
        for qubit in range(width - 1):
            circuit.cx(qubit, qubit + 1)
    circuit.measure_all()
    return circuit


@pytest.mark.parametrize("thread", ["main", "pool"])
@pytest.mark.parametrize("job", ["aer noisy backend.run", "StatevectorSampler"])
def test_an_execute_task_is_charged_the_cpu_its_job_used_in_a_worker_thread(
    instrumented, tmp_path, job, thread
):
    """Aer's jobs and Qiskit's primitives run in a pool thread while the caller waits on
    ``result``: their CPU was left out of the task, which read as waiting ("execute on wait")."""
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    from qiskit.primitives import StatevectorSampler
    from qiskit_aer import AerSimulator
    from qiskit_aer.noise import NoiseModel, depolarizing_error

    if job == "StatevectorSampler":
        circuit = busy_circuit(12, 300)

        def call():
            return StatevectorSampler(seed=1).run([circuit], shots=10).result()

    else:
        noise = NoiseModel()
        noise.add_all_qubit_quantum_error(depolarizing_error(0.01, 2), ["cx"])
        simulator = AerSimulator(noise_model=noise, max_parallel_threads=1)
        circuit = transpile(busy_circuit(12, 20), simulator)

        def call():
            return simulator.run(circuit, shots=8, seed_simulator=1).result()

    def timed():
        cpu = time.process_time()
        call()
        return time.process_time() - cpu

    with llqm_core.run("jobs", store=tmp_path / "s.sqlite") as run:
        if thread == "main":
            used = timed()
        else:
            with ThreadPoolExecutor(1) as pool:  # the run's context, as ``llqm profile`` has it
                used = pool.submit(contextvars.copy_context().run, timed).result()
    (task,) = ProfileStore(tmp_path / "s.sqlite", readonly=True).tasks(run.id)
    assert task.stage == "execute" and used > 0.05
    assert 0.5 * used <= task.profile.cpu_s <= 1.5 * used + 0.05


def test_a_calibrated_backends_snapshot_is_written_once_for_all_its_jobs(
    instrumented, tmp_path, monkeypatch
):
    """Every job names the calibration it ran on; the snapshot itself (JSON and a commit on the
    job's thread: ~8 ms for a 156-qubit device) is written by the first one only."""
    from llqm_core.store.writer import StoreWriter

    written: list[str | None] = []
    write = StoreWriter._write

    def counted(self, sql, params):
        written.append(sql)
        return write(self, sql, params)

    monkeypatch.setattr(StoreWriter, "_write", counted)
    backend = FakeManilaV2()
    with llqm_core.run("three jobs", store=tmp_path / "s.sqlite") as run:
        compiled = transpile(bell(), backend, seed_transpiler=1)
        for shots in (10, 20, 30):
            backend.run(compiled, shots=shots, seed_simulator=1).result()
    assert len([sql for sql in written if sql and "hardware_snapshots" in sql]) == 1
    store = ProfileStore(tmp_path / "s.sqlite", readonly=True)
    jobs = [t for t in store.tasks(run.id) if t.stage == "execute"]
    assert len(jobs) == 3 and len({t.hardware for t in jobs}) == 1
    assert store.find_snapshot(jobs[0].hardware).num_qubits == 5


def test_an_unsupported_version_is_skipped_with_one_warning():
    class Future(Instrumentor):
        name = "qiskit-future"
        library = "qiskit"
        supported = ">=99"

        def _instrument(self):
            raise AssertionError("an unsupported version must not be patched")

    future = Future()
    with pytest.warns(UserWarning, match=r"supports qiskit >=99, not the installed"):
        assert future.instrument() is False
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert future.instrument() is False  # warned once only
    assert not future.is_instrumented


def test_a_third_party_plugin_adds_its_own_instrumentor(fresh_plugins):
    library = types.ModuleType("thirdparty")
    library.work = lambda x: x + 1
    original = library.work

    class ThirdParty(Instrumentor):
        name = "thirdparty"
        library = "pluggy"  # any installed distribution stands for the library's version
        supported = ">=1"

        def _instrument(self):
            self.patch(library, "work", lambda f: lambda x: f(x) * 10)

    class Plugin:
        @hookimpl
        def llqm_register_instrumentors(self, register):
            register("thirdparty", ThirdParty, description="a test library")

    llqm_core.plugin.loaded_plugins().register(Plugin(), "thirdparty-plugin")
    assert "thirdparty" in instrument_all()
    assert library.work(1) == 20
    uninstrument_all()
    assert library.work is original


def test_unknown_instrumentor_is_a_user_error():
    with pytest.raises(llqm_core.UserError, match="unknown instrumentor 'nope'"):
        instrument_all(["nope"])


def test_every_kind_of_primitive_is_an_execute_task_with_the_same_result(instrumented, tmp_path):
    from qiskit.primitives import BackendSamplerV2, StatevectorEstimator, StatevectorSampler
    from qiskit.quantum_info import SparsePauliOp
    from qiskit_aer.primitives import EstimatorV2 as AerEstimator
    from qiskit_aer.primitives import SamplerV2 as AerSampler

    backend = FakeManilaV2()
    compiled = transpile(bell(), backend, optimization_level=1, seed_transpiler=2)
    unmeasured = bell().remove_final_measurements(inplace=False)
    zz = SparsePauliOp("ZZ")

    def results():
        return [
            StatevectorSampler(seed=3).run([bell()], shots=50).result()[0].data.meas.get_counts(),
            float(StatevectorEstimator().run([(unmeasured, zz)]).result()[0].data.evs),
            BackendSamplerV2(backend=backend, options={"seed_simulator": 4})
            .run([compiled], shots=50)
            .result()[0]
            .data.meas.get_counts(),
            AerSampler(seed=5).run([bell()], shots=50).result()[0].data.meas.get_counts(),
            float(AerEstimator().run([(unmeasured, zz)]).result()[0].data.evs),
        ]

    plain, profiled, tasks = plain_and_profiled(results, tmp_path / "s.sqlite")
    assert profiled == plain
    executes = [t for t in tasks if t.stage == "execute"]
    assert [t.metrics["execute.caller"] for t in executes] == [
        "StatevectorSampler",
        "StatevectorEstimator",
        "BackendSamplerV2",
        "SamplerV2",
        "EstimatorV2",
    ]
    assert all(t.status.value == "completed" for t in executes)
    assert executes[2].hardware is not None  # fake_manila's calibration
    assert executes[0].metrics["result.shots"] == 50


def test_mitiq_fails_as_it_does_without_instrumentation(instrumented, tmp_path):
    from mitiq import zne

    circuit = QuantumCircuit(1)
    circuit.x(0)

    def broken(_circuit) -> float:
        raise RuntimeError("the device went away")

    calls = [
        lambda: zne.execute_with_zne(circuit, lambda c: 1.0, scale_noise=None),
        lambda: zne.execute_with_zne(circuit, lambda c: 1.0, num_to_average=0),
        lambda: zne.execute_with_zne(circuit, lambda c: 1.0, colour="red"),
        lambda: zne.execute_with_zne(circuit, broken),
    ]

    def errors():
        found = []
        for call in calls:
            with pytest.raises(Exception) as caught:
                call()
            found.append((type(caught.value), str(caught.value)))
        return found

    plain, profiled, tasks = plain_and_profiled(errors, tmp_path / "s.sqlite")
    assert profiled == plain
    failed = [
        t for t in tasks if t.stage in ("mitigate.zne", "execute") and t.status.value == "failed"
    ]
    assert {t.error for t in failed} >= {"the device went away"}


UNUSED_LIBRARY = textwrap.dedent(
    """
    import json, sys
    import llqm_core
    from llqm_core.hooks.plugins import loaded_plugins
    from llqm_core.runtime.instrumentation import instrument_all, uninstrument_all
    from llqm_core.runtime.post_import import PostImportHook

    def pending():
        return [h.module for h in sys.meta_path if isinstance(h, PostImportHook)]

    loaded_plugins()
    with llqm_core.run("no mitiq", store=sys.argv[1]) as run:
        on = instrument_all()
        from qiskit import QuantumCircuit, transpile
        circuit = QuantumCircuit(2)
        circuit.h(0)
        circuit.cx(0, 1)
        transpile(circuit, basis_gates=["cx", "rz", "sx"])
    unused = {"on": on, "mitiq": "mitiq" in sys.modules, "cirq": "cirq" in sys.modules}
    unused["prefect"] = "prefect" in sys.modules
    unused["pending"] = pending()
    uninstrument_all()
    unused["pending_after_uninstrument"] = pending()
    instrument_all()
    with llqm_core.run("mitiq imported later", store=sys.argv[1]) as later:
        from mitiq import zne
        value = zne.execute_with_zne(circuit, lambda c: 1.0 / len(c.data))
    original = zne.execute_with_zne
    uninstrument_all()
    print(json.dumps({
        "unused": unused,
        "runs": [run.id, later.id],
        "value": value,
        "restored": zne.execute_with_zne is original.__wrapped__
        and not hasattr(zne.execute_with_zne, "__wrapped__"),
    }))
    """
)


def test_mitiq_is_not_imported_for_a_program_that_does_not_use_it_and_patched_when_it_does(
    tmp_path,
):
    store = tmp_path / "s.sqlite"
    done = run_python(UNUSED_LIBRARY.replace("sys.argv[1]", repr(str(store))), timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    unused = found["unused"]
    assert "mitiq" in unused["on"]  # switched on, waiting for the program to import Mitiq
    assert not unused["mitiq"] and not unused["cirq"] and not unused["prefect"]
    assert "mitiq" in unused["pending"] and "prefect.task_engine" in unused["pending"]
    assert "mitiq" not in unused["pending_after_uninstrument"]
    assert found["restored"]
    tasks = ProfileStore(store, readonly=True).tasks(found["runs"][1])
    stages = [t.stage for t in tasks]
    assert stages.count("mitigate.zne") == 1
    assert stages.count("mitigate.zne.fold") == 3  # Mitiq's default scale factors 1, 2, 3
    assert "mitigate.zne.extrapolate" in stages and "execute" in stages
    zne_task = next(t for t in tasks if t.stage == "mitigate.zne")
    assert zne_task.metrics["fidelity.mitigated"] == pytest.approx(found["value"])
