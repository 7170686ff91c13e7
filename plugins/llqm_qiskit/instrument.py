"""``QiskitInstrumentor``: unmodified Qiskit code profiled as LLQM ``transpile`` and ``execute`` tasks.

- ``PassManager.run`` (and so ``qiskit.transpile`` and the staged pass managers of
  ``generate_preset_pass_manager``) becomes a ``transpile`` task with the per-stage children
  and per-pass seconds of ``profiled_transpile`` (its stage markers and profiler). A batch
  that Qiskit transpiles in parallel processes is one ``transpile`` task here, and each
  circuit a ``transpile`` task with its stages in the worker process that ran it.
- ``backend.run`` (Aer, BasicSimulator, qiskit-ibm-runtime's fake backends) and the
  primitives' ``run`` (Qiskit's reference and backend primitives, Aer's, qiskit-ibm-runtime's)
  become ``execute`` tasks from submission until the job's result is read (jobs are
  asynchronous), naming the backend's calibration snapshot and recording the QPU and queue
  seconds the job reports at that point. Inside an ``execute`` task opened by someone else (a
  Mitiq executor's batch), the job is recorded on that task instead of a nested one.

Calls are left alone (the original runs, with the same arguments) when no LLQM run is
current, and nested calls (a primitive that runs a backend) are profiled once.
"""

from __future__ import annotations

import contextvars
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from qiskit import QuantumCircuit
from qiskit.primitives import PrimitiveResult
from qiskit.result import Result
from qiskit.transpiler import PassManager, StagedPassManager

import llqm_core
from llqm_core.runtime.instrumentation import Instrumentor, is_suppressed

from . import kept_counts
from .loops import estimator_call, estimator_value
from .snapshot import backend_name, hardware_snapshot
from .stage_profiler import (
    STAGE,
    StageProfiler,
    _StageMarker,
    pass_metrics,
    starts_small,
    with_markers,
)

#: Seconds from the start of the ``transpile`` task to its pass manager's run: for
#: ``qiskit.transpile``, building the preset pass manager.
SETUP = "transpile.setup_s"
_busy: contextvars.ContextVar[bool] = contextvars.ContextVar("llqm_qiskit_busy", default=False)

#: Where Qiskit-family classes with a ``run`` to profile live: (module, class, kind).
BACKENDS = (
    ("qiskit_aer.backends.aerbackend", "AerBackend"),
    ("qiskit.providers.basic_provider.basic_simulator", "BasicSimulator"),
    ("qiskit_ibm_runtime.fake_provider.fake_backend", "FakeBackendV2"),
)
PRIMITIVES = (
    ("qiskit.primitives.statevector_sampler", "StatevectorSampler"),
    ("qiskit.primitives.statevector_estimator", "StatevectorEstimator"),
    ("qiskit.primitives.backend_sampler_v2", "BackendSamplerV2"),
    ("qiskit.primitives.backend_estimator_v2", "BackendEstimatorV2"),
    ("qiskit_aer.primitives.sampler_v2", "SamplerV2"),
    ("qiskit_aer.primitives.estimator_v2", "EstimatorV2"),
    ("qiskit_ibm_runtime.sampler", "SamplerV2"),
    ("qiskit_ibm_runtime.estimator", "EstimatorV2"),
)


def _profiling() -> llqm_core.ActiveRun | None:
    """The run to profile a call into: the current one, unless this call is nested in another."""
    return None if _busy.get() or is_suppressed() else llqm_core.current_run()


# --- transpile ------------------------------------------------------------------------------


def _user_callback(callback: Callable[..., Any] | None) -> Callable[..., Any] | None:
    """The user's pass callback as it would have been called: stage markers hidden, counted
    without them."""
    if callback is None:
        return None
    seen = [0]

    def call(**kwargs: Any) -> None:
        if isinstance(kwargs.get("pass_"), _StageMarker):
            return
        kwargs["count"] = seen[0]
        seen[0] += 1
        callback(**kwargs)

    return call


def _run_profiled(
    pass_manager: PassManager,
    circuit: Any,
    parent: llqm_core.TaskHandle,
    run: Callable[..., Any],
    run_marked: Callable[..., Any],
    callback: Callable[..., Any] | None,
    **options: Any,
) -> Any:
    """One circuit through ``pass_manager`` (by ``run``; ``run_marked`` runs its copy with stage
    markers), its stages as ``profiled_transpile`` makes them, or its passes on ``parent`` for
    an unstaged manager. A small circuit's stages are told apart by its passes, without marker
    passes, which cost as much as the rest of its transpile's bookkeeping (docs/performance.md)."""
    profiler = StageProfiler(parent, depths=False)
    staged = isinstance(pass_manager, StagedPassManager)
    followed = staged and starts_small(circuit) and profiler.follow(pass_manager)
    if followed:
        ours: Callable[..., None] = profiler.on_followed_pass
    else:
        ours = profiler.on_pass
    user = _user_callback(callback)
    on_pass = ours
    if user is not None:

        def on_pass(**kwargs: Any) -> None:
            ours(**kwargs)
            user(**kwargs)

    marked = with_markers(pass_manager) if staged and not followed else None
    if not staged:
        profiler.record_on_parent()
    try:
        with profiler.running():
            if marked is not None:
                out = run_marked(marked, circuit, callback=on_pass, **options)
            else:
                out = run(pass_manager, circuit, callback=on_pass, **options)
    except BaseException as exc:
        if followed:
            profiler.finish_followed(exc)
        elif staged:
            profiler.close(None, exc)
        raise
    if followed:
        profiler.finish_followed()
    elif marked is not None:
        profiler.close(None)
        pass_manager.property_set = marked.property_set
    if not staged:
        parent.annotate_numbers(pass_metrics(profiler.passes))
        profiler.current = None
    elif isinstance(out, QuantumCircuit):  # described from the DAG it was made from, no walk
        parent.run.remember_description(out, profiler.final())
    return out


@contextmanager
def _transpile_task(
    run: llqm_core.ActiveRun, circuits: list[Any], options: dict[str, Any] | None = None
) -> Iterator[llqm_core.TaskHandle]:
    """A ``transpile`` task for the call, with ``transpile()``'s ``options``; inside a
    ``transpile`` task of someone else's (a Prefect task of that stage) the stages go under that
    one instead of a second ``transpile``."""
    enclosing = llqm_core.current_task()
    if enclosing is not None and enclosing.run is run and enclosing.record.stage == STAGE:
        enclosing.add_dependency(*run.producers(circuits))
        yield enclosing
        return
    with _new_transpile_task(run, circuits, options or {}) as handle:
        yield handle


def _new_transpile_task(
    run: llqm_core.ActiveRun, circuits: list[Any], options: dict[str, Any]
) -> llqm_core.TaskHandle:
    handle = llqm_core.start_task(STAGE, STAGE, run.producers(circuits), run=run)
    handle.annotate(
        {
            "transpile.instrumented": True,
            "transpile.input_size": sum(len(c.data) for c in circuits),
        }
        | options
    )
    return handle


def _run_marked(marked: PassManager, circuit: Any, **options: Any) -> Any:
    """Run a staged pass manager's passes with markers (a plain pass manager, ``with_markers``)
    through ``PassManager.run``, which the ``_busy`` flag leaves unprofiled."""
    options.pop("property_set", None)  # a staged pass manager's ``run`` ignores it as well
    return marked.run(circuit, **options)


def _circuit_batch(circuits: Any) -> list[QuantumCircuit] | None:
    """The circuits of a transpile call (one circuit or a list of them), or None for any other
    input, which is left to Qiskit unprofiled."""
    batch = [circuits] if isinstance(circuits, QuantumCircuit) else circuits
    if isinstance(batch, list) and all(isinstance(c, QuantumCircuit) for c in batch):
        return list(batch)
    return None


def _wrap_pass_manager_run(original: Callable[..., Any]) -> Callable[..., Any]:
    def run(
        self: PassManager,
        circuits: Any,
        output_name: str | None = None,
        callback: Callable[..., Any] | None = None,
        num_processes: int | None = None,
        **kwargs: Any,
    ) -> Any:
        active = _profiling()
        batch = _circuit_batch(circuits)
        if active is None or batch is None:
            return original(self, circuits, output_name, callback, num_processes, **kwargs)
        single = isinstance(circuits, QuantumCircuit)
        from qiskit.utils import should_run_in_parallel

        enclosing = llqm_core.current_task()
        token = _busy.set(True)
        try:
            with _transpile_task(active, batch) as handle:
                if handle is enclosing and SETUP not in handle.record.metrics:
                    handle.annotate_numbers({SETUP: handle.measurement.elapsed_s()})
                if len(batch) > 1 and should_run_in_parallel(num_processes):
                    handle.annotate({"transpile.parallel": True})
                    out = original(self, circuits, output_name, callback, num_processes, **kwargs)
                else:
                    out = [
                        _run_profiled(
                            self,
                            circuit,
                            handle,
                            original,
                            _run_marked,
                            callback,
                            output_name=output_name,
                            num_processes=num_processes,
                            **kwargs,
                        )
                        for circuit in batch
                    ]
                    out = out[0] if single else out
                # described once, as the circuit a backend will be given: the execute task reuses it
                handle.describe(out[0] if isinstance(out, list) and len(out) == 1 else out)
                active.note_output(out, handle.id)
            return out
        finally:
            _busy.reset(token)

    return run


def _wrap_run_in_worker(original: Callable[..., Any]) -> Callable[..., Any]:
    """Qiskit's parallel transpile in a worker process: each circuit a ``transpile`` task there."""

    def run_workflow_in_new_process(program: Any, pass_manager_bin: bytes, **kwargs: Any) -> Any:
        active = None if is_suppressed() else llqm_core.current_run()
        if active is None or not isinstance(program, QuantumCircuit):
            return original(program, pass_manager_bin, **kwargs)
        import dill
        from qiskit.passmanager.base_passmanager import _run_workflow
        from qiskit.transpiler.passmanager import _legacy_style_callback

        pass_manager = dill.loads(pass_manager_bin)
        sent = dill.loads(kwargs["callback"]) if kwargs.get("callback") else None

        def user(pass_: Any, dag: Any, time: float, property_set: Any, count: int) -> None:
            # the parent already turned the user's callback into the base pass manager's style
            sent(
                task=pass_,
                passmanager_ir=dag,
                property_set=property_set,
                running_time=time,
                count=count,
            )

        def run(marked: Any, circuit: Any, callback: Any = None, **_: Any) -> Any:
            return _run_workflow(
                program=circuit,
                pass_manager=marked,
                callback=_legacy_style_callback(callback),
                initial_property_set=kwargs.get("initial_property_set"),
            )

        with _transpile_task(active, [program]) as handle:
            out = _run_profiled(pass_manager, program, handle, run, run, user if sent else None)
            handle.record_output(out)
        return out

    return run_workflow_in_new_process


def _wrap_transpile(original: Callable[..., Any]) -> Callable[..., Any]:
    """``qiskit.transpile``: one ``transpile`` task for the whole call, with its options. Building
    the preset pass manager is most of a small circuit's transpile (``transpile.setup_s``)."""

    def transpile(circuits: Any, backend: Any = None, *args: Any, **kwargs: Any) -> Any:
        active = _profiling()
        batch = _circuit_batch(circuits)
        if active is None or batch is None:
            return original(circuits, backend, *args, **kwargs)
        seed = kwargs.get("seed_transpiler")
        level = kwargs.get("optimization_level")
        options = {
            "transpile.optimization_level": -1 if level is None else level,
            "transpile.seed": -1 if seed is None else seed,
            "transpile.layout_method": kwargs.get("layout_method") or "default",
            "transpile.backend": backend_name(backend) if backend is not None else "none",
        }
        with _transpile_task(active, batch, options):
            return original(circuits, backend, *args, **kwargs)

    return transpile


# --- execute --------------------------------------------------------------------------------

_snapshots: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _snapshot(backend: Any) -> llqm_core.HardwareSnapshot | None:
    """The backend's calibration (read once per backend object), or None when it has none."""
    if backend is None:
        return None
    try:
        found = _snapshots.get(backend)  # before the target: Aer builds its target on each read
    except TypeError:
        found = None
    if found is None:
        try:
            snapshot = hardware_snapshot(backend)
        except Exception:  # a simulator without a sized target (BasicSimulator): no calibration
            snapshot = None
        calibrated = snapshot is not None and (
            any(q.t1_s is not None for q in snapshot.qubits.values())
            or any(g.error is not None for g in snapshot.gates)
        )
        found = snapshot if calibrated else False
        try:
            _snapshots[backend] = found
        except TypeError:
            pass
    return found or None


def _pub_circuits(pubs: Any) -> list[QuantumCircuit]:
    """The circuits of a ``run`` call's input: a circuit, a list of circuits, or of pubs
    (tuples or pub objects, circuit first); what it cannot read is left out, never an error."""
    if isinstance(pubs, QuantumCircuit) or hasattr(pubs, "circuit"):
        items = [pubs]
    else:
        try:
            items = list(pubs or ())
        except TypeError:
            return []
    circuits = []
    for pub in items:
        if isinstance(pub, QuantumCircuit):
            circuits.append(pub)
        elif isinstance(pub, (tuple, list)) and pub and isinstance(pub[0], QuantumCircuit):
            circuits.append(pub[0])
        elif isinstance(getattr(pub, "circuit", None), QuantumCircuit):
            circuits.append(pub.circuit)
    return circuits


def _primitive_backend(primitive: Any) -> Any:
    for attribute in ("_backend", "backend", "_mode", "mode"):
        try:
            backend = getattr(primitive, attribute, None)
        except Exception:
            continue
        if hasattr(type(backend), "target"):  # the class's: Aer builds a target on each read
            return backend
    return None


class _PendingJobs:
    """The ``execute`` task of each submitted job until its result is read."""

    def __init__(self) -> None:
        self.tasks: dict[int, tuple[Any, llqm_core.TaskHandle, bool, Any]] = {}

    def add(self, job: Any, handle: llqm_core.TaskHandle, owned: bool, loop: Any = None) -> None:
        self.tasks[id(job)] = (job, handle, owned, loop)

    def pop(self, job: Any) -> tuple[llqm_core.TaskHandle, bool, Any] | None:
        entry = self.tasks.get(id(job))
        if entry is None or entry[0] is not job:
            return None
        del self.tasks[id(job)]
        return entry[1], entry[2], entry[3]

    def finish_all(self) -> None:
        """Jobs whose result nobody read: their tasks end now, as they were."""
        for _, handle, owned, _ in list(self.tasks.values()):
            if owned:
                llqm_core.finish_task(handle)
        self.tasks.clear()


def _failing_ends(
    handle: llqm_core.TaskHandle, owned: bool, call: Callable[..., Any], *args: Any, **kwargs: Any
) -> Any:
    """``call(*args, **kwargs)``; an exception ends the task (where it is this job's own) and goes on."""
    try:
        return call(*args, **kwargs)
    except BaseException as exc:
        if owned:
            llqm_core.finish_task(handle, exc)
        raise


def _job_usage(job: Any, result: Any) -> tuple[float | None, float | None, dict[str, Any]]:
    """QPU and queue seconds the job reports: IBM's job metrics, or a simulator's own time."""
    if hasattr(job, "metrics") and callable(job.metrics):
        from .ibm import spans_summary, usage_from_metrics

        try:
            queue_s, qpu_s, details = usage_from_metrics(job.metrics())
        except Exception:  # a job that cannot tell its metrics still gave its result
            queue_s, qpu_s, details = None, None, {}
        metadata = getattr(result, "metadata", None)
        execution = metadata.get("execution") if isinstance(metadata, dict) else None
        if isinstance(execution, dict):
            details |= spans_summary(execution.get("execution_spans"))
        return qpu_s, queue_s, details
    if isinstance(result, Result) and getattr(result, "time_taken", None) is not None:
        return float(result.time_taken), None, {}
    return None, None, {}


def _result_shots(result: Any) -> int | None:
    if isinstance(result, PrimitiveResult):
        shots = [getattr(pub, "metadata", {}).get("shots") for pub in result]
        return sum(s for s in shots if isinstance(s, int)) or None
    return None


class QiskitInstrumentor(Instrumentor):
    """``transpile`` / pass managers, ``backend.run`` and the primitives' ``run``, profiled."""

    name = "qiskit"
    library = "qiskit"
    supported = ">=2.0,<3"

    def _instrument(self) -> None:
        self.jobs = _PendingJobs()
        self.job_types: set[type] = set()  # whose class's ``result`` is patched already
        for owner in (PassManager, StagedPassManager):
            self.patch(owner, "run", _wrap_pass_manager_run)
        import qiskit
        import qiskit.compiler
        import qiskit.compiler.transpiler
        from qiskit.passmanager import base_passmanager

        for module in (qiskit, qiskit.compiler, qiskit.compiler.transpiler):
            self.patch(module, "transpile", _wrap_transpile)
        self.patch(base_passmanager, "_run_workflow_in_new_process", _wrap_run_in_worker)
        for module, cls in BACKENDS + PRIMITIVES:
            primitive = (module, cls) in PRIMITIVES
            self.on_import(
                module,
                lambda m, cls=cls, primitive=primitive: self._patch_run(m, cls, primitive),
            )

    def _uninstrument(self) -> None:
        self.jobs.finish_all()

    def _patch_run(self, module: Any, cls: str, primitive: bool) -> None:
        owner = getattr(module, cls, None)
        if owner is not None and "run" in vars(owner):
            self.patch(owner, "run", lambda original: self._wrap_submit(original, primitive))

    def _wrap_submit(self, original: Callable[..., Any], primitive: bool) -> Callable[..., Any]:
        instrumentor = self

        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            active = _profiling()
            if active is None:
                return original(self, *args, **kwargs)
            given = args[0] if args else kwargs.get("pubs", kwargs.get("run_input", ()))
            circuits = _pub_circuits(given)
            backend = _primitive_backend(self) if primitive else self
            handle, owned = instrumentor._execute_task(active, self, backend, circuits, kwargs)
            token = _busy.set(True)
            try:
                job = _failing_ends(handle, owned, original, self, *args, **kwargs)
            finally:
                _busy.reset(token)
            instrumentor._watch(job, handle, owned, estimator_call(self, given, circuits))
            return job

        return run

    def _execute_task(
        self,
        active: llqm_core.ActiveRun,
        caller: Any,
        backend: Any,
        circuits: list[QuantumCircuit],
        kwargs: dict[str, Any],
    ) -> tuple[llqm_core.TaskHandle, bool]:
        enclosing = llqm_core.current_task()
        owned = (
            enclosing is None or enclosing.run is not active or enclosing.record.stage != "execute"
        )
        if owned:
            handle = llqm_core.start_task(
                "execute",
                "execute",
                active.producers([circuits, *circuits]),
                run=active,
                activate=False,
            )
        else:
            handle = enclosing
            handle.add_dependency(*active.producers([circuits, *circuits]))
        snapshot = _snapshot(backend)
        if snapshot is not None:
            handle.use_hardware(snapshot)
        ran_before = [] if owned else list(handle.record.metrics.get("execute.two_qubit_gates", []))
        metrics: dict[str, Any] = {
            "execute.caller": type(caller).__name__,
            "execute.circuits": len(circuits),
            # what each circuit that reached the backend holds: Mitiq's fold check reads it
            "execute.two_qubit_gates": ran_before + [c.num_nonlocal_gates() for c in circuits],
        }
        if backend is not None:
            metrics["backend.name"] = backend_name(backend)
        if isinstance(kwargs.get("shots"), int):
            metrics["execute.shots"] = kwargs["shots"]
        handle.annotate(metrics)
        if circuits:
            handle.describe(circuits if len(circuits) > 1 else circuits[0])
        return handle, owned

    def _watch(self, job: Any, handle: llqm_core.TaskHandle, owned: bool, loop: Any = None) -> None:
        """End the task when the job's result is read: patch its class's ``result`` once."""
        self.jobs.add(job, handle, owned, loop)
        if type(job) in self.job_types:
            return
        self.job_types.add(type(job))
        owner = next((c for c in type(job).__mro__ if "result" in vars(c)), None)
        if owner is not None and not self.patched(owner, "result"):
            self.patch(owner, "result", self._wrap_result)

    def _wrap_result(self, original: Callable[..., Any]) -> Callable[..., Any]:
        jobs = self.jobs

        def result(job: Any, *args: Any, **kwargs: Any) -> Any:
            pending = jobs.pop(job)
            if pending is None:
                return original(job, *args, **kwargs)
            handle, owned, loop = pending
            value = _failing_ends(handle, owned, original, job, *args, **kwargs)
            qpu_s, queue_s, details = _job_usage(job, value)
            handle.record_usage(qpu_s=qpu_s, queue_s=queue_s)
            shots = _result_shots(value)
            if shots:
                details["result.shots"] = shots
            if details:  # a simulator's job reports none
                handle.annotate(details)
            handle.describe(value)
            handle.run.note_output(value, handle.id)
            kept_counts.keep_job_result(handle, value)
            if owned:
                llqm_core.finish_task(handle)
            if loop is not None:  # an Estimator's result: an iteration, if it runs in a loop
                objective, error = estimator_value(value)
                handle.run.mark_iteration(objective, error, loop[1], source=loop[0])
            return value

        return result
