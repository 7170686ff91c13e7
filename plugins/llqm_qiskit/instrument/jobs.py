"""Jobs of backends and primitives as ``execute`` tasks: the calibration they ran on, their
circuits, and the QPU and queue seconds their results report.
"""

from __future__ import annotations

import contextvars
import weakref
from collections.abc import Callable
from typing import Any

from qiskit import QuantumCircuit
from qiskit.primitives import PrimitiveResult

import llqm_core
import llqm_core.plugin

from ..devices.snapshot import hardware_snapshot

_snapshots: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: The ``execute`` task whose ``run`` call is submitting its job (None elsewhere). Aer's jobs and
#: Qiskit's primitives' run their work in a thread pool while the caller waits on ``result``:
#: what the call hands a pool is the task's work, charged to it from the pool's thread.
submitting: contextvars.ContextVar[llqm_core.TaskHandle | None] = contextvars.ContextVar(
    "llqm_qiskit_submitting", default=None
)


def wrap_pool_submit(original: Callable[..., Any]) -> Callable[..., Any]:
    """``ThreadPoolExecutor.submit``: work submitted for an ``execute`` task is charged to it."""

    def submit(executor: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        handle = submitting.get()
        if handle is not None:
            fn = _charged_to(handle, fn)
        return original(executor, fn, *args, **kwargs)

    return submit


def _charged_to(handle: llqm_core.TaskHandle, fn: Callable[..., Any]) -> Callable[..., Any]:
    def work(*args: Any, **kwargs: Any) -> Any:
        # charged before the job's future is done: its ``result`` finds the CPU counted
        with handle.worker():
            return fn(*args, **kwargs)

    return work


def snapshot_of(backend: Any) -> llqm_core.HardwareSnapshot | None:
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
    return found if isinstance(found, llqm_core.HardwareSnapshot) else None


def pub_circuits(pubs: Any) -> list[QuantumCircuit]:
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


def primitive_backend(primitive: Any) -> Any:
    for attribute in ("_backend", "backend", "_mode", "mode"):
        try:
            backend = getattr(primitive, attribute, None)
        except Exception:
            continue
        if hasattr(type(backend), "target"):  # the class's: Aer builds a target on each read
            return backend
    return None


class PendingJobs:
    """The ``execute`` task of each submitted job until its result is read."""

    def __init__(self) -> None:
        self.tasks: dict[int, tuple[Any, llqm_core.TaskHandle, bool, Any]] = {}

    def add(self, job: Any, handle: llqm_core.TaskHandle, owned: bool, loop: Any = None) -> None:
        """``loop``: the Estimator loop the job belongs to (``loops.estimator_call``), if any."""
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
                handle.finish()
        self.tasks.clear()


def failing_ends(
    handle: llqm_core.TaskHandle, owned: bool, call: Callable[..., Any], *args: Any, **kwargs: Any
) -> Any:
    """``call(*args, **kwargs)``; an exception ends the task (where it is this job's own) and goes on."""
    try:
        return call(*args, **kwargs)
    except BaseException as exc:
        if owned:
            handle.finish(exc)
        raise


def job_usage(job: Any, result: Any) -> tuple[float | None, float | None, dict[str, Any]]:
    """QPU and queue seconds the job reports (IBM's job metrics), and what else it reports.

    A ``Result`` with ``time_taken`` comes from a simulator (Aer, Qiskit's BasicSimulator, a
    fake backend): its seconds are the simulator's CPU work, never QPU seconds (as the
    pipelines' ``execute.simulate`` tasks count them); ``describe`` keeps them as
    ``result.backend_time_s``."""
    if hasattr(job, "metrics") and callable(job.metrics):
        from ..backends.ibm_usage import spans_summary, usage_from_metrics

        try:
            queue_s, qpu_s, details = usage_from_metrics(job.metrics())
        except Exception:  # a job that cannot tell its metrics still gave its result
            queue_s, qpu_s, details = None, None, {}
        metadata = getattr(result, "metadata", None)
        execution = metadata.get("execution") if isinstance(metadata, dict) else None
        if isinstance(execution, dict):
            details |= spans_summary(execution.get("execution_spans"))
        return qpu_s, queue_s, details
    return None, None, {}


def result_shots(result: Any) -> int | None:
    if isinstance(result, PrimitiveResult):
        shots = [getattr(pub, "metadata", {}).get("shots") for pub in result]
        return sum(s for s in shots if isinstance(s, int)) or None
    return None
