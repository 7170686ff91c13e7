"""Dask workers on any host: each LLQM run is published to the flow's cluster, and workers that
cannot reach its store send their rows back as Dask events, since a team's workers rarely share
the store's file system (docs/architecture.md, "Dask workers on other hosts"). This is the flow
process's side; ``dask_worker`` is the workers'.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from prefect.context import FlowRunContext

import llqm_core
from llqm_core import Profile, TaskRecord
from llqm_core.plugin import deliver, finish_task, read_message, recording, start_task, warn

from .bindings import bind_run, binding_of
from .dask_worker import JoinRun
from .names import WORKER_START, WORKER_STOP
from .published import PublishedRun
from .readings import IN_FLIGHT, KeptReadings
from .task_runs import adopt_relayed_task


class _Receiver:
    """In the flow's process: keeps what the workers send back in the run's store. Dask calls it
    in its client's event loop, one message at a time."""

    def __init__(self, active: llqm_core.ActiveRun) -> None:
        self.active = active
        self.warned = False
        self.readings = KeptReadings(active.store) if active.store is not None else None

    def __call__(self, event: tuple[float, Any]) -> None:
        _, message = event
        try:
            if isinstance(message, dict) and message.get("call") == IN_FLIGHT:
                if self.readings is not None:
                    self.readings.keep(message)
                return
            call, record = read_message(message)
            if isinstance(record, TaskRecord):
                adopt_relayed_task(self.active, record)
            if self.active.store is not None:
                deliver(self.active.store, call, record)
        except Exception as exc:  # a message that cannot be kept must not stop the others
            if not self.warned:
                self.warned = True
                warn(f"a Dask worker's profile rows for run {self.active.id} were not kept: {exc}")


def _cluster_task(
    active: llqm_core.ActiveRun, name: str, stage: str, start_ns: int, metrics: dict[str, Any]
) -> None:
    """A task of the Dask cluster's, timed in this process from ``start_ns`` to now: its wall
    alone, since the work was the cluster's processes', not this one's."""
    end_ns = time.time_ns()
    start_ns = min(start_ns, end_ns)
    handle = start_task(name, stage, run=active, activate=False)
    handle.annotate(metrics)
    profile = Profile(
        wall_s=(end_ns - start_ns) / 1e9,
        pid=os.getpid(),
        host=socket.gethostname(),
        thread=threading.get_native_id(),
        readings="light",
    )
    finish_task(handle, timed=(start_ns, end_ns, profile))


def record_cluster_start(active: llqm_core.ActiveRun, client: Any, start_ns: int) -> None:
    """The time in which Prefect started the Dask cluster (or connected to one), from
    ``start_ns`` to now, as a task: ``dask.cluster``."""
    with recording("a Dask cluster's start-up"):
        info = client.scheduler_info()
        metrics = {
            "dask.scheduler": info.get("address"),
            "dask.workers": len(info.get("workers", {})),
        }
        _cluster_task(active, "dask.cluster", WORKER_START, start_ns, metrics)


def flow_api_url(context: Any) -> str | None:
    """The Prefect API a flow run (its ``FlowRunContext``) talks to, a temporary server's too."""
    client = getattr(context, "client", None)
    return str(client.api_url) if client is not None else None


#: For each task runner a run is published on (by ``id``: task runners compare by their
#: settings and cannot be hashed), what withdraws it.
_published_on: dict[int, Callable[[], None]] = {}


def publish_run(
    task_runner: Any,
    active: llqm_core.ActiveRun,
    flow_run_id: str | None,
    api_url: str | None = None,
    cluster_since_ns: int | None = None,
) -> Callable[[], None] | None:
    """On a ``DaskTaskRunner``: publish the run to the cluster's workers for the flow run
    ``flow_run_id`` (with the flow's Prefect API, ``api_url``) and keep what they send back;
    returns what withdraws both (None for any other task runner, or one published on already).
    The cluster's start-up is timed from ``cluster_since_ns`` (the run's start by default)."""
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        return None
    if (
        not isinstance(task_runner, DaskTaskRunner)
        or active.store is None
        or not flow_run_id
        or id(task_runner) in _published_on
    ):
        return None
    client = task_runner.client  # a new cluster starts here, where it starts for this runner
    published = PublishedRun(
        run=active.record,
        flow_run_id=flow_run_id,
        store_path=active.store.location,
        store_host=socket.gethostname(),
        topic=f"llqm-run-{active.id}-{flow_run_id}",
        api_url=api_url,
    )
    name = f"llqm-prefect-{active.id}-{flow_run_id}"
    since = active.record.start_ns if cluster_since_ns is None else cluster_since_ns
    record_cluster_start(active, client, since)
    # Subscribed first: the scheduler takes the subscription before any task submitted after it.
    receiver = _Receiver(active)
    client.subscribe_topic(published.topic, receiver)
    client.register_plugin(JoinRun(published), name=name)

    def withdraw() -> None:
        _published_on.pop(id(task_runner), None)
        try:
            client.unregister_worker_plugin(name)
            client.unsubscribe_topic(published.topic)
        except Exception:  # the cluster is going away with the flow: nothing is left to withdraw
            pass
        if receiver.readings is not None:  # the run ends: none of its tasks runs any more
            receiver.readings.remove()

    _published_on[id(task_runner)] = withdraw
    return withdraw


def publish_program_run(task_runner: Any) -> None:
    """Under ``llqm profile``, before a flow run's first task goes to its ``DaskTaskRunner``
    (a plain ``@flow``, whose run is the program's): publish the program's run to the cluster
    for that flow run, as ``@profiled`` publishes its own at the flow run's start. Prefect
    starts the cluster here, at the first task; its start-up is timed from now."""
    active = llqm_core.current_run()
    context = FlowRunContext.get()
    if (
        active is None
        or id(task_runner) in _published_on
        or context is None
        or context.task_runner is not task_runner
        or context.flow_run is None
    ):
        return
    started_ns = time.time_ns()
    started: Any = task_runner  # the cluster starts: the program's step, its errors its own
    started.client  # noqa: B018
    with recording("publishing the run to a Dask cluster"):
        if binding_of(active.id) is None:  # relayed tasks' dependencies resolve against it
            bind_run(active.id, {})
        publish_run(
            task_runner, active, str(context.flow_run.id), flow_api_url(context), started_ns
        )


@contextmanager
def closing_cluster(task_runner: Any) -> Iterator[None]:
    """Around a ``DaskTaskRunner``'s close: withdraw what ``publish_program_run`` published on
    it before its cluster closes (the workers' plugin is torn down while they are there), and
    time the close as a task of the program's run (``dask.cluster.close``: its workers and
    scheduler stopping, seconds that are the program's)."""
    withdraw = _published_on.get(id(task_runner))
    if withdraw is None:
        yield
        return
    with recording("withdrawing the run from a Dask cluster"):
        withdraw()
    active = llqm_core.current_run()
    if active is None:
        yield
        return
    started_ns = time.time_ns()
    try:
        yield
    finally:
        with recording("a Dask cluster's close"):
            _cluster_task(active, "dask.cluster.close", WORKER_STOP, started_ns, {})
