"""Spans as OTLP/JSON, the encoding OpenTelemetry collectors and viewers read.

Spans are encoded to the OTLP protobuf message by OpenTelemetry's own encoder and then to
JSON as the OTLP specification asks (camelCase fields, integer enums, 64-bit integers as
strings, trace and span ids as hex rather than base64). Runs kept in the store are turned
back into SDK spans first, so a stored run encodes exactly as it was exported live.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ..model.memory_limits import telemetry_resource
from ..model.records import RunRecord, RunStatus, TaskRecord, TaskStatus
from .attributes import run_attributes, task_attributes
from .task_spans import dependency_links
from .tracing import SCOPE

_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: (
                base64.b64decode(v).hex() if k in _ID_FIELDS and isinstance(v, str) else _hex_ids(v)
            )
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


def spans_to_otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` in OTLP/JSON."""
    return _hex_ids(MessageToDict(encode_spans(spans), use_integers_for_enums=True))


def _context(trace_id: str, span_id: str) -> SpanContext:
    return SpanContext(
        int(trace_id, 16),
        int(span_id, 16),
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )


def _parent(trace_id: str, span_id: str | None) -> SpanContext | None:
    return _context(trace_id, span_id) if span_id else None


def run_spans(run: RunRecord, tasks: Sequence[TaskRecord]) -> list[ReadableSpan]:
    """The spans of a stored run, in the order they ended (as they were exported live).

    A run whose span belongs to a workflow engine (Prefect's flow run span) contributes only
    its tasks' spans: the engine exported its own."""
    resource = Resource(telemetry_resource(run.resource))
    spans = []
    if run.end_ns is not None and run.span_owned:
        failed = run.status is RunStatus.FAILED
        spans.append(
            ReadableSpan(
                name=run.name,
                context=_context(run.trace_id, run.span_id),
                parent=_parent(run.trace_id, run.parent_span_id),
                resource=resource,
                attributes=run_attributes(run),
                kind=SpanKind.INTERNAL,
                status=Status(StatusCode.ERROR, run.error) if failed else Status(StatusCode.UNSET),
                start_time=run.start_ns,
                end_time=run.end_ns,
                instrumentation_scope=SCOPE,
            )
        )
    for task in tasks:
        if task.end_ns is None:
            continue
        failed = task.status is TaskStatus.FAILED
        events = []
        if failed:
            events.append(
                Event(
                    "exception",
                    {
                        "exception.type": task.error_type or "",
                        "exception.message": task.error or "",
                    },
                    task.end_ns,
                )
            )
        spans.append(
            ReadableSpan(
                name=task.name,
                context=_context(task.trace_id, task.span_id),
                parent=_parent(task.trace_id, task.parent_span_id),
                resource=resource,
                attributes=task_attributes(task),
                events=events,
                links=dependency_links(task),
                kind=SpanKind.INTERNAL,
                status=Status(StatusCode.ERROR, f"{task.error_type}: {task.error}")
                if failed
                else Status(StatusCode.UNSET),
                start_time=task.start_ns,
                end_time=task.end_ns,
                instrumentation_scope=SCOPE,
            )
        )
    return sorted(spans, key=lambda span: span.end_time or 0)
