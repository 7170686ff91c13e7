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
from collections.abc import Callable
from typing import Any

import llqm_core
from llqm_core import Profile, TaskRecord
from llqm_core.plugin import deliver, finish_task, read_message, recording, start_task, warn

from .dask_worker import JoinRun
from .names import FLOW_RUN_ID, WORKER_START
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


def record_cluster_start(active: llqm_core.ActiveRun, client: Any) -> None:
    """The flow run's time before its body, in which Prefect started the Dask cluster (or
    connected to one), as a task: ``dask.cluster``, timed from the flow run's start to now. Its
    wall alone: the work was the cluster's processes', not this one's."""
    end_ns = time.time_ns()
    start_ns = min(active.record.start_ns, end_ns)
    handle = start_task("dask.cluster", WORKER_START, run=active, activate=False)
    with recording("a Dask cluster's start-up", handle):
        info = client.scheduler_info()
        handle.annotate(
            {"dask.scheduler": info.get("address"), "dask.workers": len(info.get("workers", {}))}
        )
    profile = Profile(
        wall_s=(end_ns - start_ns) / 1e9,
        pid=os.getpid(),
        host=socket.gethostname(),
        thread=threading.get_native_id(),
        readings="light",
    )
    finish_task(handle, timed=(start_ns, end_ns, profile))


def publish_run(
    task_runner: Any, active: llqm_core.ActiveRun, api_url: str | None = None
) -> Callable[[], None] | None:
    """On a ``DaskTaskRunner``: publish the run (and the flow's Prefect API, ``api_url``) to the
    cluster's workers and keep what they send back; returns what withdraws both at the run's end
    (None for any other task runner)."""
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        return None
    flow_run_id = active.record.config.get(FLOW_RUN_ID)
    if not isinstance(task_runner, DaskTaskRunner) or active.store is None or not flow_run_id:
        return None
    client = task_runner.client
    published = PublishedRun(
        run=active.record,
        flow_run_id=flow_run_id,
        store_path=active.store.location,
        store_host=socket.gethostname(),
        topic=f"llqm-run-{active.id}",
        api_url=api_url,
    )
    name = f"llqm-prefect-{active.id}"
    record_cluster_start(active, client)
    # Subscribed first: the scheduler takes the subscription before any task submitted after it.
    receiver = _Receiver(active)
    client.subscribe_topic(published.topic, receiver)
    client.register_plugin(JoinRun(published), name=name)

    def withdraw() -> None:
        try:
            client.unregister_worker_plugin(name)
            client.unsubscribe_topic(published.topic)
        except Exception:  # the cluster is going away with the flow: nothing is left to withdraw
            pass
        if receiver.readings is not None:  # the run ends: none of its tasks runs any more
            receiver.readings.remove()

    return withdraw
