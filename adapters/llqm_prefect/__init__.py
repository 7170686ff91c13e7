"""Prefect 3 adapter: a profiled flow's task runs become LLQM tasks of one LLQM run.

    from prefect import flow, task
    from llqm_prefect import profiled

    @profiled
    @flow
    def pipeline(): ...

Task runs are profiled where they execute, under Prefect's own task spans, in the trace of
the flow run. ``PrefectInstrumentor`` is the underlying ``instrument()``/``uninstrument()``.
"""

from .flow import profiled
from .instrument import STAGE_TAG_PREFIX, PrefectInstrumentor

__all__ = ["PrefectInstrumentor", "STAGE_TAG_PREFIX", "profiled"]
