"""Spans: how a task's record leaves the process as OpenTelemetry.

It owns the ``llqm.*`` attribute schema (``attributes``), building task spans off the task's
path (``task_spans``), the tracer provider and span processors LLQM sets up (``tracing``), the
built-in exporters (``exporters``) and the OTLP/JSON and Chrome trace encoders of stored runs.
It imports ``llqm_core.model`` and ``llqm_core.hooks`` (exporters are plugins), never the store
or the runtime: it is handed records, it does not fetch them.
"""
