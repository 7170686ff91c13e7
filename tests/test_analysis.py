"""The critical path follows what the run waited on, and the bottleneck names the stage and
resource that dominate it."""

from __future__ import annotations

import os
import threading
import time

import pytest
from conftest import busy

import llqm_core as llqm
from llqm_core.analysis.report import build_report
from llqm_core.analysis.report_words import bottleneck_sentence
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
            busy(0.005)  # 60x shorter than the queue's wait: so on a loaded machine too
        with llqm.task("job", stage="execute") as job:
            with llqm.task("queue", stage="execute.queue"):
                time.sleep(0.3)
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
    from llqm_core.analysis.report_words import format_with_error

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


def test_time_in_no_task_is_reported_and_said_plainly_when_more_than_the_bottleneck(store_path):
    """The program's own code between recorded calls is in no task: the report gives its seconds
    beside the bottleneck (text, JSON, HTML), says plainly when it is more, and leaves warm-up
    (reported apart) out of it; the shares are of the wall time without warm-up, and say so."""
    from conftest import run_cli
    from rich.console import Console

    from llqm_core.analysis.html_report import html_report
    from llqm_core.analysis.report import analyse_run
    from llqm_core.analysis.report_console import render_report
    from llqm_core.analysis.report_words import no_task_sentence
    from llqm_core.runtime import warmup

    with llqm.run("own code between calls", config={"profile.program": "p.py"}) as run:
        with warmup.warmup("first thing", warmup.FIRST_CALL_STAGE):
            time.sleep(0.15)  # warm-up at the top level: apart, not "in no task"
        with llqm.task("compile", stage="transpile"):
            busy(0.03)
        busy(0.3)  # the program's own post-processing, which no task records
        with llqm.task("job", stage="execute"):
            time.sleep(0.02)
    store = llqm.ProfileStore(store_path)
    analysed = analyse_run(store, run.id)
    report = analysed.report
    outside, found = report["no_task"], report["bottleneck"]
    gaps = report["run"]["wall_s"] - report["warmup"]["wall_s"] - report["run"]["busy_s"]
    assert outside["wall_s"] == pytest.approx(gaps, abs=0.05)  # tasks one after another
    assert 0.28 <= outside["wall_s"] < report["run"]["work_wall_s"]
    assert outside["more_than_bottleneck"] and outside["wall_s"] > found["seconds"]
    assert outside["share"] == pytest.approx(outside["wall_s"] / report["run"]["work_wall_s"])
    sentence = no_task_sentence(report)
    assert sentence.startswith("Not in any task: ")
    assert "of the run's wall time without warm-up, more than the bottleneck's" in sentence
    assert "wrap it in llqm.task" in sentence
    assert "of the run's wall time without warm-up (" in bottleneck_sentence(report)
    console = Console(record=True, width=300)
    render_report(report, console)
    text = console.export_text()
    assert text.index("Bottleneck:") < text.index("Not in any task:")
    page = html_report(report, analysed.tasks, analysed.own)
    assert '<p id="no-task"><b>Not in any task:</b>' in page and "more than the bottleneck" in page
    done = run_cli("--store", str(store_path), "report", run.id, "--json")
    assert done.returncode == 0, done.stderr
    import json

    assert json.loads(done.stdout)["no_task"] == pytest.approx(outside)


def test_time_in_no_task_is_the_wall_less_the_union_of_the_tasks(store_path):
    """Overlapping tasks on two threads, nested ones, one left open at the end, and the hardware
    monitor's task (beside the whole run, never a task's time): the same seconds as counting
    which of a run's steps some task covers, in any order of the tasks."""
    import random

    from llqm_core.analysis.no_task import no_task_seconds
    from llqm_core.model.hardware import MONITOR_STAGE
    from llqm_core.model.records import Profile, TaskRecord, TaskStatus

    ms = 1_000_000

    def task(i, start, end, stage="work", parent=None):
        return TaskRecord(
            id=f"t{i}",
            run_id="r",
            name=f"t{i}",
            stage=stage,
            status=TaskStatus.COMPLETED,
            start_ns=start * ms,
            end_ns=None if end is None else end * ms,
            trace_id="0" * 32,
            span_id=f"{i:016x}",
            parent_id=parent,
            profile=Profile(wall_s=0.0 if end is None else (end - start) / 1e3),
        )

    tasks = [
        task(0, 0, 1000, MONITOR_STAGE),  # the whole run: not the run's work
        task(1, 10, 40),
        task(2, 20, 30, parent="t1"),
        task(3, 35, 60),  # another thread, overlapping t1
        task(4, 70, 70),  # no time at all
        task(5, 80, 90, "warmup.import"),  # warm-up is a task, reported apart
        task(6, 95, None),  # still open when the run ended: to the run's end
        task(7, -50, 5),  # started before the run: only its part inside counts
    ]
    covered = [False] * 200
    for t in tasks[1:]:
        for step in range(max(t.start_ns // ms, 0), min((t.end_ns or 200 * ms) // ms, 200)):
            covered[step] = True
    expected = covered.count(False) / 1e3
    assert no_task_seconds(tasks, 0, 200 * ms) == pytest.approx(expected)  # 5-10, 60-80, 90-95
    assert expected == pytest.approx(0.030)
    shuffled = tasks[:]
    random.Random(1).shuffle(shuffled)
    assert no_task_seconds(shuffled, 0, 200 * ms) == pytest.approx(expected)
    assert no_task_seconds([], 0, 200 * ms) == pytest.approx(0.2)
    assert no_task_seconds(tasks, 0, None) is None  # a run still running has no such figure


def test_compare_and_the_bottleneck_say_their_wall_is_without_warm_up(store_path):
    """``llqm compare`` compares the wall time without warm-up (a first run pays imports a later
    one does not) and says so beside the whole, as ``llqm report`` shows it."""
    from conftest import run_cli

    from llqm_core.analysis.compare import compare_runs
    from llqm_core.runtime import warmup

    ids = []
    for name in ("first", "second"):
        with llqm.run(name) as run:
            with warmup.warmup(f"import for {name}", warmup.IMPORT_STAGE):
                time.sleep(0.2)
            with llqm.task("compile", stage="transpile"):
                busy(0.02)
        ids.append(run.id)
    store = llqm.ProfileStore(store_path)
    result = compare_runs(store, *ids)
    report = build_report(store, ids[0])
    assert result["a"]["wall_s"] == pytest.approx(report["run"]["work_wall_s"])
    assert result["a"]["run_wall_s"] == pytest.approx(report["run"]["wall_s"])
    assert result["a"]["run_wall_s"] - result["a"]["wall_s"] >= 0.2
    done = run_cli("--store", str(store_path), "compare", *ids)
    assert done.returncode == 0, done.stderr
    heading = done.stdout.splitlines()[0]
    assert " without warm-up (" in heading and " with it)" in heading
    assert "of the run's wall time without warm-up" in bottleneck_sentence(report)


def test_cost_per_step_counts_the_circuits_a_transpile_step_compiled(store_path):
    """A step's ``circuits`` are those its execute tasks ran; ``circuits_transpiled`` those its
    innermost transpile tasks compiled, so a pipeline's step around the call that compiles, or a
    parallel transpile's workers under it, count each circuit once."""
    from llqm_core.analysis.report_words import transpiled_text

    with llqm.run("steps") as run:
        with llqm.task("transpile", stage="transpile") as call:
            call.annotate({"transpile.circuits": 5})
        with llqm.task("step", stage="transpile") as step:  # a pipeline's step around the call
            step.annotate({"circuit.qubits": 3})
            with llqm.task("transpile", stage="transpile") as inner:
                inner.annotate({"transpile.circuits": 3})
        with llqm.task("old", stage="transpile") as old:  # stored before the count: described
            old.annotate({"circuits": 2, "circuit.qubits": 3})
        with llqm.task("calls", stage="transpile"):  # at detail calls, before the count
            pass
        with llqm.task("job", stage="execute") as job:
            job.annotate({"execute.circuits": 5, "result.shots": 5000})
    costs = build_report(llqm.ProfileStore(store_path), run.id)["costs"]
    found = {(c["task"], c["stage"]): c for c in costs}
    assert found["transpile", "transpile"]["circuits_transpiled"] == 5
    assert found["transpile", "transpile"]["circuits"] == 0  # none run
    assert found["step", "transpile"]["circuits_transpiled"] == 3  # not 1 + 3
    assert found["old", "transpile"]["circuits_transpiled"] == 2
    assert found["calls", "transpile"]["circuits_transpiled"] is None
    assert transpiled_text(found["calls", "transpile"]) == "-"
    assert found["job", "execute"]["circuits"] == 5
    assert found["job", "execute"]["circuits_transpiled"] == 0
