"""An Estimator called in a loop is a closed loop's iterations (``llqm_core.runtime.iterations``).

A VQE or QAOA loop written as Qiskit's tutorials write it calls ``estimator.run`` on the same
ansatz with new parameters at each step of the optimiser. Each result of an Estimator is marked
as an iteration of a source named after that estimator and the circuits it ran; the report
shows a source's marks as iterations once it has two or more (one call is not a loop), and
prefers the marks a program made itself (``llqm_core.iteration``) where there are any: a ZNE
evaluation, say, calls the Estimator once per scale factor, which is not an iteration.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def estimator_call(caller: Any, pubs: Any, circuits: list[Any]) -> tuple[str, Any] | None:
    """The loop a call belongs to and its parameters; None for anything but an Estimator."""
    if "Estimator" not in type(caller).__name__ or not circuits:
        return None
    items = pubs if isinstance(pubs, (list, tuple)) and not hasattr(pubs, "circuit") else [pubs]
    values = []
    for pub in items:
        given = pub[2] if isinstance(pub, (tuple, list)) and len(pub) > 2 else None
        if given is None and hasattr(pub, "parameter_values"):
            given = pub.parameter_values.as_array()
        if given is not None:
            try:
                values.append(np.asarray(given, dtype=float).ravel())
            except (TypeError, ValueError):
                pass
    names = (
        circuits[0].name if len(circuits) == 1 else ", ".join(sorted({c.name for c in circuits}))
    )
    source = f"{type(caller).__name__} {id(caller):x} on {names}"
    if len(values) > 1:
        return source, np.concatenate(values)
    # one array copied as submitted: a later change to the caller's array is not this call's
    return source, values[0].copy() if values else None


def _one_number(value: Any) -> float | None:
    """A pub's value (or error) when it is one number: a 0-d or one-element array, or a float."""
    if isinstance(value, np.ndarray):
        return float(value.item()) if value.size == 1 else None
    if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        return float(value)
    return None


def estimator_value(result: Any) -> tuple[float | None, float | None]:
    """The objective an Estimator's result gives: the sum of its pubs' values where each pub
    gives one, with the root of the summed variances as its standard error."""
    try:
        data = [pub.data for pub in result]
    except (AttributeError, TypeError):
        return None, None
    values = [_one_number(getattr(d, "evs", None)) for d in data]
    numbers = [v for v in values if v is not None]
    if not numbers or len(numbers) < len(values):
        return None, None
    errors = [e for e in (_one_number(getattr(d, "stds", None)) for d in data) if e is not None]
    error = math.sqrt(sum(e * e for e in errors)) if len(errors) == len(data) else None
    return sum(numbers), error
