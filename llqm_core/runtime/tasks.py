"""A task's life: ``start_task`` opens and measures it, ``finish_task`` ends it, keeps it in the
store and builds its span; ``TaskHandle`` is what code adds metrics, usage and dependencies to.
"""

from __future__ import annotations

import random
import time
import traceback
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

from ..model.counted_steps import STEPS, counted
from ..model.records import (
    HardwareSnapshot,
    KeptResult,
    Profile,
    TaskRecord,
    TaskStatus,
)
from ..model.secrets import redact_text
from ..model.warmup import LEFT_OUT_CPU, LEFT_OUT_WALL
from ..telemetry.attributes import RESERVED_METRICS, checked_metrics
from ..telemetry.task_spans import child_context
from .active_run import (
    ActiveRun,
    _current_run,
    _current_task,
    _describe_error,
    _status_for,
)
from .kept import LaterPayload
from .measure import Measurement

_NUMBERS, _STRINGS = frozenset({int, float, bool}), frozenset({str})


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
        values = checked_metrics({**(metrics or {}), **more})
        self.record.metrics.update(values)
        return self

    def annotate_numbers(self, metrics: dict[str, int | float]) -> TaskHandle:
        """Record metrics that are all numbers (or flags) under names a plugin made (a
        transpile's per-pass seconds): a number carries no secret, so only the types are
        checked, which keeps a hundred metrics off a short task's path; anything else goes
        through ``annotate``."""
        if (
            _NUMBERS.issuperset(map(type, metrics.values()))
            and _STRINGS.issuperset(map(type, metrics))
            and RESERVED_METRICS.isdisjoint(metrics)
        ):
            self.record.metrics.update(metrics)
            return self
        return self.annotate(metrics)

    def count_steps_later(self, run: tuple) -> None:
        """Keep a run of steps (``model.counted_steps``: a transpile's passes) as raw facts, to be
        counted into this task's metrics when its row is stored or its span built: counting
        forty passes and making their metrics was a fifth of a small transpile's task."""
        metrics = self.record.metrics
        runs = metrics.get(STEPS)
        if runs is None:
            metrics[STEPS] = [run]
        else:
            runs.append(run)

    def count_steps_now(self) -> None:
        """Count the runs of steps kept so far into the metrics: before metrics that add to them."""
        metrics = self.record.metrics
        if STEPS in metrics:
            now = counted(metrics)
            metrics.clear()
            metrics.update(now)

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

    def keeps_results(self) -> bool:
        """Whether this run keeps device results at all (a store and a cap above zero): a plugin
        asks before encoding a payload, which costs more than a job's other bookkeeping."""
        return self.run.store is not None and self.run.kept.cap > 0

    def keep_result(
        self, kind: str, data: bytes, raw_bytes: int, meta: dict[str, Any] | None = None
    ) -> bool:
        """Keep what a device returned (``runtime.kept``): ``data`` compressed by the plugin that
        reads it back by ``kind``. False when the run's cap (or no store) left it out; the task
        then says how much was not kept."""
        run = self.run
        if run.store is None or not run.kept.admit(len(data)):
            if run.kept.cap and run.store is not None:
                metrics = self.record.metrics
                metrics["results.not_kept_bytes"] = metrics.get("results.not_kept_bytes", 0) + len(
                    data
                )
            return False
        run.store.save_result(KeptResult(run.id, self.id, kind, data, raw_bytes, dict(meta or {})))
        return True

    def keep_result_later(
        self,
        kind: str,
        make: Callable[[], tuple[bytes, int] | None],
        bound: int,
        meta: dict[str, Any] | None = None,
    ) -> bool:
        """``keep_result`` of a payload ``make`` returns (data, raw bytes; None: nothing) at the
        store writer's next commit, on its thread: encoding a small job's result on the job's own
        thread cost a tenth of its task. ``bound`` (the most bytes the data can take) is counted
        against the run's cap now; where it does not fit, nothing is queued and False says so:
        the caller then keeps the payload now (``keep_result``), which the cap decides exactly."""
        run = self.run
        if run.store is None:
            return False
        made = LaterPayload(make, bound, run.kept)
        if not run.kept.admit_later(bound, made):
            return False
        kept = KeptResult(run.id, self.id, kind, b"", 0, dict(meta or {}))
        run.store.save_result(kept, later=made)
        return True

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

    Args:
        name: the task's name.
        stage: its dotted stage (default: its name).
        depends_on: the tasks (handles or ids) whose outputs it consumes.
        parent: the task it nests in (default: the current one of the same run).
        run: the run it belongs to (default: the current one; none opens a run of its own).
        activate: make it the current task and span; False when another thread or callback
            finishes it.
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
    readings) keeps that profile.

    Args:
        handle: what ``start_task`` returned.
        exc: the exception the task ended with; None when it completed.
        cached: it did no work: a workflow engine served it from its cache.
        timed: (start_ns, end_ns, profile) its caller measured.
        measured: a profile measured by other means, kept as it is.
    """
    record = handle.record
    reported = record.profile  # what backends reported while the task ran (``record_usage``)
    measurement = handle.measurement
    record.profile = measurement.stop(reported.qpu_s, reported.queue_s)
    if measurement.warmup_wall_s:  # a warm-up inside it is a task of its own (``runtime.warmup``)
        record.metrics[LEFT_OUT_WALL] = measurement.warmup_wall_s
        record.metrics[LEFT_OUT_CPU] = measurement.warmup_cpu_s
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
        handle.count_steps_now()  # a plugin reads the metrics as they will be stored
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
    ``cache.source_run``, ``cache.saved_wall_s``, ...).

    Args:
        name: the task's name.
        stage: its dotted stage (default: its name).
        depends_on: the tasks (handles or ids) whose outputs it stands in for.
        run: the run it belongs to (default: the current one).
        metrics: where its result came from (``cache.key``, ``cache.source_run``, ...).
    """
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
    turned out to belong to a long one. ``profile`` is what the caller measured of it.

    Args:
        name: the task's name.
        stage: its dotted stage (default: its name).
        parent: the task it belongs under.
        start_ns: when it began (``time.time_ns()``).
        end_ns: when it ended.
        profile: what the caller measured of it.
        metrics: its domain metrics.
    """
    handle = start_task(name, stage, parent=parent, run=parent.run, activate=False)
    handle.annotate(metrics or {})
    return finish_task(handle, timed=(start_ns, end_ns, profile))
