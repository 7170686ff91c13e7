"""A running task as one object: its record's fields and its measurement, its record made only
where one is read (a task's end makes no ``TaskRecord`` and no ``Profile``).

More in docs/modules.md (``llqm_core.runtime.live_task``).
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry import trace

from ..model.records import Profile, TaskRecord, TaskStatus
from .measure import Measurement
from .run_of_task import RunOfTask


class LiveTask(Measurement):
    """A task while it runs, as one object: the fields of its ``TaskRecord`` (``id``, ``name``,
    ``stage``, ``metrics``, ...) and its measurement. Its end keeps the profile as values alone
    (``profile_values``), which the journal frame takes as they are; ``record`` makes the
    ``TaskRecord`` where one is read: a copy of the task so far while it runs, the finished
    record (made once) after."""

    __slots__ = (
        "run",
        "span",
        "parent_span",
        "owns_run",
        "_tokens",
        "id",
        "run_id",
        "name",
        "stage",
        "status",
        "start_ns",
        "end_ns",
        "trace_id",
        "span_id",
        "parent_id",
        "parent_span_id",
        "depends_on",
        "error",
        "error_type",
        "metrics",
        "hardware",
        "qpu_s",
        "queue_s",
        "workers",
        "_values",
        "_record",
    )

    def __init__(
        self,
        run: RunOfTask,
        task_id: str,
        name: str,
        stage: str,
        parent: LiveTask | None,
        parent_span_id: str | None,
        depends_on: list[str],
        span: trace.Span | None,
        parent_span: trace.SpanContext,
        owns_run: bool,
    ) -> None:
        self.run = run
        # Stands for the task in the trace while spans are read; its real span is built once it ends.
        self.span = span
        self.parent_span = parent_span
        self.owns_run = owns_run
        self._tokens: tuple | None = None
        run_record = run.record
        self.id = self.span_id = task_id
        self.run_id = run_record.id
        self.trace_id = run_record.trace_id
        self.name = name
        self.stage = stage
        self.status = TaskStatus.RUNNING
        self.start_ns = time.time_ns()
        self.end_ns: int | None = None
        self.parent_id = parent.id if parent is not None else None
        self.parent_span_id = parent_span_id
        self.depends_on = depends_on
        self.error: str | None = None
        self.error_type: str | None = None
        self.metrics: dict[str, Any] = {}
        self.hardware: str | None = None
        self.qpu_s: float | None = None  # what backends reported (``record_usage``)
        self.queue_s: float | None = None
        # CPU seconds other threads spent on its work, by thread (``record_worker_cpu``)
        self.workers: dict[int, float] | None = None
        self._values: tuple | None = None  # the profile's values, once ended
        self._record: TaskRecord | None = None

    @property
    def measurement(self) -> LiveTask:
        """What measures the task (``elapsed_s``): the handle itself."""
        return self

    @property
    def record(self) -> TaskRecord:
        """The task as a ``TaskRecord``: what it is so far while it runs (a new copy at each
        read, sharing its metrics and dependencies), the finished record once it ended."""
        record = self._record
        if record is not None:
            return record
        values = self._values
        record = TaskRecord(
            self.id,
            self.run_id,
            self.name,
            self.stage,
            self.status,
            self.start_ns,
            self.trace_id,
            self.span_id,
            self.parent_id,
            self.parent_span_id,
            self.depends_on,
            self.end_ns,
            self.error,
            self.error_type,
            Profile(qpu_s=self.qpu_s, queue_s=self.queue_s)
            if values is None
            else Profile.from_values(values),
            self.metrics,
            self.hardware,
        )
        if values is not None:
            self._record = record
        return record

    def as_record(self) -> TaskRecord:
        return self.record

    def in_flight_row(self, rss: int, more: dict[str, Any]) -> list:
        """The task as its row stands while it runs, for the sampler to record beside the store
        (``store.in_flight``): status running, ended at this reading, its readings so far, its
        metrics and ``more`` (its RSS curve, ``runtime.flight``)."""
        try:
            metrics = {**self.metrics, **more}
        except RuntimeError:  # its thread added a metric meanwhile: the next tick has them
            metrics = dict(more)
        return [
            self.id,
            self.run_id,
            self.name,
            self.stage,
            "running",
            self.parent_id,
            list(self.depends_on),
            self.start_ns,
            time.time_ns(),
            self.trace_id,
            self.span_id,
            self.parent_span_id,
            None,
            None,
            metrics,
            self.hardware,
            *self.so_far(rss),
        ]

    def profile_values(self) -> tuple:
        """The ended task's profile as its row keeps it (``Profile.values``)."""
        assert self._values is not None, "a running task has no profile yet"
        return self._values
