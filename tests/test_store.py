"""The store survives what real runs do to it: kills, old and new schemas, many writers.

Tests that take ``store_location`` run against both kinds of store: an SQLite file and a
PostgreSQL database (on a throwaway server; skipped with the reason where none can be had).
"""

from __future__ import annotations

import glob
import json
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import ROOT, plain_sql, run_python

import llqm_core as llqm
from llqm_core.analysis.report import build_report
from llqm_core.model.records import PROFILE_VALUE_NAMES, CachedValue
from llqm_core.store import writer
from llqm_core.store.journal import journal_pattern
from llqm_core.store.postgres_backend import postgres_ddl
from llqm_core.store.profile_store import store_backend
from llqm_core.store.schema import MIGRATIONS, SCHEMA_VERSION
from llqm_core.store.sqlite_backend import SQLiteBackend


def journals_of(location: str) -> list[str]:
    """The journal files of a store on this machine."""
    return glob.glob(journal_pattern(store_backend(location).journal_base))


def task_names_in_database(location: str) -> list[str]:
    """What the database itself holds, journals aside."""
    return [row["name"] for row in plain_sql(location, "SELECT name FROM tasks ORDER BY start_ns")]


def set_schema_version(location: str, version: int, foreign_table: bool = False) -> None:
    """Mark a store as of ``version``, as another llqm would have left it."""
    if location.startswith("postgres"):
        statements = [
            "CREATE TABLE IF NOT EXISTS llqm_schema (version BIGINT NOT NULL)",
            "DELETE FROM llqm_schema",
            f"INSERT INTO llqm_schema VALUES ({version})",
        ]
    else:
        statements = [f"PRAGMA user_version = {version}"]
    if foreign_table:
        statements.insert(0, "CREATE TABLE runs (id TEXT PRIMARY KEY)")
    for statement in statements:
        plain_sql(location, statement)


def schema_version(location: str) -> int:
    if location.startswith("postgres"):
        return plain_sql(location, "SELECT version FROM llqm_schema")[0]["version"]
    return plain_sql(location, "PRAGMA user_version")[0]["user_version"]


def test_store_is_created_on_first_use_in_wal_mode_owner_only_with_a_schema_version(tmp_path):
    path = tmp_path / "sub" / "store.sqlite"
    with llqm.run("first", store=path):
        pass
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_killed_run_leaves_a_readable_store_with_finished_tasks_and_reads_interrupted(
    tmp_path, store_location
):
    code = textwrap.dedent(
        f"""
        import os, signal, time
        import llqm_core as llqm
        with llqm.run("doomed", store={store_location!r}):
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
    store = llqm.ProfileStore(store_location, readonly=True)
    run = store.run()
    assert run.name == "doomed" and run.status is llqm.RunStatus.INTERRUPTED
    tasks = store.tasks(run.id)
    assert [t.name for t in tasks] == ["done-0", "done-1", "done-2", "in flight"]
    assert all(t.status is llqm.TaskStatus.COMPLETED and t.profile.wall_s > 0 for t in tasks[:3])
    assert [t.metrics["index"] for t in tasks[:3]] == [0, 1, 2]
    assert tasks[3].status is llqm.TaskStatus.RUNNING_AT_EXIT
    assert tasks[3].profile.readings.startswith("last reading") and tasks[3].profile.wall_s > 1.0


def test_tasks_killed_right_after_they_finish_are_kept_and_the_next_writer_commits_them(
    store_location,
):
    code = textwrap.dedent(
        f"""
        import os, signal
        import llqm_core as llqm
        with llqm.run("doomed", store={store_location!r}):
            for i in range(5):
                with llqm.task(f"done-{{i}}", stage="work") as t:
                    t.annotate(index=i)
            os.kill(os.getpid(), signal.SIGKILL)  # before the store's writer thread commits anything
        """
    )
    assert run_python(code).returncode == -9
    journals = journals_of(store_location)
    # the finished tasks are in the dead process's journal, not yet in the database
    assert len(journals) == 1 and task_names_in_database(store_location) == []

    reader = llqm.ProfileStore(store_location, readonly=True)
    tasks = reader.tasks(reader.run().id)
    assert [(t.name, t.status, t.metrics["index"]) for t in tasks] == [
        (f"done-{i}", llqm.TaskStatus.COMPLETED, i) for i in range(5)
    ]
    assert os.path.exists(journals[0])  # a reader changes nothing

    # the next writer folds the journal into the database and removes it
    writer = llqm.ProfileStore(store_location)
    assert not os.path.exists(journals[0])
    assert task_names_in_database(store_location) == [f"done-{i}" for i in range(5)]
    assert [t.name for t in writer.tasks(writer.run().id)] == [f"done-{i}" for i in range(5)]


def test_thousands_of_small_tasks_killed_right_after_they_finish_are_all_kept(store_location):
    """The writer commits and empties the journal every thousand rows meanwhile, and the
    journal is appended to again after each; the kill comes right after the last task."""
    code = textwrap.dedent(
        f"""
        import os, signal
        import llqm_core as llqm
        with llqm.run("many then killed", store={store_location!r}):
            for i in range(4000):
                with llqm.task(f"t{{i}}", stage="work"):
                    pass
            os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    assert run_python(code).returncode == -9
    names = [f"t{i}" for i in range(4000)]
    reader = llqm.ProfileStore(store_location, readonly=True)
    assert [t.name for t in reader.tasks(reader.run().id)] == names
    writer = llqm.ProfileStore(store_location)  # folds the dead process's journal
    assert journals_of(store_location) == []
    assert [t.name for t in writer.tasks(writer.run().id)] == names


def test_a_finished_task_is_visible_to_other_readers_at_once_and_the_journal_goes_at_close(
    store_location,
):
    store = llqm.ProfileStore(store_location)
    with llqm.run("live", store=store) as run:
        with llqm.task("first", stage="work"):
            pass
        # as `llqm report` in another shell would
        reader = llqm.ProfileStore(store_location, readonly=True)
        assert [t.name for t in reader.tasks(run.id)] == ["first"]
    assert [t.name for t in reader.tasks(run.id)] == [
        "first"
    ]  # committed at the run's end, not twice
    store.close()
    assert journals_of(store_location) == []


def test_a_forked_child_keeps_its_tasks_in_its_own_journal_and_connection(store_location):
    code = textwrap.dedent(
        f"""
        import os, signal
        import llqm_core as llqm
        with llqm.run("parent", store={store_location!r}) as run:
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
    store = llqm.ProfileStore(store_location, readonly=True)
    assert sorted(t.name for t in store.tasks(store.run().id)) == [
        "after fork",
        "before fork",
        "in child",
    ]


def test_children_forked_while_other_threads_commit_never_hang(tmp_path):
    """A child inherits SQLite's locks as they were at the fork: forked while a writer thread
    was inside a commit, it used to wait forever at its first use of the store (a parallel
    transpile's worker hung so, about one fork in fifteen here)."""
    path = tmp_path / "busy.sqlite"
    code = textwrap.dedent(
        f"""
        import multiprocessing, os, threading
        import llqm_core as llqm
        path, stop = {str(path)!r}, threading.Event()

        def busy():
            while not stop.is_set():  # each run commits at its start and end, in this thread
                with llqm.run("busy", store=path):
                    pass

        def child(n):
            with llqm.run(f"child {{n}}", store=path):
                with llqm.task("in child"):
                    pass
            os._exit(0)

        fork = multiprocessing.get_context("fork")
        with llqm.run("parent", store=path):
            threads = [threading.Thread(target=busy, daemon=True) for _ in range(2)]
            for thread in threads:
                thread.start()
            hung = 0
            for n in range(100):
                process = fork.Process(target=child, args=(n,))
                process.start()
                process.join(30)
                if process.is_alive():
                    hung += 1
                    process.kill()
                    process.join()
            stop.set()
            for thread in threads:
                thread.join()
        print(hung)
        """
    )
    result = run_python(code, env={"LLQM_PLUGINS": "exporters"}, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0"]
    store = llqm.ProfileStore(path, readonly=True)
    children = [r for r in store.runs() if r.name.startswith("child ")]
    assert len(children) == 100 and all(
        [t.name for t in store.tasks(r.id)] == ["in child"] for r in children
    )


def test_a_store_of_a_development_schema_is_refused_with_a_clear_sentence(store_location):
    """Schema 1 was only ever written by development versions: no release reads or upgrades it."""
    set_schema_version(store_location, 1, foreign_table=True)
    for readonly in (True, False):
        with pytest.raises(llqm.StoreError, match="schema version 1, which only development"):
            llqm.ProfileStore(store_location, readonly=readonly)
    assert schema_version(store_location) == 1


def test_a_store_of_the_first_release_is_upgraded_and_keeps_its_runs(store_location):
    """The one migration list upgrades either kind of store, readers included."""
    as_made = postgres_ddl if store_location.startswith("postgres") else str
    for statement in MIGRATIONS[0].split(";"):  # the first release's tables, as it made them
        if statement.strip():
            plain_sql(store_location, as_made(statement))
    set_schema_version(store_location, SCHEMA_VERSION - len(MIGRATIONS) + 1)
    plain_sql(
        store_location,
        "INSERT INTO runs (id, name, status, start_ns, trace_id, span_id) VALUES "
        f"('0123abcd', 'before the upgrade', 'completed', 1, '{'0' * 32}', '{'1' * 16}')",
    )
    reader = llqm.ProfileStore(store_location, readonly=True)
    assert schema_version(store_location) == SCHEMA_VERSION
    assert reader.run().name == "before the upgrade"
    with llqm.run("after", store=llqm.ProfileStore(store_location)) as run:
        with llqm.task("step"):
            pass
    assert [t.profile.thread for t in reader.tasks(run.id)] != [None]
    assert [r.name for r in reader.runs()] == ["after", "before the upgrade"]


def test_a_store_of_the_previous_schema_is_upgraded_and_then_keeps_cached_values(store_location):
    """A store the last release wrote (schema 7, before ``cache_entries``) opens, keeps its runs
    and takes cache entries, which a later reader reads back."""
    as_made = postgres_ddl if store_location.startswith("postgres") else str
    for migration in MIGRATIONS[:-1]:
        for statement in migration.split(";"):
            if statement.strip():
                plain_sql(store_location, as_made(statement))
    set_schema_version(store_location, SCHEMA_VERSION - 1)
    plain_sql(
        store_location,
        "INSERT INTO runs (id, name, status, start_ns, trace_id, span_id) VALUES "
        f"('0123abcd', 'before the upgrade', 'completed', 1, '{'0' * 32}', '{'1' * 16}')",
    )
    store = llqm.ProfileStore(store_location)
    assert schema_version(store_location) == SCHEMA_VERSION
    assert store.run().name == "before the upgrade"
    assert store.keep_cached(CachedValue("test", "key", b"\x00\xffpayload", seconds=1.5), 1000)
    store.close()
    (found,) = (
        llqm.ProfileStore(store_location, readonly=True).cached("test", ["key", "other"]).values()
    )
    assert (found.key, found.data, found.seconds, found.uses) == ("key", b"\x00\xffpayload", 1.5, 0)


def test_cached_values_are_bounded_per_namespace_and_the_least_recently_used_go_first(
    store_location,
):
    store = llqm.ProfileStore(store_location)
    for made_at, key in enumerate("abc", start=1):  # made long ago, a first
        store.keep_cached(CachedValue("bounded", key, bytes(100), made_at=made_at), 1000)
    store.keep_cached(CachedValue("other", "x", bytes(100), made_at=0), 1000)
    assert not store.keep_cached(CachedValue("bounded", "huge", bytes(300)), 250)  # over the bound
    store.close()
    store = llqm.ProfileStore(store_location)
    assert set(store.cached("bounded", ["a"])) == {"a"}  # used now: the latest used
    store.keep_cached(CachedValue("bounded", "d", bytes(100)), 250)  # made now: room for 2
    store.close()
    reader = llqm.ProfileStore(store_location, readonly=True)
    assert set(reader.cached("bounded", ["a", "b", "c", "d", "huge"])) == {"a", "d"}
    assert reader.cached("bounded", ["a"])["a"].uses == 1
    assert set(reader.cached("other", ["x"])) == {"x"}  # another namespace keeps its own


def test_a_tasks_profile_is_kept_as_columns_that_plain_sql_reads_by_name(store_location):
    store = llqm.ProfileStore(store_location)
    with llqm.run("columns", store=store):
        with llqm.task("step", stage="work") as step:
            step.record_usage(qpu_s=1.5)
            sum(range(10_000))
    store.close()
    (row,) = plain_sql(store_location, "SELECT * FROM tasks")
    assert {name: row[name] for name in PROFILE_VALUE_NAMES} == dict(
        zip(PROFILE_VALUE_NAMES, step.record.profile.values())
    )
    assert row["qpu_s"] == 1.5 and row["wall_s"] > 0


def test_a_store_from_a_newer_llqm_is_refused_with_a_clear_sentence(store_location):
    with llqm.run("now", store=store_location):
        pass
    set_schema_version(store_location, SCHEMA_VERSION + 1)
    for readonly in (True, False):
        with pytest.raises(
            llqm.StoreError,
            match=f"schema version {SCHEMA_VERSION + 1}, newer than this llqm understands",
        ):
            llqm.ProfileStore(store_location, readonly=readonly)


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


def test_a_store_another_process_creates_while_this_one_looks_is_not_called_foreign(tmp_path):
    """Eight processes opening one new store at once: one read the version of the empty file,
    another committed the schema, and the first then saw tables without a version. The version
    and the tables are now one statement's reads, so no commit falls between them."""
    path = tmp_path / "new.sqlite"
    path.touch()
    looking = SQLiteBackend(path)
    conn = sqlite3.connect(path, isolation_level=None)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        assert looking._version_of(conn) == 0
        # one statement (SQLite traces the pragma it runs inside as "-- PRAGMA ..."): one
        # snapshot of the file
        assert len([sql for sql in statements if not sql.startswith("--")]) == 1
        SQLiteBackend(path).prepare(readonly=False)  # another process creates the store
        assert looking._version_of(conn) == SCHEMA_VERSION
    finally:
        conn.close()
    llqm.ProfileStore(path)  # and the store opens as a store


def test_unknown_and_ambiguous_run_ids_are_user_errors(store_location, monkeypatch):
    monkeypatch.setenv("LLQM_STORE", store_location)
    with llqm.run("only"):
        pass
    store = llqm.ProfileStore()
    assert store.location == store_location
    with pytest.raises(llqm.StoreError, match="there is no run with id 'nope'"):
        store.run("nope")
    run = store.run()
    assert store.run(run.id[:6]).id == run.id


def test_a_store_that_cannot_be_written_warns_once_and_the_run_completes(store_location, spans):
    store = llqm.ProfileStore(store_location)
    # as a lost permission would (root ignores file modes): the connection refuses writes
    store._writer._conn.execute(
        "PRAGMA query_only = ON"
        if store.path is not None
        else "SET default_transaction_read_only = on"
    )
    with pytest.warns(UserWarning, match="profiles are no longer being kept in"):
        with llqm.run("unwritable", store=store):
            with llqm.task("still measured"):
                pass
    assert {s.name for s in spans.get_finished_spans()} == {"unwritable", "still measured"}


def test_eight_processes_write_runs_into_one_store_at_once(store_location):
    code = textwrap.dedent(
        f"""
        import sys
        import llqm_core as llqm
        with llqm.run("writer " + sys.argv[1], store={store_location!r}):
            for i in range(40):
                with llqm.task(f"t{{i}}"):
                    pass
        """
    )
    # the core alone: importing Qiskit and Mitiq in eight processes took most of the test's time
    env = {**os.environ, "LLQM_PLUGINS": "exporters"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(n)],
            cwd=ROOT,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(8)
    ]
    errors = [p.communicate(timeout=240)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, errors
    assert not any("locked" in e for e in errors), errors
    store = llqm.ProfileStore(store_location, readonly=True)
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
        f"import llqm_core as llqm\nwith llqm.run('whole', store={str(path)!r}):\n    with "
        "llqm.task('t'):\n        pass\n"
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["whole.sqlite"]
    copy = tmp_path / "copy" / "whole.sqlite"
    copy.parent.mkdir()
    copy.write_bytes(path.read_bytes())
    store = llqm.ProfileStore(copy, readonly=True)
    assert [t.name for t in store.tasks(store.run().id)] == ["t"]


def test_many_queued_rows_are_committed_before_the_drain_interval_and_closing_does_not_wait_it_out(
    store_location,
):
    store = llqm.ProfileStore(store_location)
    with llqm.run("busy", store=store):
        for i in range(writer.MAX_QUEUED_ROWS + 10):
            with llqm.task(f"t{i}", stage="work"):
                pass
        deadline = time.monotonic() + writer.DRAIN_INTERVAL_S * 0.75
        committed = 0
        while committed < writer.MAX_QUEUED_ROWS and time.monotonic() < deadline:
            time.sleep(0.05)
            committed = len(task_names_in_database(store_location))
        assert committed >= writer.MAX_QUEUED_ROWS  # memory held for queued rows stays bounded
        with llqm.task("last", stage="work"):
            pass
    started = time.monotonic()
    store.close()  # the writer is waiting out its drain interval: closing wakes it instead
    assert time.monotonic() - started < writer.DRAIN_INTERVAL_S / 2


def test_while_tasks_keep_ending_the_database_takes_rows_in_batches_and_readers_see_them_at_once(
    store_location, monkeypatch
):
    monkeypatch.setattr(writer, "DRAIN_INTERVAL_S", 0.1)
    monkeypatch.setattr(writer, "FINISHED_ROWS_WAIT_S", 2.0)

    def in_database() -> int:
        return len(task_names_in_database(store_location))

    with llqm.run("steady", store=llqm.ProfileStore(store_location)) as run:
        with llqm.task("first"):
            pass
        time.sleep(0.5)
        assert in_database() == 1  # after a quiet spell: within the drain interval
        for i in range(5):
            with llqm.task(f"t{i}"):
                pass
        time.sleep(0.5)
        assert (
            in_database() == 1
        )  # five drain intervals later, the next batch still waits out FINISHED_ROWS_WAIT_S
        assert (
            len(llqm.ProfileStore(store_location, readonly=True).tasks(run.id)) == 6
        )  # readers merge the journal
        time.sleep(2.5)
        assert in_database() == 6


def test_a_metric_of_infinity_reads_back(store_path):
    """A run whose mitigated error was 0 records an error reduction of infinity (Python's JSON
    writes ``Infinity``): the store reads it back, from the journal and from the database."""
    import math

    with llqm.run("perfect", store=llqm.ProfileStore(store_path)) as run:
        with llqm.task("postprocess") as task:
            task.annotate({"fidelity.error_reduction": math.inf})
    for store in (llqm.ProfileStore(store_path), llqm.ProfileStore(store_path, readonly=True)):
        (found,) = store.tasks(run.id)
        assert found.metrics["fidelity.error_reduction"] == math.inf
        store.close()


def test_metrics_read_back_as_they_were_annotated_whatever_json_writer_stored_them(
    store_location,
):
    """The JSON of a stored row's metrics is written by orjson where it writes the same values,
    else by Python's encoder: a NaN, an infinity, an int beyond 64 bits, a non-ASCII text, small
    and large floats and lists all read back equal, from the database after the run's end."""
    import math

    metrics = {
        "a.nan": math.nan,
        "a.inf": -math.inf,
        "a.big": 2**70,
        "a.text": "Zürich ≥ 5 qubits",
        "a.small": 1e-05,
        "a.large": 1e16,
        "a.negative_zero": -0.0,
        "a.flags": [True, False],
        "a.values": [0.1, 2.5],
    }
    plain = {key: value for key, value in metrics.items() if key != "a.nan"}
    with llqm.run("values", store=llqm.ProfileStore(store_location)) as run:
        for one in (metrics, plain):
            with llqm.task("values") as task:
                task.annotate(one)
    store = llqm.ProfileStore(store_location, readonly=True)
    first, second = sorted(store.tasks(run.id), key=lambda t: len(t.metrics), reverse=True)
    store.close()
    assert math.isnan(first.metrics.pop("a.nan"))
    assert first.metrics == plain == second.metrics
    assert math.copysign(1, second.metrics["a.negative_zero"]) == -1
