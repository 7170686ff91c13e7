"""Task spans are built after their task has ended, in batches, off the task's path.

More in docs/modules.md (``llqm_core.telemetry.task_spans``).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags

from ..model.errors import warn
from ..model.records import TaskRecord, TaskRow
from .attributes import LINK_KIND, task_attributes

BATCH_INTERVAL_S = 0.5

_all: weakref.WeakSet[TaskSpans] = weakref.WeakSet()


class PresetSpanIds(IdGenerator):
    """An id generator that lets the thread building a task's span say which span id comes next
    (the one the task was named by when it started); otherwise it asks ``inner``."""

    def __init__(self, inner: IdGenerator) -> None:
        self.inner = inner
        self._next = threading.local()  # each thread presets only the span it builds itself

    def preset(self, span_id: int | None) -> None:
        self._next.span_id = span_id

    def generate_span_id(self) -> int:
        span_id = getattr(self._next, "span_id", None)
        if span_id is None:
            return self.inner.generate_span_id()
        self._next.span_id = None
        return span_id

    def generate_trace_id(self) -> int:
        return self.inner.generate_trace_id()

    def is_trace_id_random(self) -> bool:
        return self.inner.is_trace_id_random()


def child_context(parent: SpanContext, span_id: int) -> SpanContext:
    """The context of a task's span (built or still to be built): a child of ``parent`` with the given id."""
    return SpanContext(parent.trace_id, span_id, False, parent.trace_flags, parent.trace_state)


def dependency_links(record: TaskRecord) -> list[Link]:
    """The task's ``depends_on`` as span links: OpenTelemetry's way to say that a span consumed
    the work of others that are not its parent (a task's id is its span's id, in its run's trace)."""
    links = []
    for dep in record.depends_on:
        try:
            span_id = int(dep, 16)
        except ValueError:
            continue  # not a task of LLQM's (ids are hex span ids): nothing to point at
        context = SpanContext(
            int(record.trace_id, 16), span_id, False, TraceFlags(TraceFlags.SAMPLED)
        )
        links.append(Link(context, {LINK_KIND: "depends_on"}))
    return links


class TaskSpans:
    """The spans of ended tasks that are waiting to be built, and the thread that builds them."""

    def __init__(self, tracer: Any, ids: PresetSpanIds | None) -> None:
        """``ids`` is the id generator ``tracer`` makes span ids with (None for a tracer that
        records nothing)."""
        self.tracer = tracer
        #: False while nothing would ever receive a span: then none is built. Written by whoever
        #: knows the span processors, read at every task's start and end.
        self.reading = True
        self._ids = ids
        self._warned = False
        self._start_afresh()
        _all.add(self)

    def _start_afresh(self) -> None:
        self._queue: list[tuple] = []
        self._lock = threading.Lock()
        self._building = threading.RLock()  # a flush waits for a batch the thread has taken
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    @staticmethod
    def placeholder(parent: SpanContext, span_id: int) -> NonRecordingSpan:
        """The span that stands for a task while it runs: a child of ``parent`` with the given id."""
        return NonRecordingSpan(child_context(parent, span_id))

    def ended(self, record: TaskRow, parent: SpanContext, stacktrace: str | None = None) -> None:
        """Queue the span of a task that has ended (``stacktrace`` when it failed); it gets the
        span id the record names. Call only where ``reading`` says spans are read. A live task's
        handle is queued as it is: its record is made here, on the building thread."""
        with self._lock:
            self._queue.append((record, parent, stacktrace))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="llqm-spans", daemon=True)
                self._thread.start()
        if not self._wake.is_set():
            self._wake.set()

    def build_pending(self) -> None:
        """Build every queued span now (at a run's end, a flush, an exporter change, exit)."""
        with self._building:
            with self._lock:
                queued, self._queue = self._queue, []
            for item in queued:
                try:
                    self._build(*item)
                except Exception as exc:  # a span processor's bug must not stop the spans after it
                    if not self._warned:
                        self._warned = True
                        warn(f"building a task's span failed and it is dropped: {exc!r}")

    def _loop(self) -> None:
        while True:
            self._wake.wait()
            time.sleep(BATCH_INTERVAL_S)  # let the spans of that while gather into one batch
            self._wake.clear()
            self.build_pending()

    def _build(self, task: TaskRow, parent: SpanContext, stacktrace: str | None) -> None:
        record = task.as_record()
        if self._ids is not None:
            self._ids.preset(int(record.span_id, 16))
        try:
            span = self.tracer.start_span(
                record.name,
                context=trace.set_span_in_context(NonRecordingSpan(parent)),
                start_time=record.start_ns,
                attributes=task_attributes(record),
                links=dependency_links(record),
            )
        finally:
            if self._ids is not None:
                self._ids.preset(None)
        if stacktrace is not None:
            span.add_event(
                "exception",
                {  # as record_exception() would, with secrets cut out
                    "exception.type": record.error_type,
                    "exception.message": record.error,
                    "exception.stacktrace": stacktrace,
                    "exception.escaped": False,
                },
                timestamp=record.end_ns,
            )
            span.set_status(Status(StatusCode.ERROR, f"{record.error_type}: {record.error}"))
        span.end(end_time=record.end_ns)


def _forget_parents_spans() -> None:
    for spans in list(_all):
        spans._start_afresh()  # the parent builds its own queue; the child's thread did not survive the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_parents_spans)
