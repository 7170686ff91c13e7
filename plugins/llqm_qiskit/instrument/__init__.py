"""``QiskitInstrumentor``: unmodified Qiskit code profiled as LLQM ``transpile`` and ``execute`` tasks.

Switching it on imports nothing of Qiskit: it patches Qiskit once the program imports it
(``on_import``), so a program that never does runs with no Qiskit (nor NumPy) imported for it.

More in docs/modules.md (``llqm_qiskit.instrument``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import llqm_core
import llqm_core.plugin
from llqm_core.plugin import Instrumentor, recording

if TYPE_CHECKING:
    from qiskit import QuantumCircuit

    from .jobs import PendingJobs

__all__ = ["BACKENDS", "PRIMITIVES", "QiskitInstrumentor"]

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


class QiskitInstrumentor(Instrumentor):
    """``transpile`` / pass managers, ``backend.run`` and the primitives' ``run``, profiled."""

    name = "qiskit"
    library = "qiskit"
    supported = ">=2.0,<3"

    def _instrument(self) -> None:
        self.jobs: PendingJobs | None = None
        self.job_types: set[type] = set()  # whose class's ``result`` is patched already
        self.on_import("qiskit", self._patch_qiskit)

    def _patch_qiskit(self, _qiskit: Any) -> None:
        """Patch Qiskit's entry points, once the program has imported it (or at once if it had)."""
        from qiskit.transpiler import PassManager, StagedPassManager

        from ..devices.snapshot import backend_name
        from .jobs import PendingJobs, snapshot_of, wrap_pool_submit
        from .transpiles import (
            wrap_pass_manager_run,
            wrap_preset,
            wrap_run_in_worker,
            wrap_transpile,
        )

        self.jobs = PendingJobs()
        # what every job's task reads of its backend, found once here rather than at each job
        self._backend_name, self._snapshot_of = backend_name, snapshot_of
        for owner in (PassManager, StagedPassManager):
            self.patch(owner, "run", wrap_pass_manager_run)
        import qiskit
        import qiskit.compiler
        import qiskit.compiler.transpiler
        from qiskit.passmanager import base_passmanager

        for module in (qiskit, qiskit.compiler, qiskit.compiler.transpiler):
            self.patch(module, "transpile", wrap_transpile)
        from qiskit.transpiler.preset_passmanagers.plugin import PassManagerStagePluginManager

        self.patch(PassManagerStagePluginManager, "__init__", wrap_preset)
        self.patch(base_passmanager, "_run_workflow_in_new_process", wrap_run_in_worker)
        self.patch(ThreadPoolExecutor, "submit", wrap_pool_submit)
        for module, cls in BACKENDS + PRIMITIVES:
            primitive = (module, cls) in PRIMITIVES
            self.on_import(module, functools.partial(self._patch_run, cls=cls, primitive=primitive))

    def _uninstrument(self) -> None:
        if self.jobs is not None:
            self.jobs.finish_all()

    def _patch_run(self, module: Any, cls: str, primitive: bool) -> None:
        owner = getattr(module, cls, None)
        if owner is not None and "run" in vars(owner):
            self.patch(owner, "run", lambda original: self._wrap_submit(original, primitive))

    def _wrap_submit(self, original: Callable[..., Any], primitive: bool) -> Callable[..., Any]:
        from .calls import busy, profiling
        from .jobs import failing_ends, primitive_backend, pub_circuits, submitting
        from .loops import estimator_call

        instrumentor = self

        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            active = profiling()
            if active is None:
                return original(self, *args, **kwargs)
            started = None
            with recording("a Qiskit run call's circuits and options"):
                given = args[0] if args else kwargs.get("pubs", kwargs.get("run_input", ()))
                circuits = pub_circuits(given)
                backend = primitive_backend(self) if primitive else self
                started = instrumentor._execute_task(active, self, backend, circuits, kwargs)
            if started is None:  # nothing recorded: the call runs as it would without LLQM
                return original(self, *args, **kwargs)
            handle, owned = started
            token, charged = busy.set(True), submitting.set(handle)
            try:
                job = failing_ends(handle, owned, original, self, *args, **kwargs)
            finally:
                submitting.reset(charged)
                busy.reset(token)
            with recording("a Qiskit job", handle):
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
        owned = enclosing is None or enclosing.run is not active or enclosing.stage != "execute"
        if owned:
            handle = llqm_core.plugin.start_task(
                "execute",
                "execute",
                active.producers(circuits),
                run=active,
                activate=False,
            )
        else:
            assert enclosing is not None  # not owned: an execute task of this run is current
            handle = enclosing
            handle.add_dependency(*active.producers(circuits))
        with recording("a Qiskit run call's circuits and backend", handle):
            self._describe_call(handle, owned, caller, backend, circuits, kwargs)
        return handle, owned

    def _describe_call(
        self,
        handle: llqm_core.TaskHandle,
        owned: bool,
        caller: Any,
        backend: Any,
        circuits: list[QuantumCircuit],
        kwargs: dict[str, Any],
    ) -> None:
        snapshot = self._snapshot_of(backend)
        if snapshot is not None:
            handle.use_hardware(snapshot)
        ran_before = [] if owned else list(handle.metrics.get("execute.two_qubit_gates", []))
        metrics: dict[str, Any] = {
            "execute.caller": type(caller).__name__,
            "execute.circuits": len(circuits),
            # what each circuit that reached the backend holds: Mitiq's fold check reads it
            "execute.two_qubit_gates": ran_before + [c.num_nonlocal_gates() for c in circuits],
        }
        if backend is not None:
            metrics["backend.name"] = self._backend_name(backend)
        if isinstance(kwargs.get("shots"), int):
            metrics["execute.shots"] = kwargs["shots"]
        handle.annotate(metrics)
        if circuits and handle.run.full_detail:
            handle.describe(circuits if len(circuits) > 1 else circuits[0])

    def _watch(self, job: Any, handle: llqm_core.TaskHandle, owned: bool, loop: Any = None) -> None:
        """End the task when the job's result is read: patch its class's ``result`` once."""
        assert self.jobs is not None  # made when Qiskit was patched, before any job
        self.jobs.add(job, handle, owned, loop)
        if type(job) in self.job_types:
            return
        self.job_types.add(type(job))
        owner = next((c for c in type(job).__mro__ if "result" in vars(c)), None)
        if owner is not None and not self.patched(owner, "result"):
            self.patch(owner, "result", self._wrap_result)

    def _wrap_result(self, original: Callable[..., Any]) -> Callable[..., Any]:
        from qiskit.result import Result

        from ..backends import kept_counts
        from ..metrics import result_report
        from .jobs import failing_ends, job_usage, result_shots
        from .loops import estimator_value

        jobs = self.jobs
        assert jobs is not None

        def result(job: Any, *args: Any, **kwargs: Any) -> Any:
            pending = jobs.pop(job)
            if pending is None:
                return original(job, *args, **kwargs)
            handle, owned, loop = pending
            value = failing_ends(handle, owned, original, job, *args, **kwargs)
            with recording("a Qiskit job's result", handle):
                qpu_s, queue_s, details = job_usage(job, value)
                if qpu_s is not None or queue_s is not None:  # a simulator's job reports none
                    handle.record_usage(qpu_s=qpu_s, queue_s=queue_s)
                shots = result_shots(value)
                if shots:
                    details["result.shots"] = shots
                if details:  # a simulator's job reports none
                    handle.annotate(details)
                if handle.run.full_detail:
                    handle.describe(value)
                elif isinstance(value, Result):  # its own report, without describing it
                    handle.annotate_numbers(result_report(value))
                handle.run.note_output(value, handle.id)
                kept_counts.keep_job_result(handle, value)  # where the run keeps results
            if owned:
                handle.finish()
            if loop is not None:  # an Estimator's result: an iteration, if it runs in a loop
                with recording("an Estimator's value as an iteration", handle):
                    objective, error = estimator_value(value)
                    handle.run.mark_iteration(objective, error, loop[1], source=loop[0])
            return value

        return result
