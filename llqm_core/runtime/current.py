"""Which run and which task are open in this context (a thread or an asyncio task).

``api.run_context`` makes a run current and ``tasks.begin_task`` a task; a task started with no
run or parent given joins these, as a warm-up and an instrumented call do.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .active_run import ActiveRun
    from .tasks import TaskHandle

CURRENT_RUN: ContextVar[ActiveRun | None] = ContextVar("llqm_current_run", default=None)
CURRENT_TASK: ContextVar[TaskHandle | None] = ContextVar("llqm_current_task", default=None)


def current_run() -> ActiveRun | None:
    """The run open in this context (thread or asyncio task), or None."""
    return CURRENT_RUN.get()


def current_task() -> TaskHandle | None:
    """The task open in this context, or None."""
    return CURRENT_TASK.get()
