"""Whether a Qiskit call is profiled: only inside an LLQM run, and only the outermost call (a
primitive that runs a backend, a transpile that runs a pass manager are profiled once).
"""

from __future__ import annotations

import contextvars

import llqm_core
from llqm_core.plugin import instrumented_run

busy: contextvars.ContextVar[bool] = contextvars.ContextVar("llqm_qiskit_busy", default=False)


def profiling() -> llqm_core.ActiveRun | None:
    """The run to profile a call into: the current one, unless this call is nested in another."""
    return None if busy.get() else instrumented_run()
