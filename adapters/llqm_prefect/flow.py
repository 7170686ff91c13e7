"""``@profiled``: one decorator above Prefect's ``@flow`` makes each flow run an LLQM run."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, ParamSpec, TypeVar, overload

from prefect import Flow
from prefect.context import FlowRunContext

import llqm_core
from llqm_core.plugin import StoreArg, build_report, switched_on, telemetry, warn

from .artifact import ARTIFACT_TASKS, profile_markdown
from .bindings import bind_run, forget_run
from .dask_runs import flow_api_url, publish_run
from .instrument import PrefectInstrumentor
from .names import FLOW_RUN_ID, OPTIONS_ATTRIBUTE
from .server import api_shared_with_children, quiet_temporary_server

P = ParamSpec("P")
R = TypeVar("R")


@overload
def profiled(
    flow: Flow[P, R],
    *,
    store: StoreArg = None,
    stages: dict[str, str] | None = None,
    artifact: bool = True,
    instrument: bool = True,
    config: dict[str, Any] | None = None,
) -> Flow[P, R]: ...


@overload
def profiled(
    flow: None = None,
    *,
    store: StoreArg = None,
    stages: dict[str, str] | None = None,
    artifact: bool = True,
    instrument: bool = True,
    config: dict[str, Any] | None = None,
) -> Callable[[Flow[P, R]], Flow[P, R]]: ...


def profiled(
    flow: Flow[P, R] | None = None,
    *,
    store: StoreArg = None,
    stages: dict[str, str] | None = None,
    artifact: bool = True,
    instrument: bool = True,
    config: dict[str, Any] | None = None,
) -> Flow[P, R] | Callable[[Flow[P, R]], Flow[P, R]]:
    """Profile every task run of a Prefect flow as an LLQM task of one LLQM run per flow run.

    Place it above ``@flow`` (``@profiled`` or ``@profiled(...)``)::

        @profiled(stages={"transpile_circuit": "transpile"})
        @flow
        def pipeline(): ...

    Subflows called inside the flow belong to the same run.

    Args:
        flow: the Prefect flow (given by the decorator).
        store: where profiles go, as for ``llqm_core.run``: a path, a ``postgresql://`` URL,
            a ``ProfileStore``, None for the default store, or False for none.
        stages: task name -> stage (a task tagged ``llqm.stage:NAME`` takes ``NAME``;
            otherwise its name is its stage).
        artifact: give each flow run a markdown artifact ``llqm-profile`` with the profile
            summary, shown in the Prefect UI.
        instrument: switch every installed instrumentor on while the flow runs (and off after,
            unless it was on before), so a task calling ``qiskit.transpile`` or Mitiq's
            ``execute_with_zne`` shows their stages under its own task.
        config: stored with each LLQM run besides the flow's names (a pipeline file's sections
            and, for a repeated trial, its trial keys).

    Returns:
        The flow, profiled (a copy made with ``Flow.with_options``); without ``flow``, the
        decorator that makes it.

    Raises:
        TypeError: ``flow`` is not a Prefect ``Flow`` (``@profiled`` goes above ``@flow``).
    """
    if flow is None:

        def decorate(given: Flow[P, R]) -> Flow[P, R]:
            return profiled(
                given,
                store=store,
                stages=stages,
                artifact=artifact,
                instrument=instrument,
                config=config,
            )

        return decorate
    if not isinstance(flow, Flow):
        raise TypeError(
            f"@profiled goes above Prefect's @flow; it was given {type(flow).__name__} instead of a Flow."
        )
    PrefectInstrumentor().instrument()
    quiet_temporary_server()  # before the first flow run starts Prefect's temporary server
    telemetry()  # Prefect's flow and task spans must reach the same tracer provider as LLQM's
    if isinstance(store, llqm_core.ProfileStore):
        store = (
            store.location
        )  # the options travel to worker processes with the flow: keep them picklable
    elif store not in (None, False):
        store = str(store)
    options = {
        "store": store,
        "stages": dict(stages or {}),
        "artifact": artifact,
        "instrument": instrument,
        "config": dict(config or {}),
    }
    wrapped = flow.with_options()
    wrapped.fn = (
        _async_flow_fn(flow.fn, flow.name, options)
        if flow.isasync
        else _flow_fn(flow.fn, flow.name, options)
    )
    setattr(wrapped.fn, OPTIONS_ATTRIBUTE, options)
    return wrapped


def _open_run(flow_name: str, options: dict[str, Any]) -> llqm_core.ActiveRun | None:
    """The LLQM run of this flow run, or None inside a run already open (a subflow)."""
    if llqm_core.current_run() is not None:
        return None
    context = FlowRunContext.get()
    flow_run = context.flow_run if context is not None else None
    config = options.get("config", {}) | {"engine": "prefect", "prefect.flow": flow_name}
    if flow_run is not None:
        config |= {FLOW_RUN_ID: str(flow_run.id), "prefect.flow_run": flow_run.name}
    name = f"{flow_name}/{flow_run.name}" if flow_run is not None else flow_name
    active = llqm_core.ActiveRun(name, options["store"], config, adopt_span=True).start()
    bind_run(active.id, options["stages"])
    if context is not None:
        withdraw = publish_run(
            context.task_runner, active, config.get(FLOW_RUN_ID), flow_api_url(context)
        )
        if withdraw is not None:
            _withdraw[active.id] = withdraw
    return active


#: For each open run published to a Dask cluster, what withdraws it (``dask_runs``).
_withdraw: dict[str, Callable[[], None]] = {}


def _close_run(
    active: llqm_core.ActiveRun, options: dict[str, Any], exc: BaseException | None
) -> None:
    withdraw = _withdraw.pop(active.id, None)
    if withdraw is not None:  # the rows of the tasks that ended have arrived by now
        withdraw()
    active.finish(exc)
    forget_run(active.id)
    if options["artifact"] and active.store is not None:
        _publish(active, active.store)


def _publish(active: llqm_core.ActiveRun, store: llqm_core.ProfileStore) -> None:
    from prefect.artifacts import create_markdown_artifact

    try:
        create_markdown_artifact(
            profile_markdown(build_report(store, active.id, keep_tasks=ARTIFACT_TASKS)),
            key="llqm-profile",
            description=f"LLQM profile of run {active.id}",
            _sync=True,  # type: ignore[call-arg]  # also from an async flow: the artifact is written before the flow run ends
        )
    except Exception as exc:  # the profile is in the store; the UI copy is a convenience
        warn(f"could not publish the LLQM profile as a Prefect artifact: {exc}")


@contextmanager
def _flow_run_as_llqm_run(flow_name: str, options: dict[str, Any]) -> Iterator[None]:
    """The body of a flow run, as the current LLQM run (unless one is open already: a subflow)."""
    active = _open_run(flow_name, options)
    if active is None:
        yield
        return
    PrefectInstrumentor().instrument()  # on since the decoration, unless a profile switched it off
    try:
        with (
            switched_on() if options["instrument"] else nullcontext(),
            api_shared_with_children(flow_api_url(FlowRunContext.get())),
            llqm_core.run_context(active),
        ):
            yield
    except BaseException as exc:
        _close_run(active, options, exc)
        raise
    _close_run(active, options, None)


def _flow_fn(fn: Callable[..., Any], flow_name: str, options: dict[str, Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def profiled_flow(*args: Any, **kwargs: Any) -> Any:
        with _flow_run_as_llqm_run(flow_name, options):
            return fn(*args, **kwargs)

    return profiled_flow


def _async_flow_fn(
    fn: Callable[..., Any], flow_name: str, options: dict[str, Any]
) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def profiled_flow(*args: Any, **kwargs: Any) -> Any:
        with _flow_run_as_llqm_run(flow_name, options):
            return await fn(*args, **kwargs)

    return profiled_flow
