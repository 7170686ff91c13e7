"""Dask workers on any host: each LLQM run is published to the flow's cluster, and workers that
cannot reach its store send their rows back as Dask events, since a team's workers rarely share
the store's file system (docs/architecture.md, "Dask workers on other hosts").
"""

from __future__ import annotations

import functools
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import llqm_core
from llqm_core.model.errors import StoreError, warn
from llqm_core.model.records import RunRecord, TaskRecord
from llqm_core.store.profile_store import ProfileStore, is_database_url
from llqm_core.store.relay import RelayStore, deliver, read_message

from .instrument import adopt_relayed_task
from .workers import FLOW_RUN_ID, forget_attached, instrument_this_process

try:
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # the 'dask' extra is not installed
    WorkerPlugin = object  # type: ignore[assignment,misc]


@dataclass(frozen=True)
class PublishedRun:
    """What a worker needs to join a run without its store: the run, the store's place, the way back."""

    run: RunRecord
    flow_run_id: str
    store_path: str  # a file's path, or a database's URL (workers connect to it themselves)
    store_host: str
    topic: str

    def store_is_here(self) -> bool:
        """The store may be written from this process: a database (over the network), or a
        file on this host that is there."""
        if is_database_url(self.store_path):
            return True
        return socket.gethostname() == self.store_host and os.path.exists(self.store_path)


#: In a worker: the runs published to it, by Prefect flow run id, with the worker that sends.
_published: dict[str, tuple[PublishedRun, Any]] = {}
_published_lock = threading.Lock()
_in_dask_worker = False  # set once a run was published to this process


def in_dask_worker() -> bool:
    """Whether this process is a Dask worker that was told of a run: there, a flow run that is
    not published (any more) has no store to guess at."""
    return _in_dask_worker


def worker_store(flow_run_id: str) -> tuple[RunRecord, ProfileStore] | None:
    """In a Dask worker: the run of a published flow run and the store to join it with (the
    store itself where it is here and holds the run, else a relay to it); None when no run
    was published for that flow run (a process-pool worker, or a flow not on Dask)."""
    with _published_lock:
        published, worker = _published.get(flow_run_id, (None, None))
    if published is None or worker is None:
        return None
    if published.store_is_here():
        try:
            store = llqm_core.open_store(published.store_path)
            if store.find_run(FLOW_RUN_ID, flow_run_id) is not None:
                return published.run, store
        except StoreError:  # a database this worker cannot reach: its rows go back instead
            pass
    send = functools.partial(worker.log_event, published.topic)
    return published.run, RelayStore(send, published.store_path)


class JoinRun(WorkerPlugin):
    """Instruments every worker of the flow's cluster, present and future, and tells it the run."""

    idempotent = False

    def __init__(self, published: PublishedRun) -> None:
        self.published = published

    def setup(self, worker: Any) -> None:
        global _in_dask_worker
        instrument_this_process()
        _in_dask_worker = True
        with _published_lock:
            _published[self.published.flow_run_id] = (self.published, worker)

    def teardown(self, worker: Any) -> None:
        with _published_lock:
            _published.pop(self.published.flow_run_id, None)
        forget_attached(self.published.flow_run_id)


class _Receiver:
    """In the flow's process: keeps what the workers send back in the run's store. Dask calls it
    in its client's event loop, one message at a time."""

    def __init__(self, active: llqm_core.ActiveRun) -> None:
        self.active = active
        self.warned = False

    def __call__(self, event: tuple[float, Any]) -> None:
        _, message = event
        try:
            call, record = read_message(message)
            if isinstance(record, TaskRecord):
                adopt_relayed_task(self.active, record)
            if self.active.store is not None:
                deliver(self.active.store, call, record)
        except Exception as exc:  # a message that cannot be kept must not stop the others
            if not self.warned:
                self.warned = True
                warn(f"a Dask worker's profile rows for run {self.active.id} were not kept: {exc}")


def publish_run(task_runner: Any, active: llqm_core.ActiveRun) -> Callable[[], None] | None:
    """On a ``DaskTaskRunner``: publish the run to the cluster's workers and keep what they send
    back; returns what withdraws both at the run's end (None for any other task runner)."""
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
    )
    name = f"llqm-prefect-{active.id}"
    # Subscribed first: the scheduler takes the subscription before any task submitted after it.
    client.subscribe_topic(published.topic, _Receiver(active))
    client.register_plugin(JoinRun(published), name=name)

    def withdraw() -> None:
        try:
            client.unregister_worker_plugin(name)
            client.unsubscribe_topic(published.topic)
        except Exception:  # the cluster is going away with the flow: nothing is left to withdraw
            pass

    return withdraw
