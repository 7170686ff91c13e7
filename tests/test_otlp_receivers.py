"""Spans arrive at a real OTLP receiver on loopback, over HTTP/protobuf and over gRPC, as a tree with their
attributes, their dependencies as span links, and the service named by OTEL_SERVICE_NAME or
OTEL_RESOURCE_ATTRIBUTES."""

from __future__ import annotations

import textwrap
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from conftest import run_python
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

PIPELINE = textwrap.dedent(
    """
    import llqm_core as llqm
    with llqm.run("received", config={"shots": 100}) as run:
        with llqm.task("build", stage="generate") as build:
            build.annotate({"circuit.qubits": 5})
        with llqm.task("job", stage="execute", depends_on=[build]) as job:
            with llqm.task("simulate", stage="execute.simulate"):
                pass
            job.record_usage(qpu_s=1.5, queue_s=4.0)
    print("RUN", run.id, run.trace_id)
    """
)


def spans_of(requests: list[trace_service_pb2.ExportTraceServiceRequest]) -> tuple[dict, list]:
    """The resource attributes and every span received."""
    spans, resource = [], {}
    for request in requests:
        for resource_spans in request.resource_spans:
            resource.update(
                {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            )
            for scope in resource_spans.scope_spans:
                spans.extend(scope.spans)
    return resource, spans


def check_received(requests, stdout: str, stderr: str = "") -> None:
    assert "not delivered" not in stderr
    _, run_id, trace_id = next(
        line for line in stdout.splitlines() if line.startswith("RUN")
    ).split()
    resource, spans = spans_of(requests)
    assert resource["service.name"] == "llqm-receiver-test"
    by_name = {s.name: s for s in spans}
    assert {"received", "build", "job", "simulate"} <= set(by_name)
    assert all(s.trace_id.hex() == trace_id for s in by_name.values())
    run_span = by_name["received"]
    assert by_name["build"].parent_span_id == run_span.span_id == by_name["job"].parent_span_id
    assert by_name["simulate"].parent_span_id == by_name["job"].span_id
    assert [link.span_id for link in by_name["job"].links] == [by_name["build"].span_id]
    assert by_name["job"].links[0].trace_id.hex() == trace_id
    attributes = {a.key: a.value for a in by_name["job"].attributes}
    assert attributes["llqm.stage"].string_value == "execute"
    assert (
        attributes["llqm.qpu.time_s"].double_value == 1.5
        and attributes["llqm.queue.time_s"].double_value == 4.0
    )
    build = {a.key: a.value for a in by_name["build"].attributes}
    assert build["llqm.circuit.qubits"].int_value == 5
    assert {a.key: a.value for a in run_span.attributes}["llqm.run.id"].string_value == run_id


def test_spans_arrive_at_an_otlp_http_receiver():
    received: list = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path == "/v1/traces":
                received.append(trace_service_pb2.ExportTraceServiceRequest.FromString(body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()
            self.wfile.write(trace_service_pb2.ExportTraceServiceResponse().SerializeToString())

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = run_python(
            PIPELINE,
            env={
                "LLQM_EXPORTERS": "otlp",
                "OTEL_SERVICE_NAME": "llqm-receiver-test",
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_port}",
            },
        )
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr
    check_received(received, done.stdout, done.stderr)


def test_spans_arrive_at_an_otlp_grpc_receiver():
    received: list = []

    class TraceService(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request, context):  # noqa: N802 - the gRPC service's name
            received.append(request)
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(TraceService(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        done = run_python(
            PIPELINE,
            env={
                "LLQM_EXPORTERS": "otlp-grpc",
                "OTEL_RESOURCE_ATTRIBUTES": "service.name=llqm-receiver-test",
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
                "OTEL_EXPORTER_OTLP_INSECURE": "true",
            },
        )
    finally:
        server.stop(grace=None)
    assert done.returncode == 0, done.stderr
    check_received(received, done.stdout, done.stderr)
