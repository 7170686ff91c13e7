"""OpenTelemetry set-up: one tracer provider, exporters chosen by name, bounded shutdown.

If the application already installed an SDK ``TracerProvider`` as the global one, LLQM adds
its exporters to it; otherwise LLQM installs its own (resource from ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES``), so spans of the workflow engine and of LLQM share one trace.
Where neither names the service, it is ``llqm``, or the program ``llqm profile`` runs
(``LLQM_SERVICE_NAME``), rather than the SDK's ``unknown_service:python3``.

More in docs/modules.md (``llqm_core.telemetry.tracing``).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from ..hooks.plugins import loaded_plugins
from ..model.errors import UserError, warn
from ..model.settings import seconds_from_env
from .task_spans import PresetSpanIds, TaskSpans


def _llqm_version() -> str:
    try:
        return version("llqm")
    except PackageNotFoundError:
        return "0+unknown"


#: What LLQM's spans say made them. Here, not beside the OTLP/JSON encoder: that one imports
#: protobuf, which a run without an OTLP or JSON exporter never needs.
SCOPE = InstrumentationScope("llqm", _llqm_version())

EXPORTERS_ENV = "LLQM_EXPORTERS"
EXPORT_TIMEOUT_ENV = "LLQM_EXPORT_TIMEOUT"
DEFAULT_EXPORT_TIMEOUT_S = 2.0
SERVICE_NAME_ENV = "LLQM_SERVICE_NAME"
DEFAULT_SERVICE_NAME = "llqm"
BATCH_DELAY_ENV = "OTEL_BSP_SCHEDULE_DELAY"
DEFAULT_BATCH_DELAY_MS = 500.0


def batch_delay_ms() -> float:
    """How long ended spans wait to be batched: OTEL_BSP_SCHEDULE_DELAY (ms) if set, else 500 ms
    (the SDK's 5 s would lose the last five seconds of spans of a process that is killed)."""
    raw = os.environ.get(BATCH_DELAY_ENV)
    try:
        return float(raw) if raw is not None and raw.strip() else DEFAULT_BATCH_DELAY_MS
    except ValueError:
        return DEFAULT_BATCH_DELAY_MS


def service_resource() -> Resource:
    """The SDK's resource from the environment, with LLQM's service name where the environment
    names none (the SDK would say ``unknown_service:<executable>``)."""
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        name = os.environ.get(SERVICE_NAME_ENV, "").strip() or DEFAULT_SERVICE_NAME
        resource = Resource.create({SERVICE_NAME: name})
    return resource


def export_timeout_s() -> float:
    return seconds_from_env(EXPORT_TIMEOUT_ENV, DEFAULT_EXPORT_TIMEOUT_S, 0.0)


class CountedExporter(SpanExporter):
    """An exporter that counts the spans it delivered, so that what never arrived can be said once."""

    def __init__(self, name: str, inner: SpanExporter) -> None:
        self.name, self.inner = name, inner
        self.delivered = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.delivered += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        flush = getattr(self.inner, "force_flush", None)
        return flush(timeout_millis) if flush is not None else True


class ExporterHub(SpanProcessor):
    """The one processor LLQM adds to the provider; the exporters behind it can be swapped."""

    def __init__(self) -> None:
        self._processors: list[tuple[str, SpanProcessor]] = []
        self._warned: set[str] = set()
        self._counted: dict[int, CountedExporter] = {}  # by id of the processor that feeds it
        self._ended: dict[int, int] = {}
        #: Called with every span that ends, exported or not (see ``Telemetry.watch_ended_spans``).
        self.watchers: tuple[Callable[[ReadableSpan], None], ...] = ()

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self._processors]

    def replace(
        self,
        processors: list[tuple[str, SpanProcessor]],
        counted: dict[int, CountedExporter] | None = None,
        timeout_s: float | None = None,
    ) -> None:
        """Swap the exporters; the old ones get ``timeout_s`` (default: the export timeout) to
        deliver what they hold, and what they never delivered is said in one line."""
        old, self._processors = self._processors, processors
        old_counted, self._counted = self._counted, dict(counted or {})
        old_ended, self._ended = self._ended, {}

        def shut_down_old() -> None:
            for _, processor in old:
                processor.shutdown()

        _bounded(shut_down_old, export_timeout_s() if timeout_s is None else timeout_s)
        for _, processor in old:
            exporter = old_counted.get(id(processor))
            ended = old_ended.get(id(processor), 0)
            if exporter is not None and exporter.delivered < ended:
                print(
                    f"llqm: warning: {ended - exporter.delivered} of {ended} spans were not "
                    "delivered to span exporter "
                    f"{exporter.name!r} (unreachable, refusing, or slower than {EXPORT_TIMEOUT_ENV}="
                    f"{export_timeout_s():g} s); the profile store keeps every run (`llqm trace "
                    "RUN` writes it as OTLP/JSON).",
                    file=sys.stderr,
                )

    def on_start(self, span: Span, parent_context: otel_context.Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        for watcher in self.watchers:
            try:
                watcher(span)
            except Exception as exc:  # a watcher never costs the span its export
                warn(f"{watcher.__qualname__} failed on span {span.name!r}: {exc}")
        for name, processor in self._processors:
            key = id(processor)
            if key in self._counted:
                self._ended[key] = self._ended.get(key, 0) + 1
            try:
                processor.on_end(span)
            except Exception as exc:
                if name not in self._warned:
                    self._warned.add(name)
                    warn(f"span exporter {name!r} failed and its spans are dropped: {exc}")

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        deadline = time.monotonic() + timeout_millis / 1000
        ok = True
        for _, processor in self._processors:
            remaining = max(0, int((deadline - time.monotonic()) * 1000))
            ok = processor.force_flush(remaining) and ok
        return ok

    def shutdown(self) -> None:
        self.replace([])


def _bounded(action, timeout_s: float) -> bool:
    """Run ``action`` in a daemon thread and wait for it at most ``timeout_s``."""
    worker = threading.Thread(target=action, name="llqm-export-shutdown", daemon=True)
    worker.start()
    worker.join(timeout_s)
    return not worker.is_alive()


def _selected_names() -> list[str]:
    for variable in (EXPORTERS_ENV, "OTEL_TRACES_EXPORTER"):
        raw = os.environ.get(variable)
        if raw is not None and raw.strip():
            return [n.strip() for n in raw.split(",") if n.strip()]
    if os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    ):
        return ["otlp"]
    return []


class _OwnTracerProvider(TracerProvider):
    """The provider LLQM installs when the application has none: it keeps the span processors
    added to it (by LLQM or by the application) and says when one is added, so that whether
    spans are read at all is known without asking at every task."""

    def __init__(self, on_new_processor: Callable[[], None], **kwargs: Any) -> None:
        self._on_new_processor = on_new_processor
        self.llqm_processors: list[SpanProcessor] = []
        super().__init__(**kwargs)

    def add_span_processor(self, span_processor: SpanProcessor) -> None:
        super().add_span_processor(span_processor)
        self.llqm_processors.append(span_processor)
        self._on_new_processor()


def _preset_ids_on(tracer: Any) -> PresetSpanIds | None:
    """Span ids chosen by LLQM on a tracer of the application's own SDK provider.

    The SDK takes an id generator only when a provider is made; for a provider the application
    made, the SDK tracer's ``id_generator`` attribute is replaced (its one use outside the
    SDK's constructors, checked by tests/test_telemetry.py). A tracer that is not the SDK's
    records nothing and needs no ids."""
    inner = getattr(tracer, "id_generator", None)
    if inner is None:
        return None
    ids = inner if isinstance(inner, PresetSpanIds) else PresetSpanIds(inner)
    tracer.id_generator = ids
    return ids


class Telemetry:
    def __init__(self) -> None:
        self.hub = ExporterHub()
        current = trace.get_tracer_provider()
        self._own_provider: _OwnTracerProvider | None = None
        if isinstance(current, TracerProvider):
            self.provider = current
            self.tracer = self.provider.get_tracer(SCOPE.name, SCOPE.version)
            ids = _preset_ids_on(self.tracer)
        else:
            ids = PresetSpanIds(RandomIdGenerator())
            self.provider = self._own_provider = _OwnTracerProvider(
                self._note_readers,
                resource=service_resource(),
                shutdown_on_exit=False,
                id_generator=ids,
            )
            self.tracer = self.provider.get_tracer(SCOPE.name, SCOPE.version)
        self.task_spans = TaskSpans(self.tracer, ids)
        self._note_readers()

    def _note_readers(self) -> None:
        """Tell the task spans whether anything reads them: not when the provider is LLQM's own and
        its only processor, the hub, has no exporter (then no span is built, nor a placeholder made)."""
        self.task_spans.reading = self._spans_are_read()

    def _spans_are_read(self) -> bool:
        own = self._own_provider
        if own is None or self.hub.names:
            return True
        return own.llqm_processors not in ([], [self.hub])

    def install(self) -> None:
        """Attach the exporters to the provider and make it the global one if none was set."""
        self.provider.add_span_processor(self.hub)
        if self._own_provider is not None and isinstance(
            trace.get_tracer_provider(), trace.ProxyTracerProvider
        ):
            trace.set_tracer_provider(self.provider)
        atexit.register(self.close)

    def configure(self, names: Sequence[str], exporters: Sequence[SpanExporter] = ()) -> list[str]:
        self.task_spans.build_pending()  # the spans of tasks already ended go where they would have gone
        available = loaded_plugins().registry("llqm_register_exporters")
        chosen = [name for name in names if name != "none"]
        for name in chosen:
            if name not in available:
                raise UserError(
                    f"unknown span exporter {name!r}; available exporters are: "
                    f"{', '.join(sorted([*available, 'none']))}."
                )
        processors: list[tuple[str, SpanProcessor]] = []
        counted: dict[int, CountedExporter] = {}
        for name in chosen:
            entry = available[name]
            exporter = CountedExporter(name, entry["object"]())
            processor = (
                BatchSpanProcessor(exporter, schedule_delay_millis=batch_delay_ms())
                if entry.get("batched", True)
                else SimpleSpanProcessor(exporter)
            )
            counted[id(processor)] = exporter
            processors.append((name, processor))
        for given in exporters:
            processors.append((type(given).__name__, SimpleSpanProcessor(given)))
        self.hub.replace(processors, counted)
        self._note_readers()
        return self.hub.names

    def watch_ended_spans(self, watcher: Callable[[ReadableSpan], None], on: bool = True) -> None:
        """Call ``watcher`` in the thread that ends each span of the provider (a workflow engine's
        spans say what the engine did, e.g. that it served a task run from its cache), or stop.
        Watching is not reading: with no exporter, LLQM still builds no task span."""
        others = tuple(w for w in self.hub.watchers if w is not watcher)
        self.hub.watchers = (*others, watcher) if on else others

    def flush(self, timeout_s: float | None = None) -> bool:
        timeout = export_timeout_s() if timeout_s is None else timeout_s
        self.task_spans.build_pending()
        return self.hub.force_flush(int(timeout * 1000))

    def close(self) -> None:
        """Hand pending spans to the exporters, waiting no longer than the export timeout in all.

        The exporters' shutdown is bounded inside ``replace``, which then reports in this
        thread what never arrived (a second bound around it would cut that report off)."""
        deadline = time.monotonic() + export_timeout_s()
        _bounded(self.task_spans.build_pending, export_timeout_s())
        self.hub.replace([], timeout_s=max(0.0, deadline - time.monotonic()))
        self._note_readers()

    @property
    def resource_attributes(self) -> dict:
        return dict(self.provider.resource.attributes)


_telemetry: Telemetry | None = None
_lock = threading.Lock()


def telemetry() -> Telemetry:
    """The process's telemetry, set up on first use from the environment."""
    global _telemetry
    current = _telemetry
    if current is not None:
        return current  # every task's start and end ask: no lock once set up
    with _lock:
        if _telemetry is None:
            candidate = Telemetry()
            candidate.configure(_selected_names())
            candidate.install()
            _telemetry = candidate
        return _telemetry


def configure_exporters(
    names: Sequence[str] = (), exporters: Sequence[SpanExporter] = ()
) -> list[str]:
    """Export spans to the named exporters and to the given exporter objects, replacing the previous ones.

    Args:
        names: registered exporters (``otlp``, ``console``, ...; ``llqm plugins`` lists them).
        exporters: OpenTelemetry ``SpanExporter`` objects of your own.
    """
    return telemetry().configure(names, exporters)


def flush(timeout_s: float | None = None) -> bool:
    """Push pending spans out now; True when every exporter finished in time.

    Args:
        timeout_s: how long to wait for the exporters; None waits as long as they take.
    """
    return telemetry().flush(timeout_s)
