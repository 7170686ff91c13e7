"""The worker plugin that a profiled flow run registers on its Dask cluster: each worker, present
and future, is told the run, shares the flow's Prefect API, is instrumented, and records its
start-up as a task of the run (``worker.start``), with the time Prefect's import took.

Kept free of Prefect at import: Dask imports this module when it unpickles the plugin, so
Prefect's import happens in ``setup``, where the start-up task times it.
"""

from __future__ import annotations

import os
import resource
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import psutil

from llqm_core import Profile
from llqm_core.plugin import recording

from .attach import forget_attached
from .published import PublishedRun, StartUp, publish_here, withdraw_here
from .server import API_URL

try:
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # the 'dask' extra is not installed
    WorkerPlugin = object  # type: ignore[assignment,misc]

_LOOPBACK = ("localhost", "::1")
#: The flow runs for which this process set ``PREFECT_API_URL`` (withdrawn with the last of them).
_sharing: set[str] = set()


def share_flow_api(published: PublishedRun) -> bool:
    """Point this worker's Prefect at the flow's API, so that it starts no temporary server of
    its own (seconds each, a second SQLite database, "database is locked" on busy machines).

    Not where the worker has an API of its own, nor where the flow's is a temporary server on
    another host (it listens on the loopback there): that worker starts its own, as without LLQM.
    Returns whether it set it."""
    url = published.api_url
    if not url or os.environ.get(API_URL):
        return False
    host = urlsplit(url).hostname or ""
    if not published.on_this_host() and (host in _LOOPBACK or host.startswith("127.")):
        return False
    os.environ[API_URL] = url
    _sharing.add(published.flow_run_id)
    return True


def stop_sharing(published: PublishedRun) -> None:
    """Take the flow's API back out of this worker's environment once no run shares it."""
    if published.flow_run_id not in _sharing:
        return
    _sharing.discard(published.flow_run_id)
    if not _sharing and os.environ.get(API_URL) == published.api_url:
        del os.environ[API_URL]


def _process_started_ns(process: psutil.Process) -> int:
    """When this process started, on the wall clock: from its age since boot where Linux tells
    it (immune to the wall clock having been set since boot, as ``create_time`` is not)."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            ticks = int(stat.read().rpartition(")")[2].split()[19])
            age_s = float(uptime.read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK")
        return time.time_ns() - int(age_s * 1e9)
    except (OSError, ValueError, IndexError):
        return int(process.create_time() * 1e9)


def _rss() -> int:
    return int(psutil.Process().memory_info().rss)


def _start_up(
    run_start_ns: int,
    setup_ns: int,
    setup_cpu_s: float,
    setup_rss: int,
    metrics: dict[str, Any],
) -> StartUp:
    """The worker's start-up for the run: from the process's start where Dask started it for
    this run (a ``LocalCluster``'s worker: Python, Dask and the modules it imported, the flow's
    own when Dask spawned it), else from the plugin's setup, to the worker being ready."""
    me = psutil.Process()
    started_ns = _process_started_ns(me)
    whole = started_ns >= run_start_ns
    start_ns, end_ns = (started_ns if whole else setup_ns), time.time_ns()
    cpu_s = time.process_time() - (0.0 if whole else setup_cpu_s)
    rss, peak_kib = _rss(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start_rss = 0 if whole else setup_rss
    profile = Profile(
        wall_s=(end_ns - start_ns) / 1e9,
        cpu_s=cpu_s,
        process_cpu_s=cpu_s,
        start_rss_bytes=start_rss,
        end_rss_bytes=rss,
        peak_rss_bytes=max(rss, peak_kib * 1024) if whole else rss,
        rss_growth_bytes=rss - start_rss,
        pid=me.pid,
        host=socket.gethostname(),
        thread=threading.get_native_id(),
        readings="light",
    )
    boot_s = (setup_ns - started_ns) / 1e9 if whole else 0.0
    return StartUp(start_ns, end_ns, profile, {"worker.boot_s": boot_s, **metrics})


class JoinRun(WorkerPlugin):
    """Instruments every worker of the flow's cluster, present and future, and tells it the run."""

    idempotent = False

    def __init__(self, published: PublishedRun) -> None:
        self.published = published

    def setup(self, worker: Any) -> None:
        setup_ns, setup_cpu_s, setup_rss = time.time_ns(), time.process_time(), _rss()
        shared_api = share_flow_api(self.published)  # before Prefect reads its settings
        began = time.perf_counter()
        from .instrument import instrument_this_process  # Prefect, where not imported yet

        imported_s = time.perf_counter() - began
        instrument_this_process()
        startup = None
        with recording("a Dask worker's start-up"):
            startup = _start_up(
                self.published.run.start_ns,
                setup_ns,
                setup_cpu_s,
                setup_rss,
                {
                    "worker.import_s": imported_s,
                    "dask.worker": str(worker.address),
                    "prefect.api_shared": shared_api,
                },
            )
        publish_here(self.published, worker, startup)

    def teardown(self, worker: Any) -> None:
        withdraw_here(self.published.flow_run_id)
        forget_attached(self.published.flow_run_id)
        stop_sharing(self.published)
