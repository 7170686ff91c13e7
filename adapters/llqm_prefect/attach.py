"""A task run arriving in a worker process joins its profiled flow run's LLQM run.

A worker process has none of the flow's in-process state, but Prefect hands every task run its
flow run's context, flow included: the profiled flow's function carries its LLQM options
(``names.OPTIONS_ATTRIBUTE``) and the flow run's id finds its LLQM run, which the worker joins
(``ActiveRun.attach``): as its Dask cluster was told it (``published``), else in that store.
A plain flow's task run joins the run that its Dask cluster was told for its flow run (the
program's, under ``llqm profile``), and no other.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

import llqm_core
from llqm_core.plugin import warn

from .bindings import bind_run
from .names import FLOW_RUN_ID, OPTIONS_ATTRIBUTE
from .published import in_dask_worker, joined_run, published_options

_attached: dict[tuple[str, Any], llqm_core.ActiveRun] = {}
_attached_lock = threading.Lock()
_missing: set[tuple[str, Any]] = set()


def _flow_run_parts(context: Any) -> tuple[Any, Any]:
    """The flow and flow run id of a Prefect flow run context, hydrated or serialized."""
    if context is None:
        return None, None
    if isinstance(context, dict):
        flow, flow_run = context.get("flow"), context.get("flow_run")
    else:
        flow, flow_run = getattr(context, "flow", None), getattr(context, "flow_run", None)
    flow_run_id = (
        flow_run.get("id") if isinstance(flow_run, dict) else getattr(flow_run, "id", None)
    )
    return flow, flow_run_id


def attached_run(flow_run_context: Any) -> llqm_core.ActiveRun | None:
    """The LLQM run of a profiled flow run, joined from a worker; None for any other flow."""
    flow, flow_run_id = _flow_run_parts(flow_run_context)
    if flow_run_id is None:
        return None
    options = getattr(getattr(flow, "fn", None), OPTIONS_ATTRIBUTE, None)
    if options is None:  # a plain flow: profiled where a program's run was published for it
        options = published_options(str(flow_run_id))
    if options is None or options["store"] is False:
        return None
    key = (str(flow_run_id), options["store"])
    with _attached_lock:
        if key not in _attached:
            joined = _join(str(flow_run_id), options["store"])
            if joined is None:
                return None
            if options.get("instrument", True):
                llqm_core.instrument_all()
            bind_run(joined.id, options["stages"])
            _attached[key] = joined
        return _attached[key]


def _join(flow_run_id: str, store: Any) -> llqm_core.ActiveRun | None:
    """Join the flow run's LLQM run: as the Dask cluster was told it, else from ``store``."""
    published = joined_run(flow_run_id)
    if published is not None:
        return published
    if in_dask_worker():  # the flow run is over (a task left behind): its store may not be here
        return None
    opened = llqm_core.open_store(store)
    run = opened.find_run(FLOW_RUN_ID, flow_run_id)
    if run is not None:
        return llqm_core.ActiveRun.attach(run, opened)
    if (flow_run_id, store) not in _missing:
        _missing.add((flow_run_id, store))
        warn(
            f"the LLQM run of Prefect flow run {flow_run_id} is not in the store {opened.name} on "
            f"{socket.gethostname()}, so its tasks that run here are not profiled.",
            stacklevel=2,
        )
    return None


def forget_attached(flow_run_id: str) -> None:
    """Let go of a flow run's LLQM run in this worker once the flow run is over."""
    with _attached_lock:
        for key in [key for key in _attached if key[0] == flow_run_id]:
            del _attached[key]
