"""The ``prefect`` entry point of the ``llqm`` group: Prefect as an engine for pipeline files,
and its task runs as tasks of an instrumented run (``llqm profile`` of a flow).

Kept free of Prefect imports: LLQM loads every plugin when it starts, and Prefect takes
seconds to import, so it is imported only when a pipeline runs on it or a program imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llqm_core.plugin import (
    Instrumentor,
    RegisterEngine,
    RegisterInstrumentor,
    hookimpl,
    watch_imports,
)

from .server import quiet_temporary_server, timed_server_start

#: Prefect and Dask, whose first import in a run is warm-up (``llqm_core.plugin.watch_imports``).
WATCHED = ("prefect", "prefect_dask", "dask", "distributed")


class PrefectWhenImported(Instrumentor):
    """``PrefectInstrumentor`` switched on once the program imports Prefect's task engine, and off
    again with this one if it was this one that switched it on (a ``@profiled`` flow keeps it on
    for good); Prefect's import and its temporary server's start timed as warm-up; a plain flow's
    Dask cluster told the program's run, as a ``@profiled`` flow's is told its own."""

    name = "prefect"
    library = "prefect"
    supported = ">=3.9,<4"

    def _instrument(self) -> None:
        self._switched = False
        quiet_temporary_server()  # before the program imports Prefect, which reads its settings then
        watch_imports(*WATCHED)  # their import takes seconds: warm-up, not time in no task
        self.on_import("prefect.task_engine", self._switch_on)
        self.on_import("prefect.server.api.server", self._time_server_start)
        self.on_import("prefect_dask.task_runners", self._publish_on_dask)

    def _time_server_start(self, module: Any) -> None:
        self.patch(module.SubprocessASGIServer, "start", timed_server_start)

    def _publish_on_dask(self, module: Any) -> None:
        """A plain flow's ``DaskTaskRunner``: the program's run is published to its cluster
        before the first task goes there, and withdrawn before the cluster closes
        (``dask_runs.publish_program_run``)."""
        from .dask_runs import closing_cluster, publish_program_run

        def submit(original: Callable[..., Any]) -> Callable[..., Any]:
            def submit(runner: Any, *args: Any, **kwargs: Any) -> Any:
                publish_program_run(runner)
                return original(runner, *args, **kwargs)

            return submit

        def close(original: Callable[..., Any]) -> Callable[..., Any]:
            def __exit__(runner: Any, *args: Any) -> Any:
                with closing_cluster(runner):
                    return original(runner, *args)

            return __exit__

        self.patch(module.DaskTaskRunner, "submit", submit)
        self.patch(module.DaskTaskRunner, "__exit__", close)

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
