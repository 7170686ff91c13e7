"""Iterations of a closed loop (a VQE or QAOA optimiser calling its objective again and again).

More in docs/modules.md (``llqm_core.runtime.iterations``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable
from typing import Any

from ..model.records import KeptResult

KIND = "llqm.iteration"
USER = "user"


def _numbers(parameters: Any) -> list[float] | None:
    """``parameters`` (a sequence or array of numbers, nested or flat) as floats; None if absent."""
    if parameters is None:
        return None
    if getattr(parameters, "ndim", None) == 1 and getattr(parameters.dtype, "kind", None) == "f":
        return parameters.tolist()  # a flat array of floats, as an optimiser hands them: no walk
    flat: list[float] = []

    def walk(value: Any) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            flat.append(float(value))
            return
        if hasattr(value, "tolist"):  # an array: its numbers, without importing numpy here
            walk(value.tolist())
            return
        if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
            for item in value:
                walk(item)
            return
        raise ValueError(f"parameters must be numbers, not {type(value).__name__}.")

    walk(parameters)
    return flat


def _number(name: str, value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"an iteration's {name} must be a number, not {value!r}.") from None
    return number


class IterationMarks:
    """One run's marks, per source: how many, where the last ended, its parameters."""

    def __init__(self, start_ns: int, start_cpu: float) -> None:
        self._start = (0, start_ns, start_cpu, None)
        self._last: dict[str, tuple[int, int, float, list[float] | None]] = {}
        self._lock = threading.Lock()

    def mark(
        self,
        value: Any = None,
        error: Any = None,
        parameters: Any = None,
        source: str = USER,
    ) -> dict[str, Any]:
        """End an iteration of ``source`` now; what is recorded of it."""
        value_f, error_f = _number("value", value), _number("error", error)
        params = _numbers(parameters)
        end_ns, cpu = time.time_ns(), time.process_time()
        with self._lock:
            index, start_ns, start_cpu, before = self._last.get(source, self._start)
            self._last[source] = (index + 1, end_ns, cpu, params)
        change = None
        if params is not None and before is not None and len(before) == len(params):
            change = math.dist(params, before)
        return {
            "source": source,
            "index": index + 1,
            "start_ns": start_ns,
            "end_ns": end_ns,
            "value": value_f,
            "error": error_f,
            "parameters": len(params) if params is not None else None,
            "parameters_norm": math.hypot(*params) if params else None,
            "parameter_change": change,
            "process_cpu_s": cpu - start_cpu,
        }


def record(run: Any, meta: dict[str, Any]) -> None:
    """Keep a mark with its run (nothing when the run keeps no store)."""
    if run.store is not None:
        run.store.save_result(KeptResult(run.id, None, KIND, b"", 0, meta))
