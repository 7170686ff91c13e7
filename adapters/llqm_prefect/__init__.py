"""Prefect 3 adapter: a profiled flow's task runs become LLQM tasks of one LLQM run.

    from prefect import flow, task
    from llqm_prefect import profiled

    @profiled
    @flow
    def pipeline(): ...

More in docs/modules.md (``llqm_prefect``).
"""

from typing import Any

__all__ = ["PrefectInstrumentor", "STAGE_TAG_PREFIX", "profiled"]


def __getattr__(name: str) -> Any:
    """Import Prefect (seconds) only when the adapter is used, not when LLQM loads its plugins."""
    if name == "profiled":
        from .flow import profiled

        return profiled
    if name in ("PrefectInstrumentor", "STAGE_TAG_PREFIX"):
        from . import instrument

        return getattr(instrument, name)
    raise AttributeError(f"module 'llqm_prefect' has no attribute {name!r}")
