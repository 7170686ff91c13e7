"""The critical path follows what the run waited on, and the bottleneck names the stage and
resource that dominate it."""

from __future__ import annotations

import os
import threading
import time

import pytest
from conftest import busy

import llqm_core as llqm
from llqm_core.analysis.report import bottleneck_sentence, build_report
from llqm_core.analysis.summary import bottleneck, critical_path, exclusive_times


def test_the_critical_path_goes_through_what_the_run_waited_for(store_path):
    with llqm.run("paths") as run:
        with llqm.task("load", stage="generate") as load:
            time.sleep(0.03)

        def side() -> (
            None
        ):  # runs between load and work, but work does not need it: not on the path
            with llqm.run_context(run), llqm.task("side", stage="side"):
                time.sleep(0.01)

        helper = threading.Thread(target=side)
        helper.start()
        helper.join()
        with llqm.task("work", stage="compute", depends_on=[load]):
            with llqm.task("prepare", stage="compute.prepare"):
                time.sleep(0.02)
            with llqm.task("crunch", stage="compute.crunch"):
                busy(0.15)
        with llqm.task("wait for device", stage="execute.queue") as queue:
            time.sleep(0.05)
            queue.record_usage(queue_s=30.0)
    tasks = llqm.ProfileStore(store_path).tasks(run.id)
    names = [t.name for t in critical_path(tasks)]
    assert names == [
        "load",
        "prepare",
        "crunch",
        "wait for device",
    ]  # work consumed load's output, not side's
    found = bottleneck(
        tasks, run_wall_s=sum(t.profile.wall_s for t in tasks if t.parent_id is None)
    )
    # crunch spent 0.15 s on the CPU: "cpu" unless load stretched it past twice that ("wait")
    assert found["stage"] == "compute.crunch" and found["seconds"] >= 0.15
    assert found["resource"] == "cpu" or found["seconds"] > 0.3
    assert 0 < found["share"] < 1
    work = next(t for t in tasks if t.name == "work")
    prepare, crunch = (next(t for t in tasks if t.name == n) for n in ("prepare", "crunch"))
    assert exclusive_times(tasks)[work.id][0] == pytest.approx(  # its time is its children's
        max(work.profile.wall_s - prepare.profile.wall_s - crunch.profile.wall_s, 0.0)
    )
    report = build_report(llqm.ProfileStore(store_path), run.id)
    assert [
        next(t["name"] for t in report["tasks"] if t["id"] == i) for i in report["critical_path"]
    ] == names


def test_the_critical_path_joins_other_threads_only_along_a_data_edge(store_path):
    """A transpile in one worker thread that starts after a build in another ended did not wait
    for it, unless it consumed its output; order within one thread is a real edge."""
    import sqlite3

    def in_thread(run, name, after=(), seconds=0.01):
        def body() -> None:
            with llqm.run_context(run), llqm.task(name, stage=name, depends_on=after):
                time.sleep(seconds)

        worker = threading.Thread(target=body)
        worker.start()
        worker.join()

    with llqm.run("two workers") as apart:
        in_thread(apart, "build")
        in_thread(apart, "transpile", seconds=0.05)  # the longer: the path alone
    with llqm.run("one thread") as together:
        with llqm.task("build", stage="build"):
            pass
        with llqm.task("transpile", stage="transpile"):
            pass
    store = llqm.ProfileStore(store_path)
    assert [t.name for t in critical_path(store.tasks(apart.id))] == ["transpile"]
    assert [t.name for t in critical_path(store.tasks(together.id))] == ["build", "transpile"]
    report = build_report(store, apart.id)
    assert report["critical_path_guessed"] == [] and "guessed" not in bottleneck_sentence(report)
    store.close()
    with sqlite3.connect(store_path) as conn:  # as a store from before LLQM recorded threads
        conn.execute("UPDATE tasks SET thread = NULL")
    report = build_report(llqm.ProfileStore(store_path), apart.id)
    names = {t["id"]: t["name"] for t in report["tasks"]}
    assert [names[i] for i in report["critical_path"]] == ["build", "transpile"]
    assert [names[i] for i in report["critical_path_guessed"]] == ["build"]
    assert "1 of its links guessed from timing" in bottleneck_sentence(report)


def test_waiting_for_a_queue_is_named_as_such(store_path):
    with llqm.run("queued") as run:
        with llqm.task("compile", stage="transpile"):
            busy(0.02)
        with llqm.task("job", stage="execute") as job:
            with llqm.task("queue", stage="execute.queue"):
                time.sleep(0.2)
            job.record_usage(queue_s=120.0)
    tasks = llqm.ProfileStore(store_path).tasks(run.id)
    found = bottleneck(tasks, None)
    assert found["stage"] == "execute.queue" and found["resource"] == "queue"
    assert found["share"] == pytest.approx(
        found["seconds"] / sum(t.profile.wall_s for t in tasks if t.parent_id is None), rel=0.3
    )


def test_compare_puts_two_runs_side_by_side_stage_by_stage(store_path):
    import json

    from conftest import run_cli

    with llqm.run("slow version") as first:
        with llqm.task("compile", stage="transpile"):
            busy(0.06)
        with llqm.task("post", stage="postprocess") as post:
            post.annotate(
                {"fidelity.ideal": 1.0, "fidelity.mitigated": 0.9, "fidelity.error_mitigated": 0.1}
            )
    with llqm.run("fast version") as second:
        with llqm.task("compile", stage="transpile"):
            busy(0.02)
        with llqm.task("cache", stage="transpile.cache"):
            pass
        with llqm.task("post", stage="postprocess") as post:
            post.annotate(
                {
                    "fidelity.ideal": 1.0,
                    "fidelity.mitigated": 0.95,
                    "fidelity.error_mitigated": 0.05,
                }
            )
    done = run_cli("--store", str(store_path), "compare", first.id[:10], second.id, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["a"]["id"] == first.id and result["b"]["id"] == second.id
    transpile = result["stages"]["transpile"]["cpu_s"]  # the work done: load stretches wall time
    assert transpile["b"] < transpile["a"] and transpile["ratio"] < 0.6
    assert result["stages"]["transpile.cache"]["wall_s"]["a"] is None  # only b has it
    assert result["fidelity"]["error_mitigated"]["difference"] == pytest.approx(-0.05)
    table = run_cli("--store", str(store_path), "compare", first.id, second.id)
    assert (
        table.returncode == 0
        and "Per stage, a -> b" in table.stdout
        and "transpile.cache" in table.stdout
    )
    assert run_cli("--store", str(store_path), "compare", first.id, "nope").returncode == 2


def test_a_run_exports_as_a_chrome_trace_with_lanes_and_counters(store_path, tmp_path):
    import json

    from conftest import run_cli

    with llqm.run("for perfetto") as run:

        def worker(name: str) -> None:
            with llqm.run_context(run), llqm.task(name, stage="transpile"):
                busy(0.05)

        threads = [threading.Thread(target=worker, args=(f"compile {i}",)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with llqm.task("job", stage="execute"):
            with llqm.task("queue", stage="execute.queue"):
                time.sleep(0.02)
            with llqm.task("simulate", stage="execute.simulate"):
                busy(0.02)
    out = tmp_path / "trace.json"
    done = run_cli(
        "--store", str(store_path), "trace", run.id, "--format", "chrome", "-o", str(out)
    )
    assert done.returncode == 0, done.stderr
    events = json.loads(out.read_text())["traceEvents"]
    complete = {e["name"]: e for e in events if e["ph"] == "X"}
    assert set(complete) == {"compile 0", "compile 1", "job", "queue", "simulate"}
    lanes = {
        e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"
    }
    assert complete["compile 0"]["tid"] != complete["compile 1"]["tid"]  # they overlapped
    assert (
        lanes[complete["queue"]["tid"]] == "queue"
        and complete["simulate"]["tid"] == complete["job"]["tid"]
    )
    job = complete["job"]
    assert (
        job["ts"] <= complete["simulate"]["ts"]
        and complete["simulate"]["ts"] + complete["simulate"]["dur"] <= job["ts"] + job["dur"] + 1
    )
    report = build_report(llqm.ProfileStore(store_path), run.id)
    parallel = report["concurrency"]
    # what load cannot move: the leaves' 0.12 s of CPU over the run's wall, at most the machine's cores
    assert parallel["max_parallel_tasks"] == 2
    assert parallel["mean_busy_cores"] * report["run"]["wall_s"] >= 0.12 - 1e-3
    assert parallel["mean_busy_cores"] <= parallel["cpus"] == os.cpu_count()
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert counters == {"memory (MiB)", "cpu (%)"}
    simulate = next(t for t in report["tasks"] if t["name"] == "simulate")
    steps = [e["args"]["cpu"] for e in events if e["name"] == "cpu (%)"]
    share = min(100 * simulate["cpu_s"] / simulate["wall_s"], 100 * os.cpu_count())
    assert any(
        v == pytest.approx(share) for v in steps
    )  # each innermost task's CPU share, as measured


def test_tasks_come_out_as_a_dataframe_and_as_json_lines(store_path):
    import json

    from conftest import run_cli

    with llqm.run("tabular") as run:
        with llqm.task("build", stage="generate") as build:
            build.annotate({"circuit.qubits": 5})
        with llqm.task("job", stage="execute") as job:
            job.record_usage(qpu_s=2.5, queue_s=10.0)
    frame = llqm.dataframe(run.id, store=store_path)
    assert list(frame["stage"]) == ["generate", "execute"]
    assert frame.loc[frame.stage == "execute", "qpu_s"].item() == 2.5
    assert frame.loc[frame.stage == "generate", "metrics.circuit.qubits"].item() == 5
    lines = run_cli("--store", str(store_path), "report", run.id, "--jsonl").stdout.splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["name"] for r in rows] == ["build", "job"] and rows[1]["queue_s"] == 10.0
    assert rows[0]["metrics.circuit.qubits"] == 5 and rows[0]["run_id"] == run.id


def test_a_value_with_its_standard_error_is_quoted_to_the_errors_two_significant_figures():
    from llqm_core.analysis.report import format_with_error

    assert format_with_error(0.638, 0.007599) == "0.6380 ± 0.0076"
    assert format_with_error(-2.837, 0.05) == "-2.837 ± 0.050"
    assert format_with_error(123.4, 12.0) == "123 ± 12"
    assert format_with_error(0.5, 0.0) == "0.5 ± 0"


def test_busy_cores_count_every_task_own_cpu_not_only_the_innermost(store_path):
    """A step that does its work itself and then calls a short child (a Prefect task whose
    transpile is a child task) kept a core busy for its own CPU: the mean busy cores is the
    tasks' own CPU over the run's wall, never above the machine's cores."""
    with llqm.run("compile steps") as run:
        for index in range(2):
            with llqm.task(f"compile_it {index}", stage="compile"):
                busy(0.1)
                with llqm.task("transpile", stage="transpile"):
                    time.sleep(0.001)
    report = build_report(llqm.ProfileStore(store_path), run.id)
    own_cpu = sum(t["own_cpu_s"] for t in report["tasks"])
    busy_cores = report["concurrency"]["mean_busy_cores"]
    assert busy_cores == pytest.approx(min(own_cpu / report["run"]["wall_s"], os.cpu_count()))
    children = sum(t["cpu_s"] for t in report["tasks"] if t["stage"] == "transpile")
    assert own_cpu >= 0.2 > children  # the steps' own work counts, not only the children's
    assert busy_cores <= os.cpu_count()
