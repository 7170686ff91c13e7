"""In a Dask worker: the LLQM runs that flows published to its cluster, and how a task joins one.

Kept free of Prefect, so that a worker that unpickles the run's plugin (``dask_worker``) has
imported nothing heavy yet, and its start-up task can time Prefect's import.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

import llqm_core
from llqm_core import Profile, ProfileStore, RunRecord, StoreError
from llqm_core.plugin import finish_task, is_database_url, recording, start_task

from .names import WORKER_START
from .readings import RelayWithReadings


@dataclass(frozen=True)
class PublishedRun:
    """What a worker needs to join a run without its store: the run, the store's place, the way
    back, and the flow's Prefect API (None where the flow has none to share)."""

    run: RunRecord
    flow_run_id: str
    store_path: str  # a file's path, or a database's URL (workers connect to it themselves)
    store_host: str
    topic: str
    api_url: str | None = None

    def store_is_here(self) -> bool:
        """The store may be written from this process: a database (over the network), or a
        file on this host that is there."""
        if is_database_url(self.store_path):
            return True
        return socket.gethostname() == self.store_host and os.path.exists(self.store_path)

    def on_this_host(self) -> bool:
        return socket.gethostname() == self.store_host


@dataclass(frozen=True)
class StartUp:
    """A worker's start-up for a run (``dask_worker``), measured when the run reached it and
    kept as a task of the run (``worker.start``) when the worker's first task joins the run:
    its rows then follow the flow's subscription to them, as every task's do."""

    start_ns: int
    end_ns: int
    profile: Profile
    metrics: dict[str, Any]


@dataclass
class _Published:
    run: PublishedRun
    worker: Any
    joined: llqm_core.ActiveRun | None = None
    startups: list[StartUp] = field(default_factory=list)


#: The runs published to this worker, by Prefect flow run id, with the worker that sends and,
#: once a task joined it, the run as this process joined it.
_published: dict[str, _Published] = {}
_published_lock = threading.Lock()
_in_dask_worker = False  # set once a run was published to this process


def publish_here(published: PublishedRun, worker: Any, startup: StartUp | None = None) -> None:
    global _in_dask_worker
    _in_dask_worker = True
    with _published_lock:
        entry = _published.get(published.flow_run_id)
        if entry is None or entry.run != published:
            entry = _published[published.flow_run_id] = _Published(published, worker)
        if startup is not None:  # in-process workers share the entry, each with its start-up
            entry.startups.append(startup)


def withdraw_here(flow_run_id: str) -> None:
    with _published_lock:
        _published.pop(flow_run_id, None)


def published_options(flow_run_id: str) -> dict[str, Any] | None:
    """The options of a plain flow's run published to this worker for ``flow_run_id`` (where
    ``@profiled`` gives them with the flow's function): its store, no stage names, the
    instrumentors on. None when none was published for it."""
    with _published_lock:
        entry = _published.get(flow_run_id)
    if entry is None:
        return None
    return {"store": entry.run.store_path, "stages": {}, "instrument": True}


def in_dask_worker() -> bool:
    """Whether this process is a Dask worker that was told of a run: there, a flow run that is
    not published (any more) has no store to guess at."""
    return _in_dask_worker


def joined_run(flow_run_id: str) -> llqm_core.ActiveRun | None:
    """In a Dask worker: the run of a published flow run, joined once with the store itself
    where it is here and holds the run, else with a relay to it; None when no run was
    published for that flow run (a process-pool worker, or a flow not on Dask)."""
    with _published_lock:
        entry = _published.get(flow_run_id)
        if entry is None:
            return None
        if entry.joined is None:
            entry.joined = llqm_core.ActiveRun.attach(entry.run.run, _store_for(entry))
        joined, startups, entry.startups = entry.joined, entry.startups, []
    for startup in startups:
        with recording("a Dask worker's start-up"):
            handle = start_task("worker.start", WORKER_START, run=joined, activate=False)
            handle.annotate(startup.metrics)
            finish_task(handle, timed=(startup.start_ns, startup.end_ns, startup.profile))
    return joined


def _store_for(entry: _Published) -> ProfileStore:
    published = entry.run
    if published.store_is_here():
        try:
            store = llqm_core.open_store(published.store_path)
            store.run(published.run.id)  # the run is in it (StoreError where it is not)
            return store
        except StoreError:  # a database this worker cannot reach: its rows go back instead
            pass
    send = functools.partial(entry.worker.log_event, published.topic)
    return RelayWithReadings(send, published.store_path, str(entry.worker.address))
