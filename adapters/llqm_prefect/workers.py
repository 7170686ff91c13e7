"""Profiling task runs that Prefect sends to other processes: its process pool and Dask workers.

A worker process has none of the flow's in-process state, so what it needs travels with the
task run itself: the profiled flow tags every task run ``llqm.run:<id>`` (and
``llqm.store:<path>`` when the store is not the default one), and the worker joins that run
(``ActiveRun.attach``) in the store, under the task's Prefect span, in the flow run's trace.

Instrumentation reaches the workers by reference: the process pool pickles the function it
runs in the child by name, so the parent swaps Prefect's for ``run_task_in_subprocess``
below, which instruments the child first; Dask workers get a ``WorkerPlugin``.
"""

from __future__ import annotations

import threading
from contextlib import nullcontext
from typing import Any

import prefect.task_engine
import prefect.task_runners
from opentelemetry import trace
from prefect.context import TagsContext

import llqm_core
from llqm_core.telemetry import telemetry

RUN_TAG_PREFIX = "llqm.run:"
STORE_TAG_PREFIX = "llqm.store:"

_ORIGINAL_RUN_IN_SUBPROCESS = getattr(
    prefect.task_runners._run_task_in_subprocess, "__wrapped__", prefect.task_runners._run_task_in_subprocess
)
_attached: dict[tuple[str, str | None], llqm_core.ActiveRun] = {}
_attached_lock = threading.Lock()


_ORIGINAL_RUN_SYNC = getattr(prefect.task_engine.run_task_sync, "__wrapped__", prefect.task_engine.run_task_sync)
_ORIGINAL_RUN_ASYNC = getattr(prefect.task_engine.run_task_async, "__wrapped__", prefect.task_engine.run_task_async)


def _instrument_this_process() -> None:
    """In a worker: profile task runs, and start each one inside its flow run's trace."""
    from .instrument import PrefectInstrumentor

    telemetry()  # before Prefect opens its task span here, so both reach one tracer provider
    PrefectInstrumentor().instrument()
    prefect.task_engine.run_task_sync = run_task_sync
    prefect.task_engine.run_task_async = run_task_async


def _flow_trace(context: dict[str, Any] | None) -> Any:
    """The flow run's span as the current span, for a task run arriving in a worker.

    Prefect does not carry the trace into its process-pool and Dask workers (its task span
    there would start a trace of its own); with the flow's span current, Prefect's task span
    and LLQM's under it join the flow run's trace."""
    tags = ((context or {}).get("tags_context") or {}).get("current_tags")
    if tags is None:  # the process pool hydrates Prefect's context before calling the engine
        current = TagsContext.get()
        tags = current.current_tags if current is not None else ()
    joined = attached_run(list(tags))
    if joined is None or trace.get_current_span().get_span_context().is_valid:
        return nullcontext()
    return trace.use_span(joined.span, end_on_exit=False)


def run_task_sync(*args: Any, **kwargs: Any) -> Any:
    with _flow_trace(kwargs.get("context")):
        return _ORIGINAL_RUN_SYNC(*args, **kwargs)


async def run_task_async(*args: Any, **kwargs: Any) -> Any:
    with _flow_trace(kwargs.get("context")):
        return await _ORIGINAL_RUN_ASYNC(*args, **kwargs)


run_task_sync.__wrapped__ = _ORIGINAL_RUN_SYNC  # type: ignore[attr-defined]
run_task_async.__wrapped__ = _ORIGINAL_RUN_ASYNC  # type: ignore[attr-defined]


def run_task_in_subprocess(*args: Any, **kwargs: Any) -> Any:
    """Prefect's process-pool entry point, with this child process instrumented first."""
    _instrument_this_process()
    return _ORIGINAL_RUN_IN_SUBPROCESS(*args, **kwargs)


run_task_in_subprocess.__wrapped__ = _ORIGINAL_RUN_IN_SUBPROCESS  # type: ignore[attr-defined]


def run_tags(run: llqm_core.ActiveRun) -> list[str]:
    """The tags that let a worker find ``run``."""
    tags = [RUN_TAG_PREFIX + run.id]
    if run.store is not None and run.store.path.resolve() != llqm_core.default_store_path().resolve():
        tags.append(STORE_TAG_PREFIX + str(run.store.path.resolve()))
    return tags


def attached_run(tags: list[str]) -> llqm_core.ActiveRun | None:
    """The run a worker's task run belongs to, from its tags; None for a task of no profiled flow."""
    run_id = next((t[len(RUN_TAG_PREFIX):] for t in tags if t.startswith(RUN_TAG_PREFIX)), None)
    if run_id is None:
        return None
    store = next((t[len(STORE_TAG_PREFIX):] for t in tags if t.startswith(STORE_TAG_PREFIX)), None)
    with _attached_lock:
        key = (run_id, store)
        if key not in _attached:
            _attached[key] = llqm_core.ActiveRun.attach(run_id, store)
        return _attached[key]


try:
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # the 'dask' extra is not installed
    WorkerPlugin = object  # type: ignore[assignment,misc]


class InstrumentDaskWorkers(WorkerPlugin):  # type: ignore[misc,valid-type]
    """Instruments every Dask worker, present and future, of the flow's cluster."""

    name = "llqm-prefect"

    def setup(self, worker: Any) -> None:
        _instrument_this_process()


def instrument_task_runner(task_runner: Any) -> None:
    """Make sure the workers of the flow's task runner profile the task runs they execute."""
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        return
    if isinstance(task_runner, DaskTaskRunner):
        task_runner.client.register_plugin(InstrumentDaskWorkers(), name=InstrumentDaskWorkers.name)
