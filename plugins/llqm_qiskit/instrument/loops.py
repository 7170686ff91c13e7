"""An Estimator called in a loop is a closed loop's iterations (``llqm_core.runtime.iterations``).

A VQE or QAOA loop written as Qiskit's tutorials write it calls ``estimator.run`` on the same
ansatz with new parameters at each step of the optimiser. Each result of an Estimator is marked
as an iteration of a source named after that estimator and the circuits it ran; the report
shows a source's marks as iterations once it has two or more (one call is not a loop), and
prefers the marks a program made itself (``llqm_core.iteration``) where there are any: a ZNE
evaluation, say, calls the Estimator once per scale factor, which is not an iteration.
"""

from __future__ import annotations

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
    names = ", ".join(sorted({c.name for c in circuits}))
    source = f"{type(caller).__name__} {id(caller):x} on {names}"
    return source, np.concatenate(values) if values else None


def estimator_value(result: Any) -> tuple[float | None, float | None]:
    """The objective an Estimator's result gives: the sum of its pubs' values where each pub
    gives one, with the root of the summed variances as its standard error."""
    try:
        evs = [np.asarray(pub.data.evs, dtype=float) for pub in result]
    except (AttributeError, TypeError, ValueError):
        return None, None
    if not evs or any(e.size != 1 for e in evs):
        return None, None
    try:
        stds = [float(np.asarray(pub.data.stds, dtype=float).ravel()[0]) for pub in result]
        error = float(np.sqrt(sum(s * s for s in stds)))
    except (AttributeError, TypeError, ValueError):
        error = None
    return float(sum(float(e.ravel()[0]) for e in evs)), error
