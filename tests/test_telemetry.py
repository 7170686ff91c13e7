"""Spans reach OpenTelemetry tooling, and no exporter can fail or stall a pipeline."""

from __future__ import annotations

import base64
import json
import socket
import textwrap
import time

import pytest
from conftest import run_cli, run_python
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import llqm_core as llqm
from llqm_core.telemetry.otlp_json import run_spans, spans_to_otlp_json

PIPELINE = textwrap.dedent(
    """
    import time
    import llqm_core as llqm
    with llqm.run("exported") as run:
        for i in range(20):
            with llqm.task(f"t{i}", stage="work") as t:
                t.annotate(index=i)
    print("RUN", run.id, time.monotonic(), flush=True)
    """
)


def _finish_to_exit(result) -> float:
    """Seconds between the end of the run and the end of the process."""
    line = next(out for out in result.stdout.splitlines() if out.startswith("RUN"))
    return time.monotonic() - float(line.split()[2])


@pytest.mark.parametrize("endpoint_kind", ["refused", "silent"])
def test_unreachable_otlp_endpoint_neither_fails_nor_stalls_the_run(tmp_path, endpoint_kind):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections and never answers
    port = silent.getsockname()[1]
    if endpoint_kind == "refused":
        silent.close()
    store = tmp_path / "s.sqlite"
    try:
        result = run_python(
            PIPELINE,
            env={
                "LLQM_EXPORTERS": "",
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
                "LLQM_EXPORT_TIMEOUT": "1",
                "LLQM_STORE": str(store),
            },
        )
        after_run = _finish_to_exit(result)
    finally:
        silent.close()
    assert result.returncode == 0, result.stderr
    # the exporter gets LLQM_EXPORT_TIMEOUT (1 s) at exit; unbounded it would wait out OTLP's own 10 s
    # timeout and retries: 8 s tells the two apart even on a machine loaded 10 times over
    assert after_run < 8.0
    said = [line for line in result.stderr.splitlines() if "not delivered" in line]
    assert len(said) == 1 and "21 of 21 spans were not delivered to span exporter 'otlp'" in said[0]
    assert (
        "Transient error" not in result.stderr
    )  # the exporter's retries are not logged one by one
    run = llqm.ProfileStore(store, readonly=True).run()
    assert run.status is llqm.RunStatus.COMPLETED


def test_json_file_exporter_and_service_name_from_standard_variables(tmp_path):
    spans_file = tmp_path / "spans.jsonl"
    store = tmp_path / "s.sqlite"
    result = run_python(
        PIPELINE,
        env={
            "LLQM_EXPORTERS": "",
            "OTEL_TRACES_EXPORTER": "jsonfile",
            "LLQM_SPANS_FILE": str(spans_file),
            "OTEL_SERVICE_NAME": "ghz-lab",
            "LLQM_STORE": str(store),
        },
    )
    assert result.returncode == 0, result.stderr
    batches = [json.loads(line) for line in spans_file.read_text().splitlines()]
    resource_spans = [rs for batch in batches for rs in batch["resourceSpans"]]
    services = {
        a["value"]["stringValue"]
        for rs in resource_spans
        for a in rs["resource"]["attributes"]
        if a["key"] == "service.name"
    }
    assert services == {"ghz-lab"}
    names = {s["name"] for rs in resource_spans for ss in rs["scopeSpans"] for s in ss["spans"]}
    assert names == {"exported"} | {f"t{i}" for i in range(20)}

    traced = run_cli("trace", "--format", "otlp-json", env={"LLQM_STORE": str(store)})
    assert traced.returncode == 0, traced.stderr
    stored = json.loads(traced.stdout)
    stored_spans = {
        s["spanId"]: s
        for rs in stored["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    }
    live_spans = {
        s["spanId"]: s for rs in resource_spans for ss in rs["scopeSpans"] for s in ss["spans"]
    }
    assert stored_spans == live_spans


def _services_in(spans_file) -> set[str]:
    return {
        a["value"]["stringValue"]
        for line in spans_file.read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for a in rs["resource"]["attributes"]
        if a["key"] == "service.name"
    }


def test_service_name_is_llqm_or_the_profiled_program_unless_the_standard_variables_say_otherwise(
    tmp_path,
):
    def exported(env: dict[str, str], *, program: bool = False) -> set[str]:
        spans_file = tmp_path / f"spans-{len(list(tmp_path.iterdir()))}.jsonl"
        env = {
            "LLQM_EXPORTERS": "jsonfile",
            "LLQM_SPANS_FILE": str(spans_file),
            "LLQM_STORE": str(tmp_path / "s.sqlite"),
            **env,
        }
        if program:
            script = tmp_path / "bell_study.py"
            script.write_text("import llqm_core as llqm\nwith llqm.task('step'):\n    pass\n")
            result = run_cli("profile", str(script), env=env)
        else:
            result = run_python(PIPELINE, env=env)
        assert result.returncode == 0, result.stderr
        return _services_in(spans_file)

    assert exported({}) == {"llqm"}
    assert exported({}, program=True) == {"bell_study"}
    assert exported({"OTEL_SERVICE_NAME": "lab"}, program=True) == {"lab"}
    attributes = "deployment.environment=test,service.name=ghz-lab"
    assert exported({"OTEL_RESOURCE_ATTRIBUTES": attributes}) == {"ghz-lab"}
    stored = llqm.ProfileStore(tmp_path / "s.sqlite", readonly=True).run()
    assert stored.resource["service.name"] == "ghz-lab"
    assert stored.resource["deployment.environment"] == "test"


def test_depends_on_become_span_links_live_and_in_the_stored_trace(store_path, spans):
    with llqm.run("linked") as run:
        with llqm.task("left", stage="generate") as left:
            pass
        with llqm.task("right", stage="generate") as right:
            pass
        with llqm.task("join", stage="combine", depends_on=[left, right]):
            pass
    live = {s.name: s for s in spans.get_finished_spans()}
    links = live["join"].links
    assert [link.context.span_id for link in links] == [
        live["left"].context.span_id,
        live["right"].context.span_id,
    ]
    assert all(link.context.trace_id == live["join"].context.trace_id for link in links)
    assert all(link.attributes == {"llqm.link.kind": "depends_on"} for link in links)
    assert live["left"].links == ()
    store = llqm.ProfileStore(store_path)
    rebuilt = spans_to_otlp_json(run_spans(store.run(run.id), store.tasks(run.id)))
    assert rebuilt == spans_to_otlp_json(spans.get_finished_spans())
    join = next(
        s for s in rebuilt["resourceSpans"][0]["scopeSpans"][0]["spans"] if s["name"] == "join"
    )
    assert [link["spanId"] for link in join["links"]] == [left.id, right.id]


def test_unknown_exporter_name_is_a_user_error_naming_the_choices():
    with pytest.raises(
        llqm.UserError,
        match=r"unknown span exporter 'zipkinn'; available exporters are: "
        r"console, jsonfile, memory, none, otlp",
    ):
        llqm.configure_exporters(["zipkinn"])


def _to_protobuf_json(document: dict) -> dict:
    """OTLP/JSON carries ids as hex; protobuf's JSON mapping wants base64."""

    def walk(node):
        if isinstance(node, dict):
            return {
                k: (
                    base64.b64encode(bytes.fromhex(v)).decode()
                    if k in ("traceId", "spanId", "parentSpanId")
                    else walk(v)
                )
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(document)


def test_stored_run_encodes_to_the_same_otlp_json_as_the_live_spans(store_path, spans):
    with llqm.run("round trip") as run:
        with llqm.task("outer", stage="transpile") as t:
            t.annotate({"circuit.qubits": 100, "labels": ["a", "b"], "ok": True, "ratio": 0.5})
            with llqm.task("inner", stage="transpile.routing"):
                pass
    store = llqm.ProfileStore(store_path)
    rebuilt = spans_to_otlp_json(run_spans(store.run(run.id), store.tasks(run.id)))
    live = spans_to_otlp_json(spans.get_finished_spans())
    assert rebuilt == live
    span = next(
        s for s in rebuilt["resourceSpans"][0]["scopeSpans"][0]["spans"] if s["name"] == "outer"
    )
    assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16
    attributes = {a["key"]: a["value"] for a in span["attributes"]}
    assert attributes["llqm.circuit.qubits"] == {"intValue": "100"}
    assert attributes["llqm.stage"] == {"stringValue": "transpile"}
    message = ParseDict(_to_protobuf_json(rebuilt), ExportTraceServiceRequest())
    assert len(message.resource_spans[0].scope_spans[0].spans) == 3


def test_spans_started_inside_a_task_are_its_children_and_its_span_keeps_the_stored_id(
    store_path, spans
):
    """The task's span is built after it ends; meanwhile a placeholder with the same id is current."""
    from opentelemetry import trace

    with llqm.run("children") as run:
        with llqm.task("transpile", stage="transpile"):
            with trace.get_tracer("some.library").start_as_current_span("library work"):
                pass
    by_name = {s.name: s for s in spans.get_finished_spans()}
    stored = {t.name: t for t in llqm.ProfileStore(store_path).tasks(run.id)}
    assert format(by_name["transpile"].context.span_id, "016x") == stored["transpile"].span_id
    assert by_name["library work"].parent.span_id == by_name["transpile"].context.span_id
    assert by_name["transpile"].start_time == stored["transpile"].start_ns
    assert by_name["transpile"].end_time == stored["transpile"].end_ns


def test_with_no_span_reader_nested_tasks_still_form_a_tree_in_the_store(tmp_path):
    """Nothing reads spans, so no placeholder stands for a running task; the span ids kept still
    make the run's trace (``llqm trace``) a tree: run, outer task, inner task."""
    code = textwrap.dedent(
        """
        import llqm_core as llqm
        with llqm.run("r") as run:
            with llqm.task("outer", stage="work"):
                with llqm.task("inner", stage="work"):
                    pass
        tasks = {t.name: t for t in llqm.ProfileStore().tasks(run.id)}
        outer, inner = tasks["outer"], tasks["inner"]
        print(run.record.span_id, outer.parent_span_id, outer.span_id, inner.parent_span_id)
        """
    )
    result = run_python(
        code, env={"LLQM_EXPORTERS": "none", "LLQM_STORE": str(tmp_path / "s.sqlite")}
    )
    assert result.returncode == 0, result.stderr
    run_span, outer_parent, outer_span, inner_parent = result.stdout.split()
    assert outer_parent == run_span and inner_parent == outer_span != run_span


def test_a_task_span_reaches_the_exporter_while_its_run_is_still_open(spans):
    from llqm_core.telemetry import task_spans

    with llqm.run("long run", store=False):
        with llqm.task("early", stage="work"):
            pass
        deadline = time.monotonic() + task_spans.BATCH_INTERVAL_S + 5
        while not spans.get_finished_spans() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [s.name for s in spans.get_finished_spans()] == [
            "early"
        ]  # built by the background thread
        with llqm.task("late", stage="work"):
            pass
        llqm.flush()
        assert [s.name for s in spans.get_finished_spans()] == ["early", "late"]


def test_a_span_processor_added_to_the_global_provider_receives_task_spans():
    """With no LLQM exporter chosen, spans are still built when another processor would read them."""
    code = textwrap.dedent(
        """
        import llqm_core as llqm
        from opentelemetry import trace
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        with llqm.run("r", store=False):
            exporter = InMemorySpanExporter()
            trace.get_tracer_provider().add_span_processor(SimpleSpanProcessor(exporter))
            with llqm.task("t", stage="work"):
                pass
        print(sorted(s.name for s in exporter.get_finished_spans()))
        """
    )
    result = run_python(code, env={"LLQM_EXPORTERS": "none"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['r', 't']"


def test_an_application_provider_gets_task_spans_with_the_ids_the_store_keeps(tmp_path):
    """The application made the provider, so LLQM cannot give it an id generator: it presets
    ids on its own tracer of that provider (the SDK tracer's ``id_generator``, which this test
    would see go)."""
    code = textwrap.dedent(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        import llqm_core as llqm
        with llqm.run("r") as run:
            with llqm.task("t", stage="work"):
                pass
        llqm.flush()
        (task,) = llqm.ProfileStore().tasks(run.id)
        (span,) = [s for s in exporter.get_finished_spans() if s.name == "t"]
        print(task.span_id, format(span.context.span_id, "016x"))
        """
    )
    result = run_python(
        code, env={"LLQM_EXPORTERS": "none", "LLQM_STORE": str(tmp_path / "s.sqlite")}
    )
    assert result.returncode == 0, result.stderr
    stored, exported = result.stdout.split()
    assert stored == exported


def test_a_forked_child_does_not_export_its_parents_pending_spans(tmp_path):
    spans_file = tmp_path / "spans.jsonl"
    code = textwrap.dedent(
        """
        import os
        import llqm_core as llqm
        with llqm.run("parent", store=False):
            with llqm.task("before fork", stage="work"):
                pass
            pid = os.fork()
            if pid == 0:
                llqm.flush()
                os._exit(0)
            os.waitpid(pid, 0)
        """
    )
    result = run_python(
        code, env={"LLQM_EXPORTERS": "jsonfile", "LLQM_SPANS_FILE": str(spans_file)}
    )
    assert result.returncode == 0, result.stderr
    names = [
        span["name"]
        for line in spans_file.read_text().splitlines()
        for resource in json.loads(line)["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    ]
    assert sorted(names) == ["before fork", "parent"]
