"""Profiling task runs that Prefect sends to other processes: its process pool and Dask workers.

More in docs/modules.md (``llqm_prefect.workers``).
"""

from __future__ import annotations

import socket
import threading
from contextlib import nullcontext
from typing import Any

import prefect.task_engine
import prefect.task_runners
from opentelemetry import trace
from prefect.context import FlowRunContext

import llqm_core
from llqm_core.model.errors import warn
from llqm_core.telemetry.tracing import telemetry

_ORIGINAL_RUN_IN_SUBPROCESS = getattr(
    prefect.task_runners._run_task_in_subprocess,
    "__wrapped__",
    prefect.task_runners._run_task_in_subprocess,
)
_attached: dict[tuple[str, Any], llqm_core.ActiveRun] = {}
_attached_lock = threading.Lock()
_missing: set[tuple[str, Any]] = set()


_ORIGINAL_RUN_SYNC = getattr(
    prefect.task_engine.run_task_sync, "__wrapped__", prefect.task_engine.run_task_sync
)
_ORIGINAL_RUN_ASYNC = getattr(
    prefect.task_engine.run_task_async, "__wrapped__", prefect.task_engine.run_task_async
)


def instrument_this_process() -> None:
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
    if context is not None:  # Dask hands the engine Prefect's context serialized
        joined = attached_run((context or {}).get("flow_run_context"))
    else:  # the process pool has hydrated it already
        joined = attached_run(FlowRunContext.get())
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
    instrument_this_process()
    return _ORIGINAL_RUN_IN_SUBPROCESS(*args, **kwargs)


run_task_in_subprocess.__wrapped__ = _ORIGINAL_RUN_IN_SUBPROCESS  # type: ignore[attr-defined]


OPTIONS_ATTRIBUTE = "__llqm_options__"
#: Keys under which the adapter records Prefect's ids: in a run's config, in a task's metrics.
FLOW_RUN_ID = "prefect.flow_run_id"
TASK_RUN_ID = "prefect.task_run_id"


def _flow_run_parts(context: Any) -> tuple[Any, Any]:
    """The flow and flow run id of a Prefect flow run context, hydrated or serialized."""
    if context is None:
        return None, None
    if isinstance(context, dict):
        flow, flow_run = context.get("flow"), context.get("flow_run")
    else:
        flow, flow_run = getattr(context, "flow", None), getattr(context, "flow_run", None)
    flow_run_id = (
        flow_run.get("id") if isinstance(flow_run, dict) else getattr(flow_run, "id", None)
    )
    return flow, flow_run_id


def attached_run(flow_run_context: Any) -> llqm_core.ActiveRun | None:
    """The LLQM run of a profiled flow run, joined from a worker; None for any other flow."""
    flow, flow_run_id = _flow_run_parts(flow_run_context)
    options = getattr(getattr(flow, "fn", None), OPTIONS_ATTRIBUTE, None)
    if options is None or flow_run_id is None or options["store"] is False:
        return None
    key = (str(flow_run_id), options["store"])
    with _attached_lock:
        if key not in _attached:
            joined = _join(str(flow_run_id), options["store"])
            if joined is None:
                return None
            if options.get("instrument", True):
                from llqm_core.runtime.instrumentation import instrument_all

                instrument_all()
            from .instrument import bind_run

            bind_run(joined, options["stages"])
            _attached[key] = joined
        return _attached[key]


def _join(flow_run_id: str, store: Any) -> llqm_core.ActiveRun | None:
    """Join the flow run's LLQM run: as the Dask cluster was told it, else from ``store``."""
    from .dask_runs import in_dask_worker, worker_store

    published = worker_store(flow_run_id)
    if published is not None:
        return llqm_core.ActiveRun.attach(*published)
    if in_dask_worker():  # the flow run is over (a task left behind): its store may not be here
        return None
    opened = llqm_core.open_store(store)
    run = opened.find_run(FLOW_RUN_ID, flow_run_id)
    if run is not None:
        return llqm_core.ActiveRun.attach(run, opened)
    if (flow_run_id, store) not in _missing:
        _missing.add((flow_run_id, store))
        warn(
            f"the LLQM run of Prefect flow run {flow_run_id} is not in the store {opened.name} on "
            f"{socket.gethostname()}, so its tasks that run here are not profiled.",
            stacklevel=2,
        )
    return None


def forget_attached(flow_run_id: str) -> None:
    """Let go of a flow run's LLQM run in this worker once the flow run is over."""
    with _attached_lock:
        for key in [key for key in _attached if key[0] == flow_run_id]:
            del _attached[key]
