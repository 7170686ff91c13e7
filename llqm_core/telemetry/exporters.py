"""The built-in span exporters, registered through the same hook a third-party exporter uses."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ..hooks.hookspecs import hookimpl
from ..model.errors import UserError

JSON_FILE_ENV = "LLQM_SPANS_FILE"
DEFAULT_JSON_FILE = "llqm-spans.jsonl"

_memory = InMemorySpanExporter()


def memory_exporter() -> InMemorySpanExporter:
    """The process-wide exporter behind the ``memory`` name: its ``get_finished_spans()`` are the spans."""
    return _memory


class JsonLinesSpanExporter(SpanExporter):
    """Appends each batch as one OTLP/JSON line, the format of the collector's file exporter."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path or os.environ.get(JSON_FILE_ENV) or DEFAULT_JSON_FILE
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        from .otlp_json import spans_to_otlp_json  # protobuf: imported by the first export

        line = json.dumps(spans_to_otlp_json(spans), separators=(",", ":"))
        try:
            with self._lock, open(self.path, "a", encoding="utf-8") as out:
                out.write(line + "\n")
        except OSError:
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def _quiet(logger_name: str) -> None:
    """The OTLP exporters log every retry; LLQM says once, at exit, what was not delivered."""
    logging.getLogger(logger_name).setLevel(logging.ERROR)


def _otlp_http() -> SpanExporter:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    _quiet("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    return OTLPSpanExporter()


def _otlp_grpc() -> SpanExporter:
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise UserError(
            "the otlp-grpc exporter needs opentelemetry-exporter-otlp-proto-grpc: "
            "pip install 'llqm[grpc]'."
        ) from None
    _quiet("opentelemetry.exporter.otlp.proto.grpc.exporter")
    return OTLPSpanExporter()


@hookimpl
def llqm_register_exporters(register) -> None:
    register(
        "console",
        lambda: ConsoleSpanExporter(out=sys.stderr),
        batched=False,
        description="each span as JSON on standard error",
    )
    register(
        "otlp",
        _otlp_http,
        description="OTLP over HTTP/protobuf to OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT (default http://localhost:4318)",
    )
    register(
        "otlp-grpc",
        _otlp_grpc,
        description=(
            "OTLP over gRPC to OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT (default "
            "localhost:4317; extra 'grpc')"
        ),
    )
    register(
        "jsonfile",
        JsonLinesSpanExporter,
        description=f"OTLP/JSON lines appended to ${JSON_FILE_ENV} (default ./{DEFAULT_JSON_FILE})",
    )
    register(
        "memory",
        memory_exporter,
        batched=False,
        description=(
            "kept in this process (tests and notebooks): "
            "llqm_core.telemetry.exporters.memory_exporter()"
        ),
    )
