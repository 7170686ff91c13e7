"""Profiling any code without a workflow engine: ``run`` opens a Run, ``task`` makes a Task.

``start_task`` / ``finish_task`` are the same machinery split in two, for adapters whose
engine reports a task's start and end in separate callbacks.
"""

from __future__ import annotations

import functools
import inspect
import os
import random
import time
import traceback
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from ..hooks.plugins import loaded_plugins
from ..model import display
from ..model.hardware import MONITOR_STAGE
from ..model.records import (
    HardwareSnapshot,
    PolicyDecision,
    Profile,
    RunRecord,
    RunStatus,
    TaskRecord,
    TaskStatus,
)
from ..model.secrets import redact, redact_text
from ..store.journal import Owner
from ..store.profile_store import ProfileStore, open_store
from ..telemetry.attributes import RESERVED_METRICS, check_metrics, run_attributes
from ..telemetry.task_spans import child_context
from ..telemetry.tracing import telemetry
from .measure import HOST, Measurement
from .monitor import HardwareMonitor
from .sampler import set_sample_interval

_current_run: ContextVar[ActiveRun | None] = ContextVar("llqm_current_run", default=None)
_current_task: ContextVar[TaskHandle | None] = ContextVar("llqm_current_task", default=None)

StoreArg = ProfileStore | str | os.PathLike | None | bool
_NUMBERS, _STRINGS = frozenset({int, float}), frozenset({str})


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


def _status_for(exc: BaseException | None) -> TaskStatus:
    if exc is None:
        return TaskStatus.COMPLETED
    return TaskStatus.FAILED if isinstance(exc, Exception) else TaskStatus.INTERRUPTED


def _describe_error(exc: BaseException) -> tuple[str, str]:
    kind = type(exc)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    return name, redact_text(str(exc)) or name


class ActiveRun:
    """A run that is open in this process: tasks started while it is current belong to it."""

    def __init__(
        self,
        name: str,
        store: StoreArg = None,
        config: dict[str, Any] | None = None,
        *,
        adopt_span: bool = False,
    ) -> None:
        self.name = name
        self.adopt_span = adopt_span
        self.store = _resolve_store(store)
        self.config = redact(dict(config or {}))
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
            resource=redact(tel.resource_attributes),
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
        handle = start_task("hardware monitor", MONITOR_STAGE, run=self, activate=False)
        handle.record.start_ns = monitor.started_ns
        handle.annotate(cost.metrics())
        measured = Profile(
            wall_s=cost.wall_s,
            cpu_s=cost.cpu_s,
            cpu_scope="thread",
            thread_cpu_s=cost.cpu_s,
            pid=os.getpid(),
            host=HOST,
        )
        finish_task(handle, measured=measured)
        self.monitor = None

    def finish(self, exc: BaseException | None = None) -> None:
        self._stop_monitor()
        record = self.record
        record.status = RunStatus(_status_for(exc).value)
        if exc is not None:
            kind, message = _describe_error(exc)
            record.error = f"{kind}: {message}"
            if record.span_owned:
                self.span.set_status(Status(StatusCode.ERROR, record.error))
        record.end_ns = time.time_ns()
        self.task_spans.build_pending()  # the run's task spans reach the exporters with the run's own
        if record.span_owned:
            self.span.end(end_time=record.end_ns)
        if self.store is not None:
            self.store.finish_run(record)
        self.plugins.call_each("llqm_run_finished", run=record)

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
            described = redact(check_metrics(self.plugins.describe_value(value)))
            self._descriptions.put(value, described)  # untrackable values are described each time
        return described

    def remember_description(self, value: Any, metrics: dict[str, Any]) -> None:
        """Keep ``metrics`` as what the plugins say of ``value``: a plugin that measured the value
        already (a transpile's output, from the DAG it came from) spares describing it again."""
        self._descriptions.put(value, redact(check_metrics(metrics)))

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
            and (current := _current_task.get()) is not None
            and current.run is self
        ):
            decision.task_id = current.id
        if self.store is not None:
            self.store.save_decision(decision)
        return decision


class _ByIdentity:
    """Payloads kept for values by identity (circuits and counts compare or hash by content, or
    not at all), each forgotten when its value is garbage-collected."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, Any]] = {}

    def get(self, value: Any) -> Any:
        entry = self._entries.get(id(value))
        return entry[1] if entry is not None and entry[0]() is value else None

    def put(self, value: Any, payload: Any) -> None:
        """Keep ``payload`` for ``value``; values that cannot be weakly referenced are not kept."""
        key = id(value)

        def forget(dead: weakref.ref, key: int = key) -> None:
            if self._entries.get(key, (None,))[0] is dead:
                self._entries.pop(key, None)

        try:
            self._entries[key] = (weakref.ref(value, forget), payload)
        except TypeError:
            pass


def _flatten(value: Any) -> list[Any]:
    """The value itself and, for a list, tuple or dict, its items: what a task may hand on."""
    if isinstance(value, (list, tuple)):
        return [value, *value]
    if isinstance(value, dict):
        return [value, *value.values()]
    return [value]


class TaskHandle:
    """The face of a running task: add metrics, usage, hardware and dependencies to it."""

    __slots__ = (
        "run",
        "record",
        "span",
        "parent_span",
        "owns_run",
        "measurement",
        "_tokens",
        "__weakref__",
    )

    def __init__(
        self,
        run: ActiveRun,
        record: TaskRecord,
        span: trace.Span | None,
        parent_span: trace.SpanContext,
        owns_run: bool,
    ) -> None:
        self.run = run
        self.record = record
        # Stands for the task in the trace while spans are read; its real span is built once it ends.
        self.span = span
        self.parent_span = parent_span
        self.owns_run = owns_run
        self.measurement: Measurement  # made last at the start: LLQM's bookkeeping is not measured
        self._tokens: tuple | None = None

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def span_context(self) -> trace.SpanContext:
        """The task's place in the trace: the context its span has (or will have, once built)."""
        return child_context(self.parent_span, int(self.record.span_id, 16))

    def __enter__(self) -> TaskHandle:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        """``with start_task(...) as handle:`` finishes the task, failed if the block raised."""
        finish_task(self, exc)

    def record_output(self, value: Any) -> None:
        """Describe the task's result through the plugins, and remember it so that the tasks
        it is handed to record this one in their ``depends_on``."""
        self.describe(value)
        self.run.note_output(value, self.id)

    def annotate(self, metrics: dict[str, Any] | None = None, /, **more: Any) -> TaskHandle:
        """Record domain metrics: ``annotate(shots=4000)`` or ``annotate({"circuit.qubits": 5})``."""
        values = redact(check_metrics({**(metrics or {}), **more}))
        self.record.metrics.update(values)
        return self

    def annotate_numbers(self, metrics: dict[str, int | float]) -> TaskHandle:
        """Record metrics that are all numbers under names a plugin made (a transpile's per-pass
        seconds): a number carries no secret, so only the types are checked, which keeps a
        hundred metrics off a short task's path; anything else goes through ``annotate``."""
        if (
            _NUMBERS.issuperset(map(type, metrics.values()))
            and _STRINGS.issuperset(map(type, metrics))
            and RESERVED_METRICS.isdisjoint(metrics)
        ):
            self.record.metrics.update(metrics)
            return self
        return self.annotate(metrics)

    def describe(self, value: Any) -> dict[str, Any]:
        """Record the metrics that plugins know for ``value`` (a circuit, a result, ...)."""
        metrics = self.run.description(value)  # checked and redacted already
        if metrics:
            self.record.metrics.update(metrics)
        return metrics

    def record_usage(self, *, qpu_s: float | None = None, queue_s: float | None = None) -> None:
        """Add QPU or queue seconds that a backend reported for work done in this task."""
        profile = self.record.profile
        for field, value in (("qpu_s", qpu_s), ("queue_s", queue_s)):
            if value is None:
                continue
            if value < 0:
                raise ValueError(f"{field} must be 0 or more seconds, not {value!r}.")
            setattr(profile, field, (getattr(profile, field) or 0.0) + float(value))

    def use_hardware(self, snapshot: HardwareSnapshot) -> str:
        """Name the calibration this task depended on; the snapshot is kept in the store once."""
        fingerprint = snapshot.fingerprint
        if self.run.store is not None:
            self.run.store.save_snapshot(snapshot)
        self.record.hardware = fingerprint
        return fingerprint

    def add_dependency(self, *tasks: TaskHandle | str) -> None:
        """Record that this task consumed the output of ``tasks``."""
        for dep in _task_ids(tasks):
            if dep not in self.record.depends_on:
                self.record.depends_on.append(dep)


def _task_ids(tasks: Iterable[TaskHandle | str]) -> list[str]:
    ids = []
    for item in tasks:
        if isinstance(item, TaskHandle):
            ids.append(item.id)
        elif isinstance(item, str) and item:
            ids.append(item)
        else:
            raise TypeError(
                f"depends_on takes task handles or task id strings, not {type(item).__name__}."
            )
    return ids


def start_task(
    name: str,
    stage: str | None = None,
    depends_on: Iterable[TaskHandle | str] = (),
    *,
    parent: TaskHandle | None = None,
    run: ActiveRun | None = None,
    activate: bool = True,
) -> TaskHandle:
    """Open a task and start measuring it; pair with ``finish_task`` (or use the handle in a
    ``with`` block, which finishes it).

    With ``activate`` the task becomes the current one (tasks started inside it are its
    children, and its span is the current OpenTelemetry span); leave it False when the task
    will be finished from another thread or callback than the one that started it.
    """
    if not name:
        raise ValueError("a task needs a non-empty name.")
    owns_run = False
    current_run = _current_run.get()
    if run is None:
        run = current_run
    if run is None:
        run, owns_run = ActiveRun(name).start(), True
    if parent is None and (current := _current_task.get()) is not None and current.run is run:
        parent = current
    if parent is not None:
        parent_span = parent.span_context
        parent_span_id = parent.record.span_id if parent_span.is_valid else None
    elif (
        otel_context.get_current() is run.otel_context
    ):  # nothing made another span current since the run did
        parent_span, parent_span_id = run.span_context, run.span_id_for_tasks
    else:
        parent_span, parent_span_id = run.parent_for_task()
    spans = run.task_spans
    span_id = random.getrandbits(64) or 1
    # Spans that code inside the task starts name it as their parent only where a span is read at
    # all: else no placeholder is made, and the OpenTelemetry context is left as it is.
    span = spans.placeholder(parent_span, span_id) if activate and spans.reading else None
    task_id = format(
        span_id, "016x"
    )  # a task is named by its span's id: the trace and the store name it alike
    run_record = run.record
    record = TaskRecord(
        id=task_id,
        run_id=run_record.id,
        name=name,
        stage=stage or name,
        status=TaskStatus.RUNNING,
        start_ns=time.time_ns(),
        trace_id=run_record.trace_id,
        span_id=task_id,
        parent_id=parent.record.id if parent is not None else None,
        depends_on=list(dict.fromkeys(_task_ids(depends_on))) if depends_on else [],
        parent_span_id=parent_span_id,
    )
    handle = TaskHandle(run, record, span, parent_span, owns_run)
    if run.store is not None:
        run.store.start_task(record)
    if activate:
        handle._tokens = (
            otel_context.attach(trace.set_span_in_context(span)) if span is not None else None,
            _current_task.set(handle),
            _current_run.set(run) if run is not current_run else None,
        )
    handle.measurement = Measurement()
    return handle


def finish_task(
    handle: TaskHandle,
    exc: BaseException | None = None,
    *,
    cached: bool = False,
    timed: tuple[int, int, Profile] | None = None,
    measured: Profile | None = None,
) -> TaskRecord:
    """Stop measuring, end the span and keep the finished task in the store. A ``cached`` task
    did no work (see ``record_cached_task``): it ends where it started and costs nothing. A
    ``timed`` task was measured by its caller, (start_ns, end_ns, profile): see
    ``record_past_task``. A task ``measured`` by other means (the hardware monitor's, across its
    readings) keeps that profile."""
    record = handle.record
    reported = record.profile  # what backends reported while the task ran (``record_usage``)
    record.profile = handle.measurement.stop(reported.qpu_s, reported.queue_s)
    if measured is not None:
        record.profile = measured
    record.end_ns = time.time_ns()
    if timed is not None:
        record.start_ns, record.end_ns, record.profile = timed
    if cached:
        where = record.profile
        record.profile = Profile(pid=where.pid, host=where.host, thread=where.thread)
        record.end_ns = record.start_ns
        record.status = TaskStatus.CACHED
    elif exc is None:
        record.status = TaskStatus.COMPLETED
    else:
        record.status = _status_for(exc)
        record.error_type, record.error = _describe_error(exc)
    if handle._tokens is not None:
        token_context, token_task, token_run = handle._tokens
        if token_run is not None:
            _current_run.reset(token_run)
        _current_task.reset(token_task)
        if token_context is not None:
            otel_context.detach(token_context)
        handle._tokens = None
    stacktrace = redact_text("".join(traceback.format_exception(exc))) if exc is not None else None
    if handle.run.monitor is not None:
        handle.run.monitor.mark(record)
    spans = handle.run.task_spans
    if spans.reading:
        spans.ended(record, handle.parent_span, stacktrace)
    if handle.run.store is not None:
        handle.run.store.finish_task(record)
    plugins = handle.run.plugins
    if plugins.observes_tasks:
        plugins.call_each("llqm_task_finished", task=record)
    if handle.owns_run:
        handle.run.finish(exc)
    return record


def record_cached_task(
    name: str,
    stage: str | None = None,
    depends_on: Iterable[TaskHandle | str] = (),
    *,
    run: ActiveRun | None = None,
    metrics: dict[str, Any] | None = None,
) -> TaskRecord:
    """Keep a task that a workflow engine served from its cache instead of running it: status
    ``cached``, no cost of its own, its place among the tasks (``depends_on``; tasks may depend
    on it by its id) and ``metrics`` saying where its result came from (``cache.key``,
    ``cache.source_run``, ``cache.saved_wall_s``, ...)."""
    handle = start_task(name, stage, depends_on, run=run, activate=False)
    handle.annotate(metrics or {})
    return finish_task(handle, cached=True)


def record_past_task(
    name: str,
    stage: str | None = None,
    *,
    parent: TaskHandle,
    start_ns: int,
    end_ns: int,
    profile: Profile,
    metrics: dict[str, Any] | None = None,
) -> TaskRecord:
    """Keep a task under ``parent`` that has already ended, timed by its caller: a step that
    looked too short to be worth measuring live (a stage of a transpile that began small) and
    turned out to belong to a long one. ``profile`` is what the caller measured of it."""
    handle = start_task(name, stage, parent=parent, run=parent.run, activate=False)
    handle.annotate(metrics or {})
    return finish_task(handle, timed=(start_ns, end_ns, profile))


#: The tasks that ``with task(...)`` blocks opened in this context (thread or asyncio task),
#: innermost last: one ``task(...)`` object may be entered in many threads at once.
_entered: ContextVar[tuple[TaskHandle, ...]] = ContextVar("llqm_entered_tasks", default=())


class TaskSpec:
    """What ``task(...)`` returns: a context manager, and a decorator making each call a task.

    It holds no state of its own between ``__enter__`` and ``__exit__``: the handle it opened
    is kept per context, so one object can serve every thread that enters it."""

    __slots__ = ("name", "stage", "depends_on")  # one is made at every ``with task(...)``

    def __init__(
        self, name: str | None, stage: str | None, depends_on: Iterable[TaskHandle | str]
    ) -> None:
        self.name = name
        self.stage = stage
        self.depends_on = tuple(depends_on)  # the default ``()`` is kept as it is

    def __enter__(self) -> TaskHandle:
        name = self.name or self.stage
        if not name:
            raise ValueError("task() used as a context manager needs a name (or a stage).")
        handle = start_task(name, self.stage, self.depends_on)
        _entered.set((*_entered.get(), handle))
        return handle

    def __exit__(self, exc_type, exc, tb) -> None:
        *outer, handle = _entered.get()
        _entered.set(tuple(outer))
        finish_task(handle, exc)

    def __call__(self, fn: Callable) -> Callable:
        name = self.name or getattr(fn, "__name__", None) or repr(fn)
        stage, depends_on = self.stage, self.depends_on

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async_task(*args: Any, **kwargs: Any) -> Any:
                with _start_call(name, stage, depends_on, args, kwargs) as handle:
                    result = await fn(*args, **kwargs)
                    handle.record_output(result)
                return result

            return run_async_task

        @functools.wraps(fn)
        def run_task(*args: Any, **kwargs: Any) -> Any:
            with _start_call(name, stage, depends_on, args, kwargs) as handle:
                result = fn(*args, **kwargs)
                handle.record_output(result)
            return result

        return run_task


def _start_call(
    name: str, stage: str | None, depends_on: tuple, args: tuple, kwargs: dict
) -> TaskHandle:
    """Start a decorated call; arguments that earlier tasks of the run returned become dependencies."""
    active = _current_run.get()
    found = active.producers([*args, *kwargs.values()]) if active is not None else []
    return start_task(name, stage, [*depends_on, *found])


def task(
    name: str | Callable | None = None,
    *,
    stage: str | None = None,
    depends_on: Iterable[TaskHandle | str] = (),
) -> Any:
    """Make a block (``with task("fold", stage="mitigate.zne.fold") as t:``) or every call of a
    function (``@task`` / ``@task(stage="transpile")``) an LLQM task.

    ``stage`` is a dotted name such as ``transpile.layout`` (default: the task's name);
    ``depends_on`` lists the tasks (handles or ids) whose outputs this one consumes. Outside
    any open run, the task opens a run of its own. A decorated function's return value is
    described by the plugins (``llqm_describe_value``) and its metrics kept.
    """
    if callable(name):
        return TaskSpec(None, stage, depends_on)(name)
    return TaskSpec(name, stage, depends_on)


@contextmanager
def run(
    name: str,
    store: StoreArg = None,
    *,
    config: dict[str, Any] | None = None,
    sample_interval: float | None = None,
    adopt_span: bool = False,
) -> Iterator[ActiveRun]:
    """Open a Run: every task started inside belongs to it, and it ends completed, failed or interrupted.

    ``store`` is a path, a ``ProfileStore``, None for the default store (``LLQM_STORE`` or
    ``~/.local/share/llqm/profiles.sqlite``), or False to keep nothing but the spans. With
    ``adopt_span`` a workflow engine's current span (a Prefect flow run's) stands for the run
    instead of a span of LLQM's own, so the trace holds no duplicate of it.
    """
    if not name:
        raise ValueError("a run needs a non-empty name.")
    if sample_interval is not None:
        set_sample_interval(sample_interval)
    active = ActiveRun(name, store, config, adopt_span=adopt_span).start()
    try:
        with run_context(active):
            yield active
    except BaseException as exc:
        active.finish(exc)
        raise
    active.finish()


@contextmanager
def run_context(active: ActiveRun) -> Iterator[ActiveRun]:
    """Make an open run current in this thread (threads do not inherit it), e.g. in a worker thread."""
    active.otel_context = context = trace.set_span_in_context(active.span)
    tokens = (otel_context.attach(context), _current_run.set(active), _current_task.set(None))
    try:
        yield active
    finally:
        _restore(tokens)


def _restore(tokens: tuple) -> None:
    token_context, token_run, token_task = tokens
    _current_task.reset(token_task)
    _current_run.reset(token_run)
    otel_context.detach(token_context)


def current_run() -> ActiveRun | None:
    return _current_run.get()


def current_task() -> TaskHandle | None:
    return _current_task.get()


def annotate(metrics: dict[str, Any] | None = None, /, **more: Any) -> None:
    """Add metrics to the current task, from any depth of the code it calls."""
    handle = _current_task.get()
    if handle is None:
        raise RuntimeError(
            "llqm_core.annotate() was called outside any task; wrap the code in llqm_core.task(...)."
        )
    handle.annotate(metrics, **more)
