"""What a task needs of the run it belongs to (``RunOfTask``), and which run is open here.

A run opens tasks (its hardware monitor's) and a task may end the run opened for it, so the two
meet through this protocol, below both: ``live_task``, ``tasks`` and ``warmup`` know a run by it
alone, and ``active_run.ActiveRun`` fulfils it.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import SpanContext

    from ..hooks.plugins import PluginSet
    from ..model.records import RunRecord
    from ..store.profile_store import ProfileStore
    from ..telemetry.task_spans import TaskSpans
    from .kept import KeptResults
    from .monitor import HardwareMonitor


class RunOfTask(Protocol):
    """An open run as its tasks, and the code inside them, use it."""

    record: RunRecord
    store: ProfileStore | None  # where its tasks are kept (None: nowhere)
    kept: KeptResults  # the cap on the devices' results it keeps
    plugins: PluginSet  # those that serve it from its start to its end
    task_spans: TaskSpans  # the process's span builder
    monitor: HardwareMonitor | None
    full_detail: bool  # instrumented calls record all they know (``model.detail``)
    otel_context: Context | None  # what made it current last: a task under it needs no lookup
    span_context: SpanContext
    span_id_for_tasks: str | None

    @property
    def id(self) -> str: ...

    def parent_for_task(self) -> tuple[SpanContext, str | None]:
        """The span a task started outside any other task goes under, and its stored id."""
        ...

    def note_output(self, value: Any, task_id: str) -> None:
        """Remember that ``task_id`` produced ``value``."""
        ...

    def producers(self, values: Iterable[Any]) -> list[str]:
        """The tasks whose outputs appear among ``values``."""
        ...

    def description(self, value: Any) -> dict[str, Any]:
        """What the plugins say of ``value``, once per run."""
        ...

    def remember_description(self, value: Any, metrics: dict[str, Any]) -> None:
        """Keep ``metrics`` as what the plugins say of ``value``."""
        ...

    def mark_iteration(
        self, value: Any = None, error: Any = None, parameters: Any = None, source: str = ...
    ) -> dict[str, Any]:
        """End an iteration of a closed loop; what was recorded."""
        ...

    def finish(self, exc: BaseException | None = None) -> None:
        """End the run (a task that opened it ends it: ``api.start_task``)."""
        ...


#: The run open in this context (thread or asyncio task): a task started with no run given joins
#: it. Only an ``ActiveRun`` is made current (``api.run_context``, a task's start in its run).
CURRENT_RUN: ContextVar[RunOfTask | None] = ContextVar("llqm_current_run", default=None)
