"""Every Prefect task run as an LLQM task, without touching the task's code.

Prefect's task engine calls each attempt of a task through
``prefect.task_engine.call_with_parameters(task.fn, parameters)``, inside the task run's
context and with Prefect's task span current. ``PrefectInstrumentor.instrument()`` wraps
that one function, as OpenTelemetry instrumentations wrap a library's entry point;
``uninstrument()`` puts it back. Both are idempotent.

More in docs/modules.md (``llqm_prefect.instrument``).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any, ClassVar

import prefect.task_engine
import prefect.task_runners
from prefect.client.schemas.objects import TaskRunResult
from prefect.context import FlowRunContext, TaskRunContext
from prefect.transactions import get_transaction

import llqm_core
import llqm_core.plugin
from llqm_core.analysis.summary import CACHE_KEY
from llqm_core.model.records import TaskRecord
from llqm_core.plugin import Instrumentor, recording
from llqm_core.store.relay import RelayStore
from llqm_core.telemetry.tracing import telemetry

from . import workers
from .workers import attached_run

STAGE_TAG_PREFIX = "llqm.stage:"


class FlowBinding:
    """What the adapter keeps for one profiled flow run: its stage names and, for each Prefect
    task run, the LLQM task of its latest attempt (so that a task receiving another task's
    result or future, as Prefect's ``task_run.task_inputs`` tells, records the dependency)."""

    def __init__(self, stages: dict[str, str]) -> None:
        self.stages = stages
        self.llqm_ids: dict[str, str] = {}
        self.lock = threading.Lock()


_bindings: dict[str, FlowBinding] = {}


def bind_run(run: llqm_core.ActiveRun, stages: dict[str, str]) -> None:
    _bindings[run.id] = FlowBinding(stages)


def forget_run(run: llqm_core.ActiveRun) -> None:
    _bindings.pop(run.id, None)


def stage_of(task_run_tags: list[str], task_name: str, stages: dict[str, str]) -> str:
    """A task's stage: its ``llqm.stage:NAME`` tag, else the flow decorator's ``stages`` map, else
    its name."""
    for tag in task_run_tags:
        if tag.startswith(STAGE_TAG_PREFIX) and len(tag) > len(STAGE_TAG_PREFIX):
            return tag[len(STAGE_TAG_PREFIX) :]
    return stages.get(task_name, task_name)


#: Metric of a task that a worker relays (``dask_runs``): the upstream task runs it could not
#: name, which the flow's process resolves and removes before keeping the task.
UPSTREAM_TASK_RUNS = "prefect.upstream_task_runs"


def _task_ids_of(
    active: llqm_core.ActiveRun, binding: FlowBinding, task_run_ids: list[str]
) -> dict[str, str]:
    """The LLQM task of each of these Prefect task runs that this process knows of: its own, or
    in the store (those that ran in other processes)."""
    with binding.lock:
        found = {i: binding.llqm_ids[i] for i in task_run_ids if i in binding.llqm_ids}
    elsewhere = [i for i in task_run_ids if i not in found]
    if elsewhere and active.store is not None:
        found |= active.store.task_ids_by_metric(active.id, workers.TASK_RUN_ID, elsewhere)
    return found


def _upstream(
    active: llqm_core.ActiveRun, binding: FlowBinding, task_run: Any
) -> tuple[list[str], dict[str, Any]]:
    """The LLQM tasks of the task runs whose results or futures ``task_run`` received and, in a
    worker that relays its rows, a metric naming those it cannot tell (``UPSTREAM_TASK_RUNS``)."""
    upstream_runs = [
        str(item.id)
        for inputs in (task_run.task_inputs or {}).values()
        for item in inputs
        if isinstance(item, TaskRunResult)
    ]
    found = _task_ids_of(active, binding, upstream_runs)
    unknown = [i for i in upstream_runs if i not in found]
    relayed = (
        {UPSTREAM_TASK_RUNS: unknown} if unknown and isinstance(active.store, RelayStore) else {}
    )
    return [found[i] for i in upstream_runs if i in found], relayed


def adopt_relayed_task(active: llqm_core.ActiveRun, task: TaskRecord) -> None:
    """In the flow's process, a task that a worker relayed: its upstream task runs become
    ``depends_on`` here, where every task of the run is known, and tasks that consume its
    result find it."""
    unknown = task.metrics.pop(UPSTREAM_TASK_RUNS, None)
    binding = _bindings.get(active.id)
    if binding is None:  # the run is over: nothing of it is left here to resolve against
        return
    if unknown:
        found = _task_ids_of(active, binding, list(unknown))
        task.depends_on += [i for i in found.values() if i not in task.depends_on]
    task_run = task.metrics.get(workers.TASK_RUN_ID)
    if task_run is not None:
        with binding.lock:
            binding.llqm_ids[str(task_run)] = task.id


def _start(
    context: TaskRunContext, active: llqm_core.ActiveRun, parameters: dict[str, Any]
) -> llqm_core.TaskHandle:
    task_run = context.task_run
    binding = _bindings.get(active.id) or FlowBinding({})
    upstream, relayed = _upstream(active, binding, task_run)
    stage = stage_of(list(task_run.tags or []), context.task.name, binding.stages)
    # Named after the task, not the task run: its span sits under Prefect's span of the task run.
    handle = llqm_core.plugin.start_task(
        context.task.name, stage, upstream + active.producers(parameters.values()), run=active
    )
    with recording("a Prefect task run", handle):
        _describe_task_run(handle, task_run, relayed, binding)
    return handle


def _describe_task_run(
    handle: llqm_core.TaskHandle, task_run: Any, relayed: dict[str, Any], binding: FlowBinding
) -> None:
    handle.annotate(
        {
            workers.TASK_RUN_ID: str(task_run.id),
            "prefect.task_run": task_run.name,
            "prefect.attempt": int(task_run.run_count or 1),
            **relayed,
        }
    )
    key = _cache_key()
    if key is not None:  # a later run that Prefect serves from its cache finds this one by it
        handle.annotate({CACHE_KEY: key})
    with binding.lock:
        binding.llqm_ids[str(task_run.id)] = handle.id


def _cache_key() -> str | None:
    """The key under which Prefect caches the current task run's result (its transaction's key)."""
    transaction = get_transaction()
    return None if transaction is None or transaction.key is None else str(transaction.key)


def note_cached_task_run(span: Any) -> None:
    """Watches Prefect's spans: a task run that Prefect served from its cache ran no code, so no
    LLQM task started for it; when its span ends (in its own thread, its context still current)
    it becomes an LLQM task with status ``cached``, no cost of its own, its place among the
    dependencies, the cache key, and the earlier task that computed the result (what it saved)."""
    if (span.attributes or {}).get("prefect.run.type") != "task":
        return
    context = TaskRunContext.get()
    if context is None or context.task_run is None or context.task_run.state_name != "Cached":
        return
    if str(context.task_run.id) != span.attributes.get("prefect.run.id"):
        return
    active = llqm_core.current_run() or attached_run(FlowRunContext.get())
    if active is None:
        return
    task_run = context.task_run
    binding = _bindings.get(active.id) or FlowBinding({})
    metrics: dict[str, Any] = {
        workers.TASK_RUN_ID: str(task_run.id),
        "prefect.task_run": task_run.name,
    }
    key = _cache_key()
    if key is not None:
        metrics[CACHE_KEY] = key
        source = (
            active.store.latest_task_with_metric(CACHE_KEY, key)
            if active.store is not None
            else None
        )
        if source is not None:
            metrics |= {
                "cache.source_run": source.run_id,
                "cache.source_task": source.id,
                "cache.saved_wall_s": source.profile.wall_s,
                "cache.saved_cpu_s": source.profile.cpu_s,
            }
    upstream, relayed = _upstream(active, binding, task_run)
    record = llqm_core.plugin.record_cached_task(
        context.task.name,
        stage_of(list(task_run.tags or []), context.task.name, binding.stages),
        upstream,
        run=active,
        metrics=metrics | relayed,
    )
    with binding.lock:
        binding.llqm_ids[str(task_run.id)] = record.id


def _profiled_call(original: Callable[..., Any]) -> Callable[..., Any]:
    def call_with_parameters(fn: Callable[..., Any], parameters: dict[str, Any]) -> Any:
        context = TaskRunContext.get()
        if context is None or fn is not context.task.fn:
            return original(fn, parameters)
        active = llqm_core.current_run() or attached_run(FlowRunContext.get())
        if active is None:
            return original(fn, parameters)
        if inspect.iscoroutinefunction(fn):
            return _async_call(original, fn, parameters, context, active)
        with _start(context, active, parameters) as handle:
            result = original(fn, parameters)
            with recording("a Prefect task's result", handle):
                handle.record_output(result, describe=handle.run.full_detail)
        return result

    call_with_parameters.__wrapped__ = original  # type: ignore[attr-defined]
    call_with_parameters._llqm_instrumented = True  # type: ignore[attr-defined]
    return call_with_parameters


async def _async_call(original, fn, parameters, context, active) -> Any:
    with _start(context, active, parameters) as handle:
        result = await original(fn, parameters)
        with recording("a Prefect task's result", handle):
            handle.record_output(result, describe=handle.run.full_detail)
    return result


class PrefectInstrumentor(Instrumentor):
    """Prefect's task engine profiled: each task run of a profiled flow an LLQM task. There is
    one per process, as there is one task engine: ``PrefectInstrumentor()`` returns it."""

    name = "prefect"
    library = "prefect"
    supported = ">=3.9,<4"
    _process: ClassVar[PrefectInstrumentor | None] = None

    def __new__(cls) -> PrefectInstrumentor:
        if cls._process is None:
            made = super().__new__(cls)
            Instrumentor.__init__(made)
            cls._process = made
        return cls._process

    def __init__(self) -> None:
        """The one instance was set up when it was made (``__new__``)."""

    def _instrument(self) -> None:
        self.patch(prefect.task_engine, "call_with_parameters", _profiled_call)
        self.patch(
            prefect.task_runners,
            "_run_task_in_subprocess",
            lambda _original: workers.run_task_in_subprocess,
        )
        telemetry().watch_ended_spans(note_cached_task_run)

    def _uninstrument(self) -> None:
        telemetry().watch_ended_spans(note_cached_task_run, on=False)
