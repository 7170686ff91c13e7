"""The ``prefect`` entry point of the ``llqm`` group: Prefect as an engine for pipeline files,
and its task runs as tasks of an instrumented run (``llqm profile`` of a flow).

Kept free of Prefect imports: LLQM loads every plugin when it starts, and Prefect takes
seconds to import, so it is imported only when a pipeline runs on it or a program imports it.
"""

from __future__ import annotations

from typing import Any

from llqm_core.plugin import Instrumentor, RegisterEngine, RegisterInstrumentor, hookimpl

from .server import quiet_temporary_server


class PrefectWhenImported(Instrumentor):
    """``PrefectInstrumentor`` switched on once the program imports Prefect's task engine, and off
    again with this one if it was this one that switched it on (a ``@profiled`` flow keeps it on
    for good)."""

    name = "prefect"
    library = "prefect"
    supported = ">=3.9,<4"

    def _instrument(self) -> None:
        self._switched = False
        quiet_temporary_server()  # before the program imports Prefect, which reads its settings then
        self.on_import("prefect.task_engine", self._switch_on)

    def _switch_on(self, _module: Any) -> None:
        from .instrument import PrefectInstrumentor

        engine = PrefectInstrumentor()
        self._switched = not engine.is_instrumented and engine.instrument()

    def _uninstrument(self) -> None:
        if self._switched:
            from .instrument import PrefectInstrumentor

            PrefectInstrumentor().uninstrument()


def run_on_prefect(pipeline: Any, store: Any = None, on_step: Any = None) -> Any:
    quiet_temporary_server(engine=True)  # before Prefect is imported: it reads its settings then
    from .pipeline import run_pipeline_on_prefect

    return run_pipeline_on_prefect(pipeline, store=store, on_step=on_step)


@hookimpl
def llqm_register_engines(register: RegisterEngine) -> None:
    register("prefect", run_on_prefect, description="each step a task of one profiled Prefect flow")


@hookimpl
def llqm_register_instrumentors(register: RegisterInstrumentor) -> None:
    register(
        PrefectWhenImported.name,
        PrefectWhenImported,
        description="each Prefect task run a task of the run (plain @flow under llqm profile)",
    )
