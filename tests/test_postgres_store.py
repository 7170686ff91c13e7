"""The PostgreSQL store as its users meet it: named by a URL wherever a store is named, its
password never shown, an empty or foreign database left as it is. (The behaviour both kinds of
store share is tested against both in test_store.py and test_journal.py.)"""

from __future__ import annotations

import json
import sys

import pytest
from conftest import plain_sql, run_cli
from test_pipeline import GOOD

import llqm_core as llqm
from llqm_core.pipeline import parse_pipeline, run_pipeline
from llqm_core.store import postgres_backend


@pytest.fixture
def database(postgres_cluster) -> str:
    return postgres_cluster.new_database()


def test_a_pipeline_file_names_the_database_and_its_password_shows_nowhere(
    database, postgres_cluster, spans, tmp_path
):
    password = postgres_cluster.password
    pipeline = parse_pipeline({**GOOD, "output": {"store": database}})
    run_id, _ = run_pipeline(pipeline)
    store = llqm.ProfileStore(database, readonly=True)
    assert store.run(run_id).status is llqm.RunStatus.COMPLETED
    assert password not in store.name and store.name.startswith("postgresql://llqm@127.0.0.1:")
    stored = json.dumps(plain_sql(database, "SELECT * FROM runs"), default=str)
    stored += json.dumps(plain_sql(database, "SELECT * FROM tasks"), default=str)
    assert "127.0.0.1" in stored and password not in stored  # the URL is kept, its password not
    exported = [span.to_json() for span in spans.get_finished_spans()]
    assert exported and not any(password in text for text in exported)

    listing = run_cli("--store", database, "runs")
    report = run_cli("--store", database, "report", run_id, "--json")
    assert listing.returncode == report.returncode == 0, listing.stderr + report.stderr
    assert store.name in " ".join(listing.stdout.split())
    assert json.loads(report.stdout)["run"]["id"] == run_id
    for output in (listing.stdout, listing.stderr, report.stdout, report.stderr):
        assert password not in output


def test_llqm_store_names_the_database_wherever_a_store_is_named(database, monkeypatch):
    monkeypatch.setenv("LLQM_STORE", database)
    with llqm.run("from the environment") as run:
        with llqm.task("step"):
            pass
    done = run_cli("report", run.id, "--json")
    assert done.returncode == 0, done.stderr
    assert [t["name"] for t in json.loads(done.stdout)["tasks"]] == ["step"]
    assert plain_sql(database, "SELECT name FROM runs") == [{"name": "from the environment"}]


def test_the_store_option_names_the_database_for_a_profiled_program(database, tmp_path):
    script = tmp_path / "child.py"
    script.write_text(
        "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'print(2)'])\n"
    )
    done = run_cli("--store", database, "profile", "--name", "tiny", "--", sys.executable, script)
    assert done.returncode == 0, done.stderr
    run = llqm.ProfileStore(database, readonly=True).run()
    assert run.name == "tiny" and run.status is llqm.RunStatus.COMPLETED


def test_an_unreachable_or_wrong_database_is_one_sentence_without_the_password(
    database, postgres_cluster
):
    wrong = database.replace(postgres_cluster.password, "not-the-password-at-all")
    for url, reason in (
        (wrong, "password authentication failed"),
        (database.rsplit("/", 1)[0] + "/no_such_database", 'database "no_such_database"'),
    ):
        done = run_cli("--store", url, "runs")
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert "cannot connect to the profile store postgresql://llqm@127.0.0.1" in done.stderr
        assert reason in done.stderr
        assert "not-the-password-at-all" not in done.stderr
        assert postgres_cluster.password not in done.stderr


def test_a_reader_of_an_empty_database_creates_nothing_and_says_so(database):
    with pytest.raises(llqm.StoreError, match="holds no LLQM profile store yet"):
        llqm.ProfileStore(database, readonly=True)
    tables = plain_sql(database, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    assert tables == []


def test_a_reader_never_changes_the_database_named_by_either_scheme(database):
    with llqm.run("kept", store=database):
        pass
    reader = llqm.ProfileStore(database.replace("postgresql://", "postgres://"), readonly=True)
    with pytest.raises(llqm.StoreError, match="read-only transaction"):
        reader._reader._query("DELETE FROM runs")
    assert reader.run().name == "kept"


def test_a_database_with_other_tables_of_those_names_is_refused_and_left_alone(database):
    plain_sql(database, "CREATE TABLE runs (other TEXT)")
    for readonly in (True, False):
        with pytest.raises(llqm.StoreError, match="not an LLQM profile store"):
            llqm.ProfileStore(database, readonly=readonly)
    assert plain_sql(database, "SELECT to_regclass('tasks') AS t") == [{"t": None}]


def test_without_the_driver_the_error_says_which_extra_to_install(database, monkeypatch):
    monkeypatch.setattr(postgres_backend, "psycopg", None)
    with pytest.raises(llqm.StoreError, match=r"pip install 'llqm\[postgres\]'") as raised:
        llqm.ProfileStore(database)
    assert database.split(":")[2].split("@")[0] not in str(raised.value)


def test_the_warning_of_a_store_that_stops_taking_rows_names_it_without_the_password(
    database, postgres_cluster
):
    store = llqm.ProfileStore(database)
    store._writer._conn.execute("SET default_transaction_read_only = on")  # as a revoked grant
    with pytest.warns(UserWarning, match="profiles are no longer being kept in") as caught:
        with llqm.run("refused", store=store):
            pass
    (message,) = {str(w.message) for w in caught}
    assert store.name in message and "read-only transaction" in message
    assert postgres_cluster.password not in message
