"""The ``prefect`` entry point of the ``llqm`` group: Prefect as an engine for pipeline files.

Kept free of Prefect imports: LLQM loads every plugin when it starts, and Prefect takes
seconds to import, so it is imported only when a pipeline actually runs on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llqm_core.plugin import hookimpl


def run_on_prefect(pipeline: Any, store: Any = None, on_step: Any = None) -> Any:
    from .server import quiet_temporary_server

    quiet_temporary_server(engine=True)  # before Prefect is imported: it reads its settings then
    from .pipeline import run_pipeline_on_prefect

    return run_pipeline_on_prefect(pipeline, store=store, on_step=on_step)


@hookimpl
def llqm_register_engines(register: Callable[..., None]) -> None:
    register("prefect", run_on_prefect, description="each step a task of one profiled Prefect flow")
