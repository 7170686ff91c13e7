"""A run that dies says what it was doing: the tasks running when its process was killed keep
their start, how long they had run and their memory at the sampler's last reading."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import ROOT, plain_sql

import llqm_core as llqm
from llqm_core.analysis.report import build_report
from llqm_core.store.in_flight import SLOT_SIZE, InFlightFile, in_flight_pattern, read_in_flight
from llqm_core.store.journal import Owner, journal_pattern
from llqm_core.store.profile_store import store_backend
from llqm_core.store.schema import TASK_COLUMNS

#: A pipeline whose second task grows by 40 MB a step until it is killed; it says each step.
GROWING = """
import time
import numpy as np
import llqm_core as llqm

with llqm.run("doomed", store={store!r}):
    with llqm.task("prepare", stage="prepare"):
        time.sleep(0.1)
    with llqm.task("outer", stage="execute"):
        with llqm.task("simulate", stage="execute.simulate"):
            blocks = []
            while True:
                blocks.append(np.ones(5_000_000))
                time.sleep(0.1)
                print("step", len(blocks), flush=True)
"""


def start_pipeline(code: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "LLQM_SAMPLE_INTERVAL": "0.05", **env},
    )


def wait_for_line(process: subprocess.Popen, wanted: str) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        if line.strip() == wanted:
            return
    raise AssertionError(f"the pipeline ended before {wanted!r}: {process.stderr.read()}")


def in_flight_files(location: str) -> list[str]:
    return glob.glob(in_flight_pattern(store_backend(location).journal_base))


def test_a_task_running_at_a_kill_keeps_its_start_time_run_and_last_rss(store_location):
    process = start_pipeline(GROWING.format(store=store_location))
    wait_for_line(process, "step 6")
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=30) == -signal.SIGKILL

    reading = llqm.ProfileStore(store_location, readonly=True)
    run = reading.run()
    assert run.status is llqm.RunStatus.INTERRUPTED
    tasks = {task.name: task for task in reading.tasks(run.id)}
    assert tasks["prepare"].status is llqm.TaskStatus.COMPLETED
    for name in ("outer", "simulate"):  # the task and its parent, both running
        task = tasks[name]
        assert task.status is llqm.TaskStatus.RUNNING_AT_EXIT
        assert task.profile.readings in ("last reading", "last reading+seen")
        assert task.end_ns is not None and task.end_ns > task.start_ns
        assert task.profile.wall_s >= 0.5  # six steps of 0.1 s slept
    simulate = tasks["simulate"].profile
    assert simulate.end_rss_bytes - simulate.start_rss_bytes >= 5 * 40_000_000 * 0.9
    assert simulate.peak_rss_bytes >= simulate.end_rss_bytes
    assert tasks["simulate"].parent_id == tasks["outer"].id

    report = build_report(reading, run.id)
    cut = report["cut_short"]["running_at_exit"]
    assert {entry["name"] for entry in cut} == {"outer", "simulate"}
    assert all(entry["ran_s"] >= 0.5 and entry["last_rss_bytes"] > 0 for entry in cut)
    assert report["bottleneck"]["stage"] == "execute.simulate"
    assert tasks["simulate"].id in report["critical_path"]
    reading.close()

    # The next writer keeps the readings in the database and removes the record beside it.
    assert in_flight_files(store_location)
    writing = llqm.ProfileStore(store_location)
    assert not in_flight_files(store_location)
    again = {task.name: task for task in writing.tasks(run.id)}
    assert again["simulate"].status is llqm.TaskStatus.RUNNING_AT_EXIT
    assert again["simulate"].profile.wall_s == pytest.approx(simulate.wall_s)
    writing.close()


#: A task whose thread enters C code that keeps the GIL (as a large transpile's native passes do
#: for seconds), so that no Python thread of the process, the sampler's included, runs meanwhile.
HOLDING = """
import time
import llqm_core as llqm

with llqm.run("held", store={store!r}):
    with llqm.task("native", stage="transpile"):
        time.sleep(0.3)
        print("holding", flush=True)
        sum(range(10**11))
"""


def killed_holding_the_gil(code: str, after_s: float) -> None:
    """Run ``code`` until it says "holding", then SIGKILL it ``after_s`` seconds later."""
    process = start_pipeline(code)
    wait_for_line(process, "holding")
    time.sleep(after_s)
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=30) == -signal.SIGKILL


def test_a_task_killed_while_native_code_holds_the_gil_runs_until_its_process_was_last_seen(
    tmp_path,
):
    """The sampler cannot tick while the GIL is held; the watch beside the in-flight file reads
    the process from outside, so the task's time runs to the kill, not to the last tick."""
    store = str(tmp_path / "held.sqlite")
    killed_holding_the_gil(HOLDING.format(store=store), after_s=1.5)

    base = store_backend(store).journal_base
    deadline = time.monotonic() + 10
    while True:  # the watch reads the process at its interval: it sees the death within one
        (record,) = read_in_flight(base, len(TASK_COLUMNS))
        if record.seen is not None and record.seen.died_by_ns is not None:
            break
        assert time.monotonic() < deadline, "the watch never wrote the process's death"
        time.sleep(0.1)
    assert record.seen.seen_ns <= record.seen.died_by_ns

    reading = llqm.ProfileStore(store, readonly=True)
    (task,) = reading.tasks(reading.run().id)
    assert task.status is llqm.TaskStatus.RUNNING_AT_EXIT
    assert task.profile.readings.endswith("+seen")
    assert task.profile.wall_s >= 1.5  # 0.3 s slept, then 1.5 s in C before the kill
    # alone in its process: the process's CPU since the last reading is its (it had slept till
    # then, so its own reading held almost none); a sixth of the 1.5 s, however loaded the machine
    assert task.profile.cpu_scope == "process" and task.profile.cpu_s >= 0.25
    assert task.end_ns == record.seen.seen_ns
    reading.close()


#: A task that starts once the sampler sleeps a minute, so that the sampler never reads it: its
#: start row alone is kept (the writer commits it within seconds) before its thread holds the GIL.
UNREAD = """
import time
import llqm_core as llqm
from llqm_core.runtime.sampler import set_sample_interval

with llqm.run("unread", store={store!r}):
    with llqm.task("first", stage="prepare"):
        time.sleep(0.3)
    set_sample_interval(60)
    time.sleep(0.2)
    with llqm.task("late", stage="transpile"):
        time.sleep(3)
        print("holding", flush=True)
        sum(range(10**11))
"""


#: A task that starts and at once keeps the GIL (the sampler asleep for a minute): neither the
#: sampler nor the writer's thread runs again before the kill; its journaled start alone is kept.
STARTS_HOLDING = UNREAD.replace("time.sleep(3)", "pass")


def test_a_task_whose_thread_keeps_the_gil_from_its_start_is_kept_by_its_journaled_start(
    tmp_path,
):
    store = str(tmp_path / "starts.sqlite")
    killed_holding_the_gil(STARTS_HOLDING.format(store=store), after_s=1)
    reading = llqm.ProfileStore(store, readonly=True)
    run = reading.run()
    tasks = {task.name: task for task in reading.tasks(run.id)}
    assert tasks["first"].status is llqm.TaskStatus.COMPLETED
    late = tasks["late"]
    assert late.status is llqm.TaskStatus.RUNNING_AT_EXIT
    assert late.profile.readings == "seen" and late.profile.wall_s >= 0.7  # 1 s, less a tick
    assert build_report(reading, run.id)["bottleneck"]["stage"] == "transpile"
    reading.close()
    writing = llqm.ProfileStore(store)
    assert writing.tasks(run.id)[-1].profile.wall_s == pytest.approx(late.profile.wall_s)
    writing.close()


@pytest.mark.slow
def test_a_task_with_no_reading_at_a_kill_runs_until_its_process_was_last_seen(tmp_path):
    """A task the sampler never read (started within a tick of the death) ran, at least, until
    the moment its process was last seen alive: the report's bottleneck counts it so, and the
    next writer keeps it so."""
    store = str(tmp_path / "unread.sqlite")
    killed_holding_the_gil(UNREAD.format(store=store), after_s=1)

    reading = llqm.ProfileStore(store, readonly=True)
    run = reading.run()
    tasks = {task.name: task for task in reading.tasks(run.id)}
    late = tasks["late"]
    assert late.status is llqm.TaskStatus.RUNNING_AT_EXIT
    assert late.profile.readings == "seen"
    assert late.profile.wall_s >= 3.5  # 3 s slept, then 1 s in C before the kill
    report = build_report(reading, run.id)
    assert report["bottleneck"]["stage"] == "transpile"
    (entry,) = report["cut_short"]["running_at_exit"]
    assert entry["name"] == "late" and entry["ran_s"] >= 3.5
    reading.close()

    writing = llqm.ProfileStore(store)  # folds the dead process's record into the database
    assert not in_flight_files(store)
    again = {task.name: task for task in writing.tasks(run.id)}
    assert again["late"].profile.wall_s == pytest.approx(late.profile.wall_s)
    writing.close()


def test_the_cli_report_says_the_run_did_not_end_and_names_the_task(tmp_path):
    store = str(tmp_path / "store.sqlite")
    process = start_pipeline(GROWING.format(store=store))
    wait_for_line(process, "step 3")
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    shown = subprocess.run(
        [sys.executable, "-m", "llqm_core.cli", "report", "--store", store],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    assert "The run did not end" in shown.stdout
    assert "simulate (execute.simulate): ran" in shown.stdout
    assert "running at exit" in shown.stdout


def test_a_finished_task_is_never_shown_as_running_at_exit(tmp_path):
    """The sampler's last record may name a task that ended after it: its finished row wins."""
    store = str(tmp_path / "store.sqlite")
    code = f"""
    import os, signal, time
    import llqm_core as llqm
    from llqm_core.runtime.sampler import shared_sampler
    with llqm.run("doomed", store={store!r}):
        with llqm.task("long", stage="work"):
            time.sleep(0.5)
            shared_sampler().interval_s = 60  # after its next tick, no more: the record names it
            time.sleep(0.3)
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGKILL)
    """
    process = start_pipeline(code, LLQM_SAMPLE_INTERVAL="0.05")
    assert process.wait(timeout=60) == -signal.SIGKILL
    rows = [row for record in read_in_flight(tmp_path / "store.sqlite", len(TASK_COLUMNS))
            for row in record.rows]  # fmt: skip
    assert [row[2] for row in rows] == ["long"]
    reading = llqm.ProfileStore(store, readonly=True)
    (task,) = reading.tasks(reading.run().id)
    assert task.status is llqm.TaskStatus.COMPLETED and task.profile.wall_s >= 0.8
    reading.close()
    writing = llqm.ProfileStore(store)  # commits the journal, then what the record still holds
    (task,) = writing.tasks(writing.run().id)
    assert task.status is llqm.TaskStatus.COMPLETED and task.profile.wall_s >= 0.8
    writing.close()


def row(task_id: str, start_ns: int, metrics: dict | None = None) -> list:
    """A running task's row as the in-flight record keeps it (its first columns and a reading)."""
    return [task_id, "run", "name", "stage", "running", None, [], start_ns, start_ns + 1,
            None, None, None, None, None, metrics or {}, None, 1.5]  # fmt: skip


WIDTH = len(row("", 0))


def test_a_write_cut_short_leaves_the_previous_record_readable(tmp_path, monkeypatch):
    monkeypatch.setattr(Owner, "is_gone", lambda owner: True)  # read as a dead process's
    base = tmp_path / "store.sqlite"
    record = InFlightFile(base)
    record.write([row("first-write", 1)])
    record.write([row("second-write", 2)])
    (found,) = read_in_flight(base, WIDTH)
    assert [r[0] for r in found.rows] == ["second-write"]
    with open(record.path, "r+b") as file:  # the last write's payload half copied
        data = file.read()
        # the header line, then the two slots (the second write went to the first), then the
        # watch's binary record of when the process was last seen, which may hold any byte
        slots = data.index(b"\n") + 1
        file.seek(data.index(b"second-write", slots, slots + SLOT_SIZE) + 3)
        file.write(b"\xff")
    (found,) = read_in_flight(base, WIDTH)
    assert [r[0] for r in found.rows] == ["first-write"]


def test_more_running_tasks_than_a_slot_holds_keep_the_earliest_started(tmp_path, monkeypatch):
    monkeypatch.setattr(Owner, "is_gone", lambda owner: True)
    base = tmp_path / "store.sqlite"
    record = InFlightFile(base)
    many = [row(f"task-{i:05d}" + "x" * 200, 10_000 - i) for i in range(2000)]
    record.write(many)
    (found,) = read_in_flight(base, WIDTH)
    kept = [r[7] for r in found.rows]
    assert 0 < len(kept) < 2000 and len(found.rows) * 200 < SLOT_SIZE
    assert max(kept) < min(r[7] for r in many if r[7] not in kept)


#: A small pipeline of nested tasks in two threads; it prints each task's name once the task
#: has ended (after its row is kept), so a kill at any moment can be checked against the store.
CHAOS = """
import contextvars, threading, time
import numpy as np
import llqm_core as llqm

def work(name, stage, seconds, grow=0):
    with llqm.task(name, stage=stage):
        kept = np.ones(grow) if grow else None
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            sum(range(2000))
    print("ended", name, flush=True)

def branch(prefix):
    for i in range(4):
        work(f"{{prefix}}-{{i}}", "execute.simulate", 0.1, grow=200_000)

with llqm.run("chaos-{index}", store={store!r}):
    work("generate", "generate", 0.05)
    with llqm.task("mitigate", stage="mitigate"):
        threads = [
            threading.Thread(target=contextvars.copy_context().run, args=(branch, p))
            for p in ("a", "b")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    print("ended", "mitigate", flush=True)
    work("postprocess", "postprocess", 0.05)
print("run ended", flush=True)
"""


@pytest.mark.slow
def test_twenty_runs_killed_at_random_moments_leave_every_finished_task_and_a_sound_store(
    tmp_path, capsys
):
    import random
    import sqlite3
    import time

    from llqm_core.cli import main

    seed = random.randrange(1 << 30)
    draw = random.Random(seed)
    store = str(tmp_path / "chaos.sqlite")
    ended: dict[str, set[str]] = {}
    for index in range(20):
        how = draw.choice((signal.SIGKILL, signal.SIGTERM, signal.SIGINT))
        process = start_pipeline(CHAOS.format(index=index, store=store))
        assert process.stdout is not None
        lines: list[str] = []
        # from the first task's end on: within the run, or (rarely) after it ended
        wait_for_line(process, "ended generate")
        lines.append("ended generate")
        time.sleep(draw.uniform(0.0, 0.8))
        process.send_signal(how)
        out, err = process.communicate(timeout=60)
        lines += out.splitlines()
        ended[f"chaos-{index}"] = {line.split()[1] for line in lines if line.startswith("ended")}
        assert "Traceback" not in err or how == signal.SIGINT, (seed, err)

    reading = llqm.ProfileStore(store, readonly=True)
    runs = {run.name: run for run in reading.runs()}
    assert set(runs) == set(ended), seed
    for name, run in runs.items():
        assert run.status in (llqm.RunStatus.INTERRUPTED, llqm.RunStatus.COMPLETED), (seed, name)
        tasks = {task.name: task for task in reading.tasks(run.id)}
        for task_name in ended[name]:  # every task seen to end is kept, whole
            assert tasks[task_name].status is llqm.TaskStatus.COMPLETED, (seed, name, task_name)
            assert tasks[task_name].profile.wall_s > 0, (seed, name, task_name)
        assert all(task.status is not llqm.TaskStatus.RUNNING for task in tasks.values())
        capsys.readouterr()
        assert main(["report", "--store", store, run.id]) == 0, (seed, name)
        assert run.name in capsys.readouterr().out
    reading.close()
    llqm.ProfileStore(store).close()  # the next writer folds what the dead ones left
    assert not glob.glob(store + "-journal-*") and not glob.glob(store + "-inflight-*")
    with sqlite3.connect(store) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_task_that_exceeds_the_memory_limit_is_named_with_its_rss_curve(tmp_path):
    """Under ``ulimit -v`` (RLIMIT_AS) the OS refuses the allocation: the task fails with a
    MemoryError that names the limit, and keeps the RSS it grew through."""
    store = str(tmp_path / "store.sqlite")
    code = f"""
    import resource, time
    import numpy as np
    import psutil
    import llqm_core as llqm

    with llqm.run("bounded", store={store!r}):
        with llqm.task("prepare", stage="prepare"):
            time.sleep(0.05)
        # 400 MB more address space than the process has now: the task below exceeds it
        limit = psutil.Process().memory_info().vms + 400_000_000
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
        with llqm.task("simulate", stage="execute.simulate"):
            blocks = []
            while True:
                blocks.append(np.ones(5_000_000))  # 40 MB a step
                time.sleep(0.05)
    """
    process = start_pipeline(code)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 1 and "MemoryError" in err
    reading = llqm.ProfileStore(store, readonly=True)
    run = reading.run()
    assert run.status is llqm.RunStatus.FAILED and "MemoryError" in run.error
    assert "process.memory.rlimit_as_bytes" not in run.resource  # set after the run began
    tasks = {task.name: task for task in reading.tasks(run.id)}
    simulate = tasks["simulate"]
    assert simulate.status is llqm.TaskStatus.FAILED
    assert "RLIMIT_AS" in simulate.metrics["memory.out_of_memory"]
    curve = simulate.metrics["memory.rss_curve"]
    assert len(curve) >= 3 and curve[-1][1] - curve[0][1] >= 200_000_000
    assert [point[0] for point in curve] == sorted(point[0] for point in curve)
    report = build_report(reading, run.id)
    assert report["out_of_memory"]["task"] == "simulate"
    assert "RLIMIT_AS" in report["out_of_memory"]["limits"]
    reading.close()


def test_a_run_killed_by_the_oom_killer_says_so_where_its_cgroup_counts_the_kill(tmp_path):
    """A cgroup v2 ``memory.events`` that counts one more ``oom_kill`` than at the run's start
    names the OOM killer as what ended the run (the kernel's file, written here as it writes it)."""
    from llqm_core.model.memory_limits import CGROUP, CGROUP_MAX, CGROUP_OOM_KILLS
    from llqm_core.model.records import RunRecord
    from llqm_core.store.row_records import run_record

    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    events = "low 0\nhigh 0\nmax 12\noom 1\noom_kill {}\noom_group_kill 0\n"
    (cgroup / "memory.events").write_text(events.format(0))
    resource = {CGROUP: str(cgroup), CGROUP_MAX: 512 << 20, CGROUP_OOM_KILLS: 0}
    dead = RunRecord("r", "oom", llqm.RunStatus.RUNNING, 1, None, "t", "s", None, None, True,
                     {}, resource, 2**22 + 7, __import__("socket").gethostname(), 1.0, 2)  # fmt: skip
    row = {**dead.__dict__, "status": "running", "config": "{}", "resource": json.dumps(resource)}
    assert run_record(row).error is None  # no kill counted since the start
    (cgroup / "memory.events").write_text(events.format(1))
    read = run_record(row)
    assert read.status is llqm.RunStatus.INTERRUPTED
    assert "OOM killer" in read.error and str(cgroup) in read.error


def test_a_full_disk_gets_one_sentence_and_leaves_the_program_unchanged(tmp_path):
    """``llqm profile`` of a program under a file-size limit (``ulimit -f``) that the store's
    files reach: the program's output, files and exit status are its own; one warning names
    the store and where its rows wait; the next writer with room commits them."""
    import resource

    store = tmp_path / "store.sqlite"
    program = tmp_path / "program.py"
    program.write_text(
        textwrap.dedent(
            f"""
            import sys
            import llqm_core as llqm
            with open({str(tmp_path / "own.txt")!r}, "w") as own:
                for i in range(3000):
                    with llqm.task(f"t{{i}}", stage="work") as task:
                        task.annotate(payload="x" * 2000)
                    if i % 1000 == 0:
                        own.write(f"{{i}}\\n")
            print("program done")
            sys.exit(3)
            """
        )
    )

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1_100_000, 1_100_000))

    done = subprocess.run(
        [sys.executable, "-m", "llqm_core.cli", "profile", "--store", str(store), str(program)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        preexec_fn=limit_file_size,
    )
    assert done.returncode == 3 and done.stdout == "program done\n"
    assert (tmp_path / "own.txt").read_text() == "0\n1000\n2000\n"
    warned = [line for line in done.stderr.splitlines() if line.startswith("llqm: warning")]
    assert len(warned) == 1 and "Traceback" not in done.stderr, done.stderr
    (sentence,) = warned
    assert f"profiles are no longer being kept in {store}: its disk is full" in sentence
    assert "ulimit -f" in sentence and "-journal-" in sentence
    writing = llqm.ProfileStore(store)  # no limit here: the journal's rows are committed
    run = writing.run()
    assert run.status is llqm.RunStatus.INTERRUPTED and writing.count_tasks(run.id) > 100
    assert not glob.glob(str(store) + "-journal-*")
    writing.close()


def test_a_running_task_with_metrics_larger_than_a_slot_keeps_its_readings(tmp_path, monkeypatch):
    monkeypatch.setattr(Owner, "is_gone", lambda owner: True)
    base = tmp_path / "store.sqlite"
    record = InFlightFile(base)
    record.write([row("big", 5, {"payload": "x" * SLOT_SIZE})])
    (found,) = read_in_flight(base, WIDTH)
    assert [(r[0], r[14], r[-1]) for r in found.rows] == [("big", {}, 1.5)]


def test_a_journal_hands_the_store_only_the_statements_llqm_writes(tmp_path):
    path = tmp_path / "profiles.sqlite"
    process = start_pipeline(f"""
    import os
    from pathlib import Path
    import llqm_core as llqm
    from llqm_core.store import record_statements as rows
    from llqm_core.store.journal import TaskJournal, statement_frame
    with llqm.run("cut off", store={str(path)!r}) as run:
        journal = TaskJournal(Path({str(path)!r}))  # as a writer whose database went away leaves it
        end = rows.run_finish(run.record)[0], ("completed", run.record.start_ns + 1, None, run.id)
        journal.append(statement_frame(*end))
        journal.append(statement_frame("DROP TABLE tasks", ()))
        os._exit(0)
    """)
    assert process.wait(timeout=60) == 0
    store = llqm.ProfileStore(path)  # a writer: it commits the dead process's journal
    run = store.run()
    assert run.status is llqm.RunStatus.COMPLETED and run.end_ns == run.start_ns + 1
    assert store.tasks(run.id) == []  # the table is there: the other statement was not run
    store.close()
    assert not glob.glob(journal_pattern(path))


#: Thirty short tasks into a PostgreSQL store, each saying when it ended; the run ends completed.
THIRTY_TASKS = """
import time
import llqm_core as llqm
with llqm.run("across a restart", store={url!r}):
    for i in range(30):
        with llqm.task(f"t{{i}}", stage="work"):
            time.sleep(0.1)
        print("ended", i, flush=True)
print("run over", flush=True)
"""


def store_load(url: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "llqm_core.cli", "store", "load", "--store", url],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip


def all_thirty_completed(url: str) -> None:
    store = llqm.ProfileStore(url, readonly=True)
    try:
        run = store.run()
        assert run.status is llqm.RunStatus.COMPLETED
        tasks = store.tasks(run.id)
        assert sorted(t.name for t in tasks) == sorted(f"t{i}" for i in range(30))
        assert all(t.status is llqm.TaskStatus.COMPLETED for t in tasks)
        assert all(t.profile.wall_s >= 0.1 for t in tasks)
    finally:
        store.close()


def test_a_postgres_server_restarted_mid_run_loses_no_task_and_the_run_completes(
    postgres_cluster,
):
    url = postgres_cluster.new_database()
    process = start_pipeline(THIRTY_TASKS.format(url=url))
    wait_for_line(process, "ended 4")
    reading = llqm.ProfileStore(url, readonly=True)  # a report open across the restart
    assert reading.run().status is llqm.RunStatus.RUNNING
    postgres_cluster.restart()  # ends the run's session: its next commit fails
    out, err = process.communicate(timeout=60)
    assert reading.run().status is llqm.RunStatus.COMPLETED  # read on a new connection
    reading.close()
    assert process.returncode == 0, err
    assert "run over" in out and "ended 29" in out
    assert "Traceback" not in err and "warning" not in err.lower(), err
    all_thirty_completed(url)
    assert plain_sql(url, "SELECT count(*) AS n FROM tasks") == [{"n": 30}]  # no row twice
    assert not glob.glob(journal_pattern(store_backend(url).journal_base))  # all committed


@pytest.mark.slow
def test_a_postgres_server_down_for_the_rest_of_a_run_leaves_it_in_the_journal_for_store_load(
    postgres_cluster,
):
    url = postgres_cluster.new_database()
    name = store_backend(url).name
    process = start_pipeline(THIRTY_TASKS.format(url=url))
    wait_for_line(process, "ended 4")
    postgres_cluster.halt()
    try:
        out, err = process.communicate(timeout=90)
        assert process.returncode == 0, err  # the program is not changed by it
        assert "run over" in out
        (warning,) = [line for line in err.splitlines() if "did not answer" in line]
        journals = glob.glob(journal_pattern(store_backend(url).journal_base))
        assert len(journals) == 1
        assert name in warning and journals[0] in warning
        assert f"llqm store load --store {name}" in warning
        assert "Traceback" not in err and postgres_cluster.password not in err
        early = store_load(url)  # still down: one sentence, and the journal stays
        assert early.returncode == 2 and early.stderr.startswith("llqm: error: cannot connect")
        assert glob.glob(journal_pattern(store_backend(url).journal_base)) == journals
    finally:
        postgres_cluster.start()
    loaded = store_load(url)
    assert loaded.returncode == 0, loaded.stderr
    assert f"loaded 1 journals into {name}" in loaded.stdout
    all_thirty_completed(url)
    assert plain_sql(url, "SELECT count(*) AS n FROM tasks") == [{"n": 30}]
    assert not glob.glob(journal_pattern(store_backend(url).journal_base))
    again = store_load(url)
    assert again.returncode == 0 and "nothing waits" in again.stdout
