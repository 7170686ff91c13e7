"""The store survives what real runs do to it: kills, old and new schemas, many writers."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import ROOT, run_python

import llqm_core as llqm
from llqm_core.analysis.report import build_report
from llqm_core.model.records import PROFILE_VALUE_NAMES
from llqm_core.store import writer
from llqm_core.store.schema import SCHEMA_VERSION


def test_store_is_created_on_first_use_in_wal_mode_owner_only_with_a_schema_version(tmp_path):
    path = tmp_path / "sub" / "store.sqlite"
    with llqm.run("first", store=path):
        pass
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_killed_run_leaves_a_readable_store_with_finished_tasks_and_reads_interrupted(tmp_path):
    path = tmp_path / "killed.sqlite"
    code = textwrap.dedent(
        f"""
        import os, signal, time
        import llqm_core as llqm
        with llqm.run("doomed", store={str(path)!r}):
            for i in range(3):
                with llqm.task(f"done-{{i}}", stage="work") as t:
                    t.annotate(index=i)
            with llqm.task("in flight", stage="work"):
                time.sleep(3.0)  # longer than the store's drain interval and the span exporter's batch delay
                os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    spans = tmp_path / "spans.jsonl"
    result = run_python(code, env={"LLQM_EXPORTERS": "jsonfile", "LLQM_SPANS_FILE": str(spans)})
    assert result.returncode == -9
    exported = {
        span["name"]
        for line in spans.read_text().splitlines()
        for resource in json.loads(line)["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    }
    assert {"done-0", "done-1", "done-2"} <= exported  # spans that ended before the kill went out
    store = llqm.ProfileStore(path, readonly=True)
    run = store.run()
    assert run.name == "doomed" and run.status is llqm.RunStatus.INTERRUPTED
    tasks = store.tasks(run.id)
    assert [t.name for t in tasks] == ["done-0", "done-1", "done-2", "in flight"]
    assert all(t.status is llqm.TaskStatus.COMPLETED and t.profile.wall_s > 0 for t in tasks[:3])
    assert [t.metrics["index"] for t in tasks[:3]] == [0, 1, 2]
    assert tasks[3].status is llqm.TaskStatus.INTERRUPTED


def test_tasks_killed_right_after_they_finish_are_kept_and_the_next_writer_commits_them(tmp_path):
    path = tmp_path / "killed.sqlite"
    code = textwrap.dedent(
        f"""
        import os, signal
        import llqm_core as llqm
        with llqm.run("doomed", store={str(path)!r}):
            for i in range(5):
                with llqm.task(f"done-{{i}}", stage="work") as t:
                    t.annotate(index=i)
            os.kill(os.getpid(), signal.SIGKILL)  # before the store's writer thread commits anything
        """
    )
    assert run_python(code).returncode == -9
    journals = list(tmp_path.glob("killed.sqlite-journal-*.journal"))
    assert (
        len(journals) == 1
    )  # the finished tasks are in the dead process's journal, not yet in SQLite

    reader = llqm.ProfileStore(path, readonly=True)
    tasks = reader.tasks(reader.run().id)
    assert [(t.name, t.status, t.metrics["index"]) for t in tasks] == [
        (f"done-{i}", llqm.TaskStatus.COMPLETED, i) for i in range(5)
    ]
    assert journals[0].exists()  # a reader changes nothing

    writer = llqm.ProfileStore(path)  # the next writer folds the journal into SQLite and removes it
    assert not journals[0].exists()
    committed = sqlite3.connect(path).execute("SELECT name FROM tasks ORDER BY start_ns").fetchall()
    assert [name for (name,) in committed] == [f"done-{i}" for i in range(5)]
    assert [t.name for t in writer.tasks(writer.run().id)] == [f"done-{i}" for i in range(5)]


def test_a_finished_task_is_visible_to_other_readers_at_once_and_the_journal_goes_at_close(
    tmp_path,
):
    path = tmp_path / "live.sqlite"
    store = llqm.ProfileStore(path)
    with llqm.run("live", store=store) as run:
        with llqm.task("first", stage="work"):
            pass
        reader = llqm.ProfileStore(path, readonly=True)  # as `llqm report` in another shell would
        assert [t.name for t in reader.tasks(run.id)] == ["first"]
    assert [t.name for t in reader.tasks(run.id)] == [
        "first"
    ]  # committed at the run's end, not twice
    store.close()
    assert list(tmp_path.glob("live.sqlite-journal-*")) == []


def test_a_forked_child_keeps_its_tasks_in_its_own_journal_and_connection(tmp_path):
    path = tmp_path / "forked.sqlite"
    code = textwrap.dedent(
        f"""
        import os, signal
        import llqm_core as llqm
        with llqm.run("parent", store={str(path)!r}) as run:
            with llqm.task("before fork"):
                pass
            child = os.fork()
            if child == 0:
                with llqm.task("in child"):
                    pass
                run.store.close()  # what a child's normal exit does
                os._exit(0)
            assert os.waitpid(child, 0)[1] == 0
            with llqm.task("after fork"):
                pass
            os.kill(os.getpid(), signal.SIGKILL)  # the parent's rows are still only in its journal
        """
    )
    result = run_python(code)
    assert result.returncode == -9, result.stderr
    store = llqm.ProfileStore(path, readonly=True)
    assert sorted(t.name for t in store.tasks(store.run().id)) == [
        "after fork",
        "before fork",
        "in child",
    ]


def test_a_store_of_a_development_schema_is_refused_with_a_clear_sentence(tmp_path):
    """Schema 1 was only ever written by development versions: no release reads or upgrades it."""
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE runs (id TEXT PRIMARY KEY)")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    for readonly in (True, False):
        with pytest.raises(llqm.StoreError, match="schema version 1, which only development"):
            llqm.ProfileStore(path, readonly=readonly)
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 1


def test_a_tasks_profile_is_kept_as_columns_that_plain_sql_reads_by_name(tmp_path):
    path = tmp_path / "columns.sqlite"
    store = llqm.ProfileStore(path)
    with llqm.run("columns", store=store):
        with llqm.task("step", stage="work") as step:
            step.record_usage(qpu_s=1.5)
            sum(range(10_000))
    store.close()
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    (row,) = conn.execute("SELECT * FROM tasks").fetchall()
    assert {name: row[name] for name in PROFILE_VALUE_NAMES} == dict(
        zip(PROFILE_VALUE_NAMES, step.record.profile.values())
    )
    assert row["qpu_s"] == 1.5 and row["wall_s"] > 0


def test_a_store_from_a_newer_llqm_is_refused_with_a_clear_sentence(tmp_path):
    path = tmp_path / "future.sqlite"
    with llqm.run("now", store=path):
        pass
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(
        llqm.StoreError,
        match=f"schema version {SCHEMA_VERSION + 1}, newer than this llqm understands",
    ):
        llqm.ProfileStore(path, readonly=True)


def test_a_corrupt_or_foreign_file_is_refused_and_left_untouched(tmp_path):
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"this is not sqlite" * 100)
    before = corrupt.read_bytes()
    with pytest.raises(llqm.StoreError, match="is not a readable LLQM profile store"):
        llqm.ProfileStore(corrupt)
    assert corrupt.read_bytes() == before

    foreign = tmp_path / "foreign.sqlite"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE other (x)")
    conn.commit()
    conn.close()
    for readonly in (True, False):
        with pytest.raises(
            llqm.StoreError, match="is an SQLite database but not an LLQM profile store"
        ):
            llqm.ProfileStore(foreign, readonly=readonly)


def test_unknown_and_ambiguous_run_ids_are_user_errors(store_path):
    with llqm.run("only"):
        pass
    store = llqm.ProfileStore(store_path)
    with pytest.raises(llqm.StoreError, match="there is no run with id 'nope'"):
        store.run("nope")
    run = store.run()
    assert store.run(run.id[:6]).id == run.id


def test_a_store_that_cannot_be_written_warns_once_and_the_run_completes(tmp_path, spans):
    path = tmp_path / "ro.sqlite"
    store = llqm.ProfileStore(path)
    os.chmod(path, 0o400)
    store._writer._conn.execute(
        "PRAGMA query_only = ON"
    )  # root ignores file modes; make the connection refuse writes
    with pytest.warns(UserWarning, match="profiles are no longer being kept in"):
        with llqm.run("unwritable", store=store):
            with llqm.task("still measured"):
                pass
    assert {s.name for s in spans.get_finished_spans()} == {"unwritable", "still measured"}


def test_eight_processes_write_runs_into_one_store_at_once(tmp_path):
    path = tmp_path / "shared.sqlite"
    code = textwrap.dedent(
        f"""
        import sys
        import llqm_core as llqm
        with llqm.run("writer " + sys.argv[1], store={str(path)!r}):
            for i in range(40):
                with llqm.task(f"t{{i}}"):
                    pass
        """
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(n)], cwd=ROOT, stderr=subprocess.PIPE, text=True
        )
        for n in range(8)
    ]
    errors = [p.communicate(timeout=240)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, errors
    assert not any("locked" in e for e in errors), errors
    store = llqm.ProfileStore(path, readonly=True)
    runs = store.runs()
    assert len(runs) == 8 and all(r.status is llqm.RunStatus.COMPLETED for r in runs)
    assert all(len(store.tasks(r.id)) == 40 for r in runs)
    for run in runs:  # every report adds up
        report = build_report(store, run.id)
        assert (
            sum(s["tasks"] for s in report["stages"].values()) == 40
            and report["run"]["status"] == "completed"
        )


def test_after_the_process_exits_the_store_is_one_self_contained_file(tmp_path):
    path = tmp_path / "whole.sqlite"
    result = run_python(
        f"import llqm_core as llqm\nwith llqm.run('whole', store={str(path)!r}):\n    with llqm.task('t'):\n        pass\n"
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["whole.sqlite"]
    copy = tmp_path / "copy" / "whole.sqlite"
    copy.parent.mkdir()
    copy.write_bytes(path.read_bytes())
    store = llqm.ProfileStore(copy, readonly=True)
    assert [t.name for t in store.tasks(store.run().id)] == ["t"]


def test_many_queued_rows_are_committed_before_the_drain_interval_and_closing_does_not_wait_it_out(
    tmp_path,
):
    path = tmp_path / "busy.sqlite"
    store = llqm.ProfileStore(path)
    with llqm.run("busy", store=store):
        for i in range(writer.MAX_QUEUED_ROWS + 10):
            with llqm.task(f"t{i}", stage="work"):
                pass
        deadline = time.monotonic() + writer.DRAIN_INTERVAL_S * 0.75
        committed = 0
        while committed < writer.MAX_QUEUED_ROWS and time.monotonic() < deadline:
            time.sleep(0.05)
            committed = sqlite3.connect(path).execute("SELECT count(*) FROM tasks").fetchone()[0]
        assert committed >= writer.MAX_QUEUED_ROWS  # memory held for queued rows stays bounded
        with llqm.task("last", stage="work"):
            pass
    started = time.monotonic()
    store.close()  # the writer is waiting out its drain interval: closing wakes it instead
    assert time.monotonic() - started < writer.DRAIN_INTERVAL_S / 2


def test_while_tasks_keep_ending_sqlite_takes_their_rows_in_batches_and_readers_see_them_at_once(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(writer, "DRAIN_INTERVAL_S", 0.1)
    monkeypatch.setattr(writer, "FINISHED_ROWS_WAIT_S", 2.0)
    path = tmp_path / "batches.sqlite"

    def in_sqlite() -> int:
        return sqlite3.connect(path).execute("SELECT count(*) FROM tasks").fetchone()[0]

    with llqm.run("steady", store=llqm.ProfileStore(path)) as run:
        with llqm.task("first"):
            pass
        time.sleep(0.5)
        assert in_sqlite() == 1  # after a quiet spell: within the drain interval
        for i in range(5):
            with llqm.task(f"t{i}"):
                pass
        time.sleep(0.5)
        assert (
            in_sqlite() == 1
        )  # five drain intervals later, the next batch still waits out FINISHED_ROWS_WAIT_S
        assert (
            len(llqm.ProfileStore(path, readonly=True).tasks(run.id)) == 6
        )  # readers merge the journal
        time.sleep(2.5)
        assert in_sqlite() == 6
