"""The store's journal keeps every finished row, whatever types its values have, through a kill,
a fork, growth past its file's first size and a failure to map its file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import llqm_core as llqm
from llqm_core.store import journal as journal_module
from llqm_core.store.journal import FIRST_SIZE, TaskJournal, encode_row, read_journals


class Label(str):
    """A str subclass, as libraries hand out (marshal refuses these)."""


def test_rows_with_subclassed_values_survive_and_a_frame_of_an_older_llqm_cut_short_is_skipped(
    tmp_path,
):
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
    )  # the frame says more than it holds
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


def row(index: int, size: int = 10) -> list:
    return [f"task-{index}", index, "x" * size]


def rows_in(store_path, width: int = 3) -> list[list]:
    return [found_row for found in read_journals(store_path, width) for found_row in found.rows]


@pytest.mark.parametrize("mapped", [True, False])
def test_a_frame_whose_copy_a_kill_cut_short_is_ignored(tmp_path, mapped):
    store_path = tmp_path / "s.sqlite"
    journal = TaskJournal(store_path, mapped=mapped)
    frames = [encode_row(row(i)) for i in range(3)]
    for frame in frames:
        journal.append(frame)
    end = journal.path.read_bytes().index(b"\n") + 1 + sum(map(len, frames))
    cut = encode_row([Label("task-3"), 3, "x"])  # a JSON frame: its payload alone reads as a row
    with open(journal.path, "r+b") as file:  # what a kill leaves of the fourth frame
        if mapped:  # its length and payload copied, its kind byte not yet
            file.seek(end + 1)
            file.write(cut[1:])
        else:  # the start of its write
            file.seek(end)
            file.write(cut[: len(cut) // 2])
    assert rows_in(store_path) == [row(i) for i in range(3)]


def test_a_journal_grows_past_its_first_size_and_keeps_every_row(tmp_path):
    store_path = tmp_path / "s.sqlite"
    journal = TaskJournal(store_path)
    count = 3 * FIRST_SIZE // 1000  # ~1 kB frames: three times the first size
    rows = [row(i, size=200_000 if i == 7 else 1000) for i in range(count)]  # and one of 200 kB
    for each in rows:
        journal.append(encode_row(each))
    assert os.path.getsize(journal.path) >= 3 * FIRST_SIZE
    assert rows_in(store_path) == rows


READER = """
import sys
from pathlib import Path
from llqm_core.store.journal import read_journals
for line in sys.stdin:
    rows = [r for found in read_journals(Path(sys.argv[1]), 3) for r in found.rows]
    print(len(rows), rows[-1][0] if rows else None, flush=True)
"""


def test_a_reader_in_another_process_sees_each_row_as_it_is_appended(tmp_path, monkeypatch):
    monkeypatch.setattr(journal_module, "FIRST_SIZE", 8192)  # growth within a few rows
    store_path = tmp_path / "s.sqlite"
    journal = TaskJournal(store_path)
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(store_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        for i in range(40):  # ~500 bytes each: past 8 and 16 KiB
            journal.append(encode_row(row(i, size=500)))
            reader.stdin.write("read\n")
            reader.stdin.flush()
            assert reader.stdout.readline().split() == [str(i + 1), f"task-{i}"]
    finally:
        reader.stdin.close()
        reader.wait(timeout=30)


@pytest.mark.parametrize("mapped", [True, False])
def test_after_clear_only_the_rows_appended_since_are_read(tmp_path, mapped):
    store_path = tmp_path / "s.sqlite"
    journal = TaskJournal(store_path, mapped=mapped)
    for i in range(5):
        journal.append(encode_row(row(i)))
    journal.clear()
    assert rows_in(store_path) == [] and not journal.holds_rows
    journal.append(encode_row(row(5)))  # as long as the first cleared frame: the second follows
    assert rows_in(store_path) == [row(5)]
    journal.append(encode_row(row(6, size=300)))
    assert rows_in(store_path) == [row(5), row(6, size=300)]
    journal.remove()
    assert not journal.path.exists()


def test_a_forked_child_never_writes_into_its_parents_journal(tmp_path):
    store_path = tmp_path / "s.sqlite"
    parent = TaskJournal(store_path)
    parent.append(encode_row(row(0)))
    child = os.fork()
    if child == 0:
        status = 1
        try:
            try:
                parent.append(encode_row(row(99)))
            except OSError:
                own = TaskJournal(store_path)
                own.append(encode_row(row(100)))
                status = 0
        finally:
            os._exit(status)
    assert os.waitpid(child, 0)[1] == 0
    parent.append(encode_row(row(1)))
    by_owner = {found.owner.pid: found.rows for found in read_journals(store_path, 3)}
    assert by_owner == {os.getpid(): [row(0), row(1)], child: [row(100)]}


def test_a_journal_of_an_older_llqm_is_read(tmp_path):
    """Frames up to the file's size, no zero tail: what a killed process of an older llqm left."""
    store_path = tmp_path / "s.sqlite"
    header = json.dumps({"host": "elsewhere", "pid": 1, "process_started": 1.0}) + "\n"
    name = store_path.with_name(f"{store_path.name}-journal-0123456789abcdef.journal")
    name.write_bytes(header.encode() + b"".join(encode_row(row(i)) for i in range(3)))
    (found,) = read_journals(store_path, 3)
    assert found.rows == [row(i) for i in range(3)] and found.owner.host == "elsewhere"


def test_where_the_file_cannot_be_mapped_rows_are_written_instead(tmp_path, monkeypatch):
    store_path = tmp_path / "s.sqlite"

    def refused(*args, **kwargs):
        raise OSError(19, "No such device")  # what a filesystem without mmap answers

    monkeypatch.setattr(journal_module.mmap, "mmap", refused)
    journal = TaskJournal(store_path)
    for i in range(3):
        journal.append(encode_row(row(i)))
    assert rows_in(store_path) == [row(i) for i in range(3)]


def test_when_a_larger_mapping_is_refused_rows_are_written_after_the_mapped_ones(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(journal_module, "FIRST_SIZE", 4096)
    store_path = tmp_path / "s.sqlite"
    journal = TaskJournal(store_path)

    def out_of_memory(*args, **kwargs):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(journal_module.mmap, "mmap", out_of_memory)
    for i in range(20):  # ~300 bytes each: the first dozen fit the mapping, the rest are written
        journal.append(encode_row(row(i, size=300)))
    assert rows_in(store_path) == [row(i, size=300) for i in range(20)]
    journal.clear()
    journal.append(encode_row(row(20)))
    assert rows_in(store_path) == [row(20)]


def test_a_row_journaled_before_the_readings_column_reads_as_full_readings(store_path):
    """A journal an older llqm left (rows without ``readings``) still gives its tasks, as read in
    full, as the store's rows of that llqm do."""
    from llqm_core.store.schema import TASK_COLUMNS
    from llqm_core.store.task_rows import finished_row

    with llqm.run("older", store=llqm.ProfileStore(store_path)) as run:
        with llqm.task("step") as t:
            pass
    older = finished_row(t.record)
    del older[TASK_COLUMNS.index("readings")]
    older[0] = "older-task"
    TaskJournal(store_path).append(encode_row(older))
    tasks = {x.id: x for x in llqm.ProfileStore(store_path, readonly=True).tasks(run.id)}
    assert tasks[t.record.id].profile.readings.startswith("light")
    assert tasks["older-task"].profile.readings == "full"
    assert tasks["older-task"].profile.wall_s == t.record.profile.wall_s


def _populating_works(tmp_path) -> bool:
    """Whether this system makes a shared mapping's pages writable on request (Linux 5.14+)."""
    if journal_module._POPULATE_WRITE is None:
        return False
    journal = TaskJournal(tmp_path / "probe.sqlite")
    journal.append(encode_row(row(0)))
    return journal_module._POPULATE_WRITE is not None


def _mapped_kib(path) -> int:
    """How much of ``path``'s mapping in this process is in its page tables (``Rss`` in smaps)."""
    lines = open("/proc/self/smaps").read().splitlines()
    for at, line in enumerate(lines):
        if line.endswith(str(path)):
            return next(int(x.split()[1]) for x in lines[at + 1 :] if x.startswith("Rss:"))
    raise AssertionError(f"{path} is not mapped")


def test_the_pages_ahead_of_the_last_frame_are_mapped_before_a_task_writes_them(tmp_path):
    """The pages the next tasks' frames go to are made writable in one system call per
    ``POPULATE_AHEAD`` bytes, not a page fault each on a task's path (docs/performance.md)."""
    if not os.path.exists("/proc/self/smaps") or not _populating_works(tmp_path):
        pytest.skip("no MADV_POPULATE_WRITE here: pages fault on first write, as before")
    store_path = tmp_path / "s.sqlite"
    journal = TaskJournal(store_path)
    journal.append(encode_row(row(0)))
    ahead = journal_module.POPULATE_AHEAD // 1024
    assert _mapped_kib(journal.path) >= ahead  # one small frame written: a page, without
    rows = [row(i, size=2000) for i in range(1, 201)]  # ~400 KiB of frames: populated again
    for each in rows:
        journal.append(encode_row(each))
    assert _mapped_kib(journal.path) >= 400 + 64  # the frames, and pages ahead of them again
    assert rows_in(store_path) == [row(0), *rows]
    journal.clear()
    journal.append(encode_row(row(5)))
    assert rows_in(store_path) == [row(5)]


def test_where_pages_cannot_be_made_writable_in_advance_frames_are_kept_as_before(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(journal_module, "_POPULATE_WRITE", 10_000)  # an advice no kernel knows
    store_path = tmp_path / "s.sqlite"
    journal = TaskJournal(store_path)
    rows = [row(i, size=3000) for i in range(120)]  # past POPULATE_AHEAD
    for each in rows:
        journal.append(encode_row(each))
    assert journal_module._POPULATE_WRITE is None  # refused once: never asked again
    assert rows_in(store_path) == rows


def test_a_journal_is_zeros_past_its_frames_to_its_size_as_it_grows(tmp_path, monkeypatch):
    """The file is taken to its size with zeros (written in blocks, not one buffer of the whole
    step): the disk space is taken then, and readers stop at the zero after the last frame."""
    monkeypatch.setattr(journal_module, "FIRST_SIZE", 3 * 65536 + 123)  # not whole blocks
    store_path = tmp_path / "s.sqlite"
    journal = TaskJournal(store_path)
    data = journal.path.read_bytes()
    header = data.index(b"\n") + 1
    assert len(data) == 3 * 65536 + 123 and not any(data[header:])
    rows = [row(i, size=100_000) for i in range(3)]  # past the first size: the file doubles
    for each in rows:
        journal.append(encode_row(each))
    data = journal.path.read_bytes()
    assert len(data) == 2 * (3 * 65536 + 123)
    frames = sum(len(encode_row(each)) for each in rows)
    assert not any(data[header + frames :])
    assert rows_in(store_path) == rows
