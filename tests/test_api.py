"""The public face of the core: runs, tasks, nesting, dependencies, failure."""

from __future__ import annotations

import asyncio
import threading

import pytest

import llqm_core as llqm
import llqm_core.plugin


def stored(store_path, run):
    store = llqm.ProfileStore(store_path)
    return store.run(run.id), {t.name: t for t in store.tasks(run.id)}


def test_nested_tasks_get_parent_ids_and_nested_spans(store_path, spans):
    with llqm.run("nesting") as run:
        with llqm.task("outer", stage="transpile") as outer:
            with llqm.task("inner", stage="transpile.layout") as inner:
                pass
        with llqm.task("sibling"):
            pass
    _, tasks = stored(store_path, run)
    assert tasks["inner"].parent_id == outer.id
    assert tasks["outer"].parent_id is None and tasks["sibling"].parent_id is None
    assert tasks["inner"].stage == "transpile.layout" and tasks["sibling"].stage == "sibling"

    by_name = {s.name: s for s in spans.get_finished_spans()}
    run_span = by_name["nesting"]
    assert by_name["inner"].parent.span_id == by_name["outer"].context.span_id
    assert by_name["outer"].parent.span_id == run_span.context.span_id
    assert {s.context.trace_id for s in by_name.values()} == {run_span.context.trace_id}
    assert (
        format(by_name["inner"].context.span_id, "016x") == tasks["inner"].span_id == inner.id
    )  # one name in both
    assert (
        tasks["outer"].parent_span_id == run.record.span_id
        and tasks["inner"].parent_span_id == outer.id
    )
    assert by_name["inner"].attributes["llqm.task.id"] == inner.id
    assert by_name["inner"].attributes["llqm.stage"] == "transpile.layout"
    assert all(key.startswith("llqm.") for key in by_name["inner"].attributes)


def test_a_task_started_under_another_span_of_the_run_hangs_under_it(store_path):
    from opentelemetry import trace

    with llqm.run("engine") as run:
        with trace.get_tracer("some.engine").start_as_current_span("engine step") as step:
            with llqm.task("inside"):
                pass
        with llqm.task("after"):
            pass
    _, tasks = stored(store_path, run)
    assert tasks["inside"].parent_span_id == format(step.get_span_context().span_id, "016x")
    assert tasks["after"].parent_span_id == run.record.span_id


def test_depends_on_takes_handles_and_ids(store_path):
    with llqm.run("deps") as run:
        with llqm.task("a") as a:
            pass
        with llqm.task("b") as b:
            pass
        with llqm.task("c", depends_on=[a, b.id]):
            pass
    _, tasks = stored(store_path, run)
    assert tasks["c"].depends_on == [a.id, b.id]
    with pytest.raises(TypeError, match="depends_on takes task handles or task id strings"):
        with llqm.run("bad deps"):
            with llqm.task("d", depends_on=[42]):
                pass


def test_decorated_tasks_record_data_dependencies_from_their_arguments(store_path):
    class Circuit:  # any object that can be weakly referenced is tracked
        pass

    @llqm.task(stage="generate")
    def make() -> Circuit:
        return Circuit()

    @llqm.task(stage="transpile")
    def compile_(circuit: Circuit) -> list[Circuit]:
        return [Circuit(), Circuit()]

    @llqm.task
    def run_all(circuits: list[Circuit]) -> int:
        return len(circuits)

    with llqm.run("data deps") as run:
        made = make()
        compiled = compile_(made)
        run_all(compiled)
        run_all([compiled[0]])
    store = llqm.ProfileStore(store_path)
    tasks = store.tasks(run.id)
    ids = {t.name: t.id for t in tasks}
    make_task, compile_task, first, second = tasks
    assert compile_task.depends_on == [ids["make"]]
    assert first.depends_on == [ids["compile_"]] and second.depends_on == [ids["compile_"]]
    assert first.stage == "run_all" and first.name.endswith("run_all")


def test_a_task_outside_any_run_opens_an_implicit_run(store_path):
    @llqm.task(stage="generate")
    def lonely() -> int:
        return 1

    assert llqm.current_run() is None
    lonely()
    store = llqm.ProfileStore(store_path)
    run = store.run()
    assert run.name.endswith("lonely") and run.status is llqm.RunStatus.COMPLETED
    assert [t.stage for t in store.tasks(run.id)] == ["generate"]
    assert llqm.current_run() is None


def test_failing_task_marks_task_span_and_run_failed_and_keeps_what_was_measured(store_path, spans):
    with pytest.raises(ZeroDivisionError):
        with llqm.run("fails") as run:
            with llqm.task("ok") as ok:
                ok.annotate(shots=10)
            with llqm.task("boom", stage="execute"):
                _ = 1 / 0
    record, tasks = stored(store_path, run)
    assert record.status is llqm.RunStatus.FAILED and "ZeroDivisionError" in record.error
    assert tasks["ok"].status is llqm.TaskStatus.COMPLETED and tasks["ok"].metrics == {"shots": 10}
    assert tasks["boom"].status is llqm.TaskStatus.FAILED
    assert (
        tasks["boom"].error_type == "ZeroDivisionError"
        and "division by zero" in tasks["boom"].error
    )
    assert tasks["boom"].profile.wall_s > 0
    boom = next(s for s in spans.get_finished_spans() if s.name == "boom")
    assert boom.status.status_code.name == "ERROR"
    assert any(e.name == "exception" for e in boom.events)
    run_span = next(s for s in spans.get_finished_spans() if s.name == "fails")
    assert run_span.status.status_code.name == "ERROR"


def test_keyboard_interrupt_ends_the_run_interrupted(store_path):
    with pytest.raises(KeyboardInterrupt):
        with llqm.run("ctrl-c") as run:
            with llqm.task("waiting"):
                raise KeyboardInterrupt
    record, tasks = stored(store_path, run)
    assert record.status is llqm.RunStatus.INTERRUPTED
    assert tasks["waiting"].status is llqm.TaskStatus.INTERRUPTED


def test_annotate_rejects_values_that_cannot_be_span_attributes(store_path):
    with llqm.run("metrics"):
        with llqm.task("t") as t:
            t.annotate({"circuit.qubits": 5}, shots=100, labels=["a", "b"])
            with pytest.raises(ValueError, match="metric 'bad' has a value of type dict"):
                t.annotate(bad={"x": 1})
            with pytest.raises(ValueError, match="reserved"):
                t.annotate({"cpu.time_s": 1.0})
            llqm.annotate(depth=3)
    assert t.record.metrics == {"circuit.qubits": 5, "shots": 100, "labels": ["a", "b"], "depth": 3}
    with pytest.raises(RuntimeError, match="outside any task"):
        llqm.annotate(x=1)


def test_numbers_skip_the_checks_and_anything_else_is_checked_as_annotate_checks_it(store_path):
    with llqm.run("numbers"):
        with llqm.task("t") as t:
            t.annotate_numbers({"transpile.pass.A.calls": 2, "transpile.pass.A.time_s": 0.5})
            with pytest.raises(ValueError, match="reserved"):
                t.annotate_numbers({"cpu.time_s": 1.0})
            with pytest.raises(ValueError, match="metric 'bad' has a value of type dict"):
                t.annotate_numbers({"bad": {"x": 1}})
            t.annotate_numbers({"api_token": "secret-value-123"})  # a string: redacted as usual
    assert t.record.metrics == {
        "transpile.pass.A.calls": 2,
        "transpile.pass.A.time_s": 0.5,
        "api_token": "[redacted]",
    }


def test_async_functions_can_be_tasks(store_path):
    @llqm.task(stage="execute")
    async def job(x: int) -> int:
        await asyncio.sleep(0.01)
        return x * 2

    with llqm.run("async") as run:
        assert asyncio.run(job(21)) == 42
    _, tasks = stored(store_path, run)
    assert list(tasks.values())[0].profile.wall_s >= 0.01


def test_usage_hardware_and_decisions_are_kept(store_path):
    snapshot = llqm.HardwareSnapshot(
        backend="toy",
        num_qubits=2,
        qubits={0: llqm.QubitCalibration(t1_s=1e-4), 1: llqm.QubitCalibration(t1_s=2e-4)},
        gates=[llqm.GateCalibration("cz", (0, 1), error=0.01, duration_s=8e-8)],
    )
    with llqm.run("usage") as run:
        beside = llqm.plugin.start_task(
            "beside", activate=False
        )  # running at the same time, reporting nothing
        with llqm.task("execute") as t:
            t.record_usage(qpu_s=1.5, queue_s=10)
            t.record_usage(qpu_s=0.5)
            fingerprint = t.use_hardware(snapshot)
            run.record_decision(
                llqm.PolicyDecision(
                    policy="layout", choice={"qubits": [0, 1]}, rationale="lowest cz error"
                )
            )
            with pytest.raises(ValueError, match="qpu_s must be 0 or more"):
                t.record_usage(qpu_s=-1)
        llqm.plugin.finish_task(beside)
    store = llqm.ProfileStore(store_path)
    (task,) = (t for t in store.tasks(run.id) if t.name == "execute")
    assert task.profile.qpu_s == 2.0 and task.profile.queue_s == 10.0
    assert beside.record.profile.qpu_s is None and beside.record.profile.queue_s is None
    with llqm.run("usage again"), llqm.task("next") as later:
        assert later.record.profile.qpu_s is None
    assert task.hardware == fingerprint == snapshot.fingerprint
    assert store.snapshot(fingerprint).gates[0].qubits == (0, 1)
    decision = store.decisions(run.id)[0]
    assert (
        decision.policy == "layout"
        and decision.task_id == task.id
        and decision.choice == {"qubits": [0, 1]}
    )


def test_snapshot_fingerprint_follows_calibration_not_time():
    one = llqm.HardwareSnapshot(
        backend="b", num_qubits=1, taken_at=1.0, qubits={0: llqm.QubitCalibration(t1_s=1e-4)}
    )
    later = llqm.HardwareSnapshot(
        backend="b", num_qubits=1, taken_at=2.0, qubits={0: llqm.QubitCalibration(t1_s=1e-4)}
    )
    drifted = llqm.HardwareSnapshot(
        backend="b", num_qubits=1, taken_at=2.0, qubits={0: llqm.QubitCalibration(t1_s=9e-5)}
    )
    assert one.fingerprint == later.fingerprint != drifted.fingerprint
    assert llqm.HardwareSnapshot.from_dict(drifted.to_dict()) == drifted


def test_store_false_keeps_only_spans(spans):
    with llqm.run("no store", store=False) as run:
        with llqm.task("t"):
            pass
    assert run.store is None
    assert {s.name for s in spans.get_finished_spans()} == {"no store", "t"}


def test_one_task_object_entered_in_many_threads_at_once_finishes_each_threads_own_task(
    store_path,
):
    shared = llqm.task("shared", stage="work")
    together = threading.Barrier(4)
    with llqm.run("threads") as run:

        def work(index: int) -> None:
            with llqm.run_context(run), shared as handle:
                together.wait(timeout=30)  # all four are open at once
                handle.annotate(index=index)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    tasks = llqm.ProfileStore(store_path, readonly=True).tasks(run.id)
    assert sorted(t.metrics["index"] for t in tasks) == [0, 1, 2, 3]
    assert all(t.status is llqm.TaskStatus.COMPLETED for t in tasks)


def test_running_tasks_share_no_profile_object():
    with llqm.run("profiles", store=False):
        with llqm.task("outer") as outer, llqm.task("inner") as inner:
            assert outer.record.profile is not inner.record.profile
            inner.record_usage(queue_s=2.0)
            assert outer.record.profile.queue_s is None


def test_a_task_ended_by_its_handle_is_kept_as_finish_task_keeps_it(store_path):
    """``TaskHandle.finish`` (what instrumentors call) makes no record on the task's path; the
    record read afterwards is the stored task, made once; while a task runs, ``record`` is what
    it is so far."""
    with llqm.run("ended by handle", store=store_path) as run:
        parent = llqm.plugin.start_task("parent", "work")
        handle = llqm.plugin.start_task("child", "work.step", run=run, parent=parent)
        handle.annotate(circuits=3)
        handle.record_usage(qpu_s=0.5)
        running = handle.record
        assert running.status is llqm.TaskStatus.RUNNING and running.end_ns is None
        assert running.profile.qpu_s == 0.5 and running.metrics == {"circuits": 3}
        handle.finish()
        with pytest.raises(ValueError):
            with parent:
                raise ValueError("the parent fails")
        ended = handle.record
        assert ended is handle.record  # made once the task ended
        last = llqm.plugin.finish_task(llqm.plugin.start_task("last", run=run))
    stored = {t.name: t for t in llqm.ProfileStore(store_path, readonly=True).tasks(run.id)}
    child = stored["child"]
    assert child == ended and child.parent_id == parent.id == stored["parent"].id
    assert child.status is llqm.TaskStatus.COMPLETED and child.profile.qpu_s == 0.5
    assert child.profile.wall_s > 0 and child.profile.readings.startswith("light")
    assert stored["parent"].status is llqm.TaskStatus.FAILED
    assert stored["parent"].error_type == "ValueError"
    assert stored["last"] == last and last.status is llqm.TaskStatus.COMPLETED


def test_a_runs_detail_is_kept_with_it_and_read_by_a_process_that_joins_it(store_path):
    from llqm_core.runtime.active_run import ActiveRun

    with llqm.run("calls alone", store=store_path, detail="calls") as run:
        assert not run.full_detail and run.kept.cap == 0  # keeps no results unless asked to
        joined = ActiveRun.attach(run.id, store_path)  # as a worker process joins it
        assert joined.detail == "calls" and joined.kept.cap == 0
    assert llqm.ProfileStore(store_path).run(run.id).config == {"llqm.detail": "calls"}
    with llqm.run("asked to keep", store=store_path, detail="CALLS", keep_results="1MB") as run:
        assert run.detail == "calls" and run.kept.cap == 2**20
    with llqm.run("default", store=store_path) as run:
        assert run.full_detail and run.config == {}
    with pytest.raises(
        llqm.UserError, match=r"^detail must be 'full' .* or 'calls' .*, not 'most'\.$"
    ):
        with llqm.run("wrong", store=store_path, detail="most"):
            pass
