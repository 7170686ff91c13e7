"""Warm-up: what a process pays once, the first time it needs something (importing a quantum
library, building its first preset pass manager, loading a simulator), as opposed to the work a
run does each time it runs.

A warm-up is kept as a task of its own whose stage starts with ``warmup.`` (``warmup.import``,
``warmup.first_call``), under the task that happened to pay it. Its time is left out of that
task's and its ancestors' ``wall_s`` and ``cpu_s`` (the ``warmup.left_out_s`` metric says how
much), and analysis leaves warm-up tasks out of the bottleneck, the critical path, the stage
statistics, trial statistics and the cost model: a second run in the same process would not
pay it, so it would mislead every one of those. Reports show it on a line of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

WARMUP_STAGE_PREFIX = "warmup."
#: The metric of a task whose ``wall_s`` and ``cpu_s`` leave out a warm-up that ran inside it:
#: the wall seconds left out (its CPU seconds under ``warmup.left_out_cpu_s``).
LEFT_OUT_WALL = "warmup.left_out_s"
LEFT_OUT_CPU = "warmup.left_out_cpu_s"


def is_warmup(stage: str) -> bool:
    """Whether a task of ``stage`` is warm-up (see the module docstring).

    Args:
        stage: a task's stage.
    """
    return stage.startswith(WARMUP_STAGE_PREFIX)


@dataclass(frozen=True)
class Warmup:
    """A one-time cost a step's estimate expects (``llqm_core.pipeline.fit``): importing the
    module ``key`` (``kind`` "import") or the first call of ``key`` (``kind`` "first_call",
    as ``runtime.warmup.first_call`` marks it). The process pays it once: the fit charges it to
    the first step that needs it, and not at all once paid (by the check itself, say); its
    ``memory_bytes`` stay on that step's peak and every later one's."""

    kind: str
    key: str
    seconds: float
    #: what it leaves resident for the rest of the process (an import's modules)
    memory_bytes: float = 0.0
