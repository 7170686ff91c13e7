"""How much an instrumented call records: everything (``full``, the default), or the call alone
(``calls``): its task, times and CPU, but nothing computed from the values crossing it.

A run's detail is chosen when it opens (``llqm.run(detail=...)``, ``llqm profile --detail``,
``$LLQM_DETAIL``) and kept in its config, so that workers joining it and its reports read the
same. It binds the instrumentors alone: LLQM's own runs (a pipeline's, whose checks and cost
models read what its tasks describe; a hardware watch; a re-analysis) record everything. What
each level costs: docs/performance.md ("Detail").
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .errors import UserError

DETAIL_ENV = "LLQM_DETAIL"
#: Per-stage and per-pass transpile seconds, descriptions of circuits and results, kept results.
FULL = "full"
#: Every call a task with its times, CPU, dependencies, backend and QPU and queue seconds alone.
CALLS = "calls"
LEVELS = (FULL, CALLS)
#: Where a run's config keeps a detail other than ``full``.
CONFIG_KEY = "llqm.detail"


def detail_level(value: Any, source: str = "detail") -> str:
    """``value`` as a detail level, or one sentence on what is allowed."""
    if isinstance(value, str) and value.strip().lower() in LEVELS:
        return value.strip().lower()
    raise UserError(
        f"{source} must be {FULL!r} (everything an instrumented call can record) or {CALLS!r} "
        f"(each call's task and times alone), not {value!r}."
    )


def run_detail(value: Any, config: Mapping[str, Any]) -> str:
    """A run's detail: ``value`` where given, else the one its config keeps (a run another
    process opened), else ``$LLQM_DETAIL``, else ``full``."""
    if value is not None:
        return detail_level(value)
    if CONFIG_KEY in config:
        return detail_level(config[CONFIG_KEY], f"the run's {CONFIG_KEY}")
    raw = os.environ.get(DETAIL_ENV, "")
    return detail_level(raw, f"{DETAIL_ENV}=") if raw.strip() else FULL
