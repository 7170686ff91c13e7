"""A process that cannot reach the run's store relays what it records to the one that can."""

from __future__ import annotations

import base64
import os
import pickle
import socket
import subprocess
import sys
import textwrap
import time

import pytest

import llqm_core as llqm
import llqm_core.plugin
from llqm_core.model.errors import StoreError
from llqm_core.model.records import HardwareSnapshot, PolicyDecision
from llqm_core.store.relay import RelayStore, deliver, read_message, relay_message

#: Runs in a fresh interpreter with its own HOME and working folder and no store path: it joins
#: the run given (pickled) in argv[1] through a relay, and prints the messages it would send.
WORKER = textwrap.dedent(
    """
    import base64, os, pickle, sys
    import llqm_core as llqm
    from llqm_core.model.records import HardwareSnapshot, PolicyDecision
    from llqm_core.store.relay import RelayStore

    sent = []
    run = pickle.loads(base64.b64decode(sys.argv[1]))
    joined = llqm.ActiveRun.attach(run, RelayStore(sent.append, "/the/flow/host/profiles.sqlite"))
    with llqm.run_context(joined):
        with llqm.task("fold", stage="mitigate.zne.fold") as fold:
            fold.annotate(scale=3)
            fold.use_hardware(HardwareSnapshot(backend="fake_fez", num_qubits=2))
        with llqm.task("execute", stage="execute", depends_on=[fold]) as execute:
            joined.record_decision(PolicyDecision("parallel", {"workers": 2}, "two idle cores"))
            execute.keep_result("test.counts", b"packed", 6, {"circuits": 1})
            execute.keep_result_later("test.later", lambda: (b"made", 9), 64, {"circuits": 2})
        try:
            with llqm.task("extrapolate"):
                raise ValueError("no points to fit")
        except ValueError:
            pass
    sys.stdout.write(base64.b64encode(pickle.dumps((os.getpid(), sent))).decode())
    """
)


def test_a_worker_without_the_store_lands_its_tasks_in_the_run_through_a_relay(tmp_path):
    owner = llqm.ProfileStore(tmp_path / "flow" / "profiles.sqlite")
    with llqm.run("flow", store=owner) as active:
        home = tmp_path / "worker"
        home.mkdir()
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "MPLCONFIGDIR": str(home / "mpl"),
            "LLQM_EXPORTERS": "none",
        }
        result = subprocess.run(
            [sys.executable, "-c", WORKER, base64.b64encode(pickle.dumps(active.record)).decode()],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=home,
            env=env,
        )
        assert result.returncode == 0, result.stderr
        worker_pid, messages = pickle.loads(base64.b64decode(result.stdout))
        for message in messages:
            deliver(owner, *read_message(message))
    assert [p.name for p in home.rglob("*") if p.name != "mpl" and "mpl" not in p.parts] == []

    tasks = owner.tasks(active.id)
    assert [t.name for t in tasks] == ["fold", "execute", "extrapolate"]
    fold, execute, extrapolate = tasks
    assert all(t.profile.pid == worker_pid != os.getpid() for t in tasks)
    assert all(t.profile.host == socket.gethostname() and t.profile.wall_s > 0 for t in tasks)
    assert {t.trace_id for t in tasks} == {active.trace_id}
    assert all(t.parent_span_id == active.record.span_id for t in tasks)
    assert fold.metrics["scale"] == 3 and execute.depends_on == [fold.id]
    assert extrapolate.status is llqm.TaskStatus.FAILED and "no points" in extrapolate.error
    assert owner.snapshot(fold.hardware).backend == "fake_fez"
    [decision] = owner.decisions(active.id)
    assert decision.choice == {"workers": 2} and decision.task_id == execute.id
    kept, later = owner.results(active.id)
    assert (kept.task_id, kept.kind, kept.data, kept.meta) == (
        execute.id,
        "test.counts",
        b"packed",
        {"circuits": 1},
    )
    # a payload made later is made before it is relayed: it travels as bytes
    assert (later.task_id, later.kind, later.data, later.raw_bytes) == (
        execute.id,
        "test.later",
        b"made",
        9,
    )
    assert owner.run(active.id).status is llqm.RunStatus.COMPLETED


def test_a_relayed_running_task_shows_as_running_until_its_end_arrives(tmp_path):
    owner = llqm.ProfileStore(tmp_path / "profiles.sqlite")
    sent: list = []
    with llqm.run("flow", store=owner) as active:
        relay = llqm.ActiveRun.attach(active.record, RelayStore(sent.append, owner.path))
        handle = llqm.plugin.start_task("long", run=relay, activate=False)
        deliver(owner, *read_message(sent[0]))
        reader = llqm.ProfileStore(owner.path, readonly=True)
        deadline = time.monotonic() + 30  # the writer commits running rows within seconds
        while not reader.tasks(active.id) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [t.status for t in reader.tasks(active.id)] == [llqm.TaskStatus.RUNNING]
        llqm.plugin.finish_task(handle)
        deliver(owner, *read_message(sent[1]))
        assert [t.status for t in reader.tasks(active.id)] == [llqm.TaskStatus.COMPLETED]


def test_a_relay_reads_nothing_and_neither_opens_nor_ends_a_run(tmp_path):
    relay = RelayStore(lambda message: None, tmp_path / "elsewhere.sqlite")
    with llqm.run("local", store=False) as active:
        pass
    with pytest.raises(StoreError, match="cannot open a run"):
        relay.insert_run(active.record)
    with pytest.raises(StoreError, match="cannot reach"):
        relay.run()
    assert relay.runs() == [] and relay.tasks("x") == [] and relay.policy_history("p") == []
    assert not (tmp_path / "elsewhere.sqlite").exists()


@pytest.mark.parametrize(
    "message, complaint",
    [
        ("not a dict", "must be a dict"),
        ({"call": "insert_run", "record": b""}, "one of start_task"),
        (
            relay_message("start_task", HardwareSnapshot(backend="aer", num_qubits=1)),
            "carries a TaskRecord, not HardwareSnapshot",
        ),
        (relay_message("save_decision", PolicyDecision("p", {}, "r")), None),
    ],
)
def test_only_the_relayed_store_calls_with_their_records_are_accepted(message, complaint):
    if complaint is None:
        assert read_message(message)[0] == "save_decision"
        return
    with pytest.raises(StoreError, match=complaint):
        read_message(message)
