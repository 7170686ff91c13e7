"""The figures a report adds up in the database are the ones it adds up from the tasks it reads,
on SQLite and PostgreSQL: per stage (own and inclusive time, QPU and queue seconds, a model's
flags, peak memory) and the CPU that busy cores count; and a finished run's report is kept in the
store and read back while the run has not changed."""

from __future__ import annotations

import contextvars
import io
import json
import threading
from collections.abc import Callable, Iterator

import pytest
from conftest import plain_sql

import llqm_core as llqm
from llqm_core.analysis.report import analyse_run, build_report, stage_totals, write_report_json
from llqm_core.analysis.summary import exclusive_times
from llqm_core.model.records import PolicyDecision


def _mixed_run(store: str) -> str:
    """Nesting three deep, a worker thread, a failed task, a warm-up, modelled QPU seconds, a
    cached task, a task still running when its run ended, and tasks of another run beside it."""
    with llqm.run("mixed", store=store) as run:
        with llqm.task("step", stage="transpile") as step:
            with llqm.task("import qiskit", stage="warmup.import"):
                pass
            with llqm.task("layout", stage="transpile.layout"):
                with llqm.task("route", stage="transpile.route"):
                    sum(range(20_000))

            def worker() -> None:
                with llqm.task("in a thread", stage="transpile.layout"):
                    sum(range(10_000))

            inside = contextvars.copy_context()  # the thread's task is the step's child
            helper = threading.Thread(target=inside.run, args=(worker,))
            helper.start()
            helper.join()
        with llqm.task("run", stage="execute", depends_on=[step]) as job:
            job.record_usage(qpu_s=0.25, queue_s=1.5)
            job.annotate({"qpu.modelled": True, "queue.modelled": True})
        with llqm.task("measured", stage="execute") as job:
            job.record_usage(qpu_s=0.5)
        with pytest.raises(ValueError), llqm.task("broken", stage="postprocess"):
            raise ValueError("no counts")
        llqm.task("never ended", stage="postprocess").__enter__()
    with llqm.run("other", store=store), llqm.task("elsewhere", stage="transpile"):
        pass
    return run.id


@pytest.fixture
def opened() -> Iterator[Callable[[str], llqm.ProfileStore]]:
    """Open a store for reading; closed after the test."""
    stores: list[llqm.ProfileStore] = []

    def open_store(location: str) -> llqm.ProfileStore:
        stores.append(llqm.ProfileStore(location, readonly=True))
        return stores[-1]

    yield open_store
    for store in stores:
        store.close()


def test_stages_added_up_in_the_database_are_those_added_up_from_the_tasks(store_location, opened):
    run_id = _mixed_run(store_location)
    store = opened(store_location)
    run = store.run(run_id)
    tasks = store.task_outlines(run)
    own = exclusive_times(tasks)
    summed = store.stage_figures(run)
    assert summed is not None
    stages, own_cpu = summed
    expected = stage_totals(tasks, own)
    assert list(stages) == list(expected)  # in the order the stages began
    for stage, entry in stages.items():
        assert entry == pytest.approx(expected[stage], rel=1e-9, abs=1e-12), stage
    assert {s: {k: type(v) for k, v in e.items()} for s, e in stages.items()} == {
        s: {k: type(v) for k, v in e.items()} for s, e in expected.items()
    }
    assert stages["execute"]["qpu_modelled"] and stages["execute"]["qpu_s"] == 0.75
    assert "warmup.import" not in stages and stages["postprocess"]["tasks"] == 2
    assert own_cpu == pytest.approx(sum(cpu for _, cpu in own.values()), rel=1e-9)
    ranked = sorted(own, key=lambda task_id: -own[task_id][0])[:3]
    listed = analyse_run(store, run_id, keep_tasks=3).report["tasks"]
    assert {t["id"] for t in listed} == set(ranked)
    assert [t["own_wall_s"] for t in listed] == pytest.approx([own[t["id"]][0] for t in listed])


def _mark_kept(location: str) -> None:
    """Rename the run in its kept reports, as only a report read back from them shows it."""
    plain_sql(location, "UPDATE analyses SET report = replace(report, '\"mixed\"', '\"kept\"')")


def test_a_finished_runs_analysis_is_kept_and_read_back_until_the_run_changes(
    store_location, opened
):
    run_id = _mixed_run(store_location)
    store = opened(store_location)
    first = build_report(store, run_id, keep_tasks=3)
    again = build_report(store, run_id, keep_tasks=3)
    assert json.loads(json.dumps(first, default=str)) == json.loads(json.dumps(again, default=str))
    [row] = plain_sql(store_location, f"SELECT run_id FROM analyses WHERE run_id = '{run_id}'")
    # What is read back is the kept report: marked in the store, the mark shows ...
    _mark_kept(store_location)
    assert build_report(store, run_id, keep_tasks=0)["run"]["name"] == "kept"
    assert [t["id"] for t in build_report(store, run_id, keep_tasks=3)["tasks"]] == [
        t["id"] for t in first["tasks"]
    ]
    # ... until the run gains a row: then it is analysed again.
    writer = llqm.ProfileStore(store_location)
    writer.save_decision(PolicyDecision("late", {}, "after the run", run_id=run_id))
    writer.close()
    assert build_report(store, run_id, keep_tasks=0)["run"]["name"] == "mixed"
    assert build_report(store, run_id, keep_tasks=0)["decisions"][0]["policy"] == "late"
    # ... or a row changes where a report reads it (a store from before threads were recorded)
    _mark_kept(store_location)
    assert build_report(store, run_id, keep_tasks=0)["run"]["name"] == "kept"
    plain_sql(store_location, f"UPDATE tasks SET thread = NULL WHERE run_id = '{run_id}'")
    assert build_report(store, run_id, keep_tasks=0)["run"]["name"] == "mixed"


def test_a_running_run_is_never_kept(store_location, opened):
    with llqm.run("still running", store=store_location) as run:
        with llqm.task("done", stage="work"):
            pass
        store = opened(store_location)
        assert build_report(store, run.id, keep_tasks=1)["task_count"] == 1
        assert plain_sql(store_location, "SELECT run_id FROM analyses") == []


def test_the_json_report_is_the_same_from_a_kept_analysis(store_location, opened):
    run_id = _mixed_run(store_location)
    store = opened(store_location)
    first, again = io.StringIO(), io.StringIO()
    write_report_json(store, run_id, first)  # analyses the run and keeps its analysis
    assert plain_sql(store_location, "SELECT run_id FROM analyses") == [{"run_id": run_id}]
    write_report_json(store, run_id, again)  # reads it back, own times from the database
    fresh, kept = json.loads(first.getvalue()), json.loads(again.getvalue())
    for ours, theirs in zip(kept["tasks"], fresh["tasks"], strict=True):
        for field in ("own_wall_s", "own_cpu_s"):  # summed in another order: the last digit
            mine, other = ours.pop(field), theirs.pop(field)
            assert mine == other or mine == pytest.approx(other, rel=1e-9)
    assert kept == fresh
