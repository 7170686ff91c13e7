"""``llqm compare`` of runs it analyses side by side in other processes prints what it prints
when it analyses them one after the other, and keeps both analyses; a worker's error is the
same one sentence; and reading commands work on a store the user cannot write, keeping nothing."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import plain_sql

import llqm_core as llqm
from llqm_core.analysis import side_by_side
from llqm_core.analysis.side_by_side import run_reports
from llqm_core.cli import main
from llqm_core.model.errors import UserError


def _campaign(store: str, name: str, batches: int, width: int) -> str:
    """A run of batches of circuits, one batch failing, with a modelled QPU second here and there."""
    with llqm.run(name, store=store) as run:
        for b in range(batches):
            with llqm.task(f"batch {b}", stage="batch"):
                for i in range(width):
                    with llqm.task(f"c{i}", stage="circuit") as handle:
                        sum(range(200 * (i + 1)))
                        if i % 3 == 0:
                            handle.record_usage(qpu_s=0.01 * i)
                            handle.annotate({"qpu.modelled": True})
    return run.id


def _compare_output(capsys, store: str, a: str, b: str, *options: str) -> str:
    assert main(["--store", store, "compare", a, b, *options]) == 0
    return capsys.readouterr().out


def test_compare_side_by_side_prints_what_compare_in_one_process_prints(
    store_location, capsys, monkeypatch
):
    a = _campaign(store_location, "before", 3, 7)
    b = _campaign(store_location, "after", 4, 5)
    monkeypatch.setenv("LLQM_SIDE_BY_SIDE", "0")
    expected = [_compare_output(capsys, store_location, a, b, *o) for o in ((), ("--json",))]
    plain_sql(store_location, "DELETE FROM analyses")

    monkeypatch.setenv("LLQM_SIDE_BY_SIDE", "1")  # even on a busy machine
    monkeypatch.setattr(side_by_side, "SIDE_BY_SIDE_TASKS", 0)  # these runs count as big
    assert _compare_output(capsys, store_location, a, b) == expected[0]
    kept = plain_sql(store_location, "SELECT run_id FROM analyses")
    assert sorted(row["run_id"] for row in kept) == sorted([a, b])  # the worker's too
    plain_sql(store_location, "DELETE FROM analyses")
    assert _compare_output(capsys, store_location, a, b, "--json") == expected[1]
    # read back from the kept analyses: the same again
    assert _compare_output(capsys, store_location, a, b) == expected[0]


def test_a_worker_hands_its_report_back_when_the_store_keeps_nothing(tmp_path, monkeypatch):
    store = str(tmp_path / "store.sqlite")
    a, b = _campaign(store, "a", 2, 4), _campaign(store, "b", 2, 6)
    opened = llqm.ProfileStore(store, readonly=True)
    try:
        expected = run_reports(opened, [a, b], spare=0)
        plain_sql(store, "DELETE FROM analyses")
        monkeypatch.setenv("LLQM_KEEP_ANALYSES", "0")  # the worker inherits it: keeps nothing
        found = run_reports(opened, [a, b, a], threshold=0, spare=1)
    finally:
        opened.close()
    assert plain_sql(store, "SELECT run_id FROM analyses") == []
    assert json.dumps(found, default=str) == json.dumps(expected, default=str)


def test_a_workers_error_is_the_sentence_the_analysis_would_say(tmp_path):
    store = tmp_path / "store.sqlite"
    a, b = _campaign(str(store), "a", 2, 4), _campaign(str(store), "b", 2, 4)
    opened = llqm.ProfileStore(store, readonly=True)
    try:
        opened.run(a)  # this process's connection is open: it reads on after the file goes
        store.unlink()
        with pytest.raises(UserError, match="there is no profile store at"):
            run_reports(opened, [a, b], threshold=0, spare=1)
    finally:
        opened.close()


def _as_a_user_who_cannot_write() -> list[str]:
    """The command prefix that runs a command without root's right to write any file."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: every file can be written")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def test_reading_commands_work_on_a_store_the_user_cannot_write(monkeypatch):
    prefix = _as_a_user_who_cannot_write()
    folder = Path(tempfile.mkdtemp(prefix="llqm-readonly-"))
    store = folder / "store.sqlite"
    writer = (  # in a process of its own, which closes the store (and its WAL file) as it ends
        "import sys, llqm_core as llqm\n"
        "for name in ('a', 'b'):\n"
        "    with llqm.run(name, store=sys.argv[1]) as run, llqm.task('t', stage='work'):\n"
        "        print(run.id)\n"
    )
    written = subprocess.run(
        [sys.executable, "-c", writer, str(store)],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ | {"LLQM_EXPORTERS": "none"},
    )
    a, b = written.stdout.split()
    assert sorted(p.name for p in folder.iterdir()) == ["store.sqlite"]
    store.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
    before = store.stat().st_mtime_ns
    try:
        for command in (["report", a], ["report", a, "--json"], ["compare", a, b]):
            done = subprocess.run(
                [*prefix, sys.executable, "-m", "llqm_core.cli", "--store", str(store), *command],
                capture_output=True,
                text=True,
                env=os.environ | {"LLQM_EXPORTERS": "none"},
            )
            assert done.returncode == 0, done.stderr
            assert a[:12] in done.stdout
        assert store.stat().st_mtime_ns == before
        assert sorted(p.name for p in folder.iterdir()) == ["store.sqlite"]
    finally:
        folder.chmod(stat.S_IRWXU)
        shutil.rmtree(folder)
