"""A pipeline's backend watched while it runs, and the policies that react to what is seen.

When a pipeline starts in a run, its backend (if it can tell its calibration now,
``poll_calibration``, and that calibration can move: ``calibration_moves``) is handed to the
run's hardware monitor (``llqm_core.runtime.monitor``). Policies with
``on_hardware_change(change)`` are consulted again at each change the monitor sees, each time
as the task ``policy.<name>``; a decision they return (a new layout, cache entries dropped) is
recorded on the run like any other, so the report shows when and why the run changed course.
A re-placed circuit reaches the steps that follow: before each step, ``compiled`` becomes
the circuit on the layout in force (``current_placement``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from ..hooks.contracts import PipelineData, ReactivePolicy
from ..hooks.exchanged import MonitoredBackend, MovingCalibration
from ..model.hardware import OFF_PATH_METRIC, HardwareChange
from ..runtime.api import ActiveRun, current_run, run_context
from .policies import policy_name, policy_task, record


def watch_backend(data: Mapping[str, Any]) -> None:
    """Watch ``data["backend"]`` for the current run and subscribe the reacting policies of
    ``data["policies"]``; nothing outside a run, or for a backend that cannot be read again or
    whose calibration never moves (``calibration_moves`` False)."""
    active = current_run()
    backend = data.get("backend")
    if (
        active is None
        or not isinstance(backend, MonitoredBackend)
        or (isinstance(backend, MovingCalibration) and not backend.calibration_moves)
    ):
        return
    active.watch_hardware(backend)
    subscribe(data.get("policies", []), active)


def subscribe(policies: Iterable[Any], active: ActiveRun) -> None:
    """Have the policies among ``policies`` that react to drift hear of every change that
    ``active``'s monitor sees."""
    reacting = [p for p in policies if isinstance(p, ReactivePolicy)]
    if not reacting or active.monitor is None:
        return

    def react(change: HardwareChange) -> None:
        with run_context(active):
            for policy in reacting:
                with policy_task(policy_name(policy)) as handle:
                    handle.annotate({OFF_PATH_METRIC: True})  # beside the run's work, off its path
                    decision = policy.on_hardware_change(change)
                    handle.annotate({"policy.changed": decision is not None})
                    if decision is not None:
                        record(decision)

    active.monitor.subscribe(react)


def calibration_in_force(backend: Any) -> Any:
    """The calibration of ``backend`` in force now, as policies must decide on it: the one the
    run's hardware monitor saw last (a drifting or recalibrated device has moved on from its
    first snapshot), else the backend's own ``snapshot()`` (a device nobody watches, whose
    calibration never moves).

    Args:
        backend: the run's backend.
    """
    active = current_run()
    monitor = active.monitor if active is not None else None
    watched = isinstance(backend, MonitoredBackend) and monitor is not None
    seen = monitor.current(str(backend.device_name)) if watched and monitor is not None else None
    return seen if seen is not None else backend.snapshot()


def current_placement(data: PipelineData) -> PipelineData:
    """``data`` with ``compiled`` on the layout in force now (``current_compiled``, set by the
    transpile step), so that a circuit re-placed on drift is what the next step runs."""
    current = data.get("current_compiled")
    if current is None:
        return data
    compiled = current()
    return (
        data
        if compiled is data.get("compiled")
        else cast(PipelineData, {**data, "compiled": compiled})
    )
