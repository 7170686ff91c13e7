"""The store's journal keeps every finished row, whatever types its values have, through a kill."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import numpy as np

import llqm_core as llqm
from llqm_core.store.journal import TaskJournal, encode_row, read_journals
from llqm_core.store.profile_store import V1_TASK_COLUMNS


class Label(str):
    """A str subclass, as libraries hand out (marshal refuses these)."""


def test_rows_with_subclassed_values_survive_and_a_frame_cut_short_is_skipped(tmp_path):
    store_path = tmp_path / "s.sqlite"
    journal = TaskJournal(store_path)
    plain = ["a", 1, 2.5, None, True, [1, 2], {"wall_s": 0.02, "nested": {"x": None}}]
    exotic = [
        Label("b"),
        np.float64(0.5),
        np.str_("z"),
        {"label": Label("x")},
        [np.str_("y")],
        None,
        0,
    ]
    journal.append(encode_row(plain))
    journal.append(encode_row(exotic))
    journal.append(
        encode_row(["cut", 3, 4.0, None, False, [], {}])[:-3]
    )  # the process died mid-write
    (found,) = read_journals(store_path, widths={7})
    assert found.rows == [plain, ["b", 0.5, "z", {"label": "x"}, ["y"], None, 0]]
    assert found.owner is not None and found.owner.pid == os.getpid()


def test_a_task_with_numpy_and_subclassed_metrics_is_kept_from_journal_to_sqlite(tmp_path):
    path = tmp_path / "s.sqlite"
    store = llqm.ProfileStore(path)
    with llqm.run("exotic", store=store) as run:
        with llqm.task(Label("step"), stage="work") as t:
            t.annotate(fidelity=np.float64(0.875), label=Label("zne"), backend=np.str_("fake_fez"))
        live = llqm.ProfileStore(path, readonly=True).tasks(run.id)  # read from the journal
    stored = llqm.ProfileStore(path, readonly=True).tasks(run.id)  # committed at the run's end
    for tasks in (live, stored):
        assert [(t.name, t.metrics) for t in tasks] == [
            ("step", {"fidelity": 0.875, "label": "zne", "backend": "fake_fez"})
        ]


def _dead_process_journal(run, **values) -> tuple[bytes, list]:
    """The header line of a journal whose process is gone, and a finished task's row of ``run``
    as llqm wrote rows before schema 2 (``values`` fills in the rest)."""
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    header = {"host": socket.gethostname(), "pid": int(gone.stdout), "process_started": 1.0}
    row = dict.fromkeys(V1_TASK_COLUMNS)
    row.update(
        id="0123456789abcdef",
        run_id=run.id,
        name="old",
        stage="work",
        status="completed",
        start_ns=run.record.start_ns + 1,
        end_ns=run.record.start_ns + 2,
        trace_id=run.trace_id,
        span_id="1" * 16,
        **values,
    )
    return (json.dumps(header) + "\n").encode(), [row[c] for c in V1_TASK_COLUMNS]


def test_a_dead_process_journal_in_the_older_json_lines_format_is_still_committed(tmp_path):
    path = tmp_path / "s.sqlite"
    with llqm.run("before upgrade", store=path) as run:
        pass
    header, row = _dead_process_journal(
        run, depends_on="[]", profile=json.dumps({"wall_s": 0.25}), metrics=json.dumps({"index": 3})
    )
    legacy = tmp_path / "s.sqlite-journal-0123456789abcdef.jsonl"
    legacy.write_bytes(header + json.dumps(row).encode() + b"\n")
    store = llqm.ProfileStore(path)  # a writer folds the dead process's journal in and removes it
    assert not legacy.exists()
    (task,) = store.tasks(run.id)
    assert (task.name, task.profile.wall_s, task.metrics) == ("old", 0.25, {"index": 3})


def test_a_profile_reads_the_same_from_the_journal_as_from_sqlite(tmp_path):
    """The journal keeps a profile as its values alone; read back live, it is the profile SQLite keeps."""
    path = tmp_path / "s.sqlite"
    store = llqm.ProfileStore(path)
    with llqm.run("profiles", store=store) as run:
        with llqm.task("step", stage="work") as t:
            t.record_usage(qpu_s=1.5, queue_s=0.25)
            sum(range(100_000))
        (live,) = llqm.ProfileStore(path, readonly=True).tasks(run.id)  # from the journal
    (stored,) = llqm.ProfileStore(path, readonly=True).tasks(run.id)  # from SQLite
    assert live.profile == stored.profile == t.record.profile
    assert stored.profile.qpu_s == 1.5 and stored.profile.wall_s > 0 and stored.profile.gpu.reason


def test_a_dead_process_journal_with_profiles_as_objects_is_still_committed(tmp_path):
    """Journals that llqm wrote before profiles became lists of values are folded in as they are."""
    path = tmp_path / "s.sqlite"
    with llqm.run("before upgrade", store=path) as run:
        pass
    header, row = _dead_process_journal(
        run,
        depends_on=[],
        metrics={"index": 3},
        profile={"wall_s": 0.25, "cpu_s": 0.2, "gpu": {"available": False, "reason": "none here"}},
    )
    journal = tmp_path / "s.sqlite-journal-0123456789abcdef.journal"
    journal.write_bytes(header + encode_row(row))
    store = llqm.ProfileStore(path)
    assert not journal.exists()
    (task,) = store.tasks(run.id)
    assert (task.name, task.profile.wall_s, task.profile.cpu_s, task.profile.gpu.reason) == (
        "old",
        0.25,
        0.2,
        "none here",
    )
