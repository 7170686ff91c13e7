"""Which run and which task are open in this context (a thread or an asyncio task), as the
public API gives them: the ``ActiveRun`` and the ``TaskHandle``.

``api.run_context`` makes a run current and ``tasks.begin_task`` a task; a task started with no
run or parent given joins these, as a warm-up and an instrumented call do. The context variables
sit below, with what they hold: ``run_of_task.CURRENT_RUN`` and ``tasks.CURRENT_TASK``.
"""

from __future__ import annotations

from typing import cast

from .active_run import ActiveRun
from .run_of_task import CURRENT_RUN
from .tasks import CURRENT_TASK, TaskHandle


def current_run() -> ActiveRun | None:
    """The run open in this context (thread or asyncio task), or None."""
    # Tasks know their run by its protocol; the one made current is always an ActiveRun.
    return cast("ActiveRun | None", CURRENT_RUN.get())


def current_task() -> TaskHandle | None:
    """The task open in this context, or None."""
    return CURRENT_TASK.get()
