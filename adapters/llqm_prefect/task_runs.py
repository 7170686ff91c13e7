"""Each attempt of a Prefect task run as an LLQM task: its stage, its Prefect ids, the tasks
it depends on, its result; and the task runs Prefect serves from its cache.

More in docs/modules.md (``llqm_prefect.instrument``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from prefect.client.schemas.objects import TaskRunResult
from prefect.context import FlowRunContext, TaskRunContext
from prefect.transactions import get_transaction

import llqm_core
import llqm_core.plugin
from llqm_core import TaskRecord
from llqm_core.plugin import CACHE_KEY, RelayStore, recording

from .attach import attached_run
from .bindings import FlowBinding, binding_of
from .names import STAGE_TAG_PREFIX, TASK_RUN_ID, UPSTREAM_TASK_RUNS


def stage_of(task_run_tags: list[str], task_name: str, stages: dict[str, str]) -> str:
    """A task's stage: its ``llqm.stage:NAME`` tag, else the flow decorator's ``stages`` map, else
    its name."""
    for tag in task_run_tags:
        if tag.startswith(STAGE_TAG_PREFIX) and len(tag) > len(STAGE_TAG_PREFIX):
            return tag[len(STAGE_TAG_PREFIX) :]
    return stages.get(task_name, task_name)


def _task_ids_of(
    active: llqm_core.ActiveRun, binding: FlowBinding, task_run_ids: list[str]
) -> dict[str, str]:
    """The LLQM task of each of these Prefect task runs that this process knows of: its own, or
    in the store (those that ran in other processes)."""
    with binding.lock:
        found = {i: binding.llqm_ids[i] for i in task_run_ids if i in binding.llqm_ids}
    elsewhere = [i for i in task_run_ids if i not in found]
    if elsewhere and active.store is not None:
        found |= active.store.task_ids_by_metric(active.id, TASK_RUN_ID, elsewhere)
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
    binding = binding_of(active.id)
    if binding is None:  # the run is over: nothing of it is left here to resolve against
        return
    if unknown:
        found = _task_ids_of(active, binding, list(unknown))
        task.depends_on += [i for i in found.values() if i not in task.depends_on]
    task_run = task.metrics.get(TASK_RUN_ID)
    if task_run is not None:
        with binding.lock:
            binding.llqm_ids[str(task_run)] = task.id


def _start(
    context: TaskRunContext, active: llqm_core.ActiveRun, parameters: dict[str, Any]
) -> llqm_core.TaskHandle:
    task_run = context.task_run
    binding = binding_of(active.id) or FlowBinding({})
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
            TASK_RUN_ID: str(task_run.id),
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
    binding = binding_of(active.id) or FlowBinding({})
    metrics: dict[str, Any] = {
        TASK_RUN_ID: str(task_run.id),
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


def profiled_call(original: Callable[..., Any]) -> Callable[..., Any]:
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
