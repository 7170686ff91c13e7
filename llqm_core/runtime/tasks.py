"""A task's life: ``begin_task`` opens a task of a run and measures it, ``finish_task`` ends it,
keeps it in the store and builds its span; ``TaskHandle`` is what code adds metrics, usage and
dependencies to. A task knows its run as ``run_of_task.RunOfTask``: the run sits above its
tasks (it opens its hardware monitor's), and ``api.start_task`` opens the run of a task
started outside any.
"""

from __future__ import annotations

import random
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

from ..model.counted_steps import STEPS, counted
from ..model.records import (
    PROFILE_VALUE_NAMES,
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
from .kept import LaterPayload
from .live_task import LiveTask
from .run_of_task import CURRENT_RUN, RunOfTask
from .sampler import out_of_memory_metrics, shared_sampler
from .thread_ids import native_thread_id

_NUMBERS, _STRINGS = frozenset({int, float, bool}), frozenset({str})
_PID, _HOST = PROFILE_VALUE_NAMES.index("pid"), PROFILE_VALUE_NAMES.index("host")


class TaskHandle(LiveTask):
    """The face of a running task: add metrics, usage, hardware and dependencies to it.

    It is the task itself while it runs (``LiveTask``: its fields, its measurement, and its
    ``record`` made where one is read)."""

    __slots__ = ("__weakref__",)

    def finish(self, exc: BaseException | None = None) -> None:
        """End the task as ``finish_task`` does (failed with ``exc`` if given), without making
        its ``TaskRecord``: what instrumentors call, which read no record."""
        _finish(self, exc)

    @property
    def span_context(self) -> trace.SpanContext:
        """The task's place in the trace: the context its span has (or will have, once built)."""
        return child_context(self.parent_span, int(self.span_id, 16))

    def __enter__(self) -> TaskHandle:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        """``with start_task(...) as handle:`` finishes the task, failed if the block raised."""
        _finish(self, exc)

    def record_output(self, value: Any, *, describe: bool = True) -> None:
        """Describe the task's result through the plugins (unless ``describe`` is False: an
        instrumented call of a run that records calls alone, ``model.detail``), and remember it
        so that the tasks it is handed to record this one in their ``depends_on``."""
        if describe:
            self.describe(value)
        self.run.note_output(value, self.id)

    def annotate(self, metrics: dict[str, Any] | None = None, /, **more: Any) -> TaskHandle:
        """Record domain metrics: ``annotate(shots=4000)`` or ``annotate({"circuit.qubits": 5})``."""
        values = checked_metrics({**(metrics or {}), **more})
        self.metrics.update(values)
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
            self.metrics.update(metrics)
            return self
        return self.annotate(metrics)

    def count_steps_later(self, run: tuple) -> None:
        """Keep a run of steps (``model.counted_steps``: a transpile's passes) as raw facts, to be
        counted into this task's metrics when its row is stored or its span built: counting
        forty passes and making their metrics was a fifth of a small transpile's task."""
        metrics = self.metrics
        runs = metrics.get(STEPS)
        if runs is None:
            metrics[STEPS] = [run]
        else:
            runs.append(run)

    def count_steps_now(self) -> None:
        """Count the runs of steps kept so far into the metrics: before metrics that add to them."""
        metrics = self.metrics
        if STEPS in metrics:
            now = counted(metrics)
            metrics.clear()
            metrics.update(now)

    def describe(self, value: Any) -> dict[str, Any]:
        """Record the metrics that plugins know for ``value`` (a circuit, a result, ...)."""
        metrics = self.run.description(value)  # checked and redacted already
        if metrics:
            self.metrics.update(metrics)
        return metrics

    def record_usage(self, *, qpu_s: float | None = None, queue_s: float | None = None) -> None:
        """Add QPU or queue seconds that a backend reported for work done in this task."""
        for field, value in (("qpu_s", qpu_s), ("queue_s", queue_s)):
            if value is None:
                continue
            if value < 0:
                raise ValueError(f"{field} must be 0 or more seconds, not {value!r}.")
            setattr(self, field, (getattr(self, field) or 0.0) + float(value))

    def record_worker_cpu(self, seconds: float) -> None:
        """Called by a thread that did this task's work for it (a job's worker: Qiskit's and
        Aer's jobs run in a pool thread while the task's thread waits), with the CPU seconds it
        spent: the task is charged them (docs/profiling.md, "CPU")."""
        ident = threading.get_ident()
        workers = self.workers if self.workers is not None else {}
        workers[ident] = workers.get(ident, 0.0) + seconds
        self.workers = workers

    def worker(self) -> WorkerCharge:
        """Run a block in another thread than the task's, as work done for it (a job's pool
        thread): the block's CPU is charged to the task, and never shared out among tasks as
        CPU that no task's thread spent (``runtime.cpu_shares``)."""
        return WorkerCharge(self)

    def use_hardware(self, snapshot: HardwareSnapshot) -> str:
        """Name the calibration this task depended on; the snapshot is kept in the store once."""
        fingerprint = snapshot.fingerprint
        if self.run.store is not None:
            self.run.store.save_snapshot(snapshot)
        self.hardware = fingerprint
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
                metrics = self.metrics
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
            if dep not in self.depends_on:
                self.depends_on.append(dep)


class WorkerCharge:
    """``TaskHandle.worker``'s block: it runs on a job's path to its result (the caller waits on
    it), so it reads its thread's CPU clock once at each end and takes the sampler's lock once."""

    __slots__ = ("task", "sampler", "thread", "start")

    def __init__(self, task: TaskHandle) -> None:
        self.task = task

    def __enter__(self) -> None:
        self.sampler, self.thread = shared_sampler(), native_thread_id()
        self.start = start = time.thread_time()
        self.sampler.lend(self.thread, self.task.thread, start)

    def __exit__(self, *_: object) -> None:
        end = time.thread_time()
        self.task.record_worker_cpu(end - self.start)
        self.sampler.give_back(self.thread, end)


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


#: The task open in this context (thread or asyncio task): ``begin_task`` makes a task current,
#: its end the one before it; a task started with no parent given nests in it.
CURRENT_TASK: ContextVar[TaskHandle | None] = ContextVar("llqm_current_task", default=None)


def begin_task(
    run: RunOfTask,
    name: str,
    stage: str | None = None,
    depends_on: Iterable[TaskHandle | str] = (),
    *,
    parent: TaskHandle | None = None,
    activate: bool = True,
    owns_run: bool = False,
) -> TaskHandle:
    """Open a task of ``run`` and start measuring it: ``api.start_task`` once its run is found
    (``owns_run``: the run was opened for this task, whose end ends it).

    Args:
        run: the run it belongs to.
        name: the task's name.
        stage: its dotted stage (default: its name).
        depends_on: the tasks (handles or ids) whose outputs it consumes.
        parent: the task it nests in (default: the current one of the same run).
        activate: make it the current task and span; False when another thread or callback
            finishes it.
        owns_run: the run was opened for this task alone.
    """
    if not name:
        raise ValueError("a task needs a non-empty name.")
    current_run = CURRENT_RUN.get()
    if parent is None and (current := CURRENT_TASK.get()) is not None and current.run is run:
        parent = current
    if parent is not None:
        parent_span = parent.span_context
        parent_span_id = parent.span_id if parent_span.is_valid else None
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
    handle = TaskHandle(
        run,
        format(span_id, "016x"),  # a task is named by its span's id: the trace and the store alike
        name,
        stage or name,
        parent,
        parent_span_id,
        list(dict.fromkeys(_task_ids(depends_on))) if depends_on else [],
        span,
        parent_span,
        owns_run,
    )
    if run.store is not None:
        run.store.start_task(handle)
    if activate:
        handle._tokens = (
            otel_context.attach(trace.set_span_in_context(span)) if span is not None else None,
            CURRENT_TASK.set(handle),
            CURRENT_RUN.set(run) if run is not current_run else None,
        )
    handle.begin(run.full_detail)  # last: LLQM's bookkeeping is not measured
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
    readings) keeps that profile. ``TaskHandle.finish`` ends it without making the record.

    Args:
        handle: what ``start_task`` returned.
        exc: the exception the task ended with; None when it completed.
        cached: it did no work: a workflow engine served it from its cache.
        timed: (start_ns, end_ns, profile) its caller measured.
        measured: a profile measured by other means, kept as it is.
    """
    _finish(handle, exc, cached, timed, measured)
    return handle.record


def _finish(
    handle: TaskHandle,
    exc: BaseException | None = None,
    cached: bool = False,
    timed: tuple[int, int, Profile] | None = None,
    measured: Profile | None = None,
) -> None:
    """``finish_task`` without the record: the task's readings go into its row as values."""
    handle._values = values = handle.stop_values(handle.qpu_s, handle.queue_s, handle.workers)
    if handle.warmup_wall_s:  # a warm-up inside it is a task of its own (``runtime.warmup``)
        handle.metrics[LEFT_OUT_WALL] = handle.warmup_wall_s
        handle.metrics[LEFT_OUT_CPU] = handle.warmup_cpu_s
    handle.end_ns = time.time_ns()
    if measured is not None:
        handle._values = measured.values()
    elif timed is not None:
        handle.start_ns, handle.end_ns, profile = timed
        handle._values = profile.values()
    if cached:  # where it ran, and nothing more
        handle._values = Profile(
            pid=values[_PID], host=values[_HOST], thread=handle.thread
        ).values()
        handle.end_ns = handle.start_ns
        handle.status = TaskStatus.CACHED
    elif exc is None:
        handle.status = TaskStatus.COMPLETED
    else:
        handle.status = status_for(exc)
        handle.error_type, handle.error = describe_error(exc)
        if isinstance(exc, MemoryError):  # named with the limits in force and the RSS it reached
            handle.metrics.update(out_of_memory_metrics(handle.id, handle.start_ns))
    if handle._tokens is not None:
        token_context, token_task, token_run = handle._tokens
        if token_run is not None:
            CURRENT_RUN.reset(token_run)
        CURRENT_TASK.reset(token_task)
        if token_context is not None:
            otel_context.detach(token_context)
        handle._tokens = None
    run = handle.run
    if run.monitor is not None:
        run.monitor.mark(handle)
    spans = run.task_spans
    if spans.reading:
        stacktrace = (
            redact_text("".join(traceback.format_exception(exc))) if exc is not None else None
        )
        spans.ended(handle, handle.parent_span, stacktrace)
    if run.store is not None:
        run.store.finish_task(handle)
    plugins = run.plugins
    if plugins.observes_tasks:
        handle.count_steps_now()  # a plugin reads the metrics as they will be stored
        plugins.call_each("llqm_task_finished", task=handle.record)
    if handle.owns_run:
        run.finish(exc)


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
    handle = begin_task(parent.run, name, stage, parent=parent, activate=False)
    handle.annotate(metrics or {})
    return finish_task(handle, timed=(start_ns, end_ns, profile))


def status_for(exc: BaseException | None) -> TaskStatus:
    """How a task or a run ended: completed, failed (an ``Exception``) or interrupted."""
    if exc is None:
        return TaskStatus.COMPLETED
    return TaskStatus.FAILED if isinstance(exc, Exception) else TaskStatus.INTERRUPTED


def describe_error(exc: BaseException) -> tuple[str, str]:
    """The exception's type by its qualified name, and its message, secrets redacted."""
    kind = type(exc)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    return name, redact_text(str(exc)) or name
