"""An open run (``ActiveRun``): its record, span, store, hardware monitor and what its tasks made.

Tasks started while it is current belong to it (``runtime.tasks``); ``runtime.api`` opens it.
"""

from __future__ import annotations

import os
import time
import uuid
import weakref
from collections.abc import Iterable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from ..hooks.plugins import loaded_plugins
from ..model import display
from ..model.detail import CONFIG_KEY, FULL, run_detail
from ..model.errors import Ending
from ..model.hardware import MONITOR_STAGE
from ..model.memory_limits import memory_limits
from ..model.records import (
    PolicyDecision,
    Profile,
    RunRecord,
    RunStatus,
)
from ..model.secrets import redact
from ..store.journal import Owner
from ..store.profile_store import ProfileStore, open_store
from ..telemetry.attributes import checked_metrics, run_attributes
from ..telemetry.tracing import telemetry
from .iterations import USER, IterationMarks
from .iterations import record as record_iteration
from .kept import KeptResults, cap_bytes, default_cap
from .measure import HOST
from .monitor import HardwareMonitor
from .tasks import CURRENT_TASK, begin_task, describe_error, finish_task, status_for
from .warmup import install as time_warmups

StoreArg = ProfileStore | str | os.PathLike | None | bool


def _hex(value: int, width: int) -> str:
    return format(value, f"0{width}x")


def _resolve_store(store: StoreArg) -> ProfileStore | None:
    if store is False:
        return None
    if isinstance(store, ProfileStore):
        return store
    if store is None or store is True:
        return open_store()
    return open_store(store)


class ActiveRun:
    """A run that is open in this process: tasks started while it is current belong to it."""

    def __init__(
        self,
        name: str,
        store: StoreArg = None,
        config: dict[str, Any] | None = None,
        *,
        adopt_span: bool = False,
        keep_results: Any = None,
        detail: str | None = None,
    ) -> None:
        self.name = name
        self.adopt_span = adopt_span
        self.store = _resolve_store(store)
        self.config = redact(dict(config or {}))
        self.detail = run_detail(detail, self.config)  # what instrumented calls record
        self.full_detail = self.detail == FULL
        if not self.full_detail:
            self.config[CONFIG_KEY] = self.detail
        self.record: RunRecord  # made by ``start`` (or ``attach``)
        self.otel_context: otel_context.Context | None = (
            None  # what ``run_context`` made current last
        )
        self.task_spans = (
            telemetry().task_spans
        )  # the process's, kept at hand: every task's start and end use it
        self.plugins = loaded_plugins()  # those loaded when the run opened serve it to its end
        self._outputs = _ByIdentity()  # value -> id of the task that produced it
        self._descriptions = _ByIdentity()  # value -> what the plugins said of it
        self.monitor: HardwareMonitor | None = None  # made when a backend is first watched
        self._iterations: IterationMarks | None = None  # made at the first mark
        self._start_cpu = time.process_time()  # where the first iteration's CPU seconds start
        if keep_results is None:  # a pipeline file's ``[output] keep_results``, on every engine
            output = self.config.get("output")
            keep_results = output.get("keep_results") if isinstance(output, dict) else None
        self.kept = KeptResults(
            default_cap(self.full_detail) if keep_results is None else cap_bytes(keep_results)
        )

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def trace_id(self) -> str:
        return self.record.trace_id

    @classmethod
    def attach(cls, run: RunRecord | str, store: StoreArg = None) -> ActiveRun:
        """Join a run that another process opened (a worker running some of its tasks), given
        its record or its id in ``store``.

        Tasks started here belong to that run and its trace; the run is ended by its owner."""
        resolved = _resolve_store(store)
        if resolved is None:
            raise ValueError("attaching to a run needs the store that holds it.")
        record = run if isinstance(run, RunRecord) else resolved.run(run)
        joined = cls(record.name, resolved, record.config)
        time_warmups()
        joined.record = record
        joined._use_span(
            trace.NonRecordingSpan(
                trace.SpanContext(
                    int(record.trace_id, 16),
                    int(record.span_id, 16),
                    is_remote=True,
                    trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
                )
            )
        )
        return joined

    def _use_span(self, span: trace.Span) -> None:
        """Let ``span`` stand for the run: its context is kept, as every task's start asks for it."""
        self.span = span
        self.span_context = context = span.get_span_context()
        self.span_id_for_tasks = _hex(context.span_id, 16) if context.is_valid else None

    def parent_for_task(self) -> tuple[trace.SpanContext, str | None]:
        """The span under which a task started outside any other task goes, and its id as the
        store keeps it: a workflow engine's span current inside this run's trace, else the run's."""
        current = trace.get_current_span().get_span_context()
        if current.is_valid and current.trace_id == self.span_context.trace_id:
            return current, _hex(current.span_id, 16)
        return self.span_context, self.span_id_for_tasks

    def _repr_html_(self) -> str | None:
        """The run's report in a notebook cell (its tasks so far, while it runs)."""
        return display.html("run", self)

    def start(self) -> ActiveRun:
        time_warmups()
        tel = telemetry()
        current = trace.get_current_span()
        parent = current.get_span_context()
        start_ns = time.time_ns()
        adopted = self.adopt_span and parent.is_valid
        self._use_span(
            current if adopted else tel.tracer.start_span(self.name, start_time=start_ns)
        )
        context = self.span_context
        if adopted:
            parent = getattr(current, "parent", None) or trace.INVALID_SPAN_CONTEXT
        me = Owner.this_process()
        self.record = RunRecord(
            id=uuid.uuid4().hex,
            name=self.name,
            status=RunStatus.RUNNING,
            start_ns=start_ns,
            trace_id=_hex(context.trace_id, 32),
            span_id=_hex(context.span_id, 16),
            parent_span_id=_hex(parent.span_id, 16) if parent.is_valid else None,
            span_owned=not adopted,
            config=self.config,
            resource=redact(tel.resource_attributes) | memory_limits(),
            pid=me.pid,
            host=me.host,
            process_started=me.process_started,
            cpus=os.cpu_count(),
        )
        self.span.set_attributes(run_attributes(self.record))
        if self.store is not None:
            self.store.insert_run(self.record)
        self.plugins.call_each("llqm_run_started", run=self.record)
        return self

    def watch_hardware(self, source: Any, interval_s: float | None = None) -> HardwareMonitor:
        """Keep reading ``source``'s calibration while the run is open (see ``runtime.monitor``);
        the run's tasks then record the calibrations in force while they ran."""
        if self.monitor is None:
            self.monitor = HardwareMonitor(
                self.id,
                self.store,
                lambda change: self.plugins.call_each("llqm_hardware_changed", change=change),
            )
        self.monitor.watch(source, interval_s)
        return self.monitor

    def _stop_monitor(self) -> None:
        """Stop the hardware monitor and keep what it cost as a task of its own kind, in its own
        thread's time: wall and CPU seconds of its readings."""
        monitor = self.monitor
        if monitor is None:
            return
        cost = monitor.stop()
        handle = begin_task(self, "hardware monitor", MONITOR_STAGE, activate=False)
        handle.start_ns = monitor.started_ns
        handle.annotate(cost.metrics())
        measured = Profile(
            wall_s=cost.wall_s,
            cpu_s=cost.cpu_s,
            cpu_scope="thread",
            thread_cpu_s=cost.cpu_s,
            pid=os.getpid(),
            host=HOST,
            readings="light",  # its clocks alone: no memory reading of its own
        )
        finish_task(handle, measured=measured)
        self.monitor = None

    def finish(self, exc: BaseException | None = None) -> None:
        self._stop_monitor()
        record = self.record
        record.status = RunStatus(status_for(exc).value)
        if exc is not None:
            kind, message = describe_error(exc)
            record.error = message if isinstance(exc, Ending) else f"{kind}: {message}"
            if record.span_owned:
                self.span.set_status(Status(StatusCode.ERROR, record.error))
        record.end_ns = time.time_ns()
        self.task_spans.build_pending()  # the run's task spans reach the exporters with the run's own
        if record.span_owned:
            self.span.end(end_time=record.end_ns)
        if self.store is not None:
            self.store.finish_run(record)
        self.plugins.call_each("llqm_run_finished", run=record)

    def mark_iteration(
        self, value: Any = None, error: Any = None, parameters: Any = None, source: str = USER
    ) -> dict[str, Any]:
        """End an iteration of a closed loop (``runtime.iterations``); what was recorded."""
        if self._iterations is None:
            self._iterations = IterationMarks(self.record.start_ns, self._start_cpu)
        meta = self._iterations.mark(value, error, parameters, source)
        record_iteration(self, meta)
        return meta

    def note_output(self, value: Any, task_id: str) -> None:
        """Remember that ``task_id`` produced ``value`` (or each item of a returned list, tuple or dict)."""
        for item in _flatten(value):
            self._outputs.put(
                item, task_id
            )  # ints, strings and other untrackable values are skipped

    def description(self, value: Any) -> dict[str, Any]:
        """What the plugins say of ``value``: described once per run (a 10^7-gate circuit takes
        seconds), as it was when first described; later changes to the value are not seen. The
        metrics are checked and redacted once, as ``annotate`` would each time."""
        described = self._descriptions.get(value)
        if described is None:
            described = checked_metrics(self.plugins.describe_value(value))
            self._descriptions.put(value, described)  # untrackable values are described each time
        return described

    def remember_description(self, value: Any, metrics: dict[str, Any]) -> None:
        """Keep ``metrics`` as what the plugins say of ``value``: a plugin that measured the value
        already (a transpile's output, from the DAG it came from) spares describing it again."""
        self._descriptions.put(value, checked_metrics(metrics))

    def producers(self, values: Iterable[Any]) -> list[str]:
        """The tasks whose outputs appear among ``values`` (looking one level into lists,
        tuples and dicts)."""
        found: list[str] = []
        for value in values:
            for item in _flatten(value):
                task_id = self._outputs.get(item)
                if task_id is not None and task_id not in found:
                    found.append(task_id)
        return found

    def record_decision(self, decision: PolicyDecision) -> PolicyDecision:
        """Keep a policy's decision with this run (and with the current task, if any)."""
        decision.run_id = self.id
        if (
            decision.task_id is None
            and (current := CURRENT_TASK.get()) is not None
            and current.run is self
        ):
            decision.task_id = current.id
        if self.store is not None:
            self.store.save_decision(decision)
        return decision


class _KeyedRef(weakref.ref):
    """A weak reference that knows its entry's key: one callback serves every entry, no closure
    is made per value."""

    __slots__ = ("key",)
    key: int


class _ByIdentity:
    """Payloads kept for values by identity (circuits and counts compare or hash by content, or
    not at all), each forgotten when its value is garbage-collected."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, Any]] = {}
        self._forget = self._forget_dead  # one bound method for every reference

    def get(self, value: Any) -> Any:
        entry = self._entries.get(id(value))
        return entry[1] if entry is not None and entry[0]() is value else None

    def put(self, value: Any, payload: Any) -> None:
        """Keep ``payload`` for ``value``; values that cannot be weakly referenced are not kept."""
        try:
            ref = _KeyedRef(value, self._forget)
        except TypeError:
            return
        ref.key = key = id(value)
        self._entries[key] = (ref, payload)

    def _forget_dead(self, dead: weakref.ref) -> None:
        key = dead.key  # type: ignore[attr-defined]
        if self._entries.get(key, (None,))[0] is dead:
            self._entries.pop(key, None)


def _flatten(value: Any) -> list[Any]:
    """The value itself and, for a list, tuple or dict, its items: what a task may hand on."""
    if isinstance(value, (list, tuple)):
        return [value, *value]
    if isinstance(value, dict):
        return [value, *value.values()]
    return [value]
