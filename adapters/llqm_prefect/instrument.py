"""Every Prefect task run as an LLQM task, without touching the task's code, in any process.

Prefect's task engine calls each attempt of a task through
``prefect.task_engine.call_with_parameters(task.fn, parameters)``, inside the task run's
context and with Prefect's task span current. ``PrefectInstrumentor.instrument()`` wraps
that one function, as OpenTelemetry instrumentations wrap a library's entry point;
``uninstrument()`` puts it back. Both are idempotent. A worker process is instrumented by
``instrument_this_process``, which also starts each task run there in its flow run's trace.

More in docs/modules.md (``llqm_prefect.instrument``).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, ClassVar

import prefect.task_engine
import prefect.task_runners
from opentelemetry import trace
from prefect.context import FlowRunContext

from llqm_core.plugin import Instrumentor, telemetry

from .attach import attached_run
from .names import STAGE_TAG_PREFIX
from .task_runs import note_cached_task_run, profiled_call

__all__ = ["STAGE_TAG_PREFIX", "PrefectInstrumentor", "instrument_this_process"]

_ORIGINAL_RUN_IN_SUBPROCESS = getattr(
    prefect.task_runners._run_task_in_subprocess,
    "__wrapped__",
    prefect.task_runners._run_task_in_subprocess,
)
_ORIGINAL_RUN_SYNC = getattr(
    prefect.task_engine.run_task_sync, "__wrapped__", prefect.task_engine.run_task_sync
)
_ORIGINAL_RUN_ASYNC = getattr(
    prefect.task_engine.run_task_async, "__wrapped__", prefect.task_engine.run_task_async
)


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


def instrument_this_process() -> None:
    """In a worker: profile task runs, and start each one inside its flow run's trace."""
    telemetry()  # before Prefect opens its task span here, so both reach one tracer provider
    PrefectInstrumentor().instrument()
    prefect.task_engine.run_task_sync = run_task_sync
    prefect.task_engine.run_task_async = run_task_async


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
        self.patch(prefect.task_engine, "call_with_parameters", profiled_call)
        self.patch(
            prefect.task_runners,
            "_run_task_in_subprocess",
            lambda _original: run_task_in_subprocess,
        )
        telemetry().watch_ended_spans(note_cached_task_run)

    def _uninstrument(self) -> None:
        telemetry().watch_ended_spans(note_cached_task_run, on=False)
