"""The store's journal keeps every finished row, whatever types its values have, through a kill."""

from __future__ import annotations

import os

import numpy as np

import llqm_core as llqm
from llqm_core.store.journal import TaskJournal, encode_row, read_journals


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
    (found,) = read_journals(store_path, width=7)
    assert found.rows == [plain, ["b", 0.5, "z", {"label": "x"}, ["y"], None, 0]]
    assert found.owner is not None and found.owner.pid == os.getpid()


def test_a_task_with_numpy_and_subclassed_metrics_is_kept_from_journal_to_the_database(
    store_location,
):
    path = store_location
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


def test_a_profile_reads_the_same_from_the_journal_as_from_the_database(store_location):
    """The journal keeps a profile as its values alone; read back live, it is the profile the
    database keeps."""
    path = store_location
    store = llqm.ProfileStore(path)
    with llqm.run("profiles", store=store) as run:
        with llqm.task("step", stage="work") as t:
            t.record_usage(qpu_s=1.5, queue_s=0.25)
            sum(range(100_000))
        (live,) = llqm.ProfileStore(path, readonly=True).tasks(run.id)  # from the journal
    (stored,) = llqm.ProfileStore(path, readonly=True).tasks(run.id)  # from the database
    assert live.profile == stored.profile == t.record.profile
    assert stored.profile.qpu_s == 1.5 and stored.profile.wall_s > 0 and stored.profile.gpu.reason
