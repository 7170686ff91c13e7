"""What the adapter keeps, in one process, for each profiled flow run it profiles tasks of."""

from __future__ import annotations

import threading


class FlowBinding:
    """One profiled flow run's stage names and, for each Prefect task run, the LLQM task of its
    latest attempt (so that a task receiving another task's result or future, as Prefect's
    ``task_run.task_inputs`` tells, records the dependency)."""

    def __init__(self, stages: dict[str, str]) -> None:
        self.stages = stages
        self.llqm_ids: dict[str, str] = {}
        self.lock = threading.Lock()


_bindings: dict[str, FlowBinding] = {}


def bind_run(run_id: str, stages: dict[str, str]) -> None:
    _bindings[run_id] = FlowBinding(stages)


def binding_of(run_id: str) -> FlowBinding | None:
    """The binding of a run profiled here; None once it is over (or never bound here)."""
    return _bindings.get(run_id)


def forget_run(run_id: str) -> None:
    _bindings.pop(run_id, None)
