"""Settings for Prefect's temporary server, so that a profiled run prints what LLQM means to print.

With no ``PREFECT_API_URL``, Prefect starts a temporary server (SQLite under ``PREFECT_HOME``)
in a subprocess that inherits this process's environment. Its telemetry heartbeat writes to
that database while the server migrates and records the first flow run, and then posts to
the network: on a busy machine, or one without a network, each prints a traceback on the run's
standard error ("database is locked", "Failed to send telemetry"). LLQM therefore turns the
server's analytics off unless the user set ``PREFECT_SERVER_ANALYTICS_ENABLED`` themselves.
A variable the user set always wins; against a server of their own, nothing is changed. Worker
processes would start one each: ``api_shared_with_children`` points them at the flow's instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from llqm_core.plugin import first_call

#: For every profiled flow whose temporary server LLQM's process starts.
SERVER_DEFAULTS = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
#: For ``llqm run`` with ``engine = "prefect"``, read when Prefect is imported (LLQM imports it
#: then): Prefect's console shows warnings and errors only (its flow and task run logs still reach
#: the server and its UI), and a busy machine gets 2 minutes, not 20 s, to start the server.
ENGINE_DEFAULTS = {
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}


def quiet_temporary_server(engine: bool = False) -> None:
    """Set the defaults above (``ENGINE_DEFAULTS`` too with ``engine``) where the user set nothing,
    when Prefect will start a temporary server."""
    if os.environ.get("PREFECT_API_URL"):
        return
    for name, value in (SERVER_DEFAULTS | (ENGINE_DEFAULTS if engine else {})).items():
        os.environ.setdefault(name, value)


API_URL = "PREFECT_API_URL"


@contextmanager
def api_shared_with_children(api_url: str | None) -> Iterator[None]:
    """While a profiled flow run's body runs, its Prefect API (``api_url``, a temporary server's
    too) is in this process's environment, which the worker processes started meanwhile inherit
    (a process pool's, a Dask worker that its nanny restarts): each then talks to the flow's
    server instead of starting one of its own. Not where ``PREFECT_API_URL`` is set already."""
    if not api_url or os.environ.get(API_URL):
        yield
        return
    os.environ[API_URL] = api_url
    try:
        yield
    finally:
        if os.environ.get(API_URL) == api_url:
            del os.environ[API_URL]


#: The warm-up task of the temporary server's start (``timed_server_start``).
SERVER_START = "prefect.server.start"


def timed_server_start(original: Callable[..., Any]) -> Callable[..., Any]:
    """``SubprocessASGIServer.start`` that times the temporary server's first start in this
    process as warm-up (seconds: a subprocess, migrating its database): in the run it is a task,
    not time that no task accounts for, and the report keeps it apart from the work."""

    def start(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "running", True):
            return original(self, *args, **kwargs)
        with first_call(SERVER_START, SERVER_START):
            return original(self, *args, **kwargs)

    return start
